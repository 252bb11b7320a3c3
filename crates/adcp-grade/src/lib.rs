//! Live graders for AdCP endpoints, against the official conformance
//! suite: anyone can check a counterparty's verifier, receiver, signer or
//! webhook emission in a minute, in any language, black box.
//!
//! - [`grade_request_signing`]: a seller's verifier of signed requests,
//!   per the suite's `test-kits/signed-requests-runner.yaml`. Every
//!   request-signing vector (3.2 or legacy, [`VectorProfile`]) is re-signed
//!   for the target with the suite's test keys (window moved to now, fresh
//!   nonce, the vector's single fault kept) and sent to the vector's path
//!   under the target URL ([`Transport::Raw`]) or as an MCP `tools/call`
//!   ([`Transport::Mcp`]). Positives must not be refused `401`; negatives
//!   must be refused `401` with exactly the vector's code in
//!   `WWW-Authenticate: Signature error="…"`. Vectors whose
//!   `verifier_capability` the agent does not advertise are skipped with
//!   the reason. The stateful vectors run last: replay (the same request
//!   twice), the pre-revoked key, rate abuse (cap + 1 distinct nonces).
//! - [`grade_receiver`]: a buyer's webhook receiver, against the webhook
//!   verifier checklist (the `webhook-signing/` vectors, each with a fresh,
//!   schema-valid body) and the receiver contract (a seller retry is `2xx`,
//!   a changed payload under the same `idempotency_key` is `409`, an exact
//!   replay is `401 webhook_signature_replayed`; `413` over 1 MiB and `415`
//!   for a non-JSON type are advisory).
//! - [`grade_signer`]: a signer (a private key, or an HTTP signing oracle
//!   for a KMS-backed key) signs a sample request and webhook, verified
//!   against the agent's published keys by the real verifier.
//! - [`grade_sender`] / [`SenderGrader`]: a seller's webhook emission. A
//!   listener prints a `push_notification_config` ([`Registration`]: URL,
//!   fresh `token` and `operation_id`), answers `503` to the first
//!   delivery of each `idempotency_key` and `2xx` to the later ones, and
//!   grades what arrives within the window ([`SenderConfig::window`]): the
//!   real webhook verifier against the seller's published keys,
//!   `Content-Type` and `Content-Digest`, key format and predictability
//!   (sequential, time-derived), retries (within [`RETRY_WITHIN`] of a
//!   `503`, same key, JCS-identical body, fresh nonce, none after a
//!   `2xx`), the 3.2 schema of each body, `result` and the echoed
//!   `token` / `operation_id`.
//!
//! Each returns a [`Report`]: one [`CaseResult`] per case (`id`, `status`,
//! `expected`, `got`, `reason`), the endpoint's preconditions, and the
//! closing line `N passed, M failed, K skipped`. The vectors are read from
//! the suite directory at run time ([`GradeOptions::suite`]), never copied.
//!
//! ```no_run
//! use adcp_grade::{grade_request_signing, GradeOptions, RequestSigningConfig};
//! use adcp_request::TargetPolicy;
//!
//! # async fn run() -> Result<(), adcp_grade::GradeError> {
//! let mut options = GradeOptions::located()?;
//! // Loopback development only: plain http and 127.0.0.1.
//! options.policy = TargetPolicy::default().dangerously_allow_plain_http();
//! let mut config = RequestSigningConfig::new("http://127.0.0.1:3000/");
//! config.capabilities = Some(serde_json::json!({
//!     "supported": true,
//!     "covers_content_digest": "required",
//!     "required_for": ["create_media_buy"]
//! }));
//! let report = grade_request_signing(&config, &options).await?;
//! for case in report.cases.iter().filter(|c| c.is_failure()) {
//!     println!("{}: expected {}, got {} ({})", case.id, case.expected, case.got, case.reason);
//! }
//! println!("{}", report.summary_line());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod error;
mod prepare;
mod receiver;
mod report;
mod request_signing;
mod runner;
mod sender;
mod signer;

pub use error::GradeError;
pub use receiver::{grade_receiver, preconditions as receiver_preconditions, ReceiverConfig, REVOKED_WEBHOOK_KID};
pub use report::{CaseResult, Report, Selection, Status};
pub use request_signing::{
    grade_request_signing, preconditions as request_signing_preconditions, RequestSigningConfig, Transport,
    VectorProfile,
};
pub use runner::{GradeOptions, RateAbuse, DEFAULT_RATE_ABUSE_CAP, DEFAULT_TIMEOUT};
pub use sender::{
    grade_sender, preconditions as sender_preconditions, Registration, SenderConfig, SenderGrader, DEFAULT_WINDOW,
    MAX_BODY_BYTES, MAX_CONCURRENT_DELIVERIES, MAX_DELIVERIES, MAX_HEADER_BYTES, MAX_KEPT_BYTES, MAX_WINDOW,
    RETRY_WITHIN,
};
pub use signer::{grade_signer, preconditions as signer_preconditions, PublishedKeys, SignerConfig, SignerUnderTest};

/// The README's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
