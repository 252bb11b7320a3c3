//! [`DigestAlgorithm`]: the RFC 9530 algorithms this crate computes.

use std::fmt;

use sha2::{Digest as _, Sha256, Sha512};

/// A `Content-Digest` algorithm this crate implements (RFC 9530 §5, both
/// "Active" in the IANA Hash Algorithms for HTTP Digest Fields registry).
///
/// Other registered keys (`md5`, `sha`, `unixsum`, `unixcksum`, `adler`,
/// `crc32c`, all deprecated) and unregistered ones are kept as unrecognised
/// members by the parser and never verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DigestAlgorithm {
    /// SHA-256, key `sha-256`, 32 bytes.
    Sha256,
    /// SHA-512, key `sha-512`, 64 bytes.
    Sha512,
}

impl DigestAlgorithm {
    /// Every algorithm, in the order they are emitted by default.
    pub const ALL: [DigestAlgorithm; 2] = [DigestAlgorithm::Sha256, DigestAlgorithm::Sha512];

    /// The Dictionary key (`sha-256`, `sha-512`).
    pub const fn key(self) -> &'static str {
        match self {
            DigestAlgorithm::Sha256 => "sha-256",
            DigestAlgorithm::Sha512 => "sha-512",
        }
    }

    /// The algorithm with this Dictionary key. Exact match: keys are
    /// lowercase in RFC 8941, so `SHA-256` is not `sha-256`.
    pub fn from_key(key: &str) -> Option<Self> {
        match key {
            "sha-256" => Some(DigestAlgorithm::Sha256),
            "sha-512" => Some(DigestAlgorithm::Sha512),
            _ => None,
        }
    }

    /// Length of a digest, in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            DigestAlgorithm::Sha256 => 32,
            DigestAlgorithm::Sha512 => 64,
        }
    }

    /// Whether `expected` is the digest of `body`, compared in constant
    /// time (computed on the stack: no allocation).
    pub(crate) fn matches(self, body: &[u8], expected: &[u8]) -> bool {
        use subtle::ConstantTimeEq as _;
        match self {
            DigestAlgorithm::Sha256 => bool::from(Sha256::digest(body)[..].ct_eq(expected)),
            DigestAlgorithm::Sha512 => bool::from(Sha512::digest(body)[..].ct_eq(expected)),
        }
    }

    /// The digest of `body`.
    pub fn compute(self, body: &[u8]) -> Vec<u8> {
        match self {
            DigestAlgorithm::Sha256 => Sha256::digest(body).to_vec(),
            DigestAlgorithm::Sha512 => Sha512::digest(body).to_vec(),
        }
    }
}

impl fmt::Display for DigestAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}
