//! Subscriber activation: the seller's endpoint ownership proof
//! ([`WebhookSender::activate`] with an [`Activation`], whose docs
//! describe the exchange).

use super::attempt::ssrf_cause;
use super::{WebhookSender, SENDER_TRACING_TARGET};
use crate::payload::{
    AgentWebhookChallenge, Challenge, ChallengeResponse, ChallengeResponseError, DeliveryAuth, WebhookChallenge,
};
use adcp_jwks::SsrfError;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sign::{Body, OsRandom, RandomSource, SignError, Signer, UnsignedRequest};
use std::fmt;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// The agent-level event types an agent challenge may carry (the enum of
/// `event_types` in `core/agent-webhook-challenge.json`, AdCP 3.2).
pub const AGENT_EVENT_TYPES: &[&str] = &["capabilities.changed"];

/// The account-anchored event types an account-level challenge may carry:
/// the `event_types` enum of `core/notification-config.json` (AdCP 3.2).
/// The challenge schema itself references the whole notification-type
/// enum, but the registration surface it proves refuses media-buy-anchored
/// (`scheduled`, `final`, …) and agent-anchored (`capabilities.changed`,
/// `principal.changed`) types, and a seller MUST reject those entries
/// rather than activate them.
pub const ACCOUNT_EVENT_TYPES: &[&str] = &[
    "creative.status_changed",
    "creative.assignment_changed",
    "indicators.changed",
    "creative.purged",
    "account.status_changed",
    "account.change_recorded",
    "product.created",
    "product.updated",
    "product.priced",
    "product.removed",
    "signal.created",
    "signal.updated",
    "signal.priced",
    "signal.removed",
    "wholesale_feed.bulk_change",
    "reporting.delivery_ready",
    "reporting.status_changed",
    "reporting.ledger_changed",
];

/// The largest challenge response body read. A valid answer is under
/// 300 bytes; the cap keeps a hostile endpoint from making us buffer more.
pub const MAX_ACTIVATION_RESPONSE_BYTES: usize = 64 * 1024;

/// The default bound on one activation exchange (connect, send, answer
/// and body), the spec's recommended 10 s.
pub const DEFAULT_ACTIVATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest timeout [`Activation::with_timeout`] accepts.
pub const MAX_ACTIVATION_TIMEOUT: Duration = Duration::from_secs(60);

/// Random bytes per challenge value: 32 bytes encode to 43 base64url
/// characters, above the schema's 32-character minimum and with 256 bits
/// of entropy.
const CHALLENGE_RANDOM_BYTES: usize = 32;

/// Which registration surface the subscriber belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChallengeScope {
    /// An account's `notification_configs[]` (binds `account_id`).
    Account {
        /// The seller account.
        account_id: String,
    },
    /// An agent-level subscriber (binds `scope: "agent"`; valid before any
    /// account exists).
    Agent,
}

/// An activation request was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// `subscriber_id` is not 1–64 characters of `[A-Za-z0-9_.:-]`.
    #[error("subscriber_id must be 1-64 characters of [A-Za-z0-9_.:-]")]
    SubscriberIdInvalid,
    /// `account_id` is empty.
    #[error("account_id must not be empty")]
    AccountIdInvalid,
    /// `seller_agent_url` is not an absolute URL.
    #[error("seller_agent_url must be an absolute URL")]
    SellerAgentUrlInvalid,
    /// No event type.
    #[error("event_types must hold at least one type")]
    EventTypesEmpty,
    /// An event type the scope's schema does not allow.
    #[error("event type {event_type:?} is not allowed in an {scope}-level challenge")]
    EventTypeNotAllowed {
        /// The refused type.
        event_type: String,
        /// `account` or `agent`.
        scope: &'static str,
    },
    /// `delivery_auth` does not fit the schema (unknown mode, a fingerprint
    /// with `rfc9421`, a missing or malformed one with a legacy mode).
    #[error("delivery_auth does not fit the schema")]
    DeliveryAuthInvalid,
}

impl ActivationError {
    /// The stable code.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::SubscriberIdInvalid => "subscriber_id_invalid",
            Self::AccountIdInvalid => "account_id_invalid",
            Self::SellerAgentUrlInvalid => "seller_agent_url_invalid",
            Self::EventTypesEmpty => "event_types_empty",
            Self::EventTypeNotAllowed { .. } => "event_type_not_allowed",
            Self::DeliveryAuthInvalid => "delivery_auth_invalid",
        }
    }
}

/// What to activate: the subscriber URL and every binding of the
/// challenge, for [`WebhookSender::activate`] (the seller's endpoint
/// ownership proof).
///
/// Before a new or changed active `notification_configs[]` subscriber
/// (account-level, or agent-level through
/// `sync_agent_notification_configs`) is treated as active, the seller
/// POSTs a `webhook.challenge` to its URL and the receiver must echo the
/// challenge value (spec: security, "endpoint ownership proof"). SSRF
/// validation proves the seller is not calling an internal address; the
/// echo proves the buyer controls the public endpoint.
///
/// One activation:
///
/// 1. The request ([`Activation`]) is validated when it is built, before
///    anything is sent: `subscriber_id` pattern, an absolute
///    `seller_agent_url`, the event types allowed for the scope (agent
///    level: only the agent-level types of `agent-webhook-challenge.json`,
///    today `capabilities.changed`), and the `delivery_auth` shape.
/// 2. Each [`WebhookSender::activate`] call draws a **fresh** challenge
///    value (32 bytes from the OS CSPRNG, unpadded base64url: 43
///    characters of `[A-Za-z0-9_-]`) and builds the body with exactly the
///    schema's members. A value is never reused: a retry is a new
///    challenge.
/// 3. The URL passes the sender's SSRF rules ([`super::DestinationPolicy`])
///    before any connection; the connection is pinned to checked
///    addresses by the sender's resolver; redirects are never followed.
/// 4. The POST is signed with the RFC 9421 **webhook profile**, always,
///    whatever `delivery_auth` says about later deliveries (the schemas:
///    "`delivery_auth` describes the future webhook delivery mode, not the
///    challenge's own signing mode"). The signature covers `@target-uri`
///    (the exact normalized URL), `content-digest` (the bindings in the
///    body) and `expires`, which is what the receiver checks before
///    echoing.
/// 5. Only a `2xx` whose body (at most [`MAX_ACTIVATION_RESPONSE_BYTES`], strict JSON)
///    is `{"challenge": v}` or `{"token": v}` — exactly one member, nothing
///    else — with `v` equal to the value sent (constant-time comparison)
///    activates ([`ActivationOutcome`]).
///
/// ```no_run
/// use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
/// use adcp_webhook::payload::DeliveryAuth;
/// use adcp_webhook::{Activation, WebhookSender};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
/// let sender = WebhookSender::builder(HttpSigner::webhook(key)?).build()?;
/// let activation = Activation::account(
///     "https://buyer.example/webhooks/adcp",
///     "acct_123",
///     "buyer-primary",
///     "https://seller.example/adcp",
///     ["creative.status_changed", "creative.purged"],
/// )?
/// .with_delivery_auth(DeliveryAuth::rfc9421())?;
/// let report = sender.activate(&activation).await;
/// if report.outcome.is_activated() {
///     // Mark the subscriber active for this (url, event types, auth) tuple.
/// } else {
///     println!("not activated: {}", report.outcome.code());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activation {
    url: String,
    scope: ChallengeScope,
    subscriber_id: String,
    seller_agent_url: String,
    delivery_auth: DeliveryAuth,
    event_types: Vec<String>,
    timeout: Duration,
}

impl Activation {
    /// An account-level activation (`core/webhook-challenge.json`) of the
    /// subscriber `subscriber_id` at `url`, with RFC 9421 delivery auth
    /// (change it with [`with_delivery_auth`](Self::with_delivery_auth)).
    /// The event types are normalized to a sorted set.
    ///
    /// # Errors
    ///
    /// [`ActivationError`]: a bad `subscriber_id`, an empty `account_id`, a
    /// `seller_agent_url` that is not absolute, no event type, or a type
    /// outside [`ACCOUNT_EVENT_TYPES`].
    pub fn account<I, T>(
        url: impl Into<String>,
        account_id: impl Into<String>,
        subscriber_id: impl Into<String>,
        seller_agent_url: impl Into<String>,
        event_types: I,
    ) -> Result<Self, ActivationError>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let account_id = account_id.into();
        if account_id.is_empty() {
            return Err(ActivationError::AccountIdInvalid);
        }
        Self::build(
            url.into(),
            ChallengeScope::Account { account_id },
            subscriber_id.into(),
            seller_agent_url.into(),
            event_types,
        )
    }

    /// An agent-level activation (`core/agent-webhook-challenge.json`,
    /// `scope: "agent"`), with RFC 9421 delivery auth.
    ///
    /// # Errors
    ///
    /// As [`Activation::account`], with the types limited to
    /// [`AGENT_EVENT_TYPES`]: anything else is refused here, before
    /// anything is sent.
    pub fn agent<I, T>(
        url: impl Into<String>,
        subscriber_id: impl Into<String>,
        seller_agent_url: impl Into<String>,
        event_types: I,
    ) -> Result<Self, ActivationError>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        Self::build(
            url.into(),
            ChallengeScope::Agent,
            subscriber_id.into(),
            seller_agent_url.into(),
            event_types,
        )
    }

    fn build<I, T>(
        url: String,
        scope: ChallengeScope,
        subscriber_id: String,
        seller_agent_url: String,
        event_types: I,
    ) -> Result<Self, ActivationError>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let id_ok = (1..=64).contains(&subscriber_id.len())
            && subscriber_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
        if !id_ok {
            return Err(ActivationError::SubscriberIdInvalid);
        }
        // `format: "uri"`: absolute, with a scheme. The exact string is
        // what the receiver compares with its configured seller, so it is
        // sent as given, never re-serialized.
        if url::Url::parse(&seller_agent_url).is_err() {
            return Err(ActivationError::SellerAgentUrlInvalid);
        }
        let (allowed, scope_name) = match scope {
            ChallengeScope::Account { .. } => (ACCOUNT_EVENT_TYPES, "account"),
            ChallengeScope::Agent => (AGENT_EVENT_TYPES, "agent"),
        };
        let mut types: Vec<String> = Vec::new();
        for event_type in event_types {
            let event_type = event_type.into();
            if !allowed.contains(&event_type.as_str()) {
                return Err(ActivationError::EventTypeNotAllowed {
                    event_type,
                    scope: scope_name,
                });
            }
            types.push(event_type);
        }
        // The spec binds the "normalized event type set": one order and no
        // duplicates, so the same subscription always yields the same
        // bytes and `uniqueItems` holds.
        types.sort_unstable();
        types.dedup();
        if types.is_empty() {
            return Err(ActivationError::EventTypesEmpty);
        }
        Ok(Self {
            url,
            scope,
            subscriber_id,
            seller_agent_url,
            delivery_auth: DeliveryAuth::rfc9421(),
            event_types: types,
            timeout: DEFAULT_ACTIVATION_TIMEOUT,
        })
    }

    /// How later deliveries to the subscriber will authenticate
    /// ([`DeliveryAuth::rfc9421`], [`DeliveryAuth::bearer`],
    /// [`DeliveryAuth::hmac_sha256`]). The challenge itself is always
    /// RFC 9421-signed.
    ///
    /// # Errors
    ///
    /// [`ActivationError::DeliveryAuthInvalid`] unless
    /// [`DeliveryAuth::is_valid`].
    pub fn with_delivery_auth(mut self, delivery_auth: DeliveryAuth) -> Result<Self, ActivationError> {
        if !delivery_auth.is_valid() {
            return Err(ActivationError::DeliveryAuthInvalid);
        }
        self.delivery_auth = delivery_auth;
        Ok(self)
    }

    /// Bounds the whole exchange (default [`DEFAULT_ACTIVATION_TIMEOUT`];
    /// clamped to 1 ms ..= [`MAX_ACTIVATION_TIMEOUT`]).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.clamp(Duration::from_millis(1), MAX_ACTIVATION_TIMEOUT);
        self
    }

    /// The subscriber URL, as registered.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The registration surface.
    #[must_use]
    pub fn scope(&self) -> &ChallengeScope {
        &self.scope
    }

    /// The subscriber registration.
    #[must_use]
    pub fn subscriber_id(&self) -> &str {
        &self.subscriber_id
    }

    /// The seller agent URL the challenge names.
    #[must_use]
    pub fn seller_agent_url(&self) -> &str {
        &self.seller_agent_url
    }

    /// The future delivery auth the challenge binds.
    #[must_use]
    pub fn delivery_auth(&self) -> &DeliveryAuth {
        &self.delivery_auth
    }

    /// The normalized (sorted, deduplicated) event types.
    #[must_use]
    pub fn event_types(&self) -> &[String] {
        &self.event_types
    }

    /// The exchange bound.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A challenge with a fresh value drawn from `random` (a CSPRNG;
    /// [`WebhookSender::activate`] uses the OS generator). Exposed for
    /// callers that send the challenge over their own transport.
    ///
    /// # Errors
    ///
    /// `randomness_unavailable`.
    pub fn challenge(&self, random: &dyn RandomSource) -> Result<Challenge, SignError> {
        let value = challenge_value(random)?;
        Ok(match &self.scope {
            ChallengeScope::Account { account_id } => Challenge::Account(WebhookChallenge::new(
                value,
                account_id.clone(),
                self.subscriber_id.clone(),
                self.seller_agent_url.clone(),
                self.delivery_auth.clone(),
                self.event_types.clone(),
            )),
            ChallengeScope::Agent => Challenge::Agent(AgentWebhookChallenge::new(
                value,
                self.subscriber_id.clone(),
                self.seller_agent_url.clone(),
                self.delivery_auth.clone(),
                self.event_types.clone(),
            )),
        })
    }
}

/// A fresh challenge value: [`CHALLENGE_RANDOM_BYTES`] random bytes,
/// unpadded base64url (the schema's recommended encoding; its alphabet
/// `[A-Za-z0-9_-]` is inside the pattern `[A-Za-z0-9_.:-]`).
fn challenge_value(random: &dyn RandomSource) -> Result<String, SignError> {
    let mut bytes = [0u8; CHALLENGE_RANDOM_BYTES];
    random.fill(&mut bytes)?;
    Ok(BinaryEncoding::Base64UrlUnpadded.encode(&bytes))
}

/// Which member of the response echoed the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EchoMember {
    /// `{"challenge": …}` (preferred).
    Challenge,
    /// `{"token": …}` (backward-compatible alias).
    Token,
}

impl EchoMember {
    /// `challenge` or `token`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Challenge => "challenge",
            Self::Token => "token",
        }
    }
}

/// Why a `2xx` answer does not prove control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EchoError {
    /// The body is not JSON (or is empty).
    NotJson,
    /// The body has the same member twice (parsers disagree on which
    /// one counts, so it proves nothing).
    DuplicateMember,
    /// The body is over [`MAX_ACTIVATION_RESPONSE_BYTES`].
    TooLarge,
    /// The JSON does not fit `webhook-challenge-response.json`, or echoes
    /// another value.
    Response(ChallengeResponseError),
}

impl EchoError {
    /// The stable code (`challenge_response_*`).
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::NotJson => "challenge_response_not_json",
            Self::DuplicateMember => "challenge_response_duplicate_member",
            Self::TooLarge => "challenge_response_too_large",
            Self::Response(e) => e.code(),
        }
    }
}

impl fmt::Display for EchoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson => f.write_str("challenge response is not JSON"),
            Self::DuplicateMember => f.write_str("challenge response repeats a member"),
            Self::TooLarge => f.write_str("challenge response body is too large"),
            Self::Response(e) => fmt::Display::fmt(e, f),
        }
    }
}

/// How an activation ended. Only [`Activated`](Self::Activated) makes the
/// subscriber active; everything else leaves it inactive (retry later
/// with a fresh challenge, or tell the buyer the URL failed proof — never
/// the transport detail, which is a probing side channel).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActivationOutcome {
    /// A `2xx` echoing the value sent.
    Activated {
        /// The `2xx` status.
        status: u16,
        /// The member that carried the echo.
        member: EchoMember,
    },
    /// A `2xx` whose body does not prove control.
    WrongEcho {
        /// The `2xx` status.
        status: u16,
        /// Why.
        reason: EchoError,
    },
    /// A `3xx`: never followed (a redirect could point past the SSRF
    /// checks), so not activated.
    Redirected {
        /// The status.
        status: u16,
    },
    /// Any other non-`2xx` answer.
    Refused {
        /// The status.
        status: u16,
    },
    /// No complete answer within the timeout.
    Timeout,
    /// The connection failed (refused, reset, TLS, DNS).
    Unreachable,
    /// The URL (or an address its name resolved to) breaks the SSRF rules;
    /// nothing was sent.
    InvalidDestination(SsrfError),
    /// The challenge could not be built or signed (randomness, key).
    SigningFailed(String),
}

impl ActivationOutcome {
    /// Whether the subscriber proved control.
    #[must_use]
    pub fn is_activated(&self) -> bool {
        matches!(self, Self::Activated { .. })
    }

    /// The stable code: `activated`, `wrong_echo`, `redirect_refused`,
    /// `refused`, `timeout`, `unreachable`, `ssrf_refused`,
    /// `signing_failed`.
    #[must_use]
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Activated { .. } => "activated",
            Self::WrongEcho { .. } => "wrong_echo",
            Self::Redirected { .. } => "redirect_refused",
            Self::Refused { .. } => "refused",
            Self::Timeout => "timeout",
            Self::Unreachable => "unreachable",
            Self::InvalidDestination(_) => "ssrf_refused",
            Self::SigningFailed(_) => "signing_failed",
        }
    }

    /// The HTTP status, when the endpoint answered.
    #[must_use]
    pub const fn status(&self) -> Option<u16> {
        match self {
            Self::Activated { status, .. }
            | Self::WrongEcho { status, .. }
            | Self::Redirected { status }
            | Self::Refused { status } => Some(*status),
            _ => None,
        }
    }

    /// The finer reason, when there is one: the `challenge_response_*`
    /// code of a wrong echo, the signing error code.
    #[must_use]
    pub fn reason_code(&self) -> Option<&str> {
        match self {
            Self::WrongEcho { reason, .. } => Some(reason.code()),
            Self::SigningFailed(code) => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for ActivationOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Activated { status, member } => {
                write!(
                    f,
                    "activated: HTTP {status} echoed the challenge in `{}`",
                    member.as_str()
                )
            }
            Self::WrongEcho { status, reason } => {
                write!(f, "not activated: HTTP {status} but {reason} ({})", reason.code())
            }
            Self::Redirected { status } => write!(f, "not activated: HTTP {status} redirect (not followed)"),
            Self::Refused { status } => write!(f, "not activated: HTTP {status}"),
            Self::Timeout => f.write_str("not activated: no answer within the timeout"),
            Self::Unreachable => f.write_str("not activated: endpoint unreachable"),
            Self::InvalidDestination(e) => write!(f, "not activated: destination refused before sending ({e})"),
            Self::SigningFailed(code) => write!(f, "not activated: challenge not signed ({code})"),
        }
    }
}

/// The result of [`WebhookSender::activate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivationReport {
    /// How it ended.
    pub outcome: ActivationOutcome,
    /// The challenge POSTed, when one was signed and handed to the
    /// connection (`None` when refused before: SSRF, signing). It holds
    /// the fingerprint of a legacy credential, never the credential.
    pub challenge: Option<Challenge>,
    /// How long the activation took.
    pub duration: Duration,
}

impl<S: Signer> WebhookSender<S> {
    /// Runs one activation challenge against `activation`'s URL (the
    /// exchange is described on [`Activation`]). Never panics; every failure is an
    /// [`ActivationOutcome`]. One call, one fresh challenge value, one
    /// POST: no retry (a retry must be a new challenge, so it is the
    /// caller's decision).
    pub async fn activate(&self, activation: &Activation) -> ActivationReport {
        let started = Instant::now();
        let span = tracing::info_span!(
            target: SENDER_TRACING_TARGET,
            "webhook.activate",
            subscriber_id = %activation.subscriber_id,
            scope = match activation.scope { ChallengeScope::Account { .. } => "account", ChallengeScope::Agent => "agent" },
            outcome = tracing::field::Empty,
            http_status = tracing::field::Empty,
        );
        async {
            let (outcome, challenge) = self.activate_inner(activation).await;
            let span = tracing::Span::current();
            span.record("outcome", outcome.code());
            if let Some(status) = outcome.status() {
                span.record("http_status", status);
            }
            // Never the challenge value or the response body: the value is
            // a single-use secret until echoed, and the body is the
            // counterparty's.
            tracing::info!(
                target: SENDER_TRACING_TARGET,
                outcome = outcome.code(),
                reason = outcome.reason_code(),
                "webhook subscriber activation"
            );
            ActivationReport {
                outcome,
                challenge,
                duration: started.elapsed(),
            }
        }
        .instrument(span)
        .await
    }

    async fn activate_inner(&self, activation: &Activation) -> (ActivationOutcome, Option<Challenge>) {
        let inner = &*self.inner;
        // SSRF first: a refused URL gets no challenge, no signature, no
        // connection.
        if let Err(e) = inner.attempts.destination_policy().check(&activation.url) {
            return (ActivationOutcome::InvalidDestination(e), None);
        }
        // Always the webhook profile, whatever the future delivery auth.
        if !inner.signer.profile().is_webhook() {
            return (ActivationOutcome::SigningFailed("profile_mismatch".to_owned()), None);
        }
        let challenge = match activation.challenge(&OsRandom) {
            Ok(c) => c,
            Err(e) => return (ActivationOutcome::SigningFailed(e.code().to_owned()), None),
        };
        let body = match Body::json(&challenge) {
            Ok(b) => b,
            Err(e) => return (ActivationOutcome::SigningFailed(e.code().to_owned()), None),
        };
        let signed = match inner.signer.sign(&UnsignedRequest::post(&activation.url, &body)).await {
            Ok(s) => s,
            Err(e) => return (ActivationOutcome::SigningFailed(e.code().to_owned()), None),
        };
        let mut builder = inner.attempts.http().post(signed.url()).timeout(activation.timeout);
        for (name, value) in signed.headers() {
            builder = builder.header(*name, value);
        }
        let request = match builder.body(body.as_bytes().to_vec()).build() {
            Ok(r) => r,
            Err(_) => {
                return (
                    ActivationOutcome::SigningFailed("target_uri_malformed".to_owned()),
                    None,
                )
            }
        };
        let value = challenge.value().to_owned();
        let exchange = async {
            match inner.attempts.http().execute(request).await {
                Ok(response) => judge(response, &value).await,
                Err(e) => transport_failure(&e),
            }
        };
        let outcome = tokio::time::timeout(activation.timeout, exchange)
            .await
            .unwrap_or(ActivationOutcome::Timeout);
        // Refused by the pinned resolver: nothing left this host.
        let challenge = (!matches!(outcome, ActivationOutcome::InvalidDestination(_))).then_some(challenge);
        (outcome, challenge)
    }
}

fn transport_failure(e: &reqwest::Error) -> ActivationOutcome {
    if let Some(ssrf) = ssrf_cause(e) {
        return ActivationOutcome::InvalidDestination(ssrf);
    }
    if e.is_timeout() {
        ActivationOutcome::Timeout
    } else {
        ActivationOutcome::Unreachable
    }
}

/// Judges an answer: the status first, then (for a `2xx`) at most
/// [`MAX_ACTIVATION_RESPONSE_BYTES`] of body, strict JSON, the response schema and a
/// constant-time comparison with the value sent.
async fn judge(mut response: reqwest::Response, expected: &str) -> ActivationOutcome {
    let status = response.status();
    let code = status.as_u16();
    if status.is_redirection() {
        return ActivationOutcome::Redirected { status: code };
    }
    if !status.is_success() {
        return ActivationOutcome::Refused { status: code };
    }
    let wrong = |reason| ActivationOutcome::WrongEcho { status: code, reason };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_ACTIVATION_RESPONSE_BYTES as u64)
    {
        return wrong(EchoError::TooLarge);
    }
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > MAX_ACTIVATION_RESPONSE_BYTES {
                    return wrong(EchoError::TooLarge);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) if e.is_timeout() => return ActivationOutcome::Timeout,
            Err(_) => return ActivationOutcome::Unreachable,
        }
    }
    let limits = adcp_strict_json::Limits::new(MAX_ACTIVATION_RESPONSE_BYTES);
    let json = match adcp_strict_json::parse_value(&bytes, &limits) {
        Ok(v) => v,
        Err(e) if e.duplicate_keys().is_some() => return wrong(EchoError::DuplicateMember),
        Err(_) => return wrong(EchoError::NotJson),
    };
    let answer = match ChallengeResponse::from_value(&json) {
        Ok(a) => a,
        Err(e) => return wrong(EchoError::Response(e)),
    };
    if let Err(e) = answer.verify(expected) {
        return wrong(EchoError::Response(e));
    }
    let member = match answer {
        ChallengeResponse::Challenge(_) => EchoMember::Challenge,
        ChallengeResponse::Token(_) => EchoMember::Token,
    };
    ActivationOutcome::Activated { status: code, member }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fresh_and_fit_the_schema() {
        let a = Activation::agent(
            "https://b.example/h",
            "registry-cache",
            "https://seller.example/adcp",
            ["capabilities.changed"],
        )
        .unwrap();
        let one = a.challenge(&OsRandom).unwrap();
        let two = a.challenge(&OsRandom).unwrap();
        assert_ne!(one.value(), two.value());
        for v in [one.value(), two.value()] {
            assert!(v.len() >= 32 && v.len() <= 255, "{v}");
            assert!(v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')));
        }
    }

    #[test]
    fn event_types_are_a_sorted_set_and_scoped() {
        let a = Activation::account(
            "https://b.example/h",
            "acct_1",
            "buyer-primary",
            "https://seller.example/adcp",
            ["creative.purged", "creative.status_changed", "creative.purged"],
        )
        .unwrap();
        assert_eq!(a.event_types(), ["creative.purged", "creative.status_changed"]);
        let err = Activation::agent(
            "https://b.example/h",
            "s",
            "https://seller.example/adcp",
            ["capabilities.changed", "creative.purged"],
        )
        .unwrap_err();
        assert_eq!(err.code(), "event_type_not_allowed");
        let err = Activation::account(
            "https://b.example/h",
            "acct_1",
            "s",
            "https://seller.example/adcp",
            ["scheduled"],
        )
        .unwrap_err();
        assert_eq!(err.code(), "event_type_not_allowed");
        let none: [&str; 0] = [];
        let err = Activation::agent("https://b.example/h", "s", "https://seller.example/adcp", none).unwrap_err();
        assert_eq!(err, ActivationError::EventTypesEmpty);
        let err = Activation::agent(
            "https://b.example/h",
            "bad id",
            "https://s.example/",
            ["capabilities.changed"],
        )
        .unwrap_err();
        assert_eq!(err, ActivationError::SubscriberIdInvalid);
        let err = Activation::agent("https://b.example/h", "s", "seller", ["capabilities.changed"]).unwrap_err();
        assert_eq!(err, ActivationError::SellerAgentUrlInvalid);
    }

    #[test]
    fn delivery_auth_must_fit_the_schema() {
        let a = Activation::agent(
            "https://b.example/h",
            "s",
            "https://s.example/",
            ["capabilities.changed"],
        )
        .unwrap();
        assert!(a.clone().with_delivery_auth(DeliveryAuth::bearer("x")).is_ok());
        let mut bad = DeliveryAuth::rfc9421();
        bad.credential_fingerprint = Some("0".repeat(64));
        assert_eq!(
            a.clone().with_delivery_auth(bad).unwrap_err(),
            ActivationError::DeliveryAuthInvalid
        );
        let mut bad = DeliveryAuth::hmac_sha256("secret");
        bad.credential_fingerprint = Some("A".repeat(64));
        assert!(a.with_delivery_auth(bad).is_err());
    }
}
