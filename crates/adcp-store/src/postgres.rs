//! The PostgreSQL backend.
//!
//! The user-facing documentation is on [`PostgresStore`] (re-exported at the
//! crate root).

use crate::idempotency::{
    plan_claim, record_from_columns, ClaimOutcome, ClaimRequest, ClaimStep, ClaimToken, ClaimWrite, ConfigError,
    Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyRecord, IdempotencyStore, SenderKey,
};
use adcp_verify::{CapKey, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};

/// Settings of a [`PostgresStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Replay-cache caps (default: the webhook caps).
    pub replay_limits: ReplayLimits,
    /// Idempotency window, lease and per-sender cap.
    pub idempotency: IdempotencyConfig,
    /// The schema holding the tables (`[a-z_][a-z0-9_]*`, default `adcp`).
    pub schema: String,
    /// Connections kept open (default 8).
    pub pool_size: usize,
    /// Bound on every operation, connecting included (default 5 s).
    pub op_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            schema: "adcp".to_owned(),
            pool_size: 8,
            op_timeout: Duration::from_secs(5),
        }
    }
}

/// A durable [`ReplayStore`] and [`IdempotencyStore`] in PostgreSQL.
///
/// The PostgreSQL backend ([`PostgresStore`]): the durable shared tier for a
/// fleet and for idempotency across region failover.
///
/// Every write is one transaction committed before the call returns, so an
/// acknowledged claim or replay entry is as durable as the server's
/// `synchronous_commit` (default `on`: flushed to the WAL; with synchronous
/// replication, also on a standby). The store creates its schema and tables
/// at connection time ([`PostgresOptions::schema`], migrations are
/// idempotent `CREATE … IF NOT EXISTS` / `ADD COLUMN IF NOT EXISTS`, run as
/// one transaction under an advisory lock so concurrent connects serialize;
/// a schema created before notification records gains their table,
/// `idempotency_notifications`, at the next connect).
///
/// Replay rows are unique on `(keyid, scope, nonce)` and carry the signer's
/// agent (`agented`, `agent`) only to be counted per `(agent, keyid)` for
/// the per-keyid cap, in `replay_cap_counts`. A schema created by an older
/// version (per-keyid `replay_counts`) is migrated in place at connect: the
/// agent columns are added (existing rows join the `agent: None`
/// partition, what they were counted as), the new counters are rebuilt
/// from the rows and the old table is dropped, so an older process still
/// connected fails closed (`relation does not exist`) instead of reading
/// counts that no longer move.
///
/// Atomicity: a replay insert locks the one aggregate counter row (so the
/// per-keyid and aggregate caps are exact under concurrency); a claim of an
/// absent key locks the sender's counter row. Claims of a key that already
/// exists are answered from a plain read without locks. Counters are kept by
/// triggers. Expired rows are deleted lazily by writes (the replay cache
/// entirely, the idempotency keyspace per sender) and by
/// [`PostgresStore::purge_expired`].
///
/// Connections come from a small built-in pool, each with the store's
/// statements prepared once (a pooler in front of the server must support
/// protocol-level prepared statements, as PgBouncer does from 1.21); a
/// connection is replaced after any failed call, and every call is bounded by
/// [`PostgresOptions::op_timeout`]: when the server is unreachable the call
/// fails closed with a retryable error and recovers by itself once the
/// server is back.
pub struct PostgresStore {
    url: String,
    options: PostgresOptions,
    pool: Vec<Mutex<Option<Conn>>>,
    next: AtomicUsize,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A pooled connection and the store's statements prepared on it.
struct Conn {
    client: Client,
    sql: Statements,
}

/// The store's statements, prepared once per connection: a call then costs
/// one round trip per statement, not a parse round trip before each.
struct Statements {
    delete_expired_replay: Statement,
    lock_total: Statement,
    replay_held: Statement,
    cap_count: Statement,
    replay_insert: Statement,
    select_record: Statement,
    select_records: Statement,
    delete_expired_sender: Statement,
    ensure_sender: Statement,
    lock_sender: Statement,
    idem_insert: Statement,
    idem_takeover: Statement,
    idem_complete: Statement,
    idem_completed_by: Statement,
    idem_release: Statement,
    sender_len: Statement,
    purge_replay: Statement,
    purge_idem: Statement,
    note_record: Statement,
    note_origin: Statement,
    purge_notes: Statement,
}

/// The schema's tables, created or migrated in place.
///
/// One simple-query batch runs as one implicit transaction (rolled back
/// whole on error); the advisory lock, keyed by the schema name, serializes
/// stores connecting at once, so the one-time counter rebuild below cannot
/// interleave with another store's.
fn migration(s: &str) -> String {
    format!(
        "SELECT pg_advisory_xact_lock(hashtext('adcp_store_migrate:{s}'));
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.replay (
    keyid TEXT NOT NULL, scoped BOOLEAN NOT NULL, scope TEXT NOT NULL, nonce BYTEA NOT NULL,
    expires_at BIGINT NOT NULL, agented BOOLEAN NOT NULL DEFAULT false, agent TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (keyid, scoped, scope, nonce));
ALTER TABLE {s}.replay ADD COLUMN IF NOT EXISTS agented BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE {s}.replay ADD COLUMN IF NOT EXISTS agent TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS replay_expires ON {s}.replay (expires_at);
CREATE TABLE IF NOT EXISTS {s}.replay_cap_counts (
    keyid TEXT NOT NULL, agented BOOLEAN NOT NULL, agent TEXT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (keyid, agented, agent));
CREATE TABLE IF NOT EXISTS {s}.replay_total (id INT PRIMARY KEY CHECK (id = 0), n BIGINT NOT NULL);
INSERT INTO {s}.replay_total (id, n) VALUES (0, 0) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION {s}.replay_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.replay_cap_counts (keyid, agented, agent, n) VALUES (NEW.keyid, NEW.agented, NEW.agent, 1)
            ON CONFLICT (keyid, agented, agent) DO UPDATE SET n = {s}.replay_cap_counts.n + 1;
        UPDATE {s}.replay_total SET n = n + 1 WHERE id = 0;
    ELSE
        UPDATE {s}.replay_cap_counts SET n = n - 1
            WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent;
        UPDATE {s}.replay_total SET n = n - 1 WHERE id = 0;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER replay_count AFTER INSERT OR DELETE ON {s}.replay
    FOR EACH ROW EXECUTE FUNCTION {s}.replay_count();
DO $$
BEGIN
    -- A schema of the per-keyid version: rebuild the counters from the rows
    -- (the trigger above maintains them from now on) and drop the old
    -- table, once.
    IF to_regclass('{s}.replay_counts') IS NOT NULL THEN
        DELETE FROM {s}.replay_cap_counts;
        INSERT INTO {s}.replay_cap_counts (keyid, agented, agent, n)
            SELECT keyid, agented, agent, COUNT(*) FROM {s}.replay GROUP BY keyid, agented, agent;
        UPDATE {s}.replay_total SET n = (SELECT COUNT(*) FROM {s}.replay) WHERE id = 0;
        DROP TABLE {s}.replay_counts;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS {s}.idempotency (
    sender TEXT NOT NULL, key TEXT NOT NULL, fingerprint BYTEA NOT NULL, completed BOOLEAN NOT NULL,
    token BIGINT NOT NULL, attempt BIGINT NOT NULL, lease_expires_at BIGINT NOT NULL,
    completed_at BIGINT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
    PRIMARY KEY (sender, key));
CREATE INDEX IF NOT EXISTS idempotency_sender_expires ON {s}.idempotency (sender, expires_at);
CREATE INDEX IF NOT EXISTS idempotency_expires ON {s}.idempotency (expires_at);
CREATE TABLE IF NOT EXISTS {s}.idempotency_counts (sender TEXT PRIMARY KEY, n BIGINT NOT NULL);
CREATE OR REPLACE FUNCTION {s}.idempotency_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.idempotency_counts (sender, n) VALUES (NEW.sender, 1)
            ON CONFLICT (sender) DO UPDATE SET n = {s}.idempotency_counts.n + 1;
    ELSE
        UPDATE {s}.idempotency_counts SET n = n - 1 WHERE sender = OLD.sender;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER idempotency_count AFTER INSERT OR DELETE ON {s}.idempotency
    FOR EACH ROW EXECUTE FUNCTION {s}.idempotency_count();
CREATE TABLE IF NOT EXISTS {s}.idempotency_notifications (
    sender TEXT NOT NULL, notification_id TEXT NOT NULL, key TEXT NOT NULL, expires_at BIGINT NOT NULL,
    PRIMARY KEY (sender, notification_id));
CREATE INDEX IF NOT EXISTS idempotency_notifications_expires ON {s}.idempotency_notifications (expires_at);"
    )
}

impl Statements {
    /// Prepares every statement of schema `s` on `client`.
    async fn prepare(client: &Client, s: &str) -> Result<Self, tokio_postgres::Error> {
        let prepare = |text: String| async move { client.prepare(&text).await };
        let record_cols = "fingerprint, completed, token, attempt, lease_expires_at, completed_at, created_at, \
                           expires_at";
        Ok(Self {
            delete_expired_replay: prepare(format!("DELETE FROM {s}.replay WHERE expires_at < $1")).await?,
            lock_total: prepare(format!("SELECT n FROM {s}.replay_total WHERE id = 0 FOR UPDATE")).await?,
            replay_held: prepare(format!(
                "SELECT 1 FROM {s}.replay WHERE keyid = $1 AND scoped = $2 AND scope = $3 AND nonce = $4 \
                 AND expires_at >= $5"
            ))
            .await?,
            cap_count: prepare(format!(
                "SELECT n FROM {s}.replay_cap_counts WHERE keyid = $1 AND agented = $2 AND agent = $3"
            ))
            .await?,
            replay_insert: prepare(format!(
                "INSERT INTO {s}.replay (keyid, scoped, scope, nonce, expires_at, agented, agent) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ))
            .await?,
            select_record: prepare(format!(
                "SELECT {record_cols} FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND expires_at >= $3"
            ))
            .await?,
            select_records: prepare(format!(
                "SELECT key, {record_cols} FROM {s}.idempotency WHERE sender = $1 AND key = ANY($2) \
                 AND expires_at >= $3"
            ))
            .await?,
            delete_expired_sender: prepare(format!(
                "DELETE FROM {s}.idempotency WHERE sender = $1 AND expires_at < $2"
            ))
            .await?,
            ensure_sender: prepare(format!(
                "INSERT INTO {s}.idempotency_counts (sender, n) VALUES ($1, 0) ON CONFLICT DO NOTHING"
            ))
            .await?,
            lock_sender: prepare(format!(
                "SELECT n FROM {s}.idempotency_counts WHERE sender = $1 FOR UPDATE"
            ))
            .await?,
            idem_insert: prepare(format!(
                "INSERT INTO {s}.idempotency (sender, key, fingerprint, completed, token, attempt, lease_expires_at, \
                 completed_at, created_at, expires_at) VALUES ($1, $2, $3, false, 1, 1, $4, 0, $5, $6)"
            ))
            .await?,
            idem_takeover: prepare(format!(
                "UPDATE {s}.idempotency SET token = $3, attempt = $4, lease_expires_at = $5, \
                 expires_at = GREATEST(expires_at, $6) WHERE sender = $1 AND key = $2"
            ))
            .await?,
            idem_complete: prepare(format!(
                "UPDATE {s}.idempotency SET completed = true, completed_at = $4, expires_at = GREATEST(expires_at, $5) \
                 WHERE sender = $1 AND key = $2 AND token = $3 AND NOT completed AND expires_at >= $4"
            ))
            .await?,
            idem_completed_by: prepare(format!(
                "SELECT 1 FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND token = $3 AND completed \
                 AND expires_at >= $4"
            ))
            .await?,
            idem_release: prepare(format!(
                "DELETE FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND token = $3 AND NOT completed \
                 AND expires_at >= $4"
            ))
            .await?,
            sender_len: prepare(format!(
                "SELECT COUNT(*) FROM {s}.idempotency WHERE sender = $1 AND expires_at >= $2"
            ))
            .await?,
            purge_replay: prepare(format!("DELETE FROM {s}.replay WHERE expires_at < $1")).await?,
            purge_idem: prepare(format!("DELETE FROM {s}.idempotency WHERE expires_at < $1")).await?,
            // A live record keeps its first key and only grows its expiry;
            // an expired one is replaced whole (SET reads the old row).
            note_record: prepare(format!(
                "INSERT INTO {s}.idempotency_notifications AS n (sender, notification_id, key, expires_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (sender, notification_id) DO UPDATE SET \
                 key = CASE WHEN n.expires_at < $5 THEN EXCLUDED.key ELSE n.key END, \
                 expires_at = GREATEST(n.expires_at, EXCLUDED.expires_at)"
            ))
            .await?,
            note_origin: prepare(format!(
                "SELECT key FROM {s}.idempotency_notifications WHERE sender = $1 AND notification_id = $2 \
                 AND expires_at >= $3"
            ))
            .await?,
            purge_notes: prepare(format!(
                "DELETE FROM {s}.idempotency_notifications WHERE expires_at < $1"
            ))
            .await?,
        })
    }
}

impl Conn {
    /// Connects to `url`, migrates schema `schema` first when `migrate`,
    /// and prepares the store's statements.
    async fn open(url: &str, schema: &str, migrate: bool) -> Result<Self, String> {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(pg)?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "postgres store connection closed");
            }
        });
        if migrate {
            client.batch_execute(&migration(schema)).await.map_err(pg)?;
        }
        let sql = Statements::prepare(&client, schema).await.map_err(pg)?;
        Ok(Self { client, sql })
    }
}

fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && schema.len() <= 63
}

fn pg(e: impl fmt::Display) -> String {
    format!("postgres: {e}")
}

impl PostgresStore {
    /// Connects to `url` (a `postgres://` URL, no TLS), applies the schema
    /// and checks the settings. Fails when the server is unreachable within
    /// [`PostgresOptions::op_timeout`].
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, ConfigError> {
        options.idempotency.validate()?;
        if !valid_schema(&options.schema) {
            return Err(ConfigError::Backend(format!(
                "invalid schema name {:?}",
                options.schema
            )));
        }
        let pool: Vec<Mutex<Option<Conn>>> = (0..options.pool_size.max(1)).map(|_| Mutex::new(None)).collect();
        // The first connection migrates the schema, so that it and every
        // later one can prepare statements against its tables.
        let first = tokio::time::timeout(options.op_timeout, Conn::open(url, &options.schema, true))
            .await
            .map_err(|_| ConfigError::Backend(format!("postgres: timed out after {:?}", options.op_timeout)))?
            .map_err(ConfigError::Backend)?;
        if let Some(slot) = pool.first() {
            *slot.lock().await = Some(first);
        }
        Ok(Self {
            url: url.to_owned(),
            options,
            pool,
            next: AtomicUsize::new(0),
        })
    }

    /// The settings in force.
    #[must_use]
    pub fn options(&self) -> &PostgresOptions {
        &self.options
    }

    /// Drops the store's schema and everything in it (test and
    /// decommissioning utility).
    pub async fn drop_schema(&self) -> Result<(), StoreError> {
        let statement = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.options.schema);
        self.with_client(move |client, _| Box::pin(async move { client.batch_execute(&statement).await.map_err(pg) }))
            .await
            .map_err(StoreError)
    }

    /// Deletes every replay entry, idempotency record and notification
    /// record expired at `now`; returns how many rows were removed. Run it
    /// from a timer (writes only expire the rows they touch, and nothing
    /// but this deletes expired notification records).
    pub async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        self.with_client(move |client, sql| {
            Box::pin(async move {
                let tx = client.transaction().await.map_err(pg)?;
                tx.query(&sql.lock_total, &[]).await.map_err(pg)?;
                let replay = tx.execute(&sql.purge_replay, &[&now]).await.map_err(pg)?;
                tx.commit().await.map_err(pg)?;
                let idem = client.execute(&sql.purge_idem, &[&now]).await.map_err(pg)?;
                let notes = client.execute(&sql.purge_notes, &[&now]).await.map_err(pg)?;
                Ok(replay + idem + notes)
            })
        })
        .await
        .map_err(StoreError)
    }

    /// Runs `f` on a pooled connection (connecting and preparing the
    /// statements if needed) within the operation timeout; the connection
    /// is discarded when `f` fails.
    async fn with_client<T, F>(&self, f: F) -> Result<T, String>
    where
        F: for<'c> FnOnce(
            &'c mut Client,
            &'c Statements,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'c>>,
    {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len().max(1);
        let Some(slot) = self.pool.get(index) else {
            return Err("postgres: empty pool".to_owned());
        };
        let work = async {
            let mut guard = slot.lock().await;
            if guard.as_ref().is_none_or(|conn| conn.client.is_closed()) {
                *guard = Some(Conn::open(&self.url, &self.options.schema, false).await?);
            }
            let Some(Conn { client, sql }) = guard.as_mut() else {
                return Err("postgres: no connection".to_owned());
            };
            let result = f(client, sql).await;
            if result.is_err() {
                // Errors are rare, and some leave the connection unusable
                // while still open (its prepared statements may refer to a
                // schema dropped and re-created since): start afresh.
                *guard = None;
            }
            result
        };
        match tokio::time::timeout(self.options.op_timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(format!("postgres: timed out after {:?}", self.options.op_timeout)),
        }
    }
}

fn scope_params(key: ReplayKey<'_>) -> (bool, String) {
    match key.scope {
        Some(scope) => (true, scope.to_owned()),
        None => (false, String::new()),
    }
}

/// The `(agented, agent)` columns of a cap partition: a flag and a value,
/// so `None` and `Some("")` are distinct partitions.
fn agent_params(agent: Option<&str>) -> (bool, String) {
    match agent {
        Some(agent) => (true, agent.to_owned()),
        None => (false, String::new()),
    }
}

fn cap(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[async_trait]
impl crate::PurgeExpired for PostgresStore {
    async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        PostgresStore::purge_expired(self, now).await
    }
}

#[async_trait]
impl ReplayStore for PostgresStore {
    async fn keyid_cap_reached(&self, partition: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        let limit = cap(self.options.replay_limits.per_keyid_cap);
        let keyid = partition.keyid.to_owned();
        let (agented, agent) = agent_params(partition.agent);
        self.with_client(move |client, sql| {
            Box::pin(async move {
                let tx = client.transaction().await.map_err(pg)?;
                tx.query(&sql.lock_total, &[]).await.map_err(pg)?;
                tx.execute(&sql.delete_expired_replay, &[&now]).await.map_err(pg)?;
                let n: i64 = tx
                    .query_opt(&sql.cap_count, &[&keyid, &agented, &agent])
                    .await
                    .map_err(pg)?
                    .map_or(Ok(0), |row| row.try_get(0))
                    .map_err(pg)?;
                tx.commit().await.map_err(pg)?;
                Ok(n >= limit)
            })
        })
        .await
        .map_err(StoreError)
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        let (keyid, nonce) = (key.keyid.to_owned(), key.nonce.to_vec());
        let (scoped, scope) = scope_params(key);
        self.with_client(move |client, sql| {
            Box::pin(async move {
                let row = client
                    .query_opt(&sql.replay_held, &[&keyid, &scoped, &scope, &nonce, &now])
                    .await
                    .map_err(pg)?;
                Ok(row.is_some())
            })
        })
        .await
        .map_err(StoreError)
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        let (keyid, nonce) = (key.keyid.to_owned(), key.nonce.to_vec());
        let (scoped, scope) = scope_params(key);
        let (agented, agent) = agent_params(key.agent);
        let limits = self.options.replay_limits;
        self.with_client(move |client, sql| {
            Box::pin(async move {
                let tx = client.transaction().await.map_err(pg)?;
                tx.query(&sql.lock_total, &[]).await.map_err(pg)?;
                tx.execute(&sql.delete_expired_replay, &[&now]).await.map_err(pg)?;
                // Uniqueness ignores the agent: the primary key has none.
                let held = tx
                    .query_opt(&sql.replay_held, &[&keyid, &scoped, &scope, &nonce, &now])
                    .await
                    .map_err(pg)?;
                let outcome = if held.is_some() {
                    InsertOutcome::Replayed
                } else if expires_at < now {
                    InsertOutcome::Inserted
                } else {
                    let keyid_n: i64 = tx
                        .query_opt(&sql.cap_count, &[&keyid, &agented, &agent])
                        .await
                        .map_err(pg)?
                        .map_or(Ok(0), |row| row.try_get(0))
                        .map_err(pg)?;
                    let total: i64 = tx
                        .query_one(&sql.lock_total, &[])
                        .await
                        .map_err(pg)?
                        .try_get(0)
                        .map_err(pg)?;
                    if keyid_n >= cap(limits.per_keyid_cap) {
                        InsertOutcome::KeyidCapReached
                    } else if total >= cap(limits.aggregate_cap) {
                        InsertOutcome::AggregateCapReached
                    } else {
                        tx.execute(
                            &sql.replay_insert,
                            &[&keyid, &scoped, &scope, &nonce, &expires_at, &agented, &agent],
                        )
                        .await
                        .map_err(pg)?;
                        InsertOutcome::Inserted
                    }
                };
                tx.commit().await.map_err(pg)?;
                Ok(outcome)
            })
        })
        .await
        .map_err(StoreError)
    }
}

/// The record whose columns start at column `first` of `row`.
fn read_record(row: &Row, first: usize) -> Result<IdempotencyRecord, tokio_postgres::Error> {
    record_from_columns(row.try_get(first)?, row.try_get(first + 1)?, |i| row.try_get(first + i))
}

/// One request of a [`claim_many`](IdempotencyStore::claim_many) batch and
/// its position in the batch.
struct BatchClaim {
    sender: String,
    key: String,
    fingerprint: Vec<u8>,
    position: usize,
}

/// The live records of `sender`'s `keys` at `now`, by key, read in one
/// statement.
async fn sender_records(
    client: &impl GenericClient,
    sql: &Statements,
    sender: &str,
    keys: &[&str],
    now: i64,
) -> Result<HashMap<String, IdempotencyRecord>, String> {
    let rows = client
        .query(&sql.select_records, &[&sender, &keys, &now])
        .await
        .map_err(pg)?;
    rows.iter()
        .map(|row| Ok((row.try_get(0)?, read_record(row, 1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(pg)
}

/// The live record of `sender`'s `idem_key` at `now`, through a client or a
/// transaction.
async fn live_record(
    client: &impl GenericClient,
    sql: &Statements,
    sender: &str,
    idem_key: &str,
    now: i64,
) -> Result<Option<IdempotencyRecord>, String> {
    client
        .query_opt(&sql.select_record, &[&sender, &idem_key, &now])
        .await
        .map_err(pg)?
        .map(|row| read_record(&row, 0))
        .transpose()
        .map_err(pg)
}

/// Locks `sender`'s counter row for the rest of transaction `tx`, deletes
/// the sender's expired records and returns how many live ones it holds.
/// The four statements are pipelined: sent at once, run in order.
async fn lock_sender(tx: &Transaction<'_>, sql: &Statements, sender: &str, now: i64) -> Result<u64, String> {
    let (ensured, locked, deleted, live) = futures_util::future::join4(
        tx.execute(&sql.ensure_sender, &[&sender]),
        tx.query(&sql.lock_sender, &[&sender]),
        tx.execute(&sql.delete_expired_sender, &[&sender, &now]),
        tx.query_one(&sql.lock_sender, &[&sender]),
    )
    .await;
    ensured.map_err(pg)?;
    locked.map_err(pg)?;
    deleted.map_err(pg)?;
    let live: i64 = live.map_err(pg)?.try_get(0).map_err(pg)?;
    Ok(u64::try_from(live).unwrap_or(0))
}

/// Claims `(sender, key, fingerprint)`, whose live record is `existing`, in
/// transaction `tx`, which holds the sender's lock ([`lock_sender`]);
/// `sender_live` counts the sender's live records and grows with an
/// inserted one.
async fn claim_locked(
    tx: &Transaction<'_>,
    sql: &Statements,
    sender_live: &mut u64,
    existing: Option<&IdempotencyRecord>,
    request: (&str, &str, &[u8]),
    config: &IdempotencyConfig,
    now: i64,
) -> Result<ClaimOutcome, String> {
    match plan_locked(sender_live, existing, request.2, config, now) {
        ClaimStep::Answer(outcome) => Ok(outcome),
        ClaimStep::Write(write) => write_claim(tx, sql, request, &write, now).await,
    }
}

/// What a claim under the sender's lock does; `sender_live` grows when it
/// inserts a record.
fn plan_locked(
    sender_live: &mut u64,
    existing: Option<&IdempotencyRecord>,
    fingerprint: &[u8],
    config: &IdempotencyConfig,
    now: i64,
) -> ClaimStep {
    let step = plan_claim(existing, fingerprint, *sender_live, config, now);
    if let ClaimStep::Write(ClaimWrite { takeover: false, .. }) = step {
        *sender_live += 1;
    }
    step
}

/// Writes the claim `write` planned for `(sender, key, fingerprint)`.
async fn write_claim(
    tx: &Transaction<'_>,
    sql: &Statements,
    (sender, idem_key, fingerprint): (&str, &str, &[u8]),
    write: &ClaimWrite,
    now: i64,
) -> Result<ClaimOutcome, String> {
    if write.takeover {
        tx.execute(
            &sql.idem_takeover,
            &[
                &sender,
                &idem_key,
                &write.claim.token.0,
                &i64::from(write.claim.attempt),
                &write.claim.lease_expires_at,
                &write.expires_at,
            ],
        )
        .await
        .map_err(pg)?;
    } else {
        tx.execute(
            &sql.idem_insert,
            &[
                &sender,
                &idem_key,
                &fingerprint,
                &write.claim.lease_expires_at,
                &now,
                &write.expires_at,
            ],
        )
        .await
        .map_err(pg)?;
    }
    Ok(write.outcome())
}

/// Claims `group` (requests of one sender, in batch order) in transaction
/// `tx`: locks the sender and reads the group's records (pipelined), then
/// plans every request in order and writes the claims pipelined. A key
/// that appears twice is planned against what the earlier request wrote,
/// so such a group is claimed one request after another, each reading
/// its record again.
async fn claim_group(
    tx: &Transaction<'_>,
    sql: &Statements,
    group: &[&BatchClaim],
    config: &IdempotencyConfig,
    now: i64,
) -> Result<Vec<(usize, ClaimOutcome)>, String> {
    let Some(first) = group.first() else {
        return Ok(Vec::new());
    };
    let keys: Vec<&str> = group.iter().map(|c| c.key.as_str()).collect();
    let (live, records) = futures_util::future::join(
        lock_sender(tx, sql, &first.sender, now),
        sender_records(tx, sql, &first.sender, &keys, now),
    )
    .await;
    let (mut sender_live, mut records) = (live?, records?);
    let mut seen = HashSet::new();
    if keys.iter().all(|key| seen.insert(*key)) {
        let mut answers = Vec::with_capacity(group.len());
        let mut writes = Vec::new();
        for claim in group {
            match plan_locked(
                &mut sender_live,
                records.get(&claim.key),
                &claim.fingerprint,
                config,
                now,
            ) {
                ClaimStep::Answer(outcome) => answers.push((claim.position, outcome)),
                ClaimStep::Write(write) => writes.push((claim, write)),
            }
        }
        let written =
            futures_util::future::try_join_all(writes.iter().map(|(claim, write)| {
                write_claim(tx, sql, (&claim.sender, &claim.key, &claim.fingerprint), write, now)
            }))
            .await?;
        answers.extend(writes.iter().map(|(claim, _)| claim.position).zip(written));
        return Ok(answers);
    }
    let mut answers = Vec::with_capacity(group.len());
    let mut written = HashSet::new();
    for claim in group {
        let BatchClaim {
            sender,
            key,
            fingerprint,
            position,
        } = claim;
        if written.contains(key.as_str()) {
            match live_record(tx, sql, sender, key, now).await? {
                Some(record) => records.insert(key.clone(), record),
                None => records.remove(key),
            };
        }
        let request = (sender.as_str(), key.as_str(), fingerprint.as_slice());
        let outcome = claim_locked(tx, sql, &mut sender_live, records.get(key), request, config, now).await?;
        if matches!(outcome, ClaimOutcome::Claimed(_)) {
            written.insert(key.as_str());
        }
        answers.push((*position, outcome));
    }
    Ok(answers)
}

/// One completion: `token` completes `sender`'s `idem_key` at `now`,
/// keeping the record until at least `until`, and records
/// `notification_id` when given.
struct Completion {
    sender: String,
    idem_key: String,
    token: ClaimToken,
    notification_id: Option<String>,
    now: i64,
    until: i64,
}

impl Completion {
    /// Applies the completion through a client or a transaction; returns
    /// whether the token owns the (now completed) record. The notification
    /// record is written only for an owner.
    async fn apply(&self, client: &impl GenericClient, sql: &Statements) -> Result<bool, String> {
        let Self {
            sender,
            idem_key,
            token,
            now,
            until,
            ..
        } = self;
        let updated = client
            .execute(&sql.idem_complete, &[sender, idem_key, &token.0, now, until])
            .await
            .map_err(pg)?;
        let owned = updated == 1
            || client
                .query_opt(&sql.idem_completed_by, &[sender, idem_key, &token.0, now])
                .await
                .map_err(pg)?
                .is_some();
        if let (true, Some(notification_id)) = (owned, &self.notification_id) {
            client
                .execute(&sql.note_record, &[sender, notification_id, idem_key, until, now])
                .await
                .map_err(pg)?;
        }
        Ok(owned)
    }
}

#[async_trait]
impl IdempotencyStore for PostgresStore {
    fn config(&self) -> IdempotencyConfig {
        self.options.idempotency
    }

    async fn claim(
        &self,
        key: SenderKey<'_>,
        fingerprint: Fingerprint<'_>,
        now: i64,
    ) -> Result<ClaimOutcome, IdempotencyError> {
        let (sender, idem_key) = (key.sender.to_owned(), key.idempotency_key.to_owned());
        let fingerprint = fingerprint.as_bytes().to_vec();
        let config = self.options.idempotency;
        self.with_client(move |client, sql| {
            Box::pin(async move {
                // Fast path: a live record answers without locks, unless its
                // lease expired (a takeover must be serialized).
                let existing = live_record(client, sql, &sender, &idem_key, now).await?;
                if let Some(record) = &existing {
                    if let ClaimStep::Answer(outcome) = plan_claim(Some(record), &fingerprint, 0, &config, now) {
                        return Ok(outcome);
                    }
                }
                let tx = client.transaction().await.map_err(pg)?;
                let mut sender_live = lock_sender(&tx, sql, &sender, now).await?;
                let existing = live_record(&tx, sql, &sender, &idem_key, now).await?;
                let request = (sender.as_str(), idem_key.as_str(), fingerprint.as_slice());
                let outcome =
                    claim_locked(&tx, sql, &mut sender_live, existing.as_ref(), request, &config, now).await?;
                tx.commit().await.map_err(pg)?;
                Ok(outcome)
            })
        })
        .await
        .map_err(IdempotencyError::Unavailable)
    }

    /// As many claims as one call can make: first, per sender, one
    /// lock-free read of the batch's live records (all senders' reads
    /// pipelined) answers every request a single claim would answer from
    /// its fast path; the rest are claimed in one transaction, so one
    /// commit acknowledges them all, each sender's counter row locked once
    /// (senders in sorted order, so concurrent batches cannot deadlock) and
    /// its requests planned in batch order, their writes pipelined. If the
    /// transaction fails, none of it is applied and every request answers
    /// `Unavailable`.
    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        if requests.is_empty() {
            return Vec::new();
        }
        // Grouped by sender; the sort is stable, so a sender's requests
        // keep their batch order.
        let mut owned: Vec<BatchClaim> = requests
            .iter()
            .enumerate()
            .map(|(position, r)| BatchClaim {
                sender: r.key.sender.to_owned(),
                key: r.key.idempotency_key.to_owned(),
                fingerprint: r.fingerprint.as_bytes().to_vec(),
                position,
            })
            .collect();
        owned.sort_by(|a, b| a.sender.cmp(&b.sender));
        let config = self.options.idempotency;
        let answers = self
            .with_client(move |client, sql| {
                Box::pin(async move {
                    let mut answers = Vec::with_capacity(owned.len());
                    let mut pending = Vec::new();
                    let groups: Vec<&[BatchClaim]> = owned.chunk_by(|a, b| a.sender == b.sender).collect();
                    let keys: Vec<Vec<&str>> = groups
                        .iter()
                        .map(|g| g.iter().map(|c| c.key.as_str()).collect())
                        .collect();
                    // One read per sender, all pipelined.
                    let reads = groups
                        .iter()
                        .zip(&keys)
                        .map(|(group, keys)| sender_records(&*client, sql, &group[0].sender, keys, now));
                    let records = futures_util::future::try_join_all(reads).await?;
                    for (group, records) in groups.iter().zip(&records) {
                        for request in *group {
                            let existing = records.get(&request.key);
                            match existing.map(|r| plan_claim(Some(r), &request.fingerprint, 0, &config, now)) {
                                Some(ClaimStep::Answer(outcome)) => answers.push((request.position, outcome)),
                                _ => pending.push(request),
                            }
                        }
                    }
                    if !pending.is_empty() {
                        let tx = client.transaction().await.map_err(pg)?;
                        for group in pending.chunk_by(|a, b| a.sender == b.sender) {
                            answers.extend(claim_group(&tx, sql, group, &config, now).await?);
                        }
                        tx.commit().await.map_err(pg)?;
                    }
                    answers.sort_unstable_by_key(|(position, _)| *position);
                    Ok(answers)
                })
            })
            .await;
        match answers {
            Ok(answers) => answers.into_iter().map(|(_, outcome)| Ok(outcome)).collect(),
            Err(e) => vec![Err(IdempotencyError::Unavailable(e)); requests.len()],
        }
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.complete_with_notification(key, token, None, now).await
    }

    /// Without a notification: the completion alone (one statement, plus a
    /// read when it was already completed). With one: the completion and
    /// the record in one transaction.
    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        crate::notification::check_optional(notification_id)?;
        let completion = Completion {
            sender: key.sender.to_owned(),
            idem_key: key.idempotency_key.to_owned(),
            token,
            notification_id: notification_id.map(str::to_owned),
            now,
            until: now.saturating_add(self.options.idempotency.window_secs),
        };
        let owned = self
            .with_client(move |client, sql| {
                Box::pin(async move {
                    if completion.notification_id.is_none() {
                        return completion.apply(&*client, sql).await;
                    }
                    let tx = client.transaction().await.map_err(pg)?;
                    let owned = completion.apply(&tx, sql).await?;
                    tx.commit().await.map_err(pg)?;
                    Ok(owned)
                })
            })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        if owned {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        crate::notification::check(notification_id)?;
        let (sender, notification_id) = (sender.to_owned(), notification_id.to_owned());
        self.with_client(move |client, sql| {
            Box::pin(async move {
                client
                    .query_opt(&sql.note_origin, &[&sender, &notification_id, &now])
                    .await
                    .map_err(pg)?
                    .map(|row| row.try_get(0))
                    .transpose()
                    .map_err(pg)
            })
        })
        .await
        .map_err(IdempotencyError::Unavailable)
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let (sender, idem_key) = (key.sender.to_owned(), key.idempotency_key.to_owned());
        let deleted = self
            .with_client(move |client, sql| {
                Box::pin(async move {
                    let tx = client.transaction().await.map_err(pg)?;
                    tx.query(&sql.lock_sender, &[&sender]).await.map_err(pg)?;
                    let n = tx
                        .execute(&sql.idem_release, &[&sender, &idem_key, &token.0, &now])
                        .await
                        .map_err(pg)?;
                    tx.commit().await.map_err(pg)?;
                    Ok(n)
                })
            })
            .await
            .map_err(IdempotencyError::Unavailable)?;
        if deleted == 1 {
            Ok(())
        } else {
            Err(IdempotencyError::NotOwner)
        }
    }

    async fn lookup(&self, key: SenderKey<'_>, now: i64) -> Result<Option<IdempotencyRecord>, IdempotencyError> {
        let (sender, idem_key) = (key.sender.to_owned(), key.idempotency_key.to_owned());
        self.with_client(move |client, sql| {
            Box::pin(async move { live_record(client, sql, &sender, &idem_key, now).await })
        })
        .await
        .map_err(IdempotencyError::Unavailable)
    }

    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        let sender = sender.to_owned();
        self.with_client(move |client, sql| {
            Box::pin(async move {
                let n: i64 = client
                    .query_one(&sql.sender_len, &[&sender, &now])
                    .await
                    .map_err(pg)?
                    .try_get(0)
                    .map_err(pg)?;
                Ok(u64::try_from(n).unwrap_or(0))
            })
        })
        .await
        .map_err(IdempotencyError::Unavailable)
    }
}
