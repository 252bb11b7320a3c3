use crate::support::*;
use adcp_outbox::{
    ActivityQuery, ActivitySelector, ActivityStatus, AttemptHook, Claimed, Clock as _, EventState, HookDecision,
    ManualClock,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

async fn state_of(outbox: &adcp_outbox::Outbox, id: &adcp_outbox::EventId) -> EventState {
    outbox.get(id).await.unwrap().unwrap().state
}

async fn records(outbox: &adcp_outbox::Outbox, principal: &str) -> Vec<adcp_outbox::ActivityRecord> {
    outbox
        .activity(&ActivityQuery {
            selector: ActivitySelector::Principal {
                principal: principal.into(),
                resource: None,
            },
            limit: 200,
        })
        .await
        .unwrap()
}

fn record_validator() -> Option<jsonschema::Validator> {
    schema_validator("core/webhook-activity-record.json")
}

fn assert_valid(records: &[adcp_outbox::ActivityRecord]) {
    let Some(validator) = record_validator() else { return };
    for r in records {
        let j = r.to_json();
        let errors: Vec<String> = validator.iter_errors(&j).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{j}: {errors:?}");
    }
}

#[tokio::test]
async fn a_failed_first_attempt_is_retried_with_the_same_key_and_bytes_and_fresh_signatures() {
    let sink = Sink::start(|_, seen| {
        if seen == 0 {
            Answer::Status(503)
        } else {
            Answer::Status(200)
        }
    })
    .await;
    let (outbox, _) = outbox("retry", fast_retry(), None);
    let e = outbox
        .enqueue(
            event(impairment("imp_1", "open"), &sink.url("/hooks/op_1"))
                .principal("buyer")
                .resource("media_buy:mb_1"),
        )
        .await
        .unwrap();
    let run = dispatch(&outbox, quick());
    assert!(until(WAIT, async || state_of(&outbox, &e.id).await == EventState::Delivered).await);
    run.stop().await;
    let hits = sink.hits_for(&e.idempotency_key);
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].body, hits[1].body);
    assert_ne!(hits[0].signature, hits[1].signature);
    let records = records(&outbox, "buyer").await;
    let statuses: Vec<_> = records
        .iter()
        .map(|r| (r.attempt, r.status, r.http_status_code))
        .collect();
    assert_eq!(
        statuses,
        [
            (2, ActivityStatus::Success, Some(200)),
            (1, ActivityStatus::Failed, Some(503))
        ]
    );
    assert_eq!(records[0].notification_type, "impairment");
    assert_valid(&records);
    let view = outbox.get(&e.id).await.unwrap().unwrap();
    assert_eq!(view.attempts, 2);
}

#[tokio::test]
async fn outcomes_follow_the_spec() {
    let sink = Sink::start(|hit, seen| match hit.path.as_str() {
        "/sig" => Answer::With(
            401,
            vec![(
                "www-authenticate",
                r#"Signature error="webhook_signature_invalid""#.into(),
            )],
            String::new(),
        ),
        "/conflict" => Answer::Status(409),
        "/plain401" | "/404" if seen == 0 => Answer::Status(if hit.path == "/404" { 404 } else { 401 }),
        "/redirect" if seen == 0 => Answer::With(307, vec![("location", "http://127.0.0.1:1/x".into())], String::new()),
        _ => Answer::Status(204),
    })
    .await;
    let (outbox, _) = outbox("outcomes", fast_retry(), None);
    let mut ids = Vec::new();
    for path in ["/sig", "/conflict", "/plain401", "/404", "/redirect"] {
        let e = outbox
            .enqueue(
                event(
                    json!({"notification_type": "account.status_changed", "p": path}),
                    &sink.url(path),
                )
                .principal("b"),
            )
            .await
            .unwrap();
        ids.push((path, e.id));
    }
    let run = dispatch(&outbox, quick());
    for (path, id) in &ids {
        let want = match *path {
            "/sig" | "/conflict" => EventState::Refused,
            _ => EventState::Delivered,
        };
        assert!(
            until(WAIT, async || state_of(&outbox, id).await == want).await,
            "{path}"
        );
    }
    run.stop().await;
    let sig = outbox.get(&ids[0].1).await.unwrap().unwrap();
    assert!(sig.reason.unwrap().contains("webhook_signature_invalid"));
    assert_eq!(sig.attempts, 1);
    assert_eq!(outbox.get(&ids[1].1).await.unwrap().unwrap().attempts, 1);
    for (_, id) in &ids[2..] {
        assert_eq!(outbox.get(id).await.unwrap().unwrap().attempts, 2);
    }
    assert_valid(&records(&outbox, "b").await);
}

#[tokio::test]
async fn retry_after_is_honoured_and_the_horizon_ends_retries() {
    let clock = ManualClock::new(1_800_000_000_000);
    let sink = Sink::start(|_, _| Answer::With(429, vec![("retry-after", "30".into())], String::new())).await;
    let (outbox, _) = outbox("horizon", fast_retry(), Some(clock.clone()));
    let e = outbox
        .enqueue(event(
            json!({"notification_type": "account.status_changed"}),
            &sink.url("/x"),
        ))
        .await
        .unwrap();
    let run = dispatch(&outbox, quick());
    assert!(
        until(WAIT, async || sink.hits().len() == 1
            && state_of(&outbox, &e.id).await == EventState::Pending)
        .await
    );
    let view = outbox.get(&e.id).await.unwrap().unwrap();
    assert!(view.next_attempt_at_ms.unwrap() >= clock.now_ms() + 30_000, "{view:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sink.hits().len(), 1, "waits for Retry-After");
    clock.advance_ms(30_000);
    assert!(until(WAIT, async || sink.hits().len() == 2).await);
    // Past the horizon (measured from the first attempt): expired, never
    // attempted again.
    clock.advance_ms(86_400_000);
    assert!(until(WAIT, async || state_of(&outbox, &e.id).await == EventState::Expired).await);
    let n = sink.hits().len();
    clock.advance_ms(3_600_000);
    tokio::time::sleep(Duration::from_millis(200)).await;
    run.stop().await;
    assert_eq!(sink.hits().len(), n);
    assert!(n <= 3, "{n}");
}

#[tokio::test]
async fn a_dead_destination_opens_its_breaker_and_a_probe_closes_it() {
    let clock = ManualClock::new(1_800_000_000_000);
    let sink = Sink::start(|_, _| Answer::Status(503)).await;
    let (outbox, _) = outbox("breaker", fast_retry(), Some(clock.clone()));
    let mut ids = Vec::new();
    for i in 0..20 {
        let e = outbox
            .enqueue(event(
                json!({"notification_type": "account.status_changed", "i": i}),
                &sink.url("/dead"),
            ))
            .await
            .unwrap();
        ids.push(e.id);
    }
    let run = dispatch(&outbox, quick());
    // A burst of failures alone does not open it: they must span 5 s.
    assert!(
        until(WAIT, async || sink.hits().len() >= 20
            && outbox.stats().await.unwrap().count(EventState::InFlight) == 0)
        .await
    );
    assert_eq!(outbox.stats().await.unwrap().open_breakers, 0);
    // 5 s later the retries fail too: it opens.
    clock.advance_ms(5_000);
    assert!(until(WAIT, async || outbox.stats().await.unwrap().open_breakers == 1).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let attempts = sink.hits().len();
    // The events stay pending, with no attempts spent while open.
    let pending = outbox.stats().await.unwrap().count(EventState::Pending);
    assert_eq!(pending, 20);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sink.hits().len(), attempts);
    // The destination recovers; after the open interval one probe goes
    // out, succeeds, and the rest follow.
    sink.set_script(|_, _| Answer::Status(200));
    clock.advance_ms(5_000);
    assert!(
        until(WAIT, async || outbox
            .stats()
            .await
            .unwrap()
            .count(EventState::Delivered)
            == 20)
        .await
    );
    run.stop().await;
    assert_eq!(outbox.stats().await.unwrap().open_breakers, 0);
}

#[tokio::test]
async fn an_event_held_behind_an_open_breaker_expires_without_an_attempt() {
    let clock = ManualClock::new(1_800_000_000_000);
    let sink = Sink::start(|_, _| Answer::Status(500)).await;
    let (outbox, _) = outbox("held", fast_retry(), Some(clock.clone()));
    for i in 0..5 {
        outbox
            .enqueue(event(
                json!({"notification_type": "account.status_changed", "i": i}),
                &sink.url("/a"),
            ))
            .await
            .unwrap();
    }
    let run = dispatch(&outbox, quick());
    assert!(until(WAIT, async || sink.hits().len() >= 5).await);
    clock.advance_ms(5_000);
    assert!(until(WAIT, async || outbox.stats().await.unwrap().open_breakers == 1).await);
    let held = outbox
        .enqueue(event(
            json!({"notification_type": "account.status_changed", "late": true}),
            &sink.url("/b"),
        ))
        .await
        .unwrap();
    // Push the probe far away, past the horizon of the held event.
    clock.advance_ms(86_400_001);
    assert!(until(WAIT, async || state_of(&outbox, &held.id).await == EventState::Expired).await);
    run.stop().await;
    let view = outbox.get(&held.id).await.unwrap().unwrap();
    assert_eq!(view.attempts, 0);
    assert!(sink.hits_for(&held.idempotency_key).is_empty());
}

#[tokio::test]
async fn coalescing_sends_the_last_state_once_and_keeps_resources_apart() {
    let clock = ManualClock::new(1_800_000_000_000);
    let sink = Sink::start(|_, _| Answer::Status(200)).await;
    let (outbox, _) = outbox("coalesce", fast_retry(), Some(clock.clone()));
    let url = sink.url("/buy");
    let run = dispatch(&outbox, quick());
    let mut last = None;
    for i in 0..100 {
        let e = outbox
            .enqueue(event(impairment("imp_a", &format!("s{i}")), &url).coalescing_key("imp_a"))
            .await
            .unwrap();
        assert_eq!(e.superseded.is_some(), i > 0);
        last = Some(e);
        clock.advance_ms(2_000);
    }
    let other = outbox
        .enqueue(event(impairment("imp_b", "open"), &url).coalescing_key("imp_b"))
        .await
        .unwrap();
    let urgent = outbox
        .enqueue(
            event(impairment("imp_fraud", "open"), &url)
                .coalescing_key("imp_fraud")
                .coalescing_window(Duration::ZERO),
        )
        .await
        .unwrap();
    let purge = |n: i32| json!({"notification_type": "creative.purged", "creative_id": "cr_1", "n": n});
    let p1 = outbox
        .enqueue(event(purge(1), &url).coalescing_key("cr_1"))
        .await
        .unwrap();
    let p2 = outbox
        .enqueue(event(purge(2), &url).coalescing_key("cr_1"))
        .await
        .unwrap();
    assert!(p2.superseded.is_none());
    assert!(
        until(WAIT, async || !sink.hits_for(&urgent.idempotency_key).is_empty()).await,
        "window 0 goes at once"
    );
    assert!(
        until(WAIT, async || !sink.hits_for(&p1.idempotency_key).is_empty()
            && !sink.hits_for(&p2.idempotency_key).is_empty())
        .await
    );
    let last = last.unwrap();
    assert!(sink.hits_for(&last.idempotency_key).is_empty(), "held for the window");
    // The clock jumps below: let every delivery so far be recorded first,
    // or its lease would look expired and the event be taken over.
    for id in [&urgent.id, &p1.id, &p2.id] {
        assert!(until(WAIT, async || state_of(&outbox, id).await == EventState::Delivered).await);
    }
    // 200 s have passed since the first update; at 300 s it goes.
    clock.advance_ms(100_000);
    assert!(until(WAIT, async || !sink.hits_for(&last.idempotency_key).is_empty()).await);
    assert!(
        sink.hits_for(&other.idempotency_key).is_empty(),
        "its own window runs from its own first event"
    );
    assert!(
        until(WAIT, async || state_of(&outbox, &last.id).await
            == EventState::Delivered)
        .await
    );
    clock.advance_ms(200_000);
    assert!(until(WAIT, async || !sink.hits_for(&other.idempotency_key).is_empty()).await);
    // An attempted event is never replaced: a new update starts anew.
    let after = outbox
        .enqueue(event(impairment("imp_a", "closed"), &url).coalescing_key("imp_a"))
        .await
        .unwrap();
    assert!(after.superseded.is_none());
    run.stop().await;
    let imp_a: Vec<_> = sink
        .hits()
        .into_iter()
        .filter(|h| h.body["result"]["impairment_id"] == "imp_a")
        .collect();
    assert_eq!(imp_a.len(), 1);
    assert_eq!(imp_a[0].body["result"]["state"], "s99");
    assert_eq!(outbox.stats().await.unwrap().count(EventState::Superseded), 99);
}

struct Suppress;

#[async_trait::async_trait]
impl AttemptHook for Suppress {
    async fn before_attempt(&self, event: &Claimed) -> HookDecision {
        if event.principal.as_deref() == Some("revoked") {
            HookDecision::Suppress("the subscription lost its account authority".into())
        } else {
            HookDecision::Proceed
        }
    }
}

#[tokio::test]
async fn the_hook_suppresses_without_an_attempt_and_secrets_never_reach_records() {
    let sink = Sink::start(|_, _| Answer::With(500, vec![], "token=sk_live_SECRET1234567890".into())).await;
    let (outbox, _) = outbox("hook", fast_retry().with_max_attempts(2).unwrap(), None);
    let gone = outbox
        .enqueue(event(json!({"notification_type": "account.status_changed"}), &sink.url("/a")).principal("revoked"))
        .await
        .unwrap();
    let echo = outbox
        .enqueue(
            event(
                json!({"notification_type": "account.status_changed"}),
                &sink.url("/b?token=abc"),
            )
            .principal("ok"),
        )
        .await
        .unwrap();
    let run = dispatch_with(&outbox, quick(), Some(Arc::new(Suppress)));
    assert!(until(WAIT, async || state_of(&outbox, &gone.id).await == EventState::Refused).await);
    assert!(until(WAIT, async || state_of(&outbox, &echo.id).await == EventState::Expired).await);
    run.stop().await;
    assert!(sink.hits_for(&gone.idempotency_key).is_empty());
    assert!(records(&outbox, "revoked").await.is_empty());
    let recs = records(&outbox, "ok").await;
    assert_eq!(recs.len(), 2);
    for r in &recs {
        let j = r.to_json().to_string();
        assert!(!j.contains("SECRET") && !j.contains("token"), "{j}");
    }
    assert_valid(&recs);
}

#[tokio::test]
async fn shutdown_records_abandoned_attempts_and_leaves_no_lease() {
    let sink = Sink::start(|_, _| Answer::Hang).await;
    let (outbox, _) = outbox("drain", fast_retry(), None);
    for i in 0..3 {
        outbox
            .enqueue(
                event(
                    json!({"notification_type": "account.status_changed", "i": i}),
                    &sink.url("/x"),
                )
                .principal("p"),
            )
            .await
            .unwrap();
    }
    let run = dispatch(&outbox, quick());
    assert!(until(WAIT, async || sink.hits().len() == 3).await);
    run.stop().await;
    let stats = outbox.stats().await.unwrap();
    assert_eq!(stats.count(EventState::InFlight), 0);
    assert_eq!(stats.count(EventState::Pending), 3);
    let recs = records(&outbox, "p").await;
    assert_eq!(recs.len(), 3);
    assert!(recs.iter().all(|r| r.status == ActivityStatus::ConnectionError));
}

#[tokio::test]
async fn bodies_and_credentials_encrypted_at_rest_are_delivered_in_clear() {
    let sink = Sink::start(|_, _| Answer::Status(200)).await;
    let path = temp_file("crypt");
    let store = adcp_outbox::SqliteOutbox::open(&path, Default::default()).unwrap();
    let ring = adcp_outbox::Keyring::new("k2", &[2; 32])
        .unwrap()
        .with_old_key("k1", &[1; 32])
        .unwrap();
    let config = adcp_outbox::OutboxConfig {
        retry: fast_retry(),
        encryption: Some(ring),
        ..adcp_outbox::OutboxConfig::default()
    };
    let outbox = adcp_outbox::Outbox::new(Arc::new(store), config).unwrap();
    let secret_body = json!({"notification_type": "account.status_changed", "marker": "PLAINTEXT_MARKER_42"});
    let plain = outbox
        .enqueue(event(secret_body, &sink.url("/a")).principal("p"))
        .await
        .unwrap();
    let hmac = adcp_outbox::OutboxDestination::from_registration(&json!({
        "url": sink.url("/legacy"),
        "authentication": {"schemes": ["HMAC-SHA256"], "credentials": "CREDENTIAL_MARKER_0123456789abcdef0123456789"}
    }))
    .unwrap();
    let legacy = outbox
        .enqueue(adcp_outbox::NewEvent::new(
            adcp_sign::WebhookEvent::new(&json!({"notification_type": "account.status_changed", "n": 2})).unwrap(),
            hmac,
        ))
        .await
        .unwrap();
    let raw = std::fs::read(&path).unwrap();
    let wal = std::fs::read(path.with_extension("sqlite-wal")).unwrap_or_default();
    for bytes in [&raw, &wal] {
        let hay = String::from_utf8_lossy(bytes);
        assert!(!hay.contains("PLAINTEXT_MARKER_42") && !hay.contains("CREDENTIAL_MARKER"));
    }
    let run = dispatch(&outbox, quick());
    for id in [&plain.id, &legacy.id] {
        assert!(until(WAIT, async || state_of(&outbox, id).await == EventState::Delivered).await);
    }
    run.stop().await;
    assert_eq!(
        sink.hits_for(&plain.idempotency_key)[0].body["marker"],
        "PLAINTEXT_MARKER_42"
    );
    assert_eq!(sink.hits_for(&legacy.idempotency_key).len(), 1);
}

/// A receiver that answers `503` to the first delivery of every key: the
/// breaker opens, and its probe (an event already attempted, not a fresh
/// one) succeeds and closes it, so every event gets through.
#[tokio::test]
async fn a_destination_refusing_every_first_delivery_still_gets_everything() {
    let clock = ManualClock::new(1_800_000_000_000);
    let sink = Sink::start(|_, seen| {
        if seen == 0 {
            Answer::Status(503)
        } else {
            Answer::Status(200)
        }
    })
    .await;
    let (outbox, _) = outbox("first503", fast_retry(), Some(clock.clone()));
    for i in 0..200 {
        outbox
            .enqueue(event(
                json!({"notification_type": "account.status_changed", "i": i}),
                &sink.url("/one"),
            ))
            .await
            .unwrap();
    }
    let run = dispatch(&outbox, quick());
    let done = until(Duration::from_secs(60), async || {
        let stats = outbox.stats().await.unwrap();
        // Time passes (retries fall due) ...
        clock.advance_ms(1_000);
        if stats.open_breakers == 1 {
            // Let the attempts in flight be recorded, then move past the
            // open interval (up to 5 min after repeated failures).
            tokio::time::sleep(Duration::from_millis(50)).await;
            clock.advance_ms(300_000);
        }
        stats.count(EventState::Delivered) == 200
    })
    .await;
    run.stop().await;
    assert!(done, "{:?}", outbox.stats().await.unwrap());
}

#[tokio::test]
async fn events_handed_to_a_running_dispatcher_keep_the_per_destination_cap_and_drain_cleanly() {
    let hung = Sink::start(|_, _| Answer::Hang).await;
    let healthy = Sink::start(|_, _| Answer::Status(200)).await;
    let (outbox, _) = outbox("handoff", fast_retry(), None);
    let run = dispatch(
        &outbox,
        adcp_outbox::DispatcherConfig {
            concurrency: 4,
            per_destination: 2,
            ..quick()
        },
    );
    let typed = |i: u32| json!({"notification_type": "account.status_changed", "i": i});
    let mut hung_ids = Vec::new();
    for i in 0..5 {
        let e = outbox
            .enqueue(event(typed(i), &hung.url("/x")).principal("p"))
            .await
            .unwrap();
        hung_ids.push(e.id);
    }
    let mut healthy_ids = Vec::new();
    for i in 5..8 {
        let e = outbox.enqueue(event(typed(i), &healthy.url("/y"))).await.unwrap();
        healthy_ids.push(e.id);
    }
    // The healthy destination gets its events although the hung one holds
    // its two slots; the hung one never gets a third attempt in flight
    // (its attempts time out only after 2 s).
    for id in &healthy_ids {
        assert!(until(WAIT, async || state_of(&outbox, id).await == EventState::Delivered).await);
    }
    assert!(until(WAIT, async || hung.hits().len() == 2).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        hung.hits().len(),
        2,
        "the per-destination cap holds for handed-over events"
    );
    run.stop().await;
    // The drain recorded the two cut attempts; nothing is left leased.
    let stats = outbox.stats().await.unwrap();
    assert_eq!(stats.count(EventState::InFlight), 0);
    assert_eq!(stats.count(EventState::Pending), 5);
    let recs = records(&outbox, "p").await;
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|r| r.status == ActivityStatus::ConnectionError));
}
