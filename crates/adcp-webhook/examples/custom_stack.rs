//! A receiver without tower or axum: plain `http` types in, a decision
//! out, on a bare hyper connection loop. The same shape fits any stack
//! that can hand over the method, URI, headers and body bytes.
//!
//! ```text
//! cargo run -p adcp-webhook --example custom_stack -- --bind 127.0.0.1:3001
//! cargo run -p adcp-webhook --example seller_send -- --url http://127.0.0.1:3001/webhooks/adcp
//! ```
//!
//! In-memory stores keep the demo self-contained; they are not conformant
//! for production (the spec requires durable, shared dedup state).

mod demo;

use adcp_store::idempotency::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::MemoryReplayStore;
use adcp_verify::StaticKeyResolver;
use adcp_webhook::{Decision, Receiver, ReceiverConfig};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use std::convert::Infallible;
use std::sync::Arc;

async fn handle(receiver: Receiver, request: http::Request<hyper::body::Incoming>) -> http::Response<Full<Bytes>> {
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
            // ... apply side effects here; on failure call
            // `receiver.release(&delivery)` and answer 5xx ...
            match receiver.complete(&delivery).await {
                Ok(()) => http::Response::new(Full::from("ok")),
                Err(reply) => reply.into_response(),
            }
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bind = demo::arg("--bind", "127.0.0.1:3001");
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

    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("custom-stack receiver on http://{bind}/webhooks/adcp");
    loop {
        let (tcp, _) = listener.accept().await?;
        let receiver = receiver.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let receiver = receiver.clone();
                async move { Ok::<_, Infallible>(handle(receiver, request).await) }
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
