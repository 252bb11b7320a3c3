//! Per-step discovery traces: what was fetched, when, how old it is, and
//! what each step concluded.
//!
//! Every discovery chain in this crate (the webhook chain of
//! [`HttpsKeyResolver`](crate::HttpsKeyResolver), the `brand_json_url`
//! chain of [`identity`](crate::identity), the adagents.json fetch of
//! [`adagents`](crate::adagents)) records one [`TraceStep`] per step, so an
//! operator triaging a `*_brand_*` failure sees which step refused and why
//! (`adcp-sig resolve` prints it). URLs and details in a trace may come from
//! counterparty documents: HTML-escape them before rendering in an admin UI,
//! and never return a trace to the party that supplied the URL (fetch
//! errors are a network-probing side channel).

use crate::fetch::FetchError;
use std::fmt;

/// How one step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The step passed.
    Ok,
    /// The step did not apply (e.g. no `authorized_operators[]` check when
    /// the eTLD+1s already match).
    Skipped,
    /// The step refused; the chain stopped here with this spec code
    /// suffix (`brand_origin_mismatch`, `jwks_unavailable`, ...).
    Failed(&'static str),
}

impl StepOutcome {
    /// `ok`, `skipped` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            StepOutcome::Ok => "ok",
            StepOutcome::Skipped => "skipped",
            StepOutcome::Failed(_) => "failed",
        }
    }
}

/// One step of a discovery chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceStep {
    /// The spec's step number within its chain (1-based).
    pub step: u8,
    /// A short name (`capabilities`, `brand.json`, `origin binding`, ...).
    pub name: &'static str,
    /// The URL fetched, if the step fetched one.
    pub url: Option<String>,
    /// The HTTP status received, if any.
    pub http_status: Option<u16>,
    /// When the document was fetched (Unix seconds), if the step fetched.
    pub fetched_at: Option<i64>,
    /// The outcome.
    pub outcome: StepOutcome,
    /// What the step found, for operators (never shown to the counterparty).
    pub detail: String,
}

impl TraceStep {
    /// Age of the fetched document at `now` (Unix seconds).
    pub fn age_secs(&self, now: i64) -> Option<i64> {
        self.fetched_at.map(|t| now.saturating_sub(t).max(0))
    }
}

/// The ordered steps of one chain run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryTrace {
    /// The steps, in order.
    pub steps: Vec<TraceStep>,
}

impl DiscoveryTrace {
    /// Appends a step that passed.
    pub(crate) fn ok(&mut self, step: u8, name: &'static str, detail: impl Into<String>) -> &mut TraceStep {
        self.push(step, name, StepOutcome::Ok, detail)
    }

    /// Appends a skipped step.
    pub(crate) fn skipped(&mut self, step: u8, name: &'static str, detail: impl Into<String>) -> &mut TraceStep {
        self.push(step, name, StepOutcome::Skipped, detail)
    }

    /// Appends a failed step.
    pub(crate) fn failed(
        &mut self,
        step: u8,
        name: &'static str,
        code: &'static str,
        detail: impl Into<String>,
    ) -> &mut TraceStep {
        self.push(step, name, StepOutcome::Failed(code), detail)
    }

    fn push(
        &mut self,
        step: u8,
        name: &'static str,
        outcome: StepOutcome,
        detail: impl Into<String>,
    ) -> &mut TraceStep {
        self.steps.push(TraceStep {
            step,
            name,
            url: None,
            http_status: None,
            fetched_at: None,
            outcome,
            detail: detail.into(),
        });
        let last = self.steps.len() - 1;
        &mut self.steps[last]
    }

    /// The first failed step, if the chain failed.
    pub fn failure(&self) -> Option<&TraceStep> {
        self.steps.iter().find(|s| matches!(s.outcome, StepOutcome::Failed(_)))
    }

    /// Renders the trace as JSON (`age_seconds` computed at `now`).
    pub fn to_json(&self, now: i64) -> serde_json::Value {
        serde_json::Value::Array(
            self.steps
                .iter()
                .map(|s| {
                    serde_json::json!({
                        "step": s.step,
                        "name": s.name,
                        "url": s.url,
                        "http_status": s.http_status,
                        "fetched_at": s.fetched_at,
                        "age_seconds": s.age_secs(now),
                        "ok": s.outcome == StepOutcome::Ok,
                        "outcome": s.outcome.as_str(),
                        "code": match s.outcome { StepOutcome::Failed(c) => Some(c), _ => None },
                        "detail": s.detail,
                    })
                })
                .collect(),
        )
    }
}

impl TraceStep {
    /// Records the fetched URL, the time and the HTTP status of a fetch
    /// result (`200` for a body, the status of a status/redirect error).
    pub(crate) fn fetched<T>(&mut self, url: &url::Url, at: i64, result: &Result<T, FetchError>) -> &mut Self {
        self.url = Some(url.as_str().to_owned());
        self.fetched_at = Some(at);
        self.http_status = match result {
            Ok(_) => Some(200),
            Err(FetchError::Status(s) | FetchError::Redirect(s)) => Some(*s),
            Err(_) => None,
        };
        self
    }
}

impl fmt::Display for DiscoveryTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            write!(f, "{:>2}. {:<16} {:<7}", s.step, s.name, s.outcome.as_str())?;
            if let StepOutcome::Failed(code) = s.outcome {
                write!(f, " [{code}]")?;
            }
            if let Some(url) = &s.url {
                write!(f, " {url}")?;
            }
            if let Some(status) = s.http_status {
                write!(f, " (HTTP {status})")?;
            }
            if !s.detail.is_empty() {
                write!(f, " — {}", s.detail)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
