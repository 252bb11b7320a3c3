//! A seller's MCP server with axum that verifies buyers' signed calls: the
//! request-verifier layer sits in front of `POST /mcp` (JSON-RPC
//! `tools/call`), trusts the buyer's published JWKS, and enforces the
//! seller's advertised `request_signing` capability, which requires a
//! signature for `create_media_buy` unless the caller holds a bearer token
//! the seller issued.
//!
//! ```text
//! cargo run -p adcp-examples --example seller_mcp_server
//! cargo run -p adcp-examples --example seller_mcp_server -- --serve --bind 127.0.0.1:3000
//! ```
//!
//! By default it starts on an ephemeral loopback port and plays the buyer
//! itself over plain HTTP: a signed `create_media_buy` (accepted; the
//! handler sees the verified agent), the same call unsigned (401
//! `request_signature_required`), unsigned with a bearer token (accepted,
//! no signer identity), and a signed call whose body was changed on the
//! way (401 with its code). It exits 0 only when each outcome is as
//! expected. `--serve` keeps it listening until Ctrl-C.
//!
//! **The buyer key is derived from a public constant: a demo key, never
//! to be trusted outside this example.** A real seller resolves buyers'
//! keys with `adcp_jwks::HttpsKeyResolver` (brand.json discovery) and
//! shares its replay store across its fleet (`adcp-store`).

mod demo;

use adcp_request::{request_signing_capability, RequestAuth, RequestVerifier, RequestVerifierLayer};
use adcp_sign::{Algorithm, Body, HttpSigner, SoftwareSigner, UnsignedRequest};
use adcp_verify::request_policy::{AuthSource, FallbackCredential};
use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use demo::{expect, Outcome};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::sync::Arc;

/// The buyer agent the demo key belongs to.
const BUYER_AGENT: &str = "https://buyer.example/";
/// The bearer token the seller issued (its fallback authenticator).
const ISSUED_TOKEN: &str = "Bearer demo-issued-token";

fn buyer_key() -> Result<SoftwareSigner, adcp_sign::SignError> {
    SoftwareSigner::from_raw(
        Algorithm::Ed25519,
        b"adcp-request demo buyer, public!",
        "demo-buyer-ed25519",
    )
}

/// The MCP endpoint: it runs only for requests the layer let through, and
/// learns from `RequestAuth` who (if anyone) signed them.
async fn mcp(auth: RequestAuth, body: Bytes) -> ([(http::HeaderName, &'static str); 1], String) {
    // The raw bytes the signature covered; the layer already parsed them
    // strictly (duplicate keys refused).
    let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let by = match auth.source() {
        AuthSource::Signature => "signature",
        AuthSource::Fallback => "bearer token",
        AuthSource::Anonymous => "nothing",
    };
    let agent = auth.signer().map(|s| s.agent_url.clone());
    println!(
        "handler: {} authenticated by {by}{}",
        auth.operation().unwrap_or("-"),
        agent
            .as_deref()
            .map_or_else(String::new, |a| format!(" (signed by {a})"))
    );
    let answer = json!({
        "jsonrpc": "2.0",
        "id": call["id"],
        "result": {
            "content": [{"type": "text", "text": format!("{} accepted", auth.operation().unwrap_or("call"))}],
            "structuredContent": {"authenticated_by": by, "agent": agent}
        }
    });
    ([(http::header::CONTENT_TYPE, "application/json")], answer.to_string())
}

/// One HTTP/1.1 exchange with the server: `(status, WWW-Authenticate, JSON body)`.
async fn exchange(addr: std::net::SocketAddr, request: http::Request<Vec<u8>>) -> Outcome<(u16, String, Value)> {
    let (mut parts, body) = request.into_parts();
    // Origin-form target and Host, as any HTTP/1.1 client sends them.
    let authority = parts.uri.authority().map(|a| a.to_string()).unwrap_or_default();
    parts.uri = parts.uri.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    parts.headers.insert(http::header::HOST, authority.parse()?);
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let response = sender
        .send_request(http::Request::from_parts(parts, Full::new(Bytes::from(body))))
        .await?;
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((status, challenge, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

#[tokio::main]
async fn main() -> Outcome {
    let listener = tokio::net::TcpListener::bind(demo::arg("--bind", "127.0.0.1:0")).await?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}/mcp");

    // The seller's own get_adcp_capabilities answer: its request_signing
    // block is what the layer enforces.
    let capabilities = json!({
        "adcp": {"major_versions": [3]},
        "request_signing": {
            "supported": true,
            "covers_content_digest": "required",
            "required_for": ["create_media_buy"],
            "supported_for": ["create_media_buy", "get_products"]
        }
    });
    let capability = request_signing_capability(&capabilities)?;
    // The buyers this seller trusts: a static JWKS here.
    let keys = StaticKeyResolver::new().with_jwks(&buyer_key()?.jwks()?.to_public_json(), BUYER_AGENT);
    let verifier = RequestVerifier::builder(Arc::new(keys), Arc::new(MemoryReplayStore::request()), capability)
        // Plain HTTP on loopback; behind TLS keep the default `https`.
        .scheme("http")
        .authenticator_fn(|parts, _request| match parts.headers.get(http::header::AUTHORIZATION) {
            Some(token) if token == ISSUED_TOKEN => FallbackCredential::Valid,
            _ => FallbackCredential::Absent,
        })
        .build()?;
    let app = Router::new()
        .route("/mcp", post(mcp))
        .layer(RequestVerifierLayer::new(verifier));
    println!("seller MCP server listening on {url}");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    if demo::flag("--serve") {
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }

    // The buyer's side.
    let signer = HttpSigner::request(buyer_key()?)?;
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "create_media_buy", "arguments": {
            "idempotency_key": "demo-mb-0001", "buyer_ref": "demo", "total_budget": 1000
        }}
    });
    let body = Body::json(&call)?;

    // 1. Signed: accepted, the handler sees the verified agent.
    let signed = signer.sign(&UnsignedRequest::post(&url, &body)).await?;
    let (status, _, answer) = exchange(addr, signed.to_http()?).await?;
    println!("signed call -> {status} {}", answer["result"]["structuredContent"]);
    expect(
        status == 200 && answer["result"]["structuredContent"]["agent"] == BUYER_AGENT,
        "the signed call accepted as the buyer agent",
    )?;

    // 2. Unsigned, no other credential: refused with the code.
    let unsigned = http::Request::post(url.as_str())
        .header("Content-Type", "application/json")
        .body(body.as_bytes().to_vec())?;
    let (status, challenge, _) = exchange(addr, unsigned).await?;
    println!("unsigned call -> {status} {challenge}");
    expect(
        status == 401 && challenge == "Signature error=\"request_signature_required\"",
        "the unsigned call refused with request_signature_required",
    )?;

    // 3. Unsigned with the bearer token the seller issued: accepted, but
    //    no signer identity.
    let bearer = http::Request::post(url.as_str())
        .header("Content-Type", "application/json")
        .header("Authorization", ISSUED_TOKEN)
        .body(body.as_bytes().to_vec())?;
    let (status, _, answer) = exchange(addr, bearer).await?;
    println!("bearer call -> {status} {}", answer["result"]["structuredContent"]);
    expect(
        status == 200
            && answer["result"]["structuredContent"]["authenticated_by"] == "bearer token"
            && answer["result"]["structuredContent"]["agent"].is_null(),
        "the bearer call accepted without a signer identity",
    )?;

    // 4. Signed, then the budget changed on the way: refused.
    let signed = signer.sign(&UnsignedRequest::post(&url, &body)).await?;
    let mut tampered = signed.to_http()?;
    let text = String::from_utf8(tampered.body().clone())?.replace("1000", "9000");
    *tampered.body_mut() = text.into_bytes();
    let (status, challenge, answer) = exchange(addr, tampered).await?;
    println!("tampered call -> {status} {challenge} {answer}");
    expect(
        status == 401 && challenge == "Signature error=\"request_signature_digest_mismatch\"",
        "the tampered call refused with request_signature_digest_mismatch",
    )?;

    server.abort();
    println!("seller_mcp_server: ok");
    Ok(())
}
