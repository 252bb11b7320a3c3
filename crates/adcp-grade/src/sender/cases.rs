//! The cases: what the recorded deliveries say about the seller, one case
//! per obligation, each naming the first deliveries that break it.

use super::journal::{shorten, Delivery};
use super::keys;
use super::registration::Registration;
use super::schema::{Outcome, Schemas};
use super::verify::{verify, Refusal, Target};
use crate::report::{CaseResult, Report};
use adcp_sigbase::digest::{ContentDigest, DigestPolicy};
use adcp_sigbase::SignatureInput;
use adcp_strict_json::jcs;
use adcp_verify::{KeyResolver, Profile, VerifiedSigner};
use adcp_webhook::payload::{AcceptKinds, PayloadKind, WebhookPayload};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The retry expectation after a `503`: the suite's
/// `webhook-receiver-runner.yaml` waits `default_timeout_seconds` (90 s)
/// for a conformant at-least-once sender's retry.
pub const RETRY_WITHIN: Duration = Duration::from_secs(90);

/// The most distinct keys compared pairwise for sequences.
const MAX_KEYS_COMPARED: usize = 200;

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
    report.push(signature(&seen));
    report.push(content_type(&seen));
    report.push(content_digest(&seen));
    report.push(idempotency_key(&seen));
    report.push(unpredictable(&seen));
    report.push(retry_after_503(&seen, run));
    report.push(retry_same_key(&seen));
    report.push(retry_same_body(&seen));
    report.push(fresh_nonce(&seen));
    report.push(no_retry_after_2xx(&seen));
    report.push(schema(&seen, run.schemas));
    report.push(result(&seen));
    report.push(echo(
        &seen,
        "sender/operation-id",
        "operation_id",
        run.registration.operation_id.as_deref(),
    ));
    report.push(echo(&seen, "sender/token", "token", run.registration.token.as_deref()));
}

fn signature(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut first_code = None;
    let mut signers = HashSet::new();
    for s in seen {
        match &s.verdict {
            Ok(signer) => {
                signers.insert(format!("kid {} of {}", signer.keyid, signer.agent_url));
            }
            Err(refusal) => {
                first_code.get_or_insert_with(|| refusal.code.clone());
                faults.push(format!(
                    "{}: {} ({})",
                    s.d.label(),
                    refusal.code,
                    shorten(&refusal.detail)
                ));
            }
        }
    }
    let mut signers: Vec<String> = signers.into_iter().collect();
    signers.sort();
    let refused = faults.0.len();
    faults.grade(
        case("sender/signature"),
        format!("{} verified", seen.len()),
        format!(
            "{refused} of {} refused ({})",
            seen.len(),
            first_code.unwrap_or_default()
        ),
        &signers.join(", "),
    )
}

fn content_type(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    for s in seen {
        let lines: Vec<&[u8]> = s.d.header_lines("content-type").collect();
        let ok = match lines.as_slice() {
            [one] => std::str::from_utf8(one).is_ok_and(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
            }),
            _ => false,
        };
        if !ok {
            let got = match lines.as_slice() {
                [] => "none".to_owned(),
                [one] => shorten(&String::from_utf8_lossy(one)),
                _ => format!("{} Content-Type lines", lines.len()),
            };
            faults.push(format!("{}: {got}", s.d.label()));
        }
    }
    faults.grade(
        case("sender/content-type"),
        "application/json",
        "another media type",
        "",
    )
}

fn content_digest(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut checked = 0;
    for s in seen {
        let Some(body) = s.d.bytes() else { continue };
        checked += 1;
        let lines: Vec<&[u8]> = s.d.header_lines("content-digest").collect();
        let outcome = if lines.is_empty() {
            Err("no Content-Digest".to_owned())
        } else {
            ContentDigest::parse(&lines.join(&b", "[..]), Profile::webhook_v1().digest_decoding())
                .map_err(|e| format!("malformed: {}", shorten(&e.to_string())))
                .and_then(|digest| {
                    digest
                        .verify(body, &DigestPolicy::default())
                        .map(|_| ())
                        .map_err(|e| shorten(&e.to_string()))
                })
        };
        if let Err(why) = outcome {
            faults.push(format!("{}: {why}", s.d.label()));
        }
    }
    if checked == 0 {
        return skipped(case("sender/content-digest"), "no body was read (over the size limit)");
    }
    faults.grade(
        case("sender/content-digest"),
        format!("{checked} matching"),
        "missing or not matching",
        "",
    )
}

fn idempotency_key(seen: &[Seen<'_>]) -> CaseResult {
    let mut faults = Faults::default();
    let mut checked = 0;
    for s in seen.iter().filter(|s| s.d.bytes().is_some()) {
        checked += 1;
        match s.value.as_ref().map(|v| v.get("idempotency_key")) {
            None => faults.push(format!("#{}: the body is not strict JSON", s.d.seq)),
            Some(None) => faults.push(format!("#{}: no idempotency_key", s.d.seq)),
            Some(Some(Value::String(key))) if adcp_webhook::payload::is_valid_idempotency_key(key) => {}
            Some(Some(Value::String(key))) => faults.push(format!("#{}: {:?} does not match", s.d.seq, shorten(key))),
            Some(Some(_)) => faults.push(format!("#{}: idempotency_key is not a string", s.d.seq)),
        }
    }
    if checked == 0 {
        return skipped(case("sender/idempotency-key"), "no body was read (over the size limit)");
    }
    faults.grade(
        case("sender/idempotency-key"),
        format!("{checked} valid"),
        "invalid keys",
        "",
    )
}

/// The distinct valid keys, in first-seen order, with their first arrival.
fn distinct_keys<'a>(seen: &'a [Seen<'_>]) -> Vec<(&'a str, i64)> {
    let mut out: Vec<(&str, i64)> = Vec::new();
    for s in seen {
        if let Some(key) = s.d.key.as_deref() {
            if adcp_webhook::payload::is_valid_idempotency_key(key) && !out.iter().any(|(k, _)| *k == key) {
                out.push((key, s.d.unix));
            }
        }
    }
    out
}

fn unpredictable(seen: &[Seen<'_>]) -> CaseResult {
    let keys = distinct_keys(seen);
    let case = case("sender/unpredictable-key");
    if keys.is_empty() {
        return skipped(case, "no valid idempotency_key arrived");
    }
    let mut faults = Faults::default();
    for (key, at) in &keys {
        if let Some(why) = keys::time_derived(key, *at) {
            faults.push(format!("{} {why}", shorten(key)));
        }
    }
    let compared = &keys[..keys.len().min(MAX_KEYS_COMPARED)];
    for (i, (a, _)) in compared.iter().enumerate() {
        for (b, _) in &compared[i + 1..] {
            if let Some(step) = keys::sequential(a, b) {
                faults.push(format!(
                    "{} and {} differ by {step} in one counter",
                    shorten(a),
                    shorten(b)
                ));
            }
        }
    }
    let note = if keys.len() < 2 {
        "one key: its time was checked, sequences need two events"
    } else {
        ""
    };
    faults.grade(
        case,
        format!("{} keys, none predictable", keys.len()),
        "predictable keys",
        note,
    )
}

/// The deliveries of each key, in arrival order, keys in first-seen order.
fn by_key<'s, 'a>(seen: &'s [Seen<'a>]) -> Vec<(&'s str, Vec<&'s Seen<'a>>)> {
    let mut out: Vec<(&str, Vec<&Seen<'_>>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for s in seen {
        let Some(key) = s.d.key.as_deref() else { continue };
        match index.get(key) {
            Some(&i) => out[i].1.push(s),
            None => {
                index.insert(key, out.len());
                out.push((key, vec![s]));
            }
        }
    }
    out
}

fn retry_after_503(seen: &[Seen<'_>], run: &Run<'_>) -> CaseResult {
    let case = case("sender/retry-after-503");
    let groups = by_key(seen);
    let mut faults = Faults::default();
    let mut retried = 0;
    let mut longest = Duration::ZERO;
    let mut total = 0;
    for (_, group) in &groups {
        let Some(first) = group.first().filter(|s| s.d.status == 503) else {
            continue;
        };
        total += 1;
        match group.get(1) {
            Some(retry) => {
                let gap = retry.d.offset.saturating_sub(first.d.offset);
                longest = longest.max(gap);
                if gap <= RETRY_WITHIN {
                    retried += 1;
                } else {
                    faults.push(format!("{}: retried after {}", first.d.label(), secs(gap)));
                }
            }
            None => {
                let left = run.elapsed.saturating_sub(first.d.offset);
                let window = if left < RETRY_WITHIN {
                    format!(
                        " (the window ended {} after the 503, before 90 s: use a longer --window for a final verdict)",
                        secs(left)
                    )
                } else {
                    format!(" ({} observed after the 503)", secs(left))
                };
                faults.push(format!("{}: no retry{window}", first.d.label()));
            }
        }
    }
    if total == 0 {
        return skipped(
            case,
            "no event was answered 503 (no delivery carried an idempotency_key)",
        );
    }
    faults.grade(
        case,
        format!("{retried} of {total} retried (longest gap {})", secs(longest)),
        format!("{retried} of {total} retried within 90 s"),
        "",
    )
}

fn retry_same_key(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/retry-same-key");
    let groups = by_key(seen);
    let retries: usize = groups.iter().map(|(_, g)| g.len().saturating_sub(1)).sum();
    // Each event's first payload, key aside, canonical: computed once.
    let payloads: Vec<Option<[u8; 32]>> = groups
        .iter()
        .map(|(_, g)| g.first().and_then(|s| s.payload_sans_key()))
        .collect();
    let mut faults = Faults::default();
    // A new key whose payload (key aside) repeats an earlier event's that
    // was never acknowledged before it: the sender re-sent the event under
    // a fresh key instead of retrying it.
    for (j, (_, group)) in groups.iter().enumerate() {
        let (Some(later), Some(payload)) = (group.first(), payloads[j]) else {
            continue;
        };
        for (i, (_, earlier)) in groups[..j].iter().enumerate() {
            let acknowledged = earlier
                .iter()
                .any(|s| (200..300).contains(&s.d.status) && s.d.seq < later.d.seq);
            if !acknowledged && payloads[i] == Some(payload) {
                let first = earlier.first().map(|s| s.d.label()).unwrap_or_default();
                faults.push(format!(
                    "{} re-sends the payload of {first} under a new key",
                    later.d.label()
                ));
                break;
            }
        }
    }
    if retries == 0 && faults.is_empty() {
        return skipped(case, "no retry arrived (nothing to compare)");
    }
    faults.grade(case, format!("{retries} retries kept their key"), "key rotated", "")
}

fn retry_same_body(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/retry-same-body");
    let mut faults = Faults::default();
    let mut retries = 0;
    let mut byte_identical = 0;
    for (_, group) in by_key(seen) {
        let Some((first, rest)) = group.split_first() else {
            continue;
        };
        let canonical = |s: &Seen<'_>| s.value.as_ref().map(jcs::canonicalize);
        let original = canonical(first);
        for retry in rest {
            retries += 1;
            match (&original, canonical(retry)) {
                (Some(a), Some(b)) if *a == b => {
                    if first.d.bytes() == retry.d.bytes() {
                        byte_identical += 1;
                    }
                }
                (Some(_), Some(_)) => faults.push(format!(
                    "{} differs from #{} ({})",
                    retry.d.label(),
                    first.d.seq,
                    first_difference(first.value.as_ref(), retry.value.as_ref())
                )),
                _ => faults.push(format!("{}: a body is not strict JSON", retry.d.label())),
            }
        }
    }
    if retries == 0 {
        return skipped(case, "no retry arrived (nothing to compare)");
    }
    let note = format!("{byte_identical} of {retries} byte-identical");
    faults.grade(case, format!("{retries} retries identical"), "body changed", &note)
}

/// The first top-level member that differs between two bodies.
fn first_difference(a: Option<&Value>, b: Option<&Value>) -> String {
    let (Some(Value::Object(a)), Some(Value::Object(b))) = (a, b) else {
        return "not objects".to_owned();
    };
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .find(|n| a.get(*n) != b.get(*n))
        .map_or_else(|| "member order".to_owned(), |n| format!("member {}", shorten(n)))
}

fn fresh_nonce(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/fresh-nonce");
    let mut first: HashMap<(&str, &str), usize> = HashMap::new();
    let mut faults = Faults::default();
    let mut counted = 0;
    for s in seen {
        let (Some(keyid), Some(nonce)) = (s.keyid.as_deref(), s.nonce.as_deref()) else {
            continue;
        };
        counted += 1;
        if let Some(earlier) = first.get(&(keyid, nonce)) {
            faults.push(format!("{} reuses the nonce of #{earlier}", s.d.label()));
        } else {
            first.insert((keyid, nonce), s.d.seq);
        }
    }
    if counted < 2 {
        return skipped(case, "fewer than two signed deliveries (nothing to compare)");
    }
    faults.grade(case, format!("{counted} distinct nonces"), "nonce reused", "")
}

fn no_retry_after_2xx(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/no-retry-after-2xx");
    let mut acknowledged = 0;
    let mut faults = Faults::default();
    for (_, group) in by_key(seen) {
        let Some(at) = group.iter().position(|s| (200..300).contains(&s.d.status)) else {
            continue;
        };
        acknowledged += 1;
        let extra = group.len() - at - 1;
        if extra > 0 {
            faults.push(format!(
                "{}: {extra} more after #{} was answered {}",
                group[at].d.label(),
                group[at].d.seq,
                group[at].d.status
            ));
        }
    }
    if acknowledged == 0 {
        return skipped(case, "no delivery was answered 2xx (no retry arrived)");
    }
    faults.grade(
        case,
        format!("{acknowledged} acknowledged, none re-sent"),
        "re-sent after 2xx",
        "",
    )
}

fn schema(seen: &[Seen<'_>], dir: Option<&Path>) -> CaseResult {
    let case = case("sender/schema");
    let Some(dir) = dir else {
        return skipped(case, "the AdCP 3.2 JSON Schemas were not found (set ADCP_SCHEMAS_DIR)");
    };
    let mut schemas = Schemas::new(dir);
    let mut faults = Faults::default();
    let mut valid = 0;
    let mut unvalidated = HashSet::new();
    for s in seen.iter().filter(|s| s.d.bytes().is_some()) {
        let Some(value) = &s.value else {
            faults.push(format!("{}: the body is not strict JSON", s.d.label()));
            continue;
        };
        match schemas.check(value) {
            Outcome::Valid { .. } => valid += 1,
            Outcome::NoSchema { kind } => {
                unvalidated.insert(kind.as_str());
            }
            Outcome::Unclassified(code) => faults.push(format!("{}: not a webhook payload ({code})", s.d.label())),
            Outcome::Invalid { kind, errors } => {
                faults.push(format!("{} ({kind}): {}", s.d.label(), errors.join(", ")));
            }
            Outcome::Unavailable(why) => return skipped(case, format!("schema not loadable: {why}")),
        }
    }
    let mut unvalidated: Vec<&str> = unvalidated.into_iter().collect();
    unvalidated.sort_unstable();
    let note = if unvalidated.is_empty() {
        String::new()
    } else {
        format!("no schema for {} (not validated)", unvalidated.join(", "))
    };
    if valid == 0 && faults.is_empty() {
        return skipped(case, note);
    }
    faults.grade(case, format!("{valid} valid"), "invalid bodies", &note)
}

fn tasks<'s, 'a>(seen: &'s [Seen<'a>]) -> Vec<&'s Seen<'a>> {
    seen.iter().filter(|s| s.is_task()).collect()
}

fn result(seen: &[Seen<'_>]) -> CaseResult {
    let case = case("sender/result");
    let tasks = tasks(seen);
    if tasks.is_empty() {
        return skipped(case, "no task webhook (MCP envelope) arrived");
    }
    let mut faults = Faults::default();
    for s in &tasks {
        if s.value
            .as_ref()
            .and_then(|v| v.get("result"))
            .is_none_or(Value::is_null)
        {
            faults.push(format!("{}: no result", s.d.label()));
        }
    }
    faults.grade(case, format!("{} with result", tasks.len()), "result missing", "")
}

fn echo(seen: &[Seen<'_>], id: &str, member: &str, registered: Option<&str>) -> CaseResult {
    let case = case(id);
    let Some(registered) = registered else {
        return skipped(case, format!("the registration had no {member}"));
    };
    let tasks = tasks(seen);
    if tasks.is_empty() {
        return skipped(case, "no task webhook (MCP envelope) arrived");
    }
    let mut faults = Faults::default();
    for s in &tasks {
        match s.value.as_ref().and_then(|v| v.get(member)) {
            Some(Value::String(v)) if v == registered => {}
            Some(Value::String(v)) => faults.push(format!("{}: {member} {:?}", s.d.label(), shorten(v))),
            Some(_) => faults.push(format!("{}: {member} is not a string", s.d.label())),
            None => faults.push(format!("{}: no {member}", s.d.label())),
        }
    }
    faults.grade(
        case,
        format!("{} echoed", tasks.len()),
        format!("{member} not echoed"),
        "",
    )
}
