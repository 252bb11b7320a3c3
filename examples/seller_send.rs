//! A seller delivering signed webhooks through the durable outbox.
//!
//! ```text
//! cargo run -p adcp-examples --example seller_send
//! cargo run -p adcp-examples --example seller_send -- --url http://127.0.0.1:3000 --events 5
//! ```
//!
//! Enqueues `--events` task-status webhooks (default 3) for
//! `{base}/webhooks/adcp` into an outbox on a SQLite file (durable when
//! `enqueue` returns: a restart loses nothing), activates an account-level
//! subscription at `{base}/webhooks/notifications` and enqueues a
//! notification for it, runs a dispatcher until everything is delivered,
//! and prints every attempt as its `webhook_activity` record. Enqueueing
//! the first update again returns the same event: the outbox is idempotent
//! on the key and payload. Without `--url` the buyer is a counterpart
//! started on loopback (`demo/counterpart.rs`) and the example exits 0 when
//! it applied each event exactly once; with `--url` it sends to your buyer
//! (for instance `buyer_receive --serve`). Plain HTTP is allowed only
//! because the URL is loopback and the example opts in; production senders
//! use the default policy (HTTPS, reserved ranges refused).

mod demo;

use adcp_outbox::{
    ActivityQuery, ActivitySelector, Dispatcher, DispatcherConfig, EventState, NewEvent, Outbox, OutboxConfig,
    OutboxDestination, SqliteOutbox, StaticSigners,
};
use adcp_sign::{BoxSigner, HttpSigner};
use adcp_webhook::{Activation, AttemptClient, DestinationPolicy, WebhookSender};
use demo::{counterpart, expect, Outcome};
use std::sync::Arc;
use std::time::Duration;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Outcome {
    let buyer = match demo::arg("--url", "") {
        url if url.is_empty() => Some(counterpart::buyer().await?),
        _ => None,
    };
    let base = buyer
        .as_ref()
        .map_or_else(|| demo::arg("--url", ""), |b| b.base.clone());
    let events: usize = demo::arg("--events", "3").parse()?;
    let policy = DestinationPolicy::default().dangerously_allow_plain_http_loopback();

    // The outbox: in production, the seller's own database file (or
    // PostgreSQL), so that enqueue commits with the business change.
    let dir = std::env::temp_dir().join(format!("adcp-seller-send-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = SqliteOutbox::open(dir.join("outbox.sqlite"), Default::default())?;
    let outbox = Outbox::new(Arc::new(store), OutboxConfig::default())?;

    // The buyer's push_notification_config, as received with the task.
    let destination = OutboxDestination::from_registration(&serde_json::json!({
        "url": format!("{base}/webhooks/adcp"),
        "operation_id": "op_demo_001",
    }))?;
    let mut ids = Vec::new();
    for i in 0..events {
        // The operation_id the buyer registered is echoed in the payload.
        let event = counterpart::task_event(i, events, destination.operation_id().unwrap_or_default())?;
        let new = NewEvent::new(event, destination.clone())
            .principal("buyer-demo")
            .resource("media_buy:mb_demo");
        if i == 0 {
            // Enqueueing the same event twice stores it once.
            let first = outbox.enqueue(new.clone()).await?;
            let again = outbox.enqueue(new).await?;
            expect(again.id == first.id && again.duplicate, "the outbox is idempotent")?;
            ids.push(first.id);
        } else {
            ids.push(outbox.enqueue(new).await?.id);
        }
    }

    // An account-level subscription: prove the buyer controls the URL
    // (the activation challenge, sent at once), then notify it durably.
    let notify = format!("{base}/webhooks/notifications");
    let activator = WebhookSender::builder(HttpSigner::webhook(demo::seller_key()?)?)
        .destination_policy(policy.clone())
        .build()?;
    let activation = Activation::account(
        notify.as_str(),
        demo::ACCOUNT_ID,
        demo::SUBSCRIBER_ID,
        demo::AGENT_URL,
        [demo::EVENT_TYPE],
    )?;
    let report = activator.activate(&activation).await;
    println!("activation of {notify} -> {}", report.outcome.code());
    expect(report.outcome.is_activated(), "the subscription activated")?;
    let notification = NewEvent::new(counterpart::notification()?, OutboxDestination::new(notify.as_str()))
        .principal("buyer-demo")
        .resource("creative:crv_demo_15s");
    ids.push(outbox.enqueue(notification).await?.id);

    // The dispatcher: in production a long-running task (or `adcp-sig relay`).
    let signers = StaticSigners::new().with("default", HttpSigner::webhook(BoxSigner::new(demo::seller_key()?))?);
    let client = AttemptClient::builder().destination_policy(policy).build()?;
    let dispatcher = Dispatcher::new(outbox.clone(), client, Arc::new(signers), DispatcherConfig::default())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(dispatcher.run(async {
        let _ = stopped.await;
    }));
    let mut delivered = 0;
    for _ in 0..300 {
        delivered = 0;
        for id in &ids {
            if outbox.get(id).await?.is_some_and(|e| e.state == EventState::Delivered) {
                delivered += 1;
            }
        }
        if delivered == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    running.await?;
    for id in &ids {
        if let Some(event) = outbox.get(id).await? {
            println!(
                "event {} -> {} after {} attempt(s)",
                event.idempotency_key,
                event.state.as_str(),
                event.attempts
            );
        }
    }
    // The buyer's `get_media_buys … include_webhook_activity` answer.
    let records = outbox
        .activity(&ActivityQuery {
            selector: ActivitySelector::Principal {
                principal: "buyer-demo".into(),
                resource: None,
            },
            limit: 50,
        })
        .await?;
    for record in &records {
        println!("webhook_activity {}", record.to_json());
    }
    expect(delivered == events + 1, "every event delivered")?;
    expect(!records.is_empty(), "the notification's attempts recorded")?;
    if let Some(buyer) = buyer {
        let applied = buyer.applied.lock().map(|a| a.len()).unwrap_or_default();
        expect(
            applied == events + 1,
            format!("the buyer applied each event once ({applied})"),
        )?;
    }
    drop(outbox);
    let _ = std::fs::remove_dir_all(&dir);
    println!("seller_send: ok");
    Ok(())
}
