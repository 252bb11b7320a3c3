//! `adcp-sig demo`: the gateway end to end, on one machine, in seconds.
//!
//! Starts an upstream that counts the events it applies, a gateway in
//! front of it (embedded SQLite store in a temporary directory), generates
//! a seller key, then sends a stream of signed webhooks — first
//! deliveries, a seller retry (duplicate), a captured request replayed, a
//! tampered body, an expired signature, an unknown key, an upstream
//! outage and its retry — and reports what happened to each. Then the
//! seller's side: webhooks enqueued in a durable outbox and delivered
//! through a second gateway, the dispatcher restarted halfway, nothing
//! lost and nothing applied twice.
//!
//! ```no_run
//! # async fn run() -> Result<(), String> {
//! let report = adcp_sig::demo::run_demo(false).await?;
//! print!("{}", report.render());
//! assert!(report.passed());
//! # Ok(())
//! # }
//! ```

mod scenarios;
mod seller;
mod upstream;

pub use scenarios::{DemoReport, Expected, ScenarioResult, COUNT, DUPLICATE, EXPECTED_APPLIED, FORWARDED, RETRY_LATER};
pub use seller::{SellerReport, SELLER_EVENTS, SELLER_EVENTS_PER_PHASE};

use adcp_gateway::{Gateway, GatewayOptions, Registrations};
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::StaticKeyResolver;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;

/// The seller's agent URL in the demo (the verified sender).
pub const DEMO_AGENT: &str = "https://seller.example/mcp";
/// The public URL sellers are given in the demo; the gateway listens on
/// loopback behind it (`--public-url`).
pub const DEMO_PUBLIC_URL: &str = "https://buyer.example";
/// The webhook path.
pub const DEMO_PATH: &str = "/webhooks/adcp";

/// Arguments of `adcp-sig demo`.
#[derive(Debug, Clone, Default, Args)]
pub struct DemoArgs {
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the demo and prints the report. Exit code 0 when every scenario
/// had its expected outcome and the upstream saw each event once, 1
/// otherwise, 2 when the demo could not run.
#[must_use]
pub fn run(args: &DemoArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return 2;
        }
    };
    match runtime.block_on(run_demo(true)) {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.render());
            }
            if report.passed() {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("adcp-sig-demo-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs every scenario against an in-process gateway and upstream.
/// `progress` shows a progress bar on stderr when it is a terminal.
///
/// # Errors
///
/// A message when the demo could not be set up or a request could not be
/// sent at all (not when a scenario had an unexpected outcome: that is in
/// the report).
pub async fn run_demo(progress: bool) -> Result<DemoReport, String> {
    let target = if progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(scenarios::COUNT as u64 + 3), target);
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }

    bar.set_message("starting upstream and gateway");
    let mut upstream = upstream::CountingUpstream::start().await?;
    let dir = TempDir::new()?;
    let store_url: StoreUrl = format!("sqlite:{}", dir.0.join("dedup.sqlite").display())
        .parse()
        .map_err(|e| format!("store: {e}"))?;
    let store = adcp_store::open(&store_url, StoreOptions::default())
        .await
        .map_err(|e| format!("store: {e}"))?;

    // The seller: a fresh key; the buyer trusts its public JWKS.
    let key = Arc::new(SoftwareSigner::generate(Algorithm::Ed25519, "demo-seller-ed25519").map_err(|e| e.to_string())?);
    let jwks = key.jwks().map_err(|e| e.to_string())?.to_public_json();
    let keys: Arc<dyn adcp_verify::KeyResolver> = Arc::new(StaticKeyResolver::new().with_jwks(&jwks, DEMO_AGENT));

    let mut options = GatewayOptions::new(upstream.url()?);
    options.public_url = Some(url::Url::parse(DEMO_PUBLIC_URL).map_err(|e| e.to_string())?);
    options.upstream_timeout = std::time::Duration::from_secs(5);
    // The buyer registered one account-level subscription with the seller.
    let registration = adcp_webhook::Registration {
        url: format!("{DEMO_PUBLIC_URL}{}", scenarios::DEMO_NOTIFICATIONS_PATH),
        seller_agent_url: DEMO_AGENT.to_owned(),
        subscriber_id: scenarios::DEMO_SUBSCRIBER.to_owned(),
        scope: adcp_webhook::SubscriptionScope::Account(scenarios::DEMO_ACCOUNT.to_owned()),
        delivery_auth: adcp_webhook::DeliveryAuthMode::Rfc9421,
        event_types: std::iter::once(scenarios::DEMO_EVENT_TYPE.to_owned()).collect(),
        active: true,
    };
    options.subscriptions = Some(Registrations::from(
        adcp_webhook::StaticSubscriptions::new()
            .with(registration)
            .map_err(|e| e.to_string())?,
    ));
    let gateway = Gateway::new(Arc::clone(&keys), store, options).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let handle = gateway.serve(listener).map_err(|e| e.to_string())?;
    bar.inc(1);

    let signer = HttpSigner::webhook(Arc::clone(&key)).map_err(|e| e.to_string())?;
    let mut run = scenarios::Run::new(&handle, &upstream, &bar)?;
    let results = run.all(&signer, Arc::clone(&key)).await;
    bar.set_message("shutting down");
    let snapshot = gateway.receiver().metrics().snapshot();
    let gateway_metrics = (
        gateway.metrics().forwarded_count(),
        gateway.metrics().upstream_failure_count(),
    );
    handle.shutdown().await.map_err(|e| format!("gateway shutdown: {e}"))?;
    upstream.shutdown().await;
    bar.inc(1);
    let results = results?;
    bar.set_message("seller: outbox, dispatcher restarted halfway");
    let seller = seller::run(&dir.0, keys, &key).await?;
    bar.inc(1);
    bar.finish_and_clear();
    Ok(DemoReport::new(
        results,
        upstream.applied(),
        &snapshot,
        gateway_metrics,
        seller,
    ))
}
