use crate::support::*;
use adcp_outbox::{
    enqueue_sqlite, migrate_sqlite, ClaimRequest, EventState, ListFilter, ManualClock, NewEvent, OutboxDestination,
    OutboxError, DEFAULT_TABLE_PREFIX,
};
use adcp_sign::{IdempotencyKey, WebhookEvent};
use serde_json::json;
use std::collections::HashMap;

fn keyed(key: &str, payload: serde_json::Value, url: &str) -> NewEvent {
    NewEvent::new(
        WebhookEvent::with_idempotency_key(IdempotencyKey::new(key).unwrap(), &payload).unwrap(),
        OutboxDestination::new(url),
    )
}

const KEY: &str = "whk_0123456789abcdef";

#[tokio::test]
async fn the_same_key_and_payload_is_one_event_and_another_payload_is_refused() {
    let (outbox, _) = outbox("idem", fast_retry(), None);
    let url = "https://buyer.example/hooks";
    let first = outbox
        .enqueue(keyed(KEY, json!({"a": 1, "b": [1, 2]}), url))
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = outbox
        .enqueue(keyed(KEY, json!({"b": [1, 2], "a": 1}), url))
        .await
        .unwrap();
    assert_eq!((again.id.clone(), again.duplicate), (first.id.clone(), true));
    let err = outbox.enqueue(keyed(KEY, json!({"a": 2}), url)).await.unwrap_err();
    assert_eq!(err.code(), "idempotency_key_conflict");
    // Fan-out: one key per destination.
    let err = outbox
        .enqueue(keyed(KEY, json!({"a": 1, "b": [1, 2]}), "https://other.example/hooks"))
        .await
        .unwrap_err();
    assert!(matches!(err, OutboxError::KeyUsedForOtherDestination { .. }));
    // Another signing scope is another keyspace.
    let other = outbox
        .enqueue(keyed(KEY, json!({"a": 2}), url).signing_scope("tenant-2"))
        .await
        .unwrap();
    assert_ne!(other.id, first.id);
    let all = outbox
        .list(&ListFilter {
            limit: 10,
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 2);
}

#[tokio::test]
async fn the_outbox_shares_a_file_without_touching_the_applications_user_version() {
    let path = temp_file("shared");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 7).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT)")
        .unwrap();
    migrate_sqlite(&conn, "app_outbox_").unwrap();
    migrate_sqlite(&conn, "app_outbox_").unwrap();
    let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, 7);
    // One row per version applied, none twice.
    let (rows, newest): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), MAX(version) FROM app_outbox_schema_version",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, newest), (4, 4));
    assert!(migrate_sqlite(&conn, "bad-prefix").is_err());
}

#[tokio::test]
async fn an_application_transaction_commits_or_rolls_back_its_webhook() {
    let (outbox, path) = outbox("tx", fast_retry(), None);
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT)")
        .unwrap();

    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO orders (state) VALUES ('booked')", []).unwrap();
    let row = outbox
        .prepare(event(json!({"n": 1}), "https://buyer.example/a"))
        .unwrap();
    enqueue_sqlite(&tx, DEFAULT_TABLE_PREFIX, &row).unwrap();
    tx.rollback().unwrap();
    assert!(outbox.get(&row.id()).await.unwrap().is_none());

    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO orders (state) VALUES ('booked')", []).unwrap();
    let row = outbox
        .prepare(event(json!({"n": 2}), "https://buyer.example/a"))
        .unwrap();
    enqueue_sqlite(&tx, DEFAULT_TABLE_PREFIX, &row).unwrap();
    tx.commit().unwrap();
    let view = outbox.get(&row.id()).await.unwrap().unwrap();
    assert_eq!(view.state, EventState::Pending);
}

#[tokio::test]
async fn a_lease_that_expired_is_fenced_and_its_pending_record_is_closed() {
    let clock = ManualClock::new(1_800_000_000_000);
    let (outbox, _) = outbox("fence", fast_retry(), Some(clock.clone()));
    let e = outbox
        .enqueue(
            event(
                json!({"notification_type": "account.status_changed", "notification_id": "n1"}),
                "https://b.example/x",
            )
            .principal("p1"),
        )
        .await
        .unwrap();
    let store = outbox.store();
    let claim = |now: i64| ClaimRequest {
        now_ms: now,
        lease_ms: 10_000,
        owner: "t".into(),
        limit: 10,
        per_origin_cap: 4,
        in_flight: HashMap::new(),
    };
    let now = clock.now_ms();
    let first = store.claim(claim(now)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(store.claim(claim(now + 1)).await.unwrap().is_empty(), "leased");
    let second = store.claim(claim(now + 10_001)).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].attempt, 2);
    let late = adcp_outbox::Finish {
        id: first[0].id.clone(),
        lease_token: first[0].lease_token,
        origin: first[0].origin.clone(),
        outcome: adcp_outbox::Outcome::Delivered,
        facts: None,
        now_ms: now + 10_002,
    };
    assert_eq!(store.finish(vec![late]).await.unwrap(), vec![false]);
    let view = outbox.get(&e.id).await.unwrap().unwrap();
    assert_eq!(view.state, EventState::InFlight);
    let records = outbox
        .activity(&adcp_outbox::ActivityQuery {
            selector: adcp_outbox::ActivitySelector::Principal {
                principal: "p1".into(),
                resource: None,
            },
            limit: 50,
        })
        .await
        .unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].status, adcp_outbox::ActivityStatus::ConnectionError);
    assert!(records[1].error_message.as_deref().unwrap().contains("abandoned"));
    assert_eq!(records[0].status, adcp_outbox::ActivityStatus::Pending);
}

use adcp_outbox::Clock as _;

/// Two outboxes on one SQLite file (as two relay processes would be):
/// every claim is a `BEGIN IMMEDIATE` transaction, so no event is leased
/// twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_never_claim_one_event_twice() {
    let (outbox, path) = outbox("two", fast_retry(), None);
    for i in 0..300 {
        outbox
            .enqueue(event(
                json!({"notification_type": "account.status_changed", "i": i}),
                &format!("https://b{}.example/x", i % 7),
            ))
            .await
            .unwrap();
    }
    let other = adcp_outbox::SqliteOutbox::open(&path, adcp_outbox::SqliteOutboxOptions::default()).unwrap();
    let stores: Vec<std::sync::Arc<dyn adcp_outbox::OutboxStore>> =
        vec![outbox.store().clone(), std::sync::Arc::new(other)];
    let mut tasks = Vec::new();
    for (n, store) in stores.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let batch = store
                    .claim(ClaimRequest {
                        now_ms: adcp_outbox::SystemClock.now_ms(),
                        lease_ms: 60_000,
                        owner: format!("w{n}"),
                        limit: 7,
                        per_origin_cap: 1_000,
                        in_flight: HashMap::new(),
                    })
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return ids;
                }
                ids.extend(batch.into_iter().map(|c| c.id));
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let unique: std::collections::HashSet<_> = all.iter().cloned().collect();
    assert_eq!((all.len(), unique.len()), (300, 300));
}

/// The seller's path of docs/webhooks.md: a notification built by
/// `adcp_webhook::notify` for a buy's registration, enqueued to the
/// destination that registration names, is stored as its kind with its
/// key and id (the registration's token and operation_id in the body).
#[tokio::test]
async fn a_notification_built_for_a_registration_is_enqueued_as_its_kind() {
    use adcp_webhook::notify::{ImpairmentBuilder, Registered};
    let (outbox, _) = outbox("notify", fast_retry(), None);
    let registration_json = json!({
        "url": "https://buyer.example/hooks/mb_1",
        "token": "tok_8f2c1e",
        "operation_id": "op_mb_1",
    });
    let registration = Registered::from_value(&registration_json);
    let notification = ImpairmentBuilder::new(&registration, "2026-04-18T12:00:00Z")
        .task_id("task_mb_1")
        .media_buy_id("mb_1")
        .health("impaired")
        .impairment_id("imp_1")
        .resource_type("creative")
        .resource_id("cr_9")
        .package_ids(["pkg_1"])
        .transition_from("approved")
        .transition_to("suspended")
        .reason_code("content_rejected")
        .observed_at("2026-04-18T11:59:30Z")
        .build()
        .unwrap();
    let key = notification.idempotency_key().as_str().to_owned();
    let done = outbox
        .enqueue(
            NewEvent::new(
                notification.into_event().unwrap(),
                OutboxDestination::from_registration(&registration_json).unwrap(),
            )
            .resource("media_buy:mb_1"),
        )
        .await
        .unwrap();
    assert_eq!(done.idempotency_key, key);
    let view = outbox.get(&done.id).await.unwrap().unwrap();
    assert_eq!(view.notification_type.as_deref(), Some("impairment"));
    assert_eq!(view.notification_id.as_deref(), Some("imp_1"));
    assert_eq!(view.url, "https://buyer.example/hooks/mb_1");
    assert_eq!(view.state, EventState::Pending);
}
