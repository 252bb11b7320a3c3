//! A seller delivering signed webhooks.
//!
//! ```text
//! cargo run -p adcp-examples --example seller_send
//! cargo run -p adcp-examples --example seller_send -- --url http://127.0.0.1:3000 --events 5
//! ```
//!
//! Sends `--events` task-status webhooks (default 3) to
//! `{base}/webhooks/adcp`, activates and notifies an account-level
//! subscription at `{base}/webhooks/notifications`, then re-sends the first
//! update (a retry: same bytes, fresh signature) to show the receiver
//! acknowledging it without applying it twice, and prints every attempt as
//! a `webhook_activity` record. Without `--url` the buyer is a counterpart
//! started on loopback (`demo/counterpart.rs`) and the example exits 0 when
//! it applied each event exactly once; with `--url` it sends to your
//! buyer (for instance `buyer_receive --serve`). Plain HTTP is allowed only
//! because the URL is loopback and the example opts in; production senders
//! use the default policy (HTTPS, reserved ranges refused).

mod demo;

use adcp_webhook::{Activation, AttemptRecord, DeliveryObserver, Destination, WebhookSender};
use demo::{counterpart, expect, Outcome};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Prints each attempt as it happens (a real seller stores them).
#[derive(Default)]
struct PrintActivity {
    attempts: AtomicUsize,
}

impl DeliveryObserver for PrintActivity {
    fn on_attempt(&self, record: &AttemptRecord) {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let activity = serde_json::json!({
            "idempotency_key": record.idempotency_key,
            "attempt": record.attempt,
            "status": record.status.as_str(),
            "http_status_code": record.http_status_code,
            "error_message": record.error_message,
        });
        println!("webhook_activity {activity}");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Outcome {
    let buyer = match demo::arg("--url", "") {
        url if url.is_empty() => Some(counterpart::buyer().await?),
        _ => None,
    };
    let base = buyer
        .as_ref()
        .map_or_else(|| demo::arg("--url", ""), |b| b.base.clone());
    let events: usize = demo::arg("--events", "3").parse()?;

    let activity = Arc::new(PrintActivity::default());
    let sender = WebhookSender::builder(adcp_sign::HttpSigner::webhook(demo::seller_key()?)?)
        .destination_policy(adcp_webhook::DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .observer(Arc::clone(&activity) as Arc<dyn DeliveryObserver>)
        .build()?;

    // The buyer's push_notification_config, as received with the task.
    let destination = Destination::from_registration(&serde_json::json!({
        "url": format!("{base}/webhooks/adcp"),
        "operation_id": "op_demo_001",
    }))?;

    let mut delivered = 0;
    let mut first = None;
    for i in 0..events {
        // The operation_id the buyer registered is echoed in the payload.
        let event = counterpart::task_event(i, events, destination.operation_id().unwrap_or_default())?;
        let report = sender.deliver(&destination, &event).await;
        println!("event {} -> {:?}", event.idempotency_key().as_str(), report.outcome);
        delivered += usize::from(report.outcome.is_delivered());
        first.get_or_insert(event);
    }

    // An account-level subscription: prove the buyer controls the URL
    // (the activation challenge), then notify it.
    let notify = format!("{base}/webhooks/notifications");
    let activation = Activation::account(
        notify.as_str(),
        demo::ACCOUNT_ID,
        demo::SUBSCRIBER_ID,
        demo::AGENT_URL,
        [demo::EVENT_TYPE],
    )?;
    let report = sender.activate(&activation).await;
    println!("activation of {notify} -> {}", report.outcome.code());
    expect(report.outcome.is_activated(), "the subscription activated")?;
    let notification = counterpart::notification()?;
    let report = sender.deliver(&Destination::new(notify.as_str()), &notification).await;
    println!(
        "notification {} -> {:?}",
        notification.idempotency_key().as_str(),
        report.outcome
    );
    delivered += usize::from(report.outcome.is_delivered());

    // A retry of the first update: the same bytes, signed afresh.
    if let Some(event) = first {
        let report = sender.deliver(&destination, &event).await;
        println!("re-sent {} -> {:?}", event.idempotency_key().as_str(), report.outcome);
        expect(report.outcome.is_delivered(), "the retry acknowledged")?;
    }

    expect(delivered == events + 1, "every event acknowledged")?;
    expect(
        activity.attempts.load(Ordering::SeqCst) >= events + 2,
        "every attempt recorded",
    )?;
    if let Some(buyer) = buyer {
        let applied = buyer.applied.lock().map(|a| a.len()).unwrap_or_default();
        expect(
            applied == events + 1,
            format!("the buyer applied each event once ({applied})"),
        )?;
    }
    println!("seller_send: ok");
    Ok(())
}
