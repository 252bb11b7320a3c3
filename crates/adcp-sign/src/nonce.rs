//! [`Nonce`]: the `nonce` signature parameter.

use core::fmt;

use adcp_sigbase::encoding::BinaryEncoding;

use crate::{RandomSource, SignError};

/// A `nonce` signature parameter: unpadded base64url of at least 16 bytes
/// (the AdCP profile's "≥ 128 bits of entropy"), at most 64.
///
/// [`Nonce::generate`] draws [`Nonce::DEFAULT_BYTES`] (16) fresh bytes
/// from a CSPRNG for every signature; [`Nonce::parse`] takes a fixed value
/// (tests, the conformance vectors) and checks it the way a verifier does.
///
/// ```
/// use adcp_sign::{Nonce, OsRandom};
///
/// let fixed = Nonce::parse("KXYnfEfJ0PBRZXQyVXfVQA")?;
/// assert_eq!(fixed.as_str(), "KXYnfEfJ0PBRZXQyVXfVQA");
/// assert_eq!(Nonce::parse("KXYnfEfJ0PBRZXQyVXfVQA==").unwrap_err().code(), "nonce_invalid");
/// assert_eq!(Nonce::generate(&OsRandom)?.as_str().len(), 22);
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Nonce(String);

impl Nonce {
    /// The number of random bytes [`Nonce::generate`] draws.
    pub const DEFAULT_BYTES: usize = 16;
    /// The fewest decoded bytes accepted.
    pub const MIN_BYTES: usize = 16;
    /// The most decoded bytes accepted.
    pub const MAX_BYTES: usize = 64;

    /// A fresh nonce of [`Nonce::DEFAULT_BYTES`] random bytes.
    ///
    /// # Errors
    ///
    /// `randomness_unavailable`.
    pub fn generate<R: RandomSource + ?Sized>(random: &R) -> Result<Self, SignError> {
        let mut bytes = [0_u8; Self::DEFAULT_BYTES];
        random.fill(&mut bytes)?;
        Ok(Self(BinaryEncoding::Base64UrlUnpadded.encode(&bytes)))
    }

    /// A fixed nonce, checked: strict unpadded base64url (no padding, no
    /// `+` or `/`, canonical trailing bits) of 16 to 64 bytes.
    ///
    /// # Errors
    ///
    /// `nonce_invalid`.
    pub fn parse(text: &str) -> Result<Self, SignError> {
        if text.len() > BinaryEncoding::Base64UrlUnpadded.encoded_len(Self::MAX_BYTES) {
            return Err(SignError::NonceInvalid {
                reason: "the nonce is longer than 64 bytes",
            });
        }
        let bytes = BinaryEncoding::Base64UrlUnpadded
            .decode(text)
            .map_err(|_| SignError::NonceInvalid {
                reason: "the nonce is not strict unpadded base64url",
            })?;
        if bytes.len() < Self::MIN_BYTES {
            return Err(SignError::NonceInvalid {
                reason: "the nonce is shorter than 16 bytes",
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The encoded nonce, as it appears in `Signature-Input`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Nonce").field(&self.0).finish()
    }
}

impl fmt::Display for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
