//! The listener: binds, answers each delivery by the journal's policy
//! while the window is open, then hands the journal to the grading.

use super::cases::{self, Run};
use super::journal::{Arrival, Body, Journal, MAX_BODY_BYTES, MAX_CONCURRENT_DELIVERIES, MAX_HEADER_BYTES};
use super::registration::{fresh_operation_id, fresh_token, Registration};
use super::verify::Target;
use super::{preconditions, SenderConfig, MAX_WINDOW};
use crate::error::GradeError;
use crate::report::Report;
use crate::signer::PublishedKeys;
use adcp_verify::{KeyResolver, StaticKeyResolver};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long one body may take to arrive (a trickling sender holds one of
/// the [`MAX_CONCURRENT_DELIVERIES`] read slots meanwhile).
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound sender grader: the listener is up and answering; print its
/// [`registration`](Self::registration), have the seller emit webhooks to
/// it, then [`run`](Self::run) it to the end of the window for the
/// [`Report`]. Dropping it stops the listener.
pub struct SenderGrader {
    registration: Registration,
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
    window: Duration,
    target: Target,
    keys: Arc<dyn KeyResolver>,
    schemas: Option<PathBuf>,
    /// Where the keys are published, for the preconditions.
    keys_source: String,
}

impl std::fmt::Debug for SenderGrader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SenderGrader")
            .field("registration", &self.registration)
            .field("local_addr", &self.local_addr)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

struct Shared {
    journal: Mutex<Journal>,
    started: Instant,
    /// Bounds the bodies being read at once (memory).
    reading: tokio::sync::Semaphore,
}

impl Drop for SenderGrader {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl SenderGrader {
    /// Checks the configuration, builds the key resolver, binds
    /// `config.listen` and starts answering. The window starts now.
    ///
    /// # Errors
    ///
    /// [`GradeError::Target`] for a window out of range, a public URL that
    /// is not an absolute `https` URL (`http` only with `allow_http`), a
    /// plain-HTTP registration without `allow_http`;
    /// [`GradeError::Listen`] for an address that cannot be bound;
    /// [`GradeError::Keys`] when the published keys cannot be set up;
    /// [`GradeError::Client`] without randomness.
    pub async fn bind(config: SenderConfig) -> Result<Self, GradeError> {
        if config.window.is_zero() || config.window > MAX_WINDOW {
            return Err(GradeError::Target(format!(
                "--window {}: expected 1..={} seconds",
                config.window.as_secs_f64(),
                MAX_WINDOW.as_secs()
            )));
        }
        let public = config
            .public_url
            .as_deref()
            .map(|url| public_target(url, config.allow_http))
            .transpose()?;
        if public.is_none() && !config.allow_http {
            return Err(GradeError::Target(
                "the listener speaks plain HTTP: give --public-url https://… (TLS terminated in front of it) or --allow-http for local development".into(),
            ));
        }
        let (keys, keys_source) = resolver(&config.keys)?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| GradeError::Listen(format!("--listen {}: {e}", config.listen)))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| GradeError::Listen(format!("--listen {}: {e}", config.listen)))?;
        let origin = format!("http://{local_addr}");
        let (target, url) = match public {
            Some(target) => {
                let url = target.uri("");
                (target, url)
            }
            None => (
                Target::AsReceived { origin: origin.clone() },
                format!("{origin}/webhook"),
            ),
        };
        let random = |r: Result<String, String>| r.map_err(|e| GradeError::Client(format!("randomness: {e}")));
        let registration = Registration {
            url,
            token: if config.register_token {
                Some(random(fresh_token())?)
            } else {
                None
            },
            operation_id: if config.register_operation_id {
                Some(random(fresh_operation_id())?)
            } else {
                None
            },
        };
        let shared = Arc::new(Shared {
            journal: Mutex::new(Journal::default()),
            started: Instant::now(),
            reading: tokio::sync::Semaphore::new(MAX_CONCURRENT_DELIVERIES),
        });
        let app = axum::Router::new().fallback(receive).with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            registration,
            local_addr,
            shared,
            server,
            window: config.window,
            target,
            keys,
            schemas: config.schemas,
            keys_source,
        })
    }

    /// The `push_notification_config` to register with the seller.
    #[must_use]
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// The address listened on (the port chosen when `:0` was asked).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://ADDR`, the listener as bound.
    #[must_use]
    pub fn listening_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Listens until the window ends, then grades what arrived.
    ///
    /// # Errors
    ///
    /// None today; the `Result` leaves room for setup failures found late.
    pub async fn run(self) -> Result<Report, GradeError> {
        self.run_until(std::future::pending()).await
    }

    /// Listens until the window ends or `stop` completes (Ctrl-C), then
    /// grades what arrived. Deliveries after that are answered `503` and
    /// not graded.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) -> Result<Report, GradeError> {
        let deadline = tokio::time::Instant::from_std(self.shared.started + self.window);
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            () = stop => {}
        }
        let elapsed = self.shared.started.elapsed();
        let (deliveries, dropped) = {
            let mut journal = self.shared.journal.lock().unwrap_or_else(PoisonError::into_inner);
            journal.close();
            (std::mem::take(&mut journal.deliveries), journal.dropped)
        };
        self.server.abort();
        let mut report = Report::new(
            "sender",
            &self.registration.url,
            preconditions(&self.registration, &self.keys_source),
        );
        let run = Run {
            deliveries: &deliveries,
            dropped,
            registration: &self.registration,
            target: &self.target,
            keys: &self.keys,
            schemas: self.schemas.as_deref(),
            elapsed,
        };
        cases::grade(&run, &mut report).await;
        Ok(report)
    }
}

/// The `@target-uri` of `--public-url`.
fn public_target(url: &str, allow_http: bool) -> Result<Target, GradeError> {
    let parsed = url::Url::parse(url).map_err(|e| GradeError::Target(format!("--public-url {url}: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_http => {}
        "http" => {
            return Err(GradeError::Target(format!(
                "--public-url {url}: plain http only with --allow-http"
            )))
        }
        other => return Err(GradeError::Target(format!("--public-url {url}: scheme {other}"))),
    }
    if parsed.host_str().is_none_or(str::is_empty) || parsed.fragment().is_some() || !parsed.username().is_empty() {
        return Err(GradeError::Target(format!(
            "--public-url {url}: expected scheme://host[:port]/path, without userinfo or fragment"
        )));
    }
    let authority = parsed[url::Position::BeforeHost..url::Position::AfterPort].to_owned();
    Ok(Target::Public {
        url: url.to_owned(),
        authority,
    })
}

/// The webhook-surface key resolver, and where the keys are published.
fn resolver(keys: &PublishedKeys) -> Result<(Arc<dyn KeyResolver>, String), GradeError> {
    match keys {
        PublishedKeys::Agent { url, fetch } => {
            let resolver = adcp_jwks::HttpsKeyResolver::builder(url.clone())
                .surface(adcp_jwks::SigningSurface::Webhook)
                .fetch_config(fetch.clone())
                .build()
                .map_err(|e| GradeError::Keys(format!("--agent {url}: {e}")))?;
            Ok((
                Arc::new(resolver),
                format!("published by {url} (brand.json -> agents[] -> jwks_uri)"),
            ))
        }
        PublishedKeys::Jwks { jwks, agent } => {
            if !jwks["keys"].is_array() {
                return Err(GradeError::Keys("the JWKS has no \"keys\" array".into()));
            }
            Ok((
                Arc::new(StaticKeyResolver::new().with_jwks(jwks, agent)),
                format!("in the given JWKS (attributed to {agent})"),
            ))
        }
    }
}

/// Every request, whatever its path or method: read within the bounds,
/// recorded, answered by the journal's policy.
async fn receive(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let offset = shared.started.elapsed();
    let unix = crate::runner::now();
    let Ok(_reading) = shared.reading.acquire().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let (parts, body) = request.into_parts();
    let header_bytes: usize = parts
        .headers
        .iter()
        .map(|(n, v)| n.as_str().len().saturating_add(v.len()))
        .fold(0, usize::saturating_add);
    let (headers, body) = if header_bytes > MAX_HEADER_BYTES {
        (Vec::new(), Body::HeadersTooLarge)
    } else {
        let headers = parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
            .collect();
        let declared = parts
            .headers
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
            Body::TooLarge
        } else {
            let read = http_body_util::Limited::new(body, MAX_BODY_BYTES).collect();
            match tokio::time::timeout(BODY_READ_TIMEOUT, read).await {
                Ok(Ok(collected)) => Body::Read(collected.to_bytes().to_vec()),
                Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Body::TooLarge,
                Ok(Err(_)) | Err(_) => Body::Unreadable,
            }
        };
        (headers, body)
    };
    let arrival = Arrival {
        offset,
        unix,
        method: parts.method.as_str().to_owned(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
        headers,
        body,
    };
    let status = shared
        .journal
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .record(arrival);
    StatusCode::from_u16(status)
        .unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
        .into_response()
}
