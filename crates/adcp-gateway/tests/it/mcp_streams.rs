//! MCP Streamable HTTP through a request-mode gateway: a signed
//! `tools/call` answered as an event stream that lasts longer than the
//! upstream timeout arrives whole, chunk by chunk; bodyless `GET` (the
//! server-to-client stream) and `DELETE` (the end of a session) reach the
//! upstream unverified, marked `unsigned`, with the session headers both
//! ways; every `POST` is still verified under the policy; a `GET` or
//! `DELETE` with a body is refused; a client that goes away, the idle
//! timeout and a shutdown each end a stream and close the upstream's
//! connection.
//!
//! The upstream is a raw HTTP/1.1 server, so that the test controls when
//! each chunk is written and sees when the gateway closes its connection.

use crate::request_mode::Seen;
use crate::support::http_client;
use adcp_gateway::{Gateway, GatewayHandle, GatewayOptions, RequestOptions};
use adcp_sign::{Algorithm, HttpSigner, SigningProfile, SoftwareSigner, UnsignedRequest};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{KeyResolver, StaticKeyResolver};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BUYER: &str = "https://buyer.example/";
const SESSION: &str = "session-1";
const PROTOCOL: &str = "2025-11-25";

/// The gap between the first and the last event of the `tools/call`
/// stream (two gaps, the first longer than the gateway's upstream
/// timeout).
const TOOLS_CALL_GAPS: [Duration; 2] = [Duration::from_millis(1500), Duration::from_millis(1000)];

/// The seller's MCP server, written by hand: each connection carries one
/// request (`Connection: close`). `POST /mcp` answers `initialize` with
/// JSON and a new `Mcp-Session-Id`, `tools/call` with an event stream of
/// three events spread over [`TOOLS_CALL_GAPS`], anything else `202`;
/// `GET /mcp` with an event stream of two events 1.5 s apart (the first
/// echoing `Last-Event-ID`); `DELETE /mcp` with `200`. Under `/quiet/`, a
/// `GET` is answered with one event and then nothing; under `/hang/`, a
/// `POST` is not answered; under `/slow/`, a `POST` gets a head with
/// `Content-Length: 100` and 10 bytes of it. Each waits until the gateway
/// closes the connection (counted in `closed`).
struct McpServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    closed: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl McpServer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicUsize::new(0));
        let (recorded, counted) = (Arc::clone(&seen), Arc::clone(&closed));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (recorded, counted) = (Arc::clone(&recorded), Arc::clone(&counted));
                tokio::spawn(async move {
                    let _ = serve_one(stream, recorded, counted).await;
                });
            }
        });
        Self {
            addr,
            seen,
            closed,
            task,
        }
    }

    fn url(&self) -> url::Url {
        format!("http://{}", self.addr).parse().unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until the gateway has closed `n` quiet streams' connections.
    async fn closed(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.closed.load(Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "the upstream connection was not closed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request, records it, answers it.
async fn serve_one(
    mut stream: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    closed: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let mut raw = Vec::new();
    let head_end = loop {
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        assert!(raw.len() < 65_536, "request head too long");
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next().unwrap_or_default().split(' ');
    let method: Method = start.next().unwrap_or_default().parse().unwrap();
    let target = start.next().unwrap_or_default().to_owned();
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            headers.append(
                HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
                HeaderValue::from_str(value.trim()).unwrap(),
            );
        }
    }
    let length: usize = headers
        .get("content-length")
        .map_or(0, |v| v.to_str().unwrap().parse().unwrap());
    let mut body = raw[head_end + 4..].to_vec();
    while body.len() < length {
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let rpc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        target: target.clone(),
        headers: headers.clone(),
        body,
    });
    let session = headers
        .get("mcp-session-id")
        .map_or(SESSION, |v| v.to_str().unwrap())
        .to_owned();
    let mut echo = format!("mcp-session-id: {session}\r\n");
    if let Some(version) = headers.get("mcp-protocol-version") {
        echo.push_str(&format!("mcp-protocol-version: {}\r\n", version.to_str().unwrap()));
    }
    let stream_head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n{echo}\r\n"
    );
    match (method.as_str(), rpc["method"].as_str()) {
        ("POST", _) if target.starts_with("/hang/") => wait_closed(&mut stream, &closed).await,
        ("POST", _) if target.starts_with("/slow/") => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{\"jsonrpc\"")
                .await?;
            stream.flush().await?;
            wait_closed(&mut stream, &closed).await;
        }
        ("POST", Some("initialize")) => {
            let answer = json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"protocolVersion": PROTOCOL, "capabilities": {}, "serverInfo": {"name": "test", "version": "1"}}}).to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{echo}\r\n",
                answer.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(answer.as_bytes()).await?;
        }
        ("POST", Some("tools/call")) => {
            stream.write_all(stream_head.as_bytes()).await?;
            let progress = |n: u32| {
                event(
                    n,
                    &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": n}}),
                )
            };
            chunk(&mut stream, &progress(1)).await?;
            tokio::time::sleep(TOOLS_CALL_GAPS[0]).await;
            chunk(&mut stream, &progress(2)).await?;
            tokio::time::sleep(TOOLS_CALL_GAPS[1]).await;
            let result = json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"content": [{"type": "text", "text": "done"}], "structuredContent": {"media_buy_id": "mb_1"}}});
            chunk(&mut stream, &event(3, &result)).await?;
            stream.write_all(b"0\r\n\r\n").await?;
        }
        ("POST", _) => {
            stream
                .write_all(
                    format!("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n{echo}\r\n").as_bytes(),
                )
                .await?;
        }
        ("GET", _) if target.starts_with("/quiet/") => {
            stream.write_all(stream_head.as_bytes()).await?;
            chunk(
                &mut stream,
                &event(1, &json!({"jsonrpc": "2.0", "method": "notifications/ping"})),
            )
            .await?;
            wait_closed(&mut stream, &closed).await;
        }
        ("GET", _) => {
            stream.write_all(stream_head.as_bytes()).await?;
            let last = headers.get("last-event-id").map(|v| v.to_str().unwrap().to_owned());
            chunk(&mut stream, &event(7, &json!({"last_event_id": last}))).await?;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            chunk(
                &mut stream,
                &event(8, &json!({"jsonrpc": "2.0", "method": "notifications/ping"})),
            )
            .await?;
            stream.write_all(b"0\r\n\r\n").await?;
        }
        ("DELETE", _) => {
            stream
                .write_all(
                    format!("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n{echo}\r\n").as_bytes(),
                )
                .await?;
        }
        _ => {
            stream
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await?;
        }
    }
    stream.flush().await
}

/// Says nothing more until the other side closes the connection, then
/// counts it in `closed` (bounded, so that a failing test does not leave
/// the task behind).
async fn wait_closed(stream: &mut TcpStream, closed: &AtomicUsize) {
    let mut buf = [0u8; 64];
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    if ended.is_ok() {
        closed.fetch_add(1, Ordering::SeqCst);
    }
}

fn event(id: u32, data: &Value) -> String {
    format!("event: message\nid: {id}\ndata: {data}\n\n")
}

async fn chunk(stream: &mut TcpStream, text: &str) -> std::io::Result<()> {
    stream
        .write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes())
        .await?;
    stream.flush().await
}

/// The buyer: an Ed25519 request-signing key trusted for [`BUYER`].
struct Buyer {
    signer: HttpSigner<SoftwareSigner>,
    keys: Arc<dyn KeyResolver>,
}

impl Buyer {
    fn new() -> Self {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "mcp-buyer-2026").unwrap();
        let jwks = key.jwks().unwrap().to_public_json();
        Self {
            signer: HttpSigner::new(SigningProfile::request_v3_2(), key).unwrap(),
            keys: Arc::new(StaticKeyResolver::new().with_jwks(&jwks, BUYER)),
        }
    }

    /// The signature headers and body of `rpc` posted to `url`.
    async fn sign(&self, url: &str, rpc: &Value) -> (Vec<(String, String)>, Vec<u8>) {
        let body = adcp_sign::Body::json(rpc).unwrap();
        let signed = self.signer.sign(&UnsignedRequest::post(url, &body)).await.unwrap();
        let headers = signed
            .headers()
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect();
        (headers, signed.body().unwrap().as_bytes().to_vec())
    }
}

fn capability() -> VerifierCapability {
    VerifierCapability::from_json(&json!({
        "supported": true,
        "covers_content_digest": "required",
        "required_for": ["create_media_buy"],
        "protocol_methods_required_for": ["tasks/cancel"]
    }))
    .unwrap()
}

/// A request-mode gateway on loopback (plain HTTP, any `Host`) in front of
/// `upstream`, with a 1 s upstream timeout.
async fn gateway(buyer: &Buyer, upstream: &McpServer, idle_timeout: Option<Duration>) -> GatewayHandle {
    let mut options = GatewayOptions::new(upstream.url());
    options.upstream_timeout = Duration::from_secs(1);
    options.upstream_idle_timeout = idle_timeout;
    options.request = Some(RequestOptions::new(capability()));
    let store = adcp_store::open(&StoreUrl::Memory, StoreOptions::default())
        .await
        .unwrap();
    Gateway::new(Arc::clone(&buyer.keys), store, options)
        .unwrap()
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

fn tools_call(name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": {"idempotency_key": "k-1"}}})
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

/// Waits (up to 10 s) until `condition` holds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads a streamed body to its end: the chunks and when each arrived.
async fn read_stream(mut response: reqwest::Response) -> (String, Vec<Duration>) {
    let started = Instant::now();
    let (mut text, mut arrivals) = (String::new(), Vec::new());
    while let Some(chunk) = response.chunk().await.unwrap() {
        arrivals.push(started.elapsed());
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    (text, arrivals)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_through_the_gateway_streams_past_the_upstream_timeout() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let url = format!("{}/mcp", handle.base_url());
    let client = http_client();

    // initialize: a protocol method no list requires, unsigned: forwarded
    // marked unsigned; the session id comes back.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = client
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["mcp-session-id"], SESSION);
    let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], PROTOCOL);

    // A signed tools/call answered as an event stream lasting 2.5 s (a
    // gap of 1.5 s in it) through a gateway whose upstream timeout is
    // 1 s: every event arrives, each as it is sent.
    let (headers, body) = buyer.sign(&url, &tools_call("create_media_buy")).await;
    let mut request = client
        .post(&url)
        .header("mcp-session-id", SESSION)
        .header("mcp-protocol-version", PROTOCOL)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.body(body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["mcp-session-id"], SESSION);
    assert_eq!(response.headers()["mcp-protocol-version"], PROTOCOL);
    let (text, arrivals) = read_stream(response).await;
    assert_eq!(text.matches("event: message").count(), 3, "{text}");
    assert!(text.contains(r#""media_buy_id":"mb_1""#), "{text}");
    let (first, last) = (arrivals[0], arrivals[arrivals.len() - 1]);
    assert!(
        last - first >= Duration::from_millis(1500),
        "relayed as it arrived: {arrivals:?}"
    );

    // GET: the server-to-client stream, unverified, its events 1.5 s
    // apart; forged gateway headers and a signature do not make it
    // verified.
    let response = client
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", SESSION)
        .header("mcp-protocol-version", PROTOCOL)
        .header("last-event-id", "6")
        .header("x-adcp-signature", "verified")
        .header("x-adcp-verified-agent", "https://forged.example/")
        .header("signature-input", "sig1=();keyid=\"forged\"")
        .header("signature", "sig1=:AAAA:")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["mcp-session-id"], SESSION);
    let (text, _) = read_stream(response).await;
    assert!(text.contains(r#"data: {"last_event_id":"6"}"#), "{text}");
    assert_eq!(text.matches("event: message").count(), 2, "{text}");

    // DELETE ends the session.
    let response = client
        .delete(&url)
        .header("mcp-session-id", SESSION)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["mcp-session-id"], SESSION);

    let seen = upstream.seen();
    let [initialize, call, get, delete] = seen.as_slice() else {
        panic!("{seen:?}")
    };
    assert_eq!(header(initialize, "x-adcp-signature"), Some("unsigned"));
    assert_eq!(header(call, "x-adcp-signature"), Some("verified"));
    assert_eq!(header(call, "x-adcp-verified-agent"), Some(BUYER));
    assert_eq!(header(call, "mcp-session-id"), Some(SESSION));
    assert_eq!(header(call, "mcp-protocol-version"), Some(PROTOCOL));
    for (unverified, method) in [(get, Method::GET), (delete, Method::DELETE)] {
        assert_eq!(unverified.method, method);
        assert_eq!(unverified.target, "/mcp");
        assert_eq!(header(unverified, "x-adcp-signature"), Some("unsigned"));
        assert_eq!(header(unverified, "x-adcp-verified-agent"), None);
        assert_eq!(header(unverified, "x-adcp-verified-keyid"), None);
        assert_eq!(header(unverified, "mcp-session-id"), Some(SESSION));
        assert_eq!(header(unverified, "mcp-protocol-version"), Some(PROTOCOL));
        assert!(unverified.body.is_empty());
        assert_eq!(header(unverified, "content-length"), None, "no body at all");
    }
    assert_eq!(header(get, "last-event-id"), Some("6"));
    assert_eq!(get.headers.get_all("x-adcp-signature").iter().count(), 1);

    let gateway = handle.gateway();
    let outcomes = gateway.request_outcomes().unwrap().snapshot();
    for (outcome, count) in [
        ("unsigned", 1),
        ("verified", 1),
        ("unsigned_get", 1),
        ("unsigned_delete", 1),
    ] {
        assert_eq!(outcomes.get(outcome), Some(&count), "{outcomes:?}");
    }
    // A relay counts itself once it has passed the end on.
    until("four complete relays", || {
        gateway.metrics().relays_ended()["complete"] == 4
    })
    .await;
    assert_eq!(gateway.metrics().streams_open(), 0);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_post_on_the_mcp_endpoint_is_still_verified_under_the_policy() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let url = format!("{}/mcp", handle.base_url());
    let client = http_client();
    let post = |rpc: Value| {
        client
            .post(&url)
            .header("mcp-session-id", SESSION)
            .header("content-type", "application/json")
            .body(rpc.to_string())
            .send()
    };
    // An operation in required_for, and a protocol method in
    // protocol_methods_required_for: refused unsigned, nothing forwarded.
    for rpc in [
        tools_call("create_media_buy"),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"taskId": "t"}}),
    ] {
        let response = post(rpc).await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(
            response.headers()["www-authenticate"],
            "Signature error=\"request_signature_required\""
        );
    }
    assert!(upstream.seen().is_empty());
    // A notification no list requires: forwarded unsigned.
    let response = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(header(&seen[0], "x-adcp-signature"), Some("unsigned"));
    handle.shutdown().await.unwrap();
}

/// Writes `raw` to the gateway and reads the whole answer (the gateway
/// closes the connection after it).
async fn exchange(addr: SocketAddr, raw: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).to_ascii_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_or_delete_with_a_body_is_refused_and_other_methods_are_not_allowed() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let addr = handle.local_addr();
    for raw in [
        "GET /mcp HTTP/1.1\r\nHost: seller.example\r\nContent-Length: 2\r\n\r\n{}",
        "GET /mcp HTTP/1.1\r\nHost: seller.example\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "GET /mcp HTTP/1.1\r\nHost: seller.example\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "DELETE /mcp HTTP/1.1\r\nHost: seller.example\r\nContent-Length: 2\r\n\r\n{}",
    ] {
        let answer = exchange(addr, raw).await;
        assert!(answer.starts_with("http/1.1 400"), "{raw:?}: {answer}");
        assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
        assert!(answer.contains(r#""error":"body_not_allowed""#), "{answer}");
    }
    // Content-Length: 0 is no body.
    let answer = exchange(
        addr,
        "DELETE /mcp HTTP/1.1\r\nHost: seller.example\r\nContent-Length: 0\r\nMcp-Session-Id: session-1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    // Other methods, and GET off the MCP endpoint (one operation per
    // path: an AdCP operation's URL), are not allowed.
    for raw in [
        "PUT /mcp HTTP/1.1\r\nHost: seller.example\r\nContent-Length: 0\r\n\r\n",
        "PATCH /mcp HTTP/1.1\r\nHost: seller.example\r\nContent-Length: 0\r\n\r\n",
        "GET /adcp/get_products HTTP/1.1\r\nHost: seller.example\r\n\r\n",
        "DELETE /a2a/v1/message:send HTTP/1.1\r\nHost: seller.example\r\n\r\n",
    ] {
        let answer = exchange(addr, raw).await;
        assert!(answer.starts_with("http/1.1 405"), "{raw:?}: {answer}");
        assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
        assert!(answer.contains(r#""error":"method_not_allowed""#), "{answer}");
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "only the bodyless DELETE: {seen:?}");
    assert_eq!(seen[0].method, Method::DELETE);
    let outcomes = handle.gateway().request_outcomes().unwrap().snapshot();
    assert_eq!(outcomes.get("body_not_allowed"), Some(&4), "{outcomes:?}");
    assert_eq!(outcomes.get("method_not_allowed"), Some(&4), "{outcomes:?}");
    handle.shutdown().await.unwrap();
}

/// Opens the quiet stream through the gateway at `base` and reads its
/// first event.
async fn open_quiet_stream(base: &str) -> reqwest::Response {
    let mut response = http_client()
        .get(format!("{base}/quiet/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", SESSION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let first = response.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/ping"));
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_going_away_closes_the_upstream_connection() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let response = open_quiet_stream(&handle.base_url()).await;
    // Quiet for longer than the upstream timeout: still open.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(handle.gateway().metrics().streams_open(), 1);
    assert_eq!(upstream.closed.load(Ordering::SeqCst), 0);
    drop(response);
    upstream.closed(1).await;
    let metrics = handle.gateway().metrics();
    until("the stream counted closed", || metrics.streams_open() == 0).await;
    assert_eq!(metrics.relays_ended()["client_gone"], 1);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_timeout_cuts_a_quiet_stream_and_a_shutdown_ends_open_ones() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;

    // With an idle timeout of 1 s: the quiet stream is cut, the client
    // sees its body fail (not end), the upstream connection is closed.
    let handle = gateway(&buyer, &upstream, Some(Duration::from_secs(1))).await;
    let mut response = open_quiet_stream(&handle.base_url()).await;
    let started = Instant::now();
    assert!(response.chunk().await.is_err(), "a cut stream ends in an error");
    assert!(started.elapsed() < Duration::from_secs(5));
    upstream.closed(1).await;
    let metrics = handle.gateway().metrics();
    until("the idle timeout counted", || {
        metrics.relays_ended()["idle_timeout"] == 1
    })
    .await;
    handle.shutdown().await.unwrap();

    // Without one, a shutdown ends the stream instead of waiting for it.
    let handle = gateway(&buyer, &upstream, None).await;
    let response = open_quiet_stream(&handle.base_url()).await;
    let gateway = handle.gateway().clone();
    tokio::time::timeout(Duration::from_secs(10), handle.shutdown())
        .await
        .expect("shutdown waits for no open stream")
        .unwrap();
    ended_by_shutdown(response, &upstream, 2, &gateway).await;
}

/// `response`'s stream was ended by a shutdown: its body ends in an error,
/// the upstream counts `closed` connections closed, and the gateway counts
/// one relay ended by a shutdown.
async fn ended_by_shutdown(mut response: reqwest::Response, upstream: &McpServer, closed: usize, gateway: &Gateway) {
    assert!(
        response.chunk().await.is_err(),
        "a stream ended by a shutdown ends in an error"
    );
    upstream.closed(closed).await;
    until("the shutdown counted", || {
        gateway.metrics().relays_ended()["shutdown"] == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_served_by_ones_own_server_ends_its_streams_at_its_shutdown() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let gateway = handle.gateway().clone();
    let (router, streams) = gateway.router_with_stream_stopper();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                streams.stop();
            })
            .into_future(),
    );
    let response = open_quiet_stream(&base).await;
    // Quiet for longer than the upstream timeout: still open.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(gateway.metrics().streams_open(), 1);

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the graceful shutdown waits for no open stream")
        .unwrap()
        .unwrap();
    ended_by_shutdown(response, &upstream, 1, &gateway).await;
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_timeout_still_bounds_the_head_and_a_body_of_known_length() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let post = |path: &str| {
        http_client()
            .post(format!("{}{path}", handle.base_url()))
            .header("content-type", "application/json")
            .body(notification.clone())
            .send()
    };
    // No head within the upstream timeout (1 s): 504, the upstream request
    // dropped.
    let started = Instant::now();
    let response = post("/hang/mcp").await.unwrap();
    assert_eq!(response.status(), 504);
    assert!(started.elapsed() < Duration::from_secs(5));
    let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["error"], "upstream_timeout");
    upstream.closed(1).await;
    // A body of known length not done within it: cut, the client's body
    // fails.
    let response = post("/slow/mcp").await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.bytes().await.is_err(), "a cut body ends in an error");
    upstream.closed(2).await;
    let metrics = handle.gateway().metrics();
    until("the timeout counted", || metrics.relays_ended()["timeout"] == 1).await;
    handle.shutdown().await.unwrap();
}

/// The upstream gets the path with dot segments removed (`/x/../adcp/op`
/// is `/adcp/op` there): the gateway infers the binding from that path
/// too, so neither an unsigned POST nor a GET reaches an operation's URL
/// as if it were on the MCP endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_segments_do_not_take_a_request_off_an_operation_path() {
    let buyer = Buyer::new();
    let upstream = McpServer::start().await;
    let handle = gateway(&buyer, &upstream, None).await;
    let addr = handle.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}"#;
    for path in ["/x/../adcp/create_media_buy", "/mcp/%2e%2e/adcp/create_media_buy"] {
        let answer = exchange(
            addr,
            &format!(
                "POST {path} HTTP/1.1\r\nHost: seller.example\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
        .await;
        assert!(answer.starts_with("http/1.1 401"), "{path}: {answer}");
        assert!(
            answer.contains(r#"signature error="request_signature_required""#),
            "{answer}"
        );
        let answer = exchange(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: seller.example\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with("http/1.1 405"), "{path}: {answer}");
    }
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());
    handle.shutdown().await.unwrap();
}
