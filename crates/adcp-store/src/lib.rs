//! Durable stores for AdCP receivers: the transport replay cache
//! (`adcp_verify::ReplayStore`, keys `(keyid, nonce)`, ≈ 360 s) and
//! the application idempotency keyspace ([`IdempotencyStore`],
//! keys `(verified sender, idempotency_key)`, ≥ 24 h).
//!
//! AdCP makes both dedup duties normative and declares per-process
//! in-memory caches non-conformant for a fleet; this crate provides the
//! backends, each behind a cargo feature:
//!
//! - `SqliteStore` (feature `sqlite`, default): embedded, WAL +
//!   `synchronous=FULL`, for a single receiver.
//! - `PostgresStore` (feature `postgres`): the durable shared tier.
//! - `RedisStore` (feature `redis`): a shared tier on Redis with AOF
//!   persistence, standalone or Redis Cluster.
//! - [`MemoryStore`] (always): process memory, **not conformant** (a
//!   restart forgets every claim); for benchmarks, tests and demos.
//!
//! Every type is at the crate root; `testing` (feature `testing`) is the
//! contract suite a third-party backend runs.
//!
//! Every store fails closed: when the backend cannot answer, operations
//! return a retryable error (`StoreError` / [`IdempotencyError::Unavailable`])
//! and the event is not accepted. [`StoreUrl`] parses the one-flag
//! configuration (`sqlite:PATH`, `postgres://…`, `redis://…`) and [`open`]
//! opens the store it names.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyStore, SenderKey};
//! use adcp_store::{SqliteOptions, SqliteStore};
//! use adcp_verify::{InsertOutcome, ReplayKey, ReplayStore};
//!
//! let dir = std::env::temp_dir().join(format!("adcp-store-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let store = SqliteStore::open(dir.join("dedup.sqlite"), SqliteOptions::default())?;
//! let now = 1_776_520_800;
//!
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! rt.block_on(async {
//!     // Transport replay dedup (checklist step 13).
//!     let nonce = ReplayKey { agent: None, keyid: "seller-2026", nonce: b"0123456789abcdef", scope: None };
//!     assert_eq!(store.insert(nonce, now + 360, now).await?, InsertOutcome::Inserted);
//!     assert_eq!(store.insert(nonce, now + 360, now).await?, InsertOutcome::Replayed);
//!
//!     // Application dedup: claim before side effects, complete after.
//!     let event = SenderKey { sender: "https://seller.example/mcp", idempotency_key: "whk_01HW9D3H8F" };
//!     let fingerprint = Fingerprint::from_array(&[0x5a; 32]); // SHA-256 of the JCS payload
//!     let ClaimOutcome::Claimed(claim) = store.claim(event, fingerprint, now).await? else {
//!         return Err("expected a fresh claim".into());
//!     };
//!     // ... apply side effects ...
//!     store.complete(event, claim.token, now).await?;
//!     // A retry with a fresh nonce is answered 2xx without reapplying.
//!     assert_eq!(store.claim(event, fingerprint, now + 600).await?, ClaimOutcome::Completed);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! drop(store);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod idempotency;
mod memory;
mod notification;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use idempotency::{
    Claim, ClaimOutcome, ClaimRequest, ClaimToken, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError,
    IdempotencyRecord, IdempotencyStore, MemoryIdempotencyStore, RecordState, SenderAliases, SenderKey,
    MAX_NOTIFICATION_ID_LEN,
};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "redis")]
pub use redis::{RedisOptions, RedisStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{EarlyAnswer, SqliteOptions, SqliteStore, SqliteWriter};

use adcp_verify::{ReplayLimits, ReplayStore, StoreError};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// A backend that serves both dedup duties.
pub trait Store: ReplayStore + IdempotencyStore {}

impl<T: ReplayStore + IdempotencyStore + ?Sized> Store for T {}

/// A backend whose expired rows stay until something deletes them, and
/// the call that does: SQLite, PostgreSQL and the in-memory store. Writes
/// only expire the rows they touch, and nothing else deletes expired
/// notification records, so a long-running receiver calls
/// [`purge_expired`](Self::purge_expired) from a timer (the gateway does).
/// Redis needs none: its keys carry TTLs.
#[async_trait::async_trait]
pub trait PurgeExpired: Send + Sync {
    /// Deletes every replay entry, idempotency record and notification
    /// record expired at `now` (Unix seconds); returns how many were
    /// removed.
    ///
    /// # Errors
    ///
    /// The backend could not answer; nothing is lost, the next call
    /// deletes what this one did not.
    async fn purge_expired(&self, now: i64) -> Result<u64, StoreError>;
}

/// What [`open_with_purge`] opens: the store and, for a backend that
/// needs one, its [`PurgeExpired`] handle on the same store.
pub struct OpenedStore {
    /// The store, as [`open`] returns it.
    pub store: Arc<dyn Store>,
    /// The same store's purge; `None` for Redis (TTLs expire its keys).
    pub purge: Option<Arc<dyn PurgeExpired>>,
}

impl std::fmt::Debug for OpenedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedStore")
            .field("purge", &self.purge.is_some())
            .finish_non_exhaustive()
    }
}

/// A store location given as one URL, as the CLI and gateway take it.
///
/// - `sqlite:PATH` (also `sqlite://PATH`): a SQLite file;
/// - `redis://…` / `rediss://…`: a Redis server;
/// - `redis+cluster://host:port,host:port,…` (or `rediss+cluster://`): a
///   Redis Cluster, given by one or more seed nodes;
/// - `postgres://…` / `postgresql://…`: a PostgreSQL database;
/// - `memory:` (also `memory`): process memory ([`memory::MemoryStore`]),
///   not conformant for production (nothing survives a restart).
///
/// ```
/// use adcp_store::StoreUrl;
///
/// let url: StoreUrl = "sqlite:/var/lib/adcp/dedup.sqlite".parse()?;
/// assert_eq!(url, StoreUrl::Sqlite("/var/lib/adcp/dedup.sqlite".into()));
/// assert!(matches!("postgres://adcp@db/adcp".parse()?, StoreUrl::Postgres(_)));
/// assert_eq!("memory:".parse::<StoreUrl>()?, StoreUrl::Memory);
/// assert!("mysql://db".parse::<StoreUrl>().is_err());
/// # Ok::<(), adcp_store::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StoreUrl {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A Redis URL (server or `redis+cluster://` seed list), verbatim.
    Redis(String),
    /// A PostgreSQL connection URL, verbatim.
    Postgres(String),
    /// Process memory: benchmarks, tests and demos only.
    Memory,
}

impl FromStr for StoreUrl {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("sqlite://").or_else(|| s.strip_prefix("sqlite:")) {
            if path.is_empty() {
                return Err(ConfigError::Url("sqlite: URL without a path".to_owned()));
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if ["redis://", "rediss://", "redis+cluster://", "rediss+cluster://"]
            .iter()
            .any(|scheme| s.starts_with(scheme))
        {
            return Ok(Self::Redis(s.to_owned()));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Self::Postgres(s.to_owned()));
        }
        if matches!(s, "memory" | "memory:") {
            return Ok(Self::Memory);
        }
        let scheme = s.split(':').next().unwrap_or_default();
        Err(ConfigError::Url(format!(
            "unsupported scheme {scheme:?} (expected sqlite:, redis://, redis+cluster://, postgres://, memory:)"
        )))
    }
}

impl StoreUrl {
    /// The cargo feature that compiles this URL's backend in.
    #[must_use]
    pub fn feature(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Redis(_) => "redis",
            Self::Postgres(_) => "postgres",
            Self::Memory => "memory",
        }
    }
}

/// Settings every backend understands, for [`open`]. Backend-specific
/// settings keep their defaults; build the backend's own options type
/// (`SqliteOptions`, `RedisOptions`, `PostgresOptions`) for more control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Replay-cache caps (default: the webhook caps).
    pub replay_limits: ReplayLimits,
    /// Idempotency window, lease and per-sender cap.
    pub idempotency: IdempotencyConfig,
    /// What keeps stores on one server apart: the Redis key prefix or the
    /// PostgreSQL schema (default `adcp`; for PostgreSQL `[a-z_][a-z0-9_]*`).
    /// SQLite ignores it: the path names the store.
    pub namespace: String,
    /// Bound on each operation, connecting included (Redis, PostgreSQL), or
    /// on waiting for another process's write lock (SQLite). Default 5 s.
    pub op_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            namespace: "adcp".to_owned(),
            op_timeout: Duration::from_secs(5),
        }
    }
}

/// Opens the store `url` names, with `options`: one flag for the CLI and
/// the gateway. SQLite files are created (with their schema) when absent,
/// PostgreSQL schemas are migrated, Redis servers are checked for an
/// eviction-free policy.
///
/// Fails with [`ConfigError::FeatureDisabled`] when the URL's backend was
/// not compiled in, and with the backend's own error when it cannot be
/// opened (unreachable server, refused settings).
///
/// ```
/// # #[cfg(feature = "sqlite")]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use adcp_store::{open, StoreOptions, StoreUrl};
/// use adcp_verify::{InsertOutcome, ReplayKey, ReplayStore};
///
/// let dir = std::env::temp_dir().join(format!("adcp-store-open-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let url: StoreUrl = format!("sqlite:{}", dir.join("dedup.sqlite").display()).parse()?;
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let store = open(&url, StoreOptions::default()).await?;
///     let key = ReplayKey { agent: None, keyid: "seller-2026", nonce: b"0123456789abcdef", scope: None };
///     assert_eq!(store.insert(key, 1_776_521_160, 1_776_520_800).await?, InsertOutcome::Inserted);
///     Ok::<(), Box<dyn std::error::Error>>(())
/// })?;
/// std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "sqlite"))]
/// # fn main() {}
/// ```
pub async fn open(url: &StoreUrl, options: StoreOptions) -> Result<Arc<dyn Store>, ConfigError> {
    open_with_purge(url, options).await.map(|opened| opened.store)
}

/// [`open`], also returning the store's [`PurgeExpired`] handle when its
/// backend needs purging (SQLite, PostgreSQL, memory; not Redis).
///
/// # Errors
///
/// Those of [`open`].
pub async fn open_with_purge(url: &StoreUrl, options: StoreOptions) -> Result<OpenedStore, ConfigError> {
    options.idempotency.validate()?;
    match url {
        #[cfg(feature = "sqlite")]
        StoreUrl::Sqlite(path) => {
            let store = sqlite::SqliteStore::open_async(
                path,
                sqlite::SqliteOptions {
                    replay_limits: options.replay_limits,
                    idempotency: options.idempotency,
                    busy_timeout: options.op_timeout,
                    ..sqlite::SqliteOptions::default()
                },
            )
            .await?;
            Ok(purgeable(Arc::new(store)))
        }
        #[cfg(feature = "redis")]
        StoreUrl::Redis(url) => {
            let store = redis::RedisStore::connect(
                url,
                redis::RedisOptions {
                    replay_limits: options.replay_limits,
                    idempotency: options.idempotency,
                    key_prefix: options.namespace,
                    op_timeout: options.op_timeout,
                    ..redis::RedisOptions::default()
                },
            )
            .await?;
            Ok(OpenedStore {
                store: Arc::new(store),
                purge: None,
            })
        }
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => {
            let store = postgres::PostgresStore::connect(
                url,
                postgres::PostgresOptions {
                    replay_limits: options.replay_limits,
                    idempotency: options.idempotency,
                    schema: options.namespace,
                    op_timeout: options.op_timeout,
                    ..postgres::PostgresOptions::default()
                },
            )
            .await?;
            Ok(purgeable(Arc::new(store)))
        }
        StoreUrl::Memory => {
            tracing::warn!(
                target: "adcp_store",
                "in-memory store: claims and replay entries are lost on restart (not conformant outside tests and benchmarks)"
            );
            Ok(purgeable(Arc::new(memory::MemoryStore::new(
                options.replay_limits,
                options.idempotency,
            )?)))
        }
        #[allow(unreachable_patterns)] // every backend compiled in
        other => Err(ConfigError::FeatureDisabled {
            backend: other.feature(),
        }),
    }
}

/// A store and its purge handle, one value behind both.
fn purgeable<S: Store + PurgeExpired + 'static>(store: Arc<S>) -> OpenedStore {
    OpenedStore {
        store: Arc::clone(&store) as Arc<dyn Store>,
        purge: Some(store),
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
