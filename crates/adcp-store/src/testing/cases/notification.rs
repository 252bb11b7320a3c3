//! The notification records' contract: `(sender, notification_id) → first
//! idempotency_key`, written with the completion that carried it.

use super::{claimed, config, ev, Backend, DAY, FP, NOW, OTHER_FP, SELLER};
use crate::idempotency::{IdempotencyError, IdempotencyStore, RecordState, SenderAliases, MAX_NOTIFICATION_ID_LEN};
use std::sync::Arc;

/// Claims `key` for [`SELLER`] at `now` and completes it with
/// `notification_id` at `now`.
async fn deliver(store: &impl IdempotencyStore, key: &str, notification_id: &str, now: i64) {
    let e = ev(SELLER, key);
    let claim = claimed(store.claim(e, FP, now).await.unwrap());
    store
        .complete_with_notification(e, claim.token, Some(notification_id), now)
        .await
        .unwrap();
}

async fn origin(store: &impl IdempotencyStore, sender: &str, notification_id: &str, now: i64) -> Option<String> {
    store.notification_origin(sender, notification_id, now).await.unwrap()
}

/// Notifications: the origin is recorded with the completion, not with the claim.
pub async fn notification_recorded_on_complete<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_n1");
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    // A claim alone records nothing.
    assert_eq!(origin(&*store, SELLER, "ntf_1", NOW).await, None);
    store
        .complete_with_notification(e, claim.token, Some("ntf_1"), NOW + 5)
        .await
        .unwrap();
    assert_eq!(
        origin(&*store, SELLER, "ntf_1", NOW + 5).await.as_deref(),
        Some("whk_n1")
    );
    assert_eq!(origin(&*store, SELLER, "ntf_unknown", NOW + 5).await, None);
    // The completion itself is the plain one.
    let record = store.lookup(e, NOW + 5).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        RecordState::Completed {
            token: claim.token,
            completed_at: NOW + 5
        }
    );
    assert_eq!(record.expires_at, NOW + 5 + DAY);
    // Completing again with the owning token is still a no-op.
    store
        .complete_with_notification(e, claim.token, Some("ntf_1"), NOW + 6)
        .await
        .unwrap();
    // Notification records count toward nothing.
    assert_eq!(store.sender_len(SELLER, NOW + 6).await.unwrap(), 1);
}

/// Notifications: a released or fenced-off token completes nothing and records nothing.
pub async fn notification_not_recorded_without_ownership<B: Backend>(b: &B) {
    let store = b.idem(config(30, 100)).await;
    // A released claim records nothing, and its token completes nothing.
    let released = ev(SELLER, "whk_released");
    let claim = claimed(store.claim(released, FP, NOW).await.unwrap());
    store.release(released, claim.token, NOW + 1).await.unwrap();
    assert_eq!(
        store
            .complete_with_notification(released, claim.token, Some("ntf_r"), NOW + 2)
            .await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(origin(&*store, SELLER, "ntf_r", NOW + 2).await, None);
    // A fenced-off token (its lease was taken over) records nothing either.
    let crashed = ev(SELLER, "whk_crashed");
    let first = claimed(store.claim(crashed, FP, NOW).await.unwrap());
    let second = claimed(store.claim(crashed, FP, NOW + 31).await.unwrap());
    assert_eq!(
        store
            .complete_with_notification(crashed, first.token, Some("ntf_c"), NOW + 32)
            .await,
        Err(IdempotencyError::NotOwner)
    );
    assert_eq!(origin(&*store, SELLER, "ntf_c", NOW + 32).await, None);
    store
        .complete_with_notification(crashed, second.token, Some("ntf_c"), NOW + 33)
        .await
        .unwrap();
    assert_eq!(
        origin(&*store, SELLER, "ntf_c", NOW + 33).await.as_deref(),
        Some("whk_crashed")
    );
}

/// Notifications: re-emissions under fresh keys keep the first key as origin.
pub async fn notification_keeps_the_first_key_across_re_emissions<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    deliver(&*store, "whk_first", "ntf_term", NOW).await;
    // A re-emission: a fresh key, the same notification.
    let again = ev(SELLER, "whk_second");
    let claim = claimed(store.claim(again, OTHER_FP, NOW + 100).await.unwrap());
    assert_eq!(
        origin(&*store, SELLER, "ntf_term", NOW + 100).await.as_deref(),
        Some("whk_first")
    );
    store
        .complete_with_notification(again, claim.token, Some("ntf_term"), NOW + 100)
        .await
        .unwrap();
    assert_eq!(
        origin(&*store, SELLER, "ntf_term", NOW + 100).await.as_deref(),
        Some("whk_first")
    );
    // The latest sighting extends the record (first key kept) ...
    assert_eq!(
        origin(&*store, SELLER, "ntf_term", NOW + DAY + 50).await.as_deref(),
        Some("whk_first")
    );
    // ... until a window after it.
    assert_eq!(
        origin(&*store, SELLER, "ntf_term", NOW + 100 + DAY).await.as_deref(),
        Some("whk_first")
    );
    assert_eq!(origin(&*store, SELLER, "ntf_term", NOW + 101 + DAY).await, None);
}

/// Notifications: concurrent re-emissions agree on one first key.
pub async fn notification_concurrent_re_emissions_agree_on_one_first_key<B: Backend>(b: &B) {
    const EMISSIONS: usize = 16;
    let store = b.idem(config(60, 1_000)).await;
    let tasks: Vec<_> = (0..EMISSIONS)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let key = format!("whk_race_{i}");
                deliver(&*store, &key, "ntf_race", NOW).await;
                key
            })
        })
        .collect();
    let mut keys = Vec::new();
    for task in tasks {
        keys.push(task.await.unwrap());
    }
    let first = origin(&*store, SELLER, "ntf_race", NOW).await.unwrap();
    assert!(keys.contains(&first), "{first} is none of {keys:?}");
    // Every later reader sees the same first key.
    for _ in 0..3 {
        assert_eq!(origin(&*store, SELLER, "ntf_race", NOW + 1).await, Some(first.clone()));
    }
}

/// Notifications: completing with no `notification_id` behaves like `complete`.
pub async fn notification_none_completes_like_complete<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let e = ev(SELLER, "whk_plain");
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    assert_eq!(
        store
            .complete_with_notification(e, crate::idempotency::ClaimToken(claim.token.0 + 1), None, NOW + 1)
            .await,
        Err(IdempotencyError::NotOwner)
    );
    store
        .complete_with_notification(e, claim.token, None, NOW + 5)
        .await
        .unwrap();
    store
        .complete_with_notification(e, claim.token, None, NOW + 6)
        .await
        .unwrap();
    // Mixing the two forms on one record is fine: both are `complete`.
    store.complete(e, claim.token, NOW + 7).await.unwrap();
    let record = store.lookup(e, NOW + 7).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        RecordState::Completed {
            token: claim.token,
            completed_at: NOW + 5
        }
    );
    assert_eq!(record.expires_at, NOW + 5 + DAY);
    assert_eq!(
        store.claim(e, FP, NOW + 8).await.unwrap(),
        crate::idempotency::ClaimOutcome::Completed
    );
    assert_eq!(
        store
            .complete_with_notification(ev(SELLER, "nope"), claim.token, None, NOW)
            .await,
        Err(IdempotencyError::NotOwner)
    );
}

/// Notifications: a record expires with the idempotency window.
pub async fn notification_expires_with_the_window<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    deliver(&*store, "whk_old", "ntf_exp", NOW).await;
    // Live through the whole window, inclusive, like the dedup record.
    assert_eq!(
        origin(&*store, SELLER, "ntf_exp", NOW + DAY).await.as_deref(),
        Some("whk_old")
    );
    assert_eq!(origin(&*store, SELLER, "ntf_exp", NOW + DAY + 1).await, None);
    // After the window the next completion is the new first.
    deliver(&*store, "whk_new", "ntf_exp", NOW + DAY + 1).await;
    assert_eq!(
        origin(&*store, SELLER, "ntf_exp", NOW + DAY + 1).await.as_deref(),
        Some("whk_new")
    );
}

/// Notifications: aliased identities share notification records.
pub async fn notification_aliases_share_one_keyspace<B: Backend>(b: &B) {
    let store = SenderAliases::new(b.idem(config(60, 100)).await).alias("hmac:cred-7", SELLER);
    let hmac = ev("hmac:cred-7", "whk_via_hmac");
    let claim = claimed(store.claim(hmac, FP, NOW).await.unwrap());
    store
        .complete_with_notification(hmac, claim.token, Some("ntf_mig"), NOW)
        .await
        .unwrap();
    assert_eq!(
        origin(&store, SELLER, "ntf_mig", NOW).await.as_deref(),
        Some("whk_via_hmac")
    );
    assert_eq!(
        origin(&store, "hmac:cred-7", "ntf_mig", NOW).await.as_deref(),
        Some("whk_via_hmac")
    );
    // A re-emission under the other identity keeps the first key.
    let rfc9421 = ev(SELLER, "whk_via_9421");
    let claim = claimed(store.claim(rfc9421, FP, NOW + 1).await.unwrap());
    store
        .complete_with_notification(rfc9421, claim.token, Some("ntf_mig"), NOW + 1)
        .await
        .unwrap();
    assert_eq!(
        origin(&store, "hmac:cred-7", "ntf_mig", NOW + 1).await.as_deref(),
        Some("whk_via_hmac")
    );
    // Unaliased identities stay separate.
    assert_eq!(origin(&store, "hmac:cred-8", "ntf_mig", NOW + 1).await, None);
}

/// Notifications: senders have separate notification records.
pub async fn notification_senders_are_isolated<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let (a, c) = ("https://a.example/mcp", "https://c.example/mcp");
    let ea = ev(a, "whk_a");
    let claim = claimed(store.claim(ea, FP, NOW).await.unwrap());
    store
        .complete_with_notification(ea, claim.token, Some("ntf_same"), NOW)
        .await
        .unwrap();
    assert_eq!(origin(&*store, c, "ntf_same", NOW).await, None);
    let ec = ev(c, "whk_c");
    let claim = claimed(store.claim(ec, FP, NOW).await.unwrap());
    store
        .complete_with_notification(ec, claim.token, Some("ntf_same"), NOW)
        .await
        .unwrap();
    assert_eq!(origin(&*store, a, "ntf_same", NOW).await.as_deref(), Some("whk_a"));
    assert_eq!(origin(&*store, c, "ntf_same", NOW).await.as_deref(), Some("whk_c"));
}

/// Notifications: an over-long `notification_id` is refused and nothing is written.
pub async fn notification_rejects_long_ids<B: Backend>(b: &B) {
    let store = b.idem(config(60, 100)).await;
    let long = "n".repeat(MAX_NOTIFICATION_ID_LEN + 1);
    let max = "m".repeat(MAX_NOTIFICATION_ID_LEN);
    let e = ev(SELLER, "whk_long");
    let claim = claimed(store.claim(e, FP, NOW).await.unwrap());
    assert_eq!(
        store
            .complete_with_notification(e, claim.token, Some(&long), NOW + 1)
            .await,
        Err(IdempotencyError::NotificationIdTooLong)
    );
    assert_eq!(
        store.notification_origin(SELLER, &long, NOW + 1).await,
        Err(IdempotencyError::NotificationIdTooLong)
    );
    // Nothing was written: the claim is still held, not completed.
    assert!(matches!(
        store.lookup(e, NOW + 1).await.unwrap().unwrap().state,
        RecordState::Claimed { .. }
    ));
    store
        .complete_with_notification(e, claim.token, Some(&max), NOW + 2)
        .await
        .unwrap();
    assert_eq!(
        origin(&*store, SELLER, &max, NOW + 2).await.as_deref(),
        Some("whk_long")
    );
}
