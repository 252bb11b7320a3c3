//! [`IdempotencyKey`]: the webhook payload's dedup key.

use core::fmt;

use crate::{OsRandom, RandomSource, SignError};

/// A webhook `idempotency_key`: cryptographically random, generated once
/// per logical event and reused, unchanged, on every retry of that event.
///
/// [`IdempotencyKey::generate`] makes a UUID v4 (122 random bits) from a
/// CSPRNG, lower-case hex with hyphens. [`IdempotencyKey::new`] takes a
/// key the caller kept (an outbox row, so a retry after a restart reuses
/// it) and checks it against the AdCP schema pattern
/// `^[A-Za-z0-9_.:-]{16,255}$`, refusing a key made of one repeated
/// character.
///
/// Keys are capability tokens within their TTL, so `Debug` prints only the
/// first 8 characters and there is no `Display`; [`IdempotencyKey::as_str`]
/// is the explicit way to the full value.
///
/// ```
/// use adcp_sign::IdempotencyKey;
///
/// let key = IdempotencyKey::generate()?;
/// assert_eq!(key.as_str().len(), 36);
/// assert_eq!(&key.as_str()[14..15], "4"); // version 4
/// assert!(format!("{key:?}").ends_with("…\")"));
///
/// let kept = IdempotencyKey::new("whk_01HW9D3H8FZP2N6R8T0V4X6Z9B")?;
/// assert_eq!(kept.as_str(), "whk_01HW9D3H8FZP2N6R8T0V4X6Z9B");
/// assert_eq!(IdempotencyKey::new("retry-001").unwrap_err().code(), "idempotency_key_invalid");
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The shortest key accepted.
    pub const MIN_LEN: usize = 16;
    /// The longest key accepted.
    pub const MAX_LEN: usize = 255;

    /// A new UUID v4 key from the operating system's CSPRNG.
    ///
    /// # Errors
    ///
    /// `randomness_unavailable`.
    pub fn generate() -> Result<Self, SignError> {
        Self::generate_with(&OsRandom)
    }

    /// A new UUID v4 key from `random` (RFC 9562 §5.4: 122 random bits,
    /// version nibble `4`, variant bits `10`).
    ///
    /// # Errors
    ///
    /// `randomness_unavailable`.
    pub fn generate_with<R: RandomSource + ?Sized>(random: &R) -> Result<Self, SignError> {
        let mut bytes = [0_u8; 16];
        random.fill(&mut bytes)?;
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Ok(Self(uuid_text(&bytes)))
    }

    /// A key kept by the caller, checked.
    ///
    /// # Errors
    ///
    /// `idempotency_key_invalid` unless the key matches
    /// `^[A-Za-z0-9_.:-]{16,255}$` and is not one repeated character.
    pub fn new(key: impl Into<String>) -> Result<Self, SignError> {
        let key = key.into();
        let bytes = key.as_bytes();
        let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-');
        let repeated = bytes.first().is_some_and(|first| bytes.iter().all(|b| b == first));
        if !(Self::MIN_LEN..=Self::MAX_LEN).contains(&bytes.len()) || !bytes.iter().all(allowed) || repeated {
            return Err(SignError::IdempotencyKeyInvalid);
        }
        Ok(Self(key))
    }

    /// The key.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn uuid_text(bytes: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix: String = self.0.chars().take(8).collect();
        write!(f, "IdempotencyKey(\"{prefix}…\")")
    }
}
