//! [`SignError`]: every way signing can refuse, each with a stable
//! identifier ([`SignError::code`]).

use core::fmt;

use adcp_canon::CanonError;
use adcp_sigbase::crypto::Algorithm;
use adcp_strict_json::{DuplicateKeys, StrictJsonError};

use crate::signer::{SignerError, SignerErrorKind};

/// Why a signature, a body, a key or an idempotency key was refused.
///
/// Misuse is an error, never a panic: a validity window longer than 300
/// seconds, a key whose algorithm is not the requested one, a public-only
/// JWK, a short HMAC secret, duplicate-key JSON input. [`SignError::code`]
/// is a stable identifier to dispatch on; the normative one is
/// `duplicate_key_input` (AdCP `security.mdx`, "Duplicate object keys"),
/// the others are this crate's own. `Display` never prints key material,
/// and duplicate key names are sanitized (webhook checklist step 14b).
#[non_exhaustive]
#[derive(Debug)]
pub enum SignError {
    /// Raw JSON input repeats an object member name at some depth (inside
    /// arrays included). The names are sanitized per step 14b (at most
    /// four, each truncated, non-printable names replaced).
    DuplicateKeyInput(DuplicateKeys),
    /// Raw input (or a serializer's output) is not one strict RFC 8259
    /// JSON value within the limits: syntax, nesting, length.
    InvalidJsonInput(StrictJsonError),
    /// The payload could not be serialized to JSON (a `Serialize` error,
    /// or a webhook payload that is not a JSON object).
    PayloadNotSerializable {
        /// The serializer's message.
        reason: String,
    },
    /// A webhook payload given as raw bytes is not a JSON object.
    PayloadNotObject,
    /// The profile requires a body (webhooks always carry one).
    BodyRequired,
    /// A webhook was signed with a signer built for a request profile (or
    /// the reverse): the `tag` would be wrong and every verifier would
    /// reject it.
    ProfileMismatch,
    /// `expires - created` is more than 300 seconds (the AdCP maximum).
    ValidityTooLong {
        /// The requested validity in seconds.
        validity: i64,
    },
    /// The window is not a window: `expires <= created`, or `created`
    /// is negative.
    ValidityInvalid {
        /// `created`.
        created: i64,
        /// `expires`.
        expires: i64,
    },
    /// A legacy HMAC timestamp is negative.
    TimestampInvalid,
    /// The nonce is not unpadded base64url of 16 to 64 bytes.
    NonceInvalid {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The URL cannot be canonicalized (AdCP URL canonicalization).
    TargetUriMalformed(CanonError),
    /// The method is not an upper-case HTTP token.
    MethodInvalid,
    /// The content type is empty, has control or non-ASCII characters,
    /// surrounding whitespace, or a top-level comma (a verifier rejects
    /// multi-valued `Content-Type`).
    ContentTypeInvalid,
    /// A JWK has no `kid`.
    KeyIdMissing,
    /// The key ID is empty, longer than 256 bytes, or has characters an
    /// RFC 8941 string cannot carry (only printable ASCII can).
    KeyIdInvalid,
    /// The key's algorithm is not one the AdCP profiles allow
    /// (`ed25519`, `ecdsa-p256-sha256`): an HMAC key cannot sign RFC 9421
    /// AdCP messages.
    AlgorithmNotAllowed {
        /// The key's algorithm.
        algorithm: Algorithm,
    },
    /// The key is not for the algorithm that was asked for, or a JWK's
    /// `alg` contradicts its `kty` / `crv`.
    KeyAlgorithmMismatch {
        /// The algorithm that was asked for (`None`: the JWK's own `alg`).
        requested: Option<Algorithm>,
        /// The key's algorithm (`None`: not known, the JWK was rejected).
        key: Option<Algorithm>,
    },
    /// A public-only JWK (no `d`) was given where a private key is needed.
    PrivateKeyMissing,
    /// The JWK's `adcp_use` is not a purpose this crate signs for
    /// (`request-signing`, or the deprecated `webhook-signing`), or a
    /// `webhook-signing` key was paired with a request profile.
    KeyPurposeInvalid,
    /// The key material is malformed or unsupported.
    KeyInvalid {
        /// Why (never contains key material).
        reason: String,
    },
    /// An HMAC secret is shorter than 32 bytes.
    HmacSecretTooShort {
        /// The minimum length in bytes.
        minimum: usize,
        /// The supplied length in bytes.
        actual: usize,
    },
    /// An HMAC secret is one repeated byte (`"aaaa…"`, all zeros).
    HmacSecretWeak,
    /// A webhook payload has no string `idempotency_key` member.
    IdempotencyKeyMissing,
    /// An idempotency key does not match `^[A-Za-z0-9_.:-]{16,255}$` or is
    /// one repeated character.
    IdempotencyKeyInvalid,
    /// A [`Signer`](crate::Signer) returned bytes of the wrong length for
    /// its algorithm (for example a DER ECDSA signature from a KMS; see
    /// [`p256_signature_from_der`](crate::p256_signature_from_der)).
    SignerOutputInvalid {
        /// The signer's algorithm.
        algorithm: Algorithm,
        /// The required length.
        expected: usize,
        /// The length returned.
        actual: usize,
    },
    /// The [`Signer`](crate::Signer) failed (a KMS or HSM error).
    Signer(SignerError),
    /// The operating system's random generator failed.
    RandomnessUnavailable,
    /// [`SignedRequest::to_http`](crate::SignedRequest::to_http): the
    /// `http` crate cannot represent the request (a URL with raw
    /// characters `http::Uri` refuses).
    HttpRequestInvalid {
        /// The `http` crate's message.
        reason: String,
    },
}

impl SignError {
    /// The stable identifier of the failure class, to dispatch on.
    ///
    /// `duplicate_key_input` is the normative AdCP signer-side identifier;
    /// the others are: `invalid_json_input`, `payload_not_serializable`,
    /// `payload_not_object`, `body_required`, `profile_mismatch`,
    /// `validity_too_long`, `validity_invalid`, `timestamp_invalid`,
    /// `nonce_invalid`, `target_uri_malformed`, `method_invalid`,
    /// `content_type_invalid`, `key_id_missing`, `key_id_invalid`,
    /// `alg_not_allowed`, `key_algorithm_mismatch`, `private_key_missing`,
    /// `key_purpose_invalid`, `key_invalid`, `hmac_secret_too_short`,
    /// `hmac_secret_weak`, `idempotency_key_missing`,
    /// `idempotency_key_invalid`, `signer_output_invalid`,
    /// `signer_unavailable`, `signer_failed`, `randomness_unavailable`,
    /// `http_request_invalid`.
    ///
    /// ```
    /// use adcp_sign::Body;
    ///
    /// let err = Body::from_json_bytes(r#"{"status":"approved","status":"rejected"}"#).unwrap_err();
    /// assert_eq!(err.code(), "duplicate_key_input");
    /// ```
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::DuplicateKeyInput(_) => adcp_strict_json::DUPLICATE_KEY_INPUT,
            Self::InvalidJsonInput(_) => "invalid_json_input",
            Self::PayloadNotSerializable { .. } => "payload_not_serializable",
            Self::PayloadNotObject => "payload_not_object",
            Self::BodyRequired => "body_required",
            Self::ProfileMismatch => "profile_mismatch",
            Self::ValidityTooLong { .. } => "validity_too_long",
            Self::ValidityInvalid { .. } => "validity_invalid",
            Self::TimestampInvalid => "timestamp_invalid",
            Self::NonceInvalid { .. } => "nonce_invalid",
            Self::TargetUriMalformed(_) => "target_uri_malformed",
            Self::MethodInvalid => "method_invalid",
            Self::ContentTypeInvalid => "content_type_invalid",
            Self::KeyIdMissing => "key_id_missing",
            Self::KeyIdInvalid => "key_id_invalid",
            Self::AlgorithmNotAllowed { .. } => "alg_not_allowed",
            Self::KeyAlgorithmMismatch { .. } => "key_algorithm_mismatch",
            Self::PrivateKeyMissing => "private_key_missing",
            Self::KeyPurposeInvalid => "key_purpose_invalid",
            Self::KeyInvalid { .. } => "key_invalid",
            Self::HmacSecretTooShort { .. } => "hmac_secret_too_short",
            Self::HmacSecretWeak => "hmac_secret_weak",
            Self::IdempotencyKeyMissing => "idempotency_key_missing",
            Self::IdempotencyKeyInvalid => "idempotency_key_invalid",
            Self::SignerOutputInvalid { .. } => "signer_output_invalid",
            Self::Signer(e) => match e.kind() {
                SignerErrorKind::Unavailable => "signer_unavailable",
                SignerErrorKind::Failed => "signer_failed",
            },
            Self::RandomnessUnavailable => "randomness_unavailable",
            Self::HttpRequestInvalid { .. } => "http_request_invalid",
        }
    }

    /// Whether trying again later may succeed (a KMS that is unavailable,
    /// the random generator). Every other error needs a change of input or
    /// configuration; retrying it identically fails the same way.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Signer(e) => e.kind() == SignerErrorKind::Unavailable,
            Self::RandomnessUnavailable => true,
            _ => false,
        }
    }

    /// The sanitized duplicate-key report of a `duplicate_key_input` error.
    #[must_use]
    pub fn duplicate_keys(&self) -> Option<&DuplicateKeys> {
        match self {
            Self::DuplicateKeyInput(d) => Some(d),
            _ => None,
        }
    }

    /// Maps a strict-JSON rejection: duplicates become
    /// `duplicate_key_input`, anything else `invalid_json_input`.
    pub(crate) fn from_strict_json(error: StrictJsonError) -> Self {
        match error {
            StrictJsonError::DuplicateKeys(d) => Self::DuplicateKeyInput(d),
            other => Self::InvalidJsonInput(other),
        }
    }
}

fn algorithm_name(algorithm: Option<Algorithm>, unknown: &'static str) -> &'static str {
    algorithm.map_or(unknown, Algorithm::as_str)
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self.code();
        match self {
            Self::DuplicateKeyInput(d) => write!(f, "{code}: {d}"),
            Self::InvalidJsonInput(e) => write!(f, "{code}: {e}"),
            Self::PayloadNotSerializable { reason } => write!(f, "{code}: {reason}"),
            Self::PayloadNotObject => write!(f, "{code}: a webhook payload must be a JSON object"),
            Self::BodyRequired => write!(f, "{code}: this profile signs only messages with a body"),
            Self::ProfileMismatch => write!(f, "{code}: the signer's profile is not the webhook profile"),
            Self::ValidityTooLong { validity } => {
                write!(f, "{code}: expires - created is {validity} s, at most 300 s allowed")
            }
            Self::ValidityInvalid { created, expires } => {
                write!(f, "{code}: created {created}, expires {expires} (need 0 <= created < expires)")
            }
            Self::TimestampInvalid => write!(f, "{code}: the timestamp must not be negative"),
            Self::NonceInvalid { reason } => write!(f, "{code}: {reason}"),
            Self::TargetUriMalformed(e) => write!(f, "{code}: {e}"),
            Self::MethodInvalid => write!(f, "{code}: the method must be an upper-case HTTP token"),
            Self::ContentTypeInvalid => write!(f, "{code}: not a single, printable ASCII media type"),
            Self::KeyIdMissing => write!(f, "{code}: the JWK has no kid"),
            Self::KeyIdInvalid => write!(f, "{code}: a keyid is 1 to 256 printable ASCII characters"),
            Self::AlgorithmNotAllowed { algorithm } => {
                write!(f, "{code}: {algorithm} is not allowed (ed25519, ecdsa-p256-sha256)")
            }
            Self::KeyAlgorithmMismatch { requested, key } => write!(
                f,
                "{code}: {} requested, the key is {}",
                algorithm_name(*requested, "the JWK's alg"),
                algorithm_name(*key, "for another algorithm")
            ),
            Self::PrivateKeyMissing => write!(f, "{code}: the JWK is public only (no d)"),
            Self::KeyPurposeInvalid => write!(
                f,
                "{code}: adcp_use must be request-signing (or the deprecated webhook-signing)"
            ),
            Self::KeyInvalid { reason } => write!(f, "{code}: {reason}"),
            Self::HmacSecretTooShort { minimum, actual } => {
                write!(f, "{code}: HMAC secret of {actual} bytes, at least {minimum} required")
            }
            Self::HmacSecretWeak => write!(f, "{code}: the HMAC secret is one repeated byte"),
            Self::IdempotencyKeyMissing => write!(f, "{code}: the payload has no string idempotency_key"),
            Self::IdempotencyKeyInvalid => write!(
                f,
                "{code}: an idempotency key matches ^[A-Za-z0-9_.:-]{{16,255}}$ and is not one repeated character"
            ),
            Self::SignerOutputInvalid {
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "{code}: {algorithm} signer returned {actual} bytes, {expected} required (DER ECDSA must be converted to r||s)"
            ),
            Self::Signer(e) => write!(f, "{code}: {e}"),
            Self::RandomnessUnavailable => write!(f, "{code}: the system random generator failed"),
            Self::HttpRequestInvalid { reason } => write!(f, "{code}: {reason}"),
        }
    }
}

impl std::error::Error for SignError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidJsonInput(e) => Some(e),
            Self::TargetUriMalformed(e) => Some(e),
            Self::Signer(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SignerError> for SignError {
    fn from(error: SignerError) -> Self {
        Self::Signer(error)
    }
}
