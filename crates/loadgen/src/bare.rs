//! The baseline server: the gateway's axum/hyper stack with a handler that
//! reads the whole body and answers `200`, verifying nothing. The gateway's
//! throughput is compared with this server's on the same machine.

use crate::Error;
use axum::http::{Method, StatusCode};
use axum::Router;
use std::net::SocketAddr;

/// Serves the baseline on `listener` until the process stops.
///
/// # Errors
///
/// The server failed.
pub async fn serve(listener: tokio::net::TcpListener) -> Result<(), Error> {
    axum::serve(listener, router()).await?;
    Ok(())
}

/// The baseline router: every `POST` has its body read and gets `200`.
pub fn router() -> Router {
    Router::new().fallback(handle)
}

async fn handle(method: Method, body: axum::body::Bytes) -> StatusCode {
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED;
    }
    // The body is read in full (as the gateway must, to verify it), then
    // dropped.
    std::hint::black_box(body.len());
    StatusCode::OK
}

/// Binds `addr` (port 0 for a free port).
///
/// # Errors
///
/// The address cannot be bound.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, Error> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::new(format!("bind {addr}: {e}")))
}
