//! [`Body`]: the exact bytes that are digested, signed and sent.

use core::fmt;
use std::sync::Arc;

use adcp_strict_json::Limits;
use serde::Serialize;

use crate::SignError;

/// A JSON body, serialized once: the bytes the `Content-Digest` (or the
/// legacy HMAC) is computed over are the bytes that go on the wire, because
/// they are the same bytes.
///
/// A `Body` exists only if its bytes are one strict RFC 8259 JSON value
/// with no object repeating a member name at any depth (inside arrays
/// included): that is checked once, when it is built, whatever the source.
///
/// - [`Body::json`] serializes a `serde::Serialize` value compactly
///   (separators `,` and `:`, no whitespace) and checks the output (a
///   hand-written `Serialize`, `#[serde(flatten)]` or a map type can emit
///   a name twice: signers must not emit duplicate keys).
/// - [`Body::from_json_bytes`] takes pre-serialized bytes from an upstream
///   caller verbatim (never re-serialized) and rejects duplicate-key input
///   with `duplicate_key_input`, key names sanitized per webhook checklist
///   step 14b.
///
/// Cloning is cheap (the bytes are shared), so one body can be signed for
/// every retry and every destination. `Debug` prints the length only.
///
/// ```
/// use adcp_sign::Body;
///
/// #[derive(serde::Serialize)]
/// struct Status<'a> {
///     task_id: &'a str,
///     status: &'a str,
/// }
///
/// let body = Body::json(&Status { task_id: "task_456", status: "completed" })?;
/// assert_eq!(body.as_str(), r#"{"task_id":"task_456","status":"completed"}"#);
///
/// // Raw bytes are kept as they are (spacing included), and checked.
/// let raw = Body::from_json_bytes(r#"{"status": "completed"}"#)?;
/// assert_eq!(raw.as_bytes(), br#"{"status": "completed"}"#);
///
/// let nested = r#"{"packages":[{"package_id":"pkg_1","package_id":"pkg_evil"}]}"#;
/// let err = Body::from_json_bytes(nested).unwrap_err();
/// assert_eq!(err.code(), "duplicate_key_input");
/// assert_eq!(err.duplicate_keys().map(|d| d.names().to_vec()), Some(vec!["package_id".to_owned()]));
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Body {
    text: Arc<str>,
}

impl Body {
    /// Serializes `value` to compact JSON and checks the result with the
    /// default [`Limits`] (1 MiB, depth 64: what verifiers accept by
    /// default).
    ///
    /// # Errors
    ///
    /// `payload_not_serializable` if serialization fails;
    /// `duplicate_key_input` if the serializer emitted a member name twice;
    /// `invalid_json_input` if the output exceeds the limits (or a
    /// serializer emitted a non-finite number as something invalid).
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, SignError> {
        Self::json_with_limits(value, &Limits::default())
    }

    /// As [`Body::json`], with explicit limits.
    ///
    /// # Errors
    ///
    /// As [`Body::json`].
    pub fn json_with_limits<T: Serialize + ?Sized>(value: &T, limits: &Limits) -> Result<Self, SignError> {
        let bytes =
            serde_json::to_vec(value).map_err(|e| SignError::PayloadNotSerializable { reason: e.to_string() })?;
        Self::checked(bytes, limits)
    }

    /// Takes pre-serialized JSON bytes verbatim, after checking them with
    /// the default [`Limits`].
    ///
    /// # Errors
    ///
    /// `duplicate_key_input` (a repeated member name at any depth, names
    /// sanitized); `invalid_json_input` (anything else a strict parser
    /// refuses: syntax, a byte-order mark, unescaped control characters,
    /// lone surrogates, out-of-range numbers, depth, length).
    pub fn from_json_bytes(bytes: impl Into<Vec<u8>>) -> Result<Self, SignError> {
        Self::checked(bytes.into(), &Limits::default())
    }

    /// As [`Body::from_json_bytes`], with explicit limits.
    ///
    /// # Errors
    ///
    /// As [`Body::from_json_bytes`].
    pub fn from_json_bytes_with_limits(bytes: impl Into<Vec<u8>>, limits: &Limits) -> Result<Self, SignError> {
        Self::checked(bytes.into(), limits)
    }

    fn checked(bytes: Vec<u8>, limits: &Limits) -> Result<Self, SignError> {
        adcp_strict_json::check(&bytes, limits).map_err(SignError::from_strict_json)?;
        // The strict check has validated UTF-8; this cannot fail, and would
        // be reported as invalid JSON if it did.
        let text = String::from_utf8(bytes).map_err(|e| {
            SignError::InvalidJsonInput(adcp_strict_json::StrictJsonError::Syntax {
                offset: e.utf8_error().valid_up_to(),
                reason: "invalid UTF-8",
            })
        })?;
        Ok(Self { text: text.into() })
    }

    /// The body bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The body as text (a checked body is UTF-8).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the body is empty (never, for a checked JSON body).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Body")
            .field("len", &self.text.len())
            .finish_non_exhaustive()
    }
}
