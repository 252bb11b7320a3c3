//! Between [`Jwk`] and the [`crypto`](crate::crypto) key types, and the
//! explicit opt-in for the private member of conformance test keys.

use subtle::ConstantTimeEq as _;

use crate::crypto::{Algorithm, SigningKey, VerifyingKey};

use super::key::{is_standard, PrivateKey, PublicKey};
use super::parse::{check_private, signing_key, Curve};
use super::{b64, secret, Jwk, JwkError, JwkMember};

impl Jwk {
    /// The public JWK of a verifying key: `kty`, `crv`, `x` (and `y`), `kid`,
    /// `alg` (`EdDSA` or `ES256`), `use` `"sig"`, `key_ops` `["verify"]`.
    /// Add profile members with [`Jwk::with_member`].
    ///
    /// # Errors
    ///
    /// [`JwkError::Unsupported`] (`kty`) for an HMAC secret, which has no
    /// `OKP`/`EC` form.
    pub fn from_verifying_key(key: &VerifyingKey, kid: impl Into<String>) -> Result<Self, JwkError> {
        let unsupported = JwkError::Unsupported { member: JwkMember::Kty };
        let bytes = key.public_key_bytes().ok_or(unsupported)?;
        let public = match key.algorithm() {
            Algorithm::Ed25519 => PublicKey::Ed25519 {
                x: bytes.try_into().map_err(|_| unsupported)?,
            },
            Algorithm::EcdsaP256Sha256 => {
                // The uncompressed SEC1 point: 0x04 || x || y.
                let (x, y) = bytes
                    .get(1..)
                    .and_then(|xy| xy.split_at_checked(b64::COMPONENT_LEN))
                    .ok_or(unsupported)?;
                PublicKey::P256 {
                    x: x.try_into().map_err(|_| unsupported)?,
                    y: y.try_into().map_err(|_| unsupported)?,
                }
            }
            Algorithm::HmacSha256 => return Err(unsupported),
        };
        Ok(Self {
            public,
            verifying_key: key.clone(),
            kid: Some(kid.into()),
            alg: Some(public.algorithm().jose_name().to_owned()),
            key_use: Some("sig".to_owned()),
            key_ops: Some(vec!["verify".to_owned()]),
            private: None,
            members: Vec::new(),
        })
    }

    /// The public JWK of a signing key, as [`Jwk::from_verifying_key`]: no
    /// private key, `alg` `EdDSA` or `ES256`, `use` `"sig"`, `key_ops`
    /// `["verify"]`; this is what goes into a published JWK Set.
    ///
    /// ```
    /// use adcp_sigbase::crypto::SigningKey;
    /// use adcp_sigbase::jwk::Jwk;
    ///
    /// let signer = SigningKey::generate_p256()?;
    /// let jwk = Jwk::from_signing_key(&signer, "k1")?.with_member("adcp_use", "webhook-signing".into())?;
    /// assert_eq!(jwk.alg(), Some("ES256"));
    /// assert_eq!(jwk.to_json()["adcp_use"], "webhook-signing");
    /// assert!(!jwk.has_private_key());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`JwkError::Unsupported`] (`kty`) for an HMAC secret.
    pub fn from_signing_key(key: &SigningKey, kid: impl Into<String>) -> Result<Self, JwkError> {
        Self::from_verifying_key(&key.verifying_key(), kid)
    }

    /// As [`Jwk::from_signing_key`], plus the private key as `d`: the JWK of
    /// a private-key file. [`Jwk::to_json`] includes `d`;
    /// [`Jwk::to_public_json`] gives exactly the JSON of
    /// [`Jwk::from_signing_key`].
    ///
    /// # Errors
    ///
    /// [`JwkError::Unsupported`] (`kty`) for an HMAC secret;
    /// [`JwkError::Crypto`] if the private key cannot be exported.
    pub fn with_private(key: &SigningKey, kid: impl Into<String>) -> Result<Self, JwkError> {
        let mut jwk = Self::from_signing_key(key, kid)?;
        let d = secret::export(key)?;
        check_private(&jwk.verifying_key, Curve::of(&jwk.public), &d)?;
        jwk.private = Some(PrivateKey {
            d,
            in_d: true,
            test_member: None,
        });
        Ok(jwk)
    }

    /// The signing key of a JWK that holds a private key.
    ///
    /// # Errors
    ///
    /// [`JwkError::MissingPrivateKey`] for a public JWK.
    pub fn signing_key(&self) -> Result<SigningKey, JwkError> {
        let private = self.private.as_ref().ok_or(JwkError::MissingPrivateKey)?;
        signing_key(Curve::of(&self.public), &private.d)
    }

    /// **For conformance test keys only.** Adopts the private key from the
    /// non-standard member `name`, which must hold the base64url `d` of this
    /// key. The AdCP conformance key files publish their private keys this
    /// way (`_private_d_for_test_only`) so that SDKs can sign with them; a
    /// production key never carries such a member, and parsing never reads
    /// it on its own: only this explicit call does.
    ///
    /// The member stays among the extension members ([`Jwk::to_json`] still
    /// reproduces the input); [`Jwk::to_public_json`] drops it. If the JWK
    /// also has a `d`, the member must hold the same key and `d` is kept.
    ///
    /// ```
    /// use adcp_sigbase::jwk::Jwk;
    ///
    /// // RFC 8037 Appendix A.1, with the seed in a test member.
    /// let jwk = Jwk::parse(br#"{"kty":"OKP","crv":"Ed25519",
    ///     "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
    ///     "_private_d_for_test_only":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}"#)?;
    /// assert!(!jwk.has_private_key());
    /// let jwk = jwk.with_test_private_member("_private_d_for_test_only")?;
    /// let signature = jwk.signing_key()?.sign(b"message")?;
    /// jwk.verifying_key().verify(jwk.algorithm(), b"message", signature.as_bytes())?;
    /// assert!(jwk.to_public_json().get("_private_d_for_test_only").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`JwkError::ReservedMember`] if `name` is a standard member (use `d`
    /// itself for standard private JWKs); for [`JwkMember::TestPrivate`]:
    /// [`JwkError::MissingMember`], [`JwkError::InvalidMember`] (not a
    /// string), [`JwkError::InvalidBase64`], [`JwkError::InvalidLength`];
    /// [`JwkError::InvalidPrivateKey`]; [`JwkError::PrivateKeyMismatch`] if
    /// it is not the private key of this JWK (or differs from its `d`).
    pub fn with_test_private_member(mut self, name: &str) -> Result<Self, JwkError> {
        if is_standard(name) {
            return Err(JwkError::ReservedMember);
        }
        let member = JwkMember::TestPrivate;
        let text = self
            .member(name)
            .ok_or(JwkError::MissingMember { member })?
            .as_str()
            .ok_or(JwkError::InvalidMember { member })?;
        let d = b64::decode_secret(member, text)?;
        check_private(&self.verifying_key, Curve::of(&self.public), &d)?;
        match &mut self.private {
            Some(existing) => {
                if !bool::from(existing.d.expose_secret().ct_eq(d.expose_secret())) {
                    return Err(JwkError::PrivateKeyMismatch);
                }
                existing.test_member = Some(name.to_owned());
            }
            None => {
                self.private = Some(PrivateKey {
                    d,
                    in_d: false,
                    test_member: Some(name.to_owned()),
                });
            }
        }
        Ok(self)
    }
}
