//! One signed delivery attempt, and the spec's reading of its answer.
//!
//! [`WebhookSender`](super::WebhookSender) loops over [`AttemptClient`];
//! a durable outbox schedules it from its own queue. Both read answers
//! through [`classify_answer`], so there is one rule for when a delivery
//! is over.

use super::{parse_retry_after, Destination, DestinationAuth, DestinationPolicy, SenderError, SENDER_TRACING_TARGET};
use adcp_jwks::{DnsResolver, SsrfError, SystemDnsResolver, TrustRoots};
use adcp_sigbase::{Clock, SystemClock};
use adcp_sign::{HttpSigner, SignError, Signer, WebhookEvent};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use tokio::time::Instant;
use tracing::Instrument;

/// How much of an answer's body is read (and discarded) so that the
/// connection can go back to the pool; past it the connection is dropped
/// instead, so a receiver streaming a large body costs us nothing.
const MAX_DRAINED_RESPONSE_BYTES: usize = 64 * 1024;

/// The `webhook_activity[].status` of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptStatus {
    /// The receiver answered `2xx`.
    Success,
    /// The receiver answered something else, or the attempt stopped before
    /// sending for a reason that is neither a timeout nor a connection
    /// failure (the signer failed).
    Failed,
    /// No answer within the attempt deadline (signing included).
    Timeout,
    /// The connection could not be made or broke, or the SSRF rules
    /// refused the destination (by URL, or at connect time by the pinned
    /// resolver).
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
///
/// These are the facts of the attempt, not the spec's
/// `webhook_activity[]` item: that one also needs the fire's
/// `notification_type`, redacted `url` and timestamps, which belong to
/// whoever stores the records (a durable outbox).
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
    /// How long it took, signing included.
    pub duration: Duration,
}

/// What one attempt means for its delivery, by the AdCP spec's rules
/// (`webhooks.mdx` "Reliability", security "Retry semantics for
/// verification failures"): delivery is at-least-once, so every answer
/// but three is retried within the horizon.
///
/// | Answer | Verdict | Terminal |
/// |---|---|---|
/// | `2xx` | [`Delivered`](Self::Delivered) | yes |
/// | `401` + `WWW-Authenticate: Signature error="webhook_…"` | [`SignatureRejected`](Self::SignatureRejected) | yes |
/// | `409` | [`Conflict`](Self::Conflict) | yes |
/// | a plain `401`, `3xx` (never followed), every other `4xx`, `5xx`, timeouts, connection errors | [`Retry`](Self::Retry) | no |
/// | the SSRF rules refuse the destination | [`InvalidDestination`](Self::InvalidDestination) | yes |
/// | the signer fails | [`SigningFailed`](Self::SigningFailed) | yes |
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// The receiver acknowledged the event with this `2xx` status.
    Delivered {
        /// The status.
        status: u16,
    },
    /// `401` with `WWW-Authenticate: Signature error="webhook_…"`: the
    /// receiver refused the signature or the mode. The same bytes would be
    /// refused again, so the spec makes it terminal for this delivery;
    /// route sustained rates of these to incident response.
    SignatureRejected {
        /// The `webhook_*` code.
        code: String,
    },
    /// `409`: the receiver bound this `idempotency_key` to another
    /// payload. "A sender MUST stop retrying that key after `409`."
    Conflict,
    /// Anything else: try again after at least `retry_after`, within the
    /// delivery horizon. A plain `401` is a receiver configuration error
    /// the spec asks senders to treat as transient; `3xx` are never
    /// followed (the SSRF rules), but retried like any other failure.
    Retry {
        /// The receiver's `Retry-After`, when it sent a valid one.
        retry_after: Option<Duration>,
    },
    /// The SSRF rules refused the destination: by its URL before
    /// anything was sent, or at connect time when its name resolved to a
    /// reserved address. Nothing reached it.
    InvalidDestination(SsrfError),
    /// The attempt could not be signed; the `adcp_sign::SignError` code
    /// (`signer_unavailable` for a KMS or HSM that may come back).
    SigningFailed(String),
}

impl AttemptVerdict {
    /// Whether the delivery is over: everything but
    /// [`Retry`](Self::Retry).
    ///
    /// ```
    /// use adcp_webhook::{classify_answer, AttemptVerdict};
    /// assert!(classify_answer(204, None, None).is_terminal());
    /// assert!(classify_answer(409, None, None).is_terminal());
    /// assert!(!classify_answer(404, None, None).is_terminal());
    /// assert!(!AttemptVerdict::Retry { retry_after: None }.is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Retry { .. })
    }

    /// A stable label for logs and metrics: `delivered`,
    /// `signature_rejected`, `conflict`, `retry`, `invalid_destination`,
    /// `signing_failed`.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Delivered { .. } => "delivered",
            Self::SignatureRejected { .. } => "signature_rejected",
            Self::Conflict => "conflict",
            Self::Retry { .. } => "retry",
            Self::InvalidDestination(_) => "invalid_destination",
            Self::SigningFailed(_) => "signing_failed",
        }
    }
}

/// Reads a receiver's answer the spec's way (see [`AttemptVerdict`] for
/// the table): `2xx` delivered; `401` with a `webhook_*` code (from
/// [`signature_error_code`]) rejected; `409` a conflict; everything else
/// retried after at least `retry_after`. A code is only read on a `401`,
/// and only if it is a `webhook_*` code.
///
/// ```
/// use adcp_webhook::{classify_answer, AttemptVerdict};
/// use std::time::Duration;
///
/// assert_eq!(classify_answer(200, None, None), AttemptVerdict::Delivered { status: 200 });
/// assert_eq!(
///     classify_answer(401, Some("webhook_signature_invalid"), None),
///     AttemptVerdict::SignatureRejected { code: "webhook_signature_invalid".into() }
/// );
/// assert_eq!(classify_answer(409, None, None), AttemptVerdict::Conflict);
/// let wait = Some(Duration::from_secs(30));
/// assert_eq!(classify_answer(404, None, wait), AttemptVerdict::Retry { retry_after: wait });
/// ```
#[must_use]
pub fn classify_answer(status: u16, webhook_error_code: Option<&str>, retry_after: Option<Duration>) -> AttemptVerdict {
    match status {
        200..=299 => AttemptVerdict::Delivered { status },
        401 => match webhook_error_code.filter(|code| is_webhook_code(code)) {
            Some(code) => AttemptVerdict::SignatureRejected { code: code.to_owned() },
            None => AttemptVerdict::Retry { retry_after },
        },
        409 => AttemptVerdict::Conflict,
        _ => AttemptVerdict::Retry { retry_after },
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
    is_webhook_code(code).then(|| code.to_owned())
}

/// Only the webhook profile's taxonomy ends a delivery: a `request_*` code
/// or free text in the challenge is a receiver misconfiguration, retried.
fn is_webhook_code(code: &str) -> bool {
    code.len() > "webhook_".len()
        && code.starts_with("webhook_")
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
}

/// One attempt: its record and what it means for the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    /// What happened, for the activity log.
    pub record: AttemptRecord,
    /// What it means for the delivery.
    pub verdict: AttemptVerdict,
}

/// Builds an [`AttemptClient`].
pub struct AttemptClientBuilder {
    destinations: DestinationPolicy,
    resolver: Arc<dyn DnsResolver>,
    roots: TrustRoots,
    attempt_timeout: Duration,
    connect_timeout: Duration,
    clock: Arc<dyn Clock>,
}

impl AttemptClientBuilder {
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

    /// The deadline of one attempt, from the start of signing to the
    /// response headers (default 10 s), and of its TCP + TLS connect
    /// (default 5 s); the defaults are [`RetryPolicy`](super::RetryPolicy)'s.
    /// A queue that leases deliveries should lease for longer than
    /// `attempt`, or a second worker may send the same event meanwhile.
    #[must_use]
    pub fn timeouts(mut self, attempt: Duration, connect: Duration) -> Self {
        self.attempt_timeout = attempt;
        self.connect_timeout = connect;
        self
    }

    /// The wall clock (Unix seconds) behind [`AttemptRecord::started_at`]
    /// and the delay a `Retry-After` date asks for (default
    /// [`SystemClock`]). The signer stamps `created` from its own clock;
    /// deadlines and durations use the monotonic clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Builds the client and its connection pool.
    ///
    /// # Errors
    ///
    /// [`SenderError::InvalidTimeouts`] for a zero timeout;
    /// [`SenderError::Client`] when the HTTP client (TLS roots, …) cannot
    /// be built.
    pub fn build(self) -> Result<AttemptClient, SenderError> {
        if self.attempt_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(SenderError::InvalidTimeouts);
        }
        let http = build_client(
            self.attempt_timeout,
            self.connect_timeout,
            &self.destinations,
            self.resolver,
            &self.roots,
        )?;
        Ok(AttemptClient {
            inner: Arc::new(AttemptInner {
                http,
                destinations: self.destinations,
                attempt_timeout: self.attempt_timeout,
                connect_timeout: self.connect_timeout,
                clock: self.clock,
            }),
        })
    }
}

struct AttemptInner {
    http: reqwest::Client,
    destinations: DestinationPolicy,
    attempt_timeout: Duration,
    connect_timeout: Duration,
    clock: Arc<dyn Clock>,
}

/// Makes one signed delivery attempt at a time, for a caller that owns
/// the schedule (a durable outbox, or [`WebhookSender`](super::WebhookSender)'s
/// own retry loop). The signer is an argument, so one client (one
/// connection pool, one set of SSRF rules) serves every key.
///
/// Each [`attempt`](Self::attempt): checks the destination against the
/// SSRF rules; signs afresh (RFC 9421 with the given signer, or the
/// destination's legacy HMAC / Bearer credential); sends over a client
/// that connects only to range-checked addresses it resolved itself,
/// follows no redirect and uses no proxy; reads the answer under one
/// deadline that covers signing and sending; reads at most 64 KiB of the
/// body so the connection can be reused; and classifies it with
/// [`classify_answer`]. It never panics and never retries.
///
/// Cheap to clone: clones share the connection pool.
///
/// ```no_run
/// use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
/// use adcp_webhook::{AttemptClient, AttemptVerdict, Destination, McpWebhook, TaskStatus};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = AttemptClient::builder().build()?;
/// let signer = HttpSigner::webhook(SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?)?;
/// let destination = Destination::new("https://buyer.example/webhooks/adcp");
/// let event = McpWebhook::new("task_1", "create_media_buy", TaskStatus::Completed, "2026-04-18T12:00:00Z")
///     .into_event()?; // stored with the delivery: every attempt sends these bytes
/// let result = client.attempt(&signer, &destination, &event, 1).await;
/// match result.verdict {
///     AttemptVerdict::Retry { retry_after } => { /* reschedule, at least `retry_after` later */ }
///     done => println!("delivery over: {done:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AttemptClient {
    inner: Arc<AttemptInner>,
}

impl fmt::Debug for AttemptClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptClient")
            .field("destinations", &self.inner.destinations)
            .field("attempt_timeout", &self.inner.attempt_timeout)
            .field("connect_timeout", &self.inner.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl AttemptClient {
    /// A builder with the production defaults: the default SSRF policy,
    /// the system resolver, the Mozilla roots, 10 s per attempt and 5 s
    /// per connect, the system clock.
    #[must_use]
    pub fn builder() -> AttemptClientBuilder {
        let defaults = super::RetryPolicy::default();
        AttemptClientBuilder {
            destinations: DestinationPolicy::default(),
            resolver: Arc::new(SystemDnsResolver),
            roots: TrustRoots::default(),
            attempt_timeout: defaults.attempt_timeout(),
            connect_timeout: defaults.connect_timeout(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The SSRF rules in force (to check a registration before queueing it).
    #[must_use]
    pub fn destination_policy(&self) -> &DestinationPolicy {
        &self.inner.destinations
    }

    /// The deadline of one attempt, signing included.
    #[must_use]
    pub fn attempt_timeout(&self) -> Duration {
        self.inner.attempt_timeout
    }

    /// The connect deadline.
    #[must_use]
    pub fn connect_timeout(&self) -> Duration {
        self.inner.connect_timeout
    }

    /// The pinned client, for the activation exchange (same SSRF rules and
    /// pool; its own per-request deadline).
    pub(super) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// Makes attempt number `attempt` (1 for the first) to deliver `event`
    /// to `destination`, signed by `signer` when the destination uses RFC
    /// 9421 (a legacy destination carries its own credential). Never
    /// panics: every failure is a verdict, and every call yields a record.
    pub async fn attempt<S: Signer>(
        &self,
        signer: &HttpSigner<S>,
        destination: &Destination,
        event: &WebhookEvent,
        attempt: u32,
    ) -> AttemptResult {
        let span = tracing::info_span!(
            target: SENDER_TRACING_TARGET,
            "webhook.attempt",
            idempotency_key = event.idempotency_key().as_str(),
            attempt,
            auth = destination.auth().as_str(),
        );
        self.attempt_inner(signer, destination, event, attempt)
            .instrument(span)
            .await
    }

    async fn attempt_inner<S: Signer>(
        &self,
        signer: &HttpSigner<S>,
        destination: &Destination,
        event: &WebhookEvent,
        attempt: u32,
    ) -> AttemptResult {
        let started = Instant::now();
        let mut record = AttemptRecord {
            idempotency_key: event.idempotency_key().as_str().to_owned(),
            attempt,
            status: AttemptStatus::Failed,
            http_status_code: None,
            error_code: None,
            error_message: None,
            started_at: self.inner.clock.now(),
            duration: Duration::ZERO,
        };
        let verdict = self
            .run(
                signer,
                destination,
                event,
                started + self.inner.attempt_timeout,
                &mut record,
            )
            .await;
        record.duration = started.elapsed();
        tracing::info!(
            target: SENDER_TRACING_TARGET,
            attempt,
            status = record.status.as_str(),
            http_status = record.http_status_code,
            error_code = record.error_code.as_deref(),
            verdict = verdict.as_str(),
            "webhook delivery attempt"
        );
        match &verdict {
            AttemptVerdict::SignatureRejected { code } => tracing::error!(
                target: SENDER_TRACING_TARGET,
                code = %code,
                "receiver rejected the webhook signature; delivery stopped (terminal per spec)"
            ),
            AttemptVerdict::Conflict => tracing::warn!(
                target: SENDER_TRACING_TARGET,
                "receiver holds another payload under this idempotency_key (409); delivery stopped (terminal per spec)"
            ),
            AttemptVerdict::InvalidDestination(e) => tracing::warn!(
                target: SENDER_TRACING_TARGET,
                error = %e,
                "webhook destination refused by the SSRF rules"
            ),
            AttemptVerdict::SigningFailed(code) => tracing::error!(
                target: SENDER_TRACING_TARGET,
                code = %code,
                "webhook attempt not signed"
            ),
            AttemptVerdict::Delivered { .. } | AttemptVerdict::Retry { .. } => {}
        }
        AttemptResult { record, verdict }
    }

    async fn run<S: Signer>(
        &self,
        signer: &HttpSigner<S>,
        destination: &Destination,
        event: &WebhookEvent,
        deadline: Instant,
        record: &mut AttemptRecord,
    ) -> AttemptVerdict {
        let inner = &*self.inner;
        // Reqwest never resolves an IP-literal host, so literals are only
        // checked here; names are checked again by the pinned resolver.
        if let Err(e) = inner.destinations.check(destination.url()) {
            record.status = AttemptStatus::ConnectionError;
            record.error_message = Some(format!("destination refused: {e}"));
            return AttemptVerdict::InvalidDestination(e);
        }
        // A KMS that hangs must not hold the attempt past its deadline: a
        // slow signer is a timeout like a slow receiver, retried.
        let request = match tokio::time::timeout_at(deadline, self.build_request(signer, destination, event)).await {
            Err(_) => {
                record.status = AttemptStatus::Timeout;
                record.error_message = Some("not signed within the attempt deadline".to_owned());
                return AttemptVerdict::Retry { retry_after: None };
            }
            Ok(Err(code)) => {
                record.error_message = Some(format!("not signed: {code}"));
                return AttemptVerdict::SigningFailed(code);
            }
            Ok(Ok(request)) => request,
        };
        match tokio::time::timeout_at(deadline, inner.http.execute(request)).await {
            Err(_) => {
                record.status = AttemptStatus::Timeout;
                record.error_message = Some("no response within the attempt deadline".to_owned());
                AttemptVerdict::Retry { retry_after: None }
            }
            Ok(Err(e)) => {
                if let Some(ssrf) = ssrf_cause(&e) {
                    record.status = AttemptStatus::ConnectionError;
                    record.error_message = Some(format!("destination refused: {ssrf}"));
                    return AttemptVerdict::InvalidDestination(ssrf);
                }
                record.status = if e.is_timeout() {
                    AttemptStatus::Timeout
                } else {
                    AttemptStatus::ConnectionError
                };
                record.error_message = Some(describe(&e));
                AttemptVerdict::Retry { retry_after: None }
            }
            Ok(Ok(response)) => read_answer(response, record, inner.clock.now(), deadline).await,
        }
    }

    /// Signs one attempt: a fresh signature over the event's fixed bytes.
    async fn build_request<S: Signer>(
        &self,
        signer: &HttpSigner<S>,
        destination: &Destination,
        event: &WebhookEvent,
    ) -> Result<reqwest::Request, String> {
        let client = &self.inner.http;
        let builder = match destination.auth() {
            DestinationAuth::Rfc9421 => {
                let signed = signer
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

/// Fills `record` from an answer received at `now` (Unix seconds),
/// drains (a bounded amount of) its body before `deadline` so the
/// connection can be reused, and classifies it.
async fn read_answer(
    mut response: reqwest::Response,
    record: &mut AttemptRecord,
    now: i64,
    deadline: Instant,
) -> AttemptVerdict {
    let status = response.status().as_u16();
    record.http_status_code = Some(status);
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, UNIX_EPOCH + Duration::from_secs(u64::try_from(now).unwrap_or(0))));
    let webhook_code = (status == 401)
        .then(|| {
            response
                .headers()
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .find_map(|v| v.to_str().ok().and_then(signature_error_code))
        })
        .flatten();
    // The verdict is already known; past the deadline the connection is
    // simply dropped rather than reused.
    let drain = async {
        let mut drained = 0_usize;
        while drained < MAX_DRAINED_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => drained += chunk.len(),
                _ => break,
            }
        }
    };
    if tokio::time::timeout_at(deadline, drain).await.is_err() {
        tracing::debug!(target: SENDER_TRACING_TARGET, "answer body not drained within the attempt deadline");
    }
    let verdict = classify_answer(status, webhook_code.as_deref(), retry_after);
    record.status = AttemptStatus::Failed;
    match &verdict {
        AttemptVerdict::Delivered { .. } => {
            record.status = AttemptStatus::Success;
        }
        AttemptVerdict::SignatureRejected { code } => {
            record.error_code = Some(code.clone());
            record.error_message = Some(format!("receiver rejected the signature: {code}"));
        }
        AttemptVerdict::Conflict => {
            record.error_message = Some("HTTP 409: the receiver holds another payload under this key".to_owned());
        }
        _ if (300..400).contains(&status) => {
            record.error_message = Some(format!("HTTP {status} (redirects are not followed)"));
        }
        _ => record.error_message = Some(format!("HTTP {status}")),
    }
    verdict
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

/// The SSRF refusal behind a transport error, if the pinned resolver
/// refused the destination's addresses.
pub(super) fn ssrf_cause(e: &reqwest::Error) -> Option<SsrfError> {
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
    attempt_timeout: Duration,
    connect_timeout: Duration,
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
        .connect_timeout(connect_timeout)
        // A backstop: attempts run under their own deadline, and the
        // activation exchange sets its own per request.
        .timeout(attempt_timeout)
        .dns_resolver(destinations.policy().dns_resolver_with(resolver))
        .build()
        .map_err(|e| SenderError::Client(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hundreds_are_delivered() {
        for status in [200, 201, 202, 204, 299] {
            assert_eq!(
                classify_answer(status, None, Some(Duration::from_secs(5))),
                AttemptVerdict::Delivered { status }
            );
        }
        // A code on a 2xx changes nothing.
        assert_eq!(
            classify_answer(200, Some("webhook_signature_invalid"), None),
            AttemptVerdict::Delivered { status: 200 }
        );
    }

    #[test]
    fn a_401_with_a_webhook_code_is_a_signature_rejection() {
        for code in [
            "webhook_signature_invalid",
            "webhook_signature_replayed",
            "webhook_target_uri_malformed",
            "webhook_mode_mismatch",
        ] {
            let verdict = classify_answer(401, Some(code), Some(Duration::from_secs(5)));
            assert_eq!(verdict, AttemptVerdict::SignatureRejected { code: code.to_owned() });
            assert!(verdict.is_terminal());
        }
    }

    #[test]
    fn a_plain_401_is_transient() {
        let wait = Some(Duration::from_secs(3));
        for code in [
            None,
            Some("request_signature_invalid"),
            Some("webhook_"),
            Some("Webhook_X"),
        ] {
            assert_eq!(
                classify_answer(401, code, wait),
                AttemptVerdict::Retry { retry_after: wait },
                "{code:?}"
            );
        }
    }

    #[test]
    fn a_409_is_a_conflict_whatever_else_it_says() {
        assert_eq!(classify_answer(409, None, None), AttemptVerdict::Conflict);
        assert_eq!(
            classify_answer(409, Some("webhook_signature_invalid"), Some(Duration::from_secs(1))),
            AttemptVerdict::Conflict
        );
        assert!(AttemptVerdict::Conflict.is_terminal());
    }

    #[test]
    fn redirects_other_4xx_and_5xx_are_retried_with_their_retry_after() {
        let wait = Some(Duration::from_secs(7));
        for status in [
            100, 199, 300, 301, 302, 303, 304, 307, 308, 400, 402, 403, 404, 405, 408, 410, 413, 415, 422, 425, 429,
            451, 499, 500, 502, 503, 504, 599,
        ] {
            for retry_after in [None, wait] {
                let verdict = classify_answer(status, None, retry_after);
                assert_eq!(verdict, AttemptVerdict::Retry { retry_after }, "{status}");
                assert!(!verdict.is_terminal(), "{status}");
            }
            // A webhook code off a 401 is not a signature rejection.
            assert_eq!(
                classify_answer(status, Some("webhook_signature_invalid"), None),
                AttemptVerdict::Retry { retry_after: None },
                "{status}"
            );
        }
    }

    #[test]
    fn only_retry_is_not_terminal() {
        let terminal = [
            AttemptVerdict::Delivered { status: 200 },
            AttemptVerdict::SignatureRejected {
                code: "webhook_signature_invalid".to_owned(),
            },
            AttemptVerdict::Conflict,
            AttemptVerdict::InvalidDestination(SsrfError::SchemeNotAllowed),
            AttemptVerdict::SigningFailed("signer_failed".to_owned()),
        ];
        assert!(terminal.iter().all(AttemptVerdict::is_terminal));
        assert!(!AttemptVerdict::Retry { retry_after: None }.is_terminal());
    }

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
        assert_eq!(signature_error_code(r#"Signature error="webhook_""#), None);
        assert_eq!(signature_error_code("Signature"), None);
    }

    fn blank_record() -> AttemptRecord {
        AttemptRecord {
            idempotency_key: "whk_1".to_owned(),
            attempt: 1,
            status: AttemptStatus::Failed,
            http_status_code: None,
            error_code: None,
            error_message: None,
            started_at: 0,
            duration: Duration::ZERO,
        }
    }

    fn answer(status: u16, headers: &[(&'static str, &str)]) -> reqwest::Response {
        let mut b = http::Response::builder().status(status);
        for (name, value) in headers {
            b = b.header(*name, *value);
        }
        reqwest::Response::from(b.body(Vec::new()).unwrap())
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    /// A `Retry-After` date is read against the client's clock, so a pinned
    /// clock pins the delay.
    #[tokio::test]
    async fn a_retry_after_date_counts_from_the_clock() {
        let mut record = blank_record();
        // 1994-11-06 08:49:30 GMT, seven seconds before the date.
        let now = 784_111_770;
        let date = [("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")];
        let verdict = read_answer(answer(503, &date), &mut record, now, later()).await;
        assert_eq!(
            verdict,
            AttemptVerdict::Retry {
                retry_after: Some(Duration::from_secs(7))
            }
        );
        let verdict = read_answer(answer(503, &date), &mut record, now + 60, later()).await;
        assert_eq!(
            verdict,
            AttemptVerdict::Retry {
                retry_after: Some(Duration::ZERO)
            }
        );
        assert_eq!(record.http_status_code, Some(503));
    }

    #[tokio::test]
    async fn the_record_follows_the_verdict() {
        let mut record = blank_record();
        let challenge = [("www-authenticate", r#"Signature error="webhook_signature_invalid""#)];
        let verdict = read_answer(answer(401, &challenge), &mut record, 0, later()).await;
        assert!(matches!(verdict, AttemptVerdict::SignatureRejected { .. }));
        assert_eq!(
            (record.status, record.error_code.as_deref()),
            (AttemptStatus::Failed, Some("webhook_signature_invalid"))
        );

        let mut record = blank_record();
        let verdict = read_answer(
            answer(302, &[("location", "https://elsewhere.example/")]),
            &mut record,
            0,
            later(),
        )
        .await;
        assert_eq!(verdict, AttemptVerdict::Retry { retry_after: None });
        assert_eq!(record.status, AttemptStatus::Failed);
        assert_eq!(record.http_status_code, Some(302));
        assert_eq!(record.error_code, None);

        let mut record = blank_record();
        let verdict = read_answer(answer(204, &[]), &mut record, 0, later()).await;
        assert_eq!(verdict, AttemptVerdict::Delivered { status: 204 });
        assert_eq!((record.status, record.error_message), (AttemptStatus::Success, None));
    }
}
