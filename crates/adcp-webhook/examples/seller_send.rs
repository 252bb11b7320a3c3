//! A seller delivering signed webhooks.
//!
//! ```text
//! cargo run -p adcp-webhook --example buyer_receive      # in one terminal
//! cargo run -p adcp-webhook --example seller_send        # in another
//! cargo run -p adcp-webhook --example seller_send -- --url http://127.0.0.1:3001/webhooks/adcp --events 5
//! ```
//!
//! Sends `--events` task-status webhooks (default 3) to `--url`, then
//! re-sends the first one (a retry: same bytes, fresh signature) to show
//! the receiver answering it 2xx without applying it twice, and prints
//! every attempt as a `webhook_activity` record. Plain HTTP is allowed only
//! because the URL is loopback and the demo opts in; production senders
//! use the default policy (HTTPS, reserved ranges refused).

mod demo;

use adcp_sign::HttpSigner;
use adcp_sign::WebhookEvent;
use adcp_webhook::{
    Activation, AttemptRecord, DeliveryObserver, Destination, DestinationPolicy, RetryPolicy, WebhookSender,
};
use adcp_webhook::{McpWebhook, TaskStatus};
use std::sync::Arc;
use std::time::Duration;

/// Prints each attempt as it happens (a real seller stores them).
struct PrintActivity;

impl DeliveryObserver for PrintActivity {
    fn on_attempt(&self, record: &AttemptRecord) {
        println!("webhook_activity {}", record.to_activity_json());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = demo::arg("--url", "http://127.0.0.1:3000/webhooks/adcp");
    let events: usize = demo::arg("--events", "3").parse()?;

    let sender = WebhookSender::builder(HttpSigner::webhook(demo::seller_key()?)?)
        .retry_policy(RetryPolicy::new(
            Duration::from_millis(200),
            Duration::from_secs(5),
            Duration::from_secs(60),
        )?)
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .observer(Arc::new(PrintActivity))
        .build()?;

    // The buyer's push_notification_config, as received with the task.
    let destination = Destination::from_registration(&serde_json::json!({
        "url": url,
        "operation_id": "op_demo_001",
    }))?;

    let mut first = None;
    for i in 0..events {
        let status = if i + 1 == events {
            TaskStatus::Completed
        } else {
            TaskStatus::Working
        };
        let event = McpWebhook::new(
            "task_demo_001",
            "create_media_buy",
            status,
            format!("2026-04-18T12:00:{i:02}Z"),
        )
        .operation_id(destination.operation_id().unwrap_or_default())
        .context(serde_json::json!({"trace_id": "demo-trace-1"}))
        .message(format!("step {} of {events}", i + 1))
        .result(serde_json::json!({"percentage": (i + 1) * 100 / events}))
        .into_event()?;
        let report = sender.deliver(&destination, &event).await;
        println!("event {} -> {:?}", event.idempotency_key().as_str(), report.outcome);
        first.get_or_insert(event);
    }
    // An account-level subscription (`--notify URL`): prove the buyer
    // controls the URL, then notify it.
    let notify = demo::arg("--notify", "");
    if !notify.is_empty() {
        let activation = Activation::account(
            notify.as_str(),
            demo::ACCOUNT_ID,
            demo::SUBSCRIBER_ID,
            demo::AGENT_URL,
            [demo::EVENT_TYPE],
        )?;
        let report = sender.activate(&activation).await;
        println!("activation of {notify} -> {}", report.outcome.code());
        if report.outcome.is_activated() {
            let notification = WebhookEvent::new(&serde_json::json!({
                "notification_id": "crv_demo_15s.review.1",
                "notification_type": demo::EVENT_TYPE,
                "fired_at": "2026-04-18T12:05:11Z",
                "subscriber_id": demo::SUBSCRIBER_ID,
                "account_id": demo::ACCOUNT_ID,
                "creative_id": "crv_demo_15s",
                "transition": {"from": "pending_review", "to": "approved", "observed_at": "2026-04-18T12:04:58Z"},
                "reason_code": "review_passed",
                "initiator": "seller",
            }))?;
            let report = sender.deliver(&Destination::new(notify.as_str()), &notification).await;
            println!(
                "notification {} -> {:?}",
                notification.idempotency_key().as_str(),
                report.outcome
            );
        }
    }
    if let Some(event) = first {
        let report = sender.deliver(&destination, &event).await;
        let note = if report.outcome.is_delivered() {
            "a duplicate: acknowledged, not applied twice"
        } else {
            "not acknowledged"
        };
        println!(
            "re-sent {} -> {:?} ({note})",
            event.idempotency_key().as_str(),
            report.outcome
        );
    }
    Ok(())
}
