//! `grade sender`: a seller's webhook emission, black box. The grader
//! listens, prints a `push_notification_config` to register (its URL, a
//! fresh `token` and `operation_id`), answers `503` to the first delivery
//! of each `idempotency_key` and `200` to the later ones (the suite's
//! `webhook-receiver-runner.yaml` retry contract, count 1), and grades what
//! arrived within the window against the seller's published keys:
//!
//! | Case | Checks |
//! |---|---|
//! | `sender/delivery` | something arrived in the window |
//! | `sender/signature` | each delivery passes the real webhook verifier (`adcp_verify`, `Profile::webhook_v1`) at its arrival time, `@target-uri` the registered URL |
//! | `sender/content-type` | one `Content-Type`, `application/json` |
//! | `sender/content-digest` | a `Content-Digest` matching the body bytes |
//! | `sender/idempotency-key` | the schema's pattern, not one repeated character |
//! | `sender/unpredictable-key` | no sequential or time-derived keys (see below) |
//! | `sender/retry-after-503` | the next delivery of the key within 90 s of the `503` |
//! | `sender/retry-same-key` | no unacknowledged payload re-sent under a new key |
//! | `sender/retry-same-body` | each retry's body JCS-identical (RFC 8785) to the first |
//! | `sender/fresh-nonce` | `(keyid, nonce)` never repeated across deliveries |
//! | `sender/no-retry-after-2xx` | nothing more of a key after a `2xx` |
//! | `sender/schema` | each body valid against its kind's 3.2 schema |
//! | `sender/result`, `sender/operation-id`, `sender/token` | task webhooks (MCP envelope) carry `result` and echo the registration |
//!
//! Each delivery is verified with a replay cache of its own, so a reused
//! nonce fails `sender/fresh-nonce` and nothing else. The key heuristics:
//! two keys equal but for one short run whose numbers differ by 1–1024
//! (sequential); a Unix time (s, ms, µs, ns) or the date within a day of
//! the arrival; UUID v1/v6/v7; a ULID minted now.
//!
//! Cases nothing could be observed for are skipped with the reason (no
//! retry arrived: nothing to compare); nothing at all arriving fails
//! `sender/delivery`. An event with no retry by the end of the window
//! fails `sender/retry-after-503`; the verdict is final only when the
//! window extends 90 s past the `503`, which the reason says (tests use a
//! window of seconds against a sender that retries within one).
//!
//! Untrusted input is bounded: bodies up to 1 MiB ([`MAX_BODY_BYTES`],
//! else `413`), header bytes up to 64 KiB ([`MAX_HEADER_BYTES`], else
//! `431`), [`MAX_DELIVERIES`] deliveries and [`MAX_KEPT_BYTES`] kept (then
//! `429`), [`MAX_CONCURRENT_DELIVERIES`] bodies read at once.
//!
//! ```no_run
//! use adcp_grade::{PublishedKeys, SenderConfig, SenderGrader};
//!
//! # async fn run() -> Result<(), adcp_grade::GradeError> {
//! let jwks = serde_json::json!({"keys": []}); // the seller's public JWKS
//! let keys = PublishedKeys::Jwks { jwks, agent: "https://seller.example/mcp".into() };
//! let mut config = SenderConfig::new("127.0.0.1:0".parse().expect("address"), keys);
//! config.allow_http = true; // loopback development: plain http
//! config.window = std::time::Duration::from_secs(120);
//! let grader = SenderGrader::bind(config).await?;
//! println!("{}", grader.registration().to_task_argument());
//! // ... have the seller emit a webhook to grader.registration().url ...
//! let report = grader.run().await?;
//! println!("{}", report.summary_line());
//! # Ok(())
//! # }
//! ```

mod cases;
mod journal;
mod keys;
mod listener;
mod registration;
mod schema;
mod verify;

pub use cases::RETRY_WITHIN;
pub use journal::{MAX_BODY_BYTES, MAX_CONCURRENT_DELIVERIES, MAX_DELIVERIES, MAX_HEADER_BYTES, MAX_KEPT_BYTES};
pub use listener::SenderGrader;
pub use registration::Registration;

use crate::error::GradeError;
use crate::report::Report;
use crate::signer::PublishedKeys;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The default window: time to register, trigger and see the retries.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(180);

/// The longest window accepted.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// What `grade sender` needs.
#[derive(Debug)]
pub struct SenderConfig {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// The seller's published keys: brand.json discovery from its agent
    /// URL, or a JWKS.
    pub keys: PublishedKeys,
    /// The URL the seller calls when a TLS terminator or proxy is in front
    /// of the listener: registered as is, and every `@target-uri` is
    /// checked against it (with `Host` taken from it). `None`: `http://ADDR/webhook`
    /// as bound, each delivery's path as received.
    pub public_url: Option<String>,
    /// How long to listen ([`DEFAULT_WINDOW`]; at most [`MAX_WINDOW`]).
    pub window: Duration,
    /// Allow a plain-`http` registration (loopback development, tests).
    pub allow_http: bool,
    /// The AdCP 3.2 JSON Schema directory (`None`: `sender/schema` is
    /// skipped). [`SenderConfig::new`] locates it as
    /// `adcp_vectors::schemas_dir` does.
    pub schemas: Option<PathBuf>,
    /// Register a fresh `token` (default `true`).
    pub register_token: bool,
    /// Register a fresh `operation_id` (default `true`).
    pub register_operation_id: bool,
}

impl SenderConfig {
    /// Defaults: [`DEFAULT_WINDOW`], HTTPS only, the schemas located,
    /// a token and an operation id registered.
    #[must_use]
    pub fn new(listen: SocketAddr, keys: PublishedKeys) -> Self {
        Self {
            listen,
            keys,
            public_url: None,
            window: DEFAULT_WINDOW,
            allow_http: false,
            schemas: adcp_vectors::schemas_dir(),
            register_token: true,
            register_operation_id: true,
        }
    }
}

/// The sender grader's preconditions, as printed (after "the endpoint was
/// configured to:"). `keys` says where the seller's keys are published
/// (`published by https://seller.example/mcp (brand.json -> agents[] ->
/// jwks_uri)`).
#[must_use]
pub fn preconditions(registration: &Registration, keys: &str) -> Vec<String> {
    vec![
        format!(
            "receive the printed push_notification_config (url {}, token, operation_id; no authentication block) in a task request, and emit that task's webhooks to it",
            registration.url
        ),
        format!("sign them with a webhook signing key {keys}"),
        "deliver within the window, and retry each 503 within it (it should cover 90 s after each 503)".to_owned(),
    ]
}

/// Binds, calls `ready` (print the registration and the listening line
/// there), listens until the window ends or `stop` completes, and grades.
///
/// # Errors
///
/// As [`SenderGrader::bind`].
pub async fn grade_sender(
    config: SenderConfig,
    ready: impl FnOnce(&SenderGrader),
    stop: impl std::future::Future<Output = ()>,
) -> Result<Report, GradeError> {
    let grader = SenderGrader::bind(config).await?;
    ready(&grader);
    grader.run_until(stop).await
}
