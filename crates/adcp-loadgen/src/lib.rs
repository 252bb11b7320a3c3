//! Load generation for the verifying gateway (`adcp-sig gateway`).
//!
//! Four servers/clients, each a subcommand of the `adcp-loadgen` binary
//! and a function here:
//!
//! - [`sink`]: the gateway's upstream in load runs. It answers every `POST`
//!   with `200`, counts requests and distinct `X-Adcp-Idempotency-Key`
//!   values, and serves `GET /stats` as
//!   `{"requests":…,"distinct_keys":…,"duplicates":…}`; `duplicates > 0`
//!   means the gateway delivered an event twice.
//! - [`bare`]: the baseline, the same axum/hyper stack reading each body
//!   and answering `200` without verifying anything.
//! - [`floor`]: the verifying floor, the checklist's mandatory work (the
//!   two signature headers, the signature base, one signature verification
//!   with the gateway's routines, the body's `Content-Digest`) and the
//!   forwarding baseline's upstream post, with no store: what the gateway
//!   cannot do without.
//! - [`run`]: the load generator. It signs fresh RFC 9421 webhook
//!   signatures (Ed25519, webhook profile) on a dedicated OS thread (or all
//!   of them before the timed phase with `presign`), re-delivers a fraction
//!   of events with a fresh signature (a seller's retry, preferably to
//!   another gateway), tampers with a fraction of bodies after signing,
//!   sends over `connections` keep-alive HTTP/1.1 connections at a paced
//!   rate or as fast as possible, and reports throughput, latency
//!   percentiles (HDR histograms), statuses, rejection codes, a time series
//!   with the RSS of watched processes, and verdicts on the accounting
//!   (upstream count equals unique valid events, no duplicate delivery,
//!   every tampered request rejected).
//!
//! Only `http://` targets are supported: the gateway is measured on
//! loopback, behind whatever terminates TLS in production.
//!
//! ```no_run
//! # async fn demo() -> Result<(), adcp_loadgen::Error> {
//! use adcp_loadgen::run::{KeySource, Pace, RunOptions};
//! use std::time::Duration;
//!
//! let sink = adcp_loadgen::sink::Sink::start("127.0.0.1:0".parse()?).await?;
//! // ... start a gateway whose upstream is sink.url("/events") ...
//! let mut options = RunOptions::new(vec!["http://127.0.0.1:8790/webhooks/adcp".to_owned()]);
//! options.key = KeySource::JwkFile("seller.jwk".into());
//! options.pace = Pace::Rate(200.0);
//! options.duration = Duration::from_secs(5);
//! options.sink = Some(sink.base_url());
//! let report = adcp_loadgen::run::run(options).await?;
//! println!("{}", report.render_text());
//! assert!(report.passed());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod bare;
pub mod client;
pub mod floor;
pub mod plan;
pub mod report;
pub mod rss;
pub mod run;
pub mod sink;

/// Every failure of the load generator: a message naming what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

macro_rules! from_error {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Self(e.to_string())
            }
        })*
    };
}

from_error!(
    std::io::Error,
    std::net::AddrParseError,
    adcp_sign::SignError,
    serde_json::Error,
    hyper::Error,
    http::Error,
    http::uri::InvalidUri,
);
