//! [`Jwk`]: one validated OKP Ed25519 or EC P-256 JSON Web Key, its members,
//! and its JSON form.

use core::fmt;

use serde_json::{Map, Value};

use crate::crypto::{Algorithm, SecretBytes, VerifyingKey};

use super::{b64, JwkError};

/// The members [`Jwk`] models; every other member is kept verbatim as an
/// extension member.
pub(super) const STANDARD_MEMBERS: [&str; 9] = ["kty", "kid", "use", "key_ops", "alg", "crv", "x", "y", "d"];

/// Whether `name` is one of [`STANDARD_MEMBERS`].
pub(super) fn is_standard(name: &str) -> bool {
    STANDARD_MEMBERS.contains(&name)
}

/// The validated public key of a [`Jwk`], as its JWK components.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PublicKey {
    /// `kty` `OKP`, `crv` `Ed25519` (RFC 8037): `x` is the 32-byte key.
    Ed25519 { x: [u8; b64::COMPONENT_LEN] },
    /// `kty` `EC`, `crv` `P-256` (RFC 7518 §6.2): affine coordinates.
    P256 {
        x: [u8; b64::COMPONENT_LEN],
        y: [u8; b64::COMPONENT_LEN],
    },
}

impl PublicKey {
    pub(super) fn algorithm(&self) -> Algorithm {
        match self {
            Self::Ed25519 { .. } => Algorithm::Ed25519,
            Self::P256 { .. } => Algorithm::EcdsaP256Sha256,
        }
    }
}

/// The private key of a [`Jwk`]: the 32-byte Ed25519 seed or P-256 scalar,
/// checked against the public key, wiped on drop.
#[derive(Clone)]
pub(super) struct PrivateKey {
    pub(super) d: SecretBytes,
    /// Whether the key came from (and is written back as) the standard `d`.
    pub(super) in_d: bool,
    /// The non-standard member adopted through
    /// [`Jwk::with_test_private_member`], if any. It stays among the
    /// extension members (so `to_json` reproduces the input) and is left out
    /// of `to_public_json`.
    pub(super) test_member: Option<String>,
}

/// A JSON Web Key (RFC 7517) for Ed25519 (`kty` `OKP`, RFC 8037) or ECDSA
/// P-256 (`kty` `EC`, RFC 7518 §6.2), validated completely when it is built.
///
/// A `Jwk` that exists is usable: its `kty`/`crv` are supported, its `alg`
/// (if any) agrees with them, `x`/`y` are strict base64url of the right
/// length and form a valid public key, `use` is a string, `key_ops` an array
/// of distinct strings, and a private `d` (if any) belongs to the public
/// key. The typed errors are all raised by parsing
/// ([`Jwk::from_json_value`]); the conversions of a built `Jwk`
/// ([`Jwk::algorithm`], [`Jwk::verifying_key`], [`Jwk::thumbprint`]) cannot
/// fail.
///
/// Members this type does not model (`adcp_use`, `$comment`, `x5c`, …) are
/// kept verbatim, in the order the parsed object yielded them, and are
/// reachable with [`Jwk::member`]; [`Jwk::to_json`] writes them back.
///
/// The private key is held in a buffer wiped on drop and is never printed by
/// `Debug`, which also prints extension members by name only (a
/// non-standard member can carry a secret, as the AdCP test keys do).
///
/// ```
/// use adcp_sigbase::crypto::Algorithm;
/// use adcp_sigbase::jwk::Jwk;
///
/// // RFC 8037 Appendix A.2.
/// let jwk = Jwk::parse(br#"{"kty":"OKP","crv":"Ed25519",
///     "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","adcp_use":"request-signing"}"#)?;
/// assert_eq!(jwk.algorithm(), Algorithm::Ed25519);
/// assert_eq!(jwk.member("adcp_use").and_then(|v| v.as_str()), Some("request-signing"));
/// assert_eq!(jwk.thumbprint(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
/// # Ok::<(), adcp_sigbase::jwk::JwkError>(())
/// ```
#[derive(Clone)]
pub struct Jwk {
    pub(super) public: PublicKey,
    pub(super) verifying_key: VerifyingKey,
    pub(super) kid: Option<String>,
    pub(super) alg: Option<String>,
    pub(super) key_use: Option<String>,
    pub(super) key_ops: Option<Vec<String>>,
    pub(super) private: Option<PrivateKey>,
    pub(super) members: Vec<(String, Value)>,
}

impl Jwk {
    /// The key ID (`kid`), if present.
    #[must_use]
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// The declared `alg`, if present, exactly as written (`EdDSA` or
    /// `Ed25519` for Ed25519 keys, `ES256` for P-256 keys). The algorithm
    /// the key is for is [`Jwk::algorithm`], whether or not `alg` is
    /// declared.
    #[must_use]
    pub fn alg(&self) -> Option<&str> {
        self.alg.as_deref()
    }

    /// The key type: `"OKP"` or `"EC"`.
    #[must_use]
    pub fn kty(&self) -> &'static str {
        match self.public {
            PublicKey::Ed25519 { .. } => "OKP",
            PublicKey::P256 { .. } => "EC",
        }
    }

    /// The curve: `"Ed25519"` or `"P-256"`.
    #[must_use]
    pub fn crv(&self) -> &'static str {
        match self.public {
            PublicKey::Ed25519 { .. } => "Ed25519",
            PublicKey::P256 { .. } => "P-256",
        }
    }

    /// The public key use (`use`, e.g. `"sig"`), if present. Its value is
    /// not checked: what a profile accepts is the profile's policy.
    #[must_use]
    pub fn key_use(&self) -> Option<&str> {
        self.key_use.as_deref()
    }

    /// The key operations (`key_ops`, e.g. `["verify"]`), if present:
    /// distinct strings, in their original order. The values are not
    /// checked against the RFC 7517 §4.3 list.
    #[must_use]
    pub fn key_ops(&self) -> Option<&[String]> {
        self.key_ops.as_deref()
    }

    /// The decoded `x`: the 32-byte Ed25519 public key, or the 32-byte
    /// P-256 x coordinate.
    #[must_use]
    pub fn x(&self) -> &[u8] {
        match &self.public {
            PublicKey::Ed25519 { x } | PublicKey::P256 { x, .. } => x,
        }
    }

    /// The decoded `y` (32 bytes) of a P-256 key; `None` for Ed25519.
    #[must_use]
    pub fn y(&self) -> Option<&[u8]> {
        match &self.public {
            PublicKey::Ed25519 { .. } => None,
            PublicKey::P256 { y, .. } => Some(y),
        }
    }

    /// The signature algorithm of the key, from its `kty` and `crv` (which
    /// parsing cross-checked with `alg`): [`Algorithm::Ed25519`] or
    /// [`Algorithm::EcdsaP256Sha256`].
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        self.public.algorithm()
    }

    /// The public key, ready to verify (validated when the `Jwk` was built;
    /// clone it to keep it).
    #[must_use]
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.verifying_key
    }

    /// Whether the JWK holds a private key (a `d` member, or a test member
    /// adopted with [`Jwk::with_test_private_member`]).
    #[must_use]
    pub fn has_private_key(&self) -> bool {
        self.private.is_some()
    }

    /// The extension member `name` (any member other than `kty`, `kid`,
    /// `use`, `key_ops`, `alg`, `crv`, `x`, `y`, `d`), verbatim. Standard
    /// members are read with their typed accessors and give `None` here.
    #[must_use]
    pub fn member(&self, name: &str) -> Option<&Value> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Every extension member, in order.
    pub fn members(&self) -> impl Iterator<Item = (&str, &Value)> + '_ {
        self.members.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// The same key with the extension member `name` set to `value`
    /// (replacing an existing member of that name in place, else appended),
    /// e.g. `with_member("adcp_use", "webhook-signing".into())`.
    ///
    /// # Errors
    ///
    /// [`JwkError::ReservedMember`] if `name` is a member this type models
    /// (`kty`, `kid`, `use`, `key_ops`, `alg`, `crv`, `x`, `y`, `d`).
    pub fn with_member(mut self, name: impl Into<String>, value: Value) -> Result<Self, JwkError> {
        let name = name.into();
        if is_standard(&name) {
            return Err(JwkError::ReservedMember);
        }
        match self.members.iter_mut().find(|(n, _)| *n == name) {
            Some((_, slot)) => *slot = value,
            None => self.members.push((name, value)),
        }
        Ok(self)
    }

    /// The JWK as JSON: the standard members (`kty`, `kid`, `use`,
    /// `key_ops`, `alg`, `crv`, `x`, `y`, and `d` if the private key came
    /// from `d`), then the extension members.
    ///
    /// For a parsed JWK this is the parsed object: [`Jwk::from_json_value`]
    /// of it gives the same key. It contains the private key if the JWK has
    /// one (as an ordinary `String`, which is not wiped on drop); use
    /// [`Jwk::to_public_json`] for anything published.
    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Object(self.object(true))
    }

    /// The JWK as JSON without its private key: as [`Jwk::to_json`], minus
    /// `d` and minus the member adopted by [`Jwk::with_test_private_member`].
    #[must_use]
    pub fn to_public_json(&self) -> Value {
        Value::Object(self.object(false))
    }

    fn object(&self, private: bool) -> Map<String, Value> {
        let mut map = Map::new();
        let text = |s: &str| Value::String(s.to_owned());
        map.insert("kty".into(), text(self.kty()));
        if let Some(kid) = &self.kid {
            map.insert("kid".into(), text(kid));
        }
        if let Some(key_use) = &self.key_use {
            map.insert("use".into(), text(key_use));
        }
        if let Some(ops) = &self.key_ops {
            map.insert("key_ops".into(), Value::Array(ops.iter().map(|op| text(op)).collect()));
        }
        if let Some(alg) = &self.alg {
            map.insert("alg".into(), text(alg));
        }
        map.insert("crv".into(), text(self.crv()));
        map.insert("x".into(), Value::String(b64::encode(self.x())));
        if let Some(y) = self.y() {
            map.insert("y".into(), Value::String(b64::encode(y)));
        }
        let mut adopted = None;
        if let Some(key) = &self.private {
            if private && key.in_d {
                map.insert("d".into(), Value::String(b64::encode(key.d.expose_secret())));
            }
            adopted = key.test_member.as_deref();
        }
        for (name, value) in &self.members {
            if private || adopted != Some(name.as_str()) {
                map.insert(name.clone(), value.clone());
            }
        }
        map
    }
}

impl fmt::Debug for Jwk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Jwk");
        s.field("kty", &self.kty())
            .field("crv", &self.crv())
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("use", &self.key_use)
            .field("key_ops", &self.key_ops)
            .field("x", &b64::encode(self.x()));
        if let Some(y) = self.y() {
            s.field("y", &b64::encode(y));
        }
        if self.private.is_some() {
            s.field("d", &"[REDACTED]");
        }
        let names: Vec<&str> = self.members.iter().map(|(n, _)| n.as_str()).collect();
        s.field("members", &names).finish()
    }
}
