//! A scriptable sink, and an outbox with a dispatcher on a temporary
//! SQLite file.

use adcp_outbox::{
    Dispatcher, DispatcherConfig, ManualClock, NewEvent, Outbox, OutboxConfig, OutboxDestination, SqliteOutbox,
    SqliteOutboxOptions, StaticSigners,
};
use adcp_sign::{Algorithm, BoxSigner, HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_webhook::{AttemptClient, DestinationPolicy, RetryPolicy};
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How the sink answers one request.
#[derive(Debug, Clone)]
pub enum Answer {
    Status(u16),
    With(u16, Vec<(&'static str, String)>, String),
    /// Accept the request, never answer.
    Hang,
}

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub path: String,
    pub key: String,
    pub body: Value,
    pub signature: Option<String>,
}

type Script = dyn Fn(&Hit, usize) -> Answer + Send + Sync;

/// A loopback HTTP server that records every request and answers by a
/// script given the request and how many times its key was seen before.
#[derive(Clone)]
pub struct Sink {
    pub addr: SocketAddr,
    pub hits: Arc<Mutex<Vec<Hit>>>,
    script: Arc<Mutex<Arc<Script>>>,
}

impl Sink {
    pub async fn start(script: impl Fn(&Hit, usize) -> Answer + Send + Sync + 'static) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sink = Self {
            addr,
            hits: Arc::default(),
            script: Arc::new(Mutex::new(Arc::new(script))),
        };
        let s = sink.clone();
        let app = axum::Router::new().fallback(move |req: Request| {
            let s = s.clone();
            async move { s.handle(req).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        sink
    }

    pub fn set_script(&self, script: impl Fn(&Hit, usize) -> Answer + Send + Sync + 'static) {
        *self.script.lock().unwrap() = Arc::new(script);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    pub fn hits_for(&self, key: &str) -> Vec<Hit> {
        self.hits().into_iter().filter(|h| h.key == key).collect()
    }

    async fn handle(&self, req: Request) -> Response {
        let path = req.uri().path().to_owned();
        let signature = req
            .headers()
            .get("signature")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes: Bytes = axum::body::to_bytes(req.into_body(), 4 << 20).await.unwrap_or_default();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let key = body["idempotency_key"].as_str().unwrap_or_default().to_owned();
        let hit = Hit {
            path,
            key: key.clone(),
            body,
            signature,
        };
        let seen = {
            let mut hits = self.hits.lock().unwrap();
            let seen = hits.iter().filter(|h| h.key == key).count();
            hits.push(hit.clone());
            seen
        };
        let script = Arc::clone(&self.script.lock().unwrap());
        match script(&hit, seen) {
            Answer::Status(s) => status(s).into_response(),
            Answer::With(s, headers, body) => {
                let mut r = (status(s), body).into_response();
                for (k, v) in headers {
                    r.headers_mut().insert(k, v.parse().unwrap());
                }
                r
            }
            Answer::Hang => std::future::pending().await,
        }
    }
}

fn status(s: u16) -> http::StatusCode {
    http::StatusCode::from_u16(s).unwrap()
}

pub fn temp_file(tag: &str) -> PathBuf {
    let dir = adcp_test_support::redis_server::temp_dir(&format!("outbox-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("outbox.sqlite")
}

pub fn signers() -> StaticSigners {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-test-1").unwrap();
    StaticSigners::new().with("default", HttpSigner::webhook(BoxSigner::new(key)).unwrap())
}

pub fn fast_retry() -> RetryPolicy {
    RetryPolicy::new(
        Duration::from_millis(10),
        Duration::from_millis(40),
        Duration::from_secs(86_400),
    )
    .unwrap()
    .with_timeouts(Duration::from_secs(2), Duration::from_secs(1))
    .unwrap()
}

pub fn client(policy: &RetryPolicy) -> AttemptClient {
    AttemptClient::builder()
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .timeouts(policy.attempt_timeout(), policy.connect_timeout())
        .build()
        .unwrap()
}

/// An outbox on a fresh file, with `clock` (`None`: the system clock).
pub fn outbox(tag: &str, retry: RetryPolicy, clock: Option<ManualClock>) -> (Outbox, PathBuf) {
    let path = temp_file(tag);
    let store = SqliteOutbox::open(&path, SqliteOutboxOptions::default()).unwrap();
    let mut config = OutboxConfig {
        retry,
        ..OutboxConfig::default()
    };
    if let Some(clock) = clock {
        config.clock = Arc::new(clock);
    }
    (Outbox::new(Arc::new(store), config).unwrap(), path)
}

/// A running dispatcher; `stop` drains and waits for it.
pub struct Running {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap();
    }
}

pub fn dispatch(outbox: &Outbox, config: DispatcherConfig) -> Running {
    dispatch_with(outbox, config, None)
}

pub fn dispatch_with(
    outbox: &Outbox,
    config: DispatcherConfig,
    hook: Option<Arc<dyn adcp_outbox::AttemptHook>>,
) -> Running {
    let client = client(&outbox.config().retry);
    let mut d = Dispatcher::new(outbox.clone(), client, Arc::new(signers()), config).unwrap();
    if let Some(hook) = hook {
        d = d.with_hook(hook);
    }
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(d.run_with_drain(
        async move {
            let _ = rx.await;
        },
        Duration::from_secs(1),
    ));
    Running { stop: Some(tx), task }
}

pub fn quick() -> DispatcherConfig {
    DispatcherConfig {
        poll_interval: Duration::from_millis(20),
        ..DispatcherConfig::default()
    }
}

pub fn event(payload: Value, url: &str) -> NewEvent {
    NewEvent::new(WebhookEvent::new(&payload).unwrap(), OutboxDestination::new(url))
}

/// Waits (real time) until `f` holds, up to `limit`.
pub async fn until(limit: Duration, mut f: impl AsyncFnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

pub fn impairment(id: &str, state: &str) -> Value {
    serde_json::json!({
        "task_id": "mb_1",
        "status": "working",
        "timestamp": "2026-04-18T12:00:00Z",
        "result": {"notification_type": "impairment", "impairment_id": id, "state": state},
    })
}

/// A validator of the 3.2 schema at `path` (relative to the schemas
/// directory), resolving its references in the same directory; `None`
/// when the spec is absent and the suite may skip (the lookup fails in CI).
pub fn schema_validator(path: &str) -> Option<jsonschema::Validator> {
    let dir = adcp_vectors::require_schemas_dir().unwrap()?;
    struct Local(std::path::PathBuf);
    impl jsonschema::Retrieve for Local {
        fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
            let rest = uri
                .as_str()
                .strip_prefix("https://adcontextprotocol.org/schemas/")
                .ok_or("not an AdCP schema")?;
            let rest = rest.split_once('/').map_or(rest, |(_, path)| path);
            Ok(serde_json::from_str(&std::fs::read_to_string(self.0.join(rest))?)?)
        }
    }
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(path)).unwrap()).unwrap();
    schema["$id"] = format!("https://adcontextprotocol.org/schemas/3.2.4/{path}").into();
    Some(
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .should_validate_formats(true)
            .with_retriever(Local(dir))
            .build(&schema)
            .unwrap(),
    )
}

/// Every body stored in the outbox file at `path` (default prefix,
/// unencrypted), in enqueue order.
pub fn stored_bodies(path: &std::path::Path) -> Vec<Value> {
    stored_bodies_where(path, "%")
}

/// The stored bodies whose `channel_id` is like `channel` (SQL `LIKE`).
pub fn stored_bodies_where(path: &std::path::Path, channel: &str) -> Vec<Value> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT body FROM adcp_outbox_events WHERE COALESCE(channel_id, '') LIKE ?1 ORDER BY enqueued_at, rowid",
        )
        .unwrap();
    stmt.query_map([channel], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|b| serde_json::from_slice(&b.unwrap()).unwrap())
        .collect()
}
