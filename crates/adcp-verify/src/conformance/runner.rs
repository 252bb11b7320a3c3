//! Runs vectors through the verifier with their harness state installed.

use super::manifest::{check_manifest, Manifest, MANIFEST_3_2_4};
use super::vector::{Expected, Vector};
use crate::clock::FixedClock;
use crate::error::{ErrorCode, VerifyError};
use crate::keys::StaticKeyResolver;
use crate::profile::{DigestCoverage, Profile};
use crate::replay::{MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore};
use crate::request_policy::{decide, Binding, Decision, FallbackCredential, Rejection, Verdict, VerifierCapability};
use crate::verifier::{VerifiedSigner, Verifier};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::Message;
use adcp_vectors::VectorRequest;
use std::path::Path;

/// Agent URL the conformance keys are attributed to (the vectors do not
/// model brand.json discovery).
pub const CONFORMANCE_AGENT: &str = "https://conformance-agent.adcp.invalid/";

/// The result of one vector.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Vector path relative to the suite.
    pub relative: String,
    /// What the vector expects.
    pub expected: Expected,
    /// `Ok(keyid)` when accepted, `Err((code, step))` when rejected.
    pub got: Result<String, (String, String)>,
    /// Whether `got` matches `expected` (exact code for rejections).
    pub passed: bool,
    /// Server-side detail of a rejection, or why the vector could not run.
    pub detail: String,
}

/// The results of a whole suite run.
#[derive(Debug, Clone, Default)]
pub struct SuiteReport {
    /// Manifest problems (missing or altered files, wrong counts).
    pub manifest_problems: Vec<String>,
    /// Every vector's outcome.
    pub outcomes: Vec<Outcome>,
}

impl SuiteReport {
    /// Vectors that passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }

    /// Vectors that failed, plus one per manifest problem.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed() + self.manifest_problems.len()
    }

    /// `N passed, M failed`.
    pub fn summary_line(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }
}

/// The profile a vector runs under: from its suite directory (webhook v1,
/// request 3.2 under `profile-3.2/`, otherwise an explicitly configured
/// legacy request endpoint with the vector's advertised digest policy).
pub fn profile_for(vector: &Vector) -> Profile {
    let r = vector.relative.as_str();
    let version = vector.doc["signing_profile_version"].as_str();
    if r.starts_with("webhook-signing/") {
        Profile::webhook_v1()
    } else if r.contains("profile-3.2/") || version == Some("3.2") {
        Profile::request_v3_2()
    } else {
        let coverage = match vector.doc["verifier_capability"]["covers_content_digest"].as_str() {
            Some("forbidden") => DigestCoverage::Forbidden,
            Some("either") => DigestCoverage::Either,
            _ => DigestCoverage::Required,
        };
        Profile::request_legacy(coverage)
    }
}

/// How the checklist is driven for each vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunMode {
    /// One [`Verifier::verify`] call per vector.
    #[default]
    Single,
    /// [`Verifier::verify_batch`] over two copies of the vector's request:
    /// the first must get the vector's outcome, the second what a
    /// sequential second delivery gets (a replay after an acceptance, the
    /// same rejection otherwise). Exercises batch verification against
    /// every conformance case.
    Batched,
    /// One [`Verifier::verify`] call per vector, on a verifier with a
    /// [`SignatureBatcher`](crate::SignatureBatcher): its Ed25519
    /// signature is checked on the batcher's thread.
    Batcher,
}

/// Runs every signature vector of the suite (after checking the manifest).
pub async fn run_suite(suite: &Path) -> SuiteReport {
    run_suite_in(suite, RunMode::Single).await
}

/// [`run_suite`], driving the checklist as `mode` says.
pub async fn run_suite_in(suite: &Path, mode: RunMode) -> SuiteReport {
    run_suite_observed(suite, mode, &mut |_, _, _| {}).await
}

/// [`run_suite_in`], calling `observe(outcome, done, total)` after every
/// vector file (the HMAC fixture counts as one step), for progress display.
pub async fn run_suite_observed(
    suite: &Path,
    mode: RunMode,
    observe: &mut (dyn FnMut(&Outcome, usize, usize) + Send),
) -> SuiteReport {
    let mut report = SuiteReport::default();
    match Manifest::parse(MANIFEST_3_2_4) {
        Ok(manifest) => {
            if let Err(problems) = check_manifest(suite, &manifest) {
                report.manifest_problems = problems;
            }
        }
        Err(e) => report.manifest_problems.push(e),
    }
    let files: Vec<_> = [
        "webhook-signing/positive",
        "webhook-signing/negative",
        "request-signing/positive",
        "request-signing/negative",
        "request-signing/profile-3.2/positive",
        "request-signing/profile-3.2/negative",
        "request-signing/a2a/positive",
        "request-signing/a2a/negative",
    ]
    .into_iter()
    .flat_map(|dir| adcp_vectors::json_files(suite, dir))
    .collect();
    let total = files.len() + 1;
    for (i, path) in files.iter().enumerate() {
        let outcome = run_file_in(suite, path, None, mode).await;
        observe(&outcome, i + 1, total);
        report.outcomes.push(outcome);
    }
    let hmac = super::hmac_fixture::run(suite);
    if let Some(last) = hmac.last() {
        observe(last, total, total);
    }
    report.outcomes.extend(hmac);
    report
}

/// Runs one vector file. Never panics: a vector that cannot be run is a
/// failed outcome with the reason in `detail`.
pub async fn run_file(suite: &Path, path: &Path, profile: Option<Profile>) -> Outcome {
    run_file_in(suite, path, profile, RunMode::Single).await
}

/// [`run_file`], driving the checklist as `mode` says.
pub async fn run_file_in(suite: &Path, path: &Path, profile: Option<Profile>, mode: RunMode) -> Outcome {
    let relative = path
        .strip_prefix(suite)
        .map_or_else(|_| path.display().to_string(), |r| r.display().to_string());
    match try_run(suite, path, profile, mode).await {
        Ok(outcome) => outcome,
        Err(detail) => Outcome {
            relative,
            expected: Expected::Accept,
            got: Err(("not_run".into(), "-".into())),
            passed: false,
            detail,
        },
    }
}

/// A vector's verifier-side world, built through the public APIs: the
/// clock reading, the profile, the keys (`jwks_ref` / `jwks_override`
/// applied, revocations installed), a fresh replay store preloaded with the
/// vector's `test_harness_state` (replay entries, filled per-keyid caps),
/// the request, and for request vectors the advertised capability.
///
/// For harnesses that drive the vectors through another front door (a
/// tower layer, a gateway) with exactly the state this runner installs.
#[derive(Debug)]
pub struct Harness {
    /// `reference_now`: pin the clock to it.
    pub now: i64,
    /// The profile the vector runs under (from its directory, unless given).
    pub profile: Profile,
    /// The keys, attributed to [`CONFORMANCE_AGENT`].
    pub keys: StaticKeyResolver,
    /// A fresh replay store (webhook or request limits) with the preloads.
    pub replay: MemoryReplayStore,
    /// The request as the vector describes it.
    pub request: VectorRequest,
    /// `verifier_capability`, for request-profile vectors.
    pub capability: Option<VerifierCapability>,
}

impl Harness {
    /// Builds the world of `vector` under `profile` (default: the one its
    /// directory names, [`profile_for`]).
    ///
    /// # Errors
    ///
    /// A description of what in the vector could not be installed.
    pub async fn new(vector: &Vector, profile: Option<Profile>) -> Result<Self, String> {
        let now = vector.reference_now()?;
        let profile = profile.unwrap_or_else(|| profile_for(vector));
        let request = VectorRequest::from_json(&vector.doc["request"])?;
        let mut keys = StaticKeyResolver::new().with_jwks(&keys_for(vector)?, CONFORMANCE_AGENT);
        let limits = if profile.is_webhook() {
            ReplayLimits::webhook()
        } else {
            ReplayLimits::request()
        };
        let replay = MemoryReplayStore::new(limits);
        install_harness_state(vector, now, &mut keys, &replay).await?;
        let capability = if profile.is_webhook() {
            None
        } else {
            Some(
                VerifierCapability::from_json(&vector.doc["verifier_capability"])
                    .map_err(|e| format!("{}: verifier_capability: {e}", vector.relative))?,
            )
        };
        Ok(Self {
            now,
            profile,
            keys,
            replay,
            request,
            capability,
        })
    }
}

async fn try_run(suite: &Path, path: &Path, profile: Option<Profile>, mode: RunMode) -> Result<Outcome, String> {
    let vector = Vector::load(suite, path)?;
    let expected = vector.expected()?;
    let Harness {
        now,
        profile,
        keys: resolver,
        replay,
        request: req,
        capability,
    } = Harness::new(&vector, profile).await?;

    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    if let Some(body) = &req.body {
        msg = msg.with_body(body.as_bytes());
    }

    let got = if profile.is_webhook() {
        let verifier = verifier_for(Verifier::new(profile, resolver, replay, FixedClock(now)), mode)?;
        match drive(&verifier, &msg, mode).await? {
            Ok(signer) => Ok(signer.keyid),
            Err(e) => Err((e.code_str().to_owned(), e.step().to_string(), e.detail().to_owned())),
        }
    } else {
        // Request profile: the pre-checklist decides first, under the
        // vector's advertised capability; the checklist runs only when a
        // signature is presented.
        let capability = capability.ok_or_else(|| format!("{}: no verifier_capability", vector.relative))?;
        let binding = Binding::infer(&req.url);
        let verdict = match decide(&capability, binding, &msg, FallbackCredential::Absent) {
            Decision::Verify(plan) => {
                let verifier = verifier_for(Verifier::new(profile, resolver, replay, FixedClock(now)), mode)?;
                plan.conclude(drive(&verifier, &msg, mode).await?.map(|signer| signer.keyid))
            }
            other => other
                .verdict()
                .ok_or_else(|| format!("{}: undecided request", vector.relative))?,
        };
        match verdict {
            Verdict::Verified { signer, .. } => Ok(signer),
            Verdict::Accepted { .. } => Ok("(unsigned, accepted)".to_owned()),
            Verdict::Rejected(Rejection::Error(e)) => {
                Err((e.code_str().to_owned(), e.step().to_string(), e.detail().to_owned()))
            }
            Verdict::Rejected(_) => Err(("unauthenticated".to_owned(), "0".to_owned(), "shadow mode".to_owned())),
        }
    };
    let passed = match (&expected, &got) {
        (Expected::Accept, Ok(_)) => true,
        (Expected::Reject { code, .. }, Err((got_code, _, _))) => code == got_code,
        _ => false,
    };
    let detail = match &got {
        Ok(_) => String::new(),
        Err((_, _, d)) => d.clone(),
    };
    Ok(Outcome {
        relative: vector.relative.clone(),
        expected,
        got: got.map_err(|(c, s, _)| (c, s)),
        passed,
        detail,
    })
}

type VectorVerifier = Verifier<StaticKeyResolver, MemoryReplayStore, FixedClock>;

/// `verifier`, with a signature batcher when `mode` asks for one.
fn verifier_for(verifier: VectorVerifier, mode: RunMode) -> Result<VectorVerifier, String> {
    if mode != RunMode::Batcher {
        return Ok(verifier);
    }
    let batcher = crate::SignatureBatcher::start(1, crate::DEFAULT_MAX_BATCH).map_err(|e| format!("batcher: {e}"))?;
    Ok(verifier.with_signature_batcher(batcher))
}

/// Runs the checklist on `msg` as `mode` says. `Err` when batch
/// verification disagreed with sequential semantics on the second copy.
async fn drive(
    verifier: &VectorVerifier,
    msg: &Message<'_>,
    mode: RunMode,
) -> Result<Result<VerifiedSigner, VerifyError>, String> {
    match mode {
        RunMode::Single | RunMode::Batcher => Ok(verifier.verify(msg).await),
        RunMode::Batched => {
            let mut results = verifier.verify_batch(&[msg.clone(), msg.clone()]).await.into_iter();
            let (Some(first), Some(second)) = (results.next(), results.next()) else {
                return Err("verify_batch returned fewer results than requests".to_owned());
            };
            let consistent = match (&first, &second) {
                (Ok(_), Err(e)) => e.code() == ErrorCode::Replayed,
                (Err(a), Err(b)) => a.code() == b.code(),
                _ => false,
            };
            if !consistent {
                return Err(format!(
                    "batch: second copy got {:?} after {:?}",
                    second.map(|s| s.keyid).map_err(|e| e.code_str().to_owned()),
                    first
                        .as_ref()
                        .map(|s| s.keyid.clone())
                        .map_err(|e| e.code_str().to_owned())
                ));
            }
            Ok(first)
        }
    }
}

/// The JWKS a vector verifies against: the nearest `keys.json` above the
/// file, filtered by `jwks_ref`, with `jwks_override` applied.
fn keys_for(vector: &Vector) -> Result<serde_json::Value, String> {
    let mut keys: Vec<serde_json::Value> = Vec::new();
    if let Some(file) = vector
        .path
        .ancestors()
        .skip(1)
        .map(|d| d.join("keys.json"))
        .find(|p| p.is_file())
    {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        keys = doc["keys"].as_array().cloned().unwrap_or_default();
    }
    if let Some(refs) = vector.doc["jwks_ref"].as_array() {
        let wanted: Vec<&str> = refs.iter().filter_map(|r| r.as_str()).collect();
        keys.retain(|k| k["kid"].as_str().is_some_and(|kid| wanted.contains(&kid)));
    }
    match &vector.doc["jwks_override"] {
        serde_json::Value::Null => {}
        serde_json::Value::Object(map) if map.contains_key("keys") => {
            keys = map["keys"].as_array().cloned().unwrap_or_default();
        }
        // `{kid: jwk}`: replace those kids.
        serde_json::Value::Object(map) => {
            for (kid, jwk) in map {
                keys.retain(|k| k["kid"].as_str() != Some(kid));
                keys.push(jwk.clone());
            }
        }
        _ => return Err(format!("{}: jwks_override must be an object", vector.relative)),
    }
    Ok(serde_json::json!({ "keys": keys }))
}

async fn install_harness_state(
    vector: &Vector,
    now: i64,
    resolver: &mut StaticKeyResolver,
    replay: &MemoryReplayStore,
) -> Result<(), String> {
    let Some(state) = vector.doc["test_harness_state"].as_object() else {
        return Ok(());
    };
    let bad = |what: &str| format!("{}: test_harness_state.{what} is malformed", vector.relative);
    for (key, value) in state {
        match key.as_str() {
            "$comment" => {}
            "replay_cache_entries" => {
                for entry in value.as_array().ok_or_else(|| bad(key))? {
                    let keyid = entry["keyid"].as_str().ok_or_else(|| bad(key))?;
                    let nonce = BinaryEncoding::Base64UrlUnpadded
                        .decode(entry["nonce"].as_str().ok_or_else(|| bad(key))?)
                        .map_err(|e| format!("{}: {e}", bad(key)))?;
                    let ttl = entry["ttl_seconds"].as_i64().unwrap_or(360);
                    let replay_key = ReplayKey {
                        agent: Some(CONFORMANCE_AGENT),
                        keyid,
                        nonce: &nonce,
                        scope: None,
                    };
                    replay
                        .insert(replay_key, now + ttl, now)
                        .await
                        .map_err(|e| e.to_string())?;
                }
            }
            "revoked_kids" => {
                for kid in value.as_array().ok_or_else(|| bad(key))? {
                    *resolver = std::mem::take(resolver).revoke(kid.as_str().ok_or_else(|| bad(key))?);
                }
            }
            "revocation_list" => {
                for kid in value["revoked_kids"].as_array().ok_or_else(|| bad(key))? {
                    *resolver = std::mem::take(resolver).revoke(kid.as_str().ok_or_else(|| bad(key))?);
                }
            }
            "revocation_list_stale_seconds" => {
                *resolver = std::mem::take(resolver).with_stale_revocation_list(true);
            }
            // The cap is the signer's, (agent, keyid): fill the partition
            // the verifier checks for the suite's agent.
            "per_keyid_cap_filled_for" => {
                let keyid = value.as_str().ok_or_else(|| bad(key))?;
                replay.fill_to_cap(
                    crate::replay::CapKey {
                        agent: Some(CONFORMANCE_AGENT),
                        keyid,
                    },
                    now + 360,
                );
            }
            "replay_cache_per_keyid_cap_hit" => {
                let keyid = value["keyid"].as_str().ok_or_else(|| bad(key))?;
                replay.fill_to_cap(
                    crate::replay::CapKey {
                        agent: Some(CONFORMANCE_AGENT),
                        keyid,
                    },
                    now + 360,
                );
            }
            other => return Err(format!("{}: unknown test_harness_state key `{other}`", vector.relative)),
        }
    }
    Ok(())
}
