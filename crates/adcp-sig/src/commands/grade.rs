//! `adcp-sig grade request-signing URL | receiver URL | signer | sender`:
//! the live graders of `adcp-grade` on the command line. The flags map onto
//! [`adcp_grade::GradeOptions`] and each grader's config; this module only
//! prints the report and picks the exit code: 0 when every graded case
//! passed, 1 when one failed, 2 for usage errors (nothing graded).

use crate::commands::resolve::TestNetworkArgs;
use crate::exit::Exit;
use adcp_grade::{
    GradeError, GradeOptions, PublishedKeys, RateAbuse, ReceiverConfig, Report, RequestSigningConfig, SenderConfig,
    SenderGrader, SignerConfig, SignerUnderTest, Status, Transport, VectorProfile,
};
use adcp_request::TargetPolicy;
use clap::{Args, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `adcp-sig grade`.
#[derive(Debug, Args)]
pub struct GradeArgs {
    /// The grader.
    #[command(subcommand)]
    pub grader: Grader,
}

/// The graders.
#[derive(Debug, Subcommand)]
pub enum Grader {
    /// Grade a seller's verifier of signed requests with every request-signing vector, re-signed for URL
    /// (the signed-requests test kit, black box).
    RequestSigning(RequestSigningArgs),
    /// Grade a buyer's webhook receiver: the webhook-signing vectors re-signed for URL, then the receiver
    /// contract (retry, idempotency conflict, replay; size and media type advisory).
    Receiver(ReceiverArgs),
    /// Grade a signer (a private key or an HTTP signing oracle) against the agent's published keys.
    Signer(SignerArgs),
    /// Grade a seller's webhook emission: listen, print a push_notification_config to register, answer 503
    /// to each event's first delivery, and grade what arrives within the window (signature, digest, keys,
    /// retries, schema, echoes).
    Sender(SenderArgs),
}

/// The flags every grader shares.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The conformance suite directory (default: `$ADCP_VECTORS_DIR`, the workplace copy, or
    /// `test-vectors/adcp`).
    #[arg(long, value_name = "DIR")]
    pub vectors: Option<PathBuf>,
    /// Run only these cases (comma-separated ids: `negative/016-replayed-nonce`, `negative/016`, `016`,
    /// `contract/retry`).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Skip these cases (same ids as `--only`).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Milliseconds to wait for each answer (1..=120000).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub timeout: u64,
    /// Print the full report as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Development only: allow plain `http://` and loopback targets (every other SSRF rule stays).
    #[arg(long)]
    pub allow_http: bool,
}

/// The rate-abuse flags of the endpoint graders.
#[derive(Debug, Args)]
pub struct RateAbuseArgs {
    /// The endpoint's per-keyid replay cap for the test keys: the grader sends up to N distinct-nonce
    /// requests, then expects the next one refused `*_signature_rate_abuse`.
    #[arg(long, value_name = "N", default_value_t = adcp_grade::DEFAULT_RATE_ABUSE_CAP)]
    pub rate_abuse_cap: usize,
    /// Do not grade rate abuse (reported as skipped).
    #[arg(long)]
    pub skip_rate_abuse: bool,
}

/// `--profile` of `grade request-signing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileChoice {
    /// AdCP 3.2: the `profile-3.2/` vectors (RFC 8941 Base64, content-digest covered).
    #[value(name = "3.2")]
    V3_2,
    /// AdCP 3.0/3.1 verifiers: the root vectors (unpadded Base64URL).
    Legacy,
}

/// `--transport` of `grade request-signing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportChoice {
    /// Each vector's path and query appended to URL's path.
    Raw,
    /// Each body wrapped in a JSON-RPC `tools/call` posted to URL (the agent's MCP mount).
    Mcp,
}

/// Arguments of `adcp-sig grade request-signing`.
#[derive(Debug, Args)]
pub struct RequestSigningArgs {
    /// The agent's URL: the prefix of every vector path (`--transport raw`) or its MCP endpoint.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The vector set.
    #[arg(long, value_enum, default_value = "3.2")]
    pub profile: ProfileChoice,
    /// How each vector reaches the agent.
    #[arg(long, value_enum, default_value = "raw")]
    pub transport: TransportChoice,
    /// The agent's `get_adcp_capabilities` response, or its `request_signing` object (default: ask the
    /// agent).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Rate-abuse grading.
    #[command(flatten)]
    pub rate_abuse: RateAbuseArgs,
    /// Shared flags.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `adcp-sig grade receiver`.
#[derive(Debug, Args)]
pub struct ReceiverArgs {
    /// The receiver's webhook URL.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The seller identity the receiver trusts the suite's webhook test keys for.
    #[arg(long, value_name = "URL")]
    pub agent_url: Option<String>,
    /// Rate-abuse grading.
    #[command(flatten)]
    pub rate_abuse: RateAbuseArgs,
    /// Shared flags.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `adcp-sig grade signer`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("signer").required(true).args(["key_file", "signer_url"])))]
#[command(group(clap::ArgGroup::new("published").required(true).args(["agent", "jwks"])))]
pub struct SignerArgs {
    /// The signer's private JWK file (with `d`).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// An HTTP signing oracle: POST `{payload_b64, kid, alg}` answered `{signature_b64}` (unpadded
    /// base64url).
    #[arg(long, value_name = "URL", requires_all = ["kid", "alg"])]
    pub signer_url: Option<String>,
    /// The kid the oracle signs under (with `--signer-url`).
    #[arg(long, value_name = "KID")]
    pub kid: Option<String>,
    /// The oracle's algorithm, an RFC 9421 name: `ed25519` or `ecdsa-p256-sha256` (with `--signer-url`).
    #[arg(long, value_name = "ALG")]
    pub alg: Option<String>,
    /// The agent URL whose published keys verify the signatures (brand.json discovery).
    #[arg(long, value_name = "URL")]
    pub agent: Option<String>,
    /// A JWKS file of the agent's published keys, instead of discovery.
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// Shared flags.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Test-only network overrides (hidden flags).
    #[command(flatten)]
    pub test_network: TestNetworkArgs,
}

/// Arguments of `adcp-sig grade sender`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("published").required(true).args(["agent", "jwks"])))]
pub struct SenderArgs {
    /// Address to listen on (any path is accepted); port 0 picks a free one.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The seller's agent URL: its published keys are discovered through brand.json.
    #[arg(long, value_name = "URL")]
    pub agent: Option<String>,
    /// A JWKS file of the seller's published keys, instead of discovery.
    #[arg(long, value_name = "FILE")]
    pub jwks: Option<PathBuf>,
    /// The URL the seller calls when TLS or a proxy is in front of the listener: registered, and every
    /// `@target-uri` checked against it [default: http://ADDR/webhook as listened, paths as received].
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Seconds to listen (1..=3600); cover the emission and 90 s of retries after each 503.
    #[arg(long, value_name = "SECONDS", default_value_t = adcp_grade::DEFAULT_WINDOW.as_secs())]
    pub window: u64,
    /// Development only: register a plain `http://` URL (the listener itself, no TLS in front).
    #[arg(long)]
    pub allow_http: bool,
    /// Print the full report as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Test-only network overrides (hidden flags).
    #[command(flatten)]
    pub test_network: TestNetworkArgs,
}

/// Runs the grader.
pub fn run(args: &GradeArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: cannot start the runtime: {e}");
            return Exit::Usage;
        }
    };
    let (json, result) = runtime.block_on(async {
        match &args.grader {
            Grader::RequestSigning(a) => (a.common.json, request_signing(a).await),
            Grader::Receiver(a) => (a.common.json, receiver(a).await),
            Grader::Signer(a) => (a.common.json, signer(a).await),
            Grader::Sender(a) => (a.json, sender(a).await),
        }
    });
    match result {
        Ok(report) => print(&report, json),
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            if json {
                println!(
                    "{}",
                    serde_json::json!({"outcome": "usage_error", "error": e.to_string()})
                );
            }
            Exit::Usage
        }
    }
}

/// What a grader reads from the conformance suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suite {
    /// The vectors and their test keys (`request-signing`, `receiver`).
    Needed,
    /// Nothing (`signer` signs its own sample messages): `--vectors`, when
    /// given, must still name a suite, but none is looked for otherwise.
    Unused,
}

/// The options of a run. The flags and the target are checked before the
/// suite is looked for: a usage error is reported as itself, not as a
/// missing suite.
fn options(
    common: &CommonArgs,
    rate: Option<&RateAbuseArgs>,
    target: Option<&str>,
    suite: Suite,
) -> Result<GradeOptions, GradeError> {
    if common.timeout == 0 || common.timeout > 120_000 {
        return Err(GradeError::Target(format!(
            "--timeout {}: expected 1..=120000 ms",
            common.timeout
        )));
    }
    let policy = if common.allow_http {
        TargetPolicy::default().dangerously_allow_plain_http()
    } else {
        TargetPolicy::default()
    };
    if let Some(url) = target {
        policy
            .check(url)
            .map_err(|e| GradeError::Target(format!("{url}: {e}")))?;
    }
    let mut options = match (&common.vectors, suite) {
        (Some(dir), _) => GradeOptions::new(dir),
        (None, Suite::Needed) => GradeOptions::located()?,
        // The signer grader never reads `suite`.
        (None, Suite::Unused) => GradeOptions::new(PathBuf::new()),
    };
    if (common.vectors.is_some() || suite == Suite::Needed) && !options.suite.join("request-signing").is_dir() {
        return Err(GradeError::Suite(format!(
            "{}: not an AdCP conformance suite (no request-signing/)",
            options.suite.display()
        )));
    }
    options.policy = policy;
    options.timeout = Duration::from_millis(common.timeout);
    options.selection.only.clone_from(&common.only);
    options.selection.skip.clone_from(&common.skip);
    if let Some(rate) = rate {
        options.rate_abuse = if rate.skip_rate_abuse {
            RateAbuse::Skip
        } else {
            RateAbuse::Cap(rate.rate_abuse_cap)
        };
    }
    Ok(options)
}

fn warn_live(url: &str, what: &str) {
    eprintln!("adcp-sig: grading fires live, validly signed {what} at {url}: point it at a sandbox endpoint");
}

async fn request_signing(args: &RequestSigningArgs) -> Result<Report, GradeError> {
    let options = options(&args.common, Some(&args.rate_abuse), Some(&args.url), Suite::Needed)?;
    let mut config = RequestSigningConfig::new(args.url.clone());
    config.profile = match args.profile {
        ProfileChoice::V3_2 => VectorProfile::V3_2,
        ProfileChoice::Legacy => VectorProfile::Legacy,
    };
    config.transport = match args.transport {
        TransportChoice::Raw => Transport::Raw,
        TransportChoice::Mcp => Transport::Mcp,
    };
    if let Some(path) = &args.capabilities {
        config.capabilities = Some(read_json(path).map_err(GradeError::Capability)?);
    }
    warn_live(&args.url, "requests (some mutating, e.g. create_media_buy)");
    adcp_grade::grade_request_signing(&config, &options).await
}

async fn receiver(args: &ReceiverArgs) -> Result<Report, GradeError> {
    let options = options(&args.common, Some(&args.rate_abuse), Some(&args.url), Suite::Needed)?;
    let mut config = ReceiverConfig::new(args.url.clone());
    config.agent_url.clone_from(&args.agent_url);
    warn_live(&args.url, "webhooks (each applied once by a conforming receiver)");
    adcp_grade::grade_receiver(&config, &options).await
}

async fn signer(args: &SignerArgs) -> Result<Report, GradeError> {
    let mut options = options(&args.common, None, None, Suite::Unused)?;
    options.rate_abuse = RateAbuse::Skip;
    let signer = match (&args.key_file, &args.signer_url) {
        (Some(path), _) => SignerUnderTest::Jwk(
            std::fs::read(path).map_err(|e| GradeError::Signer(format!("{}: {e}", path.display())))?,
        ),
        (None, Some(url)) => SignerUnderTest::Oracle {
            url: url.clone(),
            kid: args.kid.clone().unwrap_or_default(),
            alg: args.alg.clone().unwrap_or_default(),
        },
        (None, None) => return Err(GradeError::Signer("--key-file FILE or --signer-url URL".into())),
    };
    let keys = published_keys(args.agent.as_deref(), args.jwks.as_deref(), &args.test_network)?;
    adcp_grade::grade_signer(&SignerConfig { signer, keys }, &options).await
}

/// The keys a signer's or sender's output is graded against: a JWKS file,
/// or the agent's (discovered through its brand.json).
fn published_keys(
    agent: Option<&str>,
    jwks: Option<&std::path::Path>,
    network: &TestNetworkArgs,
) -> Result<PublishedKeys, GradeError> {
    Ok(match (agent, jwks) {
        (_, Some(path)) => PublishedKeys::Jwks {
            jwks: read_json(path).map_err(GradeError::Keys)?,
            agent: agent.unwrap_or("jwks-file").to_owned(),
        },
        (Some(url), None) => PublishedKeys::Agent {
            url: url.to_owned(),
            fetch: network.fetch_config().map_err(GradeError::Keys)?,
        },
        (None, None) => return Err(GradeError::Keys("--agent URL or --jwks FILE".into())),
    })
}

async fn sender(args: &SenderArgs) -> Result<Report, GradeError> {
    if args.window == 0 || Duration::from_secs(args.window) > adcp_grade::MAX_WINDOW {
        return Err(GradeError::Target(format!(
            "--window {}: expected 1..={} seconds",
            args.window,
            adcp_grade::MAX_WINDOW.as_secs()
        )));
    }
    let keys = published_keys(args.agent.as_deref(), args.jwks.as_deref(), &args.test_network)?;
    let mut config = SenderConfig::new(args.listen, keys);
    config.public_url.clone_from(&args.public_url);
    config.window = Duration::from_secs(args.window);
    config.allow_http = args.allow_http;
    let ready = |grader: &SenderGrader| {
        // The registration first (one JSON line), then the line scripts wait for.
        println!("{}", grader.registration().to_task_argument());
        println!("listening on {}", grader.listening_url());
        eprintln!(
            "adcp-sig: register the push_notification_config above in a task request to the seller; grading what arrives within {} s (Ctrl-C ends early)",
            args.window
        );
    };
    let stop = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    adcp_grade::grade_sender(config, ready, stop).await
}

fn read_json(path: &std::path::Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn print(report: &Report, json: bool) -> Exit {
    if json {
        println!("{}", report.to_json());
    } else {
        for case in &report.cases {
            let tag = match (case.status, case.advisory) {
                (Status::Passed, _) => "PASS",
                (Status::Failed, true) => "ADVISORY",
                (Status::Failed, false) => "FAIL",
                (Status::Skipped, _) => "SKIP",
            };
            match case.status {
                Status::Skipped => println!("{tag} {}: {}", case.id, case.reason),
                _ if case.reason.is_empty() => {
                    println!("{tag} {}: expected {}, got {}", case.id, case.expected, case.got)
                }
                _ => println!(
                    "{tag} {}: expected {}, got {} ({})",
                    case.id, case.expected, case.got, case.reason
                ),
            }
        }
        if !report.is_success() && !report.preconditions.is_empty() {
            println!("The {} grader assumes the endpoint was configured to:", report.grader);
            for p in &report.preconditions {
                println!("  - {p}");
            }
        }
        println!("{}", report.summary_line());
    }
    if report.is_success() {
        Exit::Ok
    } else {
        Exit::Rejected
    }
}
