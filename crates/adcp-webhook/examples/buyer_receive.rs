//! A buyer's webhook endpoint with axum: the receiver layer verifies each
//! delivery and applies it once; the handler only sees verified, claimed
//! events — task updates at `/webhooks/adcp`, and at
//! `/webhooks/notifications` the notifications of an account-level
//! subscription, whose activation challenge the receiver answers itself.
//!
//! ```text
//! cargo run -p adcp-webhook --example buyer_receive                       # 127.0.0.1:3000
//! cargo run -p adcp-webhook --example buyer_receive -- --bind 127.0.0.1:3001 --db /tmp/dedup.sqlite
//! ```
//!
//! Dedup state lives in SQLite (`--db`, default a file in the temp
//! directory), so a restart keeps it; a fleet would open a shared Redis or
//! PostgreSQL store instead (`adcp_store::redis` / `adcp_store::postgres`).
//! `--max-events N` stops two seconds after N applied events (for
//! scripted runs); by default it serves until Ctrl-C.

mod demo;

use adcp_store::sqlite::{SqliteOptions, SqliteStore};
use adcp_verify::StaticKeyResolver;
use adcp_webhook::payload::WebhookPayload;
use adcp_webhook::{
    DeliveryAuthMode, Receiver, ReceiverConfig, ReceiverLayer, Registration, StaticSubscriptions, SubscriptionScope,
    Webhook,
};
use axum::routing::post;
use axum::Router;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bind = demo::arg("--bind", "127.0.0.1:3000");
    let default_db = std::env::temp_dir().join("adcp-webhook-demo.sqlite");
    let db = demo::arg("--db", &default_db.to_string_lossy());
    let max_events: usize = demo::arg("--max-events", "0").parse()?;

    // The seller's keys (a real buyer: adcp_jwks::HttpsKeyResolver for the
    // seller's agent URL) and one durable store for both dedup duties.
    let keys = StaticKeyResolver::new().with_jwks(&demo::seller_jwks()?, demo::AGENT_URL);
    let store = Arc::new(SqliteStore::open(&db, SqliteOptions::default())?);
    // The account-level subscription this buyer registered with the seller
    // (its `notification_configs[]` entry): the receiver answers the
    // seller's activation challenge for it and holds its notifications to
    // it.
    let subscriptions = StaticSubscriptions::new().with(Registration {
        url: format!("http://{bind}/webhooks/notifications"),
        seller_agent_url: demo::AGENT_URL.to_owned(),
        subscriber_id: demo::SUBSCRIBER_ID.to_owned(),
        scope: SubscriptionScope::Account(demo::ACCOUNT_ID.to_owned()),
        delivery_auth: DeliveryAuthMode::Rfc9421,
        event_types: [demo::EVENT_TYPE.to_owned()].into_iter().collect(),
        active: true,
    })?;
    let receiver = Receiver::builder_with_store(Arc::new(keys), store)
        .config(ReceiverConfig {
            // The demo listens on plain HTTP; behind TLS keep the default `https`.
            scheme: "http".to_owned(),
            ..ReceiverConfig::default()
        })
        .subscriptions(Arc::new(subscriptions))
        .build()?;

    let applied = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(tokio::sync::Notify::new());
    let (a, d) = (Arc::clone(&applied), Arc::clone(&done));
    let handler = move |webhook: Webhook| {
        let (a, d) = (Arc::clone(&a), Arc::clone(&d));
        async move {
            match webhook.typed() {
                // Correlate a task by the payload's operation_id, never by the URL.
                WebhookPayload::McpTask(task) => println!(
                    "applied {} from {} (operation {}, status {}): {}",
                    webhook.idempotency_key(),
                    webhook.sender(),
                    task.operation_id.as_deref().unwrap_or("-"),
                    task.status.as_str(),
                    webhook
                        .data()
                        .ok()
                        .flatten()
                        .map_or_else(String::new, ToString::to_string),
                ),
                // Notifications: one logical event per notification_id; a
                // re-emission says which delivery it repeats.
                other => println!(
                    "applied {} from {} ({} notification {} of kind {}{})",
                    webhook.idempotency_key(),
                    webhook.sender(),
                    other.notification_type().unwrap_or("-"),
                    other.notification_id().unwrap_or("-"),
                    other.kind().as_str(),
                    webhook
                        .reemission_of()
                        .map_or_else(String::new, |first| format!(", re-emission of {first}")),
                ),
            }
            if a.fetch_add(1, Ordering::SeqCst) + 1 == max_events {
                d.notify_one();
            }
            "ok"
        }
    };
    let app = Router::new()
        .route("/webhooks/adcp", post(handler.clone()))
        .route("/webhooks/notifications", post(handler))
        .layer(ReceiverLayer::new(receiver.clone()));

    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("buyer listening on http://{bind}/webhooks/adcp (dedup store {db})");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = done.notified() => {
                    // Give the seller's re-send a moment to be answered.
                    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                }
            }
        })
        .await?;
    println!("outcomes: {:?}", receiver.metrics().snapshot());
    Ok(())
}
