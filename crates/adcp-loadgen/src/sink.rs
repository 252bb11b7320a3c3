//! The counting upstream: answers every `POST` with `200`, counts requests
//! and distinct `X-Adcp-Idempotency-Key` values; `GET /stats` returns them.

use crate::Error;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the sink has seen since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkStats {
    /// `POST` requests answered.
    pub requests: u64,
    /// Distinct `X-Adcp-Idempotency-Key` values.
    pub distinct_keys: u64,
    /// Requests whose key had been seen before: deliveries of one event
    /// after the first. The gateway must keep this at 0.
    pub duplicates: u64,
}

impl SinkStats {
    /// What happened between `earlier` and `self` (both from one sink).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            requests: self.requests.saturating_sub(earlier.requests),
            distinct_keys: self.distinct_keys.saturating_sub(earlier.distinct_keys),
            duplicates: self.duplicates.saturating_sub(earlier.duplicates),
        }
    }
}

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    duplicates: AtomicU64,
    keys: Mutex<HashSet<Box<str>>>,
}

impl Counts {
    fn stats(&self) -> SinkStats {
        let distinct = self.keys.lock().map(|k| k.len() as u64).unwrap_or(0);
        SinkStats {
            requests: self.requests.load(Ordering::Relaxed),
            distinct_keys: distinct,
            duplicates: self.duplicates.load(Ordering::Relaxed),
        }
    }
}

/// A running sink.
pub struct Sink {
    addr: SocketAddr,
    counts: Arc<Counts>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Sink {
    /// Binds `addr` (port 0 for a free port) and serves in a background
    /// task.
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub async fn start(addr: SocketAddr) -> Result<Self, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::new(format!("sink: bind {addr}: {e}")))?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let app = Router::new().fallback(handle).with_state(Arc::clone(&counts));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self {
            addr,
            counts,
            stop: Some(stop),
            task,
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://ADDR` + `path`.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The counts now.
    #[must_use]
    pub fn stats(&self) -> SinkStats {
        self.counts.stats()
    }

    /// Stops the server.
    ///
    /// # Errors
    ///
    /// The server failed or its task panicked.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.map_err(|e| Error::new(e.to_string()))??;
        Ok(())
    }

    /// Serves until the task ends (the process is stopped).
    ///
    /// # Errors
    ///
    /// The server failed or its task panicked.
    pub async fn wait(mut self) -> Result<(), Error> {
        (&mut self.task).await.map_err(|e| Error::new(e.to_string()))??;
        Ok(())
    }
}

async fn handle(
    State(counts): State<Arc<Counts>>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if method == Method::GET {
        let stats = counts.stats();
        return (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            serde_json::to_string(&stats).unwrap_or_default(),
        )
            .into_response();
    }
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    drop(body);
    counts.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(key) = headers.get("x-adcp-idempotency-key").and_then(|v| v.to_str().ok()) {
        let fresh = counts.keys.lock().map(|mut k| k.insert(key.into())).unwrap_or(true);
        if !fresh {
            counts.duplicates.fetch_add(1, Ordering::Relaxed);
        }
    }
    StatusCode::OK.into_response()
}

/// Fetches `GET {base}/stats` from a sink in another process.
///
/// # Errors
///
/// The sink cannot be reached or answers something else.
pub async fn fetch_stats(base: &str) -> Result<SinkStats, Error> {
    let url = format!("{}/stats", base.trim_end_matches('/'));
    let (status, body) = crate::client::get(&url).await?;
    if status != 200 {
        return Err(Error::new(format!("{url}: status {status}")));
    }
    serde_json::from_slice(&body).map_err(|e| Error::new(format!("{url}: {e}")))
}
