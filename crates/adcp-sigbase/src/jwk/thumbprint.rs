//! RFC 7638 JWK thumbprints (SHA-256).

use sha2::{Digest as _, Sha256};

use super::key::PublicKey;
use super::{b64, Jwk};

impl Jwk {
    /// The RFC 7638 JWK thumbprint: SHA-256 over the required members in
    /// lexicographic order with no whitespace
    /// (`{"crv":"Ed25519","kty":"OKP","x":"…"}` per RFC 8037 §2,
    /// `{"crv":"P-256","kty":"EC","x":"…","y":"…"}` per RFC 7638 §3.2),
    /// base64url without padding.
    ///
    /// `kid`, `alg`, `use`, `key_ops`, `d` and extension members do not
    /// affect it: the public key alone does.
    ///
    /// ```
    /// use adcp_sigbase::jwk::Jwk;
    ///
    /// // RFC 8037 Appendix A.3.
    /// let jwk = Jwk::parse(br#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#)?;
    /// assert_eq!(jwk.thumbprint(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    /// # Ok::<(), adcp_sigbase::jwk::JwkError>(())
    /// ```
    #[must_use]
    pub fn thumbprint(&self) -> String {
        b64::encode(&self.thumbprint_sha256())
    }

    /// The RFC 7638 SHA-256 thumbprint as bytes (see [`Jwk::thumbprint`]).
    #[must_use]
    pub fn thumbprint_sha256(&self) -> [u8; 32] {
        Sha256::digest(self.thumbprint_input().as_bytes()).into()
    }

    /// The RFC 7638 §3 hash input: the required members, sorted, no
    /// whitespace. Base64url values need no JSON escaping.
    fn thumbprint_input(&self) -> String {
        match &self.public {
            PublicKey::Ed25519 { x } => format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, b64::encode(x)),
            PublicKey::P256 { x, y } => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                b64::encode(x),
                b64::encode(y)
            ),
        }
    }
}
