//! The AdCP JWS profile: signed governance authorization tokens
//! (`governance_context`, protected-header `typ` `adcp-gov+jws`).
//!
//! - **Verification** — [`GovernanceVerifier`] runs the spec's 15-step
//!   seller checklist in order on a compact token against a
//!   [`VerificationRequest`] (the received payload, task, audience,
//!   authenticated caller, phase gate, computed commitment, media buy,
//!   prior `sub`). Each failure is a [`GovError`] whose
//!   [`code`](GovError::code) is the spec's exact code and which records
//!   the [`Step`]. Header rules (`typ`, the `EdDSA`/`ES256` allowlist,
//!   `crit` and its boolean markers, duplicate JSON keys) are enforced by
//!   this crate; the signature is verified by `jsonwebtoken`.
//! - **Keys** — the buyer's brand.json → the governance entry whose `url`
//!   is `iss` → `jwks_uri` through `adcp-jwks` (SSRF-pinned, cached,
//!   refetched once on an unknown `kid`), or a static JWKS. Keys must be
//!   published with `"adcp_use": "governance-signing"`.
//! - **Replay** — `jti` per `(iss, aud)` in any [`adcp_verify::ReplayStore`]
//!   (the SQLite, Redis and PostgreSQL stores of `adcp-store`), under a
//!   scope of its own ([`REPLAY_SCOPE`]).
//! - **Revocation** — [`GovernanceRevocations`]: `revoked_jtis`,
//!   `revoked_kids`, and a stale list blocks execution phases.
//! - **Issuance** — [`issue`] signs [`GovernanceClaims`] with any
//!   [`adcp_sign::Signer`], writing the `crit` markers; [`issue_for_payload`]
//!   also computes the [`payload_hash`].
//!
//! ```
//! use adcp_jws::{issue_for_payload, Amount, Commitment, GovernanceClaims, GovernanceVerifier, Phase,
//!     VerificationRequest};
//! use adcp_sign::{Algorithm, SoftwareSigner};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! let now = 1_785_931_200;
//! // The governance agent signs.
//! let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-2026")?;
//! let payload = json!({"idempotency_key": "k-1", "account": {"account_id": "acc_1"}, "amount": 1});
//! let claims = GovernanceClaims {
//!     iss: "https://gov.example.com/governance".into(),
//!     sub: "gov_action_1".into(),
//!     plan_hash: "opaque".into(),
//!     aud: "https://seller.example.com/sales".into(),
//!     iat: now, nbf: None, exp: now + 900,
//!     jti: "01HWZX-1".into(),
//!     phase: Phase::Intent,
//!     caller: "https://buyer.example.com".into(),
//!     check_id: "chk_1".into(),
//!     authorized_commitment: Some(Commitment { amount: "1".parse()?, currency: "USD".into() }),
//!     authorized_task: None, authorized_payload_hash: None, media_buy_id: None,
//!     extra: vec![("policy_decision_hash".into(), json!("ab12"))],
//! };
//! let token = issue_for_payload(&claims, "create_media_buy", &payload, &signer).await?;
//!
//! // The seller verifies, with the agent's published key.
//! let mut jwk = signer.public_jwk()?.to_json();
//! jwk["adcp_use"] = json!("governance-signing");
//! let verifier = GovernanceVerifier::builder()
//!     .static_jwks(json!({"keys": [jwk]}))
//!     .replay_store(Arc::new(adcp_verify::MemoryReplayStore::webhook()))
//!     .clock(Arc::new(adcp_sigbase::FixedClock(now)))
//!     .build()?;
//! let mut request = VerificationRequest::new(payload, "create_media_buy",
//!     "https://seller.example.com/sales", "https://buyer.example.com", Phase::Intent);
//! request.commitment = Some(Commitment { amount: "0.99".parse::<Amount>()?, currency: "USD".into() });
//! let accepted = verifier.verify(&token, &request).await?;
//! assert_eq!(accepted.sub, "gov_action_1");
//! // The same token again is a replay (step 15).
//! let replay = verifier.verify(&token, &request).await.unwrap_err();
//! assert_eq!((replay.code(), replay.step().number()), ("governance_token_replayed", 15));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod amount;
mod compact;
mod error;
mod hash;
mod issue;
mod keys;
mod revocation;
mod verifier;

pub use amount::{Amount, AmountError, Commitment, Phase};
pub use compact::{parse_compact, JwsAlgorithm, ParsedToken, CRITICAL_CLAIMS, MAX_TOKEN_LEN, TYP};
pub use error::{ErrorCode, GovError, Step};
pub use hash::{parse_payload, payload_hash, EXCLUDED_MEMBERS};
pub use issue::{issue, issue_for_payload, GovernanceClaims, IssueError, MAX_EXECUTION_LIFETIME_SECS};
pub use keys::GOVERNANCE_SIGNING;
pub use revocation::{GovernanceRevocations, REVOCATION_PATH};
pub use verifier::{
    BuildError, GovernanceVerifier, GovernanceVerifierBuilder, VerificationRequest, VerifiedToken, CLOCK_SKEW_SECS,
    REPLAY_SCOPE,
};
