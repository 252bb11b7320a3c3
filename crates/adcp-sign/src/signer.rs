//! [`Signer`]: the one small trait every key backend implements (the
//! built-in [`SoftwareSigner`](crate::SoftwareSigner), a KMS, an HSM).

use core::fmt;
use std::sync::Arc;

use adcp_sigbase::crypto::Algorithm;
use async_trait::async_trait;

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
/// #[async_trait::async_trait]
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
#[async_trait]
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

    /// Signs `message` (the RFC 9421 signature base).
    ///
    /// # Errors
    ///
    /// [`SignerError`]: [`SignerError::unavailable`] when trying again
    /// later may work, [`SignerError::failed`] otherwise.
    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError>;
}

#[async_trait]
impl<S: Signer + ?Sized> Signer for Arc<S> {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> Algorithm {
        (**self).algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        (**self).key_purpose()
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        (**self).sign(message).await
    }
}

#[async_trait]
impl<S: Signer + ?Sized> Signer for Box<S> {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> Algorithm {
        (**self).algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        (**self).key_purpose()
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        (**self).sign(message).await
    }
}

#[async_trait]
impl<S: Signer + ?Sized> Signer for &S {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> Algorithm {
        (**self).algorithm()
    }

    fn key_purpose(&self) -> Option<KeyPurpose> {
        (**self).key_purpose()
    }

    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignerError> {
        (**self).sign(message).await
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
