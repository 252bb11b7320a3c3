//! [`Jwks`]: a JWK Set (RFC 7517 §5), with usable and unusable entries.

use core::fmt;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::key::is_standard;
use super::parse::from_object;
use super::{json, Jwk, JwkError, JwkMember, JwksLimits};

/// A JWK Set: the `keys` array, in order, plus the set's other members
/// (`$comment`, …) kept verbatim.
///
/// Every element of `keys` must be a JSON object; otherwise the whole set
/// is rejected. An element that is not a valid supported key (an `RSA` or
/// `X25519` key, an `alg` that contradicts `crv`, a bad point, …) does
/// **not** reject the set (RFC 7517 §5 asks implementations to ignore such
/// keys): it stays listed as a [`JwksEntry::Unusable`] with its `kid` and
/// its [`JwkError`], so a verifier can tell "no key with this `kid`"
/// ([`Jwks::get`] is `None`) from "the key with this `kid` is unusable".
///
/// A `kid` carried by several elements (whatever their other members) makes
/// **every** one of them unusable with [`JwkError::KidCollision`]: which
/// key a signature names cannot be decided, and choosing by position would
/// let the order of the published array pick the key. The other `kid`s of
/// the set are unaffected.
///
/// ```
/// use adcp_sigbase::jwk::{JwkError, Jwks};
///
/// let jwks = Jwks::parse(br#"{"keys": [
///     {"kid": "ed", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
///     {"kid": "rsa", "kty": "RSA", "n": "AQAB", "e": "AQAB"}
/// ]}"#)?;
/// assert_eq!(jwks.len(), 2);
/// assert!(jwks.key("ed").is_some());
/// assert_eq!(
///     jwks.get("rsa").map(|entry| entry.error()),
///     Some(Some(JwkError::Unsupported { member: adcp_sigbase::jwk::JwkMember::Kty }))
/// );
/// assert!(jwks.get("missing").is_none());
///
/// // A kid on two entries: both unusable, in either order; other kids work.
/// let jwks = Jwks::parse(br#"{"keys": [
///     {"kid": "a", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
///     {"kid": "b", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
///     {"kid": "a", "kty": "RSA", "n": "AQAB", "e": "AQAB"}
/// ]}"#)?;
/// assert_eq!(jwks.get("a").and_then(|entry| entry.error()), Some(JwkError::KidCollision));
/// assert!(jwks.key("b").is_some());
/// # Ok::<(), JwkError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Jwks {
    entries: Vec<JwksEntry>,
    members: Vec<(String, Value)>,
}

/// One element of a JWK Set's `keys`.
#[derive(Debug, Clone)]
pub enum JwksEntry {
    /// A valid, supported key (boxed: a [`Jwk`] caches its parsed public
    /// key and is several times larger than an [`UnusableJwk`]).
    Usable(Box<Jwk>),
    /// A key this module rejects; see [`UnusableJwk::error`].
    Unusable(UnusableJwk),
}

/// A `keys` element that is not a usable key: its `kid` (if it has a string
/// one), why it was rejected, and its members (without `d`: the private key
/// of a rejected key is dropped).
#[derive(Clone)]
pub struct UnusableJwk {
    kid: Option<String>,
    error: JwkError,
    object: Map<String, Value>,
}

impl UnusableJwk {
    fn new(object: &Map<String, Value>, error: JwkError) -> Self {
        let object: Map<String, Value> = object
            .iter()
            .filter(|(name, _)| name.as_str() != JwkMember::D.as_str())
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let kid = object
            .get(JwkMember::Kid.as_str())
            .and_then(Value::as_str)
            .map(str::to_owned);
        Self { kid, error, object }
    }

    /// The `kid`, if the element has a string `kid`.
    #[must_use]
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// Why the key is unusable.
    #[must_use]
    pub fn error(&self) -> JwkError {
        self.error
    }

    /// The extension member `name` (not one of the standard members `kty`,
    /// `kid`, `use`, `key_ops`, `alg`, `crv`, `x`, `y`, `d`), as for
    /// [`Jwk::member`].
    #[must_use]
    pub fn member(&self, name: &str) -> Option<&Value> {
        if is_standard(name) {
            return None;
        }
        self.object.get(name)
    }

    /// The element as it was received, minus `d`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Object(self.object.clone())
    }
}

impl fmt::Debug for UnusableJwk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.object.keys().map(String::as_str).collect();
        f.debug_struct("UnusableJwk")
            .field("kid", &self.kid)
            .field("error", &self.error)
            .field("members", &names)
            .finish()
    }
}

impl JwksEntry {
    /// The `kid` of the entry, usable or not.
    #[must_use]
    pub fn kid(&self) -> Option<&str> {
        match self {
            Self::Usable(jwk) => jwk.kid(),
            Self::Unusable(key) => key.kid(),
        }
    }

    /// The key, or why it is unusable.
    ///
    /// # Errors
    ///
    /// The [`JwkError`] that made the entry unusable.
    pub fn jwk(&self) -> Result<&Jwk, JwkError> {
        match self {
            Self::Usable(jwk) => Ok(jwk),
            Self::Unusable(key) => Err(key.error),
        }
    }

    /// Why the entry is unusable; `None` for a usable key.
    #[must_use]
    pub fn error(&self) -> Option<JwkError> {
        self.jwk().err()
    }

    /// The extension member `name` (e.g. `adcp_use`), usable or not; see
    /// [`Jwk::member`].
    #[must_use]
    pub fn member(&self, name: &str) -> Option<&Value> {
        match self {
            Self::Usable(jwk) => jwk.member(name),
            Self::Unusable(key) => key.member(name),
        }
    }

    /// The entry as JSON ([`Jwk::to_json`] or [`UnusableJwk::to_json`]).
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::Usable(jwk) => jwk.to_json(),
            Self::Unusable(key) => key.to_json(),
        }
    }
}

impl Jwks {
    /// Parses a JWK Set from JSON bytes with the default [`JwksLimits`]
    /// (64 KiB, 100 keys).
    ///
    /// # Errors
    ///
    /// As [`Jwks::parse_with_limits`].
    pub fn parse(bytes: &[u8]) -> Result<Self, JwkError> {
        Self::parse_with_limits(bytes, &JwksLimits::default())
    }

    /// Parses a JWK Set from JSON bytes: size cap, JSON syntax, strict JSON
    /// (duplicate member names rejected, at any depth), then
    /// [`Jwks::from_json_value_with_limits`].
    ///
    /// # Errors
    ///
    /// [`JwkError::TooLarge`], [`JwkError::Json`], [`JwkError::StrictJson`],
    /// then the errors of [`Jwks::from_json_value_with_limits`].
    pub fn parse_with_limits(bytes: &[u8], limits: &JwksLimits) -> Result<Self, JwkError> {
        let value = json::parse(bytes, limits.max_len)?;
        Self::from_json_value_with_limits(&value, limits)
    }

    /// Reads a JWK Set from a parsed JSON value with the default key cap.
    ///
    /// # Errors
    ///
    /// As [`Jwks::from_json_value_with_limits`].
    pub fn from_json_value(value: &Value) -> Result<Self, JwkError> {
        Self::from_json_value_with_limits(value, &JwksLimits::default())
    }

    /// Reads a JWK Set from a parsed JSON value (`limits.max_len` does not
    /// apply to a value). Invalid keys become [`JwksEntry::Unusable`]
    /// entries and do not fail the set.
    ///
    /// # Errors
    ///
    /// [`JwkError::NotAnObject`]; [`JwkError::MissingMember`] or
    /// [`JwkError::InvalidMember`] (`keys` absent, not an array, or an
    /// element that is not an object); [`JwkError::TooManyKeys`]. A `kid`
    /// shared by several elements is not an error of the set: those
    /// elements are [`JwksEntry::Unusable`] with [`JwkError::KidCollision`].
    pub fn from_json_value_with_limits(value: &Value, limits: &JwksLimits) -> Result<Self, JwkError> {
        let object = value.as_object().ok_or(JwkError::NotAnObject)?;
        let member = JwkMember::Keys;
        let keys = object
            .get(member.as_str())
            .ok_or(JwkError::MissingMember { member })?
            .as_array()
            .ok_or(JwkError::InvalidMember { member })?;
        if keys.len() > limits.max_keys {
            return Err(JwkError::TooManyKeys {
                limit: limits.max_keys,
                actual: keys.len(),
            });
        }
        let objects = keys
            .iter()
            .map(|key| key.as_object().ok_or(JwkError::InvalidMember { member }))
            .collect::<Result<Vec<_>, JwkError>>()?;
        let colliding = colliding_kids(&objects);
        let entries = objects
            .into_iter()
            .map(|object| {
                let kid = object.get(JwkMember::Kid.as_str()).and_then(Value::as_str);
                if kid.is_some_and(|kid| colliding.contains(kid)) {
                    return JwksEntry::Unusable(UnusableJwk::new(object, JwkError::KidCollision));
                }
                match from_object(object) {
                    Ok(jwk) => JwksEntry::Usable(Box::new(jwk)),
                    Err(error) => JwksEntry::Unusable(UnusableJwk::new(object, error)),
                }
            })
            .collect();
        let members = object
            .iter()
            .filter(|(name, _)| name.as_str() != member.as_str())
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Ok(Self { entries, members })
    }

    /// A JWK Set of the given keys, in order (no key cap).
    ///
    /// # Errors
    ///
    /// [`JwkError::DuplicateKid`] if two keys share a `kid`.
    pub fn from_keys(keys: impl IntoIterator<Item = Jwk>) -> Result<Self, JwkError> {
        let entries: Vec<JwksEntry> = keys.into_iter().map(|jwk| JwksEntry::Usable(Box::new(jwk))).collect();
        check_distinct_kids(&entries)?;
        Ok(Self {
            entries,
            members: Vec::new(),
        })
    }

    /// Every entry of `keys`, usable or not, in order.
    #[must_use]
    pub fn entries(&self) -> &[JwksEntry] {
        &self.entries
    }

    /// The usable keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &Jwk> + '_ {
        self.entries.iter().filter_map(|entry| entry.jwk().ok())
    }

    /// The entry with this `kid`, usable or not; `None` means no key has
    /// this `kid`. When several entries of a parsed set share the `kid`,
    /// all of them are [`JwkError::KidCollision`] and this is the first.
    #[must_use]
    pub fn get(&self, kid: &str) -> Option<&JwksEntry> {
        self.entries.iter().find(|entry| entry.kid() == Some(kid))
    }

    /// The usable key with this `kid`; `None` if there is none or it is
    /// unusable (use [`Jwks::get`] to tell the two apart).
    #[must_use]
    pub fn key(&self, kid: &str) -> Option<&Jwk> {
        self.get(kid).and_then(|entry| entry.jwk().ok())
    }

    /// The number of entries, usable or not.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether `keys` is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A member of the set other than `keys` (e.g. `$comment`), verbatim.
    #[must_use]
    pub fn member(&self, name: &str) -> Option<&Value> {
        self.members.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// **For conformance test key files only**: every usable key that has
    /// the member `name` adopts its private key, as
    /// [`Jwk::with_test_private_member`]; keys without it are unchanged.
    ///
    /// # Errors
    ///
    /// The first error of [`Jwk::with_test_private_member`].
    pub fn with_test_private_member(mut self, name: &str) -> Result<Self, JwkError> {
        for entry in &mut self.entries {
            if let JwksEntry::Usable(jwk) = entry {
                if jwk.member(name).is_some() {
                    **jwk = (**jwk).clone().with_test_private_member(name)?;
                }
            }
        }
        Ok(self)
    }

    /// The set as JSON: `keys` (each entry's `to_json`, so private keys
    /// included), then the other members.
    #[must_use]
    pub fn to_json(&self) -> Value {
        self.json(JwksEntry::to_json)
    }

    /// The set as JSON with every key's private key removed
    /// ([`Jwk::to_public_json`]): what a `jwks_uri` serves.
    #[must_use]
    pub fn to_public_json(&self) -> Value {
        self.json(|entry| match entry {
            JwksEntry::Usable(jwk) => jwk.to_public_json(),
            JwksEntry::Unusable(key) => key.to_json(),
        })
    }

    fn json(&self, entry: impl Fn(&JwksEntry) -> Value) -> Value {
        let mut map = Map::new();
        map.insert(
            JwkMember::Keys.as_str().to_owned(),
            Value::Array(self.entries.iter().map(entry).collect()),
        );
        for (name, value) in &self.members {
            map.insert(name.clone(), value.clone());
        }
        Value::Object(map)
    }
}

/// The string `kid`s carried by more than one element of `keys` (the
/// elements are bounded by the key cap, so the sets are too).
fn colliding_kids<'a>(objects: &[&'a Map<String, Value>]) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut colliding = BTreeSet::new();
    for object in objects {
        if let Some(kid) = object.get(JwkMember::Kid.as_str()).and_then(Value::as_str) {
            if !seen.insert(kid) {
                colliding.insert(kid);
            }
        }
    }
    colliding
}

/// Rejects a second entry with the `kid` of an earlier one.
fn check_distinct_kids(entries: &[JwksEntry]) -> Result<(), JwkError> {
    let mut seen = BTreeSet::new();
    for (index, entry) in entries.iter().enumerate() {
        if let Some(kid) = entry.kid() {
            if !seen.insert(kid) {
                return Err(JwkError::DuplicateKid { index });
            }
        }
    }
    Ok(())
}
