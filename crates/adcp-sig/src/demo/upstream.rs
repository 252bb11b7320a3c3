//! The demo's upstream application: counts the events it applies, and can
//! be told to fail the next one.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Shared {
    applied: Mutex<Vec<String>>,
    /// `X-Adcp-Reemission-Of` of each applied event (`None` for a first
    /// delivery), in the same order.
    reemissions: Mutex<Vec<Option<String>>>,
    fail_next: AtomicBool,
    /// Every event is answered `500` while set.
    down: AtomicBool,
}

/// A local axum server recording the `X-Adcp-Idempotency-Key` of every
/// event it answers `200`.
pub(crate) struct CountingUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl CountingUpstream {
    pub(crate) async fn start() -> Result<Self, String> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/events", post(receive))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("upstream bind: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub(crate) fn url(&self) -> Result<url::Url, String> {
        url::Url::parse(&format!("http://{}/events", self.addr)).map_err(|e| e.to_string())
    }

    /// Idempotency keys of the events applied, in order.
    pub(crate) fn applied(&self) -> Vec<String> {
        self.shared.applied.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Whether the last applied event was a re-emission (the gateway sent
    /// `X-Adcp-Reemission-Of`).
    pub(crate) fn last_was_reemission(&self) -> bool {
        self.shared
            .reemissions
            .lock()
            .map(|r| r.last().is_some_and(Option::is_some))
            .unwrap_or(false)
    }

    /// The next event is answered `500` (and not applied).
    pub(crate) fn fail_next(&self) {
        self.shared.fail_next.store(true, Ordering::SeqCst);
    }

    /// While `down`, every event is answered `500` (and not applied).
    pub(crate) fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    pub(crate) async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

async fn receive(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> StatusCode {
    if shared.down.load(Ordering::SeqCst) || shared.fail_next.swap(false, Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    let key = headers
        .get("x-adcp-idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let reemission_of = headers
        .get("x-adcp-reemission-of")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let (Ok(mut applied), Ok(mut reemissions)) = (shared.applied.lock(), shared.reemissions.lock()) {
        applied.push(key);
        reemissions.push(reemission_of);
    }
    StatusCode::OK
}
