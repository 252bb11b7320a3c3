//! Verification of a parsed `Content-Digest` against a body:
//! [`DigestPolicy`], [`verify`] and [`VerifiedDigest`].

use smallvec::SmallVec;

use super::{ContentDigest, DigestAlgorithm, DigestError};

/// Which algorithms satisfy a verifier.
///
/// The rule applied by [`verify`]:
///
/// 1. at least one member must use an algorithm the policy accepts, else
///    [`DigestError::NoAcceptableAlgorithm`];
/// 2. *every* member whose algorithm this crate implements must match the
///    body, whether or not the policy accepts that algorithm, else
///    [`DigestError::Mismatch`] naming the first that does not (in field
///    order); a sender that emits a wrong digest is never trusted on the
///    strength of another one;
/// 3. members with unrecognised keys (`md5`, `id-sha-256`, …) are ignored.
///
/// The default accepts SHA-256 and SHA-512.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DigestPolicy {
    accepted: u8,
}

impl DigestPolicy {
    /// Accepts every algorithm this crate implements.
    pub const ANY: DigestPolicy = DigestPolicy::new(&DigestAlgorithm::ALL);

    /// Accepts the listed algorithms. An empty list accepts nothing, so
    /// every verification fails with [`DigestError::NoAcceptableAlgorithm`].
    pub const fn new(algorithms: &[DigestAlgorithm]) -> Self {
        let mut accepted = 0;
        let mut i = 0;
        while i < algorithms.len() {
            accepted |= bit(algorithms[i]);
            i += 1;
        }
        DigestPolicy { accepted }
    }

    /// Accepts only `algorithm`.
    pub const fn only(algorithm: DigestAlgorithm) -> Self {
        DigestPolicy {
            accepted: bit(algorithm),
        }
    }

    /// Whether `algorithm` satisfies this policy.
    pub const fn accepts(&self, algorithm: DigestAlgorithm) -> bool {
        self.accepted & bit(algorithm) != 0
    }
}

impl Default for DigestPolicy {
    fn default() -> Self {
        DigestPolicy::ANY
    }
}

const fn bit(algorithm: DigestAlgorithm) -> u8 {
    match algorithm {
        DigestAlgorithm::Sha256 => 1,
        DigestAlgorithm::Sha512 => 2,
    }
}

/// Proof that a `Content-Digest` matched a body: the algorithms checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDigest {
    /// At most one entry per algorithm (keys are unique), so inline.
    algorithms: SmallVec<[DigestAlgorithm; 2]>,
}

impl VerifiedDigest {
    /// Every algorithm that was checked and matched, in field order. At
    /// least one of them is accepted by the policy used.
    pub fn algorithms(&self) -> &[DigestAlgorithm] {
        &self.algorithms
    }

    /// Whether `algorithm` was checked and matched.
    pub fn contains(&self, algorithm: DigestAlgorithm) -> bool {
        self.algorithms.contains(&algorithm)
    }
}

/// Verifies `digest` against `body` under `policy` (see [`DigestPolicy`] for
/// the rule). Digests are compared in constant time.
///
/// ```
/// use adcp_sigbase::digest::{verify, ContentDigest, DigestAlgorithm, DigestError, DigestPolicy};
/// use adcp_sigbase::encoding::BinaryEncoding;
///
/// let field = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, md5=:AAAAAAAAAAAAAAAAAAAAAA==:";
/// let parsed = ContentDigest::parse(field, BinaryEncoding::Base64Padded)?;
/// let ok = verify(&parsed, br#"{"hello": "world"}"#, &DigestPolicy::default())?;
/// assert_eq!(ok.algorithms(), [DigestAlgorithm::Sha256]);
///
/// assert_eq!(
///     verify(&parsed, b"tampered", &DigestPolicy::default()),
///     Err(DigestError::Mismatch { algorithm: DigestAlgorithm::Sha256 }),
/// );
/// assert!(matches!(
///     verify(&parsed, b"", &DigestPolicy::only(DigestAlgorithm::Sha512)),
///     Err(DigestError::NoAcceptableAlgorithm { .. }),
/// ));
/// # Ok::<(), DigestError>(())
/// ```
pub fn verify(digest: &ContentDigest, body: &[u8], policy: &DigestPolicy) -> Result<VerifiedDigest, DigestError> {
    let members = digest.members();
    if !members
        .iter()
        .any(|m| m.algorithm().is_some_and(|alg| policy.accepts(alg)))
    {
        return Err(DigestError::NoAcceptableAlgorithm {
            present: members.iter().map(|m| m.key().to_owned()).collect(),
        });
    }
    let mut algorithms = SmallVec::new();
    for member in members {
        let Some(algorithm) = member.algorithm() else { continue };
        if !algorithm.matches(body, member.value()) {
            return Err(DigestError::Mismatch { algorithm });
        }
        algorithms.push(algorithm);
    }
    Ok(VerifiedDigest { algorithms })
}
