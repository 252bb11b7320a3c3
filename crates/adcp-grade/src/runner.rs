//! What every live grader shares: the options, the HTTP client built from
//! the SSRF policy, and sending one prepared request.

use crate::error::GradeError;
use crate::report::CaseResult;
use crate::report::Selection;
use adcp_request::TargetPolicy;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The rate-abuse cap the signed-requests test kit targets
/// (`grading_target_per_keyid_cap_requests`).
pub const DEFAULT_RATE_ABUSE_CAP: usize = 100;

/// How the rate-abuse vector is provoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateAbuse {
    /// Send up to this many distinct-nonce requests signed by the vector's
    /// keyid (the endpoint's per-keyid cap for the test counterparty),
    /// then the vector, which must be refused `*_signature_rate_abuse`.
    Cap(usize),
    /// Report the vector as skipped (`--skip-rate-abuse`).
    Skip,
}

impl Default for RateAbuse {
    fn default() -> Self {
        Self::Cap(DEFAULT_RATE_ABUSE_CAP)
    }
}

/// The options every grader takes.
#[derive(Debug, Clone)]
pub struct GradeOptions {
    /// The conformance suite directory (`request-signing/`,
    /// `webhook-signing/` and their `keys.json`): read at run time, never
    /// copied. [`GradeOptions::located`] locates it as `adcp_vectors::dir`
    /// does. The signer grader signs its own sample messages and never
    /// reads it.
    pub suite: PathBuf,
    /// The SSRF rules the target URL passes: public HTTPS only unless
    /// [`TargetPolicy::dangerously_allow_plain_http`] (`--allow-http`).
    pub policy: TargetPolicy,
    /// Bound on each request (connect and answer).
    pub timeout: Duration,
    /// `--only` / `--skip`.
    pub selection: Selection,
    /// How the rate-abuse vector is provoked.
    pub rate_abuse: RateAbuse,
}

impl GradeOptions {
    /// Production defaults with the suite at `suite`.
    #[must_use]
    pub fn new(suite: impl Into<PathBuf>) -> Self {
        Self {
            suite: suite.into(),
            policy: TargetPolicy::default(),
            timeout: DEFAULT_TIMEOUT,
            selection: Selection::default(),
            rate_abuse: RateAbuse::default(),
        }
    }

    /// [`GradeOptions::new`] with the suite located as `adcp_vectors::dir`
    /// does (`$ADCP_VECTORS_DIR`, the workplace's `shared/vectors/adcp`,
    /// the fetched `test-vectors/adcp`).
    ///
    /// # Errors
    ///
    /// [`GradeError::Suite`] when no suite is found.
    pub fn located() -> Result<Self, GradeError> {
        adcp_vectors::dir().map(Self::new).ok_or_else(|| {
            GradeError::Suite("conformance suite not found (set ADCP_VECTORS_DIR or pass --vectors DIR)".into())
        })
    }
}

/// A request ready to send: method, absolute URL, header lines (`Host`
/// among them only when the case sends its own), body.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

/// What came back: status and the `error` of a
/// `WWW-Authenticate: Signature error="…"` challenge.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) code: Option<String>,
}

impl Answer {
    /// `401 request_signature_replayed`, `200`.
    pub(crate) fn describe(&self) -> String {
        match &self.code {
            Some(code) => format!("{} {code}", self.status),
            None => self.status.to_string(),
        }
    }

    /// A positive: anything but a `401` signature rejection.
    pub(crate) fn accepted(&self) -> bool {
        self.status != 401
    }

    /// A negative: `401` with exactly `code`.
    pub(crate) fn rejected_with(&self, code: &str) -> bool {
        self.status == 401 && self.code.as_deref() == Some(code)
    }
}

/// The HTTP client of a run: rustls with the Mozilla roots, no proxy, no
/// redirects, connections pinned to addresses the policy accepts.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    inner: reqwest::Client,
    policy: TargetPolicy,
}

impl Client {
    pub(crate) fn new(policy: &TargetPolicy, timeout: Duration) -> Result<Self, GradeError> {
        let mut store = rustls::RootCertStore::empty();
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| GradeError::Client(format!("tls: {e}")))?
            .with_root_certificates(store)
            .with_no_client_auth();
        let inner = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .https_only(!policy.allows_plain_http())
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .dns_resolver(policy.destination_policy().dns_resolver())
            .build()
            .map_err(|e| GradeError::Client(e.to_string()))?;
        Ok(Self {
            inner,
            policy: policy.clone(),
        })
    }

    /// A client for a service of the operator's own (the signing oracle):
    /// no SSRF address rules, HTTPS only unless `plain_http`, no proxy, no
    /// redirects.
    pub(crate) fn operator(plain_http: bool, timeout: Duration) -> Result<Self, GradeError> {
        let mut store = rustls::RootCertStore::empty();
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| GradeError::Client(format!("tls: {e}")))?
            .with_root_certificates(store)
            .with_no_client_auth();
        let inner = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .https_only(!plain_http)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .timeout(timeout)
            .build()
            .map_err(|e| GradeError::Client(e.to_string()))?;
        let policy = if plain_http {
            TargetPolicy::default().dangerously_allow_plain_http()
        } else {
            TargetPolicy::default()
        };
        Ok(Self { inner, policy })
    }

    /// Checks the target URL against the policy.
    pub(crate) fn check(&self, url: &str) -> Result<url::Url, GradeError> {
        self.policy
            .check(url)
            .map_err(|e| GradeError::Target(format!("{url}: {e}")))
    }

    /// Sends `out`; `Err` is a transport failure (described).
    pub(crate) async fn send(&self, out: &Outgoing) -> Result<Answer, String> {
        let method = reqwest::Method::from_bytes(out.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &out.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
            let value = reqwest::header::HeaderValue::from_bytes(value.as_bytes()).map_err(|e| e.to_string())?;
            headers.append(name, value);
        }
        let response = self
            .inner
            .request(method, out.url.as_str())
            .headers(headers)
            .body(out.body.clone())
            .send()
            .await
            .map_err(|e| describe_error(&e))?;
        let status = response.status().as_u16();
        let code = response
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(signature_error);
        Ok(Answer { status, code })
    }
}

impl Client {
    /// Sends `out` and reads the body as text (capability discovery).
    pub(crate) async fn fetch_text(&self, out: &Outgoing) -> Result<String, String> {
        let mut request = self.inner.post(out.url.as_str()).body(out.body.clone());
        for (name, value) in &out.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request.send().await.map_err(|e| describe_error(&e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| describe_error(&e))?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(200).collect();
            return Err(format!("answered {status}: {excerpt}"));
        }
        Ok(text)
    }
}

fn describe_error(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// The `error` parameter of a `Signature` challenge.
fn signature_error(challenge: &str) -> Option<String> {
    let rest = challenge.trim_start();
    let rest = rest
        .get(..9)
        .filter(|scheme| scheme.eq_ignore_ascii_case("signature"))
        .map(|_| &rest[9..])?;
    let at = rest.find("error=")?;
    let value = &rest[at + 6..];
    if let Some(quoted) = value.strip_prefix('"') {
        quoted.split('"').next().map(str::to_owned)
    } else {
        value
            .split([',', ' ', ';'])
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }
}

/// The first half of a rate-abuse case: sends the fillers `next` prepares
/// until the endpoint answers `code` or `cap` were sent, and returns how
/// many were sent. A filler refused otherwise, or unanswered, fails `case`
/// (`refused` is the reason given).
pub(crate) async fn fill_to_cap(
    client: &Client,
    cap: usize,
    code: &str,
    refused: &str,
    mut next: impl FnMut() -> Result<Outgoing, String>,
    case: CaseResult,
) -> Result<(usize, CaseResult), CaseResult> {
    let mut sent = 0;
    while sent < cap {
        let out = match next() {
            Ok(out) => out,
            Err(e) => return Err(case.graded(false, "not sent", format!("could not prepare: {e}"))),
        };
        sent += 1;
        match client.send(&out).await {
            Ok(answer) if answer.rejected_with(code) => break,
            Ok(answer) if !answer.accepted() => {
                return Err(case.graded(false, format!("filler {sent} {}", answer.describe()), refused))
            }
            Ok(_) => {}
            Err(e) => return Err(case.graded(false, "no answer", e)),
        }
    }
    Ok((sent, case))
}

/// `graded` with `note` appended to its reason.
pub(crate) fn noted(graded: CaseResult, note: String) -> CaseResult {
    let reason = if graded.reason.is_empty() {
        note
    } else {
        format!("{}; {note}", graded.reason)
    };
    CaseResult { reason, ..graded }
}

/// The current Unix time.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::signature_error;

    #[test]
    fn reads_the_signature_challenge_code() {
        assert_eq!(
            signature_error(r#"Signature error="request_signature_replayed""#).as_deref(),
            Some("request_signature_replayed")
        );
        assert_eq!(
            signature_error("signature error=webhook_signature_invalid").as_deref(),
            Some("webhook_signature_invalid")
        );
        assert_eq!(signature_error(r#"Bearer error="invalid_token""#), None);
    }
}
