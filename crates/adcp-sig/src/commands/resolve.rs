//! `adcp-sig resolve`: run key discovery for an agent URL and print the
//! per-step trace (URL, HTTP status, age, outcome) and the resolved JWKS,
//! or the spec error code of the step that refused.
//!
//! Two chains:
//! - default: the webhook chain (`/.well-known/brand.json` at the agent's
//!   host, or `--brand-json-url`, → byte-equal `agents[]` → `jwks_uri`);
//! - `--capabilities FILE|URL`: the 8-step `identity.brand_json_url` chain,
//!   reading the `get_adcp_capabilities` response from a file or an HTTPS
//!   URL (the protocol call itself belongs to an AdCP client).
//!
//! Exit codes: 0 resolved, 1 a discovery check failed (the code is printed),
//! 2 usage or I/O errors.
//!
//! The `--dangerously-*-for-tests` flags exist so that tests can point the
//! command at a local HTTPS server; never use them against real agents.

use crate::exit::Exit;
use adcp_jwks::adagents::{authorized_agent, discover_adagents};
use adcp_jwks::DiscoveryTrace;
use adcp_jwks::{resolve_brand_json_url, resolve_well_known, HttpsCapabilities};
use adcp_jwks::{
    AgentResolution, CapabilitiesSource, ChainOptions, DiscoveryFailure, FetchConfig, Fetcher, KeySource,
    SigningSurface, SsrfPolicy, StaticCapabilities, StaticDnsResolver, StepOutcome, TrustRoots,
};
use adcp_sigbase::{Clock, SystemClock};
use clap::{Args, ValueEnum};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The surface whose keys are resolved (decides the error-code prefix and
/// which `identity.key_origins` entries are checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SurfaceArg {
    /// Webhook signatures (`webhook_signature_*` codes).
    Webhook,
    /// Request signatures (`request_signature_*` codes).
    Request,
}

/// Arguments of `adcp-sig resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// The agent URL, exactly as the counterparty uses it (matched
    /// byte-for-byte against brand.json `agents[].url`).
    #[arg(value_name = "AGENT_URL")]
    pub agent_url: String,
    /// The brand.json location for the webhook chain, when the operator
    /// domain is not the agent's host.
    #[arg(long, value_name = "URL", conflicts_with = "capabilities")]
    pub brand_json_url: Option<String>,
    /// Run the `identity.brand_json_url` chain with this
    /// `get_adcp_capabilities` response (a file, or an `https://` URL).
    #[arg(long, value_name = "FILE|URL")]
    pub capabilities: Option<String>,
    /// Sell-side webhook delivery: read the publisher's adagents.json at this
    /// origin (`https://publisher.example`) and, when its entry for the
    /// agent pins `signing_keys[]`, resolve against the pin (publisher >
    /// operator). Webhook surface only.
    #[arg(long, value_name = "ORIGIN")]
    pub publisher: Option<String>,
    /// Surface (default: `webhook`, or `request` with `--capabilities`).
    #[arg(long, value_enum)]
    pub surface: Option<SurfaceArg>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Test-only network overrides (hidden flags).
    #[command(flatten)]
    pub test_network: TestNetworkArgs,
}

/// The hidden `--dangerously-*-for-tests` flags that point a networked
/// command (`resolve`, `explain --agent`) at a local HTTPS test server.
#[derive(Debug, Clone, Default, Args)]
pub struct TestNetworkArgs {
    /// **Tests only**: trust this DER-encoded CA certificate instead of the
    /// Mozilla roots.
    #[arg(long, value_name = "FILE", hide = true)]
    pub dangerously_trust_ca_for_tests: Option<PathBuf>,
    /// **Tests only**: resolve HOST to IP (repeatable) instead of DNS.
    #[arg(long, value_name = "HOST=IP", hide = true)]
    pub dangerously_resolve_for_tests: Vec<String>,
    /// **Tests only**: accept loopback addresses (every other SSRF rule stays).
    #[arg(long, hide = true)]
    pub dangerously_allow_loopback_for_tests: bool,
}

/// Runs the command.
pub fn run(args: &ResolveArgs) -> Exit {
    let config = match args.test_network.fetch_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: cannot start the runtime: {e}");
            return Exit::Usage;
        }
    };
    runtime.block_on(resolve(args, config))
}

impl TestNetworkArgs {
    /// The fetch configuration: the defaults (Mozilla roots, system DNS,
    /// full SSRF policy) unless a test flag overrides one of them.
    pub fn fetch_config(&self) -> Result<FetchConfig, String> {
        let mut config = FetchConfig::default();
        if let Some(path) = &self.dangerously_trust_ca_for_tests {
            let der = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            config.roots = TrustRoots::Custom(vec![der]);
        }
        if !self.dangerously_resolve_for_tests.is_empty() {
            let mut dns = StaticDnsResolver::new();
            for entry in &self.dangerously_resolve_for_tests {
                let (host, ip) = entry
                    .split_once('=')
                    .ok_or_else(|| format!("--dangerously-resolve-for-tests {entry:?}: expected HOST=IP"))?;
                let ip: IpAddr = ip
                    .parse()
                    .map_err(|_| format!("--dangerously-resolve-for-tests {entry:?}: not an IP address"))?;
                dns = dns.with(host, [ip]);
            }
            config.resolver = Arc::new(dns);
        }
        if self.dangerously_allow_loopback_for_tests {
            config.policy = SsrfPolicy::new().dangerously_allow_loopback_for_tests();
        }
        Ok(config)
    }
}

async fn resolve(args: &ResolveArgs, config: FetchConfig) -> Exit {
    let fetcher = match Fetcher::new(config) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
    };
    let surface = match (args.surface, &args.capabilities) {
        (Some(SurfaceArg::Request), _) | (None, Some(_)) => SigningSurface::Request,
        _ => SigningSurface::Webhook,
    };
    let prefix = match surface {
        SigningSurface::Request => "request",
        SigningSurface::Webhook => "webhook",
    };
    let started = SystemClock.now();
    let mut publisher_trace = None;
    let mut publisher_pin = None;
    if let Some(origin) = &args.publisher {
        if surface != SigningSurface::Webhook {
            eprintln!("adcp-sig: --publisher applies to sell-side webhook delivery only (--surface webhook)");
            return Exit::Usage;
        }
        let origin = match url::Url::parse(origin) {
            Ok(u) => u,
            Err(e) => {
                eprintln!("adcp-sig: --publisher {origin:?}: {e}");
                return Exit::Usage;
            }
        };
        let mut trace = DiscoveryTrace::default();
        let found = discover_adagents(&fetcher, &origin, &mut trace, started).await;
        let pin = match found {
            Ok((url, agents)) => match authorized_agent(&agents, &args.agent_url) {
                Ok(entry) => entry.pin(url.as_str()).map_err(|e| format!("signing_keys: {e}")),
                Err(e) => Err(format!("adagents.json authorized_agents[]: {e:?}")),
            },
            Err(e) => Err(e.to_string()),
        };
        match pin {
            Ok(pin) => publisher_pin = pin.map(Arc::new),
            Err(e) => {
                // Publisher authorization failures have no signature code.
                print_publisher(args, &trace, SystemClock.now(), Some(&e));
                return Exit::Rejected;
            }
        }
        publisher_trace = Some(trace);
    }
    let options = ChainOptions { surface, publisher_pin };
    let (chain, result) = if let Some(caps) = &args.capabilities {
        let source: Box<dyn CapabilitiesSource> = if caps.starts_with("https://") || caps.starts_with("http://") {
            match url::Url::parse(caps) {
                Ok(u) => Box::new(HttpsCapabilities::new(fetcher.clone(), u)),
                Err(e) => {
                    eprintln!("adcp-sig: --capabilities {caps:?}: {e}");
                    return Exit::Usage;
                }
            }
        } else {
            match std::fs::read(caps) {
                Ok(bytes) => Box::new(StaticCapabilities(bytes)),
                Err(e) => {
                    eprintln!("adcp-sig: {caps}: {e}");
                    return Exit::Usage;
                }
            }
        };
        (
            "brand_json_url",
            resolve_brand_json_url(&fetcher, &args.agent_url, source.as_ref(), &options, started).await,
        )
    } else {
        let brand = match args.brand_json_url.as_deref().map(url::Url::parse).transpose() {
            Ok(b) => b,
            Err(e) => {
                eprintln!("adcp-sig: --brand-json-url: {e}");
                return Exit::Usage;
            }
        };
        (
            "well_known",
            resolve_well_known(&fetcher, &args.agent_url, brand.as_ref(), &options, started).await,
        )
    };
    let now = SystemClock.now();
    if args.json {
        let mut report = json_report(args, chain, prefix, &result, now);
        if let Some(t) = &publisher_trace {
            report["publisher_trace"] = t.to_json(now);
        }
        println!("{report}");
    } else {
        if let Some(t) = &publisher_trace {
            print_publisher(args, t, now, None);
        }
        print!("{}", text_report(args, chain, prefix, &result, now));
    }
    match result {
        Ok(_) => Exit::Ok,
        Err(_) => Exit::Rejected,
    }
}

/// The publisher adagents.json steps (and why they failed, if they did).
fn print_publisher(args: &ResolveArgs, trace: &DiscoveryTrace, now: i64, error: Option<&str>) {
    if args.json {
        let mut report = serde_json::json!({
            "publisher_trace": trace.to_json(now),
        });
        if let Some(e) = error {
            report["ok"] = false.into();
            report["agent_url"] = args.agent_url.clone().into();
            report["error"] = e.into();
        }
        println!("{report}");
        return;
    }
    println!("publisher {}", args.publisher.as_deref().unwrap_or_default());
    for s in &trace.steps {
        let mut line = format!("{:>2}. {:<16} {:<7}", s.step, s.name, s.outcome.as_str());
        if let Some(url) = &s.url {
            line.push(' ');
            line.push_str(url);
        }
        if let Some(status) = s.http_status {
            line.push_str(&format!(" HTTP {status}"));
        }
        if let Some(age) = s.age_secs(now) {
            line.push_str(&format!(" age {age}s"));
        }
        if !s.detail.is_empty() {
            line.push_str(" — ");
            line.push_str(&s.detail);
        }
        println!("{line}");
    }
    if let Some(e) = error {
        println!("error: publisher adagents.json: {e}");
    }
}

fn json_report(
    args: &ResolveArgs,
    chain: &str,
    prefix: &str,
    result: &Result<AgentResolution, Box<DiscoveryFailure>>,
    now: i64,
) -> serde_json::Value {
    match result {
        Ok(r) => serde_json::json!({
            "ok": true,
            "agent_url": args.agent_url,
            "chain": chain,
            "brand_json_url": r.brand_json_url.as_str(),
            "agent_entry": {
                "url": r.agent_entry.url,
                "type": r.agent_entry.agent_type,
                "jwks_uri": r.agent_entry.jwks_uri,
            },
            "key_source": match &r.key_source {
                KeySource::JwksUri(u) => serde_json::json!({"jwks_uri": u.as_str()}),
                KeySource::PublisherPin(s) => serde_json::json!({"publisher_pin": s}),
            },
            "jwks": r.jwks_json,
            "trace": r.trace.to_json(now),
        }),
        Err(f) => serde_json::json!({
            "ok": false,
            "agent_url": args.agent_url,
            "chain": chain,
            "code": f.error.code(prefix),
            "error": f.error.to_string(),
            "trace": f.trace.to_json(now),
        }),
    }
}

fn text_report(
    args: &ResolveArgs,
    chain: &str,
    prefix: &str,
    result: &Result<AgentResolution, Box<DiscoveryFailure>>,
    now: i64,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "agent  {} ({chain} chain)", args.agent_url);
    let trace = match result {
        Ok(r) => &r.trace,
        Err(f) => &f.trace,
    };
    for s in &trace.steps {
        let _ = write!(out, "{:>2}. {:<16} {:<7}", s.step, s.name, s.outcome.as_str());
        if let Some(url) = &s.url {
            let _ = write!(out, " {url}");
        }
        if let Some(status) = s.http_status {
            let _ = write!(out, " HTTP {status}");
        }
        if let Some(age) = s.age_secs(now) {
            let _ = write!(out, " age {age}s");
        }
        if let StepOutcome::Failed(code) = s.outcome {
            let _ = write!(out, " [{prefix}_signature_{code}]");
        }
        if !s.detail.is_empty() {
            let _ = write!(out, " — {}", s.detail);
        }
        out.push('\n');
    }
    match result {
        Ok(r) => {
            let source = match &r.key_source {
                KeySource::JwksUri(u) => u.to_string(),
                KeySource::PublisherPin(s) => format!("publisher pin {s}"),
            };
            let _ = writeln!(out, "resolved: {} keys from {source}", r.jwks.len());
            let pretty = serde_json::to_string_pretty(&r.jwks_json).unwrap_or_default();
            let _ = writeln!(out, "{pretty}");
        }
        Err(f) => {
            let _ = writeln!(out, "error: {}: {}", f.error.code(prefix), f.error);
        }
    }
    out
}
