//! A buyer's webhook endpoint with axum: the receiver layer verifies each
//! delivery and applies it once; the handler only sees verified, claimed
//! events.
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
use adcp_verify::keys::StaticKeyResolver;
use adcp_webhook::receiver::{Receiver, ReceiverConfig, ReceiverLayer, Webhook};
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
    let receiver = Receiver::builder_with_store(Arc::new(keys), store)
        .config(ReceiverConfig {
            // The demo listens on plain HTTP; behind TLS keep the default `https`.
            scheme: "http".to_owned(),
            ..ReceiverConfig::default()
        })
        .build()?;

    let applied = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(tokio::sync::Notify::new());
    let (a, d) = (Arc::clone(&applied), Arc::clone(&done));
    let app = Router::new().route(
        "/webhooks/adcp",
        post(move |webhook: Webhook| {
            let (a, d) = (Arc::clone(&a), Arc::clone(&d));
            async move {
                // Correlate by the payload's operation_id, never by the URL.
                let payload = webhook.payload();
                println!(
                    "applied {} from {} (operation {}, status {}): {}",
                    webhook.idempotency_key(),
                    webhook.sender(),
                    payload["operation_id"],
                    payload["status"],
                    webhook
                        .data()
                        .ok()
                        .flatten()
                        .map_or_else(String::new, ToString::to_string),
                );
                if a.fetch_add(1, Ordering::SeqCst) + 1 == max_events {
                    d.notify_one();
                }
                "ok"
            }
        })
        .layer(ReceiverLayer::new(receiver.clone())),
    );

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
