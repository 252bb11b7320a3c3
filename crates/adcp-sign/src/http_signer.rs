//! [`HttpSigner`]: signs requests and webhooks under an AdCP profile.

use adcp_sigbase::crypto::Algorithm;
use adcp_sigbase::digest::DigestAlgorithm;
use adcp_sigbase::encoding::BinaryEncoding;

use crate::base::{BaseFields, WrittenBase};
use crate::key_id::check_key_id;
use crate::request::{check_content_type, check_method};
use crate::{
    Clock, KeyPurpose, Nonce, OsRandom, RandomSource, SignError, SignOptions, SignedRequest, Signer, SigningProfile,
    SystemClock, UnsignedRequest, WebhookEvent,
};

/// The algorithms the AdCP profiles allow.
pub(crate) const ALLOWED: [Algorithm; 2] = [Algorithm::Ed25519, Algorithm::EcdsaP256Sha256];

/// The signature label AdCP verifiers process.
pub const LABEL: &str = "sig1";

/// The longest validity AdCP allows (`expires - created`), and the default.
pub const MAX_VALIDITY: i64 = 300;

/// Signs requests and webhooks under one [`SigningProfile`] with one
/// [`Signer`], a [`Clock`] and a [`RandomSource`].
///
/// Every signature has the AdCP shape and nothing else, so a caller cannot
/// get it wrong:
///
/// - label `sig1`; covered components `@method`, `@target-uri` (the AdCP
///   canonical form of the URL), `@authority`, and for a message with a
///   body `content-type` and `content-digest` (SHA-256), in that order;
/// - parameters `created` (the clock), `expires` (`created` plus the
///   validity: 300 seconds by default, never more), `nonce` (16 fresh
///   bytes from the CSPRNG, unpadded base64url), `keyid`, `alg`, `tag`,
///   in that order;
/// - binary values in the profile's encodings.
///
/// Refusals are typed ([`SignError`]) and happen before anything is
/// signed.
///
/// ```
/// use adcp_sign::{FixedClock, HttpSigner, SoftwareSigner, WebhookEvent};
/// use adcp_sigbase::crypto::Algorithm;
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-01")?;
/// let signer = HttpSigner::webhook(key)?.with_clock(FixedClock(1_776_520_800));
///
/// let event = WebhookEvent::new(&serde_json::json!({"task_id": "task_456", "status": "completed"}))?;
/// let first = signer.sign_webhook("https://buyer.example.com:443/hooks/./adcp", &event).await?;
/// assert_eq!(first.url(), "https://buyer.example.com/hooks/adcp");
/// assert!(first.header("Signature-Input").is_some_and(|v| v.starts_with(
///     r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;expires=1776521100;nonce=""#
/// )));
///
/// // A retry: same body bytes and idempotency key, fresh nonce.
/// let retry = signer.sign_webhook("https://buyer.example.com/hooks/adcp", &event).await?;
/// assert_eq!(retry.body(), first.body());
/// assert_ne!(retry.nonce(), first.nonce());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HttpSigner<S, C = SystemClock, R = OsRandom> {
    signer: S,
    profile: SigningProfile,
    clock: C,
    random: R,
    validity: i64,
}

impl<S: Signer> HttpSigner<S> {
    /// A signer for `profile` using the system clock and the operating
    /// system's CSPRNG.
    ///
    /// # Errors
    ///
    /// `key_id_invalid` or `alg_not_allowed` if the signer's `keyid` or
    /// algorithm cannot be used (checked again on every signature, since a
    /// [`Signer`] may change them); `key_purpose_invalid` for a request
    /// profile and a key published as the deprecated `webhook-signing`
    /// (request verifiers accept `request-signing` keys only).
    pub fn new(profile: SigningProfile, signer: S) -> Result<Self, SignError> {
        check_signer(&signer)?;
        if !profile.is_webhook() && signer.key_purpose() == Some(KeyPurpose::WebhookSigning) {
            return Err(SignError::KeyPurposeInvalid);
        }
        Ok(Self {
            signer,
            profile,
            clock: SystemClock,
            random: OsRandom,
            validity: MAX_VALIDITY,
        })
    }

    /// A signer for the webhook profile ([`SigningProfile::webhook_v1`]).
    ///
    /// # Errors
    ///
    /// As [`HttpSigner::new`].
    pub fn webhook(signer: S) -> Result<Self, SignError> {
        Self::new(SigningProfile::webhook_v1(), signer)
    }

    /// A signer for AdCP 3.2 requests ([`SigningProfile::request_v3_2`]).
    ///
    /// # Errors
    ///
    /// As [`HttpSigner::new`].
    pub fn request(signer: S) -> Result<Self, SignError> {
        Self::new(SigningProfile::request_v3_2(), signer)
    }
}

impl<S: Signer, C: Clock, R: RandomSource> HttpSigner<S, C, R> {
    /// The same signer reading `created` from `clock`.
    #[must_use]
    pub fn with_clock<C2: Clock>(self, clock: C2) -> HttpSigner<S, C2, R> {
        HttpSigner {
            signer: self.signer,
            profile: self.profile,
            clock,
            random: self.random,
            validity: self.validity,
        }
    }

    /// The same signer drawing nonces from `random` (a CSPRNG).
    #[must_use]
    pub fn with_random<R2: RandomSource>(self, random: R2) -> HttpSigner<S, C, R2> {
        HttpSigner {
            signer: self.signer,
            profile: self.profile,
            clock: self.clock,
            random,
            validity: self.validity,
        }
    }

    /// The same signer with `expires = created + seconds`.
    ///
    /// # Errors
    ///
    /// `validity_too_long` above 300 seconds; `validity_invalid` below 1.
    pub fn with_validity(mut self, seconds: i64) -> Result<Self, SignError> {
        check_window(0, seconds)?;
        self.validity = seconds;
        Ok(self)
    }

    /// The profile.
    #[must_use]
    pub fn profile(&self) -> &SigningProfile {
        &self.profile
    }

    /// The key backend.
    #[must_use]
    pub fn signer(&self) -> &S {
        &self.signer
    }

    /// Signs one delivery attempt of `event`: a `POST` of its body as
    /// `application/json` to `url`. Call it again for each retry: the body
    /// and idempotency key stay the same, the nonce and window are fresh.
    ///
    /// # Errors
    ///
    /// `profile_mismatch` unless the profile is the webhook profile; then
    /// as [`HttpSigner::sign`].
    pub async fn sign_webhook(&self, url: &str, event: &WebhookEvent) -> Result<SignedRequest, SignError> {
        if !self.profile.is_webhook() {
            return Err(SignError::ProfileMismatch);
        }
        self.sign(&UnsignedRequest::post(url, event.body())).await
    }

    /// Signs `request` with `created` from the clock and a fresh nonce.
    ///
    /// # Errors
    ///
    /// As [`HttpSigner::sign_with`].
    pub async fn sign(&self, request: &UnsignedRequest<'_>) -> Result<SignedRequest, SignError> {
        self.sign_with(request, &SignOptions::default()).await
    }

    /// Signs `request`, taking any parameter fixed in `options` instead of
    /// the clock or the random generator.
    ///
    /// # Errors
    ///
    /// Checked in this order, before anything is signed: `key_id_invalid`,
    /// `alg_not_allowed`, `method_invalid`, `body_required`,
    /// `content_type_invalid`, `target_uri_malformed`, `validity_invalid`,
    /// `validity_too_long`, `randomness_unavailable`. Then the signer's
    /// errors (`signer_unavailable`, `signer_failed`) and
    /// `signer_output_invalid` for output of the wrong length.
    pub async fn sign_with(
        &self,
        request: &UnsignedRequest<'_>,
        options: &SignOptions,
    ) -> Result<SignedRequest, SignError> {
        let prepared = self.prepare(request, options)?;
        let algorithm = prepared.algorithm;
        let signature = self.signer.sign(&prepared.base.bytes).await?;
        if signature.len() != algorithm.signature_len() {
            return Err(SignError::SignerOutputInvalid {
                algorithm,
                expected: algorithm.signature_len(),
                actual: signature.len(),
            });
        }
        Ok(prepared.finish(request, &signature, &self.profile))
    }

    /// Everything up to the signature: checks, canonical URL, window,
    /// nonce, digest and base.
    fn prepare(&self, request: &UnsignedRequest<'_>, options: &SignOptions) -> Result<Prepared, SignError> {
        let algorithm = check_signer(&self.signer)?;
        check_method(request.method())?;
        let body = request.body();
        if body.is_none() && self.profile.requires_body() {
            return Err(SignError::BodyRequired);
        }
        if body.is_some() {
            check_content_type(request.content_type())?;
        }
        let target = adcp_canon::canonicalize(request.url()).map_err(SignError::TargetUriMalformed)?;

        let created = options.created().unwrap_or_else(|| self.clock.now());
        let expires = options
            .expires()
            .unwrap_or_else(|| created.saturating_add(self.validity));
        check_window(created, expires)?;
        let nonce = match options.nonce() {
            Some(nonce) => nonce.clone(),
            None => Nonce::generate(&self.random)?,
        };
        let digest = body
            .filter(|_| self.profile.covers_digest())
            .map(|b| content_digest(b.as_bytes(), self.profile.digest_encoding()));

        let base = BaseFields {
            method: request.method(),
            target_uri: target.as_str(),
            authority: target.authority(),
            content_type: body.map(|_| request.content_type()),
            content_digest: digest.as_deref(),
            created,
            expires,
            nonce: nonce.as_str(),
            keyid: self.signer.key_id(),
            alg: algorithm.as_str(),
            tag: self.profile.tag(),
        }
        .write();
        Ok(Prepared {
            algorithm,
            url: target.into_string(),
            digest,
            created,
            expires,
            nonce,
            base,
        })
    }
}

impl<S: Signer, C, R> core::fmt::Debug for HttpSigner<S, C, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HttpSigner")
            .field("profile", &self.profile.name())
            .field("keyid", &self.signer.key_id())
            .field("algorithm", &self.signer.algorithm().as_str())
            .field("validity", &self.validity)
            .finish_non_exhaustive()
    }
}

/// A request ready for its signature.
struct Prepared {
    algorithm: Algorithm,
    url: String,
    digest: Option<String>,
    created: i64,
    expires: i64,
    nonce: Nonce,
    base: WrittenBase,
}

impl Prepared {
    fn finish(self, request: &UnsignedRequest<'_>, signature: &[u8], profile: &SigningProfile) -> SignedRequest {
        let mut headers = Vec::with_capacity(4);
        if request.body().is_some() {
            headers.push(("Content-Type", request.content_type().to_owned()));
        }
        if let Some(digest) = self.digest {
            headers.push(("Content-Digest", digest));
        }
        // The member is the label and the base's `@signature-params` value,
        // serialized once. The base is ASCII by construction.
        let params = String::from_utf8_lossy(self.base.params());
        let mut input = String::with_capacity(LABEL.len() + 1 + params.len());
        input.push_str(LABEL);
        input.push('=');
        input.push_str(&params);
        headers.push(("Signature-Input", input));
        let encoding = profile.signature_encoding();
        let mut value = String::with_capacity(LABEL.len() + 3 + encoding.encoded_len(signature.len()));
        value.push_str(LABEL);
        value.push_str("=:");
        encoding.encode_into(signature, &mut value);
        value.push(':');
        headers.push(("Signature", value));
        SignedRequest {
            method: request.method().to_owned(),
            url: self.url,
            headers,
            body: request.body().cloned(),
            created: self.created,
            expires: self.expires,
            nonce: self.nonce,
            base: self.base.bytes,
        }
    }
}

/// The `Content-Digest` value: `sha-256=:<digest>:` in `encoding`.
fn content_digest(body: &[u8], encoding: BinaryEncoding) -> String {
    let algorithm = DigestAlgorithm::Sha256;
    let digest = algorithm.compute(body);
    let key = algorithm.key();
    let mut value = String::with_capacity(key.len() + 3 + encoding.encoded_len(digest.len()));
    value.push_str(key);
    value.push_str("=:");
    encoding.encode_into(&digest, &mut value);
    value.push(':');
    value
}

/// Checks the signer's `keyid` and algorithm; returns the algorithm.
fn check_signer<S: Signer + ?Sized>(signer: &S) -> Result<Algorithm, SignError> {
    check_key_id(signer.key_id())?;
    let algorithm = signer.algorithm();
    if !ALLOWED.contains(&algorithm) {
        return Err(SignError::AlgorithmNotAllowed { algorithm });
    }
    Ok(algorithm)
}

/// `0 <= created < expires <= created + 300`.
fn check_window(created: i64, expires: i64) -> Result<(), SignError> {
    if created < 0 || expires <= created {
        return Err(SignError::ValidityInvalid { created, expires });
    }
    let validity = expires.saturating_sub(created);
    if validity > MAX_VALIDITY {
        return Err(SignError::ValidityTooLong { validity });
    }
    Ok(())
}
