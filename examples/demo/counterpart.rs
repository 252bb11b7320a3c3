//! The other side of each example, kept short: a seller that sends to a
//! buyer example, a buyer that a seller example sends to. The examples
//! themselves are the annotated versions of both roles.

use super::{Outcome, ACCOUNT_ID, AGENT_URL, EVENT_TYPE, SUBSCRIBER_ID};
use adcp_sign::{HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
use adcp_webhook::{
    Activation, DeliveryAuthMode, Destination, DestinationPolicy, McpWebhook, Receiver, ReceiverConfig, ReceiverLayer,
    Registration, RetryPolicy, StaticSubscriptions, SubscriptionScope, TaskStatus, Webhook, WebhookSender,
};
use std::sync::Arc;
use std::time::Duration;

/// The `i`-th of `total` task-status updates of the demo media buy, as the
/// seller builds it: the last one completes the task.
pub fn task_event(i: usize, total: usize, operation_id: &str) -> Outcome<WebhookEvent> {
    let status = if i + 1 == total {
        TaskStatus::Completed
    } else {
        TaskStatus::Working
    };
    Ok(McpWebhook::new(
        "task_demo_001",
        "create_media_buy",
        status,
        format!("2026-04-18T12:00:{i:02}Z"),
    )
    .operation_id(operation_id)
    .context(serde_json::json!({"trace_id": "demo-trace-1"}))
    .message(format!("step {} of {total}", i + 1))
    .result(serde_json::json!({"percentage": (i + 1) * 100 / total}))
    .into_event()?)
}

/// The demo account-level notification (a creative approved).
pub fn notification() -> Outcome<WebhookEvent> {
    Ok(WebhookEvent::new(&serde_json::json!({
        "notification_id": "crv_demo_15s.review.1",
        "notification_type": EVENT_TYPE,
        "fired_at": "2026-04-18T12:05:11Z",
        "subscriber_id": SUBSCRIBER_ID,
        "account_id": ACCOUNT_ID,
        "creative_id": "crv_demo_15s",
        "transition": {"from": "pending_review", "to": "approved", "observed_at": "2026-04-18T12:04:58Z"},
        "reason_code": "review_passed",
        "initiator": "seller",
    }))?)
}

/// The buyer's account-level subscription at `url` (its
/// `notification_configs[]` entry with the seller).
pub fn subscription(url: &str) -> Registration {
    Registration {
        url: url.to_owned(),
        seller_agent_url: AGENT_URL.to_owned(),
        subscriber_id: SUBSCRIBER_ID.to_owned(),
        scope: SubscriptionScope::Account(ACCOUNT_ID.to_owned()),
        delivery_auth: DeliveryAuthMode::Rfc9421,
        event_types: [EVENT_TYPE.to_owned()].into_iter().collect(),
        active: true,
    }
}

/// A sender with the demo key that may post plain HTTP to loopback (the
/// examples' only opt-out of the production destination policy) and
/// retries quickly.
pub fn sender() -> Outcome<WebhookSender<SoftwareSigner>> {
    Ok(WebhookSender::builder(HttpSigner::webhook(super::seller_key()?)?)
        .retry_policy(RetryPolicy::new(
            Duration::from_millis(100),
            Duration::from_secs(1),
            Duration::from_secs(10),
        )?)
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .build()?)
}

/// What the counterpart seller saw.
#[derive(Debug, Default)]
pub struct SellerRun {
    /// Task updates acknowledged with `2xx`.
    pub delivered: usize,
    /// Whether the subscription at `/webhooks/notifications` was activated.
    pub activated: bool,
    /// Whether its notification was acknowledged.
    pub notified: bool,
    /// Whether the re-sent first update (a retry) was acknowledged.
    pub resend_acknowledged: bool,
}

/// The seller: `events` task updates to `{base}/webhooks/adcp`, then (with
/// `notify`) the subscription at `{base}/webhooks/notifications` activated
/// and notified, then the first update sent again, freshly signed.
pub async fn seller(base: &str, events: usize, notify: bool) -> Outcome<SellerRun> {
    let sender = sender()?;
    let destination = Destination::from_registration(&serde_json::json!({
        "url": format!("{base}/webhooks/adcp"),
        "operation_id": "op_demo_001",
    }))?;
    let mut run = SellerRun::default();
    let mut first = None;
    for i in 0..events {
        let event = task_event(i, events, "op_demo_001")?;
        run.delivered += usize::from(sender.deliver(&destination, &event).await.outcome.is_delivered());
        first.get_or_insert(event);
    }
    if notify {
        let url = format!("{base}/webhooks/notifications");
        let activation = Activation::account(url.as_str(), ACCOUNT_ID, SUBSCRIBER_ID, AGENT_URL, [EVENT_TYPE])?;
        run.activated = sender.activate(&activation).await.outcome.is_activated();
        if run.activated {
            let report = sender.deliver(&Destination::new(url.as_str()), &notification()?).await;
            run.notified = report.outcome.is_delivered();
        }
    }
    if let Some(event) = first {
        run.resend_acknowledged = sender.deliver(&destination, &event).await.outcome.is_delivered();
    }
    Ok(run)
}

/// A running counterpart buyer.
pub struct Buyer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its receiver (outcome counters in `metrics()`).
    pub receiver: Receiver,
    /// The events its handler applied, in order: `idempotency_key`s.
    pub applied: Arc<std::sync::Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Buyer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The buyer: axum with the receiver layer (in-memory stores) on an
/// ephemeral loopback port, task updates at `/webhooks/adcp` and the demo
/// subscription at `/webhooks/notifications`.
pub async fn buyer() -> Outcome<Buyer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let keys = StaticKeyResolver::new().with_jwks(&super::seller_jwks()?, AGENT_URL);
    let subscriptions = StaticSubscriptions::new().with(subscription(&format!("{base}/webhooks/notifications")))?;
    let receiver = Receiver::builder(
        Arc::new(keys),
        Arc::new(MemoryReplayStore::webhook()),
        Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?),
    )
    .config(ReceiverConfig {
        scheme: "http".to_owned(),
        ..ReceiverConfig::default()
    })
    .subscriptions(Arc::new(subscriptions))
    .build()?;
    let applied = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&applied);
    let handler = move |webhook: Webhook| {
        let log = Arc::clone(&log);
        async move {
            if let Ok(mut log) = log.lock() {
                log.push(webhook.idempotency_key().to_owned());
            }
            "ok"
        }
    };
    let app = axum::Router::new()
        .route("/webhooks/adcp", axum::routing::post(handler.clone()))
        .route("/webhooks/notifications", axum::routing::post(handler))
        .layer(ReceiverLayer::new(receiver.clone()));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Buyer {
        base,
        receiver,
        applied,
        server,
    })
}
