//! The embedded SQLite outbox: the operations as functions of a
//! connection (so an application's own `rusqlite::Transaction` can
//! enqueue), and [`SqliteOutbox`], which runs them on a group-commit
//! writer thread.

mod channels;
mod claim;
mod enqueue;
mod finish;
mod query;
mod reporting;
mod sql;
#[cfg(test)]
mod writer_cost;

pub use enqueue::enqueue_sqlite;

use super::schema::{check_prefix, migration, version_table, SCHEMA_VERSION};
use super::{
    lease_token, ActivityQuery, ChannelRow, ChannelWrite, ClaimRequest, Claimed, Enqueued, EventView, Finish, Insert,
    LeaseGrant, ListFilter, OutboxStats, OutboxStore, StreamRow, StreamUpdate, Unattempted,
};
use crate::activity::ActivityRecord;
use crate::breaker::BreakerPolicy;
use crate::error::OutboxError;
use crate::id::EventId;
use adcp_store::SqliteWriter;
use rusqlite::{params, Connection};
use sql::Sql;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Settings of a [`SqliteOutbox`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOutboxOptions {
    /// The prefix of the outbox's tables (default `adcp_outbox_`).
    pub table_prefix: String,
    /// How long a write waits for another process's write lock.
    pub busy_timeout: Duration,
    /// The destination breakers' policy.
    pub breaker: BreakerPolicy,
}

impl Default for SqliteOutboxOptions {
    fn default() -> Self {
        Self {
            table_prefix: super::schema::DEFAULT_TABLE_PREFIX.to_owned(),
            busy_timeout: Duration::from_secs(5),
            breaker: BreakerPolicy::default(),
        }
    }
}

/// The outbox in one SQLite file (WAL, `synchronous=FULL`): every
/// operation is durable when it returns. The file may be the
/// application's own (the tables are prefixed and versioned in a table of
/// their own). Several processes may share the file: each operation is
/// one `BEGIN IMMEDIATE` transaction, so claims, leases and fencing hold
/// across processes; a process sees another's enqueues at its next poll.
#[derive(Clone)]
pub struct SqliteOutbox {
    writer: Arc<SqliteWriter>,
    path: PathBuf,
    sql: Arc<Sql>,
    breaker: BreakerPolicy,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for SqliteOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteOutbox")
            .field("path", &self.path)
            .field("prefix", &self.sql.prefix)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::fmt::Display) -> OutboxError {
    OutboxError::Unavailable(format!("sqlite: {e}"))
}

/// Applies the connection settings the outbox relies on: WAL,
/// `synchronous=FULL`, the busy timeout, and statement journals in memory
/// (`temp_store=MEMORY`): every operation of a group commit runs in its own
/// savepoint, whose undo copies of the pages it changes would otherwise
/// spill to a temporary file past 64 KiB, one `pwrite` per page. They
/// only serve a rollback inside the open transaction, so losing them in a
/// crash loses nothing.
fn configure(conn: &Connection, busy_timeout: Duration) -> Result<(), OutboxError> {
    conn.busy_timeout(busy_timeout).map_err(unavailable)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(unavailable)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(OutboxError::Config(format!(
            "sqlite journal_mode is {mode}, WAL required"
        )));
    }
    conn.pragma_update(None, "synchronous", "FULL").map_err(unavailable)?;
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(unavailable)?;
    Ok(())
}

/// Creates or migrates the outbox's tables with `prefix` on `conn`, in one
/// write transaction. Run it once at start-up on an application's own
/// connection before enqueueing there ([`SqliteOutbox::open`] does it for
/// its own).
///
/// # Errors
///
/// [`OutboxError::Schema`] for a file of a newer schema version;
/// [`OutboxError::Unavailable`] when the file cannot be written.
pub fn migrate_sqlite(conn: &Connection, prefix: &str) -> Result<(), OutboxError> {
    check_prefix(prefix)?;
    conn.execute_batch("BEGIN IMMEDIATE").map_err(unavailable)?;
    let result = (|| {
        conn.execute_batch(&version_table(prefix, false)).map_err(unavailable)?;
        let current: i64 = conn
            .query_row(
                &format!("SELECT COALESCE(MAX(version), 0) FROM {prefix}schema_version"),
                [],
                |r| r.get(0),
            )
            .map_err(unavailable)?;
        if current > SCHEMA_VERSION {
            return Err(OutboxError::Schema(format!(
                "the outbox tables ({prefix}*) are at version {current}, newer than this build's {SCHEMA_VERSION}"
            )));
        }
        for version in current + 1..=SCHEMA_VERSION {
            let sql = migration(version, prefix, false)
                .ok_or_else(|| OutboxError::Schema(format!("no migration to version {version}")))?;
            if !sql.is_empty() {
                conn.execute_batch(&sql).map_err(unavailable)?;
            }
            conn.execute(
                &format!("INSERT INTO {prefix}schema_version (version, applied_at) VALUES (?1, ?2)"),
                params![version, crate::clock::Clock::now_ms(&crate::clock::SystemClock)],
            )
            .map_err(unavailable)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT").map_err(unavailable),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

impl SqliteOutbox {
    /// Opens (creating if needed) the outbox in the file at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be opened or migrated; a bad prefix.
    pub fn open(path: impl AsRef<Path>, options: SqliteOutboxOptions) -> Result<Self, OutboxError> {
        check_prefix(&options.table_prefix)?;
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(unavailable)?;
        configure(&conn, options.busy_timeout)?;
        conn.set_prepared_statement_cache_capacity(64);
        migrate_sqlite(&conn, &options.table_prefix)?;
        let writer = SqliteWriter::start(conn).map_err(unavailable)?;
        Ok(Self {
            writer: Arc::new(writer),
            path,
            sql: Arc::new(Sql::new(&options.table_prefix)),
            breaker: options.breaker,
            wake: Arc::new(Notify::new()),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn run<T, F>(&self, f: F) -> Result<T, OutboxError>
    where
        T: Send + 'static,
        F: FnMut(&Connection, &Sql) -> rusqlite::Result<T> + Send + 'static,
    {
        self.run_as(f, true).await
    }

    /// [`run`](Self::run) for the hot operations (enqueue, claim, finish):
    /// without a savepoint of their own (see
    /// [`SqliteWriter::submit_unguarded`]); an SQL error rolls back their
    /// whole batch, whose other operations run again.
    async fn run_hot<T, F>(&self, f: F) -> Result<T, OutboxError>
    where
        T: Send + 'static,
        F: FnMut(&Connection, &Sql) -> rusqlite::Result<T> + Send + 'static,
    {
        self.run_as(f, false).await
    }

    /// [`run`](Self::run) for an operation that may be refused after it
    /// wrote: the refusal fails the job, so its savepoint rolls back
    /// everything it did, and comes back typed.
    async fn run_refusable<T, F>(&self, mut f: F) -> Result<T, OutboxError>
    where
        T: Send + 'static,
        F: FnMut(&Connection, &Sql) -> rusqlite::Result<T> + Send + 'static,
    {
        let slot: Arc<std::sync::Mutex<Option<OutboxError>>> = Arc::default();
        let seen = Arc::clone(&slot);
        let done = self
            .run(move |conn, q| {
                f(conn, q).inspect_err(|e| {
                    if let Some(refused) = refusal(e) {
                        *seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refused);
                    }
                })
            })
            .await;
        match done {
            Ok(done) => Ok(done),
            Err(e) => Err(slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or(e)),
        }
    }

    async fn run_as<T, F>(&self, mut f: F, guarded: bool) -> Result<T, OutboxError>
    where
        T: Send + 'static,
        F: FnMut(&Connection, &Sql) -> rusqlite::Result<T> + Send + 'static,
    {
        let sql = Arc::clone(&self.sql);
        let job = move |conn: &Connection| f(conn, &sql);
        let answer = if guarded {
            self.writer.submit(job)
        } else {
            self.writer.submit_unguarded(job)
        }
        .map_err(OutboxError::Unavailable)?;
        answer
            .await
            .map_err(|_| OutboxError::Unavailable("sqlite: the writer thread stopped".to_owned()))?
            .map_err(OutboxError::Unavailable)
    }
}

/// A domain refusal carried through the writer's `rusqlite::Result` (the
/// savepoint of the operation is rolled back, so it changes nothing).
fn refuse(e: OutboxError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(Refusal(e)))
}

#[derive(Debug)]
struct Refusal(OutboxError);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Refusal {}

/// The domain refusal inside an error, if it is one.
fn refusal(e: &rusqlite::Error) -> Option<OutboxError> {
    match e {
        rusqlite::Error::ToSqlConversionFailure(inner) => inner.downcast_ref::<Refusal>().map(|r| r.0.clone()),
        _ => None,
    }
}

impl SqliteOutbox {
    /// The enqueue job.
    async fn enqueue_job(
        &self,
        row: Insert,
        lease: Option<LeaseGrant>,
    ) -> Result<(Enqueued, Option<Claimed>), OutboxError> {
        // Unguarded (no savepoint, no statement journal): every refusal
        // of an enqueue comes before its first write and is answered as a
        // value; any other error rolls back the whole batch, so no partial
        // enqueue (a superseded event without its successor) commits.
        let done = self
            .run_hot(
                move |conn, q| match enqueue::enqueue_in(conn, q, &row, lease.as_ref()) {
                    Ok(done) => Ok(Ok(done)),
                    Err(e) => refusal(&e).map(Err).ok_or(e),
                },
            )
            .await?;
        let done = done?;
        // An event leased at once has its worker; only a pending one
        // needs the claim loop.
        if done.1.is_none() && !done.0.duplicate {
            self.wake.notify_one();
        }
        Ok(done)
    }
}

#[async_trait::async_trait]
impl OutboxStore for SqliteOutbox {
    async fn enqueue(&self, row: Insert) -> Result<Enqueued, OutboxError> {
        Ok(self.enqueue_job(row, None).await?.0)
    }

    fn leases_at_enqueue(&self) -> bool {
        true
    }

    async fn enqueue_leased(&self, row: Insert, lease: LeaseGrant) -> Result<(Enqueued, Option<Claimed>), OutboxError> {
        self.enqueue_job(row, Some(lease)).await
    }

    async fn claim(&self, request: ClaimRequest) -> Result<Vec<Claimed>, OutboxError> {
        let token_base = lease_token();
        self.run(move |conn, q| claim::claim_in(conn, q, &request, token_base))
            .await
    }

    async fn finish(&self, batch: Vec<Finish>) -> Result<Vec<bool>, OutboxError> {
        let policy = self.breaker;
        self.run_hot(move |conn, q| batch.iter().map(|f| finish::finish_in(conn, q, f, &policy)).collect())
            .await
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, OutboxError> {
        self.run(move |conn, q| finish::expire_in(conn, q, now_ms)).await
    }

    async fn next_due(&self, _now_ms: i64) -> Result<Option<i64>, OutboxError> {
        self.run(finish::next_due_in).await
    }

    async fn get(&self, id: &EventId) -> Result<Option<EventView>, OutboxError> {
        let id = id.as_str().to_owned();
        self.run(move |conn, q| query::get_in(conn, q, &id)).await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<EventView>, OutboxError> {
        let filter = filter.clone();
        self.run(move |conn, q| query::list_in(conn, q, &filter)).await
    }

    async fn channel(&self, id: &str) -> Result<Option<ChannelRow>, OutboxError> {
        let id = id.to_owned();
        self.run(move |conn, q| channels::get_in(conn, q, &id)).await
    }

    async fn write_channel(&self, write: ChannelWrite) -> Result<Option<u64>, OutboxError> {
        let wakes = write.flush_held || !write.replace.is_empty();
        let applied = self
            .run_refusable(move |conn, q| channels::write_in(conn, q, &write))
            .await?;
        if applied.is_some() && wakes {
            self.wake.notify_one();
        }
        Ok(applied)
    }

    async fn unattempted(&self, channel_id: &str, limit: usize) -> Result<Vec<Unattempted>, OutboxError> {
        let channel = channel_id.to_owned();
        self.run(move |conn, q| channels::unattempted_in(conn, q, &channel, limit))
            .await
    }

    async fn create_stream(&self, row: StreamRow) -> Result<StreamRow, OutboxError> {
        let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        self.run(move |conn, q| reporting::create_in(conn, q, &row, now)).await
    }

    async fn stream(&self, id: &str) -> Result<Option<StreamRow>, OutboxError> {
        let id = id.to_owned();
        self.run(move |conn, q| reporting::get_in(conn, q, &id)).await
    }

    async fn due_streams(&self, now_ms: i64, limit: usize) -> Result<Vec<StreamRow>, OutboxError> {
        self.run(move |conn, q| reporting::due_in(conn, q, now_ms, limit)).await
    }

    async fn advance_stream(&self, update: StreamUpdate, event: Option<Insert>) -> Result<bool, OutboxError> {
        let enqueues = event.is_some();
        let applied = self
            .run_refusable(move |conn, q| reporting::advance_in(conn, q, &update, event.as_ref()))
            .await?;
        if applied && enqueues {
            self.wake.notify_one();
        }
        Ok(applied)
    }

    async fn channel_busy(&self, channel_id: &str) -> Result<bool, OutboxError> {
        let channel = channel_id.to_owned();
        self.run(move |conn, q| reporting::channel_busy_in(conn, q, &channel))
            .await
    }

    async fn redrive(&self, id: &EventId, now_ms: i64) -> Result<EventView, OutboxError> {
        let id = id.as_str().to_owned();
        let done = self
            .run(move |conn, q| Ok(query::redrive_in(conn, q, &id, now_ms).map_err(|e| refusal(&e).ok_or(e))))
            .await?;
        match done {
            Ok(view) => {
                self.wake.notify_one();
                Ok(view)
            }
            Err(Ok(refused)) => Err(refused),
            Err(Err(e)) => Err(unavailable(e)),
        }
    }

    async fn activity(&self, query: &ActivityQuery) -> Result<Vec<ActivityRecord>, OutboxError> {
        let query = query.clone();
        self.run(move |conn, q| query::activity_in(conn, q, &query)).await
    }

    async fn purge(&self, now_ms: i64, retention_ms: i64) -> Result<u64, OutboxError> {
        self.run(move |conn, q| query::purge_in(conn, q, now_ms.saturating_sub(retention_ms)))
            .await
    }

    async fn stats(&self, _now_ms: i64) -> Result<OutboxStats, OutboxError> {
        self.run(query::stats_in).await
    }

    fn wakeups(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::activity::ActivityStatus;
    use crate::store::ActivitySelector;

    /// The purge finds the records completed before the cutoff by their
    /// order (a binary search over rowids) and deletes only those, even
    /// where a few were written out of order.
    #[test]
    fn the_purge_deletes_the_records_completed_before_the_cutoff() {
        let conn = Connection::open_in_memory().unwrap();
        migrate_sqlite(&conn, "t_").unwrap();
        let q = Sql::new("t_");
        assert_eq!(query::purge_in(&conn, &q, 1_000).unwrap(), 0, "no records");
        // Completion times in writing order: 0..1000 step 10, with 505
        // written late (after 600) and 595 early (before 500).
        let mut times: Vec<i64> = (0..100).map(|i| i * 10).filter(|t| *t != 500 && *t != 600).collect();
        let at = times.iter().position(|t| *t == 490).unwrap();
        times.insert(at + 1, 595);
        let at = times.iter().position(|t| *t == 610).unwrap();
        times.insert(at, 505);
        for (i, t) in times.iter().enumerate() {
            conn.execute(
                "INSERT INTO t_activity (event_id, attempt, idempotency_key, notification_type, target_url,
                    fired_at, completed_at, status, payload_size_bytes)
                 VALUES (?1, 1, 'k', 'account.status_changed', 'https://b.example/h', ?2, ?2, 'success', 2)",
                params![format!("evt_{i:04}"), t],
            )
            .unwrap();
        }
        let left = |conn: &Connection| -> Vec<i64> {
            let mut stmt = conn
                .prepare("SELECT completed_at FROM t_activity ORDER BY rowid")
                .unwrap();
            stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(query::purge_in(&conn, &q, 0).unwrap(), 0);
        assert_eq!(query::purge_in(&conn, &q, 300).unwrap(), 30);
        assert_eq!(left(&conn).first(), Some(&300));
        // 595, written early, is kept (it is not old); 505, written late,
        // lies past the newer rows the search stops at, and goes with the
        // next purge.
        assert_eq!(query::purge_in(&conn, &q, 550).unwrap(), 24);
        assert_eq!(&left(&conn)[..3], &[595, 550, 560]);
        assert_eq!(query::purge_in(&conn, &q, 596).unwrap(), 7);
        assert_eq!(left(&conn).first(), Some(&610));
        assert_eq!(query::purge_in(&conn, &q, 10_000).unwrap(), 39);
        assert!(left(&conn).is_empty());
    }

    /// A version-1 file with an attempt in flight (its pending record) and
    /// one finished attempt keeps both records through the migration.
    #[test]
    fn version_1_files_keep_their_records() {
        let conn = Connection::open_in_memory().unwrap();
        let p = "t_";
        conn.execute_batch(&version_table(p, false)).unwrap();
        conn.execute_batch(&migration(1, p, false).unwrap()).unwrap();
        conn.execute("INSERT INTO t_schema_version VALUES (1, 0)", []).unwrap();
        conn.execute_batch(
            "INSERT INTO t_events (id, signing_scope, idempotency_key, fingerprint, body, body_size,
                notification_type, principal, url, origin, state, attempts, enqueued_at, horizon_ms,
                next_attempt_at, first_attempt_at, deadline_at, lease_token, lease_until)
             VALUES ('evt_1', 'default', 'key_0123456789abcdef', x'00', x'7b7d', 2, 'account.status_changed',
                'p1', 'https://b.example/h', 'https://b.example', 'in_flight', 2, 10, 86400000, 20, 20,
                86400020, 5, 99999);
             INSERT INTO t_activity VALUES ('evt_1', 1, 'key_0123456789abcdef', NULL, 'account.status_changed',
                NULL, NULL, 'p1', 'https://b.example/h', 'https://b.example/h', 20, 25, 'failed', 503, 5, 2, 'HTTP 503');
             INSERT INTO t_activity VALUES ('evt_1', 2, 'key_0123456789abcdef', NULL, 'account.status_changed',
                NULL, NULL, 'p1', 'https://b.example/h', 'https://b.example/h', 40, NULL, 'pending', NULL, NULL, 2, NULL);",
        )
        .unwrap();
        migrate_sqlite(&conn, p).unwrap();
        let q = Sql::new(p);
        let records = query::activity_in(
            &conn,
            &q,
            &ActivityQuery {
                selector: ActivitySelector::Principal {
                    principal: "p1".into(),
                    resource: None,
                },
                limit: 10,
            },
        )
        .unwrap();
        let seen: Vec<_> = records
            .iter()
            .map(|r| (r.attempt, r.status, r.fired_at_ms, r.completed_at_ms))
            .collect();
        assert_eq!(
            seen,
            vec![
                (2, ActivityStatus::Pending, 40, None),
                (1, ActivityStatus::Failed, 20, Some(25))
            ]
        );
        let version: i64 = conn
            .query_row("SELECT MAX(version) FROM t_schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }
}
