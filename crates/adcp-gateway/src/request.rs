//! Request mode: verify signed AdCP requests under the seller's advertised
//! `request_signing` capability ([`adcp_request::RequestVerifier`]) and
//! proxy them to the seller's own server, relaying its answer.
//!
//! The gateway cannot judge a bearer token, API key or session: the seller
//! can. So the fallback authenticator it gives the verifier says
//! [`FallbackCredential::Valid`] whenever the request carries the
//! credential header (non-empty; `Authorization` by default), and the
//! request is forwarded marked [`SIGNATURE_STATE`] `unsigned` (or `failed`
//! for a `warn_for` signature that did not verify) without identity
//! headers, for the seller's own authenticator to decide. Identity headers
//! ([`VERIFIED_AGENT`], [`VERIFIED_KEYID`]) travel only with a verified
//! signature (`X-Adcp-Signature: verified`).
//!
//! MCP Streamable HTTP: a bodyless `GET` (the server-to-client event
//! stream) or `DELETE` (the end of a session) on the MCP endpoint carries
//! no AdCP operation and is forwarded without verification, marked
//! `unsigned` ([`Marking::UNVERIFIED`]). Upstream answers are relayed as
//! they arrive ([`Relay`]): the head within the upstream timeout, a body
//! of known length too; a streamed body (`text/event-stream`, or no
//! `Content-Length`) as long as it lasts, bounded only by the idle timeout
//! if one is set, and cut when the client goes away (the upstream request
//! is dropped, its connection closed) or the server shuts down.

use crate::forward::{streaming_http_client, VERIFIED_AGENT, VERIFIED_KEYID};
use crate::metrics::{RelayCounters, RelayEnd, UpstreamFailure};
use crate::GatewayError;
use adcp_request::{Authenticator, AuthenticatorFuture, FallbackCredential, RequestAuth, ResolvedRequest};
use adcp_verify::request_policy::{AuthSource, Binding, VerifierCapability};
use adcp_verify::{ErrorCode, Profile, ReplayStore, VerifiedSigner};
use axum::body::{Body, Bytes};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Header telling the upstream how the request was authenticated by the
/// gateway (request mode): `verified` (a signature verified; the identity
/// headers are set), `unsigned` (no signature) or `failed` (a `warn_for`
/// signature that did not verify, forwarded on the credential header).
/// A client-sent value is always removed.
pub const SIGNATURE_STATE: &str = "x-adcp-signature";

/// The prefix of the gateway's identity headers; every client-sent header
/// with it is removed before forwarding.
const VERIFIED_PREFIX: &str = "x-adcp-verified-";

/// The request mode's settings ([`GatewayOptions::request`](crate::GatewayOptions::request)):
/// the capability the gate applies and how requests are read.
/// [`RequestOptions::new`] gives the defaults; set the fields to change
/// them.
#[derive(Clone)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The seller's own advertised `request_signing` block
    /// ([`adcp_request::request_signing_capability`] reads it from a
    /// `get_adcp_capabilities` response).
    pub capability: VerifierCapability,
    /// How requests carry their operation; `None` (the default) infers it
    /// from each request's path ([`Binding::infer`]).
    pub binding: Option<Binding>,
    /// The header whose presence (non-empty) counts as an independent
    /// credential, judged by the upstream. Default `authorization`.
    pub credential_header: HeaderName,
    /// The verification profile. Default [`Profile::request_v3_2`]; a
    /// legacy 3.0/3.1 endpoint sets [`Profile::request_legacy`] with the
    /// `covers_content_digest` policy it advertises.
    pub profile: Profile,
    /// The replay store for request nonces. Default `None`: the gateway's
    /// store ([`Gateway::new`](crate::Gateway::new)'s), opened by
    /// [`Gateway::from_config`](crate::Gateway::from_config) with the
    /// request profile's per-keyid cap (1,000,000) unless
    /// `replay_cap_per_keyid` overrides it.
    pub replay: Option<Arc<dyn ReplayStore>>,
}

impl RequestOptions {
    /// Defaults for `capability`.
    #[must_use]
    pub fn new(capability: VerifierCapability) -> Self {
        Self {
            capability,
            binding: None,
            credential_header: header::AUTHORIZATION,
            profile: Profile::request_v3_2(),
            replay: None,
        }
    }
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("capability", &self.capability)
            .field("binding", &self.binding)
            .field("credential_header", &self.credential_header)
            .field("profile", &self.profile.name())
            .field("replay", &self.replay.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// The fallback authenticator of request mode: the credential header's
/// presence. Whether the credential is any good is the upstream's call.
pub(crate) struct CredentialHeader(pub(crate) HeaderName);

impl Authenticator for CredentialHeader {
    fn authenticate<'a>(&'a self, parts: &'a Parts, _: &'a ResolvedRequest) -> AuthenticatorFuture<'a> {
        let present = parts.headers.get(&self.0).is_some_and(|v| !v.as_bytes().is_empty());
        Box::pin(std::future::ready(if present {
            FallbackCredential::Valid
        } else {
            FallbackCredential::Absent
        }))
    }
}

/// How an accepted request is marked upstream, and its outcome label.
pub(crate) fn signature_state(auth: &RequestAuth) -> &'static str {
    match auth.source() {
        AuthSource::Signature if auth.is_verified() => "verified",
        _ if auth.warning().is_some_and(|w| w.code() != ErrorCode::SignatureRequired) => "failed",
        _ => "unsigned",
    }
}

/// Whether `name` is hop-by-hop (RFC 9110 §7.6.1), or named in the
/// `Connection` header (`listed`).
fn hop_by_hop(name: &HeaderName, listed: &[String]) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "te" | "trailer" | "transfer-encoding" | "upgrade"
    ) || name.as_str().starts_with("proxy-")
        || listed.iter().any(|l| l == name.as_str())
}

/// The header names a `Connection` header lists, lower-cased.
fn connection_listed(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

/// The client's headers as forwarded: without hop-by-hop headers, `Host`
/// and `Content-Length` (the upstream request's own), and any client-sent
/// `X-Adcp-Verified-*` / `X-Adcp-Signature`.
pub(crate) fn forwarded_headers(received: &HeaderMap) -> HeaderMap {
    let listed = connection_listed(received);
    let mut headers = HeaderMap::with_capacity(received.len() + 3);
    for (name, value) in received {
        let n = name.as_str();
        if hop_by_hop(name, &listed)
            || name == header::HOST
            || name == header::CONTENT_LENGTH
            || n == SIGNATURE_STATE
            || n.starts_with(VERIFIED_PREFIX)
        {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    headers
}

/// The upstream's response headers as relayed: without hop-by-hop headers.
fn relayed_headers(received: &HeaderMap) -> HeaderMap {
    let listed = connection_listed(received);
    let mut headers = HeaderMap::with_capacity(received.len());
    for (name, value) in received {
        if !hop_by_hop(name, &listed) {
            headers.append(name.clone(), value.clone());
        }
    }
    headers
}

/// How a forwarded request is marked upstream: its [`SIGNATURE_STATE`]
/// and, for a verified signature only, the signer behind the identity
/// headers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marking<'a> {
    state: &'static str,
    signer: Option<&'a VerifiedSigner>,
}

impl<'a> Marking<'a> {
    /// A request the verifier accepted, as its outcome says.
    pub(crate) fn of(auth: &'a RequestAuth) -> Self {
        Self {
            state: signature_state(auth),
            signer: auth.signer(),
        }
    }

    /// A request forwarded without verification (MCP's bodyless `GET` and
    /// `DELETE`): `unsigned`, never an identity, whatever headers it
    /// carries.
    pub(crate) const UNVERIFIED: Marking<'static> = Marking {
        state: "unsigned",
        signer: None,
    };
}

/// The server a request arrived through: its accept loop drops the sender
/// when it shuts down, which ends the relay of the streamed answers it
/// still carries ([`Gateway::serve`](crate::Gateway::serve) inserts it in
/// every request's extensions, as does the router of
/// [`Gateway::router_with_stream_stopper`](crate::Gateway::router_with_stream_stopper);
/// a gateway served through [`Gateway::router`](crate::Gateway::router)
/// by a server of one's own has none, and that server's graceful shutdown
/// waits for open streams).
#[derive(Debug, Clone)]
pub(crate) struct StreamsStop(pub(crate) tokio::sync::watch::Receiver<()>);

/// The HTTP client that proxies requests to the seller's server.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    base: url::Url,
    client: reqwest::Client,
    /// Bound on the upstream's answer up to its head, and on a body of
    /// known length.
    timeout: Duration,
    /// Bound on the silence between two chunks of a streamed body.
    idle_timeout: Option<Duration>,
    relays: Arc<RelayCounters>,
}

/// The received request's path and query as the verifier canonicalized
/// them for `@target-uri`: dot segments removed (RFC 3986, section 5.2.4,
/// which never climbs above the root), unreserved characters decoded,
/// percent-encodings in upper case. This, not the path as received, is
/// what the gateway forwards: the verified target and the forwarded one
/// are the same, and the upstream URL (a WHATWG parser, which resolves dot
/// segments too, `%2e` included, and reads `\` as `/`) cannot take
/// `/mcp/../../admin` out of the upstream's base path. `None` when the
/// target does not canonicalize.
pub(crate) fn canonical_target(parts: &Parts) -> Option<adcp_canon::CanonicalUrl> {
    let received = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    // The authority is irrelevant to the path; any valid one serves.
    adcp_canon::canonicalize_received(format!("http://upstream.invalid{received}")).ok()
}

/// `base` with the request's canonical path ([`canonical_target`])
/// appended to its path, and the canonical query.
fn upstream_url(base: &url::Url, target: &adcp_canon::CanonicalUrl) -> url::Url {
    let mut url = base.clone();
    let path = format!("{}{}", base.path().trim_end_matches('/'), target.path());
    url.set_path(&path);
    url.set_query(target.query());
    url
}

impl Proxy {
    /// A client for `base`: connecting and the answer's head bounded by
    /// `timeout`, a body of known length too; a streamed body by
    /// `idle_timeout` between chunks, if any. `relays` counts the relays.
    pub(crate) fn new(
        base: url::Url,
        timeout: Duration,
        idle_timeout: Option<Duration>,
        relays: Arc<RelayCounters>,
    ) -> Result<Self, GatewayError> {
        Ok(Self {
            base,
            client: streaming_http_client(timeout)?,
            timeout,
            idle_timeout,
            relays,
        })
    }

    /// Sends the request upstream: same method, the raw body (`None`: no
    /// body at all), the client's headers ([`forwarded_headers`]) and the
    /// gateway's marking. The upstream's status and headers (without
    /// hop-by-hop ones) make the response once its head has arrived
    /// (within the timeout); its body is relayed as it arrives by a task
    /// of its own ([`Relay`]), which ends when the body does, when the
    /// client goes away (the upstream request is then dropped, its
    /// connection closed), on a timeout, or when `stop` says the server
    /// is shutting down.
    pub(crate) async fn forward(
        &self,
        parts: &Parts,
        target: &adcp_canon::CanonicalUrl,
        body: Option<Bytes>,
        marking: Marking<'_>,
        stop: Option<StreamsStop>,
    ) -> Result<http::Response<Body>, UpstreamFailure> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut headers = forwarded_headers(&parts.headers);
        headers.insert(SIGNATURE_STATE, HeaderValue::from_static(marking.state));
        if let Some(signer) = marking.signer {
            for (name, value) in [(VERIFIED_AGENT, &signer.agent_url), (VERIFIED_KEYID, &signer.keyid)] {
                if let Ok(value) = HeaderValue::from_str(value) {
                    headers.insert(name, value);
                }
            }
        }
        let mut request = self
            .client
            .request(parts.method.clone(), upstream_url(&self.base, target))
            .headers(headers);
        if let Some(body) = body {
            request = request.body(body);
        }
        let upstream = match tokio::time::timeout_at(deadline, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) if !e.is_timeout() => return Err(UpstreamFailure::Connect),
            Ok(Err(_)) | Err(_) => return Err(UpstreamFailure::Timeout),
        };
        let mut response = http::Response::new(Body::empty());
        *response.status_mut() = upstream.status();
        *response.headers_mut() = relayed_headers(upstream.headers());
        if upstream.content_length() == Some(0) {
            // Nothing to relay (a `202` to a notification, the `200` of a
            // session's DELETE): the answer is complete with its head.
            self.relays.ended(RelayEnd::Complete);
            return Ok(response);
        }
        let streamed = is_streamed(upstream.headers());
        let (tx, rx) = tokio::sync::mpsc::channel(RELAY_CHUNKS);
        let cut = Arc::new(AtomicBool::new(false));
        let relay = Relay {
            deadline: (!streamed).then_some(deadline),
            idle_timeout: if streamed { self.idle_timeout } else { None },
            stop: stop.map(|s| s.0),
            relays: Arc::clone(&self.relays),
            cut: Arc::clone(&cut),
            streamed,
        };
        tokio::spawn(relay.run(upstream, tx));
        *response.body_mut() = Body::new(ChannelBody { rx, cut, done: false });
        Ok(response)
    }
}

/// Chunks a relay may hold for a client that reads slower than the
/// upstream writes (each at most what one read of the upstream gave).
const RELAY_CHUNKS: usize = 8;

/// Whether an upstream answer is streamed: an event stream, or a body
/// without `Content-Length` (chunked in HTTP/1.1, unframed in HTTP/2).
fn is_streamed(headers: &HeaderMap) -> bool {
    let event_stream = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"));
    event_stream || !headers.contains_key(header::CONTENT_LENGTH)
}

/// The task passing one upstream answer's body on to the client.
struct Relay {
    /// A body of known length must be done by then.
    deadline: Option<tokio::time::Instant>,
    /// A streamed body may be quiet at most this long between chunks.
    idle_timeout: Option<Duration>,
    /// Dropped by the accept loop when the server shuts down.
    stop: Option<tokio::sync::watch::Receiver<()>>,
    relays: Arc<RelayCounters>,
    /// Set when the relay is cut, so the client's body ends in an error
    /// rather than looking complete.
    cut: Arc<AtomicBool>,
    streamed: bool,
}

impl Relay {
    async fn run(self, mut upstream: reqwest::Response, tx: tokio::sync::mpsc::Sender<Bytes>) {
        let Self {
            deadline,
            idle_timeout,
            mut stop,
            relays,
            cut,
            streamed,
        } = self;
        let _open = streamed.then(|| relays.stream_opened());
        let end = loop {
            // The client's going away is noticed while the upstream is
            // quiet too (a stream may say nothing for minutes).
            let chunk = tokio::select! {
                biased;
                () = tx.closed() => break RelayEnd::ClientGone,
                () = stopped(stop.as_mut()) => break RelayEnd::Shutdown,
                chunk = next_chunk(&mut upstream, deadline, idle_timeout) => chunk,
            };
            let bytes = match chunk {
                Ok(Some(bytes)) => bytes,
                Ok(None) => break RelayEnd::Complete,
                Err(end) => break end,
            };
            tokio::select! {
                biased;
                sent = tx.send(bytes) => if sent.is_err() {
                    break RelayEnd::ClientGone;
                },
                () = stopped(stop.as_mut()) => break RelayEnd::Shutdown,
            }
        };
        if !matches!(end, RelayEnd::Complete | RelayEnd::ClientGone) {
            cut.store(true, Ordering::Release);
        }
        // The upstream answer is dropped here: its connection is closed
        // unless the body was read to its end.
        drop(tx);
        drop(upstream);
        relays.ended(end);
    }
}

/// The upstream body's next chunk (`None` at its end), within the
/// deadline or the idle timeout.
async fn next_chunk(
    upstream: &mut reqwest::Response,
    deadline: Option<tokio::time::Instant>,
    idle_timeout: Option<Duration>,
) -> Result<Option<Bytes>, RelayEnd> {
    let chunk = match (deadline, idle_timeout) {
        (Some(at), _) => tokio::time::timeout_at(at, upstream.chunk())
            .await
            .map_err(|_| RelayEnd::Timeout)?,
        (None, Some(idle)) => tokio::time::timeout(idle, upstream.chunk())
            .await
            .map_err(|_| RelayEnd::IdleTimeout)?,
        (None, None) => upstream.chunk().await,
    };
    chunk.map_err(|_| RelayEnd::UpstreamError)
}

/// Returns when the server shuts down (never without a server's signal).
async fn stopped(stop: Option<&mut tokio::sync::watch::Receiver<()>>) {
    match stop {
        // Nothing is ever sent: `changed` fails once the sender is dropped.
        Some(stop) => while stop.changed().await.is_ok() {},
        None => std::future::pending().await,
    }
}

/// A response body fed by the task reading the upstream's; it ends in an
/// error when the relay was cut.
struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    cut: Arc<AtomicBool>,
    done: bool,
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.done {
            return std::task::Poll::Ready(None);
        }
        match std::task::ready!(self.rx.poll_recv(cx)) {
            Some(chunk) => std::task::Poll::Ready(Some(Ok(http_body::Frame::data(chunk)))),
            None => {
                self.done = true;
                if self.cut.load(Ordering::Acquire) {
                    std::task::Poll::Ready(Some(Err(axum::Error::new("the upstream answer was cut"))))
                } else {
                    std::task::Poll::Ready(None)
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn upstream(received: &str) -> Option<String> {
        let (parts, ()) = http::Request::post(received).body(()).ok()?.into_parts();
        let target = canonical_target(&parts)?;
        let base = url::Url::parse("http://upstream.example/base/").ok()?;
        Some(upstream_url(&base, &target).to_string())
    }

    #[test]
    fn the_upstream_gets_the_verified_path_under_its_base() {
        for (received, forwarded) in [
            ("/mcp?x=1", "http://upstream.example/base/mcp?x=1"),
            (
                "/adcp/./create_media_buy",
                "http://upstream.example/base/adcp/create_media_buy",
            ),
            ("/mcp/../../admin", "http://upstream.example/base/admin"),
            ("/mcp/%2e%2E/admin", "http://upstream.example/base/admin"),
            ("/a%2Fb/%3A", "http://upstream.example/base/a%2Fb/%3A"),
            ("/%7euser", "http://upstream.example/base/~user"),
        ] {
            assert_eq!(upstream(received).as_deref(), Some(forwarded), "{received}");
        }
    }

    proptest! {
        /// Whatever the received path, the upstream gets the canonical one
        /// unchanged by its URL parser, under the base path.
        #[test]
        fn no_received_path_leaves_the_base(
            segments in prop::collection::vec(
                prop::sample::select(vec!["a", "b", ".", "..", "%2e", "%2E", ".%2e", "%2e.", "%2F", ":", "x.y", ".a", "...", "", "%7e", "%41"]),
                0..8,
            )
        ) {
            let received = format!("/{}", segments.join("/"));
            let (parts, ()) = http::Request::post(received.as_str()).body(()).unwrap().into_parts();
            let target = canonical_target(&parts).unwrap();
            let base = url::Url::parse("http://upstream.example/base/").unwrap();
            let url = upstream_url(&base, &target);
            prop_assert_eq!(url.path(), format!("/base{}", target.path()));
            prop_assert!(url.path() == "/base/" || url.path().starts_with("/base/"), "{}", url.path());
            prop_assert!(!url.path().split('/').any(|s| s == "." || s == ".."));
        }
    }

    #[test]
    fn strips_hop_by_hop_and_gateway_headers() {
        let mut received = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer t"),
            ("mcp-session-id", "s1"),
            ("accept", "application/json, text/event-stream"),
            ("connection", "keep-alive, X-Custom-Hop"),
            ("x-custom-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-authorization", "Basic x"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("x-adcp-verified-agent", "https://forged.example"),
            ("x-adcp-verified-keyid", "forged"),
            ("x-adcp-signature", "verified"),
            ("host", "seller.example"),
            ("content-length", "2"),
        ] {
            received.append(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        let forwarded = forwarded_headers(&received);
        let names: Vec<&str> = forwarded.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["authorization", "mcp-session-id", "accept"]);
    }
}
