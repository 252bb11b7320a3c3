//! The server: [`Gateway`], its options, its handlers and its accept loop.

use crate::config::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONCURRENCY, DEFAULT_PURGE_INTERVAL,
    DEFAULT_UPSTREAM_TIMEOUT,
};
use crate::error::{ConfigError, GatewayError};
use crate::forward::Upstream;
use crate::metrics::{GatewayMetrics, JwksUriChanges, UpstreamFailure};
use crate::purge::Purge;
use crate::reload::{Build, Policy, ReloadSource, Verifying};
use crate::request::{Proxy, RequestOptions};
use crate::subscriptions::Registrations;
use crate::tls::TlsConfig;
use adcp_request::RequestVerifier;
use adcp_sigbase::Clock;
use adcp_store::SenderKey;
use adcp_store::{PurgeExpired, Store};
use adcp_verify::admission::AdmissionThresholds;
use adcp_verify::legacy::WebhookAuthMode;
use adcp_verify::CodePrefix;
use adcp_verify::KeyResolver;
use adcp_webhook::{
    Decision, Delivery, Receiver, ReceiverConfig, DEFAULT_MAX_BODY_BYTES, UNAVAILABLE_RETRY_AFTER_SECS,
};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::future::Future as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument as _;

/// How long a readiness probe waits for the store.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The `Retry-After` seconds of a request shed under load. The other
/// `503`s (store, key discovery, upstream) carry the receiver's
/// [`UNAVAILABLE_RETRY_AFTER_SECS`].
const OVERLOAD_RETRY_AFTER_SECS: u64 = 1;

/// The settings of a gateway built from its parts ([`Gateway::new`]):
/// everything but the keys and the store. [`GatewayOptions::new`] gives
/// the defaults; set the fields to change them.
#[derive(Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Where verified, first-seen events are posted.
    pub upstream: url::Url,
    /// Bound on one upstream attempt (connect and answer). Default 10 s.
    /// In request mode: up to the upstream's response head, and a body of
    /// known length (`Content-Length`, not `text/event-stream`) with it; a
    /// streamed body (`text/event-stream`, or no `Content-Length`) is
    /// relayed as long as it lasts (see [`Self::upstream_idle_timeout`]).
    pub upstream_timeout: Duration,
    /// Request mode: the longest silence between two chunks of a streamed
    /// upstream answer; past it the relay is cut (the client sees the body
    /// end in an error, the upstream connection is closed). Default
    /// `None`: no bound, as an MCP event stream may stay quiet for long.
    /// Not used in webhook mode.
    pub upstream_idle_timeout: Option<Duration>,
    /// The URL the seller was given, when the gateway sits behind a proxy
    /// or TLS terminator: its scheme is the signed target's, and the
    /// authority a request arrives for (`Host` / `:authority`, which the
    /// proxy must preserve) must canonicalize to this URL's authority or
    /// to one of [`Self::accept_hosts`], else the request is refused with
    /// `webhook_target_uri_malformed`. `@authority` is always the received
    /// one, as the spec derives it. Default: `http`, any received `Host`
    /// (with [`Self::tls`]: `https`, a `Host` the certificate names).
    pub public_url: Option<url::Url>,
    /// Other authorities (`host` or `host:port`) accepted with
    /// [`Self::public_url`] or [`Self::tls`]. A bare `host` stands for the
    /// scheme's default port (443 for `https`).
    pub accept_hosts: Vec<String>,
    /// Serve HTTPS with this certificate ([`Gateway::serve`]: HTTP/2 and
    /// HTTP/1.1 by ALPN). Without [`Self::public_url`], the signed target's
    /// scheme is `https` and its authority the received `Host` /
    /// `:authority`, accepted only when its host is a name of the current
    /// certificate (a DNS name exactly, ignoring case, or under a wildcard
    /// name standing for one left-most label; an IP address equal to an
    /// IP-address name; any port) or it is one of [`Self::accept_hosts`];
    /// any other is refused with `webhook_target_uri_malformed` (`401`),
    /// as with a public URL. A certificate without any DNS name or IP
    /// address and no accept-host is refused by [`Gateway::new`]
    /// ([`ConfigError::TlsNoNames`]). With a public URL, the public URL
    /// decides as before. Default: plain HTTP.
    pub tls: Option<TlsConfig>,
    /// Key ids refused as revoked (`webhook_signature_key_revoked`,
    /// checklist step 9, before any cryptography) in front of the key
    /// resolver's own revocation status, whichever seller publishes them.
    /// Default none.
    pub revoked_kids: Vec<String>,
    /// The buyer's subscriber registrations (`--subscriptions`): the
    /// gateway answers activation challenges for them, refuses
    /// notifications that do not match the registration of their URL, and
    /// verifies deliveries to a legacy registration's URL with its
    /// credential. Default none.
    pub subscriptions: Option<Registrations>,
    /// Largest body accepted. Default 1 MiB.
    pub max_body_bytes: usize,
    /// The registration's authentication mode (default RFC 9421) and, for a
    /// legacy mode, the sender identity its credential binds to.
    pub mode: WebhookAuthMode,
    /// The sender identity of a legacy (HMAC) registration.
    pub legacy_sender: Option<String>,
    /// One line on stderr per webhook: status, outcome, elapsed time and,
    /// for claimed events, the verified sender, keyid and idempotency key
    /// (never bodies or headers). Default off; the CLI turns it on.
    pub access_log: bool,
    /// Bound on receiving one request's headers, from when the gateway
    /// starts waiting for them (so also an idle keep-alive connection's
    /// wait for its next request): past it the connection is closed
    /// (slowloris). Default 10 s.
    pub header_timeout: Duration,
    /// Bound on receiving one request's whole body, from the handler's
    /// start: past it the request is answered `408`. Default 30 s.
    pub body_timeout: Duration,
    /// Most webhook requests handled at once; beyond it a request is
    /// answered `503` with `Retry-After: 1` at once (load shedding), so a
    /// flood cannot queue unbounded work. Probes and `/metrics` are not
    /// counted. Default 512.
    pub max_concurrency: usize,
    /// Checks the Ed25519 signatures of concurrent webhooks (in request
    /// mode, signed requests) together on this batcher's threads
    /// (`batch_verify`; see [`adcp_verify::SignatureBatcher`]). Default
    /// none: each signature is checked on its own task.
    pub signature_batcher: Option<adcp_verify::SignatureBatcher>,
    /// The verifier's and the store's clock (Unix seconds). Default: the
    /// system clock. For tests and simulations.
    pub clock: Option<Arc<dyn Clock>>,
    /// Per discovered seller, its resolver's count of `jwks_uri` changes
    /// (`adcp_jwks::HttpsKeyResolver::jwks_uri_changes`), exported as
    /// `adcp_gateway_jwks_uri_changes_total{agent}`. Default none;
    /// [`Gateway::from_config`] fills it for discovered sellers.
    pub(crate) jwks_uri_changes: JwksUriChanges,
    /// Request mode: verify signed AdCP requests under this capability and
    /// proxy them to [`Self::upstream`] (the request's path and query
    /// appended), relaying the answer. Default `None`: webhook mode.
    /// [`Self::subscriptions`] and a legacy [`Self::mode`] do not apply to
    /// it.
    pub request: Option<RequestOptions>,
    /// What deletes the store's expired rows (the same store's
    /// [`PurgeExpired`], as `adcp_store::open_with_purge` returns it):
    /// [`Gateway::serve`] runs it every [`Self::purge_interval`] until
    /// shutdown. Default `None`: never; [`Gateway::from_config`] fills it
    /// for SQLite, PostgreSQL and memory stores. A gateway served through
    /// [`Gateway::router`] only does not purge.
    pub purge: Option<Arc<dyn PurgeExpired>>,
    /// How often [`Self::purge`] runs (the first time after at most 5 s);
    /// a failure is logged (`tracing`, warn) and counted
    /// (`adcp_gateway_store_purge_failures_total`), never fatal. Zero
    /// never purges. Default 300 s.
    pub purge_interval: Duration,
    /// What [`Gateway::reload`] starts from; set by
    /// [`Gateway::from_config`] only.
    pub(crate) reload: Option<ReloadSource>,
}

impl std::fmt::Debug for GatewayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayOptions")
            .field("upstream", &self.upstream.as_str())
            .field("upstream_timeout", &self.upstream_timeout)
            .field("upstream_idle_timeout", &self.upstream_idle_timeout)
            .field("public_url", &self.public_url.as_ref().map(url::Url::as_str))
            .field("accept_hosts", &self.accept_hosts)
            .field("tls", &self.tls)
            .field("revoked_kids", &self.revoked_kids)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("legacy_sender", &self.legacy_sender)
            .field("access_log", &self.access_log)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_concurrency", &self.max_concurrency)
            .field("signature_batcher", &self.signature_batcher)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .field("jwks_uri_changes", &self.jwks_uri_changes)
            .field("request", &self.request)
            .field("purge", &self.purge.as_ref().map(|_| "store"))
            .field("purge_interval", &self.purge_interval)
            .field("reloadable", &self.reload.is_some())
            .finish_non_exhaustive()
    }
}

impl GatewayOptions {
    /// Defaults, forwarding to `upstream`.
    #[must_use]
    pub fn new(upstream: url::Url) -> Self {
        Self {
            upstream,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            upstream_idle_timeout: None,
            public_url: None,
            accept_hosts: Vec::new(),
            tls: None,
            revoked_kids: Vec::new(),
            subscriptions: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            mode: WebhookAuthMode::Rfc9421,
            legacy_sender: None,
            access_log: false,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            signature_batcher: None,
            clock: None,
            jwks_uri_changes: JwksUriChanges::default(),
            request: None,
            purge: None,
            purge_interval: DEFAULT_PURGE_INTERVAL,
            reload: None,
        }
    }
}

/// A configured gateway, ready to serve on a listener.
#[derive(Clone)]
pub struct Gateway {
    state: Arc<Shared>,
}

struct Shared {
    /// The receivers and request verifier in force, replaced whole by a
    /// reload ([`Gateway::reload`]).
    verifying: std::sync::RwLock<Arc<Verifying>>,
    /// What a new verifying set is built with.
    build: Build,
    /// What a reload starts from (gateways built from a configuration).
    reload: Option<std::sync::Mutex<ReloadSource>>,
    store: Arc<dyn Store>,
    upstream: Upstream,
    target: Target,
    /// The certificate served, with or without a public URL.
    tls: Option<TlsConfig>,
    metrics: GatewayMetrics,
    access_log: bool,
    header_timeout: Duration,
    body_timeout: Duration,
    in_flight: Arc<tokio::sync::Semaphore>,
    /// Request mode's verifier and proxy; `None` in webhook mode.
    request: Option<RequestState>,
    /// The periodic purge [`Gateway::serve`] runs; `None`: never.
    purge: Option<Purge>,
    /// The claimed deliveries under way.
    deliveries: Deliveries,
}

/// What request mode serves with (its verifier is in [`Verifying`]).
struct RequestState {
    proxy: Proxy,
    /// The configured binding; `None`: inferred from each request's path.
    /// Where it is JSON-RPC (the MCP endpoint), a bodyless `GET` or
    /// `DELETE` is forwarded without verification.
    binding: Option<adcp_request::Binding>,
    /// Per-outcome counters (`verified`, `unsigned`, `failed`, or the
    /// refusal code).
    outcomes: adcp_webhook::Metrics,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstream", &self.state.upstream.url().as_str())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway verifying with `keys`, deduplicating in `store` (opened
    /// with `adcp_store::open`), as `options` say. [`Gateway::from_config`]
    /// builds the keys and the store from a [`GatewayConfig`](crate::GatewayConfig)
    /// instead.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Config`] when the options cannot work (upstream
    /// URL, public URL, limits, a legacy mode without a sender identity,
    /// malformed `ADCP_ADMISSION_*` thresholds, a TLS certificate naming
    /// no DNS name or IP address without a public URL or accept-host);
    /// [`GatewayError::Tls`] / [`GatewayError::HttpClient`] when the
    /// upstream's client cannot be built.
    pub fn new(
        keys: Arc<dyn KeyResolver>,
        store: Arc<dyn Store>,
        options: GatewayOptions,
    ) -> Result<Self, GatewayError> {
        let target = match (&options.public_url, &options.tls) {
            (Some(url), _) => Target::Public(PublicTarget::new(url, &options.accept_hosts)?),
            (None, Some(tls)) => {
                if options.accept_hosts.is_empty() {
                    // The certificate's names are the only Hosts accepted:
                    // without any, nothing could be; and a reload must keep
                    // some.
                    if !tls.has_names() {
                        return Err(ConfigError::TlsNoNames {
                            path: tls.cert_path().to_path_buf(),
                        }
                        .into());
                    }
                    tls.require_names();
                }
                Target::Tls {
                    tls: tls.clone(),
                    accept: canonical_authorities("https", &options.accept_hosts)?,
                }
            }
            (None, None) if !options.accept_hosts.is_empty() => {
                return Err(ConfigError::AcceptHostWithoutPublicUrl.into())
            }
            (None, None) => Target::Any,
        };
        let receiver_config = ReceiverConfig {
            max_body_bytes: options.max_body_bytes,
            scheme: target.scheme().to_owned(),
            ..ReceiverConfig::default()
        };
        // New-keyid admission-pressure alarms (spec "Webhook replay dedup
        // sizing"), required on webhook receivers: thresholds from the
        // ADCP_ADMISSION_* variables, starting values where unset (flagged,
        // so `threshold_tuning_overdue` fires if they are never tuned).
        let thresholds = AdmissionThresholds::from_env_or_starting_values(AdmissionThresholds::ENV_PREFIX)
            .map_err(ConfigError::AdmissionThresholds)?;
        if options.max_concurrency == 0 || options.max_concurrency > tokio::sync::Semaphore::MAX_PERMITS {
            return Err(ConfigError::Concurrency {
                max: tokio::sync::Semaphore::MAX_PERMITS,
            }
            .into());
        }
        if options.header_timeout.is_zero() || options.body_timeout.is_zero() {
            return Err(ConfigError::ZeroRequestTimeout.into());
        }
        if options.upstream_idle_timeout.is_some_and(|t| t.is_zero()) {
            // `None` is no bound; zero would cut every stream at once.
            return Err(ConfigError::ZeroDuration {
                setting: "upstream-idle-timeout",
            }
            .into());
        }
        // One receiver per verification mode: the configured one for every
        // URL, and one per legacy registration for deliveries to its URL
        // (its credential, its seller). They share keys, store and
        // registrations; a reload builds them again.
        let build = Build {
            store: Arc::clone(&store),
            receiver_config,
            thresholds,
            clock: options.clock.clone(),
            max_body_bytes: options.max_body_bytes,
            batcher: options.signature_batcher.clone(),
            request_replay: None,
            metrics: Arc::default(),
            url_metrics: std::sync::Mutex::default(),
        };
        let policy = Policy {
            keys,
            revoked_kids: options.revoked_kids.clone(),
            subscriptions: options.subscriptions.clone(),
            mode: options.mode.clone(),
            legacy_sender: options.legacy_sender.clone(),
            request: options.request.clone(),
        };
        let verifying = build.verifying(&policy)?;
        let metrics = GatewayMetrics::with_jwks_uri_changes(options.jwks_uri_changes);
        let request = match &options.request {
            Some(request) => Some(RequestState {
                proxy: Proxy::new(
                    options.upstream.clone(),
                    options.upstream_timeout,
                    options.upstream_idle_timeout,
                    metrics.relays(),
                )?,
                binding: request.binding,
                outcomes: adcp_webhook::Metrics::default(),
            }),
            None => None,
        };
        let upstream = Upstream::new(options.upstream, options.upstream_timeout)?;
        let purge = Purge::new(options.purge.as_ref(), options.purge_interval, options.clock.as_ref());
        Ok(Self {
            state: Arc::new(Shared {
                verifying: std::sync::RwLock::new(Arc::new(verifying)),
                build,
                reload: options.reload.map(std::sync::Mutex::new),
                store,
                upstream,
                target,
                tls: options.tls,
                metrics,
                access_log: options.access_log,
                header_timeout: options.header_timeout,
                body_timeout: options.body_timeout,
                in_flight: Arc::new(tokio::sync::Semaphore::new(options.max_concurrency)),
                request,
                purge,
                deliveries: Deliveries::default(),
            }),
        })
    }

    /// The receiver in force (its per-outcome counters:
    /// [`Receiver::metrics`], which carry over reloads); a
    /// [`reload`](Self::reload) replaces it.
    #[must_use]
    pub fn receiver(&self) -> Receiver {
        self.verifying().receiver.clone()
    }

    /// Request mode's per-outcome counters (`verified`, `unsigned`,
    /// `failed` for forwarded requests; the refusal code otherwise);
    /// `None` in webhook mode.
    #[must_use]
    pub fn request_outcomes(&self) -> Option<&adcp_webhook::Metrics> {
        self.state.request.as_ref().map(|r| &r.outcomes)
    }

    /// Request mode's verifier in force; `None` in webhook mode. A
    /// [`reload`](Self::reload) replaces it.
    #[must_use]
    pub fn request_verifier(&self) -> Option<RequestVerifier> {
        self.verifying().request.clone()
    }

    /// The receivers and verifier in force.
    fn verifying(&self) -> Arc<Verifying> {
        self.state.verifying()
    }

    /// Replaces the receivers and verifier in force.
    pub(crate) fn install(&self, verifying: Verifying) {
        *self
            .state
            .verifying
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(verifying);
    }

    /// What new receivers and verifiers are built with.
    pub(crate) fn build(&self) -> &Build {
        &self.state.build
    }

    /// What a reload starts from, for a gateway built from a configuration.
    pub(crate) fn reload_source(&self) -> Option<&std::sync::Mutex<ReloadSource>> {
        self.state.reload.as_ref()
    }

    /// The gateway's own counters.
    #[must_use]
    pub fn metrics(&self) -> &GatewayMetrics {
        &self.state.metrics
    }

    /// The TLS certificate it serves with, if any.
    #[must_use]
    pub fn tls(&self) -> Option<&TlsConfig> {
        self.state.tls.as_ref()
    }

    /// Waits until no claimed delivery is under way. A claimed event's
    /// upstream forward and the recording of its outcome (complete or
    /// release) run to their end in a task of their own, even when the
    /// sender hangs up meanwhile; [`GatewayHandle::shutdown`] waits for
    /// them itself. A gateway served through [`Self::router`] in a server
    /// of one's own: await this after that server's graceful shutdown and
    /// before the runtime stops, or a delivery cut there keeps its claim
    /// until its lease expires.
    pub async fn settled(&self) {
        self.state.deliveries.settled().await;
    }

    /// Whether the store answers now (what `/readyz` reports).
    pub async fn ready(&self) -> bool {
        probe(&self.state.store).await
    }

    /// The axum router: `/healthz`, `/readyz`, `/metrics`, and every other
    /// path takes webhooks. A [`tower::Service`](https://docs.rs/tower/latest/tower/trait.Service.html)
    /// to serve with your own server or nest under your own routes
    /// (`Router::nest_service`); [`serve`](Self::serve) adds the header
    /// timeout of HTTP/1.1 and h2c on top of it. The body timeout, load
    /// shedding and the access log are in the router.
    ///
    /// In request mode, a streamed answer (an MCP event stream) served
    /// through this router lasts as long as the upstream keeps it open, so
    /// a server's graceful shutdown may wait for it without end: serve
    /// [`router_with_stream_stopper`](Self::router_with_stream_stopper)
    /// instead.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics_text))
            .fallback(webhook)
            .with_state(Arc::clone(&self.state))
    }

    /// [`router`](Self::router), and what ends the streamed answers it
    /// relays: call [`StreamStopper::stop`] when your server's graceful
    /// shutdown begins, and the open streams end (the client's body ends
    /// in an error, the upstream connection is closed, each counted as
    /// ended by a `shutdown`), so the shutdown waits only for ordinary
    /// requests. [`serve`](Self::serve) does this itself.
    ///
    /// ```no_run
    /// # async fn run(gateway: adcp_gateway::Gateway, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    /// let (router, streams) = gateway.router_with_stream_stopper();
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let server = tokio::spawn(axum::serve(listener, router).with_graceful_shutdown(async move {
    ///     let _ = stopped.await;
    ///     streams.stop();
    /// }).into_future());
    /// // … later, to shut down:
    /// let _ = stop.send(());
    /// server.await.map_err(std::io::Error::other)??;
    /// # Ok(())
    /// # }
    /// ```
    pub fn router_with_stream_stopper(&self) -> (Router, StreamStopper) {
        let (stop_streams, streams_stopped) = tokio::sync::watch::channel(());
        let router = self
            .router()
            .layer(axum::Extension(crate::request::StreamsStop(streams_stopped)));
        (router, StreamStopper(stop_streams))
    }

    /// Serves on `listener` in a background task until
    /// [`GatewayHandle::shutdown`]: HTTP/1.1 (each request head bounded by
    /// [`GatewayOptions::header_timeout`]) and HTTP/2 with prior knowledge;
    /// with [`GatewayOptions::tls`], HTTPS instead, HTTP/2 or HTTP/1.1 by
    /// ALPN (the TLS handshake bounded by the header timeout too). With
    /// [`GatewayOptions::purge`], the store's expired rows are purged
    /// every [`GatewayOptions::purge_interval`] while it serves.
    ///
    /// # Errors
    ///
    /// The listener's address could not be read, or the TLS server
    /// configuration could not be built.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> std::io::Result<GatewayHandle> {
        let addr = listener.local_addr()?;
        let tls = match self.tls() {
            Some(tls) => Some(tokio_rustls::TlsAcceptor::from(
                tls.server_config().map_err(std::io::Error::other)?,
            )),
            None => None,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // Request mode's streamed answers end when this server stops (the
        // sender is dropped then), or its graceful shutdown would wait for
        // event streams that may never end.
        let (app, StreamStopper(stop_streams)) = self.router_with_stream_stopper();
        let header_timeout = self.state.header_timeout;
        // The purge runs as long as the server: stopped (its sender
        // dropped) once the last in-flight request has been answered.
        let purge = self.state.purge.clone().map(|purge| {
            let (stop_purge, purge_stopped) = tokio::sync::oneshot::channel::<()>();
            (stop_purge, tokio::spawn(purge.run(self.clone(), purge_stopped)))
        });
        let gateway = self.clone();
        let task = tokio::spawn(async move {
            let served = serve_connections(listener, tls, app, header_timeout, stopped, stop_streams).await;
            // Deliveries whose sender hung up are still recorded.
            gateway.settled().await;
            if let Some((stop_purge, purging)) = purge {
                drop(stop_purge);
                let _ = purging.await;
            }
            served
        });
        Ok(GatewayHandle {
            addr,
            stop: Some(stop),
            task,
            gateway: self.clone(),
        })
    }
}

/// The accept loop: one connection task per client (HTTP/1.1 with a
/// header read timeout, or h2c; over TLS when `tls` is given); on
/// `stopped`, stop accepting, end the streamed answers still relayed
/// (dropping `stop_streams`), let every connection finish its request in
/// flight, and return.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    header_timeout: Duration,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    stop_streams: tokio::sync::watch::Sender<()>,
) -> std::io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // HTTP/1.1, and HTTP/2 with prior knowledge (h2c), as `axum::serve`
    // serves, or over TLS either one as ALPN chose (the builder tells them
    // apart by the HTTP/2 preface in both cases); HTTP/1.1 request heads are bounded by the header timeout,
    // HTTP/2 connections are pinged at that interval and closed when a ping
    // goes unanswered as long.
    let mut http = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    http.http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    http.http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(header_timeout)
        .keep_alive_timeout(header_timeout);
    let http = Arc::new(http);
    let service = hyper_util::service::TowerToHyperService::new(app);
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, _) = match accepted {
            Ok(pair) => pair,
            Err(e) if is_connection_error(&e) => continue,
            Err(_) => {
                // Out of file descriptors or the like: back off instead
                // of spinning (as axum::serve does).
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let Some(tls) = &tls else {
            let io = hyper_util::rt::TokioIo::new(stream);
            let connection = graceful.watch(http.serve_connection(io, service.clone()).into_owned());
            tokio::spawn(async move {
                // A client that is too slow, or hangs up, ends its own
                // connection; nothing to report.
                let _ = connection.await;
            });
            continue;
        };
        // The handshake runs in the connection's task, so a slow client
        // never holds up the accept loop; the certificate is the current
        // one when the client's hello arrives.
        let (tls, http, service, watcher) = (tls.clone(), Arc::clone(&http), service.clone(), graceful.watcher());
        tokio::spawn(async move {
            let Ok(Ok(stream)) = tokio::time::timeout(header_timeout, tls.accept(stream)).await else {
                return;
            };
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = watcher.watch(http.serve_connection(io, service).into_owned()).await;
        });
    }
    drop(listener);
    drop(stop_streams);
    graceful.shutdown().await;
    Ok(())
}

/// Errors of one accepted connection, not of the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Ends the streamed answers relayed through the router of
/// [`Gateway::router_with_stream_stopper`]. Dropping it ends them too:
/// keep it for as long as that router serves.
#[derive(Debug)]
pub struct StreamStopper(tokio::sync::watch::Sender<()>);

impl StreamStopper {
    /// Ends every stream the router relays now, and any it starts later.
    pub fn stop(self) {
        drop(self);
    }
}

/// A running gateway.
#[derive(Debug)]
pub struct GatewayHandle {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    gateway: Gateway,
}

impl GatewayHandle {
    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` when serving TLS.
    #[must_use]
    pub fn base_url(&self) -> String {
        let scheme = if self.gateway.tls().is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Reads the TLS certificate and key files again and serves the new
    /// certificate to new connections; open connections keep theirs. On
    /// error the current certificate stays in use ([`TlsConfig::reload`]).
    ///
    /// # Errors
    ///
    /// [`ConfigError::NoTls`] when serving plain HTTP; those of
    /// [`TlsConfig::reload`].
    pub fn reload_tls(&self) -> Result<(), ConfigError> {
        self.gateway.tls().ok_or(ConfigError::NoTls)?.reload()
    }

    /// The gateway it runs.
    #[must_use]
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// Stops accepting connections and waits until in-flight requests
    /// have been answered and every claimed delivery, its sender gone or
    /// not, has been forwarded and recorded ([`Gateway::settled`]).
    ///
    /// # Errors
    ///
    /// The server failed, or its task panicked.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.wait().await
    }

    /// Waits until the server stops (after [`shutdown`](Self::shutdown) or
    /// an error).
    ///
    /// # Errors
    ///
    /// The server failed, or its task panicked.
    pub async fn wait(&mut self) -> std::io::Result<()> {
        (&mut self.task).await.map_err(std::io::Error::other)?
    }

    /// Starts a graceful shutdown without waiting.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A read-only store round trip: `lookup` of a key no sender uses.
async fn probe(store: &Arc<dyn Store>) -> bool {
    let key = SenderKey {
        sender: "urn:adcp-gateway:readiness-probe",
        idempotency_key: "probe",
    };
    let now = adcp_sigbase::Clock::now(&adcp_sigbase::SystemClock);
    matches!(
        tokio::time::timeout(READINESS_TIMEOUT, store.lookup(key, now)).await,
        Ok(Ok(_))
    )
}

async fn readyz(State(state): State<Arc<Shared>>) -> Response {
    if probe(&state.store).await {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
    }
}

async fn metrics_text(State(state): State<Arc<Shared>>) -> Response {
    let mut body = if let Some(request) = &state.request {
        state.metrics.render_requests(&request.outcomes)
    } else {
        let receivers = state.build.all_metrics();
        state.metrics.render_receivers(receivers.iter().map(AsRef::as_ref))
    };
    if let Some(batcher) = &state.build.batcher {
        crate::metrics::render_batcher(&mut body, &batcher.stats());
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn webhook(State(state): State<Arc<Shared>>, request: Request) -> Response {
    // The set in force when the request starts; a reload meanwhile does
    // not change it under the request.
    let verifying = state.verifying();
    if let (Some(mode), Some(verifier)) = (&state.request, &verifying.request) {
        return signed_request(&state, mode, verifier, request).await;
    }
    if request.method() != Method::POST {
        return closing(error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            answer::METHOD_NOT_ALLOWED,
            None,
        ));
    }
    let started = Instant::now();
    // Load shedding: past the limit, answer at once rather than queue.
    let Ok(permit) = Arc::clone(&state.in_flight).try_acquire_owned() else {
        state.metrics.shed();
        let response = closing(error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            answer::OVERLOADED,
            Some(OVERLOAD_RETRY_AFTER_SECS),
        ));
        log(&state, &response, "overloaded", started.elapsed(), None);
        return response;
    };
    let (parts, body) = request.into_parts();
    {
        if let Err(refusal) = state.target.check_received(&parts, CodePrefix::Webhook) {
            verifying.receiver.metrics().incr(refusal.code_str());
            let response = closing(refusal_response(&refusal));
            log(&state, &response, refusal.code_str(), started.elapsed(), None);
            return response;
        }
    }
    let body = DeadlineBody::new(body, state.body_timeout);
    let expired = body.expired();
    let ended = body.ended();
    let receiver = verifying.receiver_for(&state.target, &parts);
    let delivery = match receiver.decide_streaming(&parts, body).await {
        Decision::Reply(_) if expired.load(Ordering::Relaxed) => {
            let response = error_response(StatusCode::REQUEST_TIMEOUT, answer::BODY_TIMEOUT, None);
            return answered(&state, response, &ended, started, answer::BODY_TIMEOUT.0, None);
        }
        Decision::Reply(reply) => {
            let outcome = reply.outcome();
            return answered(&state, reply.into_response::<Body>(), &ended, started, outcome, None);
        }
        Decision::Deliver(delivery) => delivery,
    };
    // The event is claimed: forwarding it and recording the outcome
    // (complete or release) run in a task of their own, to their end even
    // if the sender hangs up meanwhile (its attempt timed out, its
    // connection closed). Awaited in the request's future, they would be
    // dropped with it between the claim and its completion: the claim
    // held for its whole lease, then the event forwarded again although
    // the upstream had applied it. Dropping this handler drops only the
    // `JoinHandle`, which does not cancel the task. The task keeps the
    // request's concurrency slot (so detached deliveries count against
    // `max_concurrency`), is bounded by the upstream timeout and the
    // store's operation timeout, and `GatewayHandle::shutdown` waits for
    // it ([`Gateway::settled`]).
    let settling = Settling::enter(&state);
    let receiver = receiver.clone();
    let delivering = Arc::clone(&state);
    let task = tokio::spawn(
        async move {
            let _held = (permit, settling);
            let (response, outcome, event) = deliver(&delivering, &receiver, &delivery).await;
            answered(&delivering, response, &ended, started, outcome, event)
        }
        .instrument(tracing::Span::current()),
    );
    match task.await {
        Ok(response) => response,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: only when the runtime shuts down under it; the claim
        // then expires with its lease.
        Err(_) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            answer::UPSTREAM_UNAVAILABLE,
            Some(UNAVAILABLE_RETRY_AFTER_SECS),
        ),
    }
}

/// A claimed delivery: posts it upstream, then records the outcome
/// (`complete` on a `2xx`, `release` otherwise). The response, its
/// outcome label and the access log's event.
async fn deliver(state: &Shared, receiver: &Receiver, delivery: &Delivery) -> (Response, &'static str, Option<String>) {
    let w = delivery.webhook();
    let event = Some(format!(
        "sender={:?} keyid={:?} idempotency_key={:?}",
        w.sender(),
        w.keyid().unwrap_or("-"),
        w.idempotency_key()
    ));
    match state.upstream.forward(w).await {
        Ok(()) => match receiver.complete(delivery).await {
            Ok(()) => {
                state.metrics.forwarded();
                (StatusCode::OK.into_response(), "forwarded", event)
            }
            Err(reply) => {
                let outcome = reply.outcome();
                (reply.into_response::<Body>(), outcome, event)
            }
        },
        Err(failure) => {
            state.metrics.upstream_failed(failure);
            receiver.release(delivery).await;
            let outcome = match failure {
                UpstreamFailure::Status => "upstream_failed:status",
                UpstreamFailure::Timeout => "upstream_failed:timeout",
                UpstreamFailure::Connect => "upstream_failed:connect",
            };
            let response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                answer::UPSTREAM_UNAVAILABLE,
                Some(UNAVAILABLE_RETRY_AFTER_SECS),
            );
            (response, outcome, event)
        }
    }
}

/// A webhook's answer as given: `Connection: close` unless its body was
/// read, its latency observed, its access log line written.
fn answered(
    state: &Shared,
    response: Response,
    ended: &AtomicBool,
    started: Instant,
    outcome: &str,
    event: Option<String>,
) -> Response {
    let response = close_unless_read(response, ended);
    let elapsed = started.elapsed();
    state.metrics.observe(elapsed);
    log(state, &response, outcome, elapsed, event);
    response
}

/// The claimed deliveries still being forwarded or recorded, whether or
/// not their sender still waits ([`Gateway::settled`] waits for none to
/// be left).
#[derive(Default)]
struct Deliveries {
    running: AtomicUsize,
    settled: tokio::sync::Notify,
}

impl Deliveries {
    /// Until none is running.
    async fn settled(&self) {
        loop {
            let mut notified = std::pin::pin!(self.settled.notified());
            notified.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// One running claimed delivery, counted in [`Shared::deliveries`] from
/// before its task is spawned until the task ends (or is dropped).
struct Settling(Arc<Shared>);

impl Settling {
    fn enter(state: &Arc<Shared>) -> Self {
        state.deliveries.running.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(state))
    }
}

impl Drop for Settling {
    fn drop(&mut self) {
        if self.0.deliveries.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.deliveries.settled.notify_waiters();
        }
    }
}

/// Request mode: the load shedding, authority check and body deadline of
/// webhook mode, then the request verifier; an accepted request is proxied
/// upstream and the upstream's answer relayed, a refused one answered by
/// the verifier's [`adcp_request::Reply`] (nothing forwarded).
async fn signed_request(state: &Shared, mode: &RequestState, verifier: &RequestVerifier, request: Request) -> Response {
    let started = Instant::now();
    let finish = |response: Response, outcome: &'static str, event: Option<String>| {
        mode.outcomes.incr(outcome);
        let elapsed = started.elapsed();
        state.metrics.observe(elapsed);
        log(state, &response, outcome, elapsed, event);
        response
    };
    // Every POST is verified. On the MCP endpoint (JSON-RPC binding), a
    // GET (the server-to-client event stream) or DELETE (the end of a
    // session) carries no AdCP operation: forwarded unverified, if
    // bodyless. Any other method is refused.
    let unverified = match *request.method() {
        Method::POST => None,
        Method::GET if mode.is_json_rpc(request.uri().path()) => Some("unsigned_get"),
        Method::DELETE if mode.is_json_rpc(request.uri().path()) => Some("unsigned_delete"),
        _ => {
            return finish(
                closing(error_response(
                    StatusCode::METHOD_NOT_ALLOWED,
                    answer::REQUEST_METHOD_NOT_ALLOWED,
                    None,
                )),
                answer::REQUEST_METHOD_NOT_ALLOWED.0,
                None,
            );
        }
    };
    let stop = request.extensions().get::<crate::request::StreamsStop>().cloned();
    let Ok(_permit) = Arc::clone(&state.in_flight).try_acquire_owned() else {
        state.metrics.shed();
        let response = closing(error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            answer::OVERLOADED_REQUESTS,
            Some(OVERLOAD_RETRY_AFTER_SECS),
        ));
        return finish(response, "overloaded", None);
    };
    let (parts, body) = request.into_parts();
    if let Err(refusal) = state.target.check_received(&parts, CodePrefix::Request) {
        return finish(closing(refusal_response(&refusal)), refusal.code_str(), None);
    }
    let Some(target) = crate::request::canonical_target(&parts) else {
        let response = closing(error_response(
            StatusCode::BAD_REQUEST,
            answer::PATH_NOT_FORWARDABLE,
            None,
        ));
        return finish(response, answer::PATH_NOT_FORWARDABLE.0, None);
    };
    if let Some(outcome) = unverified {
        if has_body(&parts.headers, &body) {
            let response = closing(error_response(StatusCode::BAD_REQUEST, answer::BODY_NOT_ALLOWED, None));
            return finish(response, answer::BODY_NOT_ALLOWED.0, None);
        }
        let event = Some(format!("method={:?}", parts.method.as_str()));
        let forwarded = mode
            .proxy
            .forward(&parts, &target, None, crate::request::Marking::UNVERIFIED, stop)
            .await;
        return relayed(state, forwarded, outcome, event, finish);
    }
    let body = DeadlineBody::new(body, state.body_timeout);
    let expired = body.expired();
    let ended = body.ended();
    let (body, auth) = match verifier.verify_streaming(&parts, body).await {
        Ok(accepted) => accepted,
        Err(_) if expired.load(Ordering::Relaxed) => {
            let response = error_response(StatusCode::REQUEST_TIMEOUT, answer::BODY_TIMEOUT, None);
            return finish(close_unless_read(response, &ended), answer::BODY_TIMEOUT.0, None);
        }
        Err(reply) => {
            let outcome = reply.code();
            return finish(close_unless_read(reply.into_response::<Body>(), &ended), outcome, None);
        }
    };
    let state_label = crate::request::signature_state(&auth);
    let event = Some(match auth.signer() {
        Some(signer) => format!(
            "agent={:?} keyid={:?} operation={:?}",
            signer.agent_url,
            signer.keyid,
            auth.operation().or(auth.protocol_method()).unwrap_or("-")
        ),
        None => format!(
            "operation={:?}",
            auth.operation().or(auth.protocol_method()).unwrap_or("-")
        ),
    });
    let forwarded = mode
        .proxy
        .forward(&parts, &target, Some(body), crate::request::Marking::of(&auth), stop)
        .await;
    relayed(state, forwarded, state_label, event, finish)
}

/// Request mode: the upstream's answer relayed under `outcome`, or the
/// gateway's `502` / `504` when it could not be had.
fn relayed(
    state: &Shared,
    forwarded: Result<Response, UpstreamFailure>,
    outcome: &'static str,
    event: Option<String>,
    finish: impl FnOnce(Response, &'static str, Option<String>) -> Response,
) -> Response {
    match forwarded {
        Ok(response) => {
            state.metrics.forwarded();
            finish(response, outcome, event)
        }
        Err(failure) => {
            state.metrics.upstream_failed(failure);
            let (status, answer, outcome) = match failure {
                UpstreamFailure::Timeout => (
                    StatusCode::GATEWAY_TIMEOUT,
                    answer::UPSTREAM_TIMEOUT,
                    "upstream_failed:timeout",
                ),
                _ => (
                    StatusCode::BAD_GATEWAY,
                    answer::UPSTREAM_UNREACHABLE,
                    "upstream_failed:connect",
                ),
            };
            finish(error_response(status, answer, None), outcome, event)
        }
    }
}

/// Whether a request has a body, or may have one: a `Content-Length`
/// other than `0`, any `Transfer-Encoding` (HTTP/1.1 chunked), or a body
/// not already at its end (HTTP/2 `DATA` frames).
fn has_body(headers: &http::HeaderMap, body: &Body) -> bool {
    let length = headers
        .get_all(header::CONTENT_LENGTH)
        .iter()
        .any(|v| v.as_bytes().iter().any(|b| *b != b'0'));
    length || headers.contains_key(header::TRANSFER_ENCODING) || !http_body::Body::is_end_stream(body)
}

/// The access log line: status, outcome, the verified identity; never
/// bodies or headers.
fn log(state: &Shared, response: &Response, outcome: &str, elapsed: Duration, event: Option<String>) {
    if state.access_log {
        eprintln!(
            "{} {} {outcome} {:.1}ms{}",
            if state.request.is_some() { "request" } else { "webhook" },
            response.status().as_u16(),
            elapsed.as_secs_f64() * 1000.0,
            event.map(|e| format!(" {e}")).unwrap_or_default()
        );
    }
}

/// A request body that fails once `timeout` has passed since the handler
/// started reading it (a client trickling its body holds a concurrency
/// slot at most that long).
struct DeadlineBody {
    inner: Body,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
}

impl DeadlineBody {
    fn new(inner: Body, timeout: Duration) -> Self {
        let ended = Arc::new(AtomicBool::new(http_body::Body::is_end_stream(&inner)));
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            expired: Arc::new(AtomicBool::new(false)),
            ended,
        }
    }

    /// Set once the deadline has passed while the body was being read.
    fn expired(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.expired)
    }

    /// Set once the body has been read to its end.
    fn ended(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.ended)
    }
}

/// An answer given before the request's body was read to its end (a
/// `413` on `Content-Length`, a refusal on the signature headers, a body
/// timeout) closes the connection, and says so. hyper discards an unread
/// body only if it has already arrived, and otherwise closes the
/// connection after the answer anyway; without `Connection: close` a
/// client may meanwhile send its next request on that connection and
/// lose it ("connection closed before message completed").
fn close_unless_read(response: Response, ended: &AtomicBool) -> Response {
    if ended.load(Ordering::Relaxed) {
        response
    } else {
        closing(response)
    }
}

/// An answer given before the request's body was touched (a method not
/// allowed, load shedding, a refused `Host`): closes the connection, and
/// says so (see [`close_unless_read`]).
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

impl http_body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::Relaxed);
            return std::task::Poll::Ready(Some(Err(axum::Error::new("request body timed out"))));
        }
        let frame = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        match &frame {
            std::task::Poll::Ready(None) => this.ended.store(true, Ordering::Relaxed),
            std::task::Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => {
                this.ended.store(true, Ordering::Relaxed);
            }
            _ => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl RequestState {
    /// Whether `path` is on the MCP endpoint: its binding (the configured
    /// one, or the one inferred from the path) is JSON-RPC.
    fn is_json_rpc(&self, path: &str) -> bool {
        self.binding.unwrap_or_else(|| adcp_request::Binding::infer(path)) == adcp_request::Binding::JsonRpc
    }
}

impl Shared {
    /// The receivers and verifier in force.
    fn verifying(&self) -> Arc<Verifying> {
        Arc::clone(&self.verifying.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl Verifying {
    /// The receiver for the URL a request arrived at: a legacy
    /// registration's own, else the gateway's.
    fn receiver_for(&self, target: &Target, parts: &http::request::Parts) -> &Receiver {
        if self.by_url.is_empty() {
            return &self.receiver;
        }
        let scheme = target.scheme();
        let authority = match parts.uri.authority() {
            Some(authority) => Some(authority.as_str()),
            None => parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()),
        };
        let path = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        authority
            .and_then(|authority| adcp_canon::canonicalize_received(format!("{scheme}://{authority}{path}")).ok())
            .and_then(|url| self.by_url.get(url.as_str()))
            .unwrap_or(&self.receiver)
    }
}

/// The gateway's own answers (the receiver's carry their codes already):
/// a code and its fixed message, in the receiver's body shape.
mod answer {
    /// A code and its message.
    pub(super) type Answer = (&'static str, &'static str);
    /// Not a `POST` (`405`).
    pub(super) const METHOD_NOT_ALLOWED: Answer = ("method_not_allowed", "Webhooks are delivered with POST.");
    /// Request mode: not a `POST`, nor a `GET` / `DELETE` on the MCP
    /// endpoint (`405`).
    pub(super) const REQUEST_METHOD_NOT_ALLOWED: Answer = (
        "method_not_allowed",
        "Signed AdCP requests are sent with POST; GET and DELETE only on the MCP endpoint.",
    );
    /// Request mode: a `GET` or `DELETE` with a body (`400`).
    pub(super) const BODY_NOT_ALLOWED: Answer = (
        "body_not_allowed",
        "GET and DELETE carry no body here; AdCP operations are sent with a POST.",
    );
    /// Request mode: a request target that does not canonicalize, so
    /// there is no path to forward (`400`).
    pub(super) const PATH_NOT_FORWARDABLE: Answer = (
        "path_not_forwardable",
        "The request target is not a valid URI path and query.",
    );
    /// Request mode: shed under load (`503`).
    pub(super) const OVERLOADED_REQUESTS: Answer = ("overloaded", "Too many requests in flight; retry later.");
    /// Request mode: the upstream could not be reached (`502`).
    pub(super) const UPSTREAM_UNREACHABLE: Answer = ("upstream_unavailable", "The upstream could not be reached.");
    /// Request mode: the upstream did not answer in time (`504`).
    pub(super) const UPSTREAM_TIMEOUT: Answer = ("upstream_timeout", "The upstream did not answer in time.");
    /// Shed under load (`503`).
    pub(super) const OVERLOADED: Answer = ("overloaded", "Too many webhooks in flight; retry later.");
    /// The body did not arrive in time (`408`).
    pub(super) const BODY_TIMEOUT: Answer = ("body_timeout", "The body did not arrive in time.");
    /// The upstream did not take the event (`503`; the claim is released).
    pub(super) const UPSTREAM_UNAVAILABLE: Answer = (
        "upstream_unavailable",
        "The event could not be delivered upstream; retry later.",
    );
}

/// A non-`2xx` answer of the gateway itself: `{"error", "message"}` and,
/// for a `503`, `Retry-After`.
fn error_response(status: StatusCode, (code, message): answer::Answer, retry_after: Option<u64>) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        adcp_webhook::error_body(code, message),
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// A verification refusal answered by the gateway before the receiver: the
/// spec's challenge and the code's fixed message.
fn refusal_response(refusal: &adcp_verify::VerifyError) -> Response {
    let status = StatusCode::from_u16(refusal.code().http_status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = error_response(status, (refusal.code_str(), refusal.message()), None);
    if let Some(challenge) = refusal.www_authenticate().and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// Which authorities a request may arrive for, and the signed target's
/// scheme.
enum Target {
    /// Plain HTTP without a public URL: `http`, any received authority.
    Any,
    /// A public URL: its scheme, its authority or an `--accept-host`.
    Public(PublicTarget),
    /// TLS without a public URL: `https`, a name (DNS or IP address) of
    /// the current certificate (any port) or an `--accept-host`
    /// (canonical, port included).
    Tls { tls: TlsConfig, accept: Vec<String> },
}

impl Target {
    /// The scheme the signed `@target-uri` is rebuilt with.
    fn scheme(&self) -> &str {
        match self {
            Self::Any => "http",
            Self::Public(public) => &public.scheme,
            Self::Tls { .. } => "https",
        }
    }

    /// The authority the request arrived for (the request target's, else
    /// `Host`; what the receiver builds `@target-uri` from) must be one of
    /// ours once canonicalized; else the request is refused with
    /// `webhook_target_uri_malformed` before the receiver. The bytes are
    /// not rewritten: the verifier derives `@authority` from what was
    /// received, as the spec says.
    fn check_received(&self, parts: &http::request::Parts, prefix: CodePrefix) -> Result<(), adcp_verify::VerifyError> {
        use adcp_verify::{ErrorCode, Step, VerifyError};
        let (accepted, refusal) = match self {
            Self::Any => return Ok(()),
            Self::Public(public) => (
                &public.authorities,
                "received authority is neither --public-url's nor an --accept-host",
            ),
            Self::Tls { accept, .. } => (
                accept,
                "received authority is neither a name (DNS or IP address) of the TLS certificate nor an --accept-host",
            ),
        };
        let refuse = |detail: &str| VerifyError::new(ErrorCode::TargetUriMalformed, prefix, Step::new(10), detail);
        let received = match parts.uri.authority() {
            Some(authority) => Some(authority.as_str()),
            None => parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()),
        };
        let received = received.ok_or_else(|| refuse("no Host or :authority"))?;
        let Some(canonical) = canonical_authority(self.scheme(), received) else {
            return Err(refuse("received authority does not canonicalize"));
        };
        if accepted.contains(&canonical) {
            return Ok(());
        }
        if let Self::Tls { tls, .. } = self {
            if tls.covers(host_of(&canonical)) {
                return Ok(());
            }
        }
        Err(refuse(refusal))
    }
}

/// The host of a canonical authority (`host`, `host:port`, `[v6]`,
/// `[v6]:port`), an IPv6 address with its brackets.
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |end| &authority[..=end]);
    }
    authority.rsplit_once(':').map_or(authority, |(host, _)| host)
}

/// `--accept-host` entries in canonical form under `scheme`, without
/// duplicates.
fn canonical_authorities(scheme: &str, accept_hosts: &[String]) -> Result<Vec<String>, ConfigError> {
    let mut authorities = Vec::with_capacity(accept_hosts.len());
    push_canonical(
        &mut authorities,
        scheme,
        "--accept-host",
        accept_hosts.iter().map(String::as_str),
    )?;
    Ok(authorities)
}

/// Appends the canonical forms of `entries` (of setting `flag`) not yet in
/// `authorities`.
fn push_canonical<'a>(
    authorities: &mut Vec<String>,
    scheme: &str,
    flag: &'static str,
    entries: impl IntoIterator<Item = &'a str>,
) -> Result<(), ConfigError> {
    for authority in entries {
        let canonical = canonical_authority(scheme, authority).ok_or_else(|| ConfigError::Authority {
            setting: flag,
            authority: authority.to_owned(),
        })?;
        if !authorities.contains(&canonical) {
            authorities.push(canonical);
        }
    }
    Ok(())
}

/// The public URL's scheme and the canonical authorities requests may
/// arrive for.
struct PublicTarget {
    scheme: String,
    authorities: Vec<String>,
}

impl PublicTarget {
    fn new(url: &url::Url, accept_hosts: &[String]) -> Result<Self, ConfigError> {
        let scheme = url.scheme().to_owned();
        if !matches!(scheme.as_str(), "http" | "https") {
            return Err(ConfigError::PublicUrlScheme { scheme });
        }
        let host = url.host_str().ok_or(ConfigError::PublicUrlHost)?;
        let public = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let mut authorities = Vec::with_capacity(1 + accept_hosts.len());
        push_canonical(&mut authorities, &scheme, "--public-url", [public.as_str()])?;
        push_canonical(
            &mut authorities,
            &scheme,
            "--accept-host",
            accept_hosts.iter().map(String::as_str),
        )?;
        Ok(Self { scheme, authorities })
    }
}

/// The AdCP canonical form of `authority` under `scheme` (lowercase,
/// IDNA, default port removed), or `None` when it is not an authority.
fn canonical_authority(scheme: &str, authority: &str) -> Option<String> {
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return None;
    }
    adcp_canon::canonicalize_received(format!("{scheme}://{authority}/"))
        .ok()
        .map(|url| url.authority().to_owned())
}

#[cfg(test)]
mod tests {
    //! A claimed delivery whose sender hangs up while the upstream is
    //! slow: forwarded once, its outcome recorded (released on a failure,
    //! completed on a `2xx`), and waited for by `shutdown`.

    use super::*;
    use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner};
    use adcp_webhook::{McpWebhook, TaskStatus};
    use std::sync::atomic::AtomicUsize;

    const AGENT: &str = "https://seller.example/mcp";

    /// An upstream answering after `delay`: `500` to the first event, `200`
    /// to the next ones. Counts the events it received.
    async fn slow_upstream(delay: Duration) -> (url::Url, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
        let received = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&received);
        let app = Router::new().route(
            "/events",
            axum::routing::post(move || {
                let counter = Arc::clone(&counter);
                async move {
                    let n = counter.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    if n == 0 {
                        StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/events", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (url, received, task)
    }

    /// Posts `signed` with a client giving up after `timeout`: the status,
    /// or `None` when it gave up.
    async fn send(base: &str, signed: &SignedRequest, timeout: Duration) -> Option<u16> {
        let client = crate::forward::http_client(timeout).unwrap();
        let mut request = client.post(format!("{base}/hooks"));
        for (name, value) in signed.headers() {
            request = request.header(*name, value.as_str());
        }
        match request.body(signed.body().unwrap().as_bytes().to_vec()).send().await {
            Ok(response) => Some(response.status().as_u16()),
            Err(e) if e.is_timeout() => None,
            Err(e) => panic!("{e}"),
        }
    }

    async fn until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delivery_whose_sender_hung_up_is_recorded_and_shutdown_waits_for_it() {
        let delay = Duration::from_millis(1000);
        let (upstream, received, upstream_task) = slow_upstream(delay).await;
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "gw-unit-key").unwrap();
        let keys = adcp_verify::StaticKeyResolver::new().with_jwks(&key.jwks().unwrap().to_public_json(), AGENT);
        let signer = HttpSigner::webhook(key).unwrap();
        let store = adcp_store::open(&adcp_store::StoreUrl::Memory, adcp_store::StoreOptions::default())
            .await
            .unwrap();
        let mut options = GatewayOptions::new(upstream);
        options.upstream_timeout = Duration::from_secs(5);
        let gateway = Gateway::new(Arc::new(keys), store, options).unwrap();
        let handle = gateway
            .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
            .unwrap();
        let base = handle.base_url();
        let event = McpWebhook::new(
            "task_1",
            "create_media_buy",
            TaskStatus::Completed,
            "2026-04-18T12:00:00Z",
        )
        .result(serde_json::json!({"media_buy_id": "mb_1"}))
        .into_event()
        .unwrap();
        let url = format!("{base}/hooks");
        let sign = || signer.sign_webhook(&url, &event);
        let gave_up = Duration::from_millis(500);

        // The sender gives up while the upstream is still working, and the
        // upstream then fails: the claim is released, not held for its
        // lease, so the next attempt is forwarded at once.
        assert_eq!(send(&base, &sign().await.unwrap(), gave_up).await, None);
        until("the first forward", || received.load(Ordering::SeqCst) == 1).await;
        tokio::time::timeout(Duration::from_secs(10), gateway.settled())
            .await
            .unwrap();
        assert_eq!(gateway.metrics().upstream_failure_count(), 1);
        assert_eq!(gateway.receiver().metrics().get("handler_failed"), 1);

        // Again, and the upstream applies it: shutting down waits until the
        // claim is completed.
        assert_eq!(send(&base, &sign().await.unwrap(), gave_up).await, None);
        until("the second forward", || received.load(Ordering::SeqCst) == 2).await;
        assert_eq!(gateway.metrics().forwarded_count(), 0);
        handle.shutdown().await.unwrap();
        assert_eq!(gateway.metrics().forwarded_count(), 1);
        assert_eq!(gateway.receiver().metrics().get("accepted"), 1);

        // The seller's next attempt: a completed duplicate, not forwarded.
        let handle = gateway
            .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
            .unwrap();
        let base = handle.base_url();
        let retry = signer.sign_webhook(&format!("{base}/hooks"), &event).await.unwrap();
        assert_eq!(send(&base, &retry, Duration::from_secs(10)).await, Some(200));
        assert_eq!(gateway.receiver().metrics().get("duplicate"), 1);
        assert_eq!(received.load(Ordering::SeqCst), 2, "applied once");
        assert_eq!(gateway.metrics().forwarded_count(), 1);
        handle.shutdown().await.unwrap();
        upstream_task.abort();
    }
}
