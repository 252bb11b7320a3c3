//! Issuance: governance agents build and sign tokens.

use std::fmt;

use adcp_sigbase::crypto::Algorithm;
use adcp_sign::Signer;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

use crate::amount::{Amount, Commitment, Phase};
use crate::compact::{CRITICAL_CLAIMS, TYP};

/// The claims of a governance token, typed. [`issue`] serializes them in
/// one fixed order — `iss`, `sub`, `plan_hash`, `aud`, `iat`, `nbf`, `exp`,
/// `jti`, `phase`, `caller`, `check_id`, `authorized_commitment`,
/// `authorized_task`, `authorized_payload_hash`, `media_buy_id`, then
/// [`extra`](Self::extra) — the order of the published vectors and of the
/// reference SDKs, so equal claims give byte-identical tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct GovernanceClaims {
    /// `iss`: the governance agent URL (its brand.json `agents[].url`).
    pub iss: String,
    /// `sub`: the opaque binding of the governed action.
    pub sub: String,
    /// `plan_hash`: audit-layer cargo.
    pub plan_hash: String,
    /// `aud`: the seller's exact URL.
    pub aud: String,
    /// `iat`, Unix seconds.
    pub iat: i64,
    /// `nbf`, Unix seconds.
    pub nbf: Option<i64>,
    /// `exp`, Unix seconds.
    pub exp: i64,
    /// `jti`: unique per token (UUID v7 or ULID recommended).
    pub jti: String,
    /// `phase`.
    pub phase: Phase,
    /// `caller`: who requested the governance check.
    pub caller: String,
    /// `check_id`.
    pub check_id: String,
    /// `authorized_commitment` (critical).
    pub authorized_commitment: Option<Commitment>,
    /// `authorized_task` (critical; issued with the payload hash).
    pub authorized_task: Option<String>,
    /// `authorized_payload_hash` (critical); [`issue_for_payload`] computes
    /// it.
    pub authorized_payload_hash: Option<String>,
    /// `media_buy_id` (required on `modification`/`delivery`, absent on
    /// `intent`).
    pub media_buy_id: Option<String>,
    /// Further claims (`policy_decision_hash`, `audit_log_pointer`, …), in
    /// this order after the others. Names of the claims above are refused.
    pub extra: Vec<(String, Value)>,
}

/// Issuance refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueError {
    /// The claims break a rule of the profile (what is said).
    Claims(String),
    /// The signer's algorithm is not `EdDSA`/`ES256`.
    Algorithm(String),
    /// The signer failed.
    Signer(String),
}

impl fmt::Display for IssueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Claims(s) => write!(f, "claims refused: {s}"),
            Self::Algorithm(s) => write!(f, "algorithm refused: {s}"),
            Self::Signer(s) => write!(f, "signer failed: {s}"),
        }
    }
}

impl std::error::Error for IssueError {}

const KNOWN: [&str; 15] = [
    "iss",
    "sub",
    "plan_hash",
    "aud",
    "iat",
    "nbf",
    "exp",
    "jti",
    "phase",
    "caller",
    "check_id",
    "authorized_commitment",
    "authorized_task",
    "authorized_payload_hash",
    "media_buy_id",
];

/// The 30-day cap on execution-phase lifetimes.
pub const MAX_EXECUTION_LIFETIME_SECS: i64 = 30 * 24 * 3600;

impl GovernanceClaims {
    /// Reads claims from a JSON object (a claims file): the known claims
    /// typed, every other member kept in [`extra`](Self::extra) (in the
    /// object's iteration order).
    ///
    /// # Errors
    ///
    /// [`IssueError::Claims`] when a required claim is missing or a claim
    /// has the wrong type.
    pub fn from_json(value: &Value) -> Result<Self, IssueError> {
        let obj = value
            .as_object()
            .ok_or_else(|| IssueError::Claims("claims are not a JSON object".into()))?;
        let text = |name: &str| -> Result<String, IssueError> {
            obj.get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| IssueError::Claims(format!("{name} is missing or not a string")))
        };
        let opt_text = |name: &str| -> Result<Option<String>, IssueError> {
            match obj.get(name) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(IssueError::Claims(format!("{name} is not a string"))),
            }
        };
        let int = |name: &str| -> Result<Option<i64>, IssueError> {
            match obj.get(name) {
                None => Ok(None),
                Some(v) => v
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| IssueError::Claims(format!("{name} is not an integer"))),
            }
        };
        let phase = text("phase")?.parse::<Phase>().map_err(IssueError::Claims)?;
        let authorized_commitment = match obj.get("authorized_commitment") {
            None => None,
            Some(c) => {
                let amount = c
                    .get("amount")
                    .and_then(Value::as_number)
                    .and_then(Amount::from_json)
                    .ok_or_else(|| {
                        IssueError::Claims("authorized_commitment.amount is not a non-negative number".into())
                    })?;
                let currency = c
                    .get("currency")
                    .and_then(Value::as_str)
                    .ok_or_else(|| IssueError::Claims("authorized_commitment.currency is not a string".into()))?
                    .to_owned();
                Some(Commitment { amount, currency })
            }
        };
        Ok(Self {
            iss: text("iss")?,
            sub: text("sub")?,
            plan_hash: text("plan_hash")?,
            aud: text("aud")?,
            iat: int("iat")?.ok_or_else(|| IssueError::Claims("iat is missing".into()))?,
            nbf: int("nbf")?,
            exp: int("exp")?.ok_or_else(|| IssueError::Claims("exp is missing".into()))?,
            jti: text("jti")?,
            phase,
            caller: text("caller")?,
            check_id: text("check_id")?,
            authorized_commitment,
            authorized_task: opt_text("authorized_task")?,
            authorized_payload_hash: opt_text("authorized_payload_hash")?,
            media_buy_id: opt_text("media_buy_id")?,
            extra: obj
                .iter()
                .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    fn check(&self) -> Result<(), IssueError> {
        let bad = |s: &str| Err(IssueError::Claims(s.to_owned()));
        for (name, value) in [
            ("iss", &self.iss),
            ("sub", &self.sub),
            ("plan_hash", &self.plan_hash),
            ("aud", &self.aud),
            ("jti", &self.jti),
            ("caller", &self.caller),
            ("check_id", &self.check_id),
        ] {
            if value.is_empty() {
                return Err(IssueError::Claims(format!("{name} is empty")));
            }
        }
        if !self.iss.starts_with("https://") {
            return bad("iss is not an HTTPS URL");
        }
        if self.exp <= self.iat {
            return bad("exp is not after iat");
        }
        if self.phase.is_execution() && self.exp - self.iat > MAX_EXECUTION_LIFETIME_SECS {
            return bad("execution-phase tokens expire within 30 days");
        }
        match (self.phase, &self.media_buy_id) {
            (Phase::Intent, Some(_)) => return bad("intent tokens carry no media_buy_id"),
            (Phase::Modification | Phase::Delivery, None) => {
                return bad("modification and delivery tokens carry a media_buy_id");
            }
            _ => {}
        }
        if self.authorized_task.is_some() != self.authorized_payload_hash.is_some() {
            return bad("authorized_task and authorized_payload_hash go together");
        }
        if let Some((name, _)) = self.extra.iter().find(|(k, _)| KNOWN.contains(&k.as_str())) {
            return Err(IssueError::Claims(format!("extra claim {name} shadows a typed claim")));
        }
        Ok(())
    }

    /// The claims JSON text, in the fixed order.
    fn to_json_text(&self) -> String {
        fn s(v: &str) -> String {
            Value::String(v.to_owned()).to_string()
        }
        let mut members: Vec<(String, String)> = vec![
            ("iss".into(), s(&self.iss)),
            ("sub".into(), s(&self.sub)),
            ("plan_hash".into(), s(&self.plan_hash)),
            ("aud".into(), s(&self.aud)),
            ("iat".into(), self.iat.to_string()),
        ];
        if let Some(nbf) = self.nbf {
            members.push(("nbf".into(), nbf.to_string()));
        }
        members.extend([
            ("exp".into(), self.exp.to_string()),
            ("jti".into(), s(&self.jti)),
            ("phase".into(), s(self.phase.as_str())),
            ("caller".into(), s(&self.caller)),
            ("check_id".into(), s(&self.check_id)),
        ]);
        if let Some(c) = &self.authorized_commitment {
            // The amount is written in its normal decimal form: exact, and
            // what JSON.stringify writes for it.
            members.push((
                "authorized_commitment".into(),
                format!("{{\"amount\":{},\"currency\":{}}}", c.amount, s(&c.currency)),
            ));
        }
        if let Some(t) = &self.authorized_task {
            members.push(("authorized_task".into(), s(t)));
        }
        if let Some(h) = &self.authorized_payload_hash {
            members.push(("authorized_payload_hash".into(), s(h)));
        }
        if let Some(m) = &self.media_buy_id {
            members.push(("media_buy_id".into(), s(m)));
        }
        for (k, v) in &self.extra {
            members.push((k.clone(), v.to_string()));
        }
        object_text(&members)
    }
}

fn object_text(members: &[(String, String)]) -> String {
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// The protected header for `claims`: `alg`, `kid`, `typ`, then `crit` and
/// a `true` marker for each critical claim present (omitted when none is).
fn header_text(alg: &str, kid: &str, claims: &GovernanceClaims) -> String {
    let present: Vec<&str> = CRITICAL_CLAIMS
        .into_iter()
        .filter(|name| match *name {
            "authorized_commitment" => claims.authorized_commitment.is_some(),
            "authorized_task" => claims.authorized_task.is_some(),
            _ => claims.authorized_payload_hash.is_some(),
        })
        .collect();
    let mut members = vec![
        ("alg".to_owned(), Value::String(alg.to_owned()).to_string()),
        ("kid".to_owned(), Value::String(kid.to_owned()).to_string()),
        ("typ".to_owned(), Value::String(TYP.to_owned()).to_string()),
    ];
    if !present.is_empty() {
        let crit = Value::Array(present.iter().map(|n| Value::String((*n).to_owned())).collect());
        members.push(("crit".to_owned(), crit.to_string()));
        for name in &present {
            members.push(((*name).to_owned(), "true".to_owned()));
        }
    }
    object_text(&members)
}

/// Signs `claims` with `signer` into a compact governance token:
/// `BASE64URL(header) "." BASE64URL(claims) "." BASE64URL(signature)`,
/// the header carrying `alg`/`kid` from the signer, `typ` `adcp-gov+jws`,
/// and the `crit` entries and markers of the critical claims present.
///
/// Any [`adcp_sign::Signer`] works (software or KMS/HSM); publish its key
/// with `"adcp_use": "governance-signing"` and never use it for RFC 9421
/// request or webhook signing.
///
/// # Errors
///
/// [`IssueError::Claims`] when the claims break a profile rule (empty
/// required claims, `iss` not HTTPS, `exp` not after `iat`, an execution
/// token living over 30 days, `media_buy_id` against the phase, task
/// without payload hash); [`IssueError::Algorithm`] for a non
/// Ed25519/P-256 signer; [`IssueError::Signer`].
pub async fn issue<S: Signer + ?Sized>(claims: &GovernanceClaims, signer: &S) -> Result<String, IssueError> {
    claims.check()?;
    let alg = match signer.algorithm() {
        Algorithm::Ed25519 => "EdDSA",
        Algorithm::EcdsaP256Sha256 => "ES256",
        other => return Err(IssueError::Algorithm(format!("{other} is not EdDSA or ES256"))),
    };
    let header = URL_SAFE_NO_PAD.encode(header_text(alg, signer.key_id(), claims));
    let payload = URL_SAFE_NO_PAD.encode(claims.to_json_text());
    let signing_input = format!("{header}.{payload}");
    let signature = signer
        .sign(signing_input.as_bytes())
        .await
        .map_err(|e| IssueError::Signer(e.to_string()))?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// [`issue`] after setting `authorized_task` to `task` and
/// `authorized_payload_hash` to the [`payload_hash`](crate::payload_hash)
/// of the downstream request `payload`.
///
/// # Errors
///
/// As [`issue`].
pub async fn issue_for_payload<S: Signer + ?Sized>(
    claims: &GovernanceClaims,
    task: &str,
    payload: &Value,
    signer: &S,
) -> Result<String, IssueError> {
    let mut claims = claims.clone();
    claims.authorized_task = Some(task.to_owned());
    claims.authorized_payload_hash = Some(crate::payload_hash(payload));
    issue(&claims, signer).await
}
