//! Channels end to end on SQLite against a loopback sink: an update
//! applies to the next fire (a token rotated before the first attempt is
//! the new token on the wire; an attempted event keeps its bytes), a
//! paused subscriber receives nothing and nothing held arrives after
//! resuming, an unactivated subscriber receives nothing, a closed channel
//! refuses everything after its held events went out, and a paused
//! reporting channel suppresses its reports.

use crate::support::{dispatch, fast_retry, outbox, quick, until, Answer, Sink};
use adcp_outbox::channels::{ChannelRegistration, ChannelState, Channels};
use adcp_outbox::{EventState, OutboxError};
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use adcp_webhook::{DestinationPolicy, WebhookSender};
use serde_json::{json, Value};
use std::time::Duration;

fn task(buy: &str, n: u32) -> Value {
    json!({"task_id": format!("task_{buy}_{n}"), "task_type": "create_media_buy", "status": "working",
           "timestamp": "2026-04-18T12:00:00Z", "operation_id": "op_1",
           "result": {"media_buy_id": buy}})
}

fn config(url: &str, token: &str) -> Value {
    json!({"url": url, "token": token, "operation_id": "op_1"})
}

/// The sink echoes activation challenges and answers 200 to the rest.
fn echoing(hit: &crate::support::Hit, _: usize) -> Answer {
    match hit.body.get("challenge") {
        Some(challenge) => Answer::With(
            200,
            vec![("content-type", "application/json".to_owned())],
            json!({ "challenge": challenge }).to_string(),
        ),
        None => Answer::Status(200),
    }
}

fn sender() -> WebhookSender<adcp_sign::BoxSigner> {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-test-1").unwrap();
    WebhookSender::builder(HttpSigner::webhook(adcp_sign::BoxSigner::new(key)).unwrap())
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_token_rotated_before_the_first_attempt_is_the_new_token_on_the_wire() {
    let sink = Sink::start(|hit, seen| {
        // The event attempted before the update fails once, then lands.
        if hit.body["task_id"] == "task_mb_1_1" && seen == 0 {
            Answer::Status(503)
        } else {
            Answer::Status(200)
        }
    })
    .await;
    let (outbox, _) = outbox("channels-rotate", fast_retry(), None);
    let channels = Channels::new(outbox.clone());
    let first =
        ChannelRegistration::push_notification_config("mb_1", &config(&sink.url("/old"), "token_old_0123456789"))
            .unwrap();
    assert_eq!(channels.put(first).await.unwrap().state, ChannelState::Active);
    // One event attempted (and answered 503) before the update.
    let attempted = outbox.enqueue(
        channels
            .event("push_notification_config:mb_1", &task("mb_1", 1))
            .await
            .unwrap(),
    );
    let attempted = attempted.await.unwrap();
    let running = dispatch(&outbox, quick());
    assert!(until(Duration::from_secs(10), async || !sink.hits().is_empty()).await);
    running.stop().await;
    // One event not attempted yet.
    let waiting = outbox
        .enqueue(
            channels
                .event("push_notification_config:mb_1", &task("mb_1", 2))
                .await
                .unwrap(),
        )
        .await
        .unwrap();

    let second =
        ChannelRegistration::push_notification_config("mb_1", &config(&sink.url("/new"), "token_new_0123456789"))
            .unwrap();
    let view = channels.put(second).await.unwrap();
    assert_eq!(view.rebuilt, 1, "only the event never attempted is rebuilt");
    let old = outbox.get(&waiting.id).await.unwrap().unwrap();
    assert_eq!(old.state, EventState::Superseded);

    let running = dispatch(&outbox, quick());
    assert!(
        until(Duration::from_secs(10), async || sink.hits().len() == 3).await,
        "{:?}",
        sink.hits()
    );
    running.stop().await;
    let hits = sink.hits();
    let retried: Vec<_> = hits.iter().filter(|h| h.key == attempted.idempotency_key).collect();
    assert_eq!(retried.len(), 2);
    assert!(retried
        .iter()
        .all(|h| h.path == "/old" && h.body["token"] == "token_old_0123456789"));
    let rebuilt: Vec<_> = hits.iter().filter(|h| h.body["task_id"] == "task_mb_1_2").collect();
    assert_eq!(rebuilt.len(), 1);
    assert_eq!(rebuilt[0].path, "/new");
    assert_eq!(rebuilt[0].body["token"], "token_new_0123456789");
    assert_ne!(rebuilt[0].key, waiting.idempotency_key, "a rebuilt body gets a new key");
}

#[tokio::test]
async fn a_paused_subscriber_receives_nothing_and_nothing_held_arrives_after_resuming() {
    let sink = Sink::start(echoing).await;
    let (outbox, _) = outbox("channels-pause", fast_retry(), None);
    let channels = Channels::new(outbox.clone());
    // A subscriber id with `:` in it (the activation pattern allows it).
    let entry =
        json!({"subscriber_id": "team:sub-1", "url": sink.url("/acct"), "event_types": ["creative.status_changed"]});
    let reg = ChannelRegistration::account("acct_1", &entry).unwrap();
    let id = reg.id().to_owned();
    assert_eq!(channels.put(reg).await.unwrap().state, ChannelState::PendingActivation);
    let (view, report) = channels
        .activate(&id, &sender(), "https://seller.example/adcp")
        .await
        .unwrap();
    assert!(report.outcome.is_activated(), "{:?}", report.outcome);
    assert_eq!(view.state, ChannelState::Active);
    let challenges = sink.hits().len();

    let note = |n: u32| {
        json!({"notification_type": "creative.status_changed", "notification_id": format!("n_{n}"),
                               "creative_id": "cr_1", "status": "approved"})
    };
    // Held for its coalescing window, then the subscriber pauses.
    let held = outbox
        .enqueue(channels.event(&id, &note(1)).await.unwrap().coalescing_key("cr_1"))
        .await
        .unwrap();
    assert_eq!(channels.pause(&id).await.unwrap().state, ChannelState::Paused);
    let refused = outbox
        .enqueue(channels.event(&id, &note(2)).await.unwrap())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "channel_paused");
    assert_eq!(outbox.get(&held.id).await.unwrap().unwrap().state, EventState::Refused);

    // Resumed with the same registration: activated already, active again.
    assert_eq!(channels.resume(&id).await.unwrap().state, ChannelState::Active);
    outbox
        .enqueue(channels.event(&id, &note(3)).await.unwrap())
        .await
        .unwrap();
    let running = dispatch(&outbox, quick());
    assert!(until(Duration::from_secs(10), async || sink.hits().len() == challenges + 1).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.stop().await;
    let delivered: Vec<Value> = sink.hits()[challenges..]
        .iter()
        .map(|h| h.body["notification_id"].clone())
        .collect();
    assert_eq!(delivered, ["n_3"], "nothing from before or during the pause");
}

#[tokio::test]
async fn an_unactivated_or_changed_subscriber_receives_nothing_until_its_challenge_succeeds() {
    let sink = Sink::start(echoing).await;
    let (outbox, _) = outbox("channels-activation", fast_retry(), None);
    let channels = Channels::new(outbox.clone());
    let entry =
        |path: &str| json!({"subscriber_id": "s-2", "url": sink.url(path), "event_types": ["capabilities.changed"]});
    let reg = ChannelRegistration::agent("buyer-1", &entry("/a")).unwrap();
    let id = reg.id().to_owned();
    channels.put(reg).await.unwrap();
    let body = json!({"notification_type": "capabilities.changed", "notification_id": "c_1",
                      "capabilities_version": "v2"});
    let err = outbox
        .enqueue(channels.event(&id, &body).await.unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "channel_not_activated");
    channels
        .activate(&id, &sender(), "https://seller.example/adcp")
        .await
        .unwrap();
    outbox.enqueue(channels.event(&id, &body).await.unwrap()).await.unwrap();
    // A new URL needs a fresh proof.
    let moved = channels
        .put(ChannelRegistration::agent("buyer-1", &entry("/b")).unwrap())
        .await
        .unwrap();
    assert_eq!(moved.state, ChannelState::PendingActivation);
    assert!(!moved.proven);
    let err = outbox
        .enqueue(channels.event(&id, &body).await.unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "channel_not_activated");
    // An agent subscriber asking for more than the challenge can prove.
    let wide = json!({"subscriber_id": "s-3", "url": sink.url("/c"),
                      "event_types": ["capabilities.changed", "principal.changed"]});
    let refused = ChannelRegistration::agent("buyer-1", &wide).unwrap_err();
    assert!(refused.to_string().contains("principal.changed"), "{refused}");
}

#[tokio::test]
async fn a_closed_channel_sends_its_held_events_then_refuses_everything() {
    let sink = Sink::start(|_, _| Answer::Status(200)).await;
    let (outbox, _) = outbox("channels-close", fast_retry(), None);
    let channels = Channels::new(outbox.clone());
    let reg = ChannelRegistration::push_notification_config("mb_9", &config(&sink.url("/c"), "token_close_0123456789"))
        .unwrap();
    channels.put(reg).await.unwrap();
    let impairment = json!({"task_id": "mb_9", "status": "working", "timestamp": "2026-04-18T12:00:00Z",
        "operation_id": "op_1", "result": {"notification_type": "impairment", "impairment_id": "imp_1", "state": "open"}});
    let held = outbox
        .enqueue(
            channels
                .event("push_notification_config:mb_9", &impairment)
                .await
                .unwrap()
                .coalescing_key("imp_1"),
        )
        .await
        .unwrap();
    let view = outbox.get(&held.id).await.unwrap().unwrap();
    assert!(
        view.next_attempt_at_ms.unwrap() > view.enqueued_at_ms,
        "held for its window"
    );
    assert_eq!(
        channels.close("push_notification_config:mb_9").await.unwrap().state,
        ChannelState::Closed
    );
    let err = outbox
        .enqueue(
            channels
                .event("push_notification_config:mb_9", &task("mb_9", 1))
                .await
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OutboxError::ChannelNotActive { .. }) && err.code() == "channel_closed");
    let running = dispatch(&outbox, quick());
    assert!(
        until(Duration::from_secs(10), async || sink.hits().len() == 1).await,
        "the held impairment is flushed"
    );
    running.stop().await;
    let again =
        ChannelRegistration::push_notification_config("mb_9", &config(&sink.url("/c"), "token_close_0123456789"))
            .unwrap();
    assert_eq!(channels.put(again).await.unwrap_err().code(), "channel_closed");
}
