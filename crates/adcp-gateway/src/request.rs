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

use crate::forward::{http_client, VERIFIED_AGENT, VERIFIED_KEYID};
use crate::metrics::UpstreamFailure;
use crate::GatewayError;
use adcp_request::{Authenticator, AuthenticatorFuture, FallbackCredential, RequestAuth, ResolvedRequest};
use adcp_verify::request_policy::{AuthSource, Binding, VerifierCapability};
use adcp_verify::{ErrorCode, Profile, ReplayStore};
use axum::body::{Body, Bytes};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
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

/// The HTTP client that proxies requests to the seller's server.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    base: url::Url,
    client: reqwest::Client,
}

impl Proxy {
    /// A client for `base`, giving up after `timeout` (connect, answer
    /// and the whole response body).
    pub(crate) fn new(base: url::Url, timeout: Duration) -> Result<Self, GatewayError> {
        Ok(Self {
            base,
            client: http_client(timeout)?,
        })
    }

    /// `base` with the request's path appended to its path, and the
    /// request's query.
    pub(crate) fn target(&self, parts: &Parts) -> url::Url {
        let mut url = self.base.clone();
        let path = format!("{}{}", self.base.path().trim_end_matches('/'), parts.uri.path());
        url.set_path(&path);
        url.set_query(parts.uri.query());
        url
    }

    /// Sends the request upstream: same method, the raw body, the client's
    /// headers ([`forwarded_headers`]) and the gateway's marking. The
    /// upstream's status, headers (without hop-by-hop ones) and body,
    /// streamed as it arrives, make the response.
    pub(crate) async fn forward(
        &self,
        parts: &Parts,
        body: Bytes,
        auth: &RequestAuth,
    ) -> Result<http::Response<Body>, UpstreamFailure> {
        let mut headers = forwarded_headers(&parts.headers);
        headers.insert(SIGNATURE_STATE, HeaderValue::from_static(signature_state(auth)));
        if let Some(signer) = auth.signer() {
            for (name, value) in [(VERIFIED_AGENT, &signer.agent_url), (VERIFIED_KEYID, &signer.keyid)] {
                if let Ok(value) = HeaderValue::from_str(value) {
                    headers.insert(name, value);
                }
            }
        }
        let request = self
            .client
            .request(parts.method.clone(), self.target(parts))
            .headers(headers)
            .body(body);
        let mut upstream = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() => return Err(UpstreamFailure::Timeout),
            Err(_) => return Err(UpstreamFailure::Connect),
        };
        let mut response = http::Response::new(Body::empty());
        *response.status_mut() = upstream.status();
        *response.headers_mut() = relayed_headers(upstream.headers());
        // Streamed: each chunk is passed on as it arrives (an SSE answer
        // included), bounded in time by the upstream timeout.
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        tokio::spawn(async move {
            loop {
                match upstream.chunk().await {
                    Ok(Some(chunk)) => {
                        if tx.send(Ok(chunk)).await.is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = tx.send(Err(axum::Error::new(e))).await;
                        break;
                    }
                }
            }
        });
        *response.body_mut() = Body::new(ChannelBody(rx));
        Ok(response)
    }
}

/// A response body fed by the task reading the upstream's.
struct ChannelBody(tokio::sync::mpsc::Receiver<Result<Bytes, axum::Error>>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|chunk| chunk.map(http_body::Frame::data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
