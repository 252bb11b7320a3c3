//! Loopback servers: a fault-injecting proxy in front of a real endpoint,
//! an endpoint that accepts everything, and grading options for loopback.

use adcp_grade::{GradeOptions, RateAbuse};
use adcp_request::TargetPolicy;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The suite, or `None` (skip) outside CI.
pub fn suite() -> Option<PathBuf> {
    adcp_vectors::require_dir().unwrap()
}

/// Loopback grading options with `cap` as the rate-abuse target.
pub fn options(suite: PathBuf, cap: usize) -> GradeOptions {
    let mut options = GradeOptions::new(suite);
    options.policy = TargetPolicy::default().dangerously_allow_plain_http();
    options.rate_abuse = RateAbuse::Cap(cap);
    options
}

/// Serves `app` on a loopback port until the test ends.
pub async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

/// An endpoint that answers `200` to everything.
pub async fn accept_everything() -> SocketAddr {
    serve(Router::new().fallback(|| async { StatusCode::OK })).await
}

/// What a broken proxy does to the real endpoint's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every `401` challenge names `code` instead of the real one.
    WrongCode(&'static str),
    /// A `409` becomes `200` (the conflict is never detected), and a
    /// replay refusal `401 …_replayed` becomes `200`: no deduplication.
    NoDedup,
    /// A `2xx` for an idempotency key already answered `2xx` becomes `409`
    /// (the seller's retry of a completed event is refused).
    ConflictOnDuplicate,
}

struct ProxyState {
    upstream: SocketAddr,
    fault: Fault,
    client: reqwest::Client,
    completed: Mutex<HashSet<String>>,
}

/// A proxy in front of `upstream` injecting `fault`. The `Host` header
/// is passed through, so the upstream sees the authority the grader
/// signed for.
pub async fn proxy(upstream: SocketAddr, fault: Fault) -> SocketAddr {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let state = Arc::new(ProxyState {
        upstream,
        fault,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        completed: Mutex::new(HashSet::new()),
    });
    serve(Router::new().fallback(forward).with_state(state)).await
}

async fn forward(
    State(state): State<Arc<ProxyState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let url = format!(
        "http://{}{}",
        state.upstream,
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut request = state.client.request(method, url).body(body.clone());
    for (name, value) in &headers {
        if name != "content-length" {
            request = request.header(name, value);
        }
    }
    let answer = request.send().await.unwrap();
    let mut status = answer.status().as_u16();
    let mut out_headers = answer.headers().clone();
    let mut bytes = answer.bytes().await.unwrap().to_vec();
    let challenge = out_headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    match state.fault {
        Fault::WrongCode(code) if status == 401 && challenge.starts_with("Signature") => {
            out_headers.insert(
                "www-authenticate",
                format!("Signature error=\"{code}\"").parse().unwrap(),
            );
        }
        Fault::NoDedup if status == 409 || (status == 401 && challenge.contains("_replayed")) => {
            status = 200;
            out_headers.remove("www-authenticate");
            bytes.clear();
        }
        Fault::ConflictOnDuplicate if (200..300).contains(&status) => {
            let key = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["idempotency_key"].as_str().map(str::to_owned));
            if let Some(key) = key {
                if !state.completed.lock().unwrap().insert(key) {
                    status = 409;
                    bytes.clear();
                }
            }
        }
        _ => {}
    }
    out_headers.remove("content-length");
    out_headers.remove("transfer-encoding");
    let mut response = (StatusCode::from_u16(status).unwrap(), Body::from(bytes)).into_response();
    for (name, value) in &out_headers {
        response.headers_mut().insert(name, value.clone());
    }
    response
}
