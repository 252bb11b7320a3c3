//! HMAC-SHA256 through RustCrypto `hmac` + `sha2`; tags compared in constant
//! time with `subtle`.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::zeroize::Zeroizing;
use crate::crypto::{Algorithm, CryptoError};

/// Length of an HMAC-SHA256 tag.
pub(crate) const TAG_LEN: usize = 32;

/// An HMAC-SHA256 secret, zeroized on drop. The length policy is applied by
/// the caller (`policy::check_hmac_secret`).
///
/// The keyed `Hmac` state is rebuilt for every operation rather than cached:
/// `hmac` 0.12 does not zeroize its state, and keying costs two SHA-256
/// compressions.
#[derive(Clone)]
pub(crate) struct Key(Zeroizing<Vec<u8>>);

impl Key {
    pub(crate) fn new(secret: &[u8]) -> Self {
        Self(Zeroizing::new(secret.to_vec()))
    }

    fn mac(&self, message: &[u8]) -> Result<[u8; TAG_LEN], CryptoError> {
        // `new_from_slice` accepts keys of any length for HMAC; the error
        // path exists only in the trait signature.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).map_err(|_| CryptoError::SigningFailed)?;
        mac.update(message);
        Ok(mac.finalize().into_bytes().into())
    }

    /// The 32-byte tag over `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<[u8; TAG_LEN], CryptoError> {
        self.mac(message)
    }

    /// Checks a full 32-byte tag in constant time. Truncated tags are
    /// rejected.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        if signature.len() != TAG_LEN {
            return Err(CryptoError::InvalidSignatureLength {
                algorithm: Algorithm::HmacSha256,
                expected: TAG_LEN,
                actual: signature.len(),
            });
        }
        let expected = Zeroizing::new(self.mac(message).map_err(|_| CryptoError::VerificationFailed)?);
        if bool::from(expected.as_slice().ct_eq(signature)) {
            Ok(())
        } else {
            Err(CryptoError::VerificationFailed)
        }
    }

    /// Constant-time equality of two secrets (their lengths are not secret).
    pub(crate) fn ct_eq(&self, other: &Self) -> bool {
        bool::from(self.0.as_slice().ct_eq(other.0.as_slice()))
    }
}
