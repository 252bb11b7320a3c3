//! The answers the layer gives instead of dispatching.

use super::UNAVAILABLE_RETRY_AFTER_SECS;
use adcp_verify::VerifyError;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};

/// The code of a `413`: the body exceeds the endpoint's limit.
pub const BODY_TOO_LARGE: &str = "request_body_too_large";
/// The code of a `400` for a body that could not be read.
pub const BODY_UNREADABLE: &str = "request_body_unreadable";
/// The code of the plain `401` for a shadow-mode (`warn_for`) request
/// without a valid signature or independent credential.
pub const UNAUTHENTICATED: &str = "unauthenticated";

/// A refusal: the status, the code and its fixed message, and the only
/// headers the spec allows with them.
///
/// - A checklist or gate rejection: `401` with exactly one
///   `WWW-Authenticate: Signature error="<code>"` (no realm, no other
///   parameters); `400` for `request_body_malformed`; `503` with
///   `Retry-After` for a key-discovery or replay-store outage
///   ([`ErrorCode::http_status`](adcp_verify::ErrorCode::http_status)).
/// - A body over the limit: `413`, before any parsing or cryptography.
/// - Shadow mode (`warn_for`) without a valid signature or independent
///   credential: a plain `401` **without** a `Signature` challenge. The
///   spec makes such a failure a monitoring record, not a challenge code;
///   the caller is simply unauthenticated (see [`Reply::is_unauthenticated`]).
///
/// The body is always `{"error": "<code>", "message": "<fixed text>"}`;
/// what exactly failed stays in the server's logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    status: StatusCode,
    code: &'static str,
    message: &'static str,
    www_authenticate: Option<String>,
    retry_after: Option<u64>,
}

impl Reply {
    pub(crate) fn from_error(error: &VerifyError) -> Self {
        let status = StatusCode::from_u16(error.code().http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
        let retry_after = (status == StatusCode::SERVICE_UNAVAILABLE).then_some(UNAVAILABLE_RETRY_AFTER_SECS);
        Self {
            status,
            code: error.code_str(),
            message: error.message(),
            www_authenticate: error.www_authenticate(),
            retry_after,
        }
    }

    pub(crate) fn unauthenticated() -> Self {
        Self::plain(
            StatusCode::UNAUTHORIZED,
            UNAUTHENTICATED,
            "Authentication is required for this operation.",
        )
    }

    pub(crate) fn too_large() -> Self {
        Self::plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            BODY_TOO_LARGE,
            "The body exceeds this endpoint's size limit.",
        )
    }

    pub(crate) fn unreadable() -> Self {
        Self::plain(StatusCode::BAD_REQUEST, BODY_UNREADABLE, "The body could not be read.")
    }

    fn plain(status: StatusCode, code: &'static str, message: &'static str) -> Self {
        Self {
            status,
            code,
            message,
            www_authenticate: None,
            retry_after: None,
        }
    }

    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The code in the body: a spec code (`request_signature_invalid`, …),
    /// [`BODY_TOO_LARGE`], [`BODY_UNREADABLE`] or [`UNAUTHENTICATED`].
    #[must_use]
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The fixed message for [`Self::code`].
    #[must_use]
    pub fn message(&self) -> &'static str {
        self.message
    }

    /// The `WWW-Authenticate` value of a signature `401`.
    #[must_use]
    pub fn www_authenticate(&self) -> Option<&str> {
        self.www_authenticate.as_deref()
    }

    /// The `Retry-After` seconds of a `503`.
    #[must_use]
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// Whether this is the shadow-mode plain `401` (no signature challenge).
    #[must_use]
    pub fn is_unauthenticated(&self) -> bool {
        self.code == UNAUTHENTICATED
    }

    /// The JSON error body.
    #[must_use]
    pub fn body(&self) -> Bytes {
        Bytes::from(serde_json::json!({ "error": self.code, "message": self.message }).to_string())
    }

    /// The response: status, `Content-Type: application/json`, the
    /// challenge or `Retry-After` if any, and the JSON body.
    #[must_use]
    pub fn into_response<B: From<Bytes>>(self) -> http::Response<B> {
        let mut response = http::Response::new(B::from(self.body()));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(challenge) = self.www_authenticate.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(http::header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
