//! Identifier shapes shared by every schema, checked on `&str` without
//! allocating, and the serde helpers that keep a parsed payload
//! byte-for-value identical when it is serialized back.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The charset of every AdCP token-shaped identifier (`idempotency_key`,
/// `notification_id`, `subscriber_id`, challenges).
fn token_chars(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Whether `s` is `^[A-Za-z0-9_.:-]{min,max}$` (length in bytes, which is
/// characters for this ASCII charset).
pub(crate) fn is_token(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && token_chars(s)
}

/// Whether `key` is a usable `idempotency_key`: the schemas' pattern
/// `^[A-Za-z0-9_.:-]{16,255}$`, and — like
/// [`crate::envelope::check_mcp_envelope`], which uses the signer's rule —
/// not one character repeated (a predictable key the spec calls
/// non-conformant).
#[must_use]
pub fn is_valid_idempotency_key(key: &str) -> bool {
    let repeated = key.bytes().next().is_some_and(|first| key.bytes().all(|b| b == first));
    is_token(key, 16, 255) && !repeated
}

/// Whether `id` fits `notification_id` / `change_id` (`{1,255}`).
pub(crate) fn is_notification_id(id: &str) -> bool {
    is_token(id, 1, 255)
}

/// Whether `id` is a valid `notification_id` (`^[A-Za-z0-9_.:-]{1,255}$`):
/// what the receiver tracks re-emissions by (a generic payload's member is
/// not validated by its model).
#[must_use]
pub fn is_valid_notification_id(id: &str) -> bool {
    is_notification_id(id)
}

/// Whether `id` fits `subscriber_id` (`{1,64}`).
pub(crate) fn is_subscriber_id(id: &str) -> bool {
    is_token(id, 1, 64)
}

/// Whether `value` fits a challenge (`{32,255}`).
pub(crate) fn is_challenge_value(value: &str) -> bool {
    is_token(value, 32, 255)
}

/// A member that may hold any JSON value, `null` included: present-null
/// stays `Some(Value::Null)` (plain `Option<Value>` would turn it into
/// `None` and drop it when serialized back).
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An optional string member: absent is `None`, a string is `Some`, and
/// `null` (which the schemas never allow) is a type error rather than a
/// silent `None` that would vanish on re-serialization.
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// A required member typed `["string", "null"]`: with `deserialize_with`
/// (and no `default`) serde reports it missing instead of inventing a
/// `null` that would then be serialized back.
pub(crate) fn nullable_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// An optional member of any typed shape: absent is `None`, `null` is a
/// type error (see [`opt_string`]).
pub(crate) fn some<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}
