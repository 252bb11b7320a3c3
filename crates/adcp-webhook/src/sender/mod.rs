//! The seller side: deliver one event to one destination, with retries.
//!
//! The user-facing documentation is the crate root's (these types are
//! re-exported there).

mod activation;
mod attempt;
mod destination;
mod retry;

pub use activation::{
    Activation, ActivationError, ActivationOutcome, ActivationReport, ChallengeScope, EchoError, EchoMember,
    ACCOUNT_EVENT_TYPES, AGENT_EVENT_TYPES, DEFAULT_ACTIVATION_TIMEOUT, MAX_ACTIVATION_RESPONSE_BYTES,
    MAX_ACTIVATION_TIMEOUT,
};
pub use attempt::{
    classify_answer, signature_error_code, AttemptClient, AttemptClientBuilder, AttemptRecord, AttemptResult,
    AttemptStatus, AttemptVerdict,
};
pub use destination::{Destination, DestinationAuth, DestinationError, DestinationPolicy};
pub use retry::{parse_retry_after, RetryPolicy, RetryPolicyError};

use adcp_jwks::SsrfError;
use adcp_jwks::{DnsResolver, TrustRoots};
use adcp_sigbase::Clock;
use adcp_sign::{HttpSigner, OsRandom, RandomSource, Signer, WebhookEvent};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// The tracing target of sender events.
pub const SENDER_TRACING_TARGET: &str = "adcp_webhook::sender";

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver acknowledged it with this `2xx` status.
    Delivered {
        /// The status.
        status: u16,
    },
    /// The receiver refused the signature or mode: `401` with
    /// `WWW-Authenticate: Signature error="webhook_…"`. Terminal for this
    /// delivery; route sustained rates of these to incident response.
    SignatureRejected {
        /// The `webhook_*` code.
        code: String,
    },
    /// The receiver answered `409`: it bound this `idempotency_key` to
    /// another payload, and the spec says to stop retrying the key
    /// ([`AttemptVerdict::Conflict`]). The only refusal other than a
    /// signature one: every other answer (`3xx`, other `4xx`, `5xx`) is
    /// retried until the horizon, then reported as [`GaveUp`](Self::GaveUp).
    Refused {
        /// The status (`409`).
        status: u16,
    },
    /// Retries ran out (horizon or attempt cap) on retryable failures.
    GaveUp,
    /// The destination failed the SSRF rules: before any attempt (no
    /// record), or at connect time when its name resolved to a reserved
    /// address (one record, `connection_error`).
    InvalidDestination(SsrfError),
    /// The sender could not sign (key unavailable, …): the
    /// `adcp_sign::SignError` code.
    SigningFailed(String),
}

impl DeliveryOutcome {
    /// Whether the receiver acknowledged the event.
    #[must_use]
    pub fn is_delivered(&self) -> bool {
        matches!(self, Self::Delivered { .. })
    }

    /// The outcome a terminal verdict ends a delivery with. A
    /// [`AttemptVerdict::Retry`] left standing is [`GaveUp`](Self::GaveUp).
    fn from_verdict(verdict: AttemptVerdict) -> Self {
        match verdict {
            AttemptVerdict::Delivered { status } => Self::Delivered { status },
            AttemptVerdict::SignatureRejected { code } => Self::SignatureRejected { code },
            AttemptVerdict::Conflict => Self::Refused { status: 409 },
            AttemptVerdict::InvalidDestination(e) => Self::InvalidDestination(e),
            AttemptVerdict::SigningFailed(code) => Self::SigningFailed(code),
            AttemptVerdict::Retry { .. } => Self::GaveUp,
        }
    }
}

/// The result of [`WebhookSender::deliver`]: the outcome and every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryReport {
    /// The event's `idempotency_key`.
    pub idempotency_key: String,
    /// How it ended.
    pub outcome: DeliveryOutcome,
    /// One record per attempt, in order.
    pub attempts: Vec<AttemptRecord>,
}

/// Receives each [`AttemptRecord`] as it is made (persist it to answer
/// `webhook_activity` queries, export metrics, …).
pub trait DeliveryObserver: Send + Sync {
    /// Called after every attempt.
    fn on_attempt(&self, record: &AttemptRecord);
}

/// A sender or an [`AttemptClient`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SenderError {
    /// The HTTP client (TLS roots, …) could not be built.
    #[error("http client: {0}")]
    Client(String),
    /// An attempt or connect timeout of zero.
    #[error("attempt and connect timeouts must be positive")]
    InvalidTimeouts,
}

/// Builds a [`WebhookSender`].
pub struct WebhookSenderBuilder<S> {
    signer: HttpSigner<S>,
    policy: RetryPolicy,
    /// The attempt client's settings (its timeouts come from `policy`).
    attempts: AttemptClientBuilder,
    observer: Option<Arc<dyn DeliveryObserver>>,
    random: Arc<dyn RandomSource>,
}

impl<S: Signer> WebhookSenderBuilder<S> {
    /// The retry policy (default [`RetryPolicy::default`]).
    #[must_use]
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The destination rules (default: production SSRF policy).
    #[must_use]
    pub fn destination_policy(mut self, policy: DestinationPolicy) -> Self {
        self.attempts = self.attempts.destination_policy(policy);
        self
    }

    /// The resolver used for every destination name (default: the system
    /// resolver). Its answers are range-checked before use.
    #[must_use]
    pub fn dns_resolver(mut self, resolver: Arc<dyn DnsResolver>) -> Self {
        self.attempts = self.attempts.dns_resolver(resolver);
        self
    }

    /// The CAs trusted for destination certificates (default: the Mozilla
    /// set from `webpki-roots`).
    #[must_use]
    pub fn trust_roots(mut self, roots: TrustRoots) -> Self {
        self.attempts = self.attempts.trust_roots(roots);
        self
    }

    /// Receives every attempt record.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn DeliveryObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The randomness behind backoff jitter (default: the OS CSPRNG).
    #[must_use]
    pub fn jitter_source(mut self, random: Arc<dyn RandomSource>) -> Self {
        self.random = random;
        self
    }

    /// The wall clock (Unix seconds) behind each attempt's
    /// [`AttemptRecord::started_at`] and the delay a `Retry-After` date
    /// asks for (default [`SystemClock`](adcp_sigbase::SystemClock)). The
    /// signer stamps `created` from its own clock; deadlines and durations
    /// use the monotonic clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.attempts = self.attempts.clock(clock);
        self
    }

    /// Builds the sender and its HTTP client.
    ///
    /// # Errors
    ///
    /// [`SenderError::Client`].
    pub fn build(self) -> Result<WebhookSender<S>, SenderError> {
        let attempts = self
            .attempts
            .timeouts(self.policy.attempt_timeout(), self.policy.connect_timeout())
            .build()?;
        Ok(WebhookSender {
            inner: Arc::new(Inner {
                signer: self.signer,
                policy: self.policy,
                attempts,
                observer: self.observer,
                random: self.random,
            }),
        })
    }
}

struct Inner<S> {
    signer: HttpSigner<S>,
    policy: RetryPolicy,
    attempts: AttemptClient,
    observer: Option<Arc<dyn DeliveryObserver>>,
    random: Arc<dyn RandomSource>,
}

/// Delivers signed webhooks with retries, in process. Cheap to clone;
/// share one per signing key.
///
/// Each attempt is an [`AttemptClient::attempt`], judged by
/// [`classify_answer`] (the spec's rule, shared with durable outboxes):
/// `2xx` delivers; `401` with a `webhook_*` code and `409` stop the
/// delivery; every other answer (`3xx`, which is never followed, a plain
/// `401`, other `4xx`, `5xx`), timeouts and connection errors are retried
/// after exponential backoff with full jitter (at least `Retry-After`)
/// until the [`RetryPolicy`]'s horizon or attempt cap. The schedule lives
/// in this process: for deliveries that must survive a restart, drive an
/// [`AttemptClient`] from a durable queue instead.
///
/// ```no_run
/// use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
/// use adcp_webhook::{McpWebhook, TaskStatus};
/// use adcp_webhook::{Destination, WebhookSender};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
/// let sender = WebhookSender::builder(HttpSigner::webhook(key)?).build()?;
///
/// // From the buyer's push_notification_config.
/// let destination = Destination::from_registration(&serde_json::json!({
///     "url": "https://buyer.example/webhooks/adcp/op_1", "operation_id": "op_1"}))?;
/// let event = McpWebhook::new("task_1", "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
///     .operation_id(destination.operation_id().unwrap_or_default())
///     .result(serde_json::json!({"media_buy_id": "mb_1"}))
///     .into_event()?;
/// let report = sender.deliver(&destination, &event).await;
/// println!("{:?} after {} attempt(s)", report.outcome, report.attempts.len());
/// # Ok(())
/// # }
/// ```
pub struct WebhookSender<S> {
    inner: Arc<Inner<S>>,
}

impl<S> Clone for WebhookSender<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S> fmt::Debug for WebhookSender<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookSender")
            .field("policy", &self.inner.policy)
            .field("destinations", self.inner.attempts.destination_policy())
            .finish_non_exhaustive()
    }
}

impl<S: Signer> WebhookSender<S> {
    /// A builder around `signer` (an [`HttpSigner`] with the webhook
    /// profile, [`HttpSigner::webhook`]).
    pub fn builder(signer: HttpSigner<S>) -> WebhookSenderBuilder<S> {
        WebhookSenderBuilder {
            signer,
            policy: RetryPolicy::default(),
            attempts: AttemptClient::builder(),
            observer: None,
            random: Arc::new(OsRandom),
        }
    }

    /// The retry policy.
    #[must_use]
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.policy
    }

    /// The single-attempt client underneath (same pool, SSRF rules and
    /// timeouts), for a caller that schedules some deliveries itself.
    #[must_use]
    pub fn attempt_client(&self) -> &AttemptClient {
        &self.inner.attempts
    }

    /// Delivers `event` to `destination`, retrying per the policy. Never
    /// panics and never returns early on a retryable failure: the report
    /// says how it ended.
    pub async fn deliver(&self, destination: &Destination, event: &WebhookEvent) -> DeliveryReport {
        let key = event.idempotency_key().as_str().to_owned();
        let span = tracing::info_span!(
            target: SENDER_TRACING_TARGET,
            "webhook.deliver",
            idempotency_key = %key,
            auth = destination.auth().as_str(),
            attempts = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        self.deliver_inner(destination, event, key).instrument(span).await
    }

    async fn deliver_inner(&self, destination: &Destination, event: &WebhookEvent, key: String) -> DeliveryReport {
        let inner = &*self.inner;
        let mut report = DeliveryReport {
            idempotency_key: key,
            outcome: DeliveryOutcome::GaveUp,
            attempts: Vec::new(),
        };
        // Checked here as well as in every attempt so that a URL refused
        // outright leaves no attempt record: nothing was tried.
        if let Err(e) = inner.attempts.destination_policy().check(destination.url()) {
            tracing::warn!(target: SENDER_TRACING_TARGET, error = %e, "webhook destination refused before the first attempt");
            report.outcome = DeliveryOutcome::InvalidDestination(e);
            return finish(report);
        }
        if destination.auth().is_legacy() {
            tracing::warn!(
                target: SENDER_TRACING_TARGET,
                scheme = destination.auth().as_str(),
                "delivering with a deprecated legacy webhook scheme (removed in AdCP 4.0)"
            );
        }
        let deadline = Instant::now() + inner.policy.horizon();
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let AttemptResult { record, verdict } =
                inner.attempts.attempt(&inner.signer, destination, event, attempt).await;
            if let Some(observer) = &inner.observer {
                observer.on_attempt(&record);
            }
            report.attempts.push(record);
            let retry_after = match verdict {
                AttemptVerdict::Retry { retry_after } => retry_after,
                terminal => {
                    report.outcome = DeliveryOutcome::from_verdict(terminal);
                    return finish(report);
                }
            };
            if inner.policy.max_attempts().is_some_and(|max| attempt >= max) {
                return finish(report);
            }
            let wait = inner.policy.backoff(attempt, retry_after, inner.random.as_ref());
            if Instant::now() + wait > deadline {
                return finish(report);
            }
            tokio::time::sleep(wait).await;
        }
    }
}

fn finish(report: DeliveryReport) -> DeliveryReport {
    let span = tracing::Span::current();
    span.record("attempts", report.attempts.len());
    span.record("outcome", outcome_label(&report.outcome));
    report
}

fn outcome_label(outcome: &DeliveryOutcome) -> &'static str {
    match outcome {
        DeliveryOutcome::Delivered { .. } => "delivered",
        DeliveryOutcome::SignatureRejected { .. } => "signature_rejected",
        DeliveryOutcome::Refused { .. } => "refused",
        DeliveryOutcome::GaveUp => "gave_up",
        DeliveryOutcome::InvalidDestination(_) => "invalid_destination",
        DeliveryOutcome::SigningFailed(_) => "signing_failed",
    }
}
