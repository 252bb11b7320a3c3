//! The seller counterpart of `buyer_call`: an MCP endpoint on loopback
//! that advertises `request_signing` on `get_adcp_capabilities` and gates
//! every call with the `adcp_verify` request primitives
//! (`request_policy::decide`, `Verifier::verify`, `VerifyPlan::conclude`).
//!
//! Everything request-signing specific is in [`gate`]: swapping it for the
//! seller layer of `adcp-request` leaves the routing and the tool answers
//! as they are.

use super::Outcome;
use adcp_sigbase::Message;
use adcp_verify::request_policy::{
    decide, Binding, Decision, FallbackCredential, Rejection, ResolvedRequest, Verdict, VerifierCapability,
};
use adcp_verify::{MemoryReplayStore, Profile, StaticKeyResolver, SystemClock, VerifiedSigner, Verifier};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The buyer agent whose keys the seller knows (from the buyer's
/// brand.json in real life).
pub const BUYER_AGENT_URL: &str = "https://buyer.example/agent";

/// The seller's `request_signing` block: signatures verified for two
/// operations, required for the spend-committing one.
pub fn request_signing() -> Value {
    json!({
        "supported": true,
        "covers_content_digest": "required",
        "required_for": ["create_media_buy"],
        "warn_for": [],
        "supported_for": ["create_media_buy", "update_media_buy"]
    })
}

/// One call the seller accepted.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The AdCP operation, as the gate resolved it.
    pub operation: String,
    /// The verified signer's agent URL, when the call was signed.
    pub signer: Option<String>,
}

/// What the seller saw.
pub struct RequestSeller {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// How many times `get_adcp_capabilities` was called.
    pub primings: Arc<AtomicUsize>,
    /// The calls it accepted (priming excluded).
    pub accepted: Arc<Mutex<Vec<Accepted>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RequestSeller {
    fn drop(&mut self) {
        self.server.abort();
    }
}

struct Seller {
    capability: VerifierCapability,
    verifier: Verifier<StaticKeyResolver, MemoryReplayStore, SystemClock>,
    primings: Arc<AtomicUsize>,
    accepted: Arc<Mutex<Vec<Accepted>>>,
}

/// Starts the seller on loopback, trusting `buyer_jwks` for
/// [`BUYER_AGENT_URL`]; its MCP endpoint is `{base}/mcp`.
pub async fn request_seller(buyer_jwks: &Value) -> Outcome<RequestSeller> {
    let seller = Arc::new(Seller {
        capability: VerifierCapability::from_json(&request_signing())?,
        verifier: Verifier::new(
            Profile::request_v3_2(),
            StaticKeyResolver::new().with_jwks(buyer_jwks, BUYER_AGENT_URL),
            MemoryReplayStore::request(),
            SystemClock,
        ),
        primings: Arc::default(),
        accepted: Arc::default(),
    });
    let (primings, accepted) = (Arc::clone(&seller.primings), Arc::clone(&seller.accepted));
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(mcp))
        .with_state(seller);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(RequestSeller {
        base,
        primings,
        accepted,
        server,
    })
}

/// The request-signing gate: resolves the operation, then accepts,
/// verifies or refuses as the capability says. `Err` is the answer to send
/// (`401` with `WWW-Authenticate: Signature error="…"`, or `400`).
async fn gate(seller: &Seller, msg: &Message<'_>) -> Result<(ResolvedRequest, Option<VerifiedSigner>), Response> {
    let verdict = match decide(&seller.capability, Binding::JsonRpc, msg, FallbackCredential::Absent) {
        Decision::Verify(plan) => plan.conclude(seller.verifier.verify(msg).await),
        Decision::Accept { request, acceptance } => Verdict::Accepted { request, acceptance },
        Decision::Reject(rejection) => Verdict::Rejected(rejection),
    };
    match verdict {
        Verdict::Verified { request, signer } => Ok((request, Some(signer))),
        Verdict::Accepted { request, .. } => Ok((request, None)),
        Verdict::Rejected(Rejection::Error(e)) => {
            let status = http::StatusCode::from_u16(e.code().http_status()).unwrap_or(http::StatusCode::UNAUTHORIZED);
            let mut response = (status, json!({"error": e.code_str()}).to_string()).into_response();
            if let Some(challenge) = e.www_authenticate().and_then(|c| c.parse().ok()) {
                response.headers_mut().insert(http::header::WWW_AUTHENTICATE, challenge);
            }
            Err(response)
        }
        Verdict::Rejected(Rejection::Unauthenticated { .. }) => Err(http::StatusCode::UNAUTHORIZED.into_response()),
    }
}

/// The MCP endpoint: the gate, then the tool.
async fn mcp(State(seller): State<Arc<Seller>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
        return http::StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let path = parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default();
    let http_request = http::Request::from_parts(parts, body.clone());
    let msg = Message::from_http(&http_request).with_target_uri(format!("http://{host}{path}"));
    let (request, signer) = match gate(&seller, &msg).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal,
    };
    let envelope: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let operation = request.operation().unwrap_or_default().to_owned();
    let result = match operation.as_str() {
        "get_adcp_capabilities" => {
            seller.primings.fetch_add(1, Ordering::SeqCst);
            json!({"adcp": {"major_versions": [3]}, "request_signing": request_signing()})
        }
        "get_products" => json!({"products": [{"product_id": "ctv_prime", "name": "CTV prime time"}]}),
        "create_media_buy" => json!({"media_buy_id": "mb_demo_001", "status": "pending_activation"}),
        other => json!({"error": format!("unknown tool {other}")}),
    };
    if operation != "get_adcp_capabilities" {
        if let Ok(mut accepted) = seller.accepted.lock() {
            accepted.push(Accepted {
                operation,
                signer: signer.map(|s| s.agent_url),
            });
        }
    }
    let answer = json!({
        "jsonrpc": "2.0",
        "id": envelope.get("id").cloned().unwrap_or(Value::Null),
        "result": {"structuredContent": result, "content": [{"type": "text", "text": result.to_string()}]},
    });
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        Bytes::from(answer.to_string()),
    )
        .into_response()
}
