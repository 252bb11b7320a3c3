//! A loopback seller for the client tests, built from `adcp_verify`
//! primitives only (`request_policy::decide`, `Verifier::verify`,
//! `VerifyPlan::conclude`): it answers `get_adcp_capabilities` with the
//! capability documents it is given (one per priming, the last one
//! repeated) and gates every other call with the capability it enforces,
//! recording what it saw.

use adcp_sigbase::Message;
use adcp_sign::{Algorithm, SoftwareSigner};
use adcp_verify::request_policy::{
    decide, Binding, Decision, FallbackCredential, Rejection, Verdict, VerifierCapability,
};
use adcp_verify::{Clock, MemoryReplayStore, Profile, StaticKeyResolver, Verifier};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The buyer agent the test key belongs to.
pub const BUYER_AGENT: &str = "https://buyer.example/agent";
/// The test key's `kid`.
pub const KID: &str = "buyer-test-ed25519";

/// A fresh buyer key.
pub fn buyer_key() -> SoftwareSigner {
    SoftwareSigner::generate(Algorithm::Ed25519, KID).unwrap()
}

/// A clock the test moves, shared by the client and the seller's verifier
/// so signatures stay in their window. It starts at the system time and
/// stands still unless advanced, so a TTL boundary is exact.
#[derive(Clone)]
pub struct TestClock(Arc<AtomicI64>);

impl Default for TestClock {
    fn default() -> Self {
        Self(Arc::new(AtomicI64::new(adcp_verify::SystemClock.now())))
    }
}

impl TestClock {
    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// One request the seller gated.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub operation: Option<String>,
    pub protocol_method: Option<String>,
    pub signature_input: Option<String>,
    pub signature: Option<String>,
    pub content_digest: Option<String>,
    pub body: Value,
    /// The verifier's error code, when it rejected.
    pub error: Option<String>,
}

impl Seen {
    pub fn signed(&self) -> bool {
        self.signature_input.is_some()
    }

    /// The `nonce` parameter of `Signature-Input`.
    pub fn nonce(&self) -> Option<String> {
        let input = self.signature_input.as_deref()?;
        let start = input.find("nonce=\"")? + 7;
        Some(input[start..start + input[start..].find('"')?].to_owned())
    }
}

pub struct SellerState {
    binding: Binding,
    enforced: Mutex<VerifierCapability>,
    advertised: Mutex<VecDeque<Value>>,
    verifier: Verifier<StaticKeyResolver, MemoryReplayStore, TestClock>,
    pub primings: AtomicUsize,
    pub seen: Mutex<Vec<Seen>>,
}

/// A running seller.
pub struct Seller {
    pub base: String,
    pub state: Arc<SellerState>,
}

impl Seller {
    /// The calls it gated (priming excluded).
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    pub fn primings(&self) -> usize {
        self.state.primings.load(Ordering::SeqCst)
    }
}

/// Starts a seller on loopback.
///
/// - `binding`: how it reads operations (JsonRpc for MCP and A2A,
///   OperationPath for raw);
/// - `profile`: its verification profile (3.2 or legacy);
/// - `enforced`: the `request_signing` block its gate applies;
/// - `advertised`: what successive `get_adcp_capabilities` calls return
///   (the full response object), the last one repeated;
/// - `jwks`: the buyer's public keys.
pub async fn start(
    binding: Binding,
    profile: Profile,
    enforced: Value,
    advertised: Vec<Value>,
    jwks: &Value,
    clock: TestClock,
) -> Seller {
    let state = Arc::new(SellerState {
        binding,
        enforced: Mutex::new(VerifierCapability::from_json(&enforced).unwrap()),
        advertised: Mutex::new(advertised.into()),
        verifier: Verifier::new(
            profile,
            StaticKeyResolver::new().with_jwks(jwks, BUYER_AGENT),
            MemoryReplayStore::request(),
            clock,
        ),
        primings: AtomicUsize::new(0),
        seen: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new().fallback(handle).with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Seller { base, state }
}

/// A `get_adcp_capabilities` response advertising `block`.
pub fn capabilities(block: Value) -> Value {
    json!({"adcp": {"major_versions": [3]}, "request_signing": block})
}

async fn handle(State(state): State<Arc<SellerState>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let path = parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let http_request = http::Request::from_parts(parts.clone(), body.clone());
    let msg = Message::from_http(&http_request).with_target_uri(format!("http://{host}{path}"));
    let capability = state.enforced.lock().unwrap().clone();
    let decision = decide(&capability, state.binding, &msg, FallbackCredential::Absent);
    let verdict: Verdict<_> = match decision {
        Decision::Verify(plan) => plan.conclude(state.verifier.verify(&msg).await),
        other => other.verdict().unwrap(),
    };
    let (status, challenge, error, request) = match &verdict {
        Verdict::Verified { request, .. } | Verdict::Accepted { request, .. } => {
            (StatusCode::OK, None, None, Some(request.clone()))
        }
        Verdict::Rejected(Rejection::Error(e)) => (
            StatusCode::from_u16(e.code().http_status()).unwrap(),
            e.www_authenticate(),
            Some(e.code_str().to_owned()),
            None,
        ),
        Verdict::Rejected(Rejection::Unauthenticated { warning }) => (
            StatusCode::UNAUTHORIZED,
            None,
            Some(warning.code_str().to_owned()),
            None,
        ),
    };
    let operation = request.as_ref().and_then(|r| r.operation().map(str::to_owned));
    let body_json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if status == StatusCode::OK && operation.as_deref() == Some("get_adcp_capabilities") {
        state.primings.fetch_add(1, Ordering::SeqCst);
        let document = {
            let mut advertised = state.advertised.lock().unwrap();
            if advertised.len() > 1 {
                advertised.pop_front().unwrap()
            } else {
                advertised.front().cloned().unwrap_or(Value::Null)
            }
        };
        return answer(state.binding, &body_json, document);
    }
    state.seen.lock().unwrap().push(Seen {
        path,
        operation: operation.clone(),
        protocol_method: request.as_ref().and_then(|r| r.protocol_method().map(str::to_owned)),
        signature_input: header("signature-input"),
        signature: header("signature"),
        content_digest: header("content-digest"),
        body: body_json.clone(),
        error: error.clone(),
    });
    if status != StatusCode::OK {
        let mut response = (status, Bytes::from(json!({"error": error}).to_string())).into_response();
        if let Some(challenge) = challenge {
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&challenge).unwrap(),
            );
        }
        return response;
    }
    let signed = matches!(verdict, Verdict::Verified { .. });
    answer(
        state.binding,
        &body_json,
        json!({"operation": operation, "signed": signed}),
    )
}

/// `result` in the transport's envelope: MCP `structuredContent`, an A2A
/// task artifact, or the bare object on the raw binding.
fn answer(binding: Binding, request: &Value, result: Value) -> Response {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let body = match (binding, request.get("method").and_then(Value::as_str)) {
        (Binding::JsonRpc, Some("SendMessage")) => json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
            "id": "task_1", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a1", "parts": [{"data": result}]}]}}}),
        (Binding::JsonRpc, _) => json!({"jsonrpc": "2.0", "id": id, "result": {
            "structuredContent": result, "content": [{"type": "text", "text": result.to_string()}]}}),
        _ => result,
    };
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        Bytes::from(body.to_string()),
    )
        .into_response()
}
