//! Strict models of the documents key discovery reads: brand.json, JWKS
//! bodies and revocation lists.
//!
//! Every parser takes raw bytes, enforces its size cap before anything
//! else, rejects duplicate member names (`adcp_strict_json::check`) and
//! wrong member types, and never panics.

use adcp_sigbase::jwk::{Jwk, Jwks};
use adcp_strict_json::Limits;
use base64::Engine as _;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;
use url::Url;

/// brand.json body cap (spec: 256 KiB).
pub const MAX_BRAND_JSON_BYTES: usize = 256 * 1024;
/// JWKS body cap (spec `MAX_JWKS_BYTES`: 64 KiB).
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
/// Revocation-list body cap (the spec names none; 256 KiB like brand.json).
pub const MAX_REVOCATION_LIST_BYTES: usize = 256 * 1024;
/// At most this many `agents[]` / `authorized_operators[]` / `revoked_kids`
/// entries are accepted (bounded memory on hostile input).
pub(crate) const MAX_ENTRIES: usize = 4096;

/// A document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// Larger than its cap.
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// Not strict JSON, or a member name repeats in one object.
    StrictJson(String),
    /// Well-formed JSON that does not have the document's shape.
    Shape(&'static str),
    /// The JWKS is structurally invalid (duplicate `kid`, too many keys, ...).
    Jwks(String),
    /// The revocation list's JWS signature does not verify.
    Signature(&'static str),
    /// Two JWKS entries share a `kid` (the spec: "distinct within the JWKS").
    DuplicateKid {
        /// The repeated `kid`.
        kid: String,
    },
    /// A revocation list's `issuer` is absent, not an origin, or not the
    /// origin the list governs.
    Issuer(&'static str),
    /// Two JWKS entries share a `kid` under different `adcp_use` purposes
    /// ("MUST NOT collide with any other entry's `kid` regardless of
    /// `adcp_use`").
    KidReusedAcrossPurposes {
        /// The repeated `kid`.
        kid: String,
    },
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentError::TooLarge { limit } => write!(f, "document exceeds {limit} bytes"),
            DocumentError::StrictJson(e) => write!(f, "not strict JSON: {e}"),
            DocumentError::Shape(what) => write!(f, "unexpected document shape: {what}"),
            DocumentError::Jwks(e) => write!(f, "invalid JWKS: {e}"),
            DocumentError::Signature(what) => write!(f, "revocation list signature: {what}"),
            DocumentError::Issuer(what) => write!(f, "revocation list issuer: {what}"),
            DocumentError::DuplicateKid { kid } => write!(f, "JWKS repeats kid {kid:?}"),
            DocumentError::KidReusedAcrossPurposes { kid } => {
                write!(f, "JWKS reuses kid {kid:?} across adcp_use purposes")
            }
        }
    }
}

impl std::error::Error for DocumentError {}

fn strict_parse(bytes: &[u8], cap: usize) -> Result<Value, DocumentError> {
    if bytes.len() > cap {
        return Err(DocumentError::TooLarge { limit: cap });
    }
    let limits = Limits::default().with_max_len(cap);
    adcp_strict_json::parse_value(bytes, &limits).map_err(|e| DocumentError::StrictJson(e.to_string()))
}

fn opt_str<'a>(obj: &'a Map<String, Value>, name: &str, what: &'static str) -> Result<Option<&'a str>, DocumentError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(DocumentError::Shape(what)),
    }
}

fn opt_array<'a>(obj: &'a Map<String, Value>, name: &str, what: &'static str) -> Result<&'a [Value], DocumentError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) if a.len() <= MAX_ENTRIES => Ok(a),
        Some(_) => Err(DocumentError::Shape(what)),
    }
}

/// One `agents[]` entry of a brand.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrandAgent {
    /// `url`, exactly as published (matched byte-for-byte).
    pub url: String,
    /// `jwks_uri`, when declared.
    pub jwks_uri: Option<String>,
    /// `type` (`sales`, `buying`, `governance`, ...), when declared.
    pub agent_type: Option<String>,
}

impl BrandAgent {
    /// The JWKS location: `jwks_uri` if declared, else
    /// `/.well-known/jwks.json` at the origin of `url`.
    ///
    /// # Errors
    ///
    /// [`DocumentError::Shape`] when the URL does not parse.
    pub fn jwks_url(&self) -> Result<Url, DocumentError> {
        match &self.jwks_uri {
            Some(uri) => Url::parse(uri).map_err(|_| DocumentError::Shape("agents[].jwks_uri is not a URL")),
            None => {
                let agent = Url::parse(&self.url).map_err(|_| DocumentError::Shape("agents[].url is not a URL"))?;
                agent
                    .join("/.well-known/jwks.json")
                    .map_err(|_| DocumentError::Shape("agents[].url has no origin"))
            }
        }
    }
}

/// A parsed brand.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrandJson {
    /// The authoritative-location redirect variant: the real document is
    /// at this URL (followed once, never chained).
    AuthoritativeLocation(String),
    /// The house redirect variant (`"house": "<domain>"`): the real
    /// document is the house domain's `/.well-known/brand.json`.
    HouseRedirect(String),
    /// A document carrying agents (single brand, or house portfolio with an
    /// object-valued `house` and `brands[]`).
    Document(BrandDocument),
}

/// The members of a brand.json that key discovery uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrandDocument {
    /// `agents[]`.
    pub agents: Vec<BrandAgent>,
    /// `authorized_operators[].domain`.
    pub authorized_operators: Vec<String>,
}

impl BrandDocument {
    /// The single `agents[]` entry whose `url` byte-equals `agent_url`.
    ///
    /// # Errors
    ///
    /// [`AgentLookupError::NotFound`] (no canonicalization: a trailing slash
    /// or a scheme difference is a miss) or [`AgentLookupError::Ambiguous`].
    pub fn agent(&self, agent_url: &str) -> Result<&BrandAgent, AgentLookupError> {
        let mut matches = self.agents.iter().filter(|a| a.url.as_bytes() == agent_url.as_bytes());
        let first = matches.next().ok_or(AgentLookupError::NotFound)?;
        if matches.next().is_some() {
            return Err(AgentLookupError::Ambiguous);
        }
        Ok(first)
    }
}

/// [`BrandDocument::agent`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentLookupError {
    /// No entry byte-equals the agent URL (`*_agent_not_in_brand_json`).
    NotFound,
    /// More than one does (`*_brand_json_ambiguous`).
    Ambiguous,
}

impl BrandJson {
    /// Parses a brand.json body strictly (cap [`MAX_BRAND_JSON_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`DocumentError`]: too large, duplicate keys, not an object, or a
    /// member of the wrong type.
    pub fn parse(bytes: &[u8]) -> Result<Self, DocumentError> {
        let value = strict_parse(bytes, MAX_BRAND_JSON_BYTES)?;
        let obj = value
            .as_object()
            .ok_or(DocumentError::Shape("brand.json is not an object"))?;
        if let Some(location) = opt_str(obj, "authoritative_location", "authoritative_location is not a string")? {
            return Ok(BrandJson::AuthoritativeLocation(location.to_owned()));
        }
        if let Some(Value::String(house)) = obj.get("house") {
            if !obj.contains_key("agents") {
                return Ok(BrandJson::HouseRedirect(house.clone()));
            }
        }
        let mut agents = Vec::new();
        // A house portfolio may publish the operator's agents under
        // `house.agents[]` (the spec's "House Portfolio ... use
        // `house.agents[]`"); they are read with the top-level `agents[]`.
        // Sibling brands' `brands[].agents[]` are never aggregated.
        let house_agents = match obj.get("house") {
            Some(Value::Object(house)) => opt_array(house, "agents", "house.agents is not an array")?,
            _ => &[],
        };
        let top_agents = opt_array(obj, "agents", "agents is not an array")?;
        if top_agents.len() + house_agents.len() > MAX_ENTRIES {
            return Err(DocumentError::Shape("too many agents"));
        }
        for entry in top_agents.iter().chain(house_agents) {
            let entry = entry
                .as_object()
                .ok_or(DocumentError::Shape("agents[] entry is not an object"))?;
            let url = opt_str(entry, "url", "agents[].url is not a string")?
                .ok_or(DocumentError::Shape("agents[] entry without url"))?;
            agents.push(BrandAgent {
                url: url.to_owned(),
                jwks_uri: opt_str(entry, "jwks_uri", "agents[].jwks_uri is not a string")?.map(str::to_owned),
                agent_type: opt_str(entry, "type", "agents[].type is not a string")?.map(str::to_owned),
            });
        }
        let mut authorized_operators = Vec::new();
        for entry in opt_array(obj, "authorized_operators", "authorized_operators is not an array")? {
            let domain = match entry {
                Value::Object(o) => opt_str(o, "domain", "authorized_operators[].domain is not a string")?
                    .ok_or(DocumentError::Shape("authorized_operators[] entry without domain"))?,
                _ => return Err(DocumentError::Shape("authorized_operators[] entry is not an object")),
            };
            authorized_operators.push(domain.to_owned());
        }
        Ok(BrandJson::Document(BrandDocument {
            agents,
            authorized_operators,
        }))
    }
}

/// Parses a JWKS body strictly: cap [`MAX_JWKS_BYTES`], duplicate member
/// names rejected, `keys` an array of objects whose `kid`s are strings,
/// then the `adcp_sigbase` JWK Set rules (key validation).
///
/// A `kid` shared by several entries does **not** refuse the set: the
/// spec forbids the collision ("MUST NOT collide with any other entry's
/// `kid` regardless of `adcp_use`"), so every entry with that `kid` is
/// unusable ([`JwkError::KidCollision`](adcp_sigbase::jwk::JwkError::KidCollision);
/// the verifier answers `*_key_purpose_invalid` for it) while the set's
/// other kids keep working. Refusing the whole document instead would make
/// every key of the seller "unavailable", retryably, although nothing
/// would change on retry. [`check_kids`] names the collision for
/// diagnostics.
///
/// # Errors
///
/// [`DocumentError::TooLarge`], [`DocumentError::StrictJson`],
/// [`DocumentError::Shape`], [`DocumentError::Jwks`].
pub fn parse_jwks(bytes: &[u8]) -> Result<(Value, Jwks), DocumentError> {
    let value = strict_parse(bytes, MAX_JWKS_BYTES)?;
    keys_with_kids(&value)?;
    let jwks = Jwks::from_json_value(&value).map_err(|e| DocumentError::Jwks(e.to_string()))?;
    Ok((value, jwks))
}

/// A JWKS entry with its string `kid`, if it has one.
type KeyedEntry<'a> = (Option<&'a str>, &'a Map<String, Value>);

/// The `keys` array and each entry's string `kid` (if any).
///
/// # Errors
///
/// [`DocumentError::Shape`] when `keys` is absent, not an array, too long,
/// or has an entry that is not an object or whose `kid` is not a string.
fn keys_with_kids(jwks: &Value) -> Result<Vec<KeyedEntry<'_>>, DocumentError> {
    let keys = jwks
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(DocumentError::Shape("JWKS without a keys array"))?;
    if keys.len() > MAX_ENTRIES {
        return Err(DocumentError::Shape("JWKS has too many keys"));
    }
    keys.iter()
        .map(|key| {
            let key = key
                .as_object()
                .ok_or(DocumentError::Shape("JWKS entry is not an object"))?;
            match key.get("kid") {
                None => Ok((None, key)),
                Some(Value::String(k)) => Ok((Some(k.as_str()), key)),
                Some(_) => Err(DocumentError::Shape("JWKS entry kid is not a string")),
            }
        })
        .collect()
}

/// The JWKS-level `kid` rule as a diagnostic (a publisher lint; discovery
/// does not refuse the set for it, see [`parse_jwks`]): every `kid` is
/// unique within the set whatever its `adcp_use`
/// ([`DocumentError::KidReusedAcrossPurposes`] when the two entries declare
/// different purposes, [`DocumentError::DuplicateKid`] otherwise). Unknown
/// members (`adcp_use`, ...) are left untouched.
///
/// # Errors
///
/// The first collision; [`DocumentError::Shape`] when `keys` is not an
/// array of objects with string `kid`s.
pub fn check_kids(jwks: &Value) -> Result<(), DocumentError> {
    let mut seen: std::collections::HashMap<&str, Option<&Value>> = std::collections::HashMap::new();
    for (kid, key) in keys_with_kids(jwks)? {
        let Some(kid) = kid else { continue };
        let purpose = key.get("adcp_use");
        if let Some(previous) = seen.insert(kid, purpose) {
            if previous != purpose {
                return Err(DocumentError::KidReusedAcrossPurposes { kid: kid.to_owned() });
            }
            return Err(DocumentError::DuplicateKid { kid: kid.to_owned() });
        }
    }
    Ok(())
}

/// The JWS `typ` of a signed revocation list. The transport revocation
/// list's "format and signing semantics match the governance revocation
/// list", whose protected header carries `typ=adcp-gov-revocation+jws`.
pub const REVOCATION_LIST_TYP: &str = "adcp-gov-revocation+jws";

/// Whether a JWS `typ` names [`REVOCATION_LIST_TYP`]. `typ` is a media
/// type (RFC 7515 §4.1.9): compared ASCII case-insensitively, and
/// `application/adcp-gov-revocation+jws` is the same type.
pub(crate) fn is_revocation_list_typ(typ: &str) -> bool {
    const APPLICATION: &str = "application/";
    let bare = match typ.get(..APPLICATION.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(APPLICATION) => &typ[APPLICATION.len()..],
        _ => typ,
    };
    bare.eq_ignore_ascii_case(REVOCATION_LIST_TYP)
}

/// The canonical origin (`scheme://host[:port]`) of a URL, as
/// `adcp_canon` computes it for identity comparisons.
///
/// # Errors
///
/// [`DocumentError::Shape`] when the URL does not canonicalize.
pub(crate) fn canonical_origin(url: &str) -> Result<String, DocumentError> {
    adcp_canon::canonicalize(url)
        .map(|u| u.origin().to_owned())
        .map_err(|_| DocumentError::Shape("not a URL with an origin"))
}

/// A revocation list (`revoked_kids`, `next_update`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationList {
    /// `issuer`, when present (a list is only used once
    /// [`check_issuer`](Self::check_issuer) accepted it).
    pub issuer: Option<String>,
    /// `updated`, Unix seconds, when present.
    pub updated: Option<i64>,
    /// `next_update`, Unix seconds.
    pub next_update: i64,
    /// `revoked_kids`.
    pub revoked_kids: HashSet<String>,
    /// `revoked_jtis` (governance lists: individual decisions rescinded,
    /// whatever key signed them); empty when the list has none.
    pub revoked_jtis: HashSet<String>,
    /// Whether the list arrived as a JWS whose signature was verified.
    pub signed: bool,
}

impl RevocationList {
    /// Parses an unsigned list (the JWS payload form) strictly.
    ///
    /// # Errors
    ///
    /// [`DocumentError`].
    pub fn parse(bytes: &[u8]) -> Result<Self, DocumentError> {
        let value = strict_parse(bytes, MAX_REVOCATION_LIST_BYTES)?;
        Self::from_value(&value, false)
    }

    /// Parses a list that may be signed: a flattened or general JWS JSON
    /// serialization (`payload` + `protected`/`signature` or
    /// `signatures[]`) is verified with the key `key_for(kid)` returns
    /// (one from the same JWKS), and counts only if its protected header
    /// names the revocation-list type (`is_revocation_list_typ`); an
    /// object with `revoked_kids` is taken as an unsigned list only if
    /// `allow_unsigned`. The `issuer` is checked by the caller, who knows
    /// the origin the list governs ([`check_issuer`](Self::check_issuer)).
    ///
    /// # Errors
    ///
    /// [`DocumentError::Signature`] when no signature of the right `typ`
    /// verifies or the list is unsigned and `allow_unsigned` is off;
    /// otherwise as [`parse`](Self::parse).
    pub fn parse_signed<'k>(
        bytes: &[u8],
        key_for: impl Fn(&str) -> Option<&'k Jwk>,
        allow_unsigned: bool,
    ) -> Result<Self, DocumentError> {
        let value = strict_parse(bytes, MAX_REVOCATION_LIST_BYTES)?;
        let obj = value
            .as_object()
            .ok_or(DocumentError::Shape("revocation list is not an object"))?;
        let Some(payload_b64) = opt_str(obj, "payload", "payload is not a string")? else {
            if allow_unsigned {
                return Self::from_value(&value, false);
            }
            return Err(DocumentError::Signature("list is not signed"));
        };
        let mut candidates: Vec<(&str, &str)> = Vec::new();
        if let (Some(p), Some(s)) = (
            opt_str(obj, "protected", "protected is not a string")?,
            opt_str(obj, "signature", "signature is not a string")?,
        ) {
            candidates.push((p, s));
        }
        for sig in opt_array(obj, "signatures", "signatures is not an array")?
            .iter()
            .take(8)
        {
            let sig = sig
                .as_object()
                .ok_or(DocumentError::Shape("signatures[] entry is not an object"))?;
            if let (Some(p), Some(s)) = (
                opt_str(sig, "protected", "protected is not a string")?,
                opt_str(sig, "signature", "signature is not a string")?,
            ) {
                candidates.push((p, s));
            }
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut wrong_typ = false;
        for (protected_b64, sig_b64) in candidates {
            let Ok(header) = b64.decode(protected_b64) else {
                continue;
            };
            let Ok(header) = adcp_strict_json::parse_value(&header, &Limits::default()) else {
                continue;
            };
            let (Some(kid), Some(alg)) = (
                header.get("kid").and_then(Value::as_str),
                header.get("alg").and_then(Value::as_str),
            ) else {
                continue;
            };
            // A JWS of another type (a governance token, a response
            // envelope) signed by the same key is not a revocation list.
            if !header
                .get("typ")
                .and_then(Value::as_str)
                .is_some_and(is_revocation_list_typ)
            {
                wrong_typ = true;
                continue;
            }
            let Some(jwk) = key_for(kid) else { continue };
            let alg_ok = matches!(
                (alg, jwk.algorithm()),
                ("EdDSA" | "Ed25519", adcp_sigbase::crypto::Algorithm::Ed25519)
                    | ("ES256", adcp_sigbase::crypto::Algorithm::EcdsaP256Sha256)
            );
            let Ok(signature) = b64.decode(sig_b64) else { continue };
            let input = format!("{protected_b64}.{payload_b64}");
            if alg_ok
                && jwk
                    .verifying_key()
                    .verify(jwk.algorithm(), input.as_bytes(), &signature)
                    .is_ok()
            {
                let payload = b64
                    .decode(payload_b64)
                    .map_err(|_| DocumentError::Shape("payload is not base64url"))?;
                let value = strict_parse(&payload, MAX_REVOCATION_LIST_BYTES)?;
                return Self::from_value(&value, true);
            }
        }
        if wrong_typ {
            return Err(DocumentError::Signature(
                "protected header typ is not adcp-gov-revocation+jws",
            ));
        }
        Err(DocumentError::Signature("no signature verifies"))
    }

    /// Checks that `issuer` is the origin the list governs (`expected`,
    /// the origin of its `adcp_canon::canonicalize` form): the governance list
    /// rule "`issuer` MUST match the `iss` origin of tokens this list
    /// governs. Prevents cache substitution across issuers by a shared
    /// CDN", applied to transport lists. `issuer` must be present and be
    /// an origin (no path other than `/`, no query); it is compared in
    /// canonical form, so `HTTPS://Seller.Example:443` matches
    /// `https://seller.example`.
    ///
    /// # Errors
    ///
    /// [`DocumentError::Issuer`].
    pub fn check_issuer(&self, expected: &str) -> Result<(), DocumentError> {
        let issuer = self
            .issuer
            .as_deref()
            .ok_or(DocumentError::Issuer("issuer is absent"))?;
        let canonical =
            adcp_canon::canonicalize(issuer).map_err(|_| DocumentError::Issuer("issuer is not an origin"))?;
        if canonical.path() != "/" || canonical.query().is_some() {
            return Err(DocumentError::Issuer("issuer is not an origin"));
        }
        if canonical.origin() != expected {
            return Err(DocumentError::Issuer("issuer is not the origin this list governs"));
        }
        Ok(())
    }

    fn from_value(value: &Value, signed: bool) -> Result<Self, DocumentError> {
        let obj = value
            .as_object()
            .ok_or(DocumentError::Shape("revocation list is not an object"))?;
        let next_update = opt_str(obj, "next_update", "next_update is not a string")?
            .ok_or(DocumentError::Shape("revocation list without next_update"))?;
        let next_update = parse_rfc3339(next_update).ok_or(DocumentError::Shape("next_update is not RFC 3339"))?;
        let updated = match opt_str(obj, "updated", "updated is not a string")? {
            None => None,
            Some(t) => Some(parse_rfc3339(t).ok_or(DocumentError::Shape("updated is not RFC 3339"))?),
        };
        let mut revoked_kids = HashSet::new();
        for kid in opt_array(obj, "revoked_kids", "revoked_kids is not an array")? {
            let kid = kid
                .as_str()
                .ok_or(DocumentError::Shape("revoked_kids[] entry is not a string"))?;
            revoked_kids.insert(kid.to_owned());
        }
        let mut revoked_jtis = HashSet::new();
        for jti in opt_array(obj, "revoked_jtis", "revoked_jtis is not an array")? {
            let jti = jti
                .as_str()
                .ok_or(DocumentError::Shape("revoked_jtis[] entry is not a string"))?;
            revoked_jtis.insert(jti.to_owned());
        }
        Ok(Self {
            issuer: opt_str(obj, "issuer", "issuer is not a string")?.map(str::to_owned),
            updated,
            next_update,
            revoked_kids,
            revoked_jtis,
            signed,
        })
    }
}

/// Parses an RFC 3339 `date-time` (`2026-04-18T14:15:00Z`, optional
/// fraction, `Z` or `±hh:mm`) to Unix seconds.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b.len() > 40 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    if sep(i, b".") {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        b'+' | b'-' if i + 6 == b.len() && sep(i + 3, b":") => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if b[i] == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn brand_json_variants() {
        let doc =
            br#"{"agents":[{"url":"https://s.example/mcp","jwks_uri":"https://k.example/jwks.json","type":"sales"}],
            "authorized_operators":[{"domain":"ops.example"}]}"#;
        let BrandJson::Document(d) = BrandJson::parse(doc).unwrap() else {
            panic!()
        };
        assert_eq!(d.agents.len(), 1);
        assert_eq!(d.authorized_operators, ["ops.example"]);
        assert_eq!(
            d.agent("https://s.example/mcp").unwrap().agent_type.as_deref(),
            Some("sales")
        );
        assert_eq!(d.agent("https://s.example/mcp/"), Err(AgentLookupError::NotFound));
        assert_eq!(d.agent("http://s.example/mcp"), Err(AgentLookupError::NotFound));
        assert_eq!(d.agent("https://S.example/mcp"), Err(AgentLookupError::NotFound));

        assert_eq!(
            BrandJson::parse(br#"{"authoritative_location":"https://cdn.example/brand.json"}"#).unwrap(),
            BrandJson::AuthoritativeLocation("https://cdn.example/brand.json".into())
        );
        assert_eq!(
            BrandJson::parse(br#"{"house":"house.example"}"#).unwrap(),
            BrandJson::HouseRedirect("house.example".into())
        );
        let portfolio = br#"{"house":{"domain":"house.example","name":"H"},"brands":[],"agents":[]}"#;
        assert!(matches!(BrandJson::parse(portfolio).unwrap(), BrandJson::Document(_)));
        // House portfolio: house.agents[] count; brands[].agents[] do not.
        let portfolio = br#"{"house":{"domain":"h.example","agents":[{"url":"https://h.example/mcp"}]},
            "brands":[{"id":"b","agents":[{"url":"https://b.example/mcp"}]}]}"#;
        let BrandJson::Document(d) = BrandJson::parse(portfolio).unwrap() else {
            panic!()
        };
        assert!(d.agent("https://h.example/mcp").is_ok());
        assert_eq!(d.agent("https://b.example/mcp"), Err(AgentLookupError::NotFound));
        assert!(BrandJson::parse(br#"{"house":{"agents":{}}}"#).is_err());
    }

    #[test]
    fn brand_json_strictness() {
        let dup = br#"{"agents":[{"url":"https://a.example/","url":"https://evil.example/"}]}"#;
        assert!(matches!(BrandJson::parse(dup), Err(DocumentError::StrictJson(_))));
        assert!(matches!(BrandJson::parse(b"[]"), Err(DocumentError::Shape(_))));
        assert!(matches!(
            BrandJson::parse(br#"{"agents":{}}"#),
            Err(DocumentError::Shape(_))
        ));
        assert!(matches!(
            BrandJson::parse(br#"{"agents":[{"jwks_uri":"x"}]}"#),
            Err(DocumentError::Shape(_))
        ));
        assert!(matches!(
            BrandJson::parse(br#"{"agents":[{"url":1}]}"#),
            Err(DocumentError::Shape(_))
        ));
        let big = vec![b' '; MAX_BRAND_JSON_BYTES + 1];
        assert_eq!(
            BrandJson::parse(&big),
            Err(DocumentError::TooLarge {
                limit: MAX_BRAND_JSON_BYTES
            })
        );
        let two = br#"{"agents":[{"url":"https://a.example/"},{"url":"https://a.example/"}]}"#;
        let BrandJson::Document(d) = BrandJson::parse(two).unwrap() else {
            panic!()
        };
        assert_eq!(d.agent("https://a.example/"), Err(AgentLookupError::Ambiguous));
    }

    #[test]
    fn default_jwks_url_is_at_agent_origin() {
        let a = BrandAgent {
            url: "https://s.example:8443/a/mcp".into(),
            jwks_uri: None,
            agent_type: None,
        };
        assert_eq!(
            a.jwks_url().unwrap().as_str(),
            "https://s.example:8443/.well-known/jwks.json"
        );
    }

    #[test]
    fn jwks_duplicate_member_names_rejected() {
        let dup = br#"{"keys":[],"keys":[]}"#;
        assert!(matches!(parse_jwks(dup), Err(DocumentError::StrictJson(_))));
        let big = vec![b' '; MAX_JWKS_BYTES + 1];
        assert!(matches!(parse_jwks(&big), Err(DocumentError::TooLarge { .. })));
        assert!(parse_jwks(br#"{"keys":[]}"#).is_ok());
    }

    #[test]
    fn jwks_kid_rules_and_unknown_members() {
        let k = |kid: &str, adcp_use: &str| {
            format!(
                r#"{{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"{kid}","alg":"EdDSA","use":"sig","key_ops":["verify"],"adcp_use":"{adcp_use}","x_vendor":{{"n":1}}}}"#
            )
        };
        let one = format!(r#"{{"keys":[{}]}}"#, k("a", "request-signing"));
        let (value, jwks) = parse_jwks(one.as_bytes()).unwrap();
        // Unknown members survive parsing, in the raw value and the model.
        assert_eq!(value["keys"][0]["adcp_use"], "request-signing");
        let jwk = jwks.key("a").unwrap();
        assert_eq!(jwk.member("adcp_use").and_then(Value::as_str), Some("request-signing"));
        assert_eq!(jwk.member("x_vendor"), Some(&serde_json::json!({"n": 1})));

        // A collision is named by check_kids; parse_jwks keeps the set,
        // with the colliding kid unusable and the others usable.
        let dup = format!(
            r#"{{"keys":[{},{},{}]}}"#,
            k("a", "request-signing"),
            k("b", "request-signing"),
            k("a", "request-signing")
        );
        let cross = format!(
            r#"{{"keys":[{},{},{}]}}"#,
            k("a", "governance-signing"),
            k("b", "request-signing"),
            k("a", "request-signing")
        );
        for (doc, want) in [
            (&dup, DocumentError::DuplicateKid { kid: "a".into() }),
            (&cross, DocumentError::KidReusedAcrossPurposes { kid: "a".into() }),
        ] {
            let (value, jwks) = parse_jwks(doc.as_bytes()).unwrap();
            assert_eq!(check_kids(&value).unwrap_err(), want);
            assert_eq!(
                jwks.get("a").and_then(|e| e.error()),
                Some(adcp_sigbase::jwk::JwkError::KidCollision)
            );
            assert!(jwks.key("b").is_some());
        }
        let two = format!(
            r#"{{"keys":[{},{}]}}"#,
            k("a", "request-signing"),
            k("b", "governance-signing")
        );
        assert_eq!(parse_jwks(two.as_bytes()).unwrap().1.len(), 2);
        assert!(parse_jwks(br#"{"keys":[{"kid":1}]}"#).is_err());
        assert!(parse_jwks(br#"{"keys":{}}"#).is_err());
    }

    #[test]
    fn revocation_list_parses() {
        let l = RevocationList::parse(
            br#"{"version":1,"issuer":"https://s.example","updated":"2026-04-18T14:00:00Z",
                "next_update":"2026-04-18T14:15:00Z","revoked_kids":["k-old"],"revoked_jtis":[]}"#,
        )
        .unwrap();
        assert_eq!(l.next_update, 1_776_521_700);
        assert_eq!(l.updated, Some(1_776_520_800));
        assert!(l.revoked_kids.contains("k-old"));
        assert!(RevocationList::parse(br#"{"revoked_kids":[]}"#).is_err());
        assert!(RevocationList::parse(br#"{"next_update":"2026-04-18T14:15:00Z","revoked_kids":[1]}"#).is_err());
        assert!(RevocationList::parse(
            br#"{"next_update":"2026-04-18T14:15:00Z","revoked_kids":[],"revoked_kids":["x"]}"#
        )
        .is_err());
    }

    #[test]
    fn revocation_list_typ_and_issuer() {
        for typ in [
            "adcp-gov-revocation+jws",
            "ADCP-Gov-Revocation+JWS",
            "application/adcp-gov-revocation+jws",
            "Application/adcp-gov-revocation+jws",
        ] {
            assert!(is_revocation_list_typ(typ), "{typ}");
        }
        for typ in [
            "",
            "JWT",
            "adcp-gov+jws",
            "adcp-gov-revocation",
            "text/adcp-gov-revocation+jws",
            "applicatioé",
        ] {
            assert!(!is_revocation_list_typ(typ), "{typ}");
        }
        let list = |issuer: Option<&str>| RevocationList {
            issuer: issuer.map(str::to_owned),
            updated: None,
            next_update: 0,
            revoked_kids: HashSet::new(),
            revoked_jtis: HashSet::new(),
            signed: true,
        };
        let expected = canonical_origin("https://seller.example:8443/mcp").unwrap();
        assert_eq!(expected, "https://seller.example:8443");
        for ok in ["https://seller.example:8443", "HTTPS://Seller.Example:8443/"] {
            assert_eq!(list(Some(ok)).check_issuer(&expected), Ok(()), "{ok}");
        }
        for bad in [
            None,
            Some("https://seller.example"),
            Some("https://seller.example:8443/mcp"),
            Some("https://seller.example:8443/?a=1"),
            Some("seller.example:8443"),
            Some(""),
        ] {
            assert!(
                matches!(list(bad).check_issuer(&expected), Err(DocumentError::Issuer(_))),
                "{bad:?}"
            );
        }
        // The default port is not part of the canonical origin.
        let default_port = canonical_origin("https://seller.example/mcp").unwrap();
        assert_eq!(
            list(Some("https://seller.example:443")).check_issuer(&default_port),
            Ok(())
        );
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-04-18T14:00:00.123Z"), Some(1_776_520_800));
        assert_eq!(parse_rfc3339("2026-04-18T16:00:00+02:00"), Some(1_776_520_800));
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Some(1_709_164_800));
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-04-18 14:00:00Z",
            "2026-04-18T14:00:00",
            "2026-13-01T00:00:00Z",
            "2026-04-18T24:00:00Z",
            "2026-04-18T14:00:00.Z",
            "+026-04-18T14:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = BrandJson::parse(&bytes);
            let _ = parse_jwks(&bytes);
            let _ = RevocationList::parse(&bytes);
            let _ = RevocationList::parse_signed(&bytes, |_| None, true);
        }

        #[test]
        fn jwks_kid_usable_iff_unique(
            entries in proptest::collection::vec(("[a-c]", prop_oneof![Just("request-signing"), Just("governance-signing")]), 0..6)
        ) {
            let keys: Vec<Value> = entries
                .iter()
                .map(|(kid, purpose)| serde_json::json!({
                    "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                    "kid": kid, "alg": "EdDSA", "use": "sig", "key_ops": ["verify"], "adcp_use": purpose,
                }))
                .collect();
            let bytes = serde_json::to_vec(&serde_json::json!({ "keys": keys })).unwrap();
            // The first repeated kid decides the expected error.
            let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
            let mut expected = None;
            for (kid, purpose) in &entries {
                if let Some(previous) = seen.insert(kid.as_str(), purpose) {
                    expected = Some(if previous == *purpose {
                        DocumentError::DuplicateKid { kid: kid.clone() }
                    } else {
                        DocumentError::KidReusedAcrossPurposes { kid: kid.clone() }
                    });
                    break;
                }
            }
            // The set always parses; a kid is usable iff no other entry has it.
            let (value, jwks) = parse_jwks(&bytes).unwrap();
            prop_assert_eq!(check_kids(&value).err(), expected);
            prop_assert_eq!(jwks.len(), entries.len());
            for (i, (kid, purpose)) in entries.iter().enumerate() {
                prop_assert_eq!(value["keys"][i]["adcp_use"].as_str(), Some(*purpose));
                let shared = entries.iter().filter(|(k, _)| k == kid).count() > 1;
                if shared {
                    prop_assert!(jwks.key(kid).is_none());
                } else {
                    let member = jwks.key(kid).and_then(|k| k.member("adcp_use").cloned());
                    prop_assert_eq!(member, Some(Value::from(*purpose)));
                }
            }
        }

        #[test]
        fn brand_json_round_trips_and_duplicates_are_refused(
            agents in proptest::collection::vec(
                ("https://[a-z]{1,8}\\.example/[a-z/]{0,8}", proptest::option::of("https://[a-z]{1,8}\\.example/jwks"), proptest::option::of("sales|buying")),
                0..5,
            ),
            operators in proptest::collection::vec("[a-z]{1,8}\\.example", 0..3),
        ) {
            let doc = serde_json::json!({
                "agents": agents.iter().map(|(url, jwks_uri, kind)| {
                    let mut a = serde_json::json!({"url": url});
                    if let Some(j) = jwks_uri { a["jwks_uri"] = j.clone().into(); }
                    if let Some(k) = kind { a["type"] = k.clone().into(); }
                    a
                }).collect::<Vec<_>>(),
                "authorized_operators": operators.iter().map(|d| serde_json::json!({"domain": d})).collect::<Vec<_>>(),
            });
            let bytes = serde_json::to_vec(&doc).unwrap();
            let BrandJson::Document(parsed) = BrandJson::parse(&bytes).unwrap() else {
                return Err(TestCaseError::fail("not a document"));
            };
            prop_assert_eq!(parsed.agents.len(), agents.len());
            for (got, (url, jwks_uri, kind)) in parsed.agents.iter().zip(&agents) {
                prop_assert_eq!(&got.url, url);
                prop_assert_eq!(&got.jwks_uri, jwks_uri);
                prop_assert_eq!(&got.agent_type, kind);
            }
            prop_assert_eq!(&parsed.authorized_operators, &operators);
            // The same document with one member name repeated is refused.
            if let Some((url, _, _)) = agents.first() {
                let text = String::from_utf8(bytes).unwrap();
                let needle = format!("\"url\":{}", serde_json::to_string(url).unwrap());
                let dup = text.replacen(&needle, &format!("{needle},\"url\":\"https://evil.example/\""), 1);
                prop_assert!(matches!(BrandJson::parse(dup.as_bytes()), Err(DocumentError::StrictJson(_))));
            }
        }

        #[test]
        fn revocation_list_round_trips(
            revoked in proptest::collection::hash_set("[a-z0-9-]{1,12}", 0..8),
            secs in 0i64..4_102_444_800,
        ) {
            let stamp = adcp_test_support::rfc3339;
            let doc = serde_json::json!({"next_update": stamp(secs), "revoked_kids": revoked.iter().collect::<Vec<_>>()});
            let list = RevocationList::parse(&serde_json::to_vec(&doc).unwrap()).unwrap();
            prop_assert_eq!(list.next_update, secs);
            prop_assert_eq!(&list.revoked_kids, &revoked);
            prop_assert!(!list.signed);
        }

        #[test]
        fn revocation_typ_and_issuer_checks_never_panic(text in "\\PC{0,40}") {
            let _ = is_revocation_list_typ(&text);
            let list = RevocationList {
                issuer: Some(text.clone()),
                updated: None,
                next_update: 0,
                revoked_kids: HashSet::new(),
                revoked_jtis: HashSet::new(),
                signed: true,
            };
            if list.check_issuer("https://seller.example").is_ok() {
                prop_assert_eq!(canonical_origin(&text).unwrap(), "https://seller.example");
            }
        }

        #[test]
        fn rfc3339_never_panics(s in "[0-9T:Z+.-]{0,40}") {
            let _ = parse_rfc3339(&s);
        }

        #[test]
        fn rfc3339_roundtrip(secs in 0i64..4_102_444_800) {
            let days = secs.div_euclid(86_400);
            let rem = secs.rem_euclid(86_400);
            // civil_from_days
            let z = days + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z - era * 146_097;
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let d = doy - (153 * mp + 2) / 5 + 1;
            let m = if mp < 10 { mp + 3 } else { mp - 9 };
            let y = yoe + era * 400 + i64::from(m <= 2);
            let s = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60);
            prop_assert_eq!(parse_rfc3339(&s), Some(secs));
        }
    }
}
