//! The axum extractors (feature `axum`).

use super::auth::RequestAuth;
use super::SELLER_TRACING_TARGET;
use adcp_verify::{CodePrefix, ErrorCode, VerifiedSigner};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};

/// The verified signer of a request, for handlers that require one: the
/// extractor rejects with `401` and `WWW-Authenticate: Signature
/// error="request_signature_required"` when the request was accepted
/// without a verified signature (on a fallback credential, anonymously, or
/// in shadow mode).
///
/// ```
/// use adcp_request::VerifiedAgent;
///
/// async fn create_media_buy(agent: VerifiedAgent) -> String {
///     format!("media buy for {}", agent.agent_url())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedAgent {
    signer: VerifiedSigner,
}

impl VerifiedAgent {
    /// The verified signer.
    #[must_use]
    pub fn signer(&self) -> &VerifiedSigner {
        &self.signer
    }

    /// The signing agent's URL (the identity to authorize and audit by).
    #[must_use]
    pub fn agent_url(&self) -> &str {
        &self.signer.agent_url
    }

    /// The signature's `keyid`.
    #[must_use]
    pub fn keyid(&self) -> &str {
        &self.signer.keyid
    }

    /// The signer, by value.
    #[must_use]
    pub fn into_signer(self) -> VerifiedSigner {
        self.signer
    }
}

/// Why an extractor refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthRejection {
    /// No [`RequestAuth`] in the extensions: the route is not behind
    /// [`RequestVerifierLayer`](crate::RequestVerifierLayer). A server
    /// configuration error: `500`.
    LayerMissing,
    /// The handler requires a verified signer and the request has none:
    /// `401`, `request_signature_required`.
    SignatureRequired,
}

impl IntoResponse for AuthRejection {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            AuthRejection::LayerMissing => {
                tracing::error!(
                    target: SELLER_TRACING_TARGET,
                    "RequestAuth extractor used on a route without RequestVerifierLayer"
                );
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "request_verifier_layer_missing",
                    "The server is misconfigured: request verification is not installed on this route.",
                )
            }
            AuthRejection::SignatureRequired => (
                StatusCode::UNAUTHORIZED,
                ErrorCode::SignatureRequired.as_str(CodePrefix::Request),
                ErrorCode::SignatureRequired.message(CodePrefix::Request),
            ),
        };
        let body = serde_json::json!({ "error": code, "message": message }).to_string();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if self == AuthRejection::SignatureRequired {
            if let Ok(challenge) = HeaderValue::from_str(&format!("Signature error=\"{code}\"")) {
                headers.insert(http::header::WWW_AUTHENTICATE, challenge);
            }
        }
        response
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestAuth {
    type Rejection = AuthRejection;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<RequestAuth>()
            .cloned()
            .ok_or(AuthRejection::LayerMissing)
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for VerifiedAgent {
    type Rejection = AuthRejection;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let auth = parts
            .extensions
            .get::<RequestAuth>()
            .ok_or(AuthRejection::LayerMissing)?;
        auth.signer()
            .cloned()
            .map(|signer| VerifiedAgent { signer })
            .ok_or(AuthRejection::SignatureRequired)
    }
}
