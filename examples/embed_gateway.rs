//! The verifying gateway as a library: built from a `GatewayConfig` (the
//! same TOML keys as `adcp-sig gateway --config`), mounted as the fallback
//! of an axum app of one's own, in front of an upstream that only ever
//! sees verified, first-seen events.
//!
//! ```text
//! cargo run -p adcp-examples --example embed_gateway
//! ```
//!
//! It starts the upstream and the app on loopback, lets a seller
//! (`demo/counterpart.rs`) send three task updates and retry the first,
//! and exits 0 when the upstream received each update exactly once, with
//! the gateway's `X-Adcp-Verified-Agent` header, and the app's own route
//! still answers.

mod demo;

use adcp_gateway::{Gateway, GatewayConfig, VERIFIED_AGENT};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::Router;
use demo::{counterpart, expect, Outcome};
use std::sync::{Arc, Mutex};

/// The application behind the gateway: it trusts the verified identity
/// headers because only the gateway can reach it.
async fn upstream() -> Outcome<(String, Arc<Mutex<Vec<String>>>)> {
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    let app = Router::new().route(
        "/events",
        post(move |headers: HeaderMap| async move {
            let agent = headers.get(VERIFIED_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("-");
            println!("upstream: event from {agent}");
            if let Ok(mut log) = log.lock() {
                log.push(agent.to_owned());
            }
            "applied"
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/events", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, received))
}

#[tokio::main]
async fn main() -> Outcome {
    let (upstream_url, received) = upstream().await?;

    // The seller's published JWKS (a real deployment: `agents = [...]`,
    // discovered through brand.json) and the settings, as TOML.
    let dir = std::env::temp_dir().join(format!("adcp-embed-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let jwks = dir.join("seller-jwks.json");
    std::fs::write(&jwks, demo::seller_jwks()?.to_string())?;
    let config = GatewayConfig::from_toml_str(&format!(
        r#"
        upstream = "{upstream_url}"
        jwks = "{}"
        jwks_agent = "{}"
        store = "memory:"   # production: sqlite:PATH, redis://… or postgres://…
        upstream_timeout = 5
        "#,
        jwks.display(),
        demo::AGENT_URL,
    ))?;
    let gateway = Gateway::from_config(&config).await?;

    // One app: a route of its own, the gateway for everything else (the
    // request URI reaches it unchanged, as the signature covers it).
    let app = Router::new()
        .route("/status", get(|| async { "app ok" }))
        .fallback_service(gateway.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    println!("gateway embedded at {base}, forwarding to {upstream_url}");

    let seller = counterpart::seller(&base, 3, false).await?;
    println!("seller: {seller:?}");
    let status = status(&base).await?;
    server.abort();
    std::fs::remove_dir_all(&dir).ok();

    let received = received.lock().map(|r| r.clone()).unwrap_or_default();
    expect(
        seller.delivered == 3 && seller.resend_acknowledged,
        "every delivery acknowledged",
    )?;
    expect(
        received.len() == 3,
        format!("three events forwarded once each ({})", received.len()),
    )?;
    expect(
        received.iter().all(|agent| agent == demo::AGENT_URL),
        "each forwarded with the verified agent",
    )?;
    expect(status == "app ok", "the app's own route answers")?;
    println!("embed_gateway: ok");
    Ok(())
}

/// `GET {base}/status` over a plain TCP connection (the example needs no
/// HTTP client for one request).
async fn status(base: &str) -> Outcome<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(authority).await?;
    tcp.write_all(format!("GET /status HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    tcp.read_to_string(&mut response).await?;
    Ok(response.rsplit("\r\n\r\n").next().unwrap_or_default().to_owned())
}
