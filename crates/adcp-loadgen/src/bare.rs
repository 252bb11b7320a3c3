//! The baseline servers: the gateway's axum/hyper stack with a handler that
//! reads the whole body and either answers `200` at once (`bare`) or first
//! posts the body to an upstream with the same kind of HTTP client the
//! gateway uses (`bare --forward`), verifying nothing either way. The
//! gateway's throughput is compared with both on the same machine: the
//! first is the cheapest possible server, the second does the gateway's
//! work minus the webhook checklist and the stores.

use crate::Error;
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::Router;
use std::net::SocketAddr;
use std::time::Duration;

/// Where a forwarding baseline posts each body, and the client it uses.
#[derive(Debug, Clone)]
pub struct Forward {
    url: reqwest::Url,
    client: reqwest::Client,
}

impl Forward {
    /// A forwarder to `url` with the gateway's client settings (rustls on
    /// aws-lc-rs, no proxy, no redirects, `timeout` per attempt). No root
    /// certificates: the baseline forwards to a loopback `http` upstream.
    ///
    /// # Errors
    ///
    /// The client cannot be built.
    pub fn new(url: reqwest::Url, timeout: Duration) -> Result<Self, Error> {
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::new(format!("tls: {e}")))?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(|e| Error::new(format!("http client: {e}")))?;
        Ok(Self { url, client })
    }

    /// Posts `body` upstream as JSON: `200` when the upstream answers
    /// `2xx`, `502` otherwise.
    pub(crate) async fn post(&self, body: bytes::Bytes) -> StatusCode {
        let sent = self
            .client
            .post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => StatusCode::OK,
            _ => StatusCode::BAD_GATEWAY,
        }
    }
}

/// Serves the baseline on `listener` until the process stops; with
/// `forward`, every body is posted upstream before the answer.
///
/// # Errors
///
/// The server failed.
pub async fn serve(listener: tokio::net::TcpListener, forward: Option<Forward>) -> Result<(), Error> {
    axum::serve(nodelay(listener), router(forward)).await?;
    Ok(())
}

/// `listener` with `TCP_NODELAY` set on every accepted connection, as the
/// gateway sets it (`axum::serve` leaves Nagle's algorithm on).
pub(crate) fn nodelay(
    listener: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = SocketAddr> {
    use axum::serve::ListenerExt as _;
    listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    })
}

/// The baseline router: every `POST` has its body read (and forwarded when
/// `forward` is set) and gets `200`.
pub fn router(forward: Option<Forward>) -> Router {
    Router::new().fallback(handle).with_state(forward)
}

async fn handle(State(forward): State<Option<Forward>>, method: Method, body: axum::body::Bytes) -> StatusCode {
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED;
    }
    // The body is read in full (as the gateway must, to verify it).
    let Some(forward) = forward else {
        std::hint::black_box(body.len());
        return StatusCode::OK;
    };
    forward.post(body).await
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
