//! The 15-step seller verification checklist.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use adcp_jwks::{FetchConfig, Fetcher};
use adcp_sigbase::Clock;
use adcp_verify::{InsertOutcome, ReplayKey, ReplayStore};
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use url::Url;

use crate::amount::{Amount, Commitment, Phase};
use crate::compact::{parse_compact, JwsAlgorithm, ParsedToken};
use crate::error::{ErrorCode, GovError};
use crate::issue::MAX_EXECUTION_LIFETIME_SECS;
use crate::keys::{check_purpose, Discovery, KeySource};
use crate::revocation::{GovernanceRevocations, RevocationSource};

/// The clock skew tolerated on `exp`, `iat` and `nbf` (±60 s).
pub const CLOCK_SKEW_SECS: i64 = 60;

/// The replay-store scope of governance `jti`s: the entries of this
/// profile never collide with RFC 9421 nonces sharing the store.
pub const REPLAY_SCOPE: &str = "adcp-gov+jws";

/// What the service is about to do, against which a token is checked.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationRequest {
    /// The received task request (the payload hash is recomputed over it
    /// minus top-level `governance_context` and `context`).
    pub payload: Value,
    /// The invoked AdCP task (`create_media_buy`, …).
    pub task: String,
    /// This seller's exact URL (compared byte for byte with `aud`).
    pub audience: String,
    /// The transport-authenticated caller (compared byte for byte with
    /// `caller`).
    pub caller: String,
    /// The authorization gate: `intent` for a buyer-supplied token, the
    /// execution phase for the token of the service's own pre-commit check.
    pub phase: Phase,
    /// The commitment the service computed, for a monetary action.
    pub commitment: Option<Commitment>,
    /// The media buy the operation is about (required for `modification`
    /// and `delivery`).
    pub media_buy_id: Option<String>,
    /// The `sub` retained from the prior accepted token of this action, on
    /// a continuation.
    pub prior_sub: Option<String>,
    /// The governance agent the seller expects (compared byte for byte
    /// with `iss` at step 13 in static-JWKS mode, where no brand.json is
    /// consulted).
    pub expected_issuer: Option<String>,
}

impl VerificationRequest {
    /// A request for `task` on `payload`, for `audience` called by
    /// `caller` at the `phase` gate; no commitment, media buy, prior `sub`
    /// or expected issuer.
    #[must_use]
    pub fn new(
        payload: Value,
        task: impl Into<String>,
        audience: impl Into<String>,
        caller: impl Into<String>,
        phase: Phase,
    ) -> Self {
        Self {
            payload,
            task: task.into(),
            audience: audience.into(),
            caller: caller.into(),
            phase,
            commitment: None,
            media_buy_id: None,
            prior_sub: None,
            expected_issuer: None,
        }
    }
}

/// An accepted token.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedToken {
    /// `iss`.
    pub iss: String,
    /// `sub` (retain it for continuations).
    pub sub: String,
    /// `jti`.
    pub jti: String,
    /// The header `kid`.
    pub kid: String,
    /// `exp`.
    pub exp: i64,
    /// `check_id`.
    pub check_id: String,
    /// Whether step 13 (the brand.json cross-check) ran: `false` in
    /// static-JWKS mode.
    pub brand_json_checked: bool,
    /// Every claim, as signed.
    pub claims: Map<String, Value>,
}

/// Builds a [`GovernanceVerifier`].
pub struct GovernanceVerifierBuilder {
    keys: Option<KeyConfig>,
    replay: Option<Arc<dyn ReplayStore>>,
    clock: Arc<dyn Clock>,
    revocation: RevocationSource,
    fetch: Option<FetchConfig>,
    revocation_url: Option<Option<Url>>,
}

impl std::fmt::Debug for GovernanceVerifierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GovernanceVerifierBuilder")
            .field("keys", &self.keys)
            .field("revocation", &self.revocation)
            .finish_non_exhaustive()
    }
}

/// The builder could not produce a verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

impl GovernanceVerifierBuilder {
    /// Static-JWKS mode: keys from a JWKS document (`{"keys": [...]}`).
    /// Step 13 is not performed (reported through
    /// [`VerifiedToken::brand_json_checked`]); set
    /// [`VerificationRequest::expected_issuer`] to pin `iss`.
    #[must_use]
    pub fn static_jwks(mut self, jwks: Value) -> Self {
        self.keys = Some(KeyConfig::Static(jwks));
        self
    }

    /// Discovery mode: the authenticated buyer's brand.json at `url` →
    /// its `agents[]` entry whose `url` byte-equals `iss` (which must be of
    /// `type` `governance`) → its `jwks_uri` (default: the origin's
    /// `/.well-known/jwks.json`), fetched through `adcp-jwks`'s
    /// SSRF-pinned fetcher, cached for 5 minutes and refetched once on an
    /// unknown `kid` (30 s cooldown); a failed discovery is remembered for
    /// 60 s. An `iss` without an entry fails discovery, before the
    /// signature: it is reported as the check it fails, step 13
    /// (`governance_issuer_not_authorized`).
    #[must_use]
    pub fn buyer_brand_json(mut self, url: Url) -> Self {
        self.keys = Some(KeyConfig::BrandJson(url));
        self
    }

    /// The fetch settings (SSRF policy, DNS, roots, timeouts) of discovery
    /// and revocation fetches (default: [`FetchConfig::default`]).
    #[must_use]
    pub fn fetch_config(mut self, config: FetchConfig) -> Self {
        self.fetch = Some(config);
        self
    }

    /// The replay store (`jti` per `(iss, aud)`), required. Any
    /// [`adcp_verify::ReplayStore`] works (SQLite, Redis, PostgreSQL,
    /// memory); entries are scoped [`REPLAY_SCOPE`] + `aud`.
    #[must_use]
    pub fn replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.replay = Some(store);
        self
    }

    /// The clock (default: the system clock).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// A fixed revocation list (for example a file an operator syncs).
    #[must_use]
    pub fn revocation_list(mut self, list: GovernanceRevocations) -> Self {
        self.revocation = RevocationSource::Static(list);
        self.revocation_url = None;
        self
    }

    /// Fetch signed revocation lists: from `url`, or with `None` from each
    /// issuer's origin at `/.well-known/governance-revocations.json`;
    /// polled on `next_update`.
    #[must_use]
    pub fn fetch_revocation_list(mut self, url: Option<Url>) -> Self {
        self.revocation_url = Some(url);
        self
    }

    /// The verifier.
    ///
    /// # Errors
    ///
    /// [`BuildError`] without a key source or replay store, or when the
    /// fetcher cannot be built.
    pub fn build(self) -> Result<GovernanceVerifier, BuildError> {
        let config = self.fetch.unwrap_or_default();
        let make_fetcher = |c: FetchConfig| Fetcher::new(c).map_err(|e| BuildError(format!("fetcher: {e}")));
        let keys = match self.keys {
            None => return Err(BuildError("no key source (static_jwks or buyer_brand_json)".into())),
            Some(KeyConfig::BrandJson(url)) => KeySource::BrandJson(Box::new(Discovery {
                url,
                fetcher: make_fetcher(config.clone())?,
                cache: Mutex::new(HashMap::new()),
                failures: Mutex::new(HashMap::new()),
            })),
            Some(KeyConfig::Static(jwks)) => KeySource::Static(Arc::new(jwks)),
        };
        let revocation = match self.revocation_url {
            Some(url) => RevocationSource::Fetched {
                url,
                fetcher: make_fetcher(config)?,
                state: Mutex::new(HashMap::new()),
            },
            None => self.revocation,
        };
        Ok(GovernanceVerifier {
            keys,
            replay: self.replay.ok_or_else(|| BuildError("no replay store".into()))?,
            clock: self.clock,
            revocation,
        })
    }
}

#[derive(Debug)]
enum KeyConfig {
    Static(Value),
    BrandJson(Url),
}

/// Verifies governance tokens (`typ` `adcp-gov+jws`) through the spec's
/// 15-step seller checklist, in order, short-circuiting on the first
/// failure; each failure is a [`GovError`] with the spec code and step.
pub struct GovernanceVerifier {
    keys: KeySource,
    replay: Arc<dyn ReplayStore>,
    clock: Arc<dyn Clock>,
    revocation: RevocationSource,
}

impl std::fmt::Debug for GovernanceVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GovernanceVerifier")
            .field("keys", &self.keys)
            .field("revocation", &self.revocation)
            .finish_non_exhaustive()
    }
}

fn invalid(step: u8, detail: impl Into<String>) -> GovError {
    GovError::new(ErrorCode::TokenInvalid, step, detail)
}

fn not_applicable(step: u8, detail: impl Into<String>) -> GovError {
    GovError::new(ErrorCode::TokenNotApplicable, step, detail)
}

fn required_str<'a>(claims: &'a Map<String, Value>, name: &str, step: u8) -> Result<&'a str, GovError> {
    match claims.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(invalid(step, format!("{name} is absent, empty or not a string"))),
    }
}

fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, GovError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                return Ok(Some(i));
            }
            match n.as_f64() {
                #[allow(clippy::cast_possible_truncation)]
                Some(f) if f.is_finite() && f.abs() < 1e15 => Ok(Some(f.floor() as i64)),
                _ => Err(invalid(9, format!("{name} is not a NumericDate"))),
            }
        }
        Some(_) => Err(invalid(9, format!("{name} is not a NumericDate"))),
    }
}

/// Verifies the signature with jsonwebtoken: its JWK → `DecodingKey`
/// conversion and its aws-lc-rs verification.
fn verify_signature(token: &ParsedToken, jwk: &Value) -> Result<(), GovError> {
    static PROVIDER: OnceLock<()> = OnceLock::new();
    PROVIDER.get_or_init(|| {
        // Explicit, so a second backend enabled elsewhere in a build
        // cannot leave jsonwebtoken without a default.
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER);
    });
    let bad = |detail: String| invalid(7, detail);
    // The key type must be the header alg's family (the header was
    // allowlisted at step 2; the key must not widen it).
    let (kty, crv) = (
        jwk.get("kty").and_then(Value::as_str),
        jwk.get("crv").and_then(Value::as_str),
    );
    let alg = match (token.alg, kty, crv) {
        (JwsAlgorithm::EdDsa, Some("OKP"), Some("Ed25519")) => jsonwebtoken::Algorithm::EdDSA,
        (JwsAlgorithm::Es256, Some("EC"), Some("P-256")) => jsonwebtoken::Algorithm::ES256,
        _ => {
            return Err(GovError::new(
                ErrorCode::KeyUnknown,
                6,
                format!("JWK {kty:?}/{crv:?} cannot verify {}", token.alg.as_str()),
            ))
        }
    };
    let parsed: jsonwebtoken::jwk::Jwk =
        serde_json::from_value(jwk.clone()).map_err(|e| bad(format!("JWK not usable: {e}")))?;
    let key = jsonwebtoken::DecodingKey::from_jwk(&parsed).map_err(|e| bad(format!("JWK not usable: {e}")))?;
    match jsonwebtoken::crypto::verify(&token.signature_b64, token.signing_input.as_bytes(), &key, alg) {
        Ok(true) => Ok(()),
        Ok(false) => Err(bad("signature does not verify".into())),
        Err(e) => Err(bad(format!("signature does not verify: {e}"))),
    }
}

fn commitment_claim(claims: &Map<String, Value>) -> Result<Option<Commitment>, GovError> {
    let Some(c) = claims.get("authorized_commitment") else {
        return Ok(None);
    };
    let c = c
        .as_object()
        .ok_or_else(|| invalid(12, "authorized_commitment is not an object"))?;
    let amount = c
        .get("amount")
        .and_then(Value::as_number)
        .and_then(Amount::from_json)
        .ok_or_else(|| {
            invalid(
                12,
                "authorized_commitment.amount is absent or not a non-negative number",
            )
        })?;
    let currency = match c.get("currency") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(invalid(12, "authorized_commitment.currency is absent or not a string")),
    };
    Ok(Some(Commitment { amount, currency }))
}

impl GovernanceVerifier {
    /// Starts a builder (system clock, no revocation list).
    #[must_use]
    pub fn builder() -> GovernanceVerifierBuilder {
        GovernanceVerifierBuilder {
            keys: None,
            replay: None,
            clock: Arc::new(adcp_sigbase::SystemClock),
            revocation: RevocationSource::None,
            fetch: None,
            revocation_url: None,
        }
    }

    /// Runs the checklist on `token` for `request`. On success the `jti`
    /// is consumed: verifying the same token again is a replay.
    ///
    /// # Errors
    ///
    /// The first failing step's [`GovError`].
    pub async fn verify(&self, token: &str, request: &VerificationRequest) -> Result<VerifiedToken, GovError> {
        let now = self.clock.now();
        // Steps 1-4.
        let parsed = parse_compact(token)?;
        let claims = &parsed.claims;
        // Step 5.
        let iss = required_str(claims, "iss", 5)?;
        let found = self.keys.find(iss, &parsed.kid, now).await?;
        // Step 6.
        check_purpose(&found.jwk, parsed.alg.as_str())?;
        // Step 7.
        verify_signature(&parsed, &found.jwk)?;
        // Step 8: audience, and the authenticated caller (the taxonomy
        // groups its mismatch with aud's).
        let aud = required_str(claims, "aud", 8)?;
        if aud.as_bytes() != request.audience.as_bytes() {
            return Err(not_applicable(8, "aud is not this seller's URL"));
        }
        let caller = required_str(claims, "caller", 8)?;
        if caller.as_bytes() != request.caller.as_bytes() {
            return Err(not_applicable(8, "caller is not the authenticated caller"));
        }
        // Step 9.
        let exp = numeric_date(claims, "exp")?.ok_or_else(|| invalid(9, "exp is absent"))?;
        let iat = numeric_date(claims, "iat")?.ok_or_else(|| invalid(9, "iat is absent"))?;
        let nbf = numeric_date(claims, "nbf")?;
        if exp < now.saturating_sub(CLOCK_SKEW_SECS) {
            return Err(GovError::new(ErrorCode::TokenExpired, 9, "exp is in the past"));
        }
        if iat > now.saturating_add(CLOCK_SKEW_SECS) {
            return Err(GovError::new(ErrorCode::TokenNotYetValid, 9, "iat is in the future"));
        }
        if nbf.is_some_and(|nbf| now < nbf.saturating_sub(CLOCK_SKEW_SECS)) {
            return Err(GovError::new(ErrorCode::TokenNotYetValid, 9, "nbf is in the future"));
        }
        if exp <= iat {
            return Err(invalid(9, "exp is not after iat"));
        }
        if request.phase.is_execution()
            && (exp.saturating_sub(iat) > MAX_EXECUTION_LIFETIME_SECS
                || exp > now.saturating_add(MAX_EXECUTION_LIFETIME_SECS + CLOCK_SKEW_SECS))
        {
            return Err(invalid(9, "execution-phase token expires more than 30 days out"));
        }
        // Step 10.
        let sub = required_str(claims, "sub", 10)?;
        let check_id = required_str(claims, "check_id", 10)?;
        required_str(claims, "plan_hash", 10)?;
        if request
            .prior_sub
            .as_deref()
            .is_some_and(|p| p.as_bytes() != sub.as_bytes())
        {
            return Err(not_applicable(10, "sub differs from the prior accepted token's"));
        }
        // Step 11.
        let phase: Phase = required_str(claims, "phase", 11)?
            .parse()
            .map_err(|e: String| invalid(11, e))?;
        if phase != request.phase {
            return Err(not_applicable(
                11,
                format!("phase {phase} is not the {} gate", request.phase),
            ));
        }
        // Step 12: shapes first (malformed is invalid), then bindings.
        let task = match claims.get("authorized_task") {
            None => None,
            Some(Value::String(t)) if !t.is_empty() => Some(t.as_str()),
            Some(_) => return Err(invalid(12, "authorized_task is not a string")),
        };
        let hash = match claims.get("authorized_payload_hash") {
            None => None,
            Some(Value::String(h)) if !h.is_empty() => Some(h.as_str()),
            Some(_) => return Err(invalid(12, "authorized_payload_hash is not a string")),
        };
        let media_buy_id = match claims.get("media_buy_id") {
            None => None,
            Some(Value::String(m)) => Some(m.as_str()),
            Some(_) => return Err(invalid(12, "media_buy_id is not a string")),
        };
        let commitment = commitment_claim(claims)?;
        if phase == Phase::Intent && (task.is_none() || hash.is_none()) {
            return Err(not_applicable(12, "intent token binds no task and payload"));
        }
        if task.is_some_and(|t| t.as_bytes() != request.task.as_bytes()) {
            return Err(not_applicable(12, "authorized_task is not the invoked task"));
        }
        if hash.is_some_and(|h| h != crate::payload_hash(&request.payload)) {
            return Err(not_applicable(12, "authorized_payload_hash does not match the request"));
        }
        match (phase, media_buy_id, request.media_buy_id.as_deref()) {
            (Phase::Intent, Some(_), _) => return Err(not_applicable(12, "intent token carries a media_buy_id")),
            (Phase::Modification | Phase::Delivery, None, _) => {
                return Err(not_applicable(12, "media_buy_id is absent"));
            }
            (_, Some(m), expected) if Some(m) != expected => {
                return Err(not_applicable(12, "media_buy_id is not the request's"));
            }
            _ => {}
        }
        if let Some(actual) = &request.commitment {
            let ceiling = commitment.ok_or_else(|| not_applicable(12, "no authorized_commitment"))?;
            if ceiling.currency.as_bytes() != actual.currency.as_bytes() {
                return Err(not_applicable(12, "commitment currency differs"));
            }
            if actual.amount > ceiling.amount {
                return Err(not_applicable(12, "commitment exceeds the authorized ceiling"));
            }
        }
        // Step 13.
        match &found.agent_type {
            Some(t) if t.as_deref() != Some("governance") => {
                return Err(GovError::new(
                    ErrorCode::IssuerNotAuthorized,
                    13,
                    format!("iss's brand.json entry is of type {t:?}, not governance"),
                ));
            }
            Some(_) => {}
            None => {
                if request
                    .expected_issuer
                    .as_deref()
                    .is_some_and(|e| e.as_bytes() != iss.as_bytes())
                {
                    return Err(GovError::new(
                        ErrorCode::IssuerNotAuthorized,
                        13,
                        "iss is not the expected governance agent",
                    ));
                }
            }
        }
        // Step 14.
        let jti = required_str(claims, "jti", 14)?;
        match self.revocation.current(iss, &found.jwks, now).await {
            Some(list) => {
                list.check(jti, &parsed.kid)?;
                if phase.is_execution() && list.is_stale(now) {
                    return Err(GovError::new(
                        ErrorCode::RevocationStale,
                        14,
                        "revocation list not refreshed within grace",
                    ));
                }
            }
            None if phase.is_execution() => {
                return Err(GovError::new(
                    ErrorCode::RevocationStale,
                    14,
                    "no revocation list: execution-phase tokens need a fresh one",
                ));
            }
            None => {}
        }
        // Step 15.
        self.consume(iss, aud, jti, exp).await?;
        Ok(VerifiedToken {
            iss: iss.to_owned(),
            sub: sub.to_owned(),
            jti: jti.to_owned(),
            kid: parsed.kid.clone(),
            exp,
            check_id: check_id.to_owned(),
            brand_json_checked: self.keys.cross_checks(),
            claims: claims.clone(),
        })
    }

    /// Step 15: records `jti` for `(iss, aud)` until `exp` + skew.
    async fn consume(&self, iss: &str, aud: &str, jti: &str, exp: i64) -> Result<(), GovError> {
        let scope = format!("{REPLAY_SCOPE} {aud}");
        let key = ReplayKey {
            agent: Some(iss),
            keyid: iss,
            nonce: jti.as_bytes(),
            scope: Some(&scope),
        };
        let now = self.clock.now();
        let expires_at = exp.saturating_add(CLOCK_SKEW_SECS);
        let outcome = match self.replay.insert_now(key, expires_at, now) {
            Some(r) => r,
            None => self.replay.insert(key, expires_at, now).await,
        };
        match outcome {
            Ok(InsertOutcome::Inserted) => Ok(()),
            Ok(InsertOutcome::Replayed) => Err(GovError::new(
                ErrorCode::TokenReplayed,
                15,
                "jti already seen for this (iss, aud)",
            )),
            Ok(other) => Err(GovError::new(
                ErrorCode::VerifierUnavailable,
                15,
                format!("replay store refused the insert: {other:?}"),
            )),
            Err(e) => Err(GovError::new(ErrorCode::VerifierUnavailable, 15, e.to_string())),
        }
    }

    /// Marks `(iss, aud, jti)` consumed (as if a token had been accepted),
    /// until `expires_at`. For tests and for importing replay state.
    ///
    /// # Errors
    ///
    /// `governance_verifier_unavailable` when the store cannot answer.
    pub async fn preconsume(&self, iss: &str, aud: &str, jti: &str, expires_at: i64) -> Result<(), GovError> {
        self.consume(iss, aud, jti, expires_at.saturating_sub(CLOCK_SKEW_SECS))
            .await
            .or_else(|e| {
                if e.error_code() == ErrorCode::TokenReplayed {
                    Ok(())
                } else {
                    Err(e)
                }
            })
    }
}
