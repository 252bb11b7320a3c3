//! The buyer side: verify each webhook, then apply it exactly once.
//!
//! The user-facing documentation is the crate root's (these types are
//! re-exported there).

mod answer;
mod challenge;
mod layer;
mod metrics;
mod subscriptions;
mod webhook;

pub use answer::{error_body, outcome_message};
pub use layer::{ReceiverLayer, ReceiverService};
pub use metrics::{outcome, Metrics};
pub use subscriptions::{
    DeliveryAuthMode, Registration, RegistrationError, StaticSubscriptions, SubscriptionScope, Subscriptions,
    SubscriptionsError,
};
pub use webhook::Webhook;

use crate::payload::{AcceptKinds, Channel, WebhookPayload};
use adcp_sigbase::Message;
use adcp_sigbase::{Clock, SystemClock};
use adcp_store::{ClaimOutcome, ClaimToken, Fingerprint, IdempotencyError, IdempotencyStore, SenderKey};
use adcp_strict_json::jcs;
use adcp_verify::admission::AdmissionMonitor;
use adcp_verify::legacy::{VerifiedWebhook, WebhookAuthMode};
use adcp_verify::Durability;
use adcp_verify::KeyResolver;
use adcp_verify::Profile;
use adcp_verify::ReplayStore;
use adcp_verify::Verifier;
use adcp_verify::VerifyError;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use http_body::Body as HttpBody;
use http_body_util::BodyExt;
use std::fmt;
use std::sync::Arc;
use tracing::Instrument;

/// The tracing target of receiver events.
pub const RECEIVER_TRACING_TARGET: &str = "adcp_webhook::receiver";

/// The spec's recommended body limit: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The `Retry-After` seconds of a `503` for an outage the receiver cannot
/// time: the replay or idempotency store did not answer, key discovery
/// failed transiently (`webhook_signature_jwks_unavailable`), or a
/// completion was not recorded.
///
/// Two seconds: long enough that a sender retrying at once does not
/// hammer a dependency that is failing over (a Redis or PostgreSQL
/// failover, a reconnect, take seconds), short enough not to delay
/// delivery after a blip. It is a floor, not a schedule: the sender's own
/// exponential backoff (`adcp-webhook`'s sender waits at least this, then
/// longer) takes over in a longer outage. `adcp-jwks`' resolver remembers
/// a failed discovery for 30–60 s (its refetch cooldown, its negative
/// cache), so retries sooner are answered from that memory, without a
/// fetch.
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 2;

type DynVerifier = Verifier<Arc<dyn KeyResolver>, Arc<dyn ReplayStore>, Arc<dyn Clock>>;

/// A non-dispatch answer: the status and the few headers the spec allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    status: StatusCode,
    www_authenticate: Option<String>,
    retry_after: Option<u64>,
    outcome: &'static str,
    message: &'static str,
    /// The body of a `2xx` that has one (a challenge's echo).
    body: Option<Bytes>,
}

impl Reply {
    fn new(status: StatusCode, outcome: &'static str) -> Self {
        Self {
            status,
            www_authenticate: None,
            retry_after: None,
            outcome,
            message: answer::outcome_message(outcome),
            body: None,
        }
    }

    /// `200` with the challenge response (`{"challenge": "<value>"}`).
    fn challenge_answer(response: &serde_json::Value) -> Self {
        Self {
            body: Some(Bytes::from(response.to_string())),
            ..Self::new(StatusCode::OK, outcome::CHALLENGE_ANSWERED)
        }
    }

    /// A reply for a code that carries its own fixed message.
    fn with_message(status: StatusCode, outcome: &'static str, message: &'static str) -> Self {
        Self {
            message,
            ..Self::new(status, outcome)
        }
    }

    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The `WWW-Authenticate` value (`Signature error="<code>"`) of a `401`.
    #[must_use]
    pub fn www_authenticate(&self) -> Option<&str> {
        self.www_authenticate.as_deref()
    }

    /// The `Retry-After` seconds of a `503`: the claim's remaining lease
    /// for an event in progress, [`UNAVAILABLE_RETRY_AFTER_SECS`] for an
    /// outage. `None` for every other status.
    #[must_use]
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// The outcome label: an [`outcome`] constant or a verifier code.
    #[must_use]
    pub fn outcome(&self) -> &'static str {
        self.outcome
    }

    /// The fixed message that accompanies [`Self::outcome`] in the body of
    /// a non-`2xx` answer (never details of the request or the failure).
    #[must_use]
    pub fn message(&self) -> &'static str {
        self.message
    }

    /// The response: status, the challenge or `Retry-After` if any, and
    /// for a non-`2xx` status the JSON body `{"error": "<code>",
    /// "message": "<fixed text>"}` (a `2xx` has an empty body). Nothing
    /// else is disclosed to the sender.
    #[must_use]
    pub fn into_response<B: From<Bytes>>(self) -> http::Response<B> {
        let success = self.status.is_success();
        let json = !success || self.body.is_some();
        let body = match (success, self.body) {
            (true, body) => body.unwrap_or_default(),
            (false, _) => answer::error_body(self.outcome, self.message),
        };
        let mut response = http::Response::new(B::from(body));
        *response.status_mut() = self.status;
        if json {
            response
                .headers_mut()
                .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(challenge) = self.www_authenticate.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response.headers_mut().insert(http::header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A claim on a notification for its first delivery.
enum NotificationClaim {
    /// Held: this is the first delivery being applied.
    Held(NotificationLock),
    /// A first delivery of it completed (its record is to be read).
    FirstCompleted,
    /// Another delivery of it is being applied.
    InFlight,
}

/// What the receiver decided about one request.
#[derive(Debug)]
pub enum Decision {
    /// Answer with this reply; do not run the handler.
    Reply(Reply),
    /// Verified and claimed: run the handler on the [`Delivery`], then
    /// [`Receiver::complete`] (success) or [`Receiver::release`] (failure).
    Deliver(Delivery),
}

/// A verified, claimed event, owned by the caller until completed or
/// released.
#[derive(Debug, Clone)]
pub struct Delivery {
    webhook: Webhook,
    token: ClaimToken,
    span: tracing::Span,
    /// The claim on the notification held while this first delivery of
    /// it is applied (see [`NotificationLock`]).
    notification: Option<NotificationLock>,
}

/// While the first delivery of a `notification_id` is being applied, the
/// receiver holds a claim on the notification itself, under a sender of its
/// own ([`NotificationLock::sender`]) and the `notification_id` as the key:
/// a delivery of the same notification under another `idempotency_key`
/// that arrives meanwhile cannot tell it is a re-emission yet (the first
/// one's notification record is written when it completes), so it is
/// answered `503` ([`outcome::REEMISSION_IN_FLIGHT`]) and never delivered
/// unmarked; the sender's retry finds the record and is delivered marked.
/// Completed with the delivery (so a later claim says a first delivery
/// completed: the record is read again), released with it.
#[derive(Debug, Clone)]
struct NotificationLock {
    sender: String,
    notification_id: String,
    token: ClaimToken,
}

impl NotificationLock {
    /// The sender the claims on `sender`'s notifications are kept under:
    /// no verified sender has this form.
    fn sender(sender: &str) -> String {
        format!("urn:adcp-webhook:notification-in-flight:{sender}")
    }

    /// Every claim on a notification carries the same payload.
    const FINGERPRINT: [u8; 1] = [0];

    fn key(&self) -> SenderKey<'_> {
        SenderKey {
            sender: &self.sender,
            idempotency_key: &self.notification_id,
        }
    }
}

impl Delivery {
    /// What the handler gets.
    #[must_use]
    pub fn webhook(&self) -> &Webhook {
        &self.webhook
    }

    /// The fencing token of the claim.
    #[must_use]
    pub fn claim_token(&self) -> ClaimToken {
        self.token
    }

    /// The `webhook.receive` span of this request (run the handler in it;
    /// its `outcome` becomes `accepted` or `handler_failed`).
    #[must_use]
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }
}

/// Receiver settings.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Largest body accepted (default [`DEFAULT_MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
    /// The scheme the sender used to reach this endpoint, to rebuild the
    /// absolute `@target-uri` (default `https`; behind a TLS-terminating
    /// proxy it is still `https`).
    pub scheme: String,
    /// The registration's channel, when the receiver serves one kind of
    /// registration (a task's push notification config, an account's
    /// notification configs, …): it decides the kinds expected. `None`
    /// (the default): every kind is told apart by its shape, in the order
    /// documented in [`crate::payload`]. A2A deliveries carry no
    /// `idempotency_key`; they are deduplicated on their payload
    /// fingerprint.
    pub channel: Option<Channel>,
    /// Whether a payload of no named kind that carries a valid
    /// `idempotency_key` is delivered as [`PayloadKind::Generic`](crate::payload::PayloadKind)
    /// (the default, forward compatible) or refused.
    pub accept: AcceptKinds,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            scheme: "https".to_owned(),
            channel: None,
            accept: AcceptKinds::All,
        }
    }
}

/// Builds a [`Receiver`].
pub struct ReceiverBuilder {
    keys: Arc<dyn KeyResolver>,
    replay: Arc<dyn ReplayStore>,
    idempotency: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
    mode: WebhookAuthMode,
    legacy_sender: Option<String>,
    config: ReceiverConfig,
    admission: Option<AdmissionMonitor>,
    subscriptions: Option<Arc<dyn Subscriptions>>,
    metrics: Option<Arc<Metrics>>,
    batcher: Option<adcp_verify::SignatureBatcher>,
}

/// A receiver configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiverError {
    /// A legacy mode needs the sender identity its credential binds to.
    #[error("a legacy HMAC/Bearer registration needs a sender identity for dedup")]
    LegacySenderMissing,
    /// The scheme must be `http` or `https`.
    #[error("receiver scheme must be http or https")]
    InvalidScheme,
    /// The body limit must be positive.
    #[error("body limit must be positive")]
    InvalidBodyLimit,
}

impl ReceiverBuilder {
    /// The clock (default: the system clock). Tests pin it.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The registration's authentication mode (default RFC 9421). A legacy
    /// mode needs `sender`: the identity the credential binds to (the
    /// seller's agent URL, so that an HMAC→9421 migration keeps one
    /// dedup keyspace).
    #[must_use]
    pub fn mode(mut self, mode: WebhookAuthMode, sender: Option<String>) -> Self {
        self.mode = mode;
        self.legacy_sender = sender;
        self
    }

    /// Settings.
    #[must_use]
    pub fn config(mut self, config: ReceiverConfig) -> Self {
        self.config = config;
        self
    }

    /// The new-keyid admission-pressure monitor the spec asks webhook
    /// receivers to run.
    #[must_use]
    pub fn admission_monitor(mut self, monitor: AdmissionMonitor) -> Self {
        self.admission = Some(monitor);
        self
    }

    /// The buyer's subscriber registrations: with them the receiver
    /// answers activation challenges (RFC 9421-signed, every binding
    /// checked, single-use) and refuses a notification to a registered URL
    /// that does not match its registration (`403`, `subscription_mismatch`).
    /// Without them a challenge is refused and notifications are not held
    /// to a registration.
    #[must_use]
    pub fn subscriptions(mut self, subscriptions: Arc<dyn Subscriptions>) -> Self {
        self.subscriptions = Some(subscriptions);
        self
    }

    /// Checks the Ed25519 signatures of concurrent deliveries together on
    /// `batcher`'s threads (opt-in, for servers under load; see
    /// [`adcp_verify::SignatureBatcher`]). Default: each delivery's
    /// signature is checked on its own task.
    #[must_use]
    pub fn signature_batcher(mut self, batcher: adcp_verify::SignatureBatcher) -> Self {
        self.batcher = Some(batcher);
        self
    }

    /// Per-outcome counters to count in (default: the receiver's own, from
    /// zero): a receiver built again to replace another (new keys or
    /// registrations) keeps counting where the one it replaces stopped.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Builds the receiver.
    ///
    /// # Errors
    ///
    /// [`ReceiverError`].
    pub fn build(self) -> Result<Receiver, ReceiverError> {
        if self.mode.is_legacy() && self.legacy_sender.is_none() {
            return Err(ReceiverError::LegacySenderMissing);
        }
        if !matches!(self.config.scheme.as_str(), "http" | "https") {
            return Err(ReceiverError::InvalidScheme);
        }
        if self.config.max_body_bytes == 0 {
            return Err(ReceiverError::InvalidBodyLimit);
        }
        // One limit: the 413 here, and the verifier's and the legacy
        // checkers' own (before any cryptography, and step 14's JSON check).
        let limit = self.config.max_body_bytes;
        let mut verifier = Verifier::new(Profile::webhook_v1(), self.keys, self.replay, Arc::clone(&self.clock))
            .with_max_body_bytes(limit);
        if let Some(monitor) = self.admission {
            verifier = verifier.with_admission_monitor(monitor);
        }
        if let Some(batcher) = self.batcher {
            verifier = verifier.with_signature_batcher(batcher);
        }
        Ok(Receiver {
            inner: Arc::new(Inner {
                verifier,
                mode: self.mode.with_max_body_bytes(limit),
                legacy_sender: self.legacy_sender.unwrap_or_default(),
                idempotency: self.idempotency,
                clock: self.clock,
                config: self.config,
                metrics: self.metrics.unwrap_or_default(),
                subscriptions: self.subscriptions,
            }),
        })
    }
}

struct Inner {
    verifier: DynVerifier,
    mode: WebhookAuthMode,
    legacy_sender: String,
    idempotency: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
    config: ReceiverConfig,
    metrics: Arc<Metrics>,
    subscriptions: Option<Arc<dyn Subscriptions>>,
}

/// The framework-agnostic receiver. Cheap to clone (one `Arc`); share one
/// per webhook registration (mode, keys, stores).
///
/// ```
/// use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
/// use adcp_verify::StaticKeyResolver;
/// use adcp_verify::MemoryReplayStore;
/// use adcp_webhook::{Decision, Receiver};
/// use std::sync::Arc;
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let receiver = Receiver::builder(
///     Arc::new(StaticKeyResolver::new()),
///     Arc::new(MemoryReplayStore::webhook()),
///     Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default())?),
/// )
/// .build()?;
///
/// // Plain `http` types in, a decision out.
/// let request = http::Request::post("https://buyer.example/hooks")
///     .header("Host", "buyer.example")
///     .header("Content-Type", "text/plain")
///     .body(bytes::Bytes::from_static(b"{}"))?;
/// let Decision::Reply(reply) = receiver.decide(request).await else { unreachable!() };
/// assert_eq!(reply.status(), 415);
/// assert_eq!(receiver.metrics().get("unsupported_media_type"), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Receiver {
    inner: Arc<Inner>,
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("mode", &self.inner.mode.scheme())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Receiver {
    /// A builder with the seller's keys, the replay cache
    /// (`(keyid, nonce)`, ≈ 6 min) and the idempotency keyspace
    /// (`(sender, idempotency_key)`, ≥ 24 h). In a fleet both stores must
    /// be shared (Redis / PostgreSQL from `adcp-store`).
    pub fn builder(
        keys: Arc<dyn KeyResolver>,
        replay: Arc<dyn ReplayStore>,
        idempotency: Arc<dyn IdempotencyStore>,
    ) -> ReceiverBuilder {
        ReceiverBuilder {
            keys,
            replay,
            idempotency,
            clock: Arc::new(SystemClock),
            mode: WebhookAuthMode::Rfc9421,
            legacy_sender: None,
            config: ReceiverConfig::default(),
            admission: None,
            subscriptions: None,
            metrics: None,
            batcher: None,
        }
    }

    /// [`Receiver::builder`] with one store serving both duties.
    pub fn builder_with_store<S: adcp_store::Store + 'static>(
        keys: Arc<dyn KeyResolver>,
        store: Arc<S>,
    ) -> ReceiverBuilder {
        let replay: Arc<dyn ReplayStore> = store.clone();
        Self::builder(keys, replay, store)
    }

    /// The per-outcome counters.
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ReceiverConfig {
        &self.inner.config
    }

    /// Steps 1–7 for a request whose body is already in memory.
    pub async fn decide(&self, request: http::Request<Bytes>) -> Decision {
        let (parts, body) = request.into_parts();
        if body.len() > self.inner.config.max_body_bytes {
            return self.reply(Reply::new(StatusCode::PAYLOAD_TOO_LARGE, outcome::PAYLOAD_TOO_LARGE));
        }
        self.decide_parts(&parts, body).await
    }

    /// Steps 1–7 for a streaming body: the size is checked from
    /// `Content-Length` before any byte is read and enforced while reading.
    pub async fn decide_streaming<B>(&self, parts: &http::request::Parts, body: B) -> Decision
    where
        B: HttpBody<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let limit = self.inner.config.max_body_bytes;
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|len| len > limit as u64) {
            return self.reply(Reply::new(StatusCode::PAYLOAD_TOO_LARGE, outcome::PAYLOAD_TOO_LARGE));
        }
        if !is_json(&parts.headers) {
            return self.reply(Reply::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                outcome::UNSUPPORTED_MEDIA_TYPE,
            ));
        }
        let body = match http_body_util::Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return self.reply(Reply::new(StatusCode::PAYLOAD_TOO_LARGE, outcome::PAYLOAD_TOO_LARGE));
            }
            Err(_) => return self.reply(Reply::new(StatusCode::BAD_REQUEST, outcome::BODY_UNREADABLE)),
        };
        self.decide_parts(parts, body).await
    }

    /// Steps 2–7 once the body is read and within the limit.
    async fn decide_parts(&self, parts: &http::request::Parts, body: Bytes) -> Decision {
        let span = tracing::info_span!(
            target: RECEIVER_TRACING_TARGET,
            "webhook.receive",
            keyid = tracing::field::Empty,
            sender = tracing::field::Empty,
            idempotency_key = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let mut durability = Durability::durable();
        let decision = self
            .decide_inner(parts, body, &span, &mut durability)
            .instrument(span.clone())
            .await;
        let decision = self.once_durable(decision, durability).instrument(span.clone()).await;
        match &decision {
            Decision::Reply(reply) => {
                span.record("outcome", reply.outcome);
            }
            Decision::Deliver(_) => {
                span.record("outcome", "claimed");
            }
        }
        decision
    }

    /// A delivery stands only once the replay entry behind it is durable
    /// (the verifier answers before its commit, so that the claim shares
    /// it): a lost entry turns it into a `503`, giving back what was
    /// claimed, and the sender retries. A `2xx` reply waited already
    /// ([`Self::reply_once_durable`]); refusals need no durable entry.
    async fn once_durable(&self, decision: Decision, durability: Durability) -> Decision {
        let Decision::Deliver(delivery) = &decision else {
            return decision;
        };
        match durability.wait().await {
            Ok(()) => decision,
            Err(e) => {
                self.give_back_delivery(delivery).await;
                self.entry_lost(&e)
            }
        }
    }

    /// `answer`, counted and logged once the replay entry behind it is
    /// durable when it is a `2xx`; a `503` (and only that counted) when the
    /// entry was lost.
    async fn reply_once_durable(&self, answer: Reply, durability: &mut Durability) -> Decision {
        if !answer.status.is_success() {
            return self.reply(answer);
        }
        match std::mem::take(durability).wait().await {
            Ok(()) => self.reply(answer),
            Err(e) => self.entry_lost(&e),
        }
    }

    fn entry_lost(&self, e: &adcp_verify::StoreError) -> Decision {
        tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "replay entry lost before its commit: 503 (fail closed)");
        self.reply(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE))
    }

    /// Steps 2–7; `durability` receives the verifier's for the replay entry.
    async fn decide_inner(
        &self,
        parts: &http::request::Parts,
        body: Bytes,
        span: &tracing::Span,
        durability: &mut Durability,
    ) -> Decision {
        let inner = &*self.inner;
        if body.len() > inner.config.max_body_bytes {
            return self.reply(Reply::new(StatusCode::PAYLOAD_TOO_LARGE, outcome::PAYLOAD_TOO_LARGE));
        }
        if !is_json(&parts.headers) {
            return self.reply(Reply::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                outcome::UNSUPPORTED_MEDIA_TYPE,
            ));
        }
        let Some(msg) = self.message(parts, &body) else {
            return self.reply(Reply::new(StatusCode::BAD_REQUEST, outcome::TARGET_UNKNOWN));
        };
        let now = inner.clock.now();
        // Activation challenges are RFC 9421-signed even at URLs registered
        // for legacy delivery: with registrations configured, a legacy
        // receiver verifies an RFC 9421-signed request under the webhook
        // profile, and then accepts nothing but a challenge from it.
        let challenge_only = inner.subscriptions.is_some()
            && inner.mode.is_legacy()
            && msg.field_lines("signature-input").next().is_some();
        let verified = if challenge_only {
            inner
                .verifier
                .verify_early(&msg)
                .await
                .map(|(signer, durable)| (VerifiedWebhook::Rfc9421(signer), durable))
        } else {
            inner
                .mode
                .verify_early(&msg, &inner.verifier, inner.clock.as_ref())
                .await
        };
        let verified = match verified {
            Ok((v, durable)) => {
                *durability = durable;
                v
            }
            Err(e) => return self.reply(verify_reply(&e)),
        };
        let (sender, keyid) = match &verified {
            VerifiedWebhook::Rfc9421(signer) => (signer.agent_url.clone(), Some(signer.keyid.clone())),
            VerifiedWebhook::HmacSha256(_) | VerifiedWebhook::Bearer => (inner.legacy_sender.clone(), None),
        };
        span.record("sender", sender.as_str());
        if let Some(k) = &keyid {
            span.record("keyid", k.as_str());
        }
        // The verifier's step 14 (or the legacy body check) accepted the
        // bytes as strict JSON; this parse sees the same value.
        let Ok(payload) = serde_json::from_slice::<serde_json::Value>(&body) else {
            return self.reply(Reply::with_message(
                StatusCode::BAD_REQUEST,
                "webhook_body_malformed",
                adcp_verify::ErrorCode::BodyMalformed.message(adcp_verify::CodePrefix::Webhook),
            ));
        };
        // The registration of the URL it arrived at, if the buyer made one.
        let registration = match &inner.subscriptions {
            Some(subscriptions) => {
                let canonical = match &verified {
                    VerifiedWebhook::Rfc9421(signer) => Some(signer.target_uri.clone()),
                    _ => adcp_canon::canonicalize_received(msg.target_uri())
                        .ok()
                        .map(adcp_canon::CanonicalUrl::into_string),
                };
                match canonical {
                    Some(url) => match subscriptions.lookup(&url).await {
                        Ok(found) => found,
                        Err(e) => {
                            tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "subscriptions unavailable: 503 (fail closed)");
                            return self.reply(Reply::new(
                                StatusCode::SERVICE_UNAVAILABLE,
                                outcome::SUBSCRIPTIONS_UNAVAILABLE,
                            ));
                        }
                    },
                    None => None,
                }
            }
            None => None,
        };
        // One classification per delivery: the channel the registration of
        // this URL implies (account- or agent-level notifications), else the
        // configured one, else the documented shape-detection order.
        let channel = registration
            .as_deref()
            .map(|r| match r.scope {
                SubscriptionScope::Account(_) => Channel::AccountNotifications,
                SubscriptionScope::Agent => Channel::AgentNotifications,
            })
            .or(inner.config.channel);
        // The fingerprint first: classification consumes the value (a task
        // envelope's members move into the typed model, nothing is copied).
        let fingerprint = jcs::fingerprint(&payload);
        let typed = match WebhookPayload::classify_owned(payload, channel, inner.config.accept) {
            Ok(typed) => typed,
            Err(e) => return self.reply(Reply::with_message(StatusCode::BAD_REQUEST, e.code(), e.message())),
        };
        if let WebhookPayload::Challenge(challenge) = &typed {
            // Never reaches the handler or an upstream.
            let answer = self
                .answer_challenge(challenge, &verified, registration.as_deref(), now)
                .await;
            return self.reply_once_durable(answer, durability).await;
        }
        if challenge_only {
            // An RFC 9421 delivery at a URL registered for legacy auth.
            let e = adcp_verify::VerifyError::new(
                adcp_verify::ErrorCode::ModeMismatch,
                adcp_verify::CodePrefix::Webhook,
                adcp_verify::Step::new(0),
                "RFC 9421 delivery to a legacy registration",
            );
            return self.reply(verify_reply(&e));
        }
        if let Some(why) = registration
            .as_deref()
            .and_then(|r| Self::check_registration(&typed, &sender, r))
        {
            tracing::warn!(target: RECEIVER_TRACING_TARGET, reason = why, "notification refused: subscription mismatch");
            return self.reply(Reply::new(StatusCode::FORBIDDEN, outcome::SUBSCRIPTION_MISMATCH));
        }
        let idempotency_key = match typed.idempotency_key() {
            Some(key) => key.to_owned(),
            // A2A deliveries carry no key: their payload fingerprint is one.
            None => {
                let mut key = String::with_capacity(68);
                key.push_str("a2a:");
                for b in fingerprint {
                    key.push_str(&format!("{b:02x}"));
                }
                key
            }
        };
        span.record("idempotency_key", idempotency_key.as_str());
        // Notification identity: a known notification_id under a new key is
        // a re-emission of the first delivery.
        let notification_id = typed
            .notification_id()
            .filter(|id| crate::payload::is_valid_notification_id(id));
        // The first delivery's key, if the notification is known; whether
        // this is possibly its first delivery (known to a store that keeps
        // notification records): then the notification is claimed below.
        let (mut reemission_of, first_delivery) = match notification_id {
            Some(id) => match inner.idempotency.notification_origin(&sender, id, now).await {
                Ok(Some(first)) if first != idempotency_key => (Some(first), false),
                Ok(Some(_)) => (None, false),
                Ok(None) => (None, true),
                // A store without notification records: no re-emission
                // tracking, not an outage.
                Err(IdempotencyError::Unsupported(_)) => (None, false),
                Err(e) => {
                    tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "idempotency store unavailable: 503 (fail closed)");
                    return self.reply(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE));
                }
            },
            None => (None, false),
        };
        if reemission_of.is_some() && typed.is_terminal_task() {
            // The schema: re-emissions MUST NOT republish terminal effects.
            tracing::info!(target: RECEIVER_TRACING_TARGET, "re-emission of a terminal task result: answered, not delivered");
            let answer = Reply::new(StatusCode::OK, outcome::REEMISSION_SUPPRESSED);
            return self.reply_once_durable(answer, durability).await;
        }
        let event = SenderKey {
            sender: &sender,
            idempotency_key: &idempotency_key,
        };
        let claim = match inner
            .idempotency
            .claim(event, Fingerprint::from_array(&fingerprint), now)
            .await
        {
            Ok(ClaimOutcome::Claimed(claim)) => claim,
            Ok(ClaimOutcome::Completed) => {
                let answer = Reply::new(StatusCode::OK, outcome::DUPLICATE);
                return self.reply_once_durable(answer, durability).await;
            }
            Ok(ClaimOutcome::Conflict) => {
                tracing::warn!(target: RECEIVER_TRACING_TARGET, "same idempotency_key with a different payload: 409");
                return self.reply(Reply::new(StatusCode::CONFLICT, outcome::IDEMPOTENCY_CONFLICT));
            }
            Ok(ClaimOutcome::InProgress { lease_expires_at }) => {
                let mut reply = Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::IN_PROGRESS);
                reply.retry_after = Some(
                    u64::try_from(lease_expires_at.saturating_sub(now))
                        .unwrap_or(1)
                        .clamp(1, 60),
                );
                return self.reply(reply);
            }
            Ok(ClaimOutcome::SenderCapReached) => {
                return self.reply(Reply::new(StatusCode::TOO_MANY_REQUESTS, outcome::SENDER_CAP_REACHED))
            }
            Err(e) => {
                tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "idempotency store unavailable: 503 (fail closed)");
                return self.reply(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE));
            }
        };
        let mut notification = None;
        if let (Some(id), true) = (notification_id, first_delivery) {
            match self.claim_notification(&sender, id, now).await {
                Ok(NotificationClaim::Held(lock)) => notification = Some(lock),
                // A first delivery completed since the record was read:
                // read it again (this one is then its re-emission).
                Ok(NotificationClaim::FirstCompleted) => {
                    match inner.idempotency.notification_origin(&sender, id, now).await {
                        Ok(first) => reemission_of = first.filter(|first| *first != idempotency_key),
                        Err(e) => {
                            tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "idempotency store unavailable: 503 (fail closed)");
                            self.give_back(event, claim.token, now).await;
                            return self.reply(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE));
                        }
                    }
                    if reemission_of.is_some() && typed.is_terminal_task() {
                        self.give_back(event, claim.token, now).await;
                        let answer = Reply::new(StatusCode::OK, outcome::REEMISSION_SUPPRESSED);
                        return self.reply_once_durable(answer, durability).await;
                    }
                }
                Ok(NotificationClaim::InFlight) => {
                    tracing::info!(target: RECEIVER_TRACING_TARGET, "another delivery of this notification is being applied: 503, not delivered unmarked");
                    self.give_back(event, claim.token, now).await;
                    return self.reply(Reply::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        outcome::REEMISSION_IN_FLIGHT,
                    ));
                }
                Err(reply) => {
                    self.give_back(event, claim.token, now).await;
                    return self.reply(reply);
                }
            }
        }
        if reemission_of.is_some() {
            // Counted once per claimed delivery, beside its final outcome.
            self.inner.metrics.incr(outcome::REEMISSION);
        }
        Decision::Deliver(Delivery {
            webhook: Webhook::new(webhook::Parts {
                sender,
                keyid,
                scheme: verified.scheme(),
                idempotency_key,
                raw: body,
                payload: std::sync::OnceLock::new(),
                typed,
                reemission_of,
                attempt: claim.attempt,
            }),
            token: claim.token,
            span: span.clone(),
            notification,
        })
    }

    /// Claims `sender`'s notification `id` for its first delivery (see
    /// [`NotificationLock`]).
    async fn claim_notification(&self, sender: &str, id: &str, now: i64) -> Result<NotificationClaim, Reply> {
        let lock_sender = NotificationLock::sender(sender);
        let key = SenderKey {
            sender: &lock_sender,
            idempotency_key: id,
        };
        let claimed = self
            .inner
            .idempotency
            .claim(key, Fingerprint::from_array(&NotificationLock::FINGERPRINT), now)
            .await;
        match claimed {
            Ok(ClaimOutcome::Claimed(claim)) => Ok(NotificationClaim::Held(NotificationLock {
                sender: lock_sender,
                notification_id: id.to_owned(),
                token: claim.token,
            })),
            Ok(ClaimOutcome::Completed) => Ok(NotificationClaim::FirstCompleted),
            Ok(ClaimOutcome::InProgress { .. }) => Ok(NotificationClaim::InFlight),
            Ok(ClaimOutcome::SenderCapReached) => {
                Err(Reply::new(StatusCode::TOO_MANY_REQUESTS, outcome::SENDER_CAP_REACHED))
            }
            // One fingerprint for every claim on a notification: no
            // conflict is possible; a store that says otherwise is not
            // trusted to track the notification.
            Ok(ClaimOutcome::Conflict) => Err(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE)),
            Err(e) => {
                tracing::error!(target: RECEIVER_TRACING_TARGET, error = %e, "idempotency store unavailable: 503 (fail closed)");
                Err(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::STORE_UNAVAILABLE))
            }
        }
    }

    /// Gives back a claim taken for a delivery that is not delivered after
    /// all; a failure leaves it to expire with its lease.
    async fn give_back(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) {
        if let Err(e) = self.inner.idempotency.release(key, token, now).await {
            tracing::warn!(target: RECEIVER_TRACING_TARGET, error = %e, "claim release failed; it will expire with its lease");
        }
    }

    /// Records the handler's success durably. Only after this may the
    /// sender be answered `2xx`.
    ///
    /// # Errors
    ///
    /// A [`Reply`] (`503`) when completion could not be recorded: the
    /// sender must retry.
    pub async fn complete(&self, delivery: &Delivery) -> Result<(), Reply> {
        let w = &delivery.webhook;
        let key = SenderKey {
            sender: w.sender(),
            idempotency_key: w.idempotency_key(),
        };
        let now = self.inner.clock.now();
        let store = &self.inner.idempotency;
        let completed = match store
            .complete_with_notification(key, delivery.token, w.notification_id(), now)
            .await
        {
            // A store without notification records completes the plain way.
            Err(IdempotencyError::Unsupported(_)) => store.complete(key, delivery.token, now).await,
            other => other,
        };
        match completed {
            Ok(()) => {
                if let Some(lock) = &delivery.notification {
                    // After the notification record: a claim on the
                    // notification from now on says a first delivery
                    // completed. A failure leaves the claim to expire with
                    // its lease (re-emissions are answered 503 until then,
                    // and marked after).
                    if let Err(e) = store.complete(lock.key(), lock.token, now).await {
                        tracing::warn!(target: RECEIVER_TRACING_TARGET, error = %e, "notification claim not completed; it will expire with its lease");
                    }
                }
                self.inner.metrics.incr(outcome::ACCEPTED);
                delivery.span.record("outcome", outcome::ACCEPTED);
                Ok(())
            }
            Err(e) => {
                delivery.span.record("outcome", outcome::COMPLETION_FAILED);
                tracing::error!(target: RECEIVER_TRACING_TARGET, parent: &delivery.span, error = %e, "completion not recorded: 503");
                Err(self.reply_only(Reply::new(StatusCode::SERVICE_UNAVAILABLE, outcome::COMPLETION_FAILED)))
            }
        }
    }

    /// Gives the claim back after a handler failure, so that the sender's
    /// next retry can claim it at once. A failed release is logged; the
    /// claim's lease then expires on its own.
    pub async fn release(&self, delivery: &Delivery) {
        self.inner.metrics.incr(outcome::HANDLER_FAILED);
        delivery.span.record("outcome", outcome::HANDLER_FAILED);
        self.give_back_delivery(delivery).await;
    }

    /// Gives back the delivery's claim and its notification lock.
    async fn give_back_delivery(&self, delivery: &Delivery) {
        let w = &delivery.webhook;
        let key = SenderKey {
            sender: w.sender(),
            idempotency_key: w.idempotency_key(),
        };
        let now = self.inner.clock.now();
        self.give_back(key, delivery.token, now).await;
        if let Some(lock) = &delivery.notification {
            self.give_back(lock.key(), lock.token, now).await;
        }
    }

    /// The whole flow for stacks without tower: decide, run `handler` on a
    /// claimed delivery, complete or release, and return the response.
    /// The handler's `Ok` is answered `200`, its `Err` `500` (the claim
    /// is released, so the sender's retry is processed again).
    pub async fn handle<F, Fut, E>(&self, request: http::Request<Bytes>, handler: F) -> http::Response<Bytes>
    where
        F: FnOnce(Webhook) -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
        E: fmt::Display,
    {
        let delivery = match self.decide(request).await {
            Decision::Reply(reply) => return reply.into_response(),
            Decision::Deliver(delivery) => delivery,
        };
        match handler(delivery.webhook.clone())
            .instrument(delivery.span.clone())
            .await
        {
            Ok(()) => match self.complete(&delivery).await {
                Ok(()) => http::Response::new(Bytes::new()),
                Err(reply) => reply.into_response(),
            },
            Err(e) => {
                tracing::warn!(target: RECEIVER_TRACING_TARGET, error = %e, "webhook handler failed; claim released");
                self.release(&delivery).await;
                // Counted by `release`; only the answer is built here.
                Reply::new(StatusCode::INTERNAL_SERVER_ERROR, outcome::HANDLER_FAILED).into_response()
            }
        }
    }

    fn reply(&self, reply: Reply) -> Decision {
        Decision::Reply(self.reply_only(reply))
    }

    fn reply_only(&self, mut reply: Reply) -> Reply {
        // Every 503 is retryable: say when (the in-progress answer already
        // carries its lease). Only 503s: a 401 stays exactly the challenge.
        if reply.status == StatusCode::SERVICE_UNAVAILABLE && reply.retry_after.is_none() {
            reply.retry_after = Some(UNAVAILABLE_RETRY_AFTER_SECS);
        }
        self.inner.metrics.incr(reply.outcome);
        if reply.status == StatusCode::OK {
            tracing::debug!(target: RECEIVER_TRACING_TARGET, outcome = reply.outcome, "webhook answered");
        } else {
            tracing::info!(target: RECEIVER_TRACING_TARGET, outcome = reply.outcome, status = reply.status.as_u16(), "webhook rejected");
        }
        reply
    }

    /// The verifier's view of the request: method, absolute target URI
    /// (configured scheme + the authority as received + path and query),
    /// every header line, the raw body.
    fn message<'a>(&self, parts: &'a http::request::Parts, body: &'a [u8]) -> Option<Message<'a>> {
        let authority = match parts.uri.authority() {
            Some(a) => a.as_str(),
            None => parts.headers.get(http::header::HOST)?.to_str().ok()?,
        };
        let path = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        let target = format!("{}://{}{}", self.inner.config.scheme, authority, path);
        let mut msg = Message::request(parts.method.as_str(), target);
        if parts.version == http::Version::HTTP_2 {
            if let Some(a) = parts.uri.authority() {
                msg.push_header(":authority", a.as_str());
            }
        }
        for (name, value) in &parts.headers {
            msg.push_header(name.as_str(), value);
        }
        Some(msg.with_body(body))
    }
}

/// `application/json`, with optional parameters, case-insensitive.
fn is_json(headers: &http::HeaderMap) -> bool {
    let mut values = headers.get_all(http::header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Ok(value) = value.to_str() else {
        return false;
    };
    let media = value.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/json")
}

fn verify_reply(e: &VerifyError) -> Reply {
    let status = StatusCode::from_u16(e.code().http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
    // Surfaced to operators, never to the sender (the code is the interface).
    tracing::warn!(target: RECEIVER_TRACING_TARGET, code = e.code_str(), step = %e.step(), detail = e.detail(), "webhook verification failed");
    Reply {
        www_authenticate: e.www_authenticate(),
        ..Reply::with_message(status, e.code_str(), e.message())
    }
}

#[cfg(test)]
mod tests;
