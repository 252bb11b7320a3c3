//! The cases: what the recorded deliveries say about the seller, one case
//! per obligation, each naming the first deliveries that break it. Each
//! delivery is read once ([`Seen`]); the cases are grouped by what they
//! look at: the transport ([`transport`]), the idempotency keys
//! ([`identity`]), the retries ([`retries`]), the payload ([`payload`]).

mod identity;
mod payload;
mod retries;
mod transport;

use super::journal::Delivery;
use super::registration::Registration;
use super::verify::{verify, Refusal, Target};
use crate::report::{CaseResult, Report};
use adcp_sigbase::SignatureInput;
use adcp_strict_json::jcs;
use adcp_verify::{KeyResolver, VerifiedSigner};
use adcp_webhook::payload::{AcceptKinds, PayloadKind, WebhookPayload};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The retry expectation after a `503`: the suite's
/// `webhook-receiver-runner.yaml` waits `default_timeout_seconds` (90 s)
/// for a conformant at-least-once sender's retry.
pub const RETRY_WITHIN: Duration = Duration::from_secs(90);

/// The most offending deliveries named in one reason.
const MAX_NAMED: usize = 3;

/// Everything the grading reads.
pub(crate) struct Run<'a> {
    pub(crate) deliveries: &'a [Delivery],
    pub(crate) dropped: usize,
    pub(crate) registration: &'a Registration,
    pub(crate) target: &'a Target,
    pub(crate) keys: &'a Arc<dyn KeyResolver>,
    pub(crate) schemas: Option<&'a Path>,
    /// How long the listener listened.
    pub(crate) elapsed: Duration,
}

/// One delivery, read: its strictly parsed body, its classification, its
/// signature parameters and the verifier's verdict.
struct Seen<'a> {
    d: &'a Delivery,
    value: Option<Value>,
    kind: Option<PayloadKind>,
    keyid: Option<String>,
    nonce: Option<String>,
    verdict: Result<VerifiedSigner, Refusal>,
}

impl Seen<'_> {
    fn is_task(&self) -> bool {
        self.kind == Some(PayloadKind::McpTask)
    }

    /// The fingerprint of the body without its `idempotency_key`
    /// (SHA-256 of its RFC 8785 form).
    fn payload_sans_key(&self) -> Option<[u8; 32]> {
        let mut value = self.value.clone()?;
        value.as_object_mut()?.remove("idempotency_key");
        Some(jcs::fingerprint(&value))
    }
}

async fn read<'a>(d: &'a Delivery, run: &Run<'_>) -> Seen<'a> {
    let value = d
        .bytes()
        .and_then(|b| adcp_strict_json::parse_value(b, &adcp_strict_json::Limits::default()).ok());
    let kind = value
        .as_ref()
        .and_then(|v| WebhookPayload::classify(v, None, AcceptKinds::All).ok())
        .map(|p| p.kind());
    let lines: Vec<&[u8]> = d.header_lines("signature-input").collect();
    let input = SignatureInput::parse(&lines.join(&b", "[..])).ok();
    let params = input.as_ref().and_then(|i| i.get(SignatureInput::PROCESSED_LABEL));
    Seen {
        d,
        kind,
        keyid: params.and_then(|p| p.keyid()).map(str::to_owned),
        nonce: params.and_then(|p| p.nonce()).map(str::to_owned),
        verdict: verify(d, run.target, run.keys).await,
        value,
    }
}

/// A failure list: at most [`MAX_NAMED`] entries, then how many more.
#[derive(Default)]
struct Faults(Vec<String>);

impl Faults {
    fn push(&mut self, fault: String) {
        self.0.push(fault);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn reason(&self) -> String {
        let mut text = self.0.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join("; ");
        if self.0.len() > MAX_NAMED {
            text.push_str(&format!("; and {} more", self.0.len() - MAX_NAMED));
        }
        text
    }

    /// Graded: passed when empty (with `note`), else failed naming them.
    fn grade(
        self,
        case: CaseResult,
        got_pass: impl Into<String>,
        got_fail: impl Into<String>,
        note: &str,
    ) -> CaseResult {
        if self.is_empty() {
            case.graded(true, got_pass, note)
        } else {
            let reason = self.reason();
            case.graded(false, got_fail, reason)
        }
    }
}

fn skipped(case: CaseResult, reason: impl Into<String>) -> CaseResult {
    CaseResult {
        reason: reason.into(),
        ..case
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The cases, in report order: id and expectation.
pub(crate) const CASES: [(&str, &str); 15] = [
    ("sender/delivery", "at least one webhook delivery within the window"),
    (
        "sender/signature",
        "every delivery verifies under the webhook profile (adcp/webhook-signing/v1) against the published keys",
    ),
    (
        "sender/content-type",
        "Content-Type: application/json on every delivery",
    ),
    (
        "sender/content-digest",
        "a Content-Digest matching the body bytes on every delivery",
    ),
    (
        "sender/idempotency-key",
        "an idempotency_key of the schema's pattern ^[A-Za-z0-9_.:-]{16,255}$ in every body",
    ),
    (
        "sender/unpredictable-key",
        "idempotency keys neither sequential nor derived from the time",
    ),
    (
        "sender/retry-after-503",
        "every event answered 503 is retried within 90 s",
    ),
    (
        "sender/retry-same-key",
        "a retry keeps its idempotency_key (no payload re-sent under a new key)",
    ),
    (
        "sender/retry-same-body",
        "every retry's body is JCS-identical (RFC 8785) to the first delivery's",
    ),
    (
        "sender/fresh-nonce",
        "a fresh nonce on every delivery ((keyid, nonce) never repeated)",
    ),
    (
        "sender/no-retry-after-2xx",
        "no delivery of an event once it was answered 2xx",
    ),
    ("sender/schema", "every body valid against its kind's AdCP 3.2 schema"),
    ("sender/result", "every task webhook includes result"),
    (
        "sender/operation-id",
        "every task webhook echoes the registered operation_id",
    ),
    ("sender/token", "every task webhook echoes the registered token"),
];

fn case(id: &str) -> CaseResult {
    let expected = CASES.iter().find(|(i, _)| *i == id).map_or("", |(_, e)| *e);
    CaseResult::new(id, expected)
}

/// Grades the run into `report`.
pub(crate) async fn grade(run: &Run<'_>, report: &mut Report) {
    let deliveries = run.deliveries;
    let events: HashSet<&str> = deliveries.iter().filter_map(|d| d.key.as_deref()).collect();
    let delivery = case("sender/delivery");
    if deliveries.is_empty() {
        report.push(delivery.graded(
            false,
            "nothing arrived",
            format!(
                "no delivery within the {} window: register the printed push_notification_config with the seller and make it emit a webhook",
                secs(run.elapsed)
            ),
        ));
        for (id, _) in CASES.iter().skip(1) {
            report.push(skipped(case(id), "no delivery arrived"));
        }
        return;
    }
    let mut note = format!("over {}", secs(run.elapsed));
    if run.dropped > 0 {
        note.push_str(&format!(
            "; {} more over the cap of {} not kept",
            run.dropped,
            super::journal::MAX_DELIVERIES
        ));
    }
    report.push(delivery.graded(
        true,
        format!("{} deliveries of {} events", deliveries.len(), events.len()),
        note,
    ));
    let mut seen = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        seen.push(read(d, run).await);
    }
    report.push(transport::signature(&seen));
    report.push(transport::content_type(&seen));
    report.push(transport::content_digest(&seen));
    report.push(identity::idempotency_key(&seen));
    report.push(identity::unpredictable(&seen));
    report.push(retries::retry_after_503(&seen, run.elapsed));
    report.push(retries::retry_same_key(&seen));
    report.push(retries::retry_same_body(&seen));
    report.push(retries::fresh_nonce(&seen));
    report.push(retries::no_retry_after_2xx(&seen));
    report.push(payload::schema(&seen, run.schemas));
    report.push(payload::result(&seen));
    report.push(payload::echo(
        &seen,
        "sender/operation-id",
        "operation_id",
        run.registration.operation_id.as_deref(),
    ));
    report.push(payload::echo(
        &seen,
        "sender/token",
        "token",
        run.registration.token.as_deref(),
    ));
}
