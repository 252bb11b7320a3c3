//! [`SigningClient`]: signs each outbound AdCP call as the counterparty's
//! `request_signing` capability asks, and sends it.

use super::capability::{CapabilityCache, DEFAULT_CAPABILITY_TTL};
use super::counterparty::Counterparty;
use super::decision::{SigningDecision, SigningReason};
use super::error::ClientError;
use super::response::{json_body, signature_error, CallResponse, MAX_RESPONSE_BYTES};
use super::target::TargetPolicy;
use super::transport::Transport;
use crate::request_signing_capability;
use adcp_sigbase::Message;
use adcp_sign::{
    Body, BoxSigner, Clock, HttpSigner, Nonce, OsRandom, Signer, SigningProfile, SystemClock, UnsignedRequest,
    JSON_CONTENT_TYPE,
};
use adcp_verify::request_policy::{
    is_operation_name, is_protocol_method_name, resolve, ResolvedRequest, VerifierCapability,
};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The operation that primes a counterparty's capability.
pub(crate) const CAPABILITIES_OPERATION: &str = "get_adcp_capabilities";

/// The challenge code that makes an unsigned call worth one signed retry.
const SIGNATURE_REQUIRED: &str = "request_signature_required";

/// The default per-attempt timeout: 30 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Builds a [`SigningClient`]; see [`SigningClient::builder`].
#[must_use]
pub struct SigningClientBuilder {
    signer: BoxSigner,
    http: Option<reqwest::Client>,
    policy: TargetPolicy,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    timeout: Duration,
    sign_unlisted: bool,
}

impl core::fmt::Debug for SigningClientBuilder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SigningClientBuilder")
            .field("keyid", &self.signer.key_id())
            .field("policy", &self.policy)
            .field("ttl", &self.ttl)
            .field("timeout", &self.timeout)
            .field("sign_unlisted", &self.sign_unlisted)
            .finish_non_exhaustive()
    }
}

impl SigningClientBuilder {
    /// Sends through `client` instead of the client the [`TargetPolicy`]
    /// implies. The target URL is still checked against the policy before
    /// every request, but connect-time address pinning, redirects (keep
    /// them off: a redirect re-targets a signed request), proxies and TLS
    /// are then `client`'s configuration: build it with
    /// `policy.destination_policy().dns_resolver()` to keep the SSRF
    /// guarantees.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The SSRF rules (default: [`TargetPolicy::default`], public HTTPS
    /// only).
    pub fn target_policy(mut self, policy: TargetPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The clock that stamps `created` and ages cached capabilities
    /// (default: the system clock).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How long a primed capability is used before it is primed again
    /// (default [`DEFAULT_CAPABILITY_TTL`], 15 minutes).
    pub fn capability_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The per-attempt timeout of the built-in client (default
    /// [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether to sign calls in none of the counterparty's lists when it
    /// supports signing (default `true`; see
    /// [`SigningReason::Unlisted`] for why).
    pub fn sign_unlisted(mut self, sign: bool) -> Self {
        self.sign_unlisted = sign;
        self
    }

    /// Checks the key and builds the client.
    ///
    /// # Errors
    ///
    /// [`ClientError::Sign`] when the key cannot sign requests (`keyid`,
    /// algorithm, a key published as `webhook-signing`);
    /// [`ClientError::Transport`] when the HTTP client cannot be built.
    pub fn build(self) -> Result<SigningClient, ClientError> {
        HttpSigner::request(&self.signer)?;
        let http = match self.http {
            Some(client) => client,
            None => self.policy.client(self.timeout).map_err(ClientError::Transport)?,
        };
        Ok(SigningClient {
            inner: Arc::new(Inner {
                signer: self.signer,
                http,
                policy: self.policy,
                clock: self.clock,
                cache: CapabilityCache::new(self.ttl),
                sign_unlisted: self.sign_unlisted,
                next_id: AtomicU64::new(1),
                priming: tokio::sync::Mutex::new(()),
            }),
        })
    }
}

/// A buyer's (or any caller's) AdCP client that signs each call the way
/// the counterparty's `request_signing` capability asks.
///
/// For each call it:
///
/// 1. builds the body once for the [`Transport`] and checks the URL
///    against the [`TargetPolicy`];
/// 2. resolves the operation and JSON-RPC method from those bytes exactly
///    as a verifier does (`adcp_verify::request_policy::resolve` under the
///    transport's binding);
/// 3. takes the counterparty's capability: supplied
///    ([`Counterparty::with_capability`]), cached, or primed with an
///    unsigned `get_adcp_capabilities` call over the same transport and
///    cached per agent URL for the TTL;
/// 4. decides ([`SigningDecision`]): `required_for`, `warn_for` and
///    `supported_for` calls (either namespace) are signed, anything is
///    signed when the counterparty supports signing and lists nothing,
///    calls in no list are signed unless
///    [`SigningClientBuilder::sign_unlisted`] is off, nothing is signed
///    when `supported` is false; the profile follows the
///    [`SigningVersion`](crate::SigningVersion) and `covers_content_digest`;
/// 5. sends it (the signed URL is the canonical `@target-uri`), with a
///    fresh nonce and window per attempt over the same body bytes;
/// 6. on `401` with `WWW-Authenticate: Signature
///    error="request_signature_required"` to an unsigned attempt, primes
///    the capability again and retries once, signed.
///
/// Cheap to clone; clones share the capability cache.
#[derive(Clone)]
pub struct SigningClient {
    inner: Arc<Inner>,
}

struct Inner {
    signer: BoxSigner,
    http: reqwest::Client,
    policy: TargetPolicy,
    clock: Arc<dyn Clock>,
    cache: CapabilityCache,
    sign_unlisted: bool,
    next_id: AtomicU64,
    /// Serializes priming, so concurrent first calls prime once.
    priming: tokio::sync::Mutex<()>,
}

impl core::fmt::Debug for SigningClient {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SigningClient")
            .field("keyid", &self.inner.signer.key_id())
            .field("policy", &self.inner.policy)
            .field("cache", &self.inner.cache)
            .finish_non_exhaustive()
    }
}

impl SigningClient {
    /// Starts a client signing with `signer` (a
    /// [`SoftwareSigner`](adcp_sign::SoftwareSigner), a KMS or HSM
    /// backend: any [`Signer`]); its `keyid` is the signer's
    /// [`Signer::key_id`].
    pub fn builder(signer: impl Signer + 'static) -> SigningClientBuilder {
        SigningClientBuilder {
            signer: BoxSigner::new(signer),
            http: None,
            policy: TargetPolicy::default(),
            clock: Arc::new(SystemClock),
            ttl: DEFAULT_CAPABILITY_TTL,
            timeout: DEFAULT_TIMEOUT,
            sign_unlisted: true,
        }
    }

    /// The capability cache (primed capabilities per agent URL).
    #[must_use]
    pub fn capability_cache(&self) -> &CapabilityCache {
        &self.inner.cache
    }

    /// Calls AdCP `operation` on `counterparty` with `arguments`.
    ///
    /// # Errors
    ///
    /// [`ClientError`]; any HTTP answer, whatever its status, is a
    /// [`CallResponse`].
    pub async fn call(
        &self,
        counterparty: &Counterparty,
        operation: &str,
        arguments: &Value,
    ) -> Result<CallResponse, ClientError> {
        if !is_operation_name(operation) {
            return Err(ClientError::InvalidCall {
                name: operation.to_owned(),
                reason: "not an AdCP operation name ([a-z][a-z0-9_]*)",
            });
        }
        let (url, body) = self.operation_request(counterparty.url(), counterparty.transport(), operation, arguments)?;
        self.send(counterparty, &url, &body).await
    }

    /// Calls JSON-RPC protocol method `method` (`tasks/cancel`, `GetTask`,
    /// …) on an MCP or A2A `counterparty`; signed per the
    /// `protocol_methods_*` lists.
    ///
    /// # Errors
    ///
    /// [`ClientError::InvalidCall`] on the raw transport or for a name that
    /// is not a protocol method; then as [`SigningClient::call`].
    pub async fn call_method(
        &self,
        counterparty: &Counterparty,
        method: &str,
        params: &Value,
    ) -> Result<CallResponse, ClientError> {
        if !is_protocol_method_name(method) {
            return Err(ClientError::InvalidCall {
                name: method.to_owned(),
                reason: "not a JSON-RPC protocol method name",
            });
        }
        let id = self.next_id();
        let envelope = counterparty
            .transport()
            .method_body(method, params.clone(), id)
            .ok_or_else(|| ClientError::InvalidCall {
                name: method.to_owned(),
                reason: "the raw transport has no JSON-RPC envelope",
            })?;
        let body = Body::json(&envelope)?;
        self.send(counterparty, counterparty.url(), &body).await
    }

    /// The counterparty's capability: supplied, cached, or primed now.
    ///
    /// # Errors
    ///
    /// As the priming call: [`ClientError::Untrusted`],
    /// [`ClientError::Transport`], [`ClientError::Capability`].
    pub async fn capability(&self, counterparty: &Counterparty) -> Result<VerifierCapability, ClientError> {
        if let Some(capability) = counterparty.capability() {
            return Ok(capability.clone());
        }
        if let Some(capability) = self.inner.cache.get(counterparty.url(), self.inner.clock.now()) {
            return Ok(capability);
        }
        let _priming = self.inner.priming.lock().await;
        // Another call may have primed it while this one waited.
        if let Some(capability) = self.inner.cache.get(counterparty.url(), self.inner.clock.now()) {
            return Ok(capability);
        }
        self.prime(counterparty).await
    }

    /// Primes the capability of `counterparty` now, whatever the cache
    /// holds, and caches it.
    ///
    /// The call is unsigned: the capability is what tells the client how
    /// to sign, and `get_adcp_capabilities` is the discovery bootstrap
    /// (the spec exempts it from key requirements for the same reason).
    ///
    /// # Errors
    ///
    /// As [`SigningClient::capability`].
    pub async fn prime(&self, counterparty: &Counterparty) -> Result<VerifierCapability, ClientError> {
        let agent = counterparty.url();
        let result = fetch_capabilities(&self.inner.http, &self.inner.policy, counterparty, self.next_id()).await?;
        let failed = |reason: String| ClientError::Capability {
            agent: agent.to_owned(),
            reason,
        };
        let capability = request_signing_capability(&result).map_err(|e| failed(e.to_string()))?;
        self.inner
            .cache
            .insert(agent, capability.clone(), self.inner.clock.now());
        tracing::debug!(
            agent,
            supported = capability.supported(),
            "primed request_signing capability"
        );
        Ok(capability)
    }

    fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The URL and body (serialized once) of an operation call.
    fn operation_request(
        &self,
        agent: &str,
        transport: Transport,
        operation: &str,
        arguments: &Value,
    ) -> Result<(String, Body), ClientError> {
        let message_id = Nonce::generate(&OsRandom)?;
        let envelope = transport.operation_body(operation, arguments.clone(), self.next_id(), message_id.as_str());
        Ok((transport.url(agent, operation), Body::json(&envelope)?))
    }

    /// Decides, sends, and retries once signed on a signature-required
    /// challenge.
    async fn send(&self, counterparty: &Counterparty, url: &str, body: &Body) -> Result<CallResponse, ClientError> {
        self.inner.policy.check(url)?;
        let transport = counterparty.transport();
        let request = resolve_own(transport, url, body)?;
        let capability = self.capability(counterparty).await?;
        let incompatible = |reason| ClientError::IncompatibleCapability {
            agent: counterparty.url().to_owned(),
            reason,
        };
        let (mut decision, profile) =
            SigningDecision::decide(&capability, &request, counterparty.version(), self.inner.sign_unlisted)
                .map_err(incompatible)?;
        let (mut status, mut headers, mut bytes) = self.attempt(url, body, profile, transport).await?;
        let mut attempts = 1;
        if !decision.signed
            && status == http::StatusCode::UNAUTHORIZED
            && signature_error(&headers).as_deref() == Some(SIGNATURE_REQUIRED)
        {
            // The capability was stale (or never listed the call): refresh
            // it, then sign whatever it now says. A signed request that is
            // refused is never retried unsigned (spec: "A client MUST NOT
            // automatically retry unsigned or without digest coverage").
            let refreshed = match counterparty.capability() {
                Some(supplied) => supplied.clone(),
                None => {
                    let _priming = self.inner.priming.lock().await;
                    self.prime(counterparty).await?
                }
            };
            let (mut retry, mut profile) =
                SigningDecision::decide(&refreshed, &request, counterparty.version(), self.inner.sign_unlisted)
                    .map_err(incompatible)?;
            if !retry.signed {
                (retry, profile) =
                    SigningDecision::with_reason(&refreshed, counterparty.version(), SigningReason::Challenged, true)
                        .map_err(incompatible)?;
            }
            tracing::debug!(
                url,
                reason = retry.reason.as_str(),
                "retrying signed after request_signature_required"
            );
            (status, headers, bytes) = self.attempt(url, body, profile, transport).await?;
            decision = retry;
            attempts = 2;
        }
        Ok(CallResponse {
            status,
            headers,
            body: bytes,
            decision,
            attempts,
            transport,
        })
    }

    /// One HTTP attempt: signed under `profile` (fresh nonce and window)
    /// or unsigned, always over `body`'s bytes.
    async fn attempt(
        &self,
        url: &str,
        body: &Body,
        profile: Option<SigningProfile>,
        transport: Transport,
    ) -> Result<(http::StatusCode, http::HeaderMap, bytes::Bytes), ClientError> {
        let http = &self.inner.http;
        let builder = match profile {
            Some(profile) => {
                let signer = HttpSigner::new(profile, &self.inner.signer)?.with_clock(Arc::clone(&self.inner.clock));
                let signed = signer.sign(&UnsignedRequest::post(url, body)).await?;
                let mut builder = http.post(signed.url());
                for (name, value) in signed.headers() {
                    builder = builder.header(*name, value);
                }
                builder
            }
            None => http.post(url).header(http::header::CONTENT_TYPE, JSON_CONTENT_TYPE),
        };
        exchange(builder, body, transport).await
    }
}

/// Resolves the request the client is about to send the way the
/// counterparty's verifier will.
fn resolve_own(transport: Transport, url: &str, body: &Body) -> Result<ResolvedRequest, ClientError> {
    let msg = Message::request("POST", url)
        .with_header("Content-Type", JSON_CONTENT_TYPE)
        .with_body(body.as_bytes());
    resolve(transport.binding(), &msg).map_err(|e| ClientError::InvalidCall {
        name: url.to_owned(),
        reason: if e.code_str() == "request_target_uri_malformed" {
            "the operation URL cannot be canonicalized"
        } else {
            "the request does not resolve to exactly one operation"
        },
    })
}

/// Sends `builder` with `body` (the `Accept` header of `transport`) and
/// reads the answer, at most [`MAX_RESPONSE_BYTES`] of body.
async fn exchange(
    mut builder: reqwest::RequestBuilder,
    body: &Body,
    transport: Transport,
) -> Result<(http::StatusCode, http::HeaderMap, bytes::Bytes), ClientError> {
    // MCP streamable HTTP answers JSON or an event stream.
    let accept = match transport {
        Transport::Mcp => "application/json, text/event-stream",
        Transport::A2a | Transport::Raw => "application/json",
    };
    builder = builder.header(http::header::ACCEPT, accept);
    let mut response = builder
        .body(body.as_bytes().to_vec())
        .send()
        .await
        .map_err(|e| transport_error(&e))?;
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let mut bytes = bytes::BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(ClientError::Transport(format!(
                "response body longer than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, headers, bytes.freeze()))
}

/// The counterparty's `get_adcp_capabilities` result (the AdCP document,
/// out of its MCP / A2A envelope): one unsigned call to the agent URL
/// through `http` after `policy`'s pre-send check. `http` must be a client
/// of the policy's kind (pinning resolver, no redirects, timeouts, as
/// [`TargetPolicy`] builds them); the body is capped at
/// [`MAX_RESPONSE_BYTES`].
pub(crate) async fn fetch_capabilities(
    http: &reqwest::Client,
    policy: &TargetPolicy,
    counterparty: &Counterparty,
    id: u64,
) -> Result<Value, ClientError> {
    let agent = counterparty.url();
    let transport = counterparty.transport();
    let message_id = Nonce::generate(&OsRandom)?;
    let envelope = transport.operation_body(CAPABILITIES_OPERATION, json!({}), id, message_id.as_str());
    let url = transport.url(agent, CAPABILITIES_OPERATION);
    let body = Body::json(&envelope)?;
    policy.check(&url)?;
    let failed = |reason: String| ClientError::Capability {
        agent: agent.to_owned(),
        reason,
    };
    let builder = http.post(&url).header(http::header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    let (status, headers, bytes) = exchange(builder, &body, transport).await?;
    if !status.is_success() {
        return Err(failed(format!(
            "get_adcp_capabilities answered HTTP {}",
            status.as_u16()
        )));
    }
    let document = json_body(&headers, &bytes).ok_or_else(|| failed("the answer is not JSON".to_owned()))?;
    transport.result(&document).map_err(failed)
}

/// A transport failure, with the SSRF refusal named when the pinning
/// resolver refused the address.
fn transport_error(e: &reqwest::Error) -> ClientError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(ssrf) = err.downcast_ref::<adcp_jwks::SsrfError>() {
            return ClientError::Untrusted(ssrf.clone());
        }
        source = err.source();
    }
    let what = if e.is_connect() {
        "connection failed"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_redirect() {
        "redirect refused"
    } else {
        "request failed"
    };
    ClientError::Transport(format!("{what}: {e}"))
}
