//! A receiver without tower or axum: plain `http` types in, a decision
//! out, on a bare hyper connection loop. The same shape fits any stack
//! that can hand over the method, URI, headers and body bytes.
//!
//! ```text
//! cargo run -p adcp-examples --example custom_stack
//! cargo run -p adcp-examples --example custom_stack -- --serve --bind 127.0.0.1:3001
//! ```
//!
//! By default a seller (`demo/counterpart.rs`) sends it two task updates
//! and retries the first; it exits 0 when both were applied once and the
//! retry acknowledged without being applied. `--serve` keeps it listening
//! until Ctrl-C.
//!
//! In-memory stores keep the example self-contained; they are not
//! conformant for production (the spec requires durable, shared dedup
//! state: `adcp-store`'s SQLite, Redis or PostgreSQL stores).

mod demo;

use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
use adcp_webhook::{outcome, Decision, Receiver, ReceiverConfig};
use bytes::Bytes;
use demo::{counterpart, expect, Outcome};
use http_body_util::{BodyExt, Full, Limited};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

async fn handle(
    receiver: Receiver,
    applied: Arc<AtomicUsize>,
    request: http::Request<hyper::body::Incoming>,
) -> http::Response<Full<Bytes>> {
    // Read at most the limit; the receiver re-checks every step itself.
    let (parts, body) = request.into_parts();
    let limit = receiver.config().max_body_bytes;
    let body = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let mut response = http::Response::new(Full::default());
            *response.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            return response;
        }
    };
    match receiver.decide(http::Request::from_parts(parts, body)).await {
        // 413 / 415 / 401 + WWW-Authenticate / 409 / 429 / 503 / duplicate 200.
        Decision::Reply(reply) => reply.into_response(),
        Decision::Deliver(delivery) => {
            let webhook = delivery.webhook();
            println!(
                "applying {} from {} ({} bytes verified)",
                webhook.idempotency_key(),
                webhook.sender(),
                webhook.raw().len()
            );
            applied.fetch_add(1, Ordering::SeqCst);
            // ... apply side effects here; on failure call
            // `receiver.release(&delivery)` and answer 5xx ...
            match receiver.complete(&delivery).await {
                Ok(()) => http::Response::new(Full::from("ok")),
                Err(reply) => reply.into_response(),
            }
        }
    }
}

/// Serves `receiver` on `listener`, one task per connection.
async fn serve(listener: tokio::net::TcpListener, receiver: Receiver, applied: Arc<AtomicUsize>) -> Outcome {
    loop {
        let (tcp, _) = listener.accept().await?;
        let (receiver, applied) = (receiver.clone(), Arc::clone(&applied));
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let (receiver, applied) = (receiver.clone(), Arc::clone(&applied));
                async move { Ok::<_, Infallible>(handle(receiver, applied, request).await) }
            });
            let io = hyper_util::rt::TokioIo::new(tcp);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                eprintln!("connection error: {e}");
            }
        });
    }
}

#[tokio::main]
async fn main() -> Outcome {
    let receiver = Receiver::builder(
        Arc::new(StaticKeyResolver::new().with_jwks(&demo::seller_jwks()?, demo::AGENT_URL)),
        Arc::new(MemoryReplayStore::webhook()),
        Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?),
    )
    .config(ReceiverConfig {
        scheme: "http".to_owned(),
        ..ReceiverConfig::default()
    })
    .build()?;
    let listener = tokio::net::TcpListener::bind(demo::arg("--bind", "127.0.0.1:0")).await?;
    let base = format!("http://{}", listener.local_addr()?);
    println!("custom-stack receiver on {base}/webhooks/adcp");
    let applied = Arc::new(AtomicUsize::new(0));
    let server = tokio::spawn(serve(listener, receiver.clone(), Arc::clone(&applied)));
    if demo::flag("--serve") {
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }

    let seller = counterpart::seller(&base, 2, false).await?;
    server.abort();
    println!("seller: {seller:?}");
    println!("outcomes: {:?}", receiver.metrics().snapshot());
    expect(
        seller.delivered == 2 && seller.resend_acknowledged,
        "every delivery acknowledged",
    )?;
    expect(applied.load(Ordering::SeqCst) == 2, "two events applied")?;
    expect(
        receiver.metrics().get(outcome::DUPLICATE) == 1,
        "the retry not applied twice",
    )?;
    println!("custom_stack: ok");
    Ok(())
}
