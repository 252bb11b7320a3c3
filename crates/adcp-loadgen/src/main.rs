//! `adcp-loadgen`: a counting sink, a baseline server and a load generator
//! for the verifying gateway. See the library documentation
//! (`adcp_loadgen`) and `docs/performance.md`.
#![forbid(unsafe_code)]

use adcp_loadgen::run::{KeySource, Pace, RunOptions};
use adcp_loadgen::Error;
use clap::{Args, Parser, Subcommand};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The allocator of `adcp-sig`, so that the baselines served here and the
/// gateway are measured on the same one.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Load generation for the adcp-sig verifying gateway.
#[derive(Debug, Parser)]
#[command(name = "adcp-loadgen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A counting upstream: answers POSTs 200, counts requests and distinct
    /// X-Adcp-Idempotency-Key values; GET /stats returns them as JSON.
    Sink {
        /// Address to listen on (port 0: a free port; the address is
        /// printed on stdout as `listening on http://ADDR`).
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
    },
    /// The baseline: the same axum/hyper stack answering 200 after reading
    /// the body, verifying nothing.
    Bare {
        /// Address to listen on (port 0: a free port, printed on stdout).
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        /// Post every body to this upstream before answering (as the
        /// gateway forwards, minus the checklist and the stores); answers
        /// 502 when the upstream does not answer 2xx.
        #[arg(long, value_name = "URL")]
        forward: Option<reqwest::Url>,
    },
    /// The verifying floor: per POST only the checklist's mandatory work
    /// with the gateway's routines (the two signature headers, the
    /// signature base, one signature verification against --jwks, the
    /// body's Content-Digest), then the body posted to --forward as `bare
    /// --forward` does; no replay or idempotency store, no key discovery.
    /// Refuses what fails with 401 and the gateway's error code.
    Floor {
        /// Address to listen on (port 0: a free port, printed on stdout).
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        /// The sellers' public JWKS (`adcp-loadgen keygen --out-jwks`, the
        /// file given to `adcp-sig gateway --jwks`).
        #[arg(long, value_name = "FILE")]
        jwks: PathBuf,
        /// Post every verified body to this upstream before answering;
        /// answers 502 when the upstream does not answer 2xx.
        #[arg(long, value_name = "URL")]
        forward: reqwest::Url,
    },
    /// Generate Ed25519 seller keys: the private set for `run --key`, the
    /// public JWKS for `adcp-sig gateway --jwks`.
    Keygen {
        /// How many keys (one keeps up with about 330 requests/s: the
        /// receiver's replay cache holds 100,000 entries per keyid for the
        /// 300 s a signature is valid).
        #[arg(long, value_name = "N", default_value_t = 1)]
        keys: usize,
        /// Where the private keys go (`{"keys": [private JWK, …]}`).
        #[arg(long, value_name = "FILE")]
        out_private: PathBuf,
        /// Where the public JWKS goes.
        #[arg(long, value_name = "FILE")]
        out_jwks: PathBuf,
    },
    /// Send signed webhooks (or, with --profile request, signed AdCP
    /// requests) and report throughput, latency and accounting.
    Run(Box<RunArgs>),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Target URL (http://); repeat for several gateways. Each request is
    /// signed for the URL it is sent to.
    #[arg(long = "url", value_name = "URL", required = true)]
    urls: Vec<String>,
    /// The seller's private JWK (adcp-sig keygen --out-private) or key set
    /// (adcp-loadgen keygen --out-private); requests rotate over the keys.
    #[arg(long, value_name = "FILE", conflicts_with = "generate_key")]
    key: Option<PathBuf>,
    /// Generate Ed25519 keys; their public JWKS goes to --jwks-out.
    #[arg(long, requires = "jwks_out")]
    generate_key: bool,
    /// With --generate-key: how many keys.
    #[arg(long, value_name = "N", default_value_t = 1)]
    keys: usize,
    /// Where --generate-key writes the public JWKS.
    #[arg(long, value_name = "FILE")]
    jwks_out: Option<PathBuf>,
    /// Constant arrival rate, requests per second.
    #[arg(long, value_name = "N", conflicts_with = "max", required_unless_present = "max")]
    rate: Option<f64>,
    /// As fast as the targets answer.
    #[arg(long)]
    max: bool,
    /// Length of the timed phase, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    duration: f64,
    /// Concurrent workers, each with one keep-alive connection per URL.
    #[arg(long, value_name = "C", default_value_t = 16)]
    connections: usize,
    /// Approximate body size in bytes.
    #[arg(long, value_name = "N", default_value_t = 200)]
    body_bytes: usize,
    /// Fraction of requests re-delivering an earlier event (fresh
    /// signature, another URL when there are several).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.10)]
    duplicates: f64,
    /// Fraction of requests with one body byte changed after signing.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.01)]
    tampered: f64,
    /// Sign every request before the timed phase (runs under ~4 minutes:
    /// signatures are valid 300 s).
    #[arg(long)]
    presign: bool,
    /// With --presign --max: how many requests to sign [default:
    /// duration × 12000].
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Print and record a time series every SECS seconds.
    #[arg(long, value_name = "SECS")]
    sample_secs: Option<f64>,
    /// Sample the RSS of this process (repeatable).
    #[arg(long = "watch-pid", value_name = "PID")]
    watch_pids: Vec<u32>,
    /// Base URL of the sink (for GET /stats and the accounting).
    #[arg(long, value_name = "URL")]
    sink: Option<String>,
    /// A retry re-delivers an event sent at least N requests earlier
    /// [default: the larger of 64, 4 × connections and 0.2 s of the rate].
    #[arg(long, value_name = "N")]
    duplicate_lag: Option<usize>,
    /// Per-request timeout, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// What is signed: `webhook` (create_media_buy completions) or
    /// `request` (MCP tools/call create_media_buy under the 3.2
    /// request-signing profile, for `adcp-sig gateway --profile request`).
    #[arg(long, value_name = "webhook|request", default_value = "webhook")]
    profile: String,
    /// Seed of the request mix.
    #[arg(long, default_value_t = 0x00AD_C951_6000)]
    seed: u64,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the Markdown report to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn announce(addr: SocketAddr) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on http://{addr}")?;
    out.flush()?;
    Ok(())
}

async fn dispatch(command: Command) -> Result<ExitCode, Error> {
    match command {
        Command::Sink { listen } => {
            let sink = adcp_loadgen::sink::Sink::start(listen).await?;
            announce(sink.local_addr())?;
            tokio::select! {
                r = sink.wait() => r?,
                _ = tokio::signal::ctrl_c() => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bare { listen, forward } => {
            let forward = forward
                .map(|url| adcp_loadgen::bare::Forward::new(url, std::time::Duration::from_secs(10)))
                .transpose()?;
            let listener = adcp_loadgen::bare::bind(listen).await?;
            announce(listener.local_addr()?)?;
            tokio::select! {
                r = adcp_loadgen::bare::serve(listener, forward) => r?,
                _ = tokio::signal::ctrl_c() => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Floor { listen, jwks, forward } => {
            let text = std::fs::read(&jwks).map_err(|e| Error::new(format!("{}: {e}", jwks.display())))?;
            let jwks_json: serde_json::Value =
                serde_json::from_slice(&text).map_err(|e| Error::new(format!("{}: {e}", jwks.display())))?;
            let keys = adcp_loadgen::floor::FloorKeys::from_jwks(&jwks_json)
                .map_err(|e| Error::new(format!("{}: {e}", jwks.display())))?;
            let forward = adcp_loadgen::bare::Forward::new(forward, std::time::Duration::from_secs(10))?;
            let listener = adcp_loadgen::bare::bind(listen).await?;
            announce(listener.local_addr()?)?;
            tokio::select! {
                r = adcp_loadgen::floor::serve(listener, keys, forward) => r?,
                _ = tokio::signal::ctrl_c() => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Keygen {
            keys,
            out_private,
            out_jwks,
        } => {
            let keys = adcp_loadgen::run::generate_keys("adcp-loadgen", keys)?;
            let private = adcp_loadgen::run::private_jwks(&keys)?;
            let public = adcp_loadgen::run::public_jwks(&keys)?;
            write_secret(&out_private, &serde_json::to_vec_pretty(&private)?)
                .map_err(|e| Error::new(format!("{}: {e}", out_private.display())))?;
            std::fs::write(&out_jwks, serde_json::to_vec_pretty(&public)?)
                .map_err(|e| Error::new(format!("{}: {e}", out_jwks.display())))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => run(*args).await,
    }
}

/// Writes a secret readable by its owner only (on Unix).
fn write_secret(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

fn seconds(name: &str, secs: f64) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(secs).map_err(|_| Error::new(format!("{name}: {secs} is not a duration")))
}

async fn run(args: RunArgs) -> Result<ExitCode, Error> {
    let key = match (args.key, args.generate_key, args.jwks_out) {
        (Some(path), false, _) => KeySource::JwkFile(path),
        (None, true, Some(jwks_out)) => KeySource::Generate {
            jwks_out,
            count: args.keys,
        },
        _ => return Err(Error::new("give --key FILE, or --generate-key --jwks-out FILE")),
    };
    let mut options = RunOptions::new(args.urls);
    options.key = key;
    options.pace = match args.rate {
        Some(rate) => Pace::Rate(rate),
        None => Pace::Max,
    };
    options.duration = seconds("--duration", args.duration)?;
    options.connections = args.connections;
    options.body_bytes = args.body_bytes;
    options.duplicates = args.duplicates;
    options.tampered = args.tampered;
    options.presign = args.presign;
    options.requests = args.requests;
    options.sample = args.sample_secs.map(|s| seconds("--sample-secs", s)).transpose()?;
    options.watch_pids = args.watch_pids;
    options.sink = args.sink;
    options.timeout = seconds("--timeout", args.timeout)?;
    options.seed = args.seed;
    options.duplicate_lag = args.duplicate_lag;
    options.progress = !args.json;
    options.profile = match args.profile.as_str() {
        "webhook" => adcp_loadgen::plan::SignProfile::Webhook,
        "request" => adcp_loadgen::plan::SignProfile::Request,
        other => {
            return Err(Error::new(format!(
                "--profile must be webhook or request, not {other:?}"
            )))
        }
    };
    let report = adcp_loadgen::run::run(options).await?;
    if let Some(path) = &args.report {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, report.render_markdown()).map_err(|e| Error::new(format!("{}: {e}", path.display())))?;
    }
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.render_text());
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
