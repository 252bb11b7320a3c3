//! A buyer's webhook endpoint with axum: the receiver layer verifies each
//! delivery and applies it once; the handler only sees verified, claimed
//! events — task updates at `/webhooks/adcp`, and at
//! `/webhooks/notifications` the notifications of an account-level
//! subscription, whose activation challenge the receiver answers itself.
//!
//! ```text
//! cargo run -p adcp-examples --example buyer_receive
//! cargo run -p adcp-examples --example buyer_receive -- --serve --bind 127.0.0.1:3000
//! ```
//!
//! By default it starts on an ephemeral loopback port, lets a seller
//! (`demo/counterpart.rs`) send it three task updates, activate and notify
//! its subscription and retry the first update, then sends it one forged
//! request, and exits 0 when the buyer applied exactly four events,
//! acknowledged the retry without applying it, and refused the forgery.
//! `--serve` keeps it listening for your own seller until Ctrl-C.
//!
//! Dedup state lives in SQLite (`--db`, default a fresh file in the temp
//! directory), so a restart keeps it; a fleet opens a shared Redis or
//! PostgreSQL store instead (`adcp-store`'s `redis` / `postgres` features).

mod demo;

use adcp_store::{SqliteOptions, SqliteStore};
use adcp_verify::StaticKeyResolver;
use adcp_webhook::payload::WebhookPayload;
use adcp_webhook::{outcome, Receiver, ReceiverConfig, ReceiverLayer, StaticSubscriptions, Webhook};
use axum::routing::post;
use axum::Router;
use demo::{counterpart, expect, Outcome};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tower::ServiceExt;

/// The handler: it runs only for verified, first-seen events.
async fn apply(webhook: Webhook, applied: Arc<AtomicUsize>) -> &'static str {
    match webhook.typed() {
        // Correlate a task by the payload's operation_id, never by the URL.
        WebhookPayload::McpTask(task) => println!(
            "applied {} from {} (operation {}, status {})",
            webhook.idempotency_key(),
            webhook.sender(),
            task.operation_id.as_deref().unwrap_or("-"),
            task.status.as_str(),
        ),
        // Notifications: one logical event per notification_id; a
        // re-emission says which delivery it repeats.
        other => println!(
            "applied {} from {} ({} notification {}{})",
            webhook.idempotency_key(),
            webhook.sender(),
            other.notification_type().unwrap_or("-"),
            other.notification_id().unwrap_or("-"),
            webhook
                .reemission_of()
                .map_or_else(String::new, |first| format!(", re-emission of {first}")),
        ),
    }
    applied.fetch_add(1, Ordering::SeqCst);
    "ok"
}

#[tokio::main]
async fn main() -> Outcome {
    let listener = tokio::net::TcpListener::bind(demo::arg("--bind", "127.0.0.1:0")).await?;
    let base = format!("http://{}", listener.local_addr()?);
    let scratch = std::env::temp_dir().join(format!("adcp-buyer-receive-{}.sqlite", std::process::id()));
    let db = demo::arg("--db", &scratch.to_string_lossy());

    // The seller's keys (a real buyer: adcp_jwks::HttpsKeyResolver for the
    // seller's agent URL) and one durable store for both dedup duties.
    let keys = StaticKeyResolver::new().with_jwks(&demo::seller_jwks()?, demo::AGENT_URL);
    let store = Arc::new(SqliteStore::open(&db, SqliteOptions::default())?);
    // The account-level subscription this buyer registered with the seller:
    // the receiver answers the seller's activation challenge for it and
    // holds its notifications to it.
    let subscriptions =
        StaticSubscriptions::new().with(counterpart::subscription(&format!("{base}/webhooks/notifications")))?;
    let receiver = Receiver::builder_with_store(Arc::new(keys), store)
        .config(ReceiverConfig {
            // Plain HTTP on loopback; behind TLS keep the default `https`.
            scheme: "http".to_owned(),
            ..ReceiverConfig::default()
        })
        .subscriptions(Arc::new(subscriptions))
        .build()?;

    let applied = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&applied);
    let handler = move |webhook: Webhook| apply(webhook, Arc::clone(&count));
    let app = Router::new()
        .route("/webhooks/adcp", post(handler.clone()))
        .route("/webhooks/notifications", post(handler))
        .layer(ReceiverLayer::new(receiver.clone()));

    println!("buyer listening on {base}/webhooks/adcp (dedup store {db})");
    let serving = app.clone();
    let server = tokio::spawn(async move { axum::serve(listener, serving).await });
    if demo::flag("--serve") {
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }

    // The seller sends; the buyer applies each event once.
    let seller = counterpart::seller(&base, 3, true).await?;
    println!("seller: {seller:?}");

    // A forged delivery: a validly signed request whose body was changed
    // on the way. It never reaches the handler.
    let event = counterpart::task_event(0, 1, "op_demo_001")?;
    let signer = adcp_sign::HttpSigner::webhook(demo::seller_key()?)?;
    let mut request = signer
        .sign_webhook(&format!("{base}/webhooks/adcp"), &event)
        .await?
        .to_http()?;
    request.body_mut().extend_from_slice(b" ");
    let response = app.oneshot(request.map(axum::body::Body::from)).await?;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    println!("forged request -> {} {challenge}", response.status());

    server.abort();
    if db == scratch.to_string_lossy() {
        for suffix in ["", "-wal", "-shm"] {
            std::fs::remove_file(format!("{db}{suffix}")).ok();
        }
    }
    let metrics = receiver.metrics();
    println!("outcomes: {:?}", metrics.snapshot());
    expect(
        seller.delivered == 3 && seller.activated && seller.notified,
        "every delivery acknowledged",
    )?;
    expect(seller.resend_acknowledged, "the retry acknowledged")?;
    expect(
        applied.load(Ordering::SeqCst) == 4,
        "four events applied (three updates, one notification)",
    )?;
    expect(metrics.get(outcome::DUPLICATE) == 1, "the retry not applied twice")?;
    expect(
        metrics.get(outcome::CHALLENGE_ANSWERED) == 1,
        "the activation challenge answered",
    )?;
    expect(
        response.status() == 401 && challenge.starts_with("Signature error=\"webhook_signature_"),
        "the forged request refused with 401 and its code",
    )?;
    println!("buyer_receive: ok");
    Ok(())
}
