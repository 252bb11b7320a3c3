//! Request mode through a running gateway (library API, loopback): every
//! official request-signing vector with its harness state (clock pinned at
//! `reference_now`), then the proxy's header rules, the composition with
//! the credential header, replay across two gateways sharing a SQLite
//! store, key-discovery outages and the configuration errors.
//!
//! Requests are written to the gateway's socket as raw HTTP/1.1 bytes, so
//! the request target and header lines arrive exactly as a vector gives
//! them (no client normalizes the path or the header values).

use crate::support::{forged_signature, serve_loopback, TempDir};
use adcp_gateway::{ConfigError, Gateway, GatewayConfig, GatewayError, GatewayHandle, GatewayOptions, RequestOptions};
use adcp_sign::{Algorithm, HttpSigner, SigningProfile, SoftwareSigner, UnsignedRequest};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::conformance::{Expected, Harness, Vector};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{FixedClock, KeyResolver, ReplayLimits, ResolveError, ResolvedKey, StaticKeyResolver};
use axum::http::{HeaderMap, Method};
use axum::Router;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every official request-signing directory and its vector count.
const DIRS: [(&str, usize); 6] = [
    ("request-signing/positive", 15),
    ("request-signing/negative", 31),
    ("request-signing/profile-3.2/positive", 14),
    ("request-signing/profile-3.2/negative", 32),
    ("request-signing/a2a/positive", 7),
    ("request-signing/a2a/negative", 26),
];

/// What the seller's server got: method, path and query, headers, body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: Method,
    pub(crate) target: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// The seller's own server: records every request, answers `200` with a
/// JSON body and a header of its own (plus a hop-by-hop one the gateway
/// must not relay).
pub(crate) struct Seller {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Seller {
    pub(crate) async fn start() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&seen);
        let app = Router::new().fallback(move |request: axum::extract::Request| {
            let recorded = Arc::clone(&recorded);
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                recorded.lock().unwrap().push(Seen {
                    method: parts.method,
                    target: parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default(),
                    headers: parts.headers,
                    body: body.to_vec(),
                });
                (
                    [
                        ("x-seller", "yes"),
                        ("keep-alive", "timeout=5"),
                        ("content-type", "application/json"),
                    ],
                    r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, seen, task }
    }

    pub(crate) fn url(&self) -> url::Url {
        format!("http://{}", self.addr).parse().unwrap()
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Seller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A raw HTTP/1.1 answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The exact refusal of a taxonomy code: its status, exactly one
    /// `WWW-Authenticate: Signature error="<code>"` for a `401`, the code
    /// in the body.
    pub(crate) fn check_rejected(&self, code: &str, status: u16) -> Result<(), String> {
        let challenge = if status == 401 {
            vec![format!("Signature error=\"{code}\"")]
        } else {
            vec![]
        };
        let got: Vec<String> = self.header("www-authenticate").into_iter().map(str::to_owned).collect();
        if self.status != status || got != challenge || self.json()["error"] != code {
            return Err(format!("expected {status} {code}, got {self:?}"));
        }
        Ok(())
    }
}

/// Splits an absolute URL into its authority and its path and query.
fn split_url(url: &str) -> (&str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    (authority, if path.is_empty() { "/" } else { path })
}

/// Writes one request as raw bytes (origin-form target, `Host` from the
/// URL unless `headers` carry one, `Content-Length`, `Connection: close`)
/// and reads the answer to the end.
pub(crate) async fn send_raw(
    addr: SocketAddr,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Answer {
    let (authority, target) = split_url(url);
    let mut head = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    }
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-length")) {
        head.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head.extend_from_slice(body);
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(&head).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Answer { status, headers, body }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 4 + size..];
    }
    out
}

/// A request-mode gateway on loopback in front of `seller`.
pub(crate) async fn serve(
    keys: Arc<dyn KeyResolver>,
    store: Arc<dyn adcp_store::Store>,
    options: GatewayOptions,
) -> GatewayHandle {
    let gateway = Gateway::new(keys, store, options).unwrap();
    gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

pub(crate) async fn memory_store() -> Arc<dyn adcp_store::Store> {
    adcp_store::open(&StoreUrl::Memory, StoreOptions::default())
        .await
        .unwrap()
}

/// One vector through a fresh gateway and seller.
async fn run_vector(suite: &Path, path: &Path) -> Result<(), String> {
    let vector = Vector::load(suite, path)?;
    let expected = vector.expected()?;
    let harness = Harness::new(&vector, None).await?;
    let context = vector.relative.clone();
    let capability = harness.capability.ok_or("no capability")?;
    let request = harness.request;
    let (scheme, _) = request.url.split_once("://").ok_or("relative URL")?;
    let (authority, _) = split_url(&request.url);
    let seller = Seller::start().await;
    let mut options = GatewayOptions::new(seller.url());
    options.clock = Some(Arc::new(FixedClock(harness.now)));
    let mut request_options = RequestOptions::new(capability);
    request_options.profile = harness.profile;
    request_options.replay = Some(Arc::new(harness.replay));
    options.request = Some(request_options);
    // The gateway's public URL is the vector's scheme and authority; a
    // vector whose authority is not one (it tests a malformed target)
    // meets a gateway whose public URL is the suite's usual host, and is
    // refused before the verifier with the same code.
    let keys: Arc<dyn KeyResolver> = Arc::new(harness.keys);
    let public = format!("{scheme}://{authority}/");
    let gateway = match public.parse::<url::Url>() {
        Ok(url) => {
            let mut options = options.clone();
            options.public_url = Some(url);
            Gateway::new(Arc::clone(&keys), memory_store().await, options).ok()
        }
        Err(_) => None,
    };
    let gateway = match gateway {
        Some(gateway) => gateway,
        None => {
            options.public_url = Some(format!("{scheme}://seller.example.com/").parse().unwrap());
            Gateway::new(keys, memory_store().await, options).map_err(|e| format!("{context}: {e}"))?
        }
    };
    let handle = serve_loopback(&gateway).await;
    let body = request.body.as_deref().unwrap_or_default().as_bytes();
    let answer = send_raw(
        handle.local_addr(),
        &request.method,
        &request.url,
        &request.headers,
        body,
    )
    .await;
    handle.shutdown().await.map_err(|e| e.to_string())?;
    let seen = seller.seen();
    match expected {
        Expected::Accept => {
            if answer.status != 200 || answer.header("x-seller") != ["yes"] {
                return Err(format!("{context}: expected forwarding, got {answer:?}"));
            }
            let [forwarded] = seen.as_slice() else {
                return Err(format!("{context}: forwarded {} times", seen.len()));
            };
            // The path and query as the verifier canonicalized them for
            // `@target-uri` (dot segments removed, unreserved characters
            // decoded, percent-encodings in upper case).
            let canonical = adcp_canon::canonicalize_received(&request.url).map_err(|e| format!("{context}: {e}"))?;
            let target = canonical.path_and_query().to_owned();
            if forwarded.target != target {
                return Err(format!("{context}: forwarded to {}, not {target}", forwarded.target));
            }
            if forwarded.body != body {
                return Err(format!("{context}: forwarded another body"));
            }
            let signed = request
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("signature-input"));
            let identity = (
                forwarded.headers.get("x-adcp-signature").map(|v| v.as_bytes().to_vec()),
                forwarded
                    .headers
                    .get("x-adcp-verified-agent")
                    .map(|v| v.as_bytes().to_vec()),
                forwarded.headers.contains_key("x-adcp-verified-keyid"),
            );
            let expected = if signed {
                (
                    Some(b"verified".to_vec()),
                    Some(adcp_verify::conformance::CONFORMANCE_AGENT.as_bytes().to_vec()),
                    true,
                )
            } else {
                (Some(b"unsigned".to_vec()), None, false)
            };
            if identity != expected {
                return Err(format!("{context}: identity headers {:?}", forwarded.headers));
            }
        }
        Expected::Reject { code, .. } => {
            let status = if code == "request_body_malformed" { 400 } else { 401 };
            answer
                .check_rejected(&code, status)
                .map_err(|e| format!("{context}: {e}"))?;
            if !seen.is_empty() {
                return Err(format!("{context}: a rejected request was forwarded"));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_vector_through_a_running_gateway() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let mut ran = 0;
    let mut failures = Vec::new();
    for (dir, count) in DIRS {
        let files = adcp_vectors::json_files(&suite, dir);
        assert_eq!(files.len(), count, "{dir}: vector count");
        for path in files {
            ran += 1;
            if let Err(e) = run_vector(&suite, &path).await {
                failures.push(e);
            }
        }
    }
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    assert_eq!(ran, 125, "every vector runs");
    assert!(failures.is_empty(), "{} of {ran} vectors failed", failures.len());
}

// ---------------------------------------------------------------------
// The proxy and the composition rule, with a buyer key of our own.

const NOW: i64 = 1_776_520_800;
const BUYER: &str = "https://buyer.example/";
const URL: &str = "https://seller.example/mcp";

fn capability() -> VerifierCapability {
    VerifierCapability::from_json(&json!({
        "supported": true,
        "covers_content_digest": "required",
        "required_for": ["create_media_buy"],
        "warn_for": ["update_media_buy"]
    }))
    .unwrap()
}

struct Buyer {
    signer: HttpSigner<SoftwareSigner, FixedClock>,
    jwks: Value,
}

impl Buyer {
    fn new() -> Self {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "gw-buyer-2026").unwrap();
        let jwks = key.jwks().unwrap().to_public_json();
        let signer = HttpSigner::new(SigningProfile::request_v3_2(), key)
            .unwrap()
            .with_clock(FixedClock(NOW));
        Self { signer, jwks }
    }

    fn keys(&self) -> Arc<dyn KeyResolver> {
        Arc::new(StaticKeyResolver::new().with_jwks(&self.jwks, BUYER))
    }

    /// The signed request's headers and body for `tools/call operation`.
    async fn sign(&self, operation: &str) -> (Vec<(String, String)>, Vec<u8>) {
        let body = adcp_sign::Body::json(&tools_call(operation)).unwrap();
        let signed = self.signer.sign(&UnsignedRequest::post(URL, &body)).await.unwrap();
        let headers = signed
            .headers()
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect();
        (headers, signed.body().unwrap().as_bytes().to_vec())
    }
}

fn tools_call(operation: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": operation, "arguments": {"idempotency_key": "k-1"}}})
}

fn options(seller: &Seller) -> GatewayOptions {
    let mut options = GatewayOptions::new(seller.url());
    options.public_url = Some("https://seller.example/".parse().unwrap());
    options.clock = Some(Arc::new(FixedClock(NOW)));
    options.request = Some(RequestOptions::new(capability()));
    options
}

fn with(mut headers: Vec<(String, String)>, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    headers.extend(extra.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
    headers
}

fn value<'h>(seen: &'h Seen, name: &str) -> Option<&'h str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn a_verified_request_is_forwarded_with_identity_and_the_clients_headers() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let handle = serve(buyer.keys(), memory_store().await, options(&seller)).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let headers = with(
        headers,
        &[
            ("Authorization", "Bearer token-1"),
            ("Mcp-Session-Id", "session-7"),
            ("Accept", "application/json, text/event-stream"),
            ("X-Adcp-Verified-Agent", "https://forged.example/"),
            ("X-Adcp-Verified-Keyid", "forged"),
            ("X-Adcp-Signature", "forged"),
            ("Keep-Alive", "timeout=5"),
            ("X-Hop", "1"),
            ("Connection", "X-Hop"),
            ("Proxy-Authorization", "Basic eA=="),
            ("TE", "trailers"),
            ("Upgrade", "websocket"),
        ],
    );
    let answer = send_raw(handle.local_addr(), "POST", &format!("{URL}?tenant=7"), &headers, &body).await;
    // The signature covers the target without the query: refused, not
    // forwarded; the same request without the query goes through.
    assert_eq!(answer.status, 401, "{answer:?}");
    assert!(seller.seen().is_empty());
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("x-seller"), ["yes"], "the seller's headers are relayed");
    assert!(
        answer.header("keep-alive").is_empty(),
        "hop-by-hop answer headers are not"
    );
    assert_eq!(answer.json()["jsonrpc"], "2.0", "the seller's body is relayed");
    let seen = seller.seen();
    let [forwarded] = seen.as_slice() else {
        panic!("{seen:?}")
    };
    assert_eq!(forwarded.method, Method::POST);
    assert_eq!(forwarded.target, "/mcp");
    assert_eq!(forwarded.body, body, "the raw body bytes");
    assert_eq!(value(forwarded, "x-adcp-signature"), Some("verified"));
    assert_eq!(value(forwarded, "x-adcp-verified-agent"), Some(BUYER));
    assert_eq!(value(forwarded, "x-adcp-verified-keyid"), Some("gw-buyer-2026"));
    assert_eq!(forwarded.headers.get_all("x-adcp-verified-agent").iter().count(), 1);
    assert_eq!(value(forwarded, "authorization"), Some("Bearer token-1"));
    assert_eq!(value(forwarded, "mcp-session-id"), Some("session-7"));
    assert_eq!(value(forwarded, "accept"), Some("application/json, text/event-stream"));
    assert!(value(forwarded, "signature").is_some() && value(forwarded, "content-digest").is_some());
    for hop in ["keep-alive", "x-hop", "proxy-authorization", "te", "upgrade"] {
        assert!(forwarded.headers.get(hop).is_none(), "{hop} is hop-by-hop");
    }
    let outcomes = handle.gateway().request_outcomes().unwrap().snapshot();
    assert_eq!(outcomes.get("verified"), Some(&1), "{outcomes:?}");
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_upstream_gets_the_path_under_its_own_and_the_query() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut options = options(&seller);
    options.upstream = format!("http://{}/base/", seller.addr).parse().unwrap();
    let handle = serve(buyer.keys(), memory_store().await, options).await;
    let answer = send_raw(
        handle.local_addr(),
        "POST",
        "https://seller.example/mcp?x=1",
        &[],
        &serde_json::to_vec(&tools_call("get_products")).unwrap(),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(seller.seen()[0].target, "/base/mcp?x=1");
    handle.shutdown().await.unwrap();
}

/// The upstream gets the path the verifier canonicalized (dot segments
/// removed, `%2e` included), under its own base path, which `..` cannot
/// climb out of; a target that does not canonicalize is refused.
#[tokio::test]
async fn the_upstream_gets_the_canonical_path_and_dot_segments_never_leave_its_base() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut options = options(&seller);
    options.upstream = format!("http://{}/base/", seller.addr).parse().unwrap();
    let handle = serve(buyer.keys(), memory_store().await, options).await;
    let body = serde_json::to_vec(&tools_call("get_products")).unwrap();
    for (target, forwarded) in [
        ("https://seller.example/mcp/../../admin", "/base/admin"),
        ("https://seller.example/mcp/%2e%2E/admin?x=1", "/base/admin?x=1"),
        ("https://seller.example/./mcp", "/base/mcp"),
    ] {
        let answer = send_raw(handle.local_addr(), "POST", target, &[], &body).await;
        assert_eq!(answer.status, 200, "{target}: {answer:?}");
        assert_eq!(seller.seen().last().unwrap().target, forwarded, "{target}");
    }
    let seen = seller.seen().len();
    let answer = send_raw(
        handle.local_addr(),
        "POST",
        "https://seller.example/mcp/%zz",
        &[],
        &body,
    )
    .await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let error: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(error["error"], "path_not_forwardable");
    assert_eq!(seller.seen().len(), seen, "nothing forwarded");
    handle.shutdown().await.unwrap();
}

/// With a signature batcher, a signed request is verified on its thread
/// and forwarded; a forged signature is refused; the batcher counts both.
#[tokio::test]
async fn with_a_signature_batcher_requests_are_verified_on_its_thread() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut options = options(&seller);
    options.signature_batcher = Some(adcp_verify::SignatureBatcher::start(1, 8).unwrap());
    let handle = serve(buyer.keys(), memory_store().await, options).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let (mut forged, body) = buyer.sign("create_media_buy").await;
    for (name, value) in &mut forged {
        if name.eq_ignore_ascii_case("signature") {
            *value = forged_signature(value);
        }
    }
    let answer = send_raw(handle.local_addr(), "POST", URL, &forged, &body).await;
    answer.check_rejected("request_signature_invalid", 401).unwrap();
    assert_eq!(seller.seen().len(), 1);
    let metrics = reqwest_metrics(handle.local_addr()).await;
    assert!(
        metrics.contains("adcp_gateway_batched_signatures_total 2\n"),
        "{metrics}"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn unsigned_requests_compose_with_the_credential_header() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let handle = serve(buyer.keys(), memory_store().await, options(&seller)).await;
    let addr = handle.local_addr();
    let body = serde_json::to_vec(&tools_call("create_media_buy")).unwrap();
    let json = [("Content-Type", "application/json")];

    // Required operation, no signature, no credential: the challenge.
    let answer = send_raw(addr, "POST", URL, &with(vec![], &json), &body).await;
    answer.check_rejected("request_signature_required", 401).unwrap();
    assert!(seller.seen().is_empty());

    // An empty credential header is no credential.
    let answer = send_raw(addr, "POST", URL, &with(vec![], &[("Authorization", "")]), &body).await;
    answer.check_rejected("request_signature_required", 401).unwrap();

    // With a credential: forwarded, marked unsigned, no identity.
    let answer = send_raw(
        addr,
        "POST",
        URL,
        &with(
            vec![],
            &[
                ("Authorization", "Bearer seller-issued"),
                ("X-Adcp-Verified-Agent", "https://forged.example/"),
            ],
        ),
        &body,
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let seen = seller.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(value(&seen[0], "x-adcp-signature"), Some("unsigned"));
    assert_eq!(value(&seen[0], "authorization"), Some("Bearer seller-issued"));
    assert!(value(&seen[0], "x-adcp-verified-agent").is_none());
    assert!(value(&seen[0], "x-adcp-verified-keyid").is_none());

    // A malformed signature pair hard-rejects, credential or not.
    let answer = send_raw(
        addr,
        "POST",
        URL,
        &with(
            vec![],
            &[("Authorization", "Bearer seller-issued"), ("Signature-Input", "sig1=(")],
        ),
        &body,
    )
    .await;
    assert_eq!(answer.status, 401, "{answer:?}");
    assert_eq!(seller.seen().len(), 1, "not forwarded");

    // An operation in no list: forwarded unsigned for the seller to judge.
    let get_products = serde_json::to_vec(&tools_call("get_products")).unwrap();
    let answer = send_raw(addr, "POST", URL, &[], &get_products).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(value(&seller.seen()[1], "x-adcp-signature"), Some("unsigned"));
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_failed_warn_for_signature_is_forwarded_on_the_credential_as_failed() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut opts = options(&seller);
    let mut request = RequestOptions::new(capability());
    request.credential_header = axum::http::HeaderName::from_static("x-api-key");
    opts.request = Some(request);
    let handle = serve(buyer.keys(), memory_store().await, opts).await;
    let addr = handle.local_addr();
    let (headers, mut body) = buyer.sign("update_media_buy").await;
    // Tamper with the body: the digest no longer matches.
    let at = body.iter().position(|b| *b == b'k').unwrap();
    body[at] = b'K';
    let answer = send_raw(addr, "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 401, "without a credential: refused {answer:?}");
    assert!(seller.seen().is_empty());
    // `Authorization` is not the configured credential header.
    let answer = send_raw(
        addr,
        "POST",
        URL,
        &with(headers.clone(), &[("Authorization", "Bearer x")]),
        &body,
    )
    .await;
    assert_eq!(answer.status, 401, "{answer:?}");
    let answer = send_raw(addr, "POST", URL, &with(headers, &[("X-Api-Key", "key-1")]), &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let seen = seller.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(value(&seen[0], "x-adcp-signature"), Some("failed"));
    assert!(value(&seen[0], "x-adcp-verified-agent").is_none());
    assert!(value(&seen[0], "x-adcp-verified-keyid").is_none());
    let outcomes = handle.gateway().request_outcomes().unwrap().snapshot();
    assert_eq!(outcomes.get("failed"), Some(&1), "{outcomes:?}");
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_replay_is_refused_by_a_second_gateway_sharing_the_sqlite_store() {
    let dir = TempDir::new("request-replay");
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let url = StoreUrl::Sqlite(dir.0.join("replay.sqlite"));
    let open = || async {
        let options = StoreOptions {
            replay_limits: ReplayLimits::request(),
            ..StoreOptions::default()
        };
        adcp_store::open(&url, options).await.unwrap()
    };
    let first = serve(buyer.keys(), open().await, options(&seller)).await;
    let second = serve(buyer.keys(), open().await, options(&seller)).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(first.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let answer = send_raw(second.local_addr(), "POST", URL, &headers, &body).await;
    answer.check_rejected("request_signature_replayed", 401).unwrap();
    assert_eq!(seller.seen().len(), 1, "forwarded once");
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}

/// Keys that cannot be fetched (the buyer's JWKS host is down).
struct Unavailable;

#[async_trait::async_trait]
impl KeyResolver for Unavailable {
    async fn resolve(&self, _: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        Err(ResolveError::Unavailable("jwks host down".into()))
    }

    async fn revocation_status(&self, _: &ResolvedKey, _: i64) -> Result<adcp_verify::RevocationStatus, ResolveError> {
        Ok(adcp_verify::RevocationStatus::Current)
    }
}

#[tokio::test]
async fn a_key_discovery_outage_answers_503_as_in_webhook_mode() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let handle = serve(Arc::new(Unavailable), memory_store().await, options(&seller)).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    answer
        .check_rejected("request_signature_jwks_unavailable", 503)
        .unwrap();
    assert_eq!(answer.header("retry-after"), ["2"]);
    assert_eq!(
        adcp_verify::ErrorCode::JwksUnavailable.http_status(),
        503,
        "the webhook receiver answers the same code's status"
    );
    assert!(seller.seen().is_empty());
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn another_authority_is_refused_with_the_request_code() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let handle = serve(buyer.keys(), memory_store().await, options(&seller)).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(
        handle.local_addr(),
        "POST",
        "https://elsewhere.example/mcp",
        &headers,
        &body,
    )
    .await;
    answer.check_rejected("request_target_uri_malformed", 401).unwrap();
    // An MCP GET (forwarded unverified) for another authority too.
    let answer = send_raw(handle.local_addr(), "GET", "https://elsewhere.example/mcp", &[], b"").await;
    answer.check_rejected("request_target_uri_malformed", 401).unwrap();
    // A method other than POST, GET and DELETE: not allowed.
    let answer = send_raw(handle.local_addr(), "PUT", URL, &[], b"").await;
    assert_eq!(answer.status, 405, "{answer:?}");
    assert!(seller.seen().is_empty());
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_bad_gateway() {
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut options = options(&seller);
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    options.upstream = format!("http://{}", closed.local_addr().unwrap()).parse().unwrap();
    drop(closed);
    let handle = serve(buyer.keys(), memory_store().await, options).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 502, "{answer:?}");
    assert_eq!(answer.json()["error"], "upstream_unavailable");
    handle.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------
// Configuration.

pub(crate) fn request_toml(extra: &str) -> String {
    format!(
        "profile = \"request\"\nupstream = \"http://127.0.0.1:9/\"\njwks = \"buyer-jwks.json\"\nstore = \"memory:\"\n{extra}"
    )
}

#[test]
fn request_mode_settings_are_checked_against_the_profile() {
    let dir = TempDir::new("request-config");
    let write = |name: &str, text: &str| std::fs::write(dir.0.join(name), text).unwrap();
    write("buyer-jwks.json", r#"{"keys": []}"#);
    write(
        "caps.json",
        r#"{"adcp": {"major_versions": [3]}, "request_signing": {"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}}"#,
    );
    let load = |text: &str| {
        write("gateway.toml", text);
        GatewayConfig::from_toml_file(dir.0.join("gateway.toml")).unwrap()
    };

    // Request mode without capabilities.
    let config = load(&request_toml(""));
    assert!(matches!(config.validate(), Err(ConfigError::CapabilitiesMissing)));
    // With them (relative to the TOML file), the whole response.
    let config = load(&request_toml(
        "capabilities = \"caps.json\"\nbinding = \"jsonrpc\"\ncredential_header = \"x-api-key\"",
    ));
    assert_eq!(config.profile, adcp_gateway::GatewayProfile::Request);
    assert_eq!(config.binding, Some(adcp_gateway::BindingSetting::Jsonrpc));
    config.validate().unwrap();
    // A bad credential header name.
    let config = load(&request_toml(
        "capabilities = \"caps.json\"\ncredential_header = \"bad header\"",
    ));
    assert!(matches!(config.validate(), Err(ConfigError::CredentialHeader { .. })));
    // A capabilities file that is missing, or not JSON.
    let config = load(&request_toml("capabilities = \"missing.json\""));
    assert!(matches!(config.validate(), Err(ConfigError::CapabilitiesFile { .. })));
    write("bad.json", "{");
    let config = load(&request_toml("capabilities = \"bad.json\""));
    assert!(matches!(config.validate(), Err(ConfigError::CapabilitiesJson { .. })));
    // Webhook-only settings in request mode.
    let config = load(&request_toml(
        "capabilities = \"caps.json\"\nhmac_sender = \"https://s.example/\"",
    ));
    assert!(matches!(config.validate(), Err(ConfigError::WebhookModeOnly { .. })));

    // Webhook mode (the default) refuses request-only settings.
    let webhook = "upstream = \"http://127.0.0.1:9/\"\njwks = \"buyer-jwks.json\"\n";
    let config = load(&format!("{webhook}capabilities = \"caps.json\""));
    assert_eq!(config.profile, adcp_gateway::GatewayProfile::Webhook);
    assert!(matches!(
        config.validate(),
        Err(ConfigError::RequestModeOnly {
            setting: "--capabilities"
        })
    ));
    let config = load(&format!("{webhook}credential_header = \"x-api-key\""));
    assert!(matches!(config.validate(), Err(ConfigError::RequestModeOnly { .. })));
    load(webhook).validate().unwrap();

    // Unknown values.
    assert!(GatewayConfig::from_toml_str("profile = \"both\"").is_err());
    assert!(GatewayConfig::from_toml_str("binding = \"rest\"").is_err());
}

#[test]
fn request_mode_settings_come_from_the_environment() {
    let vars = [
        ("ADCP_GATEWAY_PROFILE", "request"),
        ("ADCP_GATEWAY_CAPABILITIES", "caps.json"),
        ("ADCP_GATEWAY_BINDING", "operation-path"),
        ("ADCP_GATEWAY_CREDENTIAL_HEADER", "x-api-key"),
    ];
    let mut config = GatewayConfig::default();
    config
        .apply_env_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).into()))
        .unwrap();
    assert_eq!(config.profile, adcp_gateway::GatewayProfile::Request);
    assert_eq!(config.capabilities.as_deref(), Some(Path::new("caps.json")));
    assert_eq!(config.binding, Some(adcp_gateway::BindingSetting::OperationPath));
    assert_eq!(config.credential_header.as_deref(), Some("x-api-key"));
    let bad = |name: &'static str, value: &'static str| {
        let mut config = GatewayConfig::default();
        config.apply_env_vars(|n| (n == name).then(|| value.into()))
    };
    assert!(matches!(
        bad("ADCP_GATEWAY_PROFILE", "both"),
        Err(ConfigError::Env { .. })
    ));
    assert!(matches!(
        bad("ADCP_GATEWAY_BINDING", "rest"),
        Err(ConfigError::Env { .. })
    ));
}

#[tokio::test]
async fn from_config_serves_request_mode_with_the_request_replay_cap() {
    let dir = TempDir::new("request-from-config");
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    std::fs::write(dir.0.join("jwks.json"), buyer.jwks.to_string()).unwrap();
    std::fs::write(
        dir.0.join("caps.json"),
        json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]})
            .to_string(),
    )
    .unwrap();
    let mut config = GatewayConfig::new(seller.url());
    config.profile = adcp_gateway::GatewayProfile::Request;
    config.capabilities = Some(dir.0.join("caps.json"));
    config.jwks = Some(dir.0.join("jwks.json"));
    config.jwks_agent = BUYER.to_owned();
    config.public_url = Some("https://seller.example/".parse().unwrap());
    config.store = "memory:".parse().unwrap();
    config.access_log = false;
    let gateway = Gateway::from_config_with_clock(&config, Some(Arc::new(FixedClock(NOW))))
        .await
        .unwrap();
    let handle = serve_loopback(&gateway).await;
    let (headers, body) = buyer.sign("create_media_buy").await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(value(&seller.seen()[0], "x-adcp-verified-agent"), Some(BUYER));
    let metrics = reqwest_metrics(handle.local_addr()).await;
    assert!(
        metrics.contains("adcp_gateway_requests_total{outcome=\"verified\"} 1"),
        "{metrics}"
    );
    handle.shutdown().await.unwrap();

    // A capability that does not fit the 3.2 profile is a start-up error.
    std::fs::write(
        dir.0.join("caps.json"),
        json!({"supported": true, "covers_content_digest": "either"}).to_string(),
    )
    .unwrap();
    assert!(matches!(
        Gateway::from_config(&config).await,
        Err(GatewayError::Config(ConfigError::RequestVerifier(_)))
    ));
}

async fn reqwest_metrics(addr: SocketAddr) -> String {
    let answer = send_raw(addr, "GET", &format!("http://{addr}/metrics"), &[], b"").await;
    String::from_utf8(answer.body).unwrap()
}

#[tokio::test]
async fn request_mode_serves_https_over_http2_with_the_certificate_names() {
    let dir = TempDir::new("request-tls");
    let pki = crate::tls::Pki::new();
    let leaf = pki.leaf(&["seller.example"]);
    std::fs::write(dir.0.join("cert.pem"), &leaf.cert_pem).unwrap();
    std::fs::write(dir.0.join("key.pem"), &leaf.key_pem).unwrap();
    let buyer = Buyer::new();
    let seller = Seller::start().await;
    let mut options = options(&seller);
    options.public_url = None;
    options.tls = Some(adcp_gateway::TlsConfig::from_pem_files(dir.0.join("cert.pem"), dir.0.join("key.pem")).unwrap());
    let handle = serve(buyer.keys(), memory_store().await, options).await;
    let addr = handle.local_addr();
    let url = format!("https://seller.example:{}/mcp", addr.port());
    let body = adcp_sign::Body::json(&tools_call("create_media_buy")).unwrap();
    let signed = buyer.signer.sign(&UnsignedRequest::post(&url, &body)).await.unwrap();
    let client = pki.client(&[b"h2"], &["seller.example"], addr);
    let mut request = client.post(&url);
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    let response = request.body(body.as_bytes().to_vec()).send().await.unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    let seen = seller.seen();
    assert_eq!(value(&seen[0], "x-adcp-verified-agent"), Some(BUYER));
    handle.shutdown().await.unwrap();
}
