//! `grade request-signing`: a seller's verifier of signed requests, black
//! box, per the suite's `test-kits/signed-requests-runner.yaml`.

use crate::error::GradeError;
use crate::prepare::{join_url, prepare, raw_authority, KeyRing, Recipe};
use crate::report::{CaseResult, Report};
use crate::runner::{fill_to_cap, noted, now, Answer, Client, GradeOptions, Outgoing, RateAbuse};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::DigestCoverage;
use std::path::Path;

/// Which request-signing vectors are graded (`--profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VectorProfile {
    /// AdCP 3.2 (default): the `profile-3.2/` vectors, RFC 8941 standard
    /// Base64, `content-digest` covered.
    #[default]
    V3_2,
    /// AdCP 3.0/3.1 verifiers: the kit's root `positive/` and `negative/`
    /// vectors (unpadded Base64URL). A 3.2 verifier must refuse their
    /// encoding, so grade a 3.2 endpoint with [`VectorProfile::V3_2`].
    Legacy,
}

/// How each vector reaches the agent (`--transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Raw per-operation endpoints (default): the vector's path and query
    /// are appended to the target URL's path
    /// (`https://agent.example/api` + `/adcp/create_media_buy`).
    #[default]
    Raw,
    /// The agent's MCP mount: each body is wrapped in a JSON-RPC
    /// `tools/call` (`name`: the vector path's last segment, `arguments`:
    /// the vector's body) posted to the target URL itself; a vector that
    /// is already a JSON-RPC call to `/mcp` is posted unchanged.
    Mcp,
}

/// What `grade request-signing` needs besides the [`GradeOptions`].
#[derive(Debug, Clone)]
pub struct RequestSigningConfig {
    /// The agent's URL (raw transport: the prefix of every vector path;
    /// MCP: its MCP endpoint).
    pub target: String,
    /// The vector set.
    pub profile: VectorProfile,
    /// The transport.
    pub transport: Transport,
    /// The agent's `get_adcp_capabilities` response, its
    /// `structuredContent`, or the `request_signing` block itself
    /// (`--capabilities FILE`). `None`: ask the agent, unsigned
    /// (`get_adcp_capabilities` as a `tools/call` to the MCP mount, or
    /// `POST <target>/adcp/get_adcp_capabilities` with `{}` over raw).
    pub capabilities: Option<serde_json::Value>,
}

impl RequestSigningConfig {
    /// 3.2 vectors over raw endpoints at `target`, capability asked of the
    /// agent.
    #[must_use]
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            profile: VectorProfile::default(),
            transport: Transport::default(),
            capabilities: None,
        }
    }
}

/// The preconditions of the signed-requests test kit, as printed.
#[must_use]
pub fn preconditions(options: &GradeOptions) -> Vec<String> {
    let mut list = vec![
        "trust the suite's request-signing test keys (request-signing/keys.json: test-ed25519-2026, test-es256-2026, ...) as a registered test counterparty, adcp_use \"request-signing\"".to_owned(),
        "revoke test-revoked-2026 before grading (vector 017)".to_owned(),
        "replay-cache TTL of at least 10 s for the test counterparty (vector 016 sends the same request twice)".to_owned(),
        "advertise in request_signing the operations the vectors target (create_media_buy in required_for; tasks/cancel in protocol_methods_required_for) or those vectors are skipped".to_owned(),
    ];
    match options.rate_abuse {
        RateAbuse::Cap(cap) => list.push(format!(
            "a per-keyid replay cap of {cap} for the test counterparty (vector 020; --rate-abuse-cap N)"
        )),
        RateAbuse::Skip => {}
    }
    list
}

/// Grades the verifier at `config.target`.
///
/// # Errors
///
/// [`GradeError`] when the grader cannot run (target refused by the
/// policy, suite missing, capability unreadable); failed cases are in the
/// [`Report`].
pub async fn grade_request_signing(
    config: &RequestSigningConfig,
    options: &GradeOptions,
) -> Result<Report, GradeError> {
    let client = Client::new(&options.policy, options.timeout)?;
    let target = client.check(&config.target)?;
    let suite = options.suite.as_path();
    let ring = KeyRing::load(suite, "request-signing/keys.json").map_err(GradeError::Suite)?;
    let capability = match &config.capabilities {
        Some(doc) => read_capability(doc)?,
        None => fetch_capability(&client, &target, config.transport).await?,
    };
    let mut report = Report::new("request-signing", target.as_str(), preconditions(options));
    let (positive, negative) = match config.profile {
        VectorProfile::V3_2 => (
            "request-signing/profile-3.2/positive",
            "request-signing/profile-3.2/negative",
        ),
        VectorProfile::Legacy => ("request-signing/positive", "request-signing/negative"),
    };
    let encoding = match config.profile {
        VectorProfile::V3_2 => BinaryEncoding::Base64Padded,
        VectorProfile::Legacy => BinaryEncoding::Base64UrlUnpadded,
    };
    let mut vectors = Vec::new();
    for dir in [positive, negative] {
        for path in adcp_vectors::json_files(suite, dir) {
            vectors.push(Loaded::load(suite, &path, dir)?);
        }
    }
    if vectors.is_empty() {
        return Err(GradeError::Suite(format!(
            "no vectors under {}",
            suite.join(positive).display()
        )));
    }
    // The filler of the rate-abuse phase: the basic positive.
    let filler = vectors.iter().find(|v| v.expect.is_none()).cloned();
    // Stateless first, then the stateful vectors in the kit's order, rate
    // abuse last: every earlier acceptance counts toward the cap.
    vectors.sort_by_key(|v| match v.contract.as_deref() {
        None => 0,
        Some("replay_window") => 1,
        Some("revocation") => 2,
        Some(_) => 3,
    });
    let ctx = Ctx {
        client: &client,
        target: &target,
        ring: &ring,
        transport: config.transport,
        encoding,
    };
    for vector in &vectors {
        let case = CaseResult::new(&vector.id, vector.expected_text());
        if !options.selection.selects(&vector.id) {
            continue;
        }
        if let Some(reason) = crate::prepare::needs_override(&vector.doc) {
            report.push(CaseResult { reason, ..case });
            continue;
        }
        if let Err(reason) = applies(&vector.capability, &capability) {
            report.push(CaseResult { reason, ..case });
            continue;
        }
        let result = match vector.contract.as_deref() {
            Some("replay_window") => ctx.replay(vector, case).await,
            Some("rate_abuse") => match options.rate_abuse {
                RateAbuse::Skip => CaseResult {
                    reason: "rate abuse not graded (--skip-rate-abuse)".into(),
                    ..case
                },
                RateAbuse::Cap(cap) => ctx.rate_abuse(vector, filler.as_ref(), cap, case).await,
            },
            _ => ctx.single(vector, case).await,
        };
        report.push(result);
    }
    Ok(report)
}

#[derive(Debug, Clone)]
struct Loaded {
    id: String,
    doc: serde_json::Value,
    expect: Option<String>,
    contract: Option<String>,
    capability: VerifierCapability,
}

impl Loaded {
    fn load(suite: &Path, path: &Path, dir: &str) -> Result<Self, GradeError> {
        let relative = path
            .strip_prefix(suite.join(dir))
            .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
        let leaf = dir.rsplit('/').next().unwrap_or(dir);
        let id = format!("{leaf}/{}", relative.trim_end_matches(".json"));
        let doc = adcp_vectors::load_json(suite, &format!("{dir}/{relative}")).map_err(GradeError::Suite)?;
        let expect = match doc["expected_outcome"]["success"].as_bool() {
            Some(true) => None,
            _ => Some(
                doc["expected_outcome"]["error_code"]
                    .as_str()
                    .ok_or_else(|| GradeError::Suite(format!("{id}: expected_outcome.error_code missing")))?
                    .to_owned(),
            ),
        };
        let capability = VerifierCapability::from_json(&doc["verifier_capability"])
            .map_err(|e| GradeError::Suite(format!("{id}: verifier_capability: {e}")))?;
        Ok(Self {
            id,
            contract: doc["requires_contract"].as_str().map(str::to_owned),
            doc,
            expect,
            capability,
        })
    }

    fn expected_text(&self) -> String {
        match &self.expect {
            None => "accepted (not a 401)".into(),
            Some(code) => format!("401 {code}"),
        }
    }
}

/// Whether the agent's capability grades `vector`: the same digest
/// coverage, and every operation and protocol method the vector requires
/// signing for also required by the agent.
fn applies(vector: &VerifierCapability, agent: &VerifierCapability) -> Result<(), String> {
    if !agent.supported() {
        return Err("the agent does not advertise request_signing.supported".into());
    }
    let name = |c: Option<DigestCoverage>| c.map_or_else(|| "unset".to_owned(), |c| format!("{c:?}").to_lowercase());
    if vector.covers_content_digest() != agent.covers_content_digest() {
        return Err(format!(
            "needs covers_content_digest {}, the agent advertises {}",
            name(vector.covers_content_digest()),
            name(agent.covers_content_digest())
        ));
    }
    if let Some(op) = vector
        .required_for()
        .iter()
        .find(|op| !agent.required_for().contains(*op))
    {
        return Err(format!(
            "needs {op} in required_for, which the agent does not advertise"
        ));
    }
    if let Some(m) = vector
        .protocol_methods_required_for()
        .iter()
        .find(|m| !agent.protocol_methods_required_for().contains(*m))
    {
        return Err(format!(
            "needs {m} in protocol_methods_required_for, which the agent does not advertise"
        ));
    }
    Ok(())
}

fn read_capability(doc: &serde_json::Value) -> Result<VerifierCapability, GradeError> {
    let doc = doc.get("result").filter(|r| r.is_object()).unwrap_or(doc);
    adcp_request::request_signing_capability(doc).map_err(|e| GradeError::Capability(e.to_string()))
}

async fn fetch_capability(
    client: &Client,
    target: &url::Url,
    transport: Transport,
) -> Result<VerifierCapability, GradeError> {
    let (url, body) = match transport {
        Transport::Raw => (
            join_url(target, "/adcp/get_adcp_capabilities").map_err(GradeError::Capability)?,
            b"{}".to_vec(),
        ),
        Transport::Mcp => (
            target.as_str().to_owned(),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "get_adcp_capabilities", "arguments": {}}})
            .to_string()
            .into_bytes(),
        ),
    };
    let out = Outgoing {
        method: "POST".into(),
        url: url.clone(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Accept".into(), "application/json, text/event-stream".into()),
        ],
        body,
    };
    let text = client.fetch_text(&out).await.map_err(|e| {
        GradeError::Capability(format!(
            "get_adcp_capabilities at {url}: {e} (pass --capabilities FILE)"
        ))
    })?;
    // An MCP answer may come as one server-sent event.
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .map_or(text.as_str(), str::trim);
    let doc: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        GradeError::Capability(format!(
            "get_adcp_capabilities at {url}: {e} (pass --capabilities FILE)"
        ))
    })?;
    let doc = doc
        .get("result")
        .and_then(|r| r.get("structuredContent").or(Some(r)))
        .cloned()
        .unwrap_or(doc);
    read_capability(&doc)
}

struct Ctx<'a> {
    client: &'a Client,
    target: &'a url::Url,
    ring: &'a KeyRing,
    transport: Transport,
    encoding: BinaryEncoding,
}

impl Ctx<'_> {
    fn outgoing(&self, vector: &Loaded) -> Result<Outgoing, String> {
        let vector_url = vector.doc["request"]["url"].as_str().ok_or("request.url missing")?;
        let (url, body) = match self.transport {
            Transport::Raw => (join_url(self.target, vector_url)?, None),
            Transport::Mcp => {
                let path = vector_url.split('?').next().unwrap_or(vector_url);
                if path.ends_with("/mcp") {
                    (self.target.as_str().to_owned(), None)
                } else {
                    let operation = path.rsplit('/').next().unwrap_or_default();
                    let arguments: serde_json::Value = vector.doc["request"]["body"]
                        .as_str()
                        .and_then(|b| serde_json::from_str(b).ok())
                        .unwrap_or_else(|| serde_json::json!({}));
                    let wrapped = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": operation, "arguments": arguments}});
                    (self.target.as_str().to_owned(), Some(wrapped.to_string().into_bytes()))
                }
            }
        };
        let malformed_target = vector
            .expect
            .as_deref()
            .is_some_and(|c| c.ends_with("_target_uri_malformed"));
        let host = malformed_target.then(|| {
            vector.doc["request"]["headers"]["Host"]
                .as_str()
                .map_or_else(|| raw_authority(vector_url).to_owned(), str::to_owned)
        });
        let recipe = Recipe {
            url,
            body,
            host,
            encoding: self.encoding,
            corrupt: vector
                .expect
                .as_deref()
                .is_some_and(|c| c.ends_with("_signature_invalid")),
            content_type: None,
        };
        prepare(&vector.doc, &recipe, self.ring, now())
    }

    fn grade(vector: &Loaded, case: CaseResult, answer: &Answer) -> CaseResult {
        match &vector.expect {
            None => {
                let ok = answer.accepted();
                let why = if ok { "" } else { "a positive vector was refused" };
                case.graded(ok, answer.describe(), why)
            }
            Some(code) => {
                let ok = answer.rejected_with(code);
                let why = if ok {
                    String::new()
                } else if answer.status == 401 {
                    "wrong error code".to_owned()
                } else {
                    "not refused with a 401 signature challenge".to_owned()
                };
                case.graded(ok, answer.describe(), why)
            }
        }
    }

    async fn single(&self, vector: &Loaded, case: CaseResult) -> CaseResult {
        let out = match self.outgoing(vector) {
            Ok(out) => out,
            Err(e) => return case.graded(false, "not sent", format!("could not prepare: {e}")),
        };
        match self.client.send(&out).await {
            Ok(answer) => Self::grade(vector, case, &answer),
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    /// The replay-window contract: the same request twice in a row.
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
                    format!("first submission {}", first.describe()),
                    "the first submission must be accepted",
                )
            }
            Err(e) => return case.graded(false, "no answer", e),
        }
        match self.client.send(&out).await {
            Ok(answer) => Self::grade(vector, case, &answer),
            Err(e) => case.graded(false, "no answer", e),
        }
    }

    /// The rate-abuse contract: distinct-nonce requests by the vector's
    /// keyid until the cap, then the vector.
    async fn rate_abuse(&self, vector: &Loaded, filler: Option<&Loaded>, cap: usize, case: CaseResult) -> CaseResult {
        let Some(filler) = filler else {
            return case.graded(false, "not sent", "no positive vector to fill the cap with");
        };
        let code = vector.expect.clone().unwrap_or_default();
        let next = || self.outgoing(filler).map_err(|e| e.to_string());
        let filled = fill_to_cap(
            self.client,
            cap,
            &code,
            "a filler request was refused before the cap",
            next,
            case,
        );
        let (sent, case) = match filled.await {
            Ok(filled) => filled,
            Err(failed) => return failed,
        };
        noted(
            self.single(vector, case).await,
            format!("after {sent} filler request(s)"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_vector_needs_what_the_agent_advertises() {
        let cap = |v| VerifierCapability::from_json(&v).unwrap_or_else(|_| unreachable!());
        let agent =
            cap(json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}));
        let plain =
            cap(json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}));
        assert!(applies(&plain, &agent).is_ok());
        let tasks = cap(
            json!({"supported": true, "covers_content_digest": "required", "required_for": [], "protocol_methods_required_for": ["tasks/cancel"]}),
        );
        assert!(applies(&tasks, &agent).unwrap_err().contains("tasks/cancel"));
        let either = cap(json!({"supported": true, "covers_content_digest": "either", "required_for": []}));
        assert!(applies(&either, &agent).unwrap_err().contains("covers_content_digest"));
    }
}
