//! [`JwksLimits`]: the caps applied to untrusted JWK and JWK Set input.

/// The default maximum size of a JWK or JWK Set document: 64 KiB.
///
/// A JWK Set of 100 P-256 keys with long `kid`s and a few extension members
/// is well under 32 KiB; anything larger is refused before it is parsed.
pub const MAX_JWKS_LEN: usize = 64 * 1024;

/// The default maximum number of keys in a JWK Set: 100.
pub const MAX_JWKS_KEYS: usize = 100;

/// Caps for parsing untrusted JWK Sets
/// ([`Jwks::parse_with_limits`](super::Jwks::parse_with_limits)). The
/// default is [`MAX_JWKS_LEN`] bytes and [`MAX_JWKS_KEYS`] keys.
///
/// ```
/// use adcp_sigbase::jwk::{JwkError, Jwks, JwksLimits};
///
/// let limits = JwksLimits { max_len: 16, ..JwksLimits::default() };
/// assert_eq!(
///     Jwks::parse_with_limits(br#"{"keys": [], "x": "long enough"}"#, &limits).err(),
///     Some(JwkError::TooLarge { limit: 16, actual: 32 })
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JwksLimits {
    /// The maximum size of the document in bytes
    /// ([`JwkError::TooLarge`](super::JwkError::TooLarge) above it).
    pub max_len: usize,
    /// The maximum number of entries in `keys`
    /// ([`JwkError::TooManyKeys`](super::JwkError::TooManyKeys) above it).
    pub max_keys: usize,
}

impl Default for JwksLimits {
    fn default() -> Self {
        Self {
            max_len: MAX_JWKS_LEN,
            max_keys: MAX_JWKS_KEYS,
        }
    }
}
