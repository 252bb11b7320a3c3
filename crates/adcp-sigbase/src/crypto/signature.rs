//! [`Signature`]: the bytes produced by [`SigningKey::sign`](super::SigningKey::sign).

use core::fmt;

use super::Algorithm;

/// A signature over an RFC 9421 signature base, in the wire form RFC 9421
/// defines for its algorithm (64 bytes for `ed25519`, 64-byte `r || s` for
/// `ecdsa-p256-sha256`, 32-byte tag for `hmac-sha256`). Encoding it for the
/// `Signature` header (RFC 8941 byte sequence) is the caller's business.
///
/// `Debug` prints the algorithm and length only, and there is deliberately no
/// `PartialEq`: an HMAC tag must be checked with
/// [`VerifyingKey::verify`](super::VerifyingKey::verify) (constant time), not
/// compared with `==`, and must not end up in logs.
#[derive(Clone)]
pub struct Signature {
    algorithm: Algorithm,
    bytes: Vec<u8>,
}

impl Signature {
    pub(crate) fn new(algorithm: Algorithm, bytes: Vec<u8>) -> Self {
        Self { algorithm, bytes }
    }

    /// The algorithm that produced this signature.
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The signature bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The signature bytes, by value.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl AsRef<[u8]> for Signature {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Signature> for Vec<u8> {
    fn from(signature: Signature) -> Self {
        signature.bytes
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signature")
            .field("algorithm", &self.algorithm.as_str())
            .field("len", &self.bytes.len())
            .finish()
    }
}
