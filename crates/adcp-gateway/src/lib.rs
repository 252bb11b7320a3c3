//! The verifying gateway of the AdCP signed-webhooks SDK, as a library:
//! verify AdCP webhooks, deduplicate them, forward only verified,
//! first-seen events upstream. `adcp-sig gateway` is this library behind
//! command-line flags.
//!
//! Every `POST` (any path) goes through the receiver of `adcp-webhook`
//! (`Receiver::decide_streaming`): size and media type, the registration's
//! mode, the RFC 9421 checklist (or legacy HMAC), then a claim of
//! `(verified sender, idempotency_key)` in the store. A claimed event is
//! posted to the upstream with its raw bytes and the headers
//! [`VERIFIED_KEYID`], [`VERIFIED_AGENT`] and [`IDEMPOTENCY_KEY`] (and, for
//! notifications, [`NOTIFICATION_ID`], [`NOTIFICATION_TYPE`],
//! [`REEMISSION_OF`]):
//!
//! - upstream `2xx` → the event is marked complete, the sender gets `200`;
//! - anything else (status, timeout, connection error) → the claim is
//!   released and the sender gets `503` with `Retry-After: 2`, so its
//!   retry is forwarded again;
//! - a completed duplicate → `200` without forwarding; a rejection → the
//!   receiver's answer (`401` with only `WWW-Authenticate: Signature
//!   error="…"`; `503` with `Retry-After` when the store or key discovery
//!   cannot answer, …).
//!
//! Every wait is bounded: the store's operations
//! ([`GatewayConfig::store_timeout`]), the upstream
//! ([`GatewayConfig::upstream_timeout`]; in request mode a streamed answer
//! is the exception, below), a request's headers
//! ([`GatewayConfig::header_timeout`], the connection is closed) and body
//! ([`GatewayConfig::body_timeout`], `408`); past
//! [`GatewayConfig::max_concurrency`] webhooks in flight, a request is
//! shed at once with `503` and `Retry-After: 1`. While it serves, the
//! gateway deletes the store's expired rows every
//! [`GatewayConfig::purge_interval`] (SQLite and PostgreSQL keep them
//! until then; Redis expires its keys itself).
//!
//! # Request mode
//!
//! With [`GatewayOptions::request`] (a [`RequestOptions`]; or
//! `profile = "request"` and [`GatewayConfig::capabilities`]) the gateway
//! stands in front of a *seller's* server instead: every `POST` goes
//! through `adcp_request::RequestVerifier` under the seller's advertised
//! `request_signing` capability, and an accepted request is proxied to the
//! upstream (its path and query appended to the upstream's path, the same
//! method, the raw body, the client's headers minus hop-by-hop ones and
//! any client-sent `X-Adcp-Verified-*` / [`SIGNATURE_STATE`]), the
//! upstream's answer streamed back. [`VERIFIED_AGENT`] and
//! [`VERIFIED_KEYID`] are set only for a verified signature;
//! [`SIGNATURE_STATE`] (`X-Adcp-Signature`) is `verified`, `unsigned` or
//! `failed`. The gateway cannot judge a bearer token: the presence of
//! [`RequestOptions::credential_header`] (`Authorization` by default) is
//! the fallback credential of the spec's composition rule, so an unsigned
//! request carrying it is forwarded for the seller's own authenticator to
//! decide, and one without it to a `required_for` operation is refused
//! (`401 request_signature_required`). Refusals are the verifier's
//! answers; nothing refused is forwarded.
//!
//! In front of an MCP server (Streamable HTTP), a bodyless `GET` (the
//! server-to-client event stream) or `DELETE` (the end of a session) on
//! the MCP endpoint (a path whose binding is JSON-RPC) carries no AdCP
//! operation and is forwarded without verification, marked `unsigned` and
//! never with identity headers; with a body it is refused (`400
//! body_not_allowed`); any other method but `POST` is `405`. Upstream
//! answers are relayed as they arrive: the head within
//! [`GatewayConfig::upstream_timeout`], a streamed body
//! (`text/event-stream`, or no `Content-Length`) as long as it lasts,
//! bounded only by [`GatewayConfig::upstream_idle_timeout`] (off by
//! default), and dropped upstream when the client goes away or the server
//! shuts down.
//!
//! A request-mode gateway verifies under one request-signing profile,
//! AdCP 3.2 by default or the 3.0/3.1 one for buyers still on it
//! ([`GatewayConfig::request_profile`], [`RequestProfileSetting`];
//! [`RequestOptions::profile`]); a request's encoding never selects it. A
//! seller serving both runs two gateways.
//!
//! `GET /healthz` answers while the process serves; `GET /readyz` only
//! while the store answers; `GET /metrics` is the Prometheus exposition.
//!
//! # Entry points
//!
//! - [`GatewayConfig`]: the settings, from TOML
//!   ([`GatewayConfig::from_toml_file`]), the `ADCP_GATEWAY_*` environment
//!   ([`GatewayConfig::apply_env`]) and code;
//! - [`Gateway::run`]: build, serve on [`GatewayConfig::listen`] until a
//!   shutdown future completes, drain;
//! - [`Gateway::from_config`] then [`Gateway::serve`] on a listener of
//!   yours (a [`GatewayHandle`] with the address and a graceful
//!   [`shutdown`](GatewayHandle::shutdown)), or [`Gateway::router`], an
//!   axum `Router` (a tower `Service`) to embed in a server of yours (then
//!   [`Gateway::settled`] after its graceful shutdown);
//! - [`Gateway::new`]: from a key resolver and a store of yours, with
//!   [`GatewayOptions`].
//!
//! With [`GatewayConfig::tls_cert`] / [`GatewayConfig::tls_key`] (or
//! [`GatewayOptions::tls`], a [`TlsConfig`]) the gateway serves HTTPS,
//! HTTP/2 and HTTP/1.1 by ALPN; [`GatewayHandle::reload_tls`],
//! [`TlsConfig::reload`] or, under [`Gateway::run`], a `SIGHUP` swap the
//! certificate for new connections. A gateway built from a configuration
//! also reloads its key and policy material without a restart
//! ([`Gateway::reload`], and on `SIGHUP` with
//! [`Gateway::reload_on_sighup`], which `Gateway::run` runs, TLS or not):
//! the new set is read, checked and built whole, then swapped in at once,
//! or nothing changes. [`GatewayConfig::revoked_kids`] and
//! [`GatewayConfig::replay_cap_per_keyid`] override the checklist's
//! revocation (step 9) and per-keyid cap (step 9a) for test counterparties
//! and emergencies.
//!
//! # Example
//!
//! ```
//! use adcp_gateway::{Gateway, GatewayConfig};
//! use std::time::Duration;
//!
//! let config = GatewayConfig::from_toml_str(
//!     r#"
//!     listen = "127.0.0.1:8790"
//!     upstream = "http://127.0.0.1:8080/events"
//!     agents = ["https://seller.example/mcp"]
//!     store = "sqlite:adcp-gateway.sqlite"
//!     upstream_timeout = 5
//!
//!     [revocation_lists]
//!     "https://seller.example/mcp" = "https://seller.example/.well-known/revocations.json"
//!     "#,
//! )?;
//! assert_eq!(config.upstream_timeout, Duration::from_secs(5));
//! assert_eq!(config.dedup_window, Duration::from_secs(86_400), "the default");
//! config.validate()?;
//!
//! # async fn serve(config: GatewayConfig) -> Result<(), adcp_gateway::GatewayError> {
//! // Serve until Ctrl-C, then drain in-flight requests.
//! Gateway::run(&config, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! # Ok(())
//! # }
//! # Ok::<(), adcp_gateway::ConfigError>(())
//! ```
//!
//! Serving on a listener of your own and stopping it:
//!
//! ```no_run
//! # async fn run(config: adcp_gateway::GatewayConfig) -> Result<(), Box<dyn std::error::Error>> {
//! let gateway = adcp_gateway::Gateway::from_config(&config).await?;
//! let handle = gateway.serve(tokio::net::TcpListener::bind("127.0.0.1:0").await?)?;
//! println!("gateway on {}", handle.base_url());
//! // ... later: stop accepting, drain in-flight requests.
//! handle.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Features
//!
//! - `redis`: the Redis store (`store = "redis://…"`), for a fleet;
//! - `postgres`: the PostgreSQL store (`store = "postgres://…"`), for a
//!   fleet.
//!
//! The embedded SQLite store is always available. The reference
//! (settings, endpoints, metrics, operations) is `docs/gateway.md`.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod config;
mod error;
mod forward;
mod keys;
mod metrics;
mod purge;
mod reload;
mod request;
mod server;
mod setup;
mod subscriptions;
mod tls;

pub use config::{BindingSetting, GatewayConfig, GatewayProfile, RequestProfileSetting, StoreLocation, TestOverrides};
pub use error::{ConfigError, EntryProblem, GatewayError, RegistrationsError};
pub use forward::{IDEMPOTENCY_KEY, NOTIFICATION_ID, NOTIFICATION_TYPE, REEMISSION_OF, VERIFIED_AGENT, VERIFIED_KEYID};
pub use keys::AgentsResolver;
pub use metrics::GatewayMetrics;
pub use reload::Reloaded;
pub use request::{RequestOptions, SIGNATURE_STATE};
pub use server::{Gateway, GatewayHandle, GatewayOptions, StreamStopper};
pub use subscriptions::Registrations;
pub use tls::TlsConfig;

// The parameter types of `Gateway::new` and `GatewayOptions`, so that a
// user of this crate can name everything they take.
#[doc(no_inline)]
pub use adcp_store::{PurgeExpired, Store};
#[doc(no_inline)]
pub use adcp_verify::legacy::WebhookAuthMode;
#[doc(no_inline)]
pub use adcp_verify::{Clock, KeyResolver};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
