//! Activity records on SQLite at the store's level, on an injected clock:
//! the `pending` record of an attempt in flight, the records by principal,
//! resource and URL, an abandoned lease's record, and the purge (records
//! at the retention after their completion, events after their life's
//! bound).

use super::support::{fast_retry, outbox};
use adcp_outbox::{
    ActivityQuery, ActivitySelector, ActivityStatus, AttemptFacts, ClaimRequest, Claimed, Finish, Health, ManualClock,
    NewEvent, OutboxDestination, Outcome,
};
use adcp_sign::WebhookEvent;
use serde_json::json;
use std::collections::HashMap;

const T0: i64 = 1_800_000_000_000;
const DAY: i64 = 86_400_000;

fn claim(now: i64) -> ClaimRequest {
    ClaimRequest {
        now_ms: now,
        lease_ms: 10_000,
        owner: "test".into(),
        limit: 10,
        per_origin_cap: 1_000,
        in_flight: HashMap::new(),
    }
}

fn finish(c: &Claimed, outcome: Outcome, status: ActivityStatus, http: u16, now: i64) -> Finish {
    Finish {
        id: c.id.clone(),
        lease_token: c.lease_token,
        origin: c.origin.clone(),
        outcome,
        facts: Some(AttemptFacts {
            status,
            http_status: Some(http),
            response_time_ms: Some(7),
            error_message: (status != ActivityStatus::Success).then(|| format!("HTTP {http}")),
            completed_at_ms: now,
            health: if status == ActivityStatus::Success {
                Health::Up
            } else {
                Health::Down
            },
        }),
        now_ms: now,
    }
}

fn event(n: u32, url: &str, resource: &str) -> NewEvent {
    let payload = json!({"notification_type": "account.status_changed", "notification_id": format!("n{n}"), "n": n});
    NewEvent::new(WebhookEvent::new(&payload).unwrap(), OutboxDestination::new(url))
        .principal("p1")
        .resource(resource)
}

#[tokio::test]
async fn records_follow_attempts_and_are_purged_after_the_retention() {
    let clock = ManualClock::new(T0);
    let (o, _) = outbox("records", fast_retry(), Some(clock.clone()));
    let s = o.store();
    let url = "https://buyer.example/hook/0c5e5a8e-8a4e-4d4e-9f3a-2b7c1d9e8f70?token=secret";
    let e1 = o.enqueue(event(1, url, "media_buy:mb_1")).await.unwrap();
    let e2 = o
        .enqueue(event(2, "https://other.example/hook", "media_buy:mb_2"))
        .await
        .unwrap();
    let query = |selector| ActivityQuery { selector, limit: 50 };
    let p1 = || {
        query(ActivitySelector::Principal {
            principal: "p1".into(),
            resource: None,
        })
    };
    assert!(o.activity(&p1()).await.unwrap().is_empty(), "no attempt, no record");

    // Two attempts in flight: each has its pending record.
    let first = s.claim(claim(T0)).await.unwrap();
    assert_eq!(first.len(), 2);
    let pending = o.activity(&p1()).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|r| r.status == ActivityStatus::Pending
        && r.completed_at_ms.is_none()
        && r.fired_at_ms == T0
        && r.attempt == 1));
    let by_url = o.activity(&query(ActivitySelector::Url(url.into()))).await.unwrap();
    assert_eq!(by_url.len(), 1);
    assert!(!by_url[0].url.contains("secret") && !by_url[0].url.contains("0c5e5a8e"));

    // e1 fails and is retried; e2 is delivered.
    let finishes = first
        .iter()
        .map(|c| {
            if c.id == e1.id {
                finish(c, Outcome::RetryAt(T0 + 10), ActivityStatus::Failed, 503, T0 + 5)
            } else {
                finish(c, Outcome::Delivered, ActivityStatus::Success, 200, T0 + 5)
            }
        })
        .collect();
    assert_eq!(s.finish(finishes).await.unwrap(), vec![true, true]);
    // e1's second attempt is abandoned by its worker: taken over once its
    // lease has expired, its record says so.
    let again = s.claim(claim(T0 + 10)).await.unwrap();
    assert_eq!((again[0].id.clone(), again[0].attempt), (e1.id.clone(), 2));
    let third = s.claim(claim(T0 + 10 + 10_000)).await.unwrap();
    assert_eq!((third[0].id.clone(), third[0].attempt), (e1.id.clone(), 3));
    assert_eq!(
        s.finish(vec![finish(
            &again[0],
            Outcome::Delivered,
            ActivityStatus::Success,
            200,
            T0 + 10_020
        )])
        .await
        .unwrap(),
        vec![false],
        "the abandoned lease is fenced"
    );
    assert_eq!(
        s.finish(vec![finish(
            &third[0],
            Outcome::Delivered,
            ActivityStatus::Success,
            200,
            T0 + 10_030
        )])
        .await
        .unwrap(),
        vec![true]
    );
    let mb1 = o
        .activity(&query(ActivitySelector::Principal {
            principal: "p1".into(),
            resource: Some("media_buy:mb_1".into()),
        }))
        .await
        .unwrap();
    let seen: Vec<_> = mb1.iter().map(|r| (r.attempt, r.status, r.http_status_code)).collect();
    assert_eq!(
        seen,
        vec![
            (3, ActivityStatus::Success, Some(200)),
            (2, ActivityStatus::ConnectionError, None),
            (1, ActivityStatus::Failed, Some(503)),
        ]
    );
    assert!(mb1[1].error_message.as_deref().is_some_and(|m| m.contains("abandoned")));
    assert_eq!(mb1[2].completed_at_ms, Some(T0 + 5));
    assert_eq!(o.activity(&p1()).await.unwrap().len(), 4);

    // Each record is kept for the retention after its completion, then
    // purged; finished events two longest horizons after their enqueue
    // (the bound on an event's life).
    let retention = 30 * DAY;
    assert_eq!(s.purge(T0 + retention + 5, retention).await.unwrap(), 0);
    assert_eq!(o.activity(&p1()).await.unwrap().len(), 4);
    assert_eq!(
        s.purge(T0 + retention + 6, retention).await.unwrap(),
        2,
        "the two records completed at T0 + 5"
    );
    let left: Vec<_> = o.activity(&p1()).await.unwrap().iter().map(|r| r.attempt).collect();
    assert_eq!(left, vec![3, 2]);
    assert_eq!(s.purge(T0 + retention + DAY, retention).await.unwrap(), 2);
    assert!(o.activity(&p1()).await.unwrap().is_empty());
    assert!(o.get(&e1.id).await.unwrap().is_some(), "events outlive their records");
    let purged = s.purge(T0 + retention + 14 * DAY + 1, retention).await.unwrap();
    assert_eq!(purged, 2 + 2, "events, resources");
    assert!(o.activity(&p1()).await.unwrap().is_empty());
    assert!(o.get(&e1.id).await.unwrap().is_none());
    assert!(o.get(&e2.id).await.unwrap().is_none());
}
