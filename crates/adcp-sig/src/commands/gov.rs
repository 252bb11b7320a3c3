//! `adcp-sig gov`: governance tokens (the AdCP JWS profile, `typ`
//! `adcp-gov+jws`).
//!
//! - `gov verify TOKEN_OR_FILE …`: the 15-step seller checklist against a
//!   static JWKS (`--jwks`, step 13 not performed) or the buyer's
//!   brand.json (`--buyer-brand-json`). Exit 0 accepted, 1 rejected (the
//!   spec code and step are printed), 2 usage or I/O errors.
//! - `gov sign --key PRIVATE_JWK --claims FILE [--payload FILE]`: issues a
//!   compact token, computing the payload hash and the `crit` markers.
//!
//! The governance vectors also run under `adcp-sig conformance`
//! ([`run_vectors`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adcp_jws::{
    issue, Amount, Commitment, GovernanceClaims, GovernanceRevocations, GovernanceVerifier, Phase, VerificationRequest,
};
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{Clock, FixedClock, SystemClock};
use adcp_sign::SoftwareSigner;
use adcp_verify::ReplayStore;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::commands::resolve::TestNetworkArgs;
use crate::exit::Exit;

/// Arguments of `adcp-sig gov`.
#[derive(Debug, Args)]
pub struct GovArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: GovCommand,
}

/// The `gov` subcommands.
#[derive(Debug, Subcommand)]
pub enum GovCommand {
    /// Verify a governance token (exit 0 accepted, 1 rejected, 2 usage).
    Verify(Box<GovVerifyArgs>),
    /// Sign a governance token from a claims file; prints the compact token.
    Sign(GovSignArgs),
}

/// The authorization gate (`phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    /// A buyer-supplied token on an inbound governed request.
    Intent,
    /// The execution token before committing a create.
    Purchase,
    /// The execution token before committing an update.
    Modification,
    /// The execution token for a delivery check.
    Delivery,
}

impl From<PhaseArg> for Phase {
    fn from(p: PhaseArg) -> Self {
        match p {
            PhaseArg::Intent => Phase::Intent,
            PhaseArg::Purchase => Phase::Purchase,
            PhaseArg::Modification => Phase::Modification,
            PhaseArg::Delivery => Phase::Delivery,
        }
    }
}

/// Arguments of `adcp-sig gov verify`.
#[derive(Debug, Args)]
pub struct GovVerifyArgs {
    /// The compact token, or a file holding it.
    #[arg(value_name = "TOKEN_OR_FILE")]
    pub token: String,
    /// The received task request (JSON; duplicate member names refused).
    #[arg(long, value_name = "FILE")]
    pub payload: PathBuf,
    /// The invoked AdCP task (`create_media_buy`, …).
    #[arg(long, value_name = "NAME")]
    pub task: String,
    /// This seller's exact URL (compared byte for byte with `aud`).
    #[arg(long, value_name = "URL")]
    pub audience: String,
    /// The authenticated caller (compared byte for byte with `caller`).
    #[arg(long, value_name = "URL")]
    pub caller: String,
    /// The authorization gate.
    #[arg(long, value_enum)]
    pub phase: PhaseArg,
    /// The commitment the service computed (exact decimal).
    #[arg(long, value_name = "N", requires = "currency")]
    pub amount: Option<String>,
    /// Its ISO 4217 currency.
    #[arg(long, value_name = "CODE", requires = "amount")]
    pub currency: Option<String>,
    /// The media buy of the operation (modification, delivery).
    #[arg(long, value_name = "ID")]
    pub media_buy_id: Option<String>,
    /// The `sub` retained from the prior accepted token of this action.
    #[arg(long, value_name = "SUB")]
    pub prior_sub: Option<String>,
    /// The expected governance agent (`iss`), checked at step 13 in
    /// `--jwks` mode.
    #[arg(long, value_name = "URL")]
    pub issuer: Option<String>,
    /// The revocation list: a file (signed, or the bare payload) or an
    /// `https://` URL (signed). Without one, execution phases are refused
    /// as stale.
    #[arg(long, value_name = "FILE|URL")]
    pub revocation_list: Option<String>,
    /// A static JWKS file (step 13, the brand.json cross-check, is then not
    /// performed).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "buyer_brand_json",
        conflicts_with = "buyer_brand_json"
    )]
    pub jwks: Option<PathBuf>,
    /// The authenticated buyer's brand.json URL: `iss` must be one of its
    /// governance agents, whose `jwks_uri` gives the keys.
    #[arg(long, value_name = "URL")]
    pub buyer_brand_json: Option<String>,
    /// Keep the `jti` replay record across invocations (`sqlite:PATH`,
    /// `redis://…`, `postgres://…`); default: in memory, this run only.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Verify as of this Unix time instead of now.
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// Print one JSON object: `{"ok", "error_code", "step", …}`.
    #[arg(long)]
    pub json: bool,
    /// Test-only network overrides (hidden flags).
    #[command(flatten)]
    pub test_network: TestNetworkArgs,
}

/// Arguments of `adcp-sig gov sign`.
#[derive(Debug, Args)]
pub struct GovSignArgs {
    /// The governance agent's private JWK (`adcp_use` must be
    /// `governance-signing`).
    #[arg(long, value_name = "PRIVATE_JWK")]
    pub key: PathBuf,
    /// The claims (a JSON object; `authorized_commitment`,
    /// `authorized_task` get their `crit` markers).
    #[arg(long, value_name = "FILE")]
    pub claims: PathBuf,
    /// The downstream task request: its payload hash becomes
    /// `authorized_payload_hash` (the claims must name `authorized_task`).
    #[arg(long, value_name = "FILE")]
    pub payload: Option<PathBuf>,
    /// Print `{"token": …}` instead of the bare token.
    #[arg(long)]
    pub json: bool,
}

/// Runs `adcp-sig gov`.
pub fn run(args: &GovArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return usage(format!("cannot start the runtime: {e}")),
    };
    match &args.command {
        GovCommand::Verify(a) => runtime.block_on(verify(a)),
        GovCommand::Sign(a) => runtime.block_on(sign(a)),
    }
}

fn usage(message: impl std::fmt::Display) -> Exit {
    eprintln!("adcp-sig: {message}");
    Exit::Usage
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_json(path: &Path) -> Result<Value, String> {
    adcp_jws::parse_payload(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))
}

async fn verify(args: &GovVerifyArgs) -> Exit {
    match build_and_verify(args).await {
        Err(message) => usage(message),
        Ok(Ok(accepted)) => {
            if args.json {
                println!(
                    "{}",
                    json!({
                        "ok": true, "error_code": null, "step": null,
                        "iss": accepted.iss, "sub": accepted.sub, "jti": accepted.jti, "kid": accepted.kid,
                        "brand_json_checked": accepted.brand_json_checked,
                    })
                );
            } else {
                println!(
                    "accepted: iss {} sub {} jti {}",
                    accepted.iss, accepted.sub, accepted.jti
                );
                if !accepted.brand_json_checked {
                    println!("step 13 (brand.json cross-check): not performed (--jwks)");
                }
            }
            Exit::Ok
        }
        Ok(Err(e)) => {
            if args.json {
                println!(
                    "{}",
                    json!({"ok": false, "error_code": e.code(), "step": e.step().number(), "detail": e.detail()})
                );
            } else {
                println!("rejected: {} at step {} ({})", e.code(), e.step(), e.detail());
            }
            Exit::Rejected
        }
    }
}

async fn build_and_verify(args: &GovVerifyArgs) -> Result<Result<adcp_jws::VerifiedToken, adcp_jws::GovError>, String> {
    let token = match std::fs::read_to_string(&args.token) {
        Ok(text) => text.trim().to_owned(),
        Err(_) => args.token.clone(),
    };
    let payload = read_json(&args.payload)?;
    let clock: Arc<dyn Clock> = match args.now {
        Some(t) => Arc::new(FixedClock(t)),
        None => Arc::new(SystemClock),
    };
    let now = clock.now();
    let store: Arc<dyn ReplayStore> = match &args.store {
        None => Arc::new(adcp_verify::MemoryReplayStore::webhook()),
        Some(url) => {
            let url: adcp_store::StoreUrl = url.parse().map_err(|e| format!("--store: {e}"))?;
            let store = adcp_store::open(&url, adcp_store::StoreOptions::default())
                .await
                .map_err(|e| format!("--store: {e}"))?;
            // `Arc<dyn Store>` is itself a replay store.
            Arc::new(store)
        }
    };
    let mut builder = GovernanceVerifier::builder()
        .replay_store(store)
        .clock(clock)
        .fetch_config(args.test_network.fetch_config()?);
    let mut static_jwks = None;
    if let Some(path) = &args.jwks {
        let jwks = read_json(path)?;
        static_jwks = Some(jwks.clone());
        builder = builder.static_jwks(jwks);
    }
    if let Some(url) = &args.buyer_brand_json {
        builder = builder.buyer_brand_json(url.parse().map_err(|e| format!("--buyer-brand-json: {e}"))?);
    }
    if let Some(list) = &args.revocation_list {
        if list.starts_with("https://") {
            builder = builder.fetch_revocation_list(Some(list.parse().map_err(|e| format!("--revocation-list: {e}"))?));
        } else {
            let bytes = read(Path::new(list))?;
            // A local file is operator-supplied: its bare payload is
            // accepted; a signed one must verify against --jwks.
            let parsed = GovernanceRevocations::parse(&bytes, static_jwks.as_ref(), true, now)
                .map_err(|e| format!("--revocation-list: {e}"))?;
            let fetched_at = parsed.list().updated.unwrap_or(now);
            builder = builder.revocation_list(GovernanceRevocations::new(parsed.list().clone(), fetched_at));
        }
    }
    let verifier = builder.build().map_err(|e| e.to_string())?;
    let mut request = VerificationRequest::new(
        payload,
        args.task.clone(),
        args.audience.clone(),
        args.caller.clone(),
        args.phase.into(),
    );
    if let (Some(amount), Some(currency)) = (&args.amount, &args.currency) {
        request.commitment = Some(Commitment {
            amount: amount.parse::<Amount>().map_err(|e| format!("--amount: {e}"))?,
            currency: currency.clone(),
        });
    }
    request.media_buy_id.clone_from(&args.media_buy_id);
    request.prior_sub.clone_from(&args.prior_sub);
    request.expected_issuer.clone_from(&args.issuer);
    Ok(verifier.verify(&token, &request).await)
}

/// The private key of `gov sign`: a governance-signing JWK. The AdCP test
/// key, whose private part is the non-standard `_private_d_for_test_only`,
/// is accepted with a warning so that the published tokens can be
/// reproduced.
fn governance_signer(path: &Path) -> Result<SoftwareSigner, String> {
    let bytes = read(path)?;
    let mut jwk = Jwk::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let adcp_use = jwk.member("adcp_use").and_then(Value::as_str);
    if adcp_use != Some(adcp_jws::GOVERNANCE_SIGNING) {
        return Err(format!(
            "{}: adcp_use is {adcp_use:?}; governance tokens are signed only with a \"governance-signing\" key",
            path.display()
        ));
    }
    const TEST_MEMBER: &str = "_private_d_for_test_only";
    if !jwk.has_private_key() && jwk.member(TEST_MEMBER).is_some() {
        eprintln!("adcp-sig: warning: signing with a published TEST key ({TEST_MEMBER}); never for real activity");
        jwk = jwk.with_test_private_member(TEST_MEMBER).map_err(|e| e.to_string())?;
    }
    let kid = jwk.kid().ok_or("the JWK has no kid")?.to_owned();
    let key = jwk.signing_key().map_err(|e| format!("{}: {e}", path.display()))?;
    SoftwareSigner::new(key, kid).map_err(|e| e.to_string())
}

async fn sign(args: &GovSignArgs) -> Exit {
    let result = async {
        let signer = governance_signer(&args.key)?;
        let mut claims = GovernanceClaims::from_json(&read_json(&args.claims)?).map_err(|e| e.to_string())?;
        if let Some(path) = &args.payload {
            if claims.authorized_task.is_none() {
                return Err("--payload needs an authorized_task in the claims".to_owned());
            }
            claims.authorized_payload_hash = Some(adcp_jws::payload_hash(&read_json(path)?));
        }
        issue(&claims, &signer).await.map_err(|e| e.to_string())
    }
    .await;
    match result {
        Ok(token) if args.json => {
            println!("{}", json!({ "token": token }));
            Exit::Ok
        }
        Ok(token) => {
            println!("{token}");
            Exit::Ok
        }
        Err(e) => usage(e),
    }
}

/// One governance vector's outcome under `adcp-sig conformance`.
#[derive(Debug, Clone)]
pub struct VectorOutcome {
    /// `governance/…#case-id`.
    pub name: String,
    /// Whether the outcome is the expected one.
    pub passed: bool,
    /// What was expected and what happened.
    pub detail: String,
}

/// The governance file of the suite, relative to it.
pub const GOVERNANCE_FILE: &str = "governance/governance-authorization.json";

/// Runs every case of the governance vector file: the payload hashes, the
/// abstract authorization decisions (each realized as a token signed with
/// the file's test key and a request that matches or misses on each axis)
/// and the compact-JWS cases, all through the verifier. `None` when the
/// suite has no governance file.
pub async fn run_vectors(suite: &Path) -> Option<Vec<VectorOutcome>> {
    let doc = adcp_vectors::load_json(suite, GOVERNANCE_FILE).ok()?;
    let mut out = Vec::new();
    for case in doc["payload_hash_cases"].as_array().into_iter().flatten() {
        let got = adcp_jws::payload_hash(&case["payload"]);
        let expected = case["expected_hash"].as_str().unwrap_or_default();
        out.push(VectorOutcome {
            name: format!("{GOVERNANCE_FILE}#{}", case["id"].as_str().unwrap_or("?")),
            passed: got == expected,
            detail: format!("expected hash {expected}, got {got}"),
        });
    }
    let signed = &doc["signed_jws"];
    let defaults = &signed["verification_defaults"];
    let mut public = signed["test_key"].clone();
    if let Some(o) = public.as_object_mut() {
        o.remove("_private_d_for_test_only");
    }
    for case in doc["authorization_cases"].as_array().into_iter().flatten() {
        let name = format!("{GOVERNANCE_FILE}#{}", case["id"].as_str().unwrap_or("?"));
        let expected = case["expected"].as_str().unwrap_or("?").to_owned();
        let got = match run_authorization_case(defaults, &signed["test_key"], &public, case).await {
            Ok(Ok(())) => "accept".to_owned(),
            Ok(Err(e)) => format!("reject ({} at step {})", e.code(), e.step()),
            Err(e) => format!("harness error: {e}"),
        };
        out.push(VectorOutcome {
            passed: got.split(' ').next() == Some(expected.as_str()),
            detail: format!("expected {expected}, got {got}"),
            name,
        });
    }
    for case in signed["cases"].as_array().into_iter().flatten() {
        let name = format!("{GOVERNANCE_FILE}#{}", case["id"].as_str().unwrap_or("?"));
        let expected = case["expected"]["error"].as_str().unwrap_or("accept").to_owned();
        let got = match run_signed_case(defaults, &public, case).await {
            Ok(Ok(())) => "accept".to_owned(),
            Ok(Err(e)) => format!("{} at step {}", e.code(), e.step()),
            Err(e) => format!("harness error: {e}"),
        };
        out.push(VectorOutcome {
            passed: got.split(' ').next() == Some(expected.as_str()),
            detail: format!("expected {expected}, got {got}"),
            name,
        });
    }
    Some(out)
}

async fn run_signed_case(
    defaults: &Value,
    public_jwk: &Value,
    case: &Value,
) -> Result<Result<(), adcp_jws::GovError>, String> {
    let now = defaults["now"].as_i64().ok_or("verification_defaults.now")?;
    let verifier = GovernanceVerifier::builder()
        .static_jwks(json!({ "keys": [public_jwk] }))
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(FixedClock(now)))
        .build()
        .map_err(|e| e.to_string())?;
    let overrides = case.get("verification_overrides");
    let pick = |name: &str| overrides.and_then(|o| o.get(name)).unwrap_or(&defaults[name]).clone();
    let text = |v: &Value, what: &str| v.as_str().map(str::to_owned).ok_or(format!("{what} is not a string"));
    if overrides.and_then(|o| o.get("preconsumed_jti")) == Some(&Value::Bool(true)) {
        let c = &case["claims"];
        verifier
            .preconsume(
                &text(&c["iss"], "iss")?,
                &text(&c["aud"], "aud")?,
                &text(&c["jti"], "jti")?,
                c["exp"].as_i64().unwrap_or(now) + adcp_jws::CLOCK_SKEW_SECS,
            )
            .await
            .map_err(|e| e.to_string())?;
    }
    let mut request = VerificationRequest::new(
        pick("payload"),
        text(&defaults["expected_task"], "expected_task")?,
        text(&defaults["expected_audience"], "expected_audience")?,
        text(&defaults["authenticated_caller"], "authenticated_caller")?,
        text(&defaults["expected_phase"], "expected_phase")?.parse::<Phase>()?,
    );
    let actual = pick("actual_commitment");
    request.commitment = Some(Commitment {
        amount: actual["amount"]
            .as_number()
            .and_then(Amount::from_json)
            .ok_or("actual_commitment.amount")?,
        currency: text(&actual["currency"], "actual_commitment.currency")?,
    });
    request.expected_issuer = Some(text(&defaults["expected_issuer"], "expected_issuer")?);
    let token = text(&case["compact_jws"], "compact_jws")?;
    Ok(verifier.verify(&token, &request).await.map(|_| ()))
}

/// One abstract authorization case: a token for the defaults' request,
/// signed with the test key, whose task, payload hash, ceiling, currency
/// and markers match or miss as the case says.
async fn run_authorization_case(
    defaults: &Value,
    test_key: &Value,
    public_jwk: &Value,
    case: &Value,
) -> Result<Result<(), adcp_jws::GovError>, String> {
    use adcp_sign::Signer as _;
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let flag = |name: &str| case[name].as_bool().ok_or(format!("{name} is not a boolean"));
    let now = defaults["now"].as_i64().ok_or("verification_defaults.now")?;
    let jwk = Jwk::from_json_value(test_key)
        .and_then(|j| j.with_test_private_member("_private_d_for_test_only"))
        .map_err(|e| e.to_string())?;
    let kid = jwk.kid().ok_or("test key without kid")?.to_owned();
    let signer =
        SoftwareSigner::new(jwk.signing_key().map_err(|e| e.to_string())?, kid.clone()).map_err(|e| e.to_string())?;
    let payload = defaults["payload"].clone();
    let mut other = payload.clone();
    other["idempotency_key"] = json!("governance-vector-other-payload");
    let task = defaults["expected_task"].as_str().ok_or("expected_task")?;
    let claims = json!({
        "iss": defaults["expected_issuer"], "sub": "gov_action_authorization_case", "plan_hash": "opaque",
        "aud": defaults["expected_audience"], "iat": now, "exp": now + 900,
        "jti": format!("authorization-{}", case["id"].as_str().unwrap_or("?")),
        "phase": "intent", "caller": defaults["authenticated_caller"], "check_id": "chk_authorization_case",
        "authorized_commitment": {"amount": case["authorized_amount"], "currency": "USD"},
        "authorized_task": if flag("task_match")? { task } else { "another_task" },
        "authorized_payload_hash": adcp_jws::payload_hash(if flag("payload_hash_match")? { &payload } else { &other }),
    });
    let markers: &[&str] = if flag("critical_markers_complete")? {
        &adcp_jws::CRITICAL_CLAIMS
    } else {
        &["authorized_task", "authorized_payload_hash"]
    };
    let mut header = serde_json::Map::new();
    header.insert("alg".into(), json!("EdDSA"));
    header.insert("kid".into(), json!(kid));
    header.insert("typ".into(), json!(adcp_jws::TYP));
    header.insert("crit".into(), json!(markers));
    for m in markers {
        header.insert((*m).to_owned(), json!(true));
    }
    let input = format!(
        "{}.{}",
        b64.encode(Value::Object(header).to_string()),
        b64.encode(claims.to_string())
    );
    let signature = signer.sign(input.as_bytes()).await.map_err(|e| e.to_string())?;
    let token = format!("{input}.{}", b64.encode(signature));
    let verifier = GovernanceVerifier::builder()
        .static_jwks(json!({ "keys": [public_jwk] }))
        .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
        .clock(Arc::new(FixedClock(now)))
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = VerificationRequest::new(
        payload,
        task,
        defaults["expected_audience"].as_str().ok_or("expected_audience")?,
        defaults["authenticated_caller"]
            .as_str()
            .ok_or("authenticated_caller")?,
        Phase::Intent,
    );
    request.commitment = Some(Commitment {
        amount: case["actual_amount"]
            .as_number()
            .and_then(Amount::from_json)
            .ok_or("actual_amount")?,
        currency: if flag("currency_match")? { "USD" } else { "EUR" }.to_owned(),
    });
    Ok(verifier.verify(&token, &request).await.map(|_| ()))
}
