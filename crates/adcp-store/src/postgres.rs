//! The PostgreSQL backend.
//!
//! The user-facing documentation is on [`PostgresStore`] (re-exported at the
//! crate root).

use crate::idempotency::{
    plan_claim, record_from_columns, ClaimOutcome, ClaimStep, ClaimToken, ConfigError, Fingerprint, IdempotencyConfig,
    IdempotencyError, IdempotencyRecord, IdempotencyStore, SenderKey,
};
use adcp_verify::{CapKey, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_postgres::{Client, GenericClient, NoTls, Row};

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
/// Connections come from a small built-in pool; a broken connection is
/// replaced on the next call, and every call is bounded by
/// [`PostgresOptions::op_timeout`]: when the server is unreachable the call
/// fails closed with a retryable error and recovers by itself once the
/// server is back.
pub struct PostgresStore {
    url: String,
    options: PostgresOptions,
    pool: Vec<Mutex<Option<Client>>>,
    next: AtomicUsize,
    sql: Sql,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// SQL text with the schema name substituted.
struct Sql {
    migrate: String,
    delete_expired_replay: String,
    lock_total: String,
    replay_held: String,
    cap_count: String,
    replay_insert: String,
    select_record: String,
    delete_expired_sender: String,
    ensure_sender: String,
    lock_sender: String,
    idem_insert: String,
    idem_takeover: String,
    idem_complete: String,
    idem_completed_by: String,
    idem_release: String,
    sender_len: String,
    purge_replay: String,
    purge_idem: String,
    note_record: String,
    note_origin: String,
    purge_notes: String,
}

impl Sql {
    fn new(s: &str) -> Self {
        // One simple-query batch runs as one implicit transaction (rolled
        // back whole on error); the advisory lock, keyed by the schema name,
        // serializes stores connecting at once, so the one-time counter
        // rebuild below cannot interleave with another store's.
        let migrate = format!(
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
        );
        let record_cols = "fingerprint, completed, token, attempt, lease_expires_at, completed_at, created_at, \
                           expires_at";
        Self {
            migrate,
            delete_expired_replay: format!("DELETE FROM {s}.replay WHERE expires_at < $1"),
            lock_total: format!("SELECT n FROM {s}.replay_total WHERE id = 0 FOR UPDATE"),
            replay_held: format!(
                "SELECT 1 FROM {s}.replay WHERE keyid = $1 AND scoped = $2 AND scope = $3 AND nonce = $4 \
                 AND expires_at >= $5"
            ),
            cap_count: format!("SELECT n FROM {s}.replay_cap_counts WHERE keyid = $1 AND agented = $2 AND agent = $3"),
            replay_insert: format!(
                "INSERT INTO {s}.replay (keyid, scoped, scope, nonce, expires_at, agented, agent) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)"
            ),
            select_record: format!(
                "SELECT {record_cols} FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND expires_at >= $3"
            ),
            delete_expired_sender: format!("DELETE FROM {s}.idempotency WHERE sender = $1 AND expires_at < $2"),
            ensure_sender: format!(
                "INSERT INTO {s}.idempotency_counts (sender, n) VALUES ($1, 0) ON CONFLICT DO NOTHING"
            ),
            lock_sender: format!("SELECT n FROM {s}.idempotency_counts WHERE sender = $1 FOR UPDATE"),
            idem_insert: format!(
                "INSERT INTO {s}.idempotency (sender, key, fingerprint, completed, token, attempt, lease_expires_at, \
                 completed_at, created_at, expires_at) VALUES ($1, $2, $3, false, 1, 1, $4, 0, $5, $6)"
            ),
            idem_takeover: format!(
                "UPDATE {s}.idempotency SET token = $3, attempt = $4, lease_expires_at = $5, \
                 expires_at = GREATEST(expires_at, $6) WHERE sender = $1 AND key = $2"
            ),
            idem_complete: format!(
                "UPDATE {s}.idempotency SET completed = true, completed_at = $4, expires_at = GREATEST(expires_at, $5) \
                 WHERE sender = $1 AND key = $2 AND token = $3 AND NOT completed AND expires_at >= $4"
            ),
            idem_completed_by: format!(
                "SELECT 1 FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND token = $3 AND completed \
                 AND expires_at >= $4"
            ),
            idem_release: format!(
                "DELETE FROM {s}.idempotency WHERE sender = $1 AND key = $2 AND token = $3 AND NOT completed \
                 AND expires_at >= $4"
            ),
            sender_len: format!("SELECT COUNT(*) FROM {s}.idempotency WHERE sender = $1 AND expires_at >= $2"),
            purge_replay: format!("DELETE FROM {s}.replay WHERE expires_at < $1"),
            purge_idem: format!("DELETE FROM {s}.idempotency WHERE expires_at < $1"),
            // A live record keeps its first key and only grows its expiry;
            // an expired one is replaced whole (SET reads the old row).
            note_record: format!(
                "INSERT INTO {s}.idempotency_notifications AS n (sender, notification_id, key, expires_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (sender, notification_id) DO UPDATE SET \
                 key = CASE WHEN n.expires_at < $5 THEN EXCLUDED.key ELSE n.key END, \
                 expires_at = GREATEST(n.expires_at, EXCLUDED.expires_at)"
            ),
            note_origin: format!(
                "SELECT key FROM {s}.idempotency_notifications WHERE sender = $1 AND notification_id = $2 \
                 AND expires_at >= $3"
            ),
            purge_notes: format!("DELETE FROM {s}.idempotency_notifications WHERE expires_at < $1"),
        }
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
        let pool = (0..options.pool_size.max(1)).map(|_| Mutex::new(None)).collect();
        let store = Self {
            url: url.to_owned(),
            sql: Sql::new(&options.schema),
            options,
            pool,
            next: AtomicUsize::new(0),
        };
        store
            .with_client(|client, sql| Box::pin(async move { client.batch_execute(&sql.migrate).await.map_err(pg) }))
            .await
            .map_err(ConfigError::Backend)?;
        Ok(store)
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

    /// Runs `f` on a pooled connection (connecting if needed) within the
    /// operation timeout; a failed connection is discarded.
    async fn with_client<T, F>(&self, f: F) -> Result<T, String>
    where
        F: for<'c> FnOnce(
            &'c mut Client,
            &'c Sql,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'c>>,
    {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len().max(1);
        let Some(slot) = self.pool.get(index) else {
            return Err("postgres: empty pool".to_owned());
        };
        let work = async {
            let mut guard = slot.lock().await;
            if guard.as_ref().is_none_or(Client::is_closed) {
                let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await.map_err(pg)?;
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::warn!(error = %e, "postgres store connection closed");
                    }
                });
                *guard = Some(client);
            }
            let Some(client) = guard.as_mut() else {
                return Err("postgres: no connection".to_owned());
            };
            let result = f(client, &self.sql).await;
            if result.is_err() && client.is_closed() {
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

fn read_record(row: &Row) -> Result<IdempotencyRecord, tokio_postgres::Error> {
    record_from_columns(row.try_get(0)?, row.try_get(1)?, |i| row.try_get(i))
}

/// The live record of `sender`'s `idem_key` at `now`, through a client or a
/// transaction.
async fn live_record(
    client: &impl GenericClient,
    sql: &Sql,
    sender: &str,
    idem_key: &str,
    now: i64,
) -> Result<Option<IdempotencyRecord>, String> {
    client
        .query_opt(&sql.select_record, &[&sender, &idem_key, &now])
        .await
        .map_err(pg)?
        .map(|row| read_record(&row))
        .transpose()
        .map_err(pg)
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
    async fn apply(&self, client: &impl GenericClient, sql: &Sql) -> Result<bool, String> {
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
                tx.execute(&sql.ensure_sender, &[&sender]).await.map_err(pg)?;
                tx.query(&sql.lock_sender, &[&sender]).await.map_err(pg)?;
                tx.execute(&sql.delete_expired_sender, &[&sender, &now])
                    .await
                    .map_err(pg)?;
                let sender_live: i64 = tx
                    .query_one(&sql.lock_sender, &[&sender])
                    .await
                    .map_err(pg)?
                    .try_get(0)
                    .map_err(pg)?;
                let existing = live_record(&tx, sql, &sender, &idem_key, now).await?;
                let sender_live = u64::try_from(sender_live).unwrap_or(0);
                let outcome = match plan_claim(existing.as_ref(), &fingerprint, sender_live, &config, now) {
                    ClaimStep::Answer(outcome) => outcome,
                    ClaimStep::Write(write) if write.takeover => {
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
                        write.outcome()
                    }
                    ClaimStep::Write(write) => {
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
                        write.outcome()
                    }
                };
                tx.commit().await.map_err(pg)?;
                Ok(outcome)
            })
        })
        .await
        .map_err(IdempotencyError::Unavailable)
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
