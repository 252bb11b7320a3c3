//! Key resolution (checklist step 7) and the key facts steps 8–10 need.

use crate::error::{CodePrefix, ErrorCode};
use adcp_sigbase::crypto::{Algorithm, VerifyingKey};
use adcp_sigbase::jwk::Jwk;
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// A key the resolver found for a `keyid`, with the identity it belongs to.
///
/// Built once per key (not per request): the JWK's purpose members are
/// extracted and its key material validated up front. A JWK whose material
/// or `alg`/`crv` is inconsistent, or that declares no `alg`, still
/// resolves (the `keyid` is known) but fails the purpose check at step 8.
///
/// A `kid` that several entries of the key set share resolves to a
/// [`ResolvedKey::colliding`] marker rather than to one of them (which one
/// would depend on the order of the published array): it is known, and
/// step 8 refuses it.
#[derive(Debug, Clone)]
pub struct ResolvedKey {
    kid: String,
    agent_url: String,
    use_: Option<String>,
    key_ops: Option<Vec<String>>,
    adcp_use: Option<String>,
    alg: Option<String>,
    kid_collides: bool,
    key: Result<(VerifyingKey, Algorithm), String>,
}

impl ResolvedKey {
    /// From a JWK as published (a JSON object) and the agent URL of the
    /// `agents[]` entry whose `jwks_uri` served it.
    pub fn from_jwk_json(jwk: &serde_json::Value, agent_url: impl Into<String>) -> Option<Self> {
        let kid = jwk.get("kid")?.as_str()?.to_owned();
        let text = |name: &str| jwk.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let key_ops = jwk.get("key_ops").and_then(|v| v.as_array()).map(|ops| {
            ops.iter()
                .map(|op| op.as_str().unwrap_or("\u{fffd}").to_owned())
                .collect()
        });
        let key = Jwk::from_json_value(jwk)
            .map(|j| (j.verifying_key().clone(), j.algorithm()))
            .map_err(|e| e.to_string());
        Some(Self {
            kid,
            agent_url: agent_url.into(),
            use_: text("use"),
            key_ops,
            adcp_use: text("adcp_use"),
            alg: text("alg"),
            kid_collides: false,
            key,
        })
    }

    /// The marker for a `kid` that several entries of one key set carry
    /// (spec: a signing JWK's `kid` "MUST NOT collide with any other
    /// entry's `kid` regardless of `adcp_use`"). It has no purpose members
    /// and no key; [`kid_collides`](Self::kid_collides) is `true`.
    pub fn colliding(kid: impl Into<String>, agent_url: impl Into<String>) -> Self {
        Self {
            kid: kid.into(),
            agent_url: agent_url.into(),
            use_: None,
            key_ops: None,
            adcp_use: None,
            alg: None,
            kid_collides: true,
            key: Err("kid is shared by several JWKS entries".to_owned()),
        }
    }

    /// One key per distinct string `kid` of a JWKS document
    /// (`{"keys": [...]}`), in order of first appearance: a `kid` carried
    /// by one entry gives [`from_jwk_json`](Self::from_jwk_json) of it, a
    /// `kid` carried by several gives [`colliding`](Self::colliding),
    /// whatever the entries' order or purposes. Entries without a string
    /// `kid` are skipped; a document without a `keys` array gives nothing.
    pub fn from_jwks_json(jwks: &serde_json::Value, agent_url: &str) -> Vec<Self> {
        fn kid_of(jwk: &serde_json::Value) -> Option<&str> {
            jwk.get("kid").and_then(serde_json::Value::as_str)
        }
        let Some(entries) = jwks.get("keys").and_then(|k| k.as_array()) else {
            return Vec::new();
        };
        // Entries per kid; bounded by the document the caller already holds.
        let mut counts: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
        for kid in entries.iter().filter_map(kid_of) {
            *counts.entry(kid).or_default() += 1;
        }
        let mut keys = Vec::with_capacity(counts.len());
        for jwk in entries {
            let Some(kid) = kid_of(jwk) else { continue };
            match counts.get_mut(kid) {
                Some(1) => keys.extend(Self::from_jwk_json(jwk, agent_url)),
                // First entry of a shared kid: one marker; later ones: none.
                Some(n) if *n > 1 => {
                    *n = 0;
                    keys.push(Self::colliding(kid, agent_url));
                }
                _ => {}
            }
        }
        keys
    }

    /// The key's `kid`.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The signer identity: the `agents[]` entry URL the key resolved to.
    pub fn agent_url(&self) -> &str {
        &self.agent_url
    }

    /// JWK `use`.
    pub fn use_(&self) -> Option<&str> {
        self.use_.as_deref()
    }

    /// JWK `key_ops`.
    pub fn key_ops(&self) -> Option<&[String]> {
        self.key_ops.as_deref()
    }

    /// JWK `adcp_use`.
    pub fn adcp_use(&self) -> Option<&str> {
        self.adcp_use.as_deref()
    }

    /// JWK `alg`, as declared (`None` when absent: the spec requires it).
    pub fn alg(&self) -> Option<&str> {
        self.alg.as_deref()
    }

    /// Whether the `kid` is shared by several entries of the key set, so
    /// that no key can be chosen for it ([`ResolvedKey::colliding`]).
    pub fn kid_collides(&self) -> bool {
        self.kid_collides
    }

    /// The verification key and the algorithm its JWK implies, or why the
    /// JWK is unusable.
    pub fn key(&self) -> Result<(&VerifyingKey, Algorithm), &str> {
        match &self.key {
            Ok((k, a)) => Ok((k, *a)),
            Err(e) => Err(e),
        }
    }
}

/// Whether a key's revocation status is known and current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RevocationStatus {
    /// Not revoked, list fresh.
    Current,
    /// `kid` is in `revoked_kids`.
    Revoked,
    /// The list has not been refreshed within `next_update` + grace.
    Stale,
}

/// Key resolution failed: the key source could not be reached, was
/// refused, or a step of the discovery chain rejected the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// Transient fetch failure (retryable): `*_jwks_unavailable`.
    Unavailable(String),
    /// The JWKS location failed SSRF validation: `*_jwks_untrusted`.
    Untrusted(String),
    /// A key-discovery failure with its precise spec code, e.g. a step of
    /// the `brand_json_url` chain (`request_signature_brand_origin_mismatch`).
    /// `code` should satisfy [`ErrorCode::is_key_discovery`]; the verifier
    /// answers any other code as `*_jwks_unavailable` when it is retryable
    /// and `*_jwks_untrusted` otherwise, so a resolver cannot make the
    /// verifier report a non-discovery failure (a forged
    /// `*_signature_invalid`, say).
    Discovery {
        /// The discovery code.
        code: ErrorCode,
        /// Server-side detail (do not echo to the peer).
        detail: String,
    },
}

impl ResolveError {
    /// A [`Discovery`](Self::Discovery) error.
    pub fn discovery(code: ErrorCode, detail: impl Into<String>) -> Self {
        ResolveError::Discovery {
            code,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Unavailable(d) => write!(f, "key source unavailable: {d}"),
            ResolveError::Untrusted(d) => write!(f, "key source untrusted: {d}"),
            ResolveError::Discovery { code, detail } => {
                write!(
                    f,
                    "key discovery failed ({}): {detail}",
                    code.as_str(CodePrefix::Request)
                )
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves `keyid`s to keys and reports revocation status.
///
/// Contract: on a `kid` miss, an implementation backed by a remote JWKS
/// refetches once (at most once per 30 seconds per source) before
/// answering `Ok(None)`, so mid-task key rotation does not reject
/// legitimate deliveries.
#[async_trait]
pub trait KeyResolver: Send + Sync {
    /// The key for `keyid`, `Ok(None)` when unknown after the refetch.
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError>;

    /// Revocation status of `key` at `now`.
    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError>;

    /// The answer [`Self::resolve`] would give, when it is at hand without
    /// I/O (a cached or static key); `None` sends the caller to `resolve`.
    /// The verifier tries this first, so a hit costs no boxed future.
    /// Implementations must never answer here what `resolve` would not.
    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        let _ = keyid;
        None
    }

    /// The answer [`Self::revocation_status`] would give, when it is at
    /// hand without I/O; `None` sends the caller to `revocation_status`.
    fn revocation_status_cached(&self, key: &ResolvedKey, now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        let _ = (key, now);
        None
    }

    /// Every key published under `keyid` by the sources this resolver
    /// spans — for a verifier serving several sellers, which may publish
    /// the same `kid` (a `kid` is unique within one JWKS, not across
    /// sellers). The verifier tries each and attributes the request to the
    /// one seller whose key verifies. At most [`MAX_KEY_CANDIDATES`].
    /// The default is [`Self::resolve`]'s answer: one source, one key.
    async fn resolve_candidates(&self, keyid: &str) -> Result<KeyCandidates, ResolveError> {
        Ok(self.resolve(keyid).await?.into_iter().collect())
    }

    /// The answer [`Self::resolve_candidates`] would give, when it is at
    /// hand without I/O. The default is [`Self::resolve_cached`]'s.
    fn resolve_candidates_cached(&self, keyid: &str) -> Option<Result<KeyCandidates, ResolveError>> {
        self.resolve_cached(keyid)
            .map(|answer| answer.map(|key| key.into_iter().collect()))
    }
}

/// The keys a `keyid` may denote across sellers; one, inline, in the
/// common case.
pub type KeyCandidates = smallvec::SmallVec<[Arc<ResolvedKey>; 1]>;

/// Most keys one `keyid` is tried against (sellers sharing a `kid`): a
/// bound on the signature checks one request can cost.
pub const MAX_KEY_CANDIDATES: usize = 4;

/// A fixed set of keys (a static JWKS, configuration, tests), with optional
/// revoked kids and a stale-list flag.
///
/// The resolver holds **one** key set: a `kid` added more than once, in
/// one JWKS document or across [`with_jwks`](Self::with_jwks) /
/// [`with_key`](Self::with_key) calls, resolves to a
/// [`ResolvedKey::colliding`] marker (refused at step 8), whatever the
/// order of the additions; the other kids are unaffected.
#[derive(Debug, Clone, Default)]
pub struct StaticKeyResolver {
    keys: HashMap<String, Arc<ResolvedKey>, foldhash::quality::RandomState>,
    revoked: HashSet<String>,
    stale: bool,
}

impl StaticKeyResolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every key of a JWKS document (`{"keys": [...]}`) for `agent_url`,
    /// as [`ResolvedKey::from_jwks_json`]. Entries without a string `kid`
    /// are skipped.
    pub fn with_jwks(mut self, jwks: &serde_json::Value, agent_url: &str) -> Self {
        for key in ResolvedKey::from_jwks_json(jwks, agent_url) {
            self.insert(key);
        }
        self
    }

    /// Adds one resolved key (a `kid` already present becomes a collision).
    pub fn with_key(mut self, key: ResolvedKey) -> Self {
        self.insert(key);
        self
    }

    fn insert(&mut self, key: ResolvedKey) {
        match self.keys.entry(key.kid.clone()) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Arc::new(key));
            }
            std::collections::hash_map::Entry::Occupied(mut slot) => {
                slot.insert(Arc::new(ResolvedKey::colliding(key.kid, key.agent_url)));
            }
        }
    }

    /// Marks `kid` revoked.
    pub fn revoke(mut self, kid: &str) -> Self {
        self.revoked.insert(kid.to_owned());
        self
    }

    /// Marks the revocation list stale (not refreshed within grace).
    pub fn with_stale_revocation_list(mut self, stale: bool) -> Self {
        self.stale = stale;
        self
    }
}

#[async_trait]
impl KeyResolver for StaticKeyResolver {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        Ok(self.keys.get(keyid).cloned())
    }

    async fn revocation_status(&self, key: &ResolvedKey, _now: i64) -> Result<RevocationStatus, ResolveError> {
        Ok(self.status(key))
    }

    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        Some(Ok(self.keys.get(keyid).cloned()))
    }

    fn revocation_status_cached(&self, key: &ResolvedKey, _now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        Some(Ok(self.status(key)))
    }
}

impl StaticKeyResolver {
    fn status(&self, key: &ResolvedKey) -> RevocationStatus {
        if self.revoked.contains(key.kid()) {
            RevocationStatus::Revoked
        } else if self.stale {
            RevocationStatus::Stale
        } else {
            RevocationStatus::Current
        }
    }
}

#[async_trait]
impl<R: KeyResolver + ?Sized> KeyResolver for Arc<R> {
    async fn resolve(&self, keyid: &str) -> Result<Option<Arc<ResolvedKey>>, ResolveError> {
        (**self).resolve(keyid).await
    }

    async fn revocation_status(&self, key: &ResolvedKey, now: i64) -> Result<RevocationStatus, ResolveError> {
        (**self).revocation_status(key, now).await
    }

    fn resolve_cached(&self, keyid: &str) -> Option<Result<Option<Arc<ResolvedKey>>, ResolveError>> {
        (**self).resolve_cached(keyid)
    }

    fn revocation_status_cached(&self, key: &ResolvedKey, now: i64) -> Option<Result<RevocationStatus, ResolveError>> {
        (**self).revocation_status_cached(key, now)
    }

    async fn resolve_candidates(&self, keyid: &str) -> Result<KeyCandidates, ResolveError> {
        (**self).resolve_candidates(keyid).await
    }

    fn resolve_candidates_cached(&self, keyid: &str) -> Option<Result<KeyCandidates, ResolveError>> {
        (**self).resolve_candidates_cached(keyid)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::clock::FixedClock;
    use crate::profile::Profile;
    use crate::replay::MemoryReplayStore;
    use crate::verifier::Verifier;
    use adcp_sigbase::crypto::SigningKey;
    use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
    use adcp_sigbase::encoding::BinaryEncoding;
    use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
    use serde_json::{json, Value};

    const NOW: i64 = 1_790_000_000;
    const URL: &str = "https://buyer.example.com/adcp/webhook/op_1";
    const AGENT: &str = "https://seller.example/mcp";
    const BODY: &[u8] = br#"{"task_id":"t1","status":"completed"}"#;

    /// A published request-signing JWK of `key` under `kid`.
    fn jwk(key: &SigningKey, kid: &str, adcp_use: &str) -> Value {
        let mut v = Jwk::from_signing_key(key, kid).unwrap().to_public_json();
        v["adcp_use"] = adcp_use.into();
        v
    }

    /// Signs a webhook with `key` under `kid`; verifies it against `keys`:
    /// `Ok(())` or `(code, step, detail)`.
    async fn deliver(key: &SigningKey, kid: &str, keys: StaticKeyResolver) -> Result<(), (String, String, String)> {
        let digest = ContentDigest::compute(BODY, &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
        let input = format!(
            "sig1=(\"@method\" \"@target-uri\" \"@authority\" \"content-type\" \"content-digest\");created={NOW};expires={};nonce=\"{}\";keyid=\"{kid}\";alg=\"ed25519\";tag=\"adcp/webhook-signing/v1\"",
            NOW + 300,
            BinaryEncoding::Base64UrlUnpadded.encode(kid.as_bytes().repeat(16).get(..16).unwrap())
        );
        let mut msg = Message::request("POST", URL)
            .with_header("Content-Type", "application/json")
            .with_header("Content-Digest", digest.as_str())
            .with_header("Signature-Input", input.as_str());
        let params = SignatureInput::from_message(&msg).unwrap().unwrap();
        let canonical = adcp_canon::canonicalize(URL).unwrap();
        let opts = BaseOptions {
            target_uri: Some(canonical.as_str()),
            authority: Some(canonical.authority()),
            ..BaseOptions::default()
        };
        let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
        let sig = key.sign(base.as_bytes()).unwrap();
        let header = format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(sig.as_bytes()));
        msg.push_header("Signature", header.as_str());
        let msg = msg.with_body(BODY);
        let verifier = Verifier::new(
            Profile::webhook_v1(),
            keys,
            MemoryReplayStore::webhook(),
            FixedClock(NOW),
        );
        match verifier.verify(&msg).await {
            Ok(_) => Ok(()),
            Err(e) => Err((e.code_str().to_owned(), e.step().to_string(), e.detail().to_owned())),
        }
    }

    fn purpose_invalid(got: Result<(), (String, String, String)>, why: &str) {
        let (code, step, detail) = got.expect_err(why);
        assert_eq!(code, "webhook_signature_key_purpose_invalid", "{why}: {detail}");
        assert_eq!(step, "8", "{why}: {detail}");
    }

    /// Spec (security.mdx, key publication): a signing JWK's `kid` "MUST NOT
    /// collide with any other entry's `kid` regardless of `adcp_use`". The
    /// kid is refused at step 8 whichever entry comes first (the resolver
    /// used to keep the last one), and the set's other kids still verify.
    #[tokio::test]
    async fn colliding_kid_is_refused_in_either_order() {
        let signer = SigningKey::generate_ed25519().unwrap();
        let other = SigningKey::generate_ed25519().unwrap();
        let k2 = SigningKey::generate_ed25519().unwrap();
        let good = jwk(&signer, "k1", "request-signing");
        let rival = jwk(&other, "k1", "governance-signing");
        let bystander = jwk(&k2, "k2", "request-signing");
        assert_eq!(
            deliver(
                &signer,
                "k1",
                StaticKeyResolver::new().with_jwks(&json!({"keys": [good.clone()]}), AGENT)
            )
            .await,
            Ok(()),
            "control: the key alone verifies"
        );
        for keys in [
            vec![good.clone(), rival.clone(), bystander.clone()],
            vec![rival.clone(), bystander.clone(), good.clone()],
            vec![good.clone(), bystander.clone(), good.clone()],
        ] {
            let jwks = json!({ "keys": keys });
            let resolver = || StaticKeyResolver::new().with_jwks(&jwks, AGENT);
            purpose_invalid(deliver(&signer, "k1", resolver()).await, &jwks.to_string());
            purpose_invalid(deliver(&other, "k1", resolver()).await, &jwks.to_string());
            assert_eq!(deliver(&k2, "k2", resolver()).await, Ok(()), "{jwks}");
        }
        // Across additions too: one key set.
        let split = StaticKeyResolver::new()
            .with_jwks(&json!({"keys": [rival.clone()]}), AGENT)
            .with_jwks(&json!({"keys": [good.clone(), bystander]}), AGENT);
        purpose_invalid(deliver(&signer, "k1", split.clone()).await, "across with_jwks");
        assert_eq!(deliver(&k2, "k2", split).await, Ok(()));
        let detail = deliver(
            &signer,
            "k1",
            StaticKeyResolver::new().with_jwks(&json!({"keys": [rival, good]}), AGENT),
        )
        .await
        .unwrap_err()
        .2;
        assert!(detail.contains("collision"), "{detail}");
    }

    /// Spec: each signing JWK MUST declare `alg` (`EdDSA` / `ES256`). One
    /// without it is refused at step 8, as a wrong purpose is.
    #[tokio::test]
    async fn jwk_without_alg_is_refused_at_step_8() {
        let signer = SigningKey::generate_ed25519().unwrap();
        let mut bare = jwk(&signer, "k1", "request-signing");
        bare.as_object_mut().unwrap().remove("alg");
        let got = deliver(
            &signer,
            "k1",
            StaticKeyResolver::new().with_jwks(&json!({"keys": [bare]}), AGENT),
        )
        .await;
        assert!(got.as_ref().unwrap_err().2.contains("alg"), "{got:?}");
        purpose_invalid(got, "no alg");
    }

    #[test]
    fn from_jwks_json_marks_each_shared_kid_once() {
        let a = SigningKey::generate_ed25519().unwrap();
        let keys = json!({"keys": [
            jwk(&a, "x", "request-signing"), jwk(&a, "y", "request-signing"),
            jwk(&a, "x", "webhook-signing"), {"kid": "x", "kty": "RSA"}, {"kty": "OKP"}, {"kid": 7},
        ]});
        let resolved = ResolvedKey::from_jwks_json(&keys, AGENT);
        let summary: Vec<(&str, bool)> = resolved.iter().map(|k| (k.kid(), k.kid_collides())).collect();
        assert_eq!(summary, [("x", true), ("y", false)]);
        assert!(resolved[0].key().is_err() && resolved[0].adcp_use().is_none());
        assert_eq!(resolved[1].alg(), Some("EdDSA"));
        assert!(ResolvedKey::from_jwks_json(&json!({"keys": {}}), AGENT).is_empty());
    }
}
