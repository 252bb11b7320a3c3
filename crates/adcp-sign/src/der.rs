//! Converting ASN.1 DER ECDSA signatures (what KMS and HSM APIs return) to
//! the RFC 9421 `r || s` form.

use crate::SignerError;

/// Converts a DER `ECDSA-Sig-Value` over P-256 into the 64-byte `r || s`
/// form RFC 9421 §3.3.4 requires. For [`Signer`](crate::Signer)
/// implementations over KMS / HSM APIs (AWS KMS `ECDSA_SHA_256`, Google
/// Cloud KMS `EC_SIGN_P256_SHA256`, PKCS#11 with DER output) that return
/// DER: a DER signature put on the wire is rejected by every verifier.
///
/// ```
/// // r = 1, s = 2
/// let der = [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02];
/// let raw = adcp_sign::p256_signature_from_der(&der)?;
/// assert_eq!(raw[31], 1);
/// assert_eq!(raw[63], 2);
/// assert!(adcp_sign::p256_signature_from_der(&raw).is_err());
/// # Ok::<(), adcp_sign::SignerError>(())
/// ```
///
/// # Errors
///
/// [`SignerError::failed`] if `der` is not a DER signature with `r` and
/// `s` in range.
pub fn p256_signature_from_der(der: &[u8]) -> Result<[u8; 64], SignerError> {
    let signature = p256::ecdsa::Signature::from_der(der).map_err(|_| SignerError::failed(DerError))?;
    let bytes = signature.to_bytes();
    let mut out = [0_u8; 64];
    out.copy_from_slice(&bytes);
    Ok(out)
}

#[derive(Debug)]
struct DerError;

impl core::fmt::Display for DerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("not a DER-encoded P-256 ECDSA signature")
    }
}

impl std::error::Error for DerError {}
