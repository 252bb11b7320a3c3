//! [`Signer`]: the one small trait every key backend implements (the
//! built-in [`SoftwareSigner`](crate::SoftwareSigner), a KMS, an HSM).

use core::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use adcp_sigbase::crypto::Algorithm;

use crate::KeyPurpose;

/// Produces RFC 9421 signatures with one key.
///
/// Deliberately as small as RustCrypto's `signature::Signer`: the key's
/// `keyid` and algorithm (both go into `Signature-Input`, so they are known
/// before signing) and one asynchronous operation, so the key can live in a
/// KMS or an HSM. Everything else (canonicalization, the base, the digest,
/// the encodings, the checks) is done once by
/// [`HttpSigner`](crate::HttpSigner), so a backend cannot get it wrong.
///
/// `sign` returns the raw signature in the RFC 9421 form of the algorithm:
/// 64 bytes for `ed25519`, 64 bytes `r || s` for `ecdsa-p256-sha256`.
/// KMS APIs usually return ECDSA signatures as ASN.1 DER; convert them with
/// [`p256_signature_from_der`](crate::p256_signature_from_der). Output of
/// any other length is refused with `signer_output_invalid`.
///
/// ```
/// use adcp_sign::{Signer, SignerError};
/// use adcp_sigbase::crypto::Algorithm;
///
/// /// A signer whose key lives elsewhere (here: a stand-in).
/// struct Remote {
///     kid: String,
/// }
///
/// impl Signer for Remote {
///     fn key_id(&self) -> &str {
///         &self.kid
///     }
///     fn algorithm(&self) -> Algorithm {
///         Algorithm::EcdsaP256Sha256
///     }
///     async fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, SignerError> {
///         // let der = kms.sign(key_arn, message, "ECDSA_SHA_256").await.map_err(SignerError::unavailable)?;
///         // Ok(adcp_sign::p256_signature_from_der(&der)?.to_vec())
///         Err(SignerError::unavailable("KMS not reachable"))
///     }
/// }
/// ```
pub trait Signer: Send + Sync {
    /// The `keyid` signature parameter: the key's `kid` in the published
    /// JWKS.
    fn key_id(&self) -> &str;

    /// The signature algorithm (`ed25519` or `ecdsa-p256-sha256` for the
    /// AdCP profiles).
    fn algorithm(&self) -> Algorithm;

    /// The `adcp_use` the key is published with, if the backend knows it
    /// (the default: it does not). A key published as the deprecated
    /// `webhook-signing` cannot sign requests, and
    /// [`HttpSigner::new`](crate::HttpSigner::new) refuses the pairing.
    fn key_purpose(&self) -> Option<KeyPurpose> {
        None
    }

    /// Signs `message` (the RFC 9421 signature base). Implementations
    /// write `async fn sign`; the future must be `Send` so that senders can
    /// run on a multi-threaded runtime.
    ///
    /// # Errors
    ///
    /// [`SignerError`]: [`SignerError::unavailable`] when trying again
    /// later may work, [`SignerError::failed`] otherwise.
    fn sign(&self, message: &[u8]) -> impl Future<Output = Result<Vec<u8>, SignerError>> + Send;
}

impl<S: Signer> Signer for Arc<S> {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> Algorithm {
        (**self).algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        (**self).key_purpose()
    }

    fn sign(&self, message: &[u8]) -> impl Future<Output = Result<Vec<u8>, SignerError>> + Send {
        (**self).sign(message)
    }
}

impl<S: Signer> Signer for &S {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> Algorithm {
        (**self).algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        (**self).key_purpose()
    }

    fn sign(&self, message: &[u8]) -> impl Future<Output = Result<Vec<u8>, SignerError>> + Send {
        (**self).sign(message)
    }
}

/// The future [`BoxSigner`] erases a backend's `sign` to.
type BoxedSignature<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, SignerError>> + Send + 'a>>;

/// The object-safe face of [`Signer`], implemented for every signer.
trait ErasedSigner: Send + Sync {
    fn key_id(&self) -> &str;
    fn algorithm(&self) -> Algorithm;
    fn key_purpose(&self) -> Option<KeyPurpose>;
    fn sign_boxed<'a>(&'a self, message: &'a [u8]) -> BoxedSignature<'a>;
}

impl<S: Signer> ErasedSigner for S {
    fn key_id(&self) -> &str {
        Signer::key_id(self)
    }

    fn algorithm(&self) -> Algorithm {
        Signer::algorithm(self)
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        Signer::key_purpose(self)
    }

    fn sign_boxed<'a>(&'a self, message: &'a [u8]) -> BoxedSignature<'a> {
        Box::pin(Signer::sign(self, message))
    }
}

/// A [`Signer`] whose backend is chosen at run time.
///
/// [`Signer`] is a native `async fn` trait, so `dyn Signer` does not exist:
/// static dispatch keeps the hot path free of a boxed future per
/// signature. Where the backend is a run-time choice (a software key in
/// development, a KMS in production), wrap it in a `BoxSigner`, which pays
/// that one allocation per signature.
///
/// ```
/// use adcp_sign::{Algorithm, BoxSigner, HttpSigner, Signer, SigningProfile, SoftwareSigner};
///
/// # fn main() -> Result<(), adcp_sign::SignError> {
/// let key = SoftwareSigner::generate(Algorithm::Ed25519, "kid-1")?;
/// let signer = BoxSigner::new(key);
/// assert_eq!(signer.key_id(), "kid-1");
/// let _http = HttpSigner::new(SigningProfile::webhook_v1(), signer)?;
/// # Ok(())
/// # }
/// ```
pub struct BoxSigner(Box<dyn ErasedSigner>);

impl BoxSigner {
    /// Erases `signer`'s type.
    pub fn new<S: Signer + 'static>(signer: S) -> Self {
        Self(Box::new(signer))
    }
}

impl fmt::Debug for BoxSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxSigner")
            .field("key_id", &self.0.key_id())
            .field("algorithm", &self.0.algorithm().as_str())
            .finish_non_exhaustive()
    }
}

impl Signer for BoxSigner {
    fn key_id(&self) -> &str {
        self.0.key_id()
    }

    fn algorithm(&self) -> Algorithm {
        self.0.algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        self.0.key_purpose()
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        self.0.sign_boxed(message).await
    }
}

/// Whether a [`SignerError`] is worth retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignerErrorKind {
    /// The backend could not be reached or is throttling: retry later
    /// (`signer_unavailable`).
    Unavailable,
    /// The backend refused or failed (key disabled, permission denied,
    /// malformed output): retrying will not help (`signer_failed`).
    Failed,
}

/// A [`Signer`] backend failure, with its cause.
#[derive(Debug)]
pub struct SignerError {
    kind: SignerErrorKind,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl SignerError {
    /// A transient failure (network, throttling): retrying later may work.
    pub fn unavailable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            kind: SignerErrorKind::Unavailable,
            source: source.into(),
        }
    }

    /// A permanent failure (key disabled, access denied, bad output).
    pub fn failed(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            kind: SignerErrorKind::Failed,
            source: source.into(),
        }
    }

    /// Whether the failure is transient.
    #[must_use]
    pub fn kind(&self) -> SignerErrorKind {
        self.kind
    }
}

impl fmt::Display for SignerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            SignerErrorKind::Unavailable => write!(f, "signer unavailable: {}", self.source),
            SignerErrorKind::Failed => write!(f, "signer failed: {}", self.source),
        }
    }
}

impl std::error::Error for SignerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: failing loudly is the point

    use super::*;
    use crate::SoftwareSigner;

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn a_boxed_signer_is_its_backend() {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "kid-1").unwrap();
        let direct = block_on(key.sign(b"base")).unwrap();
        let purpose = Signer::key_purpose(&key);
        let boxed = BoxSigner::new(key);
        assert_eq!(Signer::key_id(&boxed), "kid-1");
        assert_eq!(Signer::algorithm(&boxed), Algorithm::Ed25519);
        assert_eq!(Signer::key_purpose(&boxed), purpose);
        // Ed25519 is deterministic: the same key signs the same bytes alike.
        assert_eq!(block_on(boxed.sign(b"base")).unwrap(), direct);
    }

    #[test]
    fn a_boxed_signer_reports_its_backends_failure() {
        struct Down;
        impl Signer for Down {
            fn key_id(&self) -> &str {
                "kms-1"
            }
            fn algorithm(&self) -> Algorithm {
                Algorithm::EcdsaP256Sha256
            }
            async fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, SignerError> {
                Err(SignerError::unavailable("KMS not reachable"))
            }
        }
        let error = block_on(BoxSigner::new(Down).sign(b"base")).unwrap_err();
        assert_eq!(error.kind(), SignerErrorKind::Unavailable);
    }
}
