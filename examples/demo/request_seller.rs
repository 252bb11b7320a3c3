//! The seller counterpart of `buyer_call`: an MCP endpoint on loopback
//! that advertises `request_signing` on `get_adcp_capabilities` and sits
//! behind the seller layer of `adcp-request` (`RequestVerifierLayer`), so
//! the handler sees only calls the capability admits, with their
//! `RequestAuth`.

use super::Outcome;
use adcp_request::{request_signing_capability, RequestAuth, RequestVerifier, RequestVerifierLayer};
use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
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
    primings: Arc<AtomicUsize>,
    accepted: Arc<Mutex<Vec<Accepted>>>,
}

/// Starts the seller on loopback, trusting `buyer_jwks` for
/// [`BUYER_AGENT_URL`]; its MCP endpoint is `{base}/mcp`.
pub async fn request_seller(buyer_jwks: &Value) -> Outcome<RequestSeller> {
    let capability = request_signing_capability(&json!({"request_signing": request_signing()}))?;
    let keys = StaticKeyResolver::new().with_jwks(buyer_jwks, BUYER_AGENT_URL);
    let verifier = RequestVerifier::builder(Arc::new(keys), Arc::new(MemoryReplayStore::request()), capability)
        // Plain HTTP on loopback; behind TLS keep the default `https`.
        .scheme("http")
        .build()?;
    let seller = Arc::new(Seller {
        primings: Arc::default(),
        accepted: Arc::default(),
    });
    let (primings, accepted) = (Arc::clone(&seller.primings), Arc::clone(&seller.accepted));
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(mcp))
        .with_state(seller)
        .layer(RequestVerifierLayer::new(verifier));
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

/// The MCP endpoint: the layer has admitted the call; answer the tool.
async fn mcp(State(seller): State<Arc<Seller>>, auth: RequestAuth, body: Bytes) -> Response {
    let envelope: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let operation = auth.operation().unwrap_or_default().to_owned();
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
                signer: auth.signer().map(|s| s.agent_url.clone()),
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
