//! The relay's answers: every refusal is `{"error": code, "message": text}`.

use crate::error::OutboxError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A refusal of the relay API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }
}

impl From<OutboxError> for ApiError {
    fn from(e: OutboxError) -> Self {
        let status = match &e {
            OutboxError::KeyConflict { .. } | OutboxError::KeyUsedForOtherDestination { .. } => StatusCode::CONFLICT,
            OutboxError::NotRedrivable(_) => StatusCode::CONFLICT,
            OutboxError::NotFound(_) | OutboxError::UnknownChannel(_) => StatusCode::NOT_FOUND,
            OutboxError::ChannelNotActive { .. } => StatusCode::CONFLICT,
            OutboxError::Invalid { .. } => StatusCode::BAD_REQUEST,
            OutboxError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(json!({"error": self.code, "message": self.message})),
        )
            .into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}
