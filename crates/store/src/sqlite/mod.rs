//! The embedded SQLite backend ([`SqliteStore`]), the default for a single
//! receiver process.
//!
//! One database file holds both the transport replay cache and the
//! idempotency keyspace. Durability: the database runs in WAL mode with
//! `synchronous=FULL`, so every acknowledged write (an `Inserted` replay
//! entry, a claim, a completion) is fsynced before the call returns and
//! survives `kill -9` and power loss. Every write is one `BEGIN IMMEDIATE`
//! transaction, so several processes may share one file safely (they
//! serialize on SQLite's write lock, waiting up to
//! [`SqliteOptions::busy_timeout`]).
//!
//! Expiry is by indexed timestamp: each write first deletes the rows that
//! expired before `now`. Live-entry counts for the caps are kept in counter
//! tables maintained by triggers, so a cap check costs one lookup. The file
//! stays bounded: rows are capped (replay caps, per-sender cap), freed pages
//! are reused, and [`SqliteOptions::max_db_bytes`] sets a hard ceiling
//! (writes beyond it fail closed).
//!
//! Blocking SQLite calls run on tokio's blocking pool
//! (`spawn_blocking`); outside a tokio runtime they run inline.

use crate::idempotency::{
    plan_claim, record_from_columns, ClaimOutcome, ClaimRequest, ClaimStep, ClaimToken, ConfigError, Fingerprint,
    IdempotencyConfig, IdempotencyError, IdempotencyRecord, IdempotencyStore, SenderKey,
};
use adcp_verify::replay::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The schema version this crate writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS adcp_replay (
    keyid TEXT NOT NULL,
    scoped INTEGER NOT NULL,
    scope TEXT NOT NULL,
    nonce BLOB NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (keyid, scoped, scope, nonce)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS adcp_replay_expires ON adcp_replay (expires_at);
CREATE TABLE IF NOT EXISTS adcp_replay_counts (keyid TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS adcp_replay_total (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT OR IGNORE INTO adcp_replay_total (id, n) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS adcp_replay_ins AFTER INSERT ON adcp_replay BEGIN
    INSERT INTO adcp_replay_counts (keyid, n) VALUES (NEW.keyid, 1)
        ON CONFLICT (keyid) DO UPDATE SET n = n + 1;
    UPDATE adcp_replay_total SET n = n + 1 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS adcp_replay_del AFTER DELETE ON adcp_replay BEGIN
    UPDATE adcp_replay_counts SET n = n - 1 WHERE keyid = OLD.keyid;
    DELETE FROM adcp_replay_counts WHERE keyid = OLD.keyid AND n <= 0;
    UPDATE adcp_replay_total SET n = n - 1 WHERE id = 0;
END;

CREATE TABLE IF NOT EXISTS adcp_idempotency (
    sender TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    completed INTEGER NOT NULL,
    token INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    completed_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (sender, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS adcp_idempotency_expires ON adcp_idempotency (expires_at);
CREATE TABLE IF NOT EXISTS adcp_idempotency_counts (sender TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS adcp_idempotency_ins AFTER INSERT ON adcp_idempotency BEGIN
    INSERT INTO adcp_idempotency_counts (sender, n) VALUES (NEW.sender, 1)
        ON CONFLICT (sender) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS adcp_idempotency_del AFTER DELETE ON adcp_idempotency BEGIN
    UPDATE adcp_idempotency_counts SET n = n - 1 WHERE sender = OLD.sender;
    DELETE FROM adcp_idempotency_counts WHERE sender = OLD.sender AND n <= 0;
END;
";

/// Settings of a [`SqliteStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Replay-cache caps (default: the webhook caps).
    pub replay_limits: ReplayLimits,
    /// Idempotency window, lease and per-sender cap.
    pub idempotency: IdempotencyConfig,
    /// Hard ceiling on the database file (`PRAGMA max_page_count`); writes
    /// beyond it fail closed. `None`: no ceiling beyond the row caps.
    pub max_db_bytes: Option<u64>,
    /// How long a write waits for another process's write lock before
    /// failing closed (`PRAGMA busy_timeout`).
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            max_db_bytes: None,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// A durable [`ReplayStore`] and [`IdempotencyStore`] in one SQLite file.
/// See the [module docs](self) for durability and expiry.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    options: SqliteOptions,
    path: PathBuf,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn backend(e: impl fmt::Display) -> ConfigError {
    ConfigError::Backend(format!("sqlite: {e}"))
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, sets WAL and
    /// `synchronous=FULL`, and applies the schema. Blocking; call it at
    /// start-up or via [`open_async`](Self::open_async).
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, ConfigError> {
        options.idempotency.validate()?;
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(backend)?;
        conn.busy_timeout(options.busy_timeout).map_err(backend)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(backend)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(backend(format!("journal_mode is {mode}, WAL required")));
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(backend)?;
        let synchronous: i64 = conn
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .map_err(backend)?;
        if synchronous < 2 {
            return Err(backend("synchronous=FULL was not applied"));
        }
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(backend)?;
        if version > SCHEMA_VERSION {
            return Err(backend(format!(
                "schema version {version} is newer than this build understands ({SCHEMA_VERSION})"
            )));
        }
        conn.execute_batch(SCHEMA).map_err(backend)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(backend)?;
        if let Some(bytes) = options.max_db_bytes {
            let page_size: i64 = conn
                .query_row("PRAGMA page_size", [], |row| row.get(0))
                .map_err(backend)?;
            let pages = i64::try_from(bytes).unwrap_or(i64::MAX) / page_size.max(1);
            let _: i64 = conn
                .query_row(&format!("PRAGMA max_page_count = {}", pages.max(1)), [], |row| {
                    row.get(0)
                })
                .map_err(backend)?;
        }
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            options,
            path,
        })
    }

    /// [`open`](Self::open) on tokio's blocking pool.
    pub async fn open_async(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, ConfigError> {
        let path = path.as_ref().to_path_buf();
        tokio::task::spawn_blocking(move || Self::open(path, options))
            .await
            .map_err(backend)?
    }

    /// The database path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings in force.
    #[must_use]
    pub fn options(&self) -> SqliteOptions {
        self.options
    }

    /// Deletes every replay entry and idempotency record expired at `now`
    /// and returns how many rows were removed. Optional: writes expire rows
    /// lazily anyway; an idle receiver can call it from a timer.
    pub async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let replay = tx.execute("DELETE FROM adcp_replay WHERE expires_at < ?1", [now])?;
            let idem = tx.execute("DELETE FROM adcp_idempotency WHERE expires_at < ?1", [now])?;
            tx.commit()?;
            Ok((replay + idem) as u64)
        })
        .await
        .map_err(StoreError)
    }

    /// Runs `f` with the connection off the async runtime.
    async fn run<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let job = move || {
            let mut guard = conn.lock().map_err(|_| "sqlite store lock poisoned".to_owned())?;
            f(&mut guard).map_err(|e| format!("sqlite: {e}"))
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle
                .spawn_blocking(job)
                .await
                .map_err(|e| format!("sqlite worker failed: {e}"))?,
            Err(_) => job(),
        }
    }
}

fn scope_columns(key: ReplayKey<'_>) -> (i64, String) {
    match key.scope {
        Some(scope) => (1, scope.to_owned()),
        None => (0, String::new()),
    }
}

fn keyid_count(conn: &Connection, keyid: &str) -> rusqlite::Result<u64> {
    conn.query_row("SELECT n FROM adcp_replay_counts WHERE keyid = ?1", [keyid], |row| {
        row.get::<_, i64>(0)
    })
    .optional()
    .map(|n| n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn as_count(cap: usize) -> u64 {
    u64::try_from(cap).unwrap_or(u64::MAX)
}

#[async_trait]
impl ReplayStore for SqliteStore {
    async fn keyid_cap_reached(&self, keyid: &str, now: i64) -> Result<bool, StoreError> {
        let keyid = keyid.to_owned();
        let cap = as_count(self.options.replay_limits.per_keyid_cap);
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM adcp_replay WHERE expires_at < ?1", [now])?;
            let count = keyid_count(&tx, &keyid)?;
            tx.commit()?;
            Ok(count >= cap)
        })
        .await
        .map_err(StoreError)
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        let keyid = key.keyid.to_owned();
        let nonce = key.nonce.to_vec();
        let (scoped, scope) = scope_columns(key);
        self.run(move |conn| {
            conn.query_row(
                "SELECT expires_at FROM adcp_replay WHERE keyid = ?1 AND scoped = ?2 AND scope = ?3 AND nonce = ?4",
                params![keyid, scoped, scope, nonce],
                |row| row.get::<_, i64>(0),
            )
            .optional()
            .map(|held| held.is_some_and(|expires_at| now <= expires_at))
        })
        .await
        .map_err(StoreError)
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        let keyid = key.keyid.to_owned();
        let nonce = key.nonce.to_vec();
        let (scoped, scope) = scope_columns(key);
        let limits = self.options.replay_limits;
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM adcp_replay WHERE expires_at < ?1", [now])?;
            let held = tx
                .query_row(
                    "SELECT 1 FROM adcp_replay WHERE keyid = ?1 AND scoped = ?2 AND scope = ?3 AND nonce = ?4",
                    params![keyid, scoped, scope, nonce],
                    |_| Ok(()),
                )
                .optional()?;
            let outcome = if held.is_some() {
                InsertOutcome::Replayed
            } else if expires_at < now {
                InsertOutcome::Inserted
            } else if keyid_count(&tx, &keyid)? >= as_count(limits.per_keyid_cap) {
                InsertOutcome::KeyidCapReached
            } else if tx.query_row("SELECT n FROM adcp_replay_total WHERE id = 0", [], |row| {
                row.get::<_, i64>(0)
            })? >= i64::try_from(limits.aggregate_cap).unwrap_or(i64::MAX)
            {
                InsertOutcome::AggregateCapReached
            } else {
                tx.execute(
                    "INSERT INTO adcp_replay (keyid, scoped, scope, nonce, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![keyid, scoped, scope, nonce, expires_at],
                )?;
                InsertOutcome::Inserted
            };
            tx.commit()?;
            Ok(outcome)
        })
        .await
        .map_err(StoreError)
    }
}

const SELECT_RECORD: &str = "SELECT fingerprint, completed, token, attempt, lease_expires_at, completed_at, created_at,
    expires_at FROM adcp_idempotency WHERE sender = ?1 AND key = ?2 AND expires_at >= ?3";

fn read_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<IdempotencyRecord> {
    record_from_columns(row.get(0)?, row.get(1)?, |i| row.get(i))
}

fn unavailable(e: String) -> IdempotencyError {
    IdempotencyError::Unavailable(e)
}

/// One claim inside the caller's write transaction.
fn claim_in(
    tx: &rusqlite::Transaction<'_>,
    sender: &str,
    idem_key: &str,
    fingerprint: &[u8],
    config: &IdempotencyConfig,
    now: i64,
) -> rusqlite::Result<ClaimOutcome> {
    let existing = tx
        .query_row(SELECT_RECORD, params![sender, idem_key, now], read_record)
        .optional()?;
    let sender_live = tx
        .query_row(
            "SELECT n FROM adcp_idempotency_counts WHERE sender = ?1",
            [sender],
            |row| row.get::<_, i64>(0),
        )
        .optional()?
        .map_or(0, |n| u64::try_from(n).unwrap_or(0));
    let outcome = match plan_claim(existing.as_ref(), fingerprint, sender_live, config, now) {
        ClaimStep::Answer(outcome) => outcome,
        ClaimStep::Write(write) if write.takeover => {
            tx.execute(
                "UPDATE adcp_idempotency SET token = ?3, attempt = ?4, lease_expires_at = ?5,
                        expires_at = MAX(expires_at, ?6)
                     WHERE sender = ?1 AND key = ?2",
                params![
                    sender,
                    idem_key,
                    write.claim.token.0,
                    write.claim.attempt,
                    write.claim.lease_expires_at,
                    write.expires_at
                ],
            )?;
            write.outcome()
        }
        ClaimStep::Write(write) => {
            tx.execute(
                "INSERT INTO adcp_idempotency (sender, key, fingerprint, completed, token, attempt,
                        lease_expires_at, completed_at, created_at, expires_at)
                     VALUES (?1, ?2, ?3, 0, 1, 1, ?4, 0, ?5, ?6)",
                params![
                    sender,
                    idem_key,
                    fingerprint,
                    write.claim.lease_expires_at,
                    now,
                    write.expires_at
                ],
            )?;
            write.outcome()
        }
    };
    Ok(outcome)
}

#[async_trait]
impl IdempotencyStore for SqliteStore {
    fn config(&self) -> IdempotencyConfig {
        self.options.idempotency
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        if fingerprint.0.len() > Fingerprint::MAX_LEN {
            return Err(IdempotencyError::FingerprintTooLong);
        }
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let fingerprint = fingerprint.0.to_vec();
        let config = self.options.idempotency;
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM adcp_idempotency WHERE expires_at < ?1", [now])?;
            let outcome = claim_in(&tx, &sender, &idem_key, &fingerprint, &config, now)?;
            tx.commit()?;
            Ok(outcome)
        })
        .await
        .map_err(unavailable)
    }

    /// All requests in one transaction, so one fsync acknowledges the whole
    /// batch; if the transaction fails, none of it is applied and every
    /// request answers `Unavailable`.
    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        let owned: Vec<Option<(String, String, Vec<u8>)>> = requests
            .iter()
            .map(|r| {
                (r.fingerprint.0.len() <= Fingerprint::MAX_LEN).then(|| {
                    (
                        r.key.sender.to_owned(),
                        r.key.idempotency_key.to_owned(),
                        r.fingerprint.0.to_vec(),
                    )
                })
            })
            .collect();
        let sent = owned.iter().filter(|o| o.is_some()).count();
        let config = self.options.idempotency;
        let answers = if sent == 0 {
            Ok(Vec::new())
        } else {
            self.run(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute("DELETE FROM adcp_idempotency WHERE expires_at < ?1", [now])?;
                let mut answers = Vec::with_capacity(owned.len());
                for (sender, key, fingerprint) in owned.iter().flatten() {
                    answers.push(claim_in(&tx, sender, key, fingerprint, &config, now)?);
                }
                tx.commit()?;
                Ok(answers)
            })
            .await
        };
        let mut answers = match answers {
            Ok(answers) => answers.into_iter(),
            Err(e) => {
                return requests
                    .iter()
                    .map(|r| {
                        if r.fingerprint.0.len() > Fingerprint::MAX_LEN {
                            Err(IdempotencyError::FingerprintTooLong)
                        } else {
                            Err(unavailable(e.clone()))
                        }
                    })
                    .collect()
            }
        };
        requests
            .iter()
            .map(|r| {
                if r.fingerprint.0.len() > Fingerprint::MAX_LEN {
                    Err(IdempotencyError::FingerprintTooLong)
                } else {
                    answers
                        .next()
                        .ok_or_else(|| unavailable("sqlite: missing claim answer".to_owned()))
                }
            })
            .collect()
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let window = self.options.idempotency.window_secs;
        let owned = self
            .run(move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let updated = tx.execute(
                    "UPDATE adcp_idempotency SET completed = 1, completed_at = ?4,
                        expires_at = MAX(expires_at, ?5)
                     WHERE sender = ?1 AND key = ?2 AND token = ?3 AND completed = 0 AND expires_at >= ?4",
                    params![sender, idem_key, token.0, now, now.saturating_add(window)],
                )?;
                let owned = updated == 1
                    || tx
                        .query_row(
                            "SELECT 1 FROM adcp_idempotency
                             WHERE sender = ?1 AND key = ?2 AND token = ?3 AND completed = 1 AND expires_at >= ?4",
                            params![sender, idem_key, token.0, now],
                            |_| Ok(()),
                        )
                        .optional()?
                        .is_some();
                tx.commit()?;
                Ok(owned)
            })
            .await
            .map_err(unavailable)?;
        if owned {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let deleted = self
            .run(move |conn| {
                conn.execute(
                    "DELETE FROM adcp_idempotency
                     WHERE sender = ?1 AND key = ?2 AND token = ?3 AND completed = 0 AND expires_at >= ?4",
                    params![sender, idem_key, token.0, now],
                )
            })
            .await
            .map_err(unavailable)?;
        if deleted == 1 {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        self.run(move |conn| {
            conn.query_row(SELECT_RECORD, params![sender, idem_key, now], read_record)
                .optional()
        })
        .await
        .map_err(unavailable)
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        let sender = sender.to_owned();
        self.run(move |conn| {
            conn.query_row(
                "SELECT COUNT(*) FROM adcp_idempotency WHERE sender = ?1 AND expires_at >= ?2",
                params![sender, now],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| u64::try_from(n).unwrap_or(0))
        })
        .await
        .map_err(unavailable)
    }
}
