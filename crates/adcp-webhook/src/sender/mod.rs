//! The seller side: deliver one event to one destination, with retries.
//!
//! The user-facing documentation is the crate root's (these types are
//! re-exported there).

mod activation;
mod destination;
mod retry;

pub use activation::{
    Activation, ActivationError, ActivationOutcome, ActivationReport, ChallengeScope, EchoError, EchoMember,
    ACCOUNT_EVENT_TYPES, AGENT_EVENT_TYPES, DEFAULT_ACTIVATION_TIMEOUT, MAX_ACTIVATION_RESPONSE_BYTES,
    MAX_ACTIVATION_TIMEOUT,
};
pub use destination::{Destination, DestinationAuth, DestinationError, DestinationPolicy};
pub use retry::{parse_retry_after, RetryPolicy, RetryPolicyError};

use adcp_jwks::SsrfError;
use adcp_jwks::{DnsResolver, SystemDnsResolver, TrustRoots};
use adcp_sigbase::{Clock, SystemClock};
use adcp_sign::{HttpSigner, OsRandom, RandomSource, SignError, Signer, WebhookEvent};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};
use tracing::Instrument;

/// The tracing target of sender events.
pub const SENDER_TRACING_TARGET: &str = "adcp_webhook::sender";

/// The `webhook_activity[].status` of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptStatus {
    /// The receiver answered `2xx`.
    Success,
    /// The receiver answered something else.
    Failed,
    /// No answer within the attempt deadline.
    Timeout,
    /// The connection could not be made or broke.
    ConnectionError,
}

impl AttemptStatus {
    /// `success`, `failed`, `timeout`, `connection_error`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::ConnectionError => "connection_error",
        }
    }
}

/// One delivery attempt, as a seller records it to answer "did it fire?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The event's `idempotency_key`.
    pub idempotency_key: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// What happened.
    pub status: AttemptStatus,
    /// The HTTP status, when the receiver answered.
    pub http_status_code: Option<u16>,
    /// The `webhook_*` code from `WWW-Authenticate`, when present.
    pub error_code: Option<String>,
    /// A short description for operators (never the response body).
    pub error_message: Option<String>,
    /// When the attempt started (Unix seconds).
    pub started_at: i64,
    /// How long it took.
    pub duration: Duration,
}

impl AttemptRecord {
    /// The record in the spec's `webhook_activity[]` item shape.
    #[must_use]
    pub fn to_activity_json(&self) -> serde_json::Value {
        serde_json::json!({
            "idempotency_key": self.idempotency_key,
            "status": self.status.as_str(),
            "http_status_code": self.http_status_code,
            "attempt": self.attempt,
            "error_message": self.error_message,
        })
    }
}

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
    /// A terminal refusal other than a signature one (`409` for a changed
    /// payload under the same key, a redirect, another `4xx`).
    Refused {
        /// The status.
        status: u16,
    },
    /// Retries ran out (horizon or attempt cap) on retryable failures.
    GaveUp,
    /// The destination failed validation before any attempt.
    InvalidDestination(SsrfError),
    /// The sender could not sign (key unavailable, …).
    SigningFailed(String),
}

impl DeliveryOutcome {
    /// Whether the receiver acknowledged the event.
    #[must_use]
    pub fn is_delivered(&self) -> bool {
        matches!(self, Self::Delivered { .. })
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

/// A sender could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SenderError {
    /// The HTTP client (TLS roots, …) could not be built.
    #[error("http client: {0}")]
    Client(String),
}

/// Builds a [`WebhookSender`].
pub struct WebhookSenderBuilder<S> {
    signer: HttpSigner<S>,
    policy: RetryPolicy,
    destinations: DestinationPolicy,
    resolver: Arc<dyn DnsResolver>,
    roots: TrustRoots,
    observer: Option<Arc<dyn DeliveryObserver>>,
    random: Arc<dyn RandomSource>,
    clock: Arc<dyn Clock>,
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
        self.destinations = policy;
        self
    }

    /// The resolver used for every destination name (default: the system
    /// resolver). Its answers are range-checked before use.
    #[must_use]
    pub fn dns_resolver(mut self, resolver: Arc<dyn DnsResolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// The CAs trusted for destination certificates (default: the Mozilla
    /// set from `webpki-roots`).
    #[must_use]
    pub fn trust_roots(mut self, roots: TrustRoots) -> Self {
        self.roots = roots;
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
    /// asks for (default [`SystemClock`]). The signer stamps `created`
    /// from its own clock; deadlines and durations use the monotonic clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Builds the sender and its HTTP client.
    ///
    /// # Errors
    ///
    /// [`SenderError::Client`].
    pub fn build(self) -> Result<WebhookSender<S>, SenderError> {
        let client = build_client(&self.policy, &self.destinations, self.resolver, &self.roots)?;
        Ok(WebhookSender {
            inner: Arc::new(Inner {
                signer: self.signer,
                policy: self.policy,
                destinations: self.destinations,
                client,
                observer: self.observer,
                random: self.random,
                clock: self.clock,
            }),
        })
    }
}

struct Inner<S> {
    signer: HttpSigner<S>,
    policy: RetryPolicy,
    destinations: DestinationPolicy,
    client: reqwest::Client,
    observer: Option<Arc<dyn DeliveryObserver>>,
    random: Arc<dyn RandomSource>,
    clock: Arc<dyn Clock>,
}

/// Delivers signed webhooks with retries. Cheap to clone; share one per
/// signing key.
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
            .field("destinations", &self.inner.destinations)
            .finish_non_exhaustive()
    }
}

/// How one answer is classified.
enum Verdict {
    Done(DeliveryOutcome),
    Retry(Option<Duration>),
}

impl<S: Signer> WebhookSender<S> {
    /// A builder around `signer` (an [`HttpSigner`] with the webhook
    /// profile, [`HttpSigner::webhook`]).
    pub fn builder(signer: HttpSigner<S>) -> WebhookSenderBuilder<S> {
        WebhookSenderBuilder {
            signer,
            policy: RetryPolicy::default(),
            destinations: DestinationPolicy::default(),
            resolver: Arc::new(SystemDnsResolver),
            roots: TrustRoots::default(),
            observer: None,
            random: Arc::new(OsRandom),
            clock: Arc::new(SystemClock),
        }
    }

    /// The retry policy.
    #[must_use]
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.policy
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
        if let Err(e) = inner.destinations.check(destination.url()) {
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
        let first = Instant::now();
        let deadline = first + inner.policy.horizon();
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let started = Instant::now();
            let started_at = inner.clock.now();
            let request = match self.build_request(destination, event).await {
                Ok(r) => r,
                Err(e) => {
                    report.outcome = DeliveryOutcome::SigningFailed(e);
                    return finish(report);
                }
            };
            let sent = tokio::time::timeout(inner.policy.attempt_timeout(), inner.client.execute(request)).await;
            let mut record = AttemptRecord {
                idempotency_key: report.idempotency_key.clone(),
                attempt,
                status: AttemptStatus::Failed,
                http_status_code: None,
                error_code: None,
                error_message: None,
                started_at,
                duration: Duration::ZERO,
            };
            let verdict = match sent {
                Err(_) => {
                    record.status = AttemptStatus::Timeout;
                    record.error_message = Some("no response within the attempt deadline".to_owned());
                    Verdict::Retry(None)
                }
                Ok(Err(e)) => {
                    record.status = if e.is_timeout() {
                        AttemptStatus::Timeout
                    } else {
                        AttemptStatus::ConnectionError
                    };
                    record.error_message = Some(describe(&e));
                    // An SSRF refusal from the pinned resolver is final.
                    match ssrf_cause(&e) {
                        Some(ssrf) => Verdict::Done(DeliveryOutcome::InvalidDestination(ssrf)),
                        None => Verdict::Retry(None),
                    }
                }
                Ok(Ok(response)) => classify(response, &mut record, inner.clock.now()).await,
            };
            record.duration = started.elapsed();
            tracing::info!(
                target: SENDER_TRACING_TARGET,
                attempt,
                status = record.status.as_str(),
                http_status = record.http_status_code,
                error_code = record.error_code.as_deref(),
                "webhook delivery attempt"
            );
            if let Some(observer) = &inner.observer {
                observer.on_attempt(&record);
            }
            report.attempts.push(record);
            match verdict {
                Verdict::Done(outcome) => {
                    if let DeliveryOutcome::SignatureRejected { code } = &outcome {
                        tracing::error!(
                            target: SENDER_TRACING_TARGET,
                            code = %code,
                            "receiver rejected the webhook signature; delivery stopped (terminal per spec)"
                        );
                    }
                    report.outcome = outcome;
                    return finish(report);
                }
                Verdict::Retry(retry_after) => {
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
    }

    /// Signs one attempt: fresh signature over the event's fixed bytes.
    async fn build_request(&self, destination: &Destination, event: &WebhookEvent) -> Result<reqwest::Request, String> {
        let client = &self.inner.client;
        let builder = match destination.auth() {
            DestinationAuth::Rfc9421 => {
                let signed = self
                    .inner
                    .signer
                    .sign_webhook(destination.url(), event)
                    .await
                    .map_err(|e: SignError| e.code().to_owned())?;
                let mut b = client.post(signed.url());
                for (name, value) in signed.headers() {
                    b = b.header(*name, value);
                }
                b
            }
            DestinationAuth::HmacSha256(hmac) => {
                let signed = hmac.sign_event(event).map_err(|e| e.code().to_owned())?;
                let mut b = client
                    .post(destination.url())
                    .header(http::header::CONTENT_TYPE, adcp_sign::JSON_CONTENT_TYPE);
                for (name, value) in signed.headers() {
                    b = b.header(name, value);
                }
                b
            }
            DestinationAuth::Bearer(token) => client
                .post(destination.url())
                .header(http::header::CONTENT_TYPE, adcp_sign::JSON_CONTENT_TYPE)
                .header(http::header::AUTHORIZATION, format!("Bearer {token}")),
        };
        builder
            .body(event.body().as_bytes().to_vec())
            .build()
            .map_err(|_| "target_uri_malformed".to_owned())
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

/// Classifies an answer received at `now` (Unix seconds) and drains (a
/// bounded amount of) its body so the connection can be reused.
async fn classify(mut response: reqwest::Response, record: &mut AttemptRecord, now: i64) -> Verdict {
    let status = response.status();
    record.http_status_code = Some(status.as_u16());
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, UNIX_EPOCH + Duration::from_secs(u64::try_from(now).unwrap_or(0))));
    let webhook_code = (status == http::StatusCode::UNAUTHORIZED)
        .then(|| {
            response
                .headers()
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .find_map(|v| v.to_str().ok().and_then(signature_error_code))
        })
        .flatten();
    let mut drained = 0_usize;
    while drained < 64 * 1024 {
        match response.chunk().await {
            Ok(Some(chunk)) => drained += chunk.len(),
            _ => break,
        }
    }
    if status.is_success() {
        record.status = AttemptStatus::Success;
        return Verdict::Done(DeliveryOutcome::Delivered {
            status: status.as_u16(),
        });
    }
    record.status = AttemptStatus::Failed;
    if let Some(code) = webhook_code {
        record.error_code = Some(code.clone());
        record.error_message = Some(format!("receiver rejected the signature: {code}"));
        return Verdict::Done(DeliveryOutcome::SignatureRejected { code });
    }
    record.error_message = Some(format!("HTTP {}", status.as_u16()));
    match status.as_u16() {
        429 | 408 | 425 => Verdict::Retry(retry_after),
        // A 401 without a webhook_* code is a receiver-side configuration
        // problem the spec asks senders to treat as transient.
        401 => Verdict::Retry(retry_after),
        s if (500..600).contains(&s) => Verdict::Retry(retry_after),
        s => Verdict::Done(DeliveryOutcome::Refused { status: s }),
    }
}

/// The code of a `WWW-Authenticate: Signature error="webhook_…"`
/// challenge, if the value is one (what makes a `401` terminal for a
/// delivery).
///
/// ```
/// use adcp_webhook::signature_error_code;
/// assert_eq!(
///     signature_error_code(r#"Signature error="webhook_signature_replayed""#).as_deref(),
///     Some("webhook_signature_replayed")
/// );
/// assert_eq!(signature_error_code("Bearer"), None);
/// ```
#[must_use]
pub fn signature_error_code(challenge: &str) -> Option<String> {
    let rest = challenge.trim().strip_prefix("Signature")?;
    let rest = rest.trim_start();
    let start = rest.find("error=\"")? + "error=\"".len();
    let tail = rest.get(start..)?;
    let code = &tail[..tail.find('"')?];
    let valid = code.starts_with("webhook_")
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit());
    valid.then(|| code.to_owned())
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_connect() {
        "connection failed".to_owned()
    } else if e.is_timeout() {
        "timed out".to_owned()
    } else {
        "transport error".to_owned()
    }
}

fn ssrf_cause(e: &reqwest::Error) -> Option<SsrfError> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(ssrf) = err.downcast_ref::<SsrfError>() {
            return Some(ssrf.clone());
        }
        source = err.source();
    }
    None
}

fn build_client(
    policy: &RetryPolicy,
    destinations: &DestinationPolicy,
    resolver: Arc<dyn DnsResolver>,
    roots: &TrustRoots,
) -> Result<reqwest::Client, SenderError> {
    let mut store = rustls::RootCertStore::empty();
    match roots {
        TrustRoots::WebPki => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        TrustRoots::Custom(ders) => {
            for der in ders {
                store
                    .add(rustls::pki_types::CertificateDer::from(der.clone()))
                    .map_err(|e| SenderError::Client(format!("trust root: {e}")))?;
            }
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SenderError::Client(format!("tls: {e}")))?
        .with_root_certificates(store)
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .https_only(!destinations.allows_plain_http_loopback())
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(policy.connect_timeout())
        .timeout(policy.attempt_timeout())
        .dns_resolver(destinations.policy().dns_resolver_with(resolver))
        .build()
        .map_err(|e| SenderError::Client(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_webhook_signature_challenges_are_terminal_codes() {
        assert_eq!(
            signature_error_code(r#"Signature error="webhook_signature_invalid""#).as_deref(),
            Some("webhook_signature_invalid")
        );
        assert_eq!(
            signature_error_code(r#"Signature error="request_signature_invalid""#),
            None
        );
        assert_eq!(signature_error_code(r#"Bearer error="webhook_x""#), None);
        assert_eq!(signature_error_code(r#"Signature error="webhook_"#), None);
        assert_eq!(signature_error_code("Signature"), None);
    }

    /// A `Retry-After` date is read against the sender's clock, so a pinned
    /// clock pins the delay.
    #[tokio::test]
    async fn a_retry_after_date_counts_from_the_clock() {
        let answer = |retry_after: &str| {
            reqwest::Response::from(
                http::Response::builder()
                    .status(503)
                    .header(http::header::RETRY_AFTER, retry_after)
                    .body(Vec::new())
                    .unwrap_or_default(),
            )
        };
        let mut record = AttemptRecord {
            idempotency_key: "whk_1".to_owned(),
            attempt: 1,
            status: AttemptStatus::Failed,
            http_status_code: None,
            error_code: None,
            error_message: None,
            started_at: 0,
            duration: Duration::ZERO,
        };
        // 1994-11-06 08:49:30 GMT, seven seconds before the date.
        let now = 784_111_770;
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        let verdict = classify(answer(date), &mut record, now).await;
        assert!(matches!(verdict, Verdict::Retry(Some(d)) if d == Duration::from_secs(7)));
        let verdict = classify(answer(date), &mut record, now + 60).await;
        assert!(matches!(verdict, Verdict::Retry(Some(Duration::ZERO))));
        assert_eq!(record.http_status_code, Some(503));
    }
}
