//! `grade receiver`: a buyer's webhook receiver, black box, against the
//! spec's webhook verifier checklist (the suite's `webhook-signing/`
//! vectors, re-signed for the receiver's URL) and its receiver contract
//! (retries, idempotency conflicts, replays, size and media type).
//!
//! The suite's `webhook-receiver-runner.yaml` kit grades *senders*; this
//! grader is ours, with preconditions that mirror the signed-requests kit.

use crate::error::GradeError;
use crate::prepare::{prepare, KeyRing, Recipe};
use crate::report::{CaseResult, Report};
use crate::runner::{fill_to_cap, noted, now, Answer, Client, GradeOptions, Outgoing, RateAbuse};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sign::IdempotencyKey;
use adcp_webhook::{McpWebhook, TaskStatus};
use std::path::Path;

/// The kid the receiver must have revoked (vector 017).
pub const REVOKED_WEBHOOK_KID: &str = "test-revoked-webhook-2026";

/// What `grade receiver` needs besides the [`GradeOptions`].
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// The receiver's webhook URL (the `push_notification_config.url` a
    /// seller would be given). Every delivery is signed for it.
    pub target: String,
    /// The seller identity the receiver attributes the suite's webhook test
    /// keys to (`--agent-url`); reported in the preconditions.
    pub agent_url: Option<String>,
}

impl ReceiverConfig {
    /// Grades the receiver at `target`.
    #[must_use]
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            agent_url: None,
        }
    }
}

/// The receiver's preconditions, as printed.
#[must_use]
pub fn preconditions(config: &ReceiverConfig, options: &GradeOptions) -> Vec<String> {
    let agent = config
        .agent_url
        .as_deref()
        .unwrap_or("the seller identity given with --agent-url");
    let mut list = vec![
        format!("trust the suite's webhook-signing test keys (webhook-signing/keys.json) for {agent}"),
        format!("revoke {REVOKED_WEBHOOK_KID} before grading (vector 017)"),
        "deduplicate on (verified sender, idempotency_key) and answer the seller's retry of an applied event with 2xx"
            .to_owned(),
        "replay-cache TTL of at least 10 s (vector 016 and contract/replay send the same request twice)".to_owned(),
    ];
    if let RateAbuse::Cap(cap) = options.rate_abuse {
        list.push(format!(
            "a per-keyid replay cap of {cap} for the test keys (vector 018; --rate-abuse-cap N)"
        ));
    }
    list
}

/// Grades the receiver at `config.target`.
///
/// # Errors
///
/// [`GradeError`] when the grader cannot run (target refused by the
/// policy, suite missing); failed cases are in the [`Report`].
pub async fn grade_receiver(config: &ReceiverConfig, options: &GradeOptions) -> Result<Report, GradeError> {
    let client = Client::new(&options.policy, options.timeout)?;
    let target = client.check(&config.target)?;
    let suite = options.suite.as_path();
    let ring = KeyRing::load(suite, "webhook-signing/keys.json").map_err(GradeError::Suite)?;
    let mut vectors = Vec::new();
    for dir in ["webhook-signing/positive", "webhook-signing/negative"] {
        for path in adcp_vectors::json_files(suite, dir) {
            vectors.push(Loaded::load(suite, &path, dir)?);
        }
    }
    let template = vectors
        .iter()
        .find(|v| v.expect.is_none())
        .cloned()
        .ok_or_else(|| GradeError::Suite("no webhook-signing positive vectors".into()))?;
    vectors.sort_by_key(|v| match v.kind {
        Kind::Plain => 0,
        Kind::Replay => 2,
        Kind::Revoked => 3,
        Kind::WhiteBox(_) => 4,
        Kind::RateAbuse => 5,
    });
    let ctx = Ctx {
        client: &client,
        url: target.as_str().to_owned(),
        ring: &ring,
        template: &template,
    };
    let mut report = Report::new("receiver", target.as_str(), preconditions(config, options));
    let mut contract_done = false;
    for vector in &vectors {
        if vector.kind != Kind::Plain && !contract_done {
            contract_done = true;
            ctx.contract(options, &mut report).await;
        }
        let case = CaseResult::new(&vector.id, vector.expected_text());
        if !options.selection.selects(&vector.id) {
            continue;
        }
        let result = match &vector.kind {
            Kind::WhiteBox(why) => CaseResult {
                reason: why.clone(),
                ..case
            },
            Kind::Replay => ctx.replay(vector, case).await,
            Kind::RateAbuse => match options.rate_abuse {
                RateAbuse::Skip => CaseResult {
                    reason: "rate abuse not graded (--skip-rate-abuse)".into(),
                    ..case
                },
                RateAbuse::Cap(cap) => ctx.rate_abuse(vector, cap, case).await,
            },
            Kind::Plain | Kind::Revoked => ctx.single(vector, case).await,
        };
        report.push(result);
    }
    if !contract_done {
        ctx.contract(options, &mut report).await;
    }
    Ok(report)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Plain,
    Replay,
    Revoked,
    RateAbuse,
    WhiteBox(String),
}

#[derive(Debug, Clone)]
struct Loaded {
    id: String,
    doc: serde_json::Value,
    expect: Option<String>,
    kind: Kind,
}

impl Loaded {
    fn load(suite: &Path, path: &Path, dir: &str) -> Result<Self, GradeError> {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let leaf = dir.rsplit('/').next().unwrap_or(dir);
        let id = format!("{leaf}/{}", file.trim_end_matches(".json"));
        let doc = adcp_vectors::load_json(suite, &format!("{dir}/{file}")).map_err(GradeError::Suite)?;
        let expect = match doc["expected_outcome"]["success"].as_bool() {
            Some(true) => None,
            _ => Some(
                doc["expected_outcome"]["error_code"]
                    .as_str()
                    .ok_or_else(|| GradeError::Suite(format!("{id}: expected_outcome.error_code missing")))?
                    .to_owned(),
            ),
        };
        let state = &doc["test_harness_state"];
        let kind = if let Some(why) = crate::prepare::needs_override(&doc) {
            Kind::WhiteBox(why)
        } else if state.get("revocation_list_stale_seconds").is_some() {
            Kind::WhiteBox("needs white-box state (a stale revocation list) a black-box grader cannot set".into())
        } else if state.get("replay_cache_entries").is_some() {
            Kind::Replay
        } else if state.get("per_keyid_cap_filled_for").is_some()
            || state.get("replay_cache_per_keyid_cap_hit").is_some()
        {
            Kind::RateAbuse
        } else if state.get("revoked_kids").is_some() || state.get("revocation_list").is_some() {
            Kind::Revoked
        } else if let Some(keys) = state.as_object().filter(|m| m.keys().any(|k| k != "$comment")) {
            Kind::WhiteBox(format!(
                "needs white-box state ({}) a black-box grader cannot set",
                keys.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        } else {
            Kind::Plain
        };
        Ok(Self { id, doc, expect, kind })
    }

    fn expected_text(&self) -> String {
        match &self.expect {
            None => "accepted (not a 401)".into(),
            Some(code) => format!("401 {code}"),
        }
    }
}

/// A schema-valid MCP task webhook (`completed`, `create_media_buy`) with
/// a fresh idempotency key, or `key`.
fn event_body(key: Option<&IdempotencyKey>, result: serde_json::Value) -> Result<Vec<u8>, String> {
    let n = crate::prepare::fresh_token()?;
    let hook = McpWebhook::new(
        format!("task_grade_{n}"),
        "create_media_buy",
        TaskStatus::Completed,
        "2026-12-02T00:00:00Z",
    )
    .operation_id(format!("op_grade_{n}"))
    .result(result);
    let event = match key {
        Some(key) => hook.into_event_with_key(key.clone()),
        None => hook.into_event(),
    }
    .map_err(|e| e.to_string())?;
    Ok(event.body().as_bytes().to_vec())
}

fn result_of(tag: &str) -> serde_json::Value {
    serde_json::json!({"media_buy_id": format!("mb_{tag}")})
}

struct Ctx<'a> {
    client: &'a Client,
    url: String,
    ring: &'a KeyRing,
    template: &'a Loaded,
}

impl Ctx<'_> {
    fn outgoing_with(&self, vector: &Loaded, body: Vec<u8>, content_type: Option<&str>) -> Result<Outgoing, String> {
        let recipe = Recipe {
            url: self.url.clone(),
            body: Some(body),
            host: None,
            encoding: BinaryEncoding::Base64UrlUnpadded,
            corrupt: vector
                .expect
                .as_deref()
                .is_some_and(|c| c.ends_with("_signature_invalid")),
            content_type: content_type.map(str::to_owned),
        };
        prepare(&vector.doc, &recipe, self.ring, now())
    }

    /// The vector with a fresh, schema-valid body of its kind (without an
    /// idempotency key where the vector's body has none).
    fn outgoing(&self, vector: &Loaded) -> Result<Outgoing, String> {
        let original: serde_json::Value = vector.doc["request"]["body"]
            .as_str()
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or_default();
        let mut body = event_body(None, result_of("vector"))?;
        if original.get("idempotency_key").is_none() {
            let mut value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
            if let Some(map) = value.as_object_mut() {
                map.remove("idempotency_key");
            }
            body = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        }
        self.outgoing_with(vector, body, None)
    }

    fn grade(vector: &Loaded, case: CaseResult, answer: &Answer) -> CaseResult {
        match &vector.expect {
            None => {
                let ok = answer.accepted();
                case.graded(
                    ok,
                    answer.describe(),
                    if ok { "" } else { "a positive vector was refused" },
                )
            }
            Some(code) => {
                let ok = answer.rejected_with(code);
                let why = if ok {
                    ""
                } else if answer.status == 401 {
                    "wrong error code"
                } else {
                    "not refused with a 401 signature challenge"
                };
                case.graded(ok, answer.describe(), why)
            }
        }
    }

    async fn send_graded(&self, vector: &Loaded, case: CaseResult, out: Result<Outgoing, String>) -> CaseResult {
        let out = match out {
            Ok(out) => out,
            Err(e) => return case.graded(false, "not sent", format!("could not prepare: {e}")),
        };
        match self.client.send(&out).await {
            Ok(answer) => Self::grade(vector, case, &answer),
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    async fn single(&self, vector: &Loaded, case: CaseResult) -> CaseResult {
        self.send_graded(vector, case, self.outgoing(vector)).await
    }

    async fn replay(&self, vector: &Loaded, case: CaseResult) -> CaseResult {
        let out = match self.outgoing(vector) {
            Ok(out) => out,
            Err(e) => return case.graded(false, "not sent", format!("could not prepare: {e}")),
        };
        match self.client.send(&out).await {
            Ok(first) if first.accepted() => {}
            Ok(first) => {
                return case.graded(
                    false,
                    format!("first delivery {}", first.describe()),
                    "the first delivery must be accepted",
                )
            }
            Err(e) => return case.graded(false, "no answer", e),
        }
        self.send_graded(vector, case, Ok(out)).await
    }

    async fn rate_abuse(&self, vector: &Loaded, cap: usize, case: CaseResult) -> CaseResult {
        let code = vector.expect.clone().unwrap_or_default();
        let next = || self.outgoing(self.template).map_err(|e| e.to_string());
        let filled = fill_to_cap(
            self.client,
            cap,
            &code,
            "a filler delivery was refused before the cap",
            next,
            case,
        );
        let (sent, case) = match filled.await {
            Ok(filled) => filled,
            Err(failed) => return failed,
        };
        noted(
            self.single(vector, case).await,
            format!("after {sent} filler deliveries"),
        )
    }

    async fn send(&self, body: Vec<u8>, content_type: Option<&str>) -> Result<Answer, String> {
        let out = self.outgoing_with(self.template, body, content_type)?;
        self.client.send(&out).await
    }

    /// The receiver contract, in order: retry, changed payload, replay,
    /// then the advisory size and media-type cases.
    async fn contract(&self, options: &GradeOptions, report: &mut Report) {
        let cases: [(&str, &str, bool); 5] = [
            (
                "contract/retry",
                "2xx, then 2xx for the seller's retry (fresh signature)",
                false,
            ),
            (
                "contract/changed-payload",
                "2xx, then 409 for the same idempotency_key with a changed payload",
                false,
            ),
            (
                "contract/replay",
                "2xx, then 401 webhook_signature_replayed for the exact same request",
                false,
            ),
            (
                "contract/oversize",
                "413 for a body over 1 MiB (advisory: the spec says SHOULD)",
                true,
            ),
            (
                "contract/content-type",
                "415 for a non-JSON content type (advisory: the spec names no status)",
                true,
            ),
        ];
        for (id, expected, advisory) in cases {
            let mut case = CaseResult::new(id, expected);
            if advisory {
                case = case.advisory();
            }
            if !options.selection.selects(id) {
                continue;
            }
            let result = match id {
                "contract/retry" => self.retry(case).await,
                "contract/changed-payload" => self.changed_payload(case).await,
                "contract/replay" => self.exact_replay(case).await,
                "contract/oversize" => self.oversize(case).await,
                _ => self.content_type(case).await,
            };
            report.push(result);
        }
    }

    async fn retry(&self, case: CaseResult) -> CaseResult {
        let body = match event_body(None, result_of("retry")) {
            Ok(b) => b,
            Err(e) => return case.graded(false, "not sent", e),
        };
        self.twice(
            case,
            body.clone(),
            body,
            |a| (200..300).contains(&a.status),
            "the retry of an applied event must be answered 2xx",
        )
        .await
    }

    async fn changed_payload(&self, case: CaseResult) -> CaseResult {
        let key = match IdempotencyKey::generate() {
            Ok(k) => k,
            Err(e) => return case.graded(false, "not sent", e.to_string()),
        };
        let (first, second) = match (
            event_body(Some(&key), result_of("a")),
            event_body(Some(&key), result_of("b")),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return case.graded(false, "not sent", e),
        };
        self.twice(
            case,
            first,
            second,
            |a| a.status == 409,
            "a changed payload under an applied idempotency_key must be answered 409",
        )
        .await
    }

    /// Sends `first` (must be 2xx), then `second` freshly signed, graded by
    /// `ok`.
    async fn twice(
        &self,
        case: CaseResult,
        first: Vec<u8>,
        second: Vec<u8>,
        ok: impl Fn(&Answer) -> bool,
        why: &str,
    ) -> CaseResult {
        match self.send(first, None).await {
            Ok(a) if (200..300).contains(&a.status) => {}
            Ok(a) => {
                return case.graded(
                    false,
                    format!("first delivery {}", a.describe()),
                    "the first delivery must be answered 2xx",
                )
            }
            Err(e) => return case.graded(false, "no answer", e),
        }
        match self.send(second, None).await {
            Ok(a) => {
                let passed = ok(&a);
                case.graded(
                    passed,
                    format!("2xx, then {}", a.describe()),
                    if passed { "" } else { why },
                )
            }
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    async fn exact_replay(&self, case: CaseResult) -> CaseResult {
        let out = match event_body(None, result_of("replay")).and_then(|b| self.outgoing_with(self.template, b, None)) {
            Ok(out) => out,
            Err(e) => return case.graded(false, "not sent", format!("could not prepare: {e}")),
        };
        match self.client.send(&out).await {
            Ok(a) if (200..300).contains(&a.status) => {}
            Ok(a) => {
                return case.graded(
                    false,
                    format!("first delivery {}", a.describe()),
                    "the first delivery must be answered 2xx",
                )
            }
            Err(e) => return case.graded(false, "no answer", e),
        }
        match self.client.send(&out).await {
            Ok(a) => {
                let passed = a.rejected_with("webhook_signature_replayed");
                case.graded(
                    passed,
                    format!("2xx, then {}", a.describe()),
                    if passed {
                        ""
                    } else {
                        "an exact replay must be refused webhook_signature_replayed"
                    },
                )
            }
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    async fn oversize(&self, case: CaseResult) -> CaseResult {
        // Past the sender-side size limit of `into_event`: padded after.
        let body = event_body(None, result_of("oversize")).and_then(|b| {
            let mut value: serde_json::Value = serde_json::from_slice(&b).map_err(|e| e.to_string())?;
            value["result"]["padding"] = "x".repeat(1024 * 1024 + 1).into();
            serde_json::to_vec(&value).map_err(|e| e.to_string())
        });
        let body = match body {
            Ok(b) => b,
            Err(e) => return case.graded(false, "not sent", e),
        };
        match self.send(body, None).await {
            Ok(a) => {
                let passed = a.status == 413;
                case.graded(passed, a.describe(), if passed { "" } else { "advisory: expected 413" })
            }
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    async fn content_type(&self, case: CaseResult) -> CaseResult {
        let body = match event_body(None, result_of("media_type")) {
            Ok(b) => b,
            Err(e) => return case.graded(false, "not sent", e),
        };
        match self.send(body, Some("text/plain")).await {
            Ok(a) => {
                let passed = a.status == 415;
                case.graded(passed, a.describe(), if passed { "" } else { "advisory: expected 415" })
            }
            Err(e) => case.graded(false, "no answer", e),
        }
    }
}
