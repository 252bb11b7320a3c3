//! [`RandomSource`]: where nonces and idempotency keys come from.

use core::fmt;

/// A cryptographically secure random generator. Injected so tests can be
/// deterministic; production code uses [`OsRandom`], the default
/// everywhere.
///
/// An implementation must be a CSPRNG: nonces and idempotency keys are
/// security tokens (a predictable idempotency key lets an attacker
/// pre-seed a receiver's dedup cache and suppress a later event).
pub trait RandomSource: Send + Sync {
    /// Fills `dest` with random bytes.
    ///
    /// # Errors
    ///
    /// [`RandomnessUnavailable`] if the generator fails; `dest` must then
    /// not be used.
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable>;
}

/// The operating system's CSPRNG: `getrandom(2)` on Linux (through
/// `rand_core::OsRng`), the platform equivalent elsewhere.
///
/// It keeps no state in the process, so a forked child can never repeat
/// its parent's nonces, and it costs one system call per draw (about
/// 300 ns for a 16-byte nonce, cheaper than a user-space DRBG call through
/// AWS-LC here; see `docs/signing.md`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
        rand_core::RngCore::try_fill_bytes(&mut rand_core::OsRng, dest).map_err(|_| RandomnessUnavailable)
    }
}

impl<R: RandomSource + ?Sized> RandomSource for &R {
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
        (**self).fill(dest)
    }
}

impl<R: RandomSource + ?Sized> RandomSource for std::sync::Arc<R> {
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
        (**self).fill(dest)
    }
}

/// The random generator failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomnessUnavailable;

impl fmt::Display for RandomnessUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("random generator unavailable")
    }
}

impl std::error::Error for RandomnessUnavailable {}

impl From<RandomnessUnavailable> for crate::SignError {
    fn from(_: RandomnessUnavailable) -> Self {
        Self::RandomnessUnavailable
    }
}
