//! Shared helpers of the seller tests: a trivial handler that reports what
//! the layer told it, a real signer, and request plumbing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_request::{RequestAuth, RequestVerifier, RequestVerifierLayer};
use adcp_sigbase::crypto::Algorithm;
use adcp_sign::{HttpSigner, SignedRequest, SoftwareSigner, UnsignedRequest};
use adcp_verify::request_policy::AuthSource;
use adcp_verify::{FixedClock, StaticKeyResolver};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::convert::Infallible;
use tower::ServiceExt;

/// The clock every signed test request is made and verified at.
pub(crate) const NOW: i64 = 1_776_520_800;
/// The agent the test keys are attributed to.
pub(crate) const AGENT: &str = "https://buyer.example/";

/// What a response looked like, parsed.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// Every `WWW-Authenticate` value.
    pub(crate) challenges: Vec<String>,
    pub(crate) retry_after: Option<String>,
    /// The JSON body (`Null` when empty or not JSON).
    pub(crate) json: Value,
}

impl Answer {
    /// Whether the handler ran.
    pub(crate) fn reached_handler(&self) -> bool {
        self.status == 200 && self.json["handler"] == true
    }

    /// The error code of a refusal.
    pub(crate) fn code(&self) -> Option<&str> {
        self.json["error"].as_str()
    }

    /// Asserts the exact refusal shape for a taxonomy code: `401` with
    /// exactly one `Signature error="<code>"` challenge, or `400` without
    /// one for `request_body_malformed`; the code in the JSON body.
    pub(crate) fn assert_rejected_with(&self, code: &str, context: &str) {
        let (status, challenge) = if code == "request_body_malformed" {
            (400, vec![])
        } else {
            (401, vec![format!("Signature error=\"{code}\"")])
        };
        assert_eq!(self.status, status, "{context}: {self:?}");
        assert_eq!(self.challenges, challenge, "{context}");
        assert_eq!(self.code(), Some(code), "{context}");
        assert!(self.json["message"].is_string(), "{context}");
        assert_eq!(self.json.as_object().map(serde_json::Map::len), Some(2), "{context}");
    }

    /// Asserts the shadow-mode plain `401`.
    pub(crate) fn assert_unauthenticated(&self, context: &str) {
        assert_eq!(self.status, 401, "{context}: {self:?}");
        assert!(self.challenges.is_empty(), "{context}: no Signature challenge");
        assert_eq!(self.code(), Some("unauthenticated"), "{context}");
    }
}

fn source_name(source: AuthSource) -> &'static str {
    match source {
        AuthSource::Signature => "signature",
        AuthSource::Fallback => "fallback",
        AuthSource::Anonymous => "anonymous",
    }
}

/// The trivial inner service: answers `200` with what [`RequestAuth`] says
/// and the body length it received.
pub(crate) async fn handler(request: Request<Full<Bytes>>) -> Result<Response<Full<Bytes>>, Infallible> {
    let auth = request.extensions().get::<RequestAuth>().cloned();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let report = match auth {
        None => json!({"handler": true, "auth": null}),
        Some(auth) => json!({
            "handler": true,
            "source": source_name(auth.source()),
            "keyid": auth.signer().map(|s| s.keyid.clone()),
            "verified_at": auth.verified_at(),
            "agent": auth.signer().map(|s| s.agent_url.clone()),
            "operation": auth.operation(),
            "protocol_method": auth.protocol_method(),
            "warning": auth.warning().map(|w| w.code_str()),
            "body_len": body.len(),
        }),
    };
    Ok(Response::new(Full::new(Bytes::from(report.to_string()))))
}

/// Sends `request` through a layer around `verifier` with [`handler`] inside.
pub(crate) async fn send<B>(verifier: &RequestVerifier, request: Request<B>) -> Answer
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let layer = RequestVerifierLayer::new(verifier.clone());
    let service = tower::Layer::layer(&layer, tower::service_fn(handler));
    let response: Response<Full<Bytes>> = ServiceExt::<Request<B>>::oneshot(service, request)
        .await
        .unwrap_or_else(|e| match e {});
    answer(response).await
}

/// Parses a response.
pub(crate) async fn answer<B>(response: Response<B>) -> Answer
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let status = response.status().as_u16();
    let challenges = response
        .headers()
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Answer {
        status,
        challenges,
        retry_after,
        json,
    }
}

/// Splits an absolute URL into its authority and its path and query.
pub(crate) fn split_url(url: &str) -> (&str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    (authority, if path.is_empty() { "/" } else { path })
}

/// An HTTP/1.1 request as a server receives it: origin-form request target,
/// `Host` from the URL unless `headers` carry one, every header line as
/// given (bytes, not necessarily ASCII).
pub(crate) fn http_request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Request<Full<Bytes>> {
    let (authority, path) = split_url(url);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .body(Full::new(Bytes::copy_from_slice(body.unwrap_or_default())))
        .unwrap();
    let map = request.headers_mut();
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        map.append(
            http::header::HOST,
            HeaderValue::from_bytes(authority.as_bytes()).unwrap(),
        );
    }
    for (name, value) in headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value.as_bytes()).unwrap(),
        );
    }
    request
}

/// A signed request as received (see [`http_request`]).
pub(crate) fn received(signed: &SignedRequest) -> Request<Full<Bytes>> {
    let headers: Vec<(String, String)> = signed
        .headers()
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.clone()))
        .collect();
    http_request(
        signed.method(),
        signed.url(),
        &headers,
        signed.body().map(|b| b.as_bytes()),
    )
}

/// A buyer with a fresh Ed25519 key, and the resolver that trusts it.
pub(crate) struct Buyer {
    pub(crate) signer: HttpSigner<SoftwareSigner, FixedClock>,
    pub(crate) keys: StaticKeyResolver,
}

impl Buyer {
    pub(crate) fn new() -> Self {
        Self::with_profile(adcp_sign::SigningProfile::request_v3_2())
    }

    pub(crate) fn with_profile(profile: adcp_sign::SigningProfile) -> Self {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "buyer-test-2026").unwrap();
        let jwks = key.jwks().unwrap().to_public_json();
        let keys = StaticKeyResolver::new().with_jwks(&jwks, AGENT);
        let signer = HttpSigner::new(profile, key).unwrap().with_clock(FixedClock(NOW));
        Self { signer, keys }
    }

    /// Signs a JSON POST to `url`.
    pub(crate) async fn sign(&self, url: &str, body: &Value) -> SignedRequest {
        let body = adcp_sign::Body::json(body).unwrap();
        self.signer.sign(&UnsignedRequest::post(url, &body)).await.unwrap()
    }
}

/// A JSON-RPC `tools/call` body.
pub(crate) fn tools_call(operation: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": operation, "arguments": arguments}})
}
