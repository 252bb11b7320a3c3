//! The embedded SQLite backend.
//!
//! The user-facing documentation is on [`SqliteStore`] (re-exported at the
//! crate root).

mod cap_counts;
mod key_index;
mod notification;
mod schema;
mod writer;

use crate::idempotency::{
    plan_claim, record_from_columns, ClaimOutcome, ClaimRequest, ClaimStep, ClaimToken, ConfigError, Fingerprint,
    IdempotencyConfig, IdempotencyError, IdempotencyRecord, IdempotencyStore, SenderKey,
};
use adcp_verify::{CapKey, Durability, InsertOutcome, ReplayKey, ReplayLimits, ReplayStore, StoreError};
use async_trait::async_trait;
use cap_counts::CapCounts;
use key_index::{by_rowid, KeyHash, KeyIndex, Maps};
use rusqlite::{params, Connection, OptionalExtension};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use writer::SqliteWriter as Writer;
pub use writer::{EarlyAnswer, SqliteWriter};

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
    /// How long the writer waits for another process's write lock before
    /// failing closed every operation of its batch (`PRAGMA busy_timeout`).
    pub busy_timeout: Duration,
    /// Most memory SQLite's page cache keeps for the store's connection
    /// (`PRAGMA cache_size`; default 32 MiB). The replay and dedup indexes
    /// are read at random places; a page found in the cache costs no read
    /// from the file (with SQLite's own default, 2 MiB, about one operation
    /// in twenty read a page from the kernel under the gateway's load).
    pub page_cache_bytes: u64,
}

/// [`SqliteOptions::page_cache_bytes`] by default.
const PAGE_CACHE_BYTES: u64 = 32 << 20;

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            replay_limits: ReplayLimits::webhook(),
            idempotency: IdempotencyConfig::default(),
            max_db_bytes: None,
            busy_timeout: Duration::from_secs(5),
            page_cache_bytes: PAGE_CACHE_BYTES,
        }
    }
}

/// A durable [`ReplayStore`] and [`IdempotencyStore`] in one SQLite file.
///
/// The embedded SQLite backend ([`SqliteStore`]), the default for a single
/// receiver process.
///
/// One database file holds both the transport replay cache and the
/// idempotency keyspace. Durability: the database runs in WAL mode with
/// `synchronous=FULL`, and a call returns only after the transaction
/// holding its write committed, so every acknowledged write (an `Inserted`
/// replay entry, a claim, a completion) is fsynced before the call returns
/// and survives `kill -9` and power loss. The one exception says so in its
/// type: [`ReplayStore::insert_early`] answers once the insert ran and
/// returns the [`Durability`] of its commit, for a caller that queues its
/// next operation (the claim) meanwhile and waits before it accepts.
///
/// Group commit: one writer thread per store owns the connection and runs
/// every operation, reads included, in arrival order. It batches the
/// operations queued at the same moment (up to 256) into one
/// `BEGIN IMMEDIATE` transaction and commits once, so concurrent callers
/// share one fsync; each operation sees the effects of the ones before it,
/// as if it ran alone. An operation that fails fails alone: the rare ones
/// run in a savepoint of their own, and the three of every event (replay
/// insert, claim, completion), whose refusals are answers rather than
/// errors, fail only when the store itself does, which rolls back their
/// batch and runs its other operations again before anyone is answered.
/// Step 9a's per-keyid cap pre-check is answered from memory for a
/// partition the store saw below its cap (the insert enforces the cap
/// exactly, across processes). Several processes may share
/// one file safely: they serialize on SQLite's write lock (the transactions
/// are `BEGIN IMMEDIATE`), waiting up to [`SqliteOptions::busy_timeout`].
///
/// Layout: replay entries and dedup records are rows in insertion order,
/// without a unique index on their keys, so an event writes no random
/// B-tree page (docs/performance.md). The store finds them through hash
/// maps in its memory from each key to its row (about 24 bytes per live
/// row), built by [`open`](Self::open) from the tables (about 1.6 s for a
/// million records and a million replay entries), caught up with other
/// processes' rows at the start of each transaction, checked against the
/// row on every hit, and rebuilt after any rollback; it keeps each key
/// unique itself. Replay entries are unique on `(keyid, scope, nonce)` and
/// carry the signer's agent only to be counted per `(agent, keyid)` for
/// the per-keyid cap.
///
/// Expiry is by indexed timestamp: the first write of each second (of
/// `now`) deletes the rows that expired before it, and reads filter on it.
/// Live-entry counts for the caps are kept in counter tables maintained by
/// triggers, so a cap check costs one lookup.
///
/// Schema versions are recorded in `PRAGMA user_version`; opening a file
/// of an older version migrates it in place in one transaction (version 1
/// → 2 added the replay rows' agent and the per-`(agent, keyid)` counters;
/// 2 → 3 moved both tables to insertion order under new names), keeping
/// every live entry and record, and a file of a newer version is refused.
/// The notification records' table is added at open without a version
/// bump (older builds never read it; see `schema.rs`). The file
/// stays bounded: rows are capped (replay caps, per-sender cap), freed pages
/// are reused, and [`SqliteOptions::max_db_bytes`] sets a hard ceiling
/// (writes beyond it fail closed).
///
/// Calls from a tokio runtime await the writer's answer without blocking a
/// worker; outside a runtime they block the calling thread until it
/// arrives. Dropping the last clone of a store lets the writer finish the
/// queued operations, then closes the database and joins the thread.
#[derive(Clone)]
pub struct SqliteStore {
    /// Shared by the clones; the last one dropped stops the writer thread.
    writer: Arc<Writer>,
    options: SqliteOptions,
    path: PathBuf,
    /// The latest `now` each table was purged for (see [`Purged`]).
    purged: Arc<Purged>,
    /// Partition sizes for step 9a's pre-check (see `cap_counts.rs`).
    caps: Arc<CapCounts>,
    /// Where each replay entry and dedup record is (see `key_index.rs`).
    index: KeyIndex,
}

/// The latest `now` (Unix seconds) for which each table's expired rows were
/// deleted. Rows expire by whole seconds, so a second purge for the same
/// `now` finds nothing; it is skipped, because a range delete on a table
/// with a delete trigger costs a statement run even when there is nothing
/// to delete (about a third of the writer's instructions per event when
/// every operation purged). A batch rolled back after its purge leaves rows
/// expired in that second until the next one; the writes that could meet
/// such a row (a claim of the same key, a replay of the same nonce) delete
/// it first.
#[derive(Debug, Default)]
struct Purged {
    replay: AtomicI64,
    idempotency: AtomicI64,
}

impl Purged {
    /// The replay entries expired at `now`, unless that second was purged.
    /// Once a second, also checks that the maps are not much larger than
    /// the tables (see [`Maps::compact_if_bloated`]).
    fn replay(&self, conn: &Connection, maps: &mut Maps, now: i64) -> rusqlite::Result<()> {
        if now <= self.replay.load(Ordering::Relaxed) {
            return Ok(());
        }
        maps.delete_replay(conn, PURGE_REPLAY, now)?;
        let (replay_rows, record_rows) = row(conn, COUNT_ROWS, [], |row| Ok((row.get(0)?, row.get(1)?)))?;
        maps.compact_if_bloated(replay_rows, record_rows);
        self.replay.fetch_max(now, Ordering::Relaxed);
        Ok(())
    }

    /// The dedup records expired at `now`, unless that second was purged.
    fn idempotency(&self, conn: &Connection, maps: &mut Maps, now: i64) -> rusqlite::Result<()> {
        if now <= self.idempotency.load(Ordering::Relaxed) {
            return Ok(());
        }
        maps.delete_records(conn, PURGE_IDEMPOTENCY, now)?;
        self.idempotency.fetch_max(now, Ordering::Relaxed);
        Ok(())
    }
}

const PURGE_REPLAY: &str =
    "DELETE FROM adcp_replay_entries WHERE expires_at < ?1 RETURNING id, keyid, scoped, scope, nonce";
const PURGE_IDEMPOTENCY: &str = "DELETE FROM adcp_idempotency_records WHERE expires_at < ?1 RETURNING id, sender, key";
/// The live rows of both tables, from their counters.
const COUNT_ROWS: &str = "SELECT (SELECT n FROM adcp_replay_total WHERE id = 0),
        (SELECT COALESCE(SUM(n), 0) FROM adcp_idempotency_counts)";

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
    /// `synchronous=FULL`, applies the schema and starts the store's writer
    /// thread. Blocking; call it at start-up or via
    /// [`open_async`](Self::open_async).
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, ConfigError> {
        options.idempotency.validate()?;
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(backend)?;
        schema::prepare(&conn, &options)?;
        // Room for every statement of the store (see `exec`) and the writer.
        conn.set_prepared_statement_cache_capacity(48);
        // Built here, where the caller expects to wait, rather than by the
        // first call (a webhook whose sender may time out): about 1.6 s for
        // a million records and a million replay entries.
        let index = KeyIndex::new();
        drop(index.ready(&conn).map_err(backend)?);
        let writer = Writer::start_observed(conn, index.observer()).map_err(backend)?;
        Ok(Self {
            writer: Arc::new(writer),
            options,
            path,
            purged: Arc::default(),
            caps: Arc::default(),
            index,
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

    /// Deletes every replay entry, idempotency record and notification
    /// record expired at `now` and returns how many rows were removed. Optional: writes expire rows
    /// lazily anyway; an idle receiver can call it from a timer.
    pub async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        let index = self.index.clone();
        self.run(move |conn| {
            let mut maps = index.ready(conn)?;
            let replay = maps.delete_replay(conn, PURGE_REPLAY, now)?;
            let idem = maps.delete_records(conn, PURGE_IDEMPOTENCY, now)?;
            let notes = notification::purge(conn, now)?;
            Ok((replay + idem + notes) as u64)
        })
        .await
        .map_err(StoreError)
    }

    /// Runs `f` on the writer thread, inside a batch transaction and a
    /// savepoint of its own, and returns its result once the batch
    /// committed. `f` may run more than once (a failure of another
    /// operation can roll the batch back before the commit); only its last
    /// run counts.
    async fn run<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.answer(self.writer.submit(f)?).await
    }

    /// [`run`](Self::run) without a savepoint (see
    /// [`SqliteWriter::submit_unguarded`]), for the operations of every
    /// event (the replay insert, the claim, the completion): each returns
    /// its refusals as values before writing anything, so only a failure of
    /// the store itself (I/O, a full disk) fails it, and that rolls back
    /// its batch, whose other operations run again. A savepoint per
    /// operation would copy every page it changes into the statement
    /// journal.
    async fn run_hot<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.answer(self.writer.submit_unguarded(f)?).await
    }

    /// Waits for the writer's answer: awaited on a runtime, blocking
    /// outside one.
    async fn answer<T>(&self, answer: tokio::sync::oneshot::Receiver<Result<T, String>>) -> Result<T, String> {
        let answer = if tokio::runtime::Handle::try_current().is_ok() {
            answer.await
        } else {
            answer.blocking_recv()
        };
        answer.map_err(|_| writer::stopped())?
    }
}

#[async_trait]
impl crate::PurgeExpired for SqliteStore {
    async fn purge_expired(&self, now: i64) -> Result<u64, StoreError> {
        SqliteStore::purge_expired(self, now).await
    }
}

/// Runs `sql` from the connection's statement cache: the writer thread
/// runs the same dozen statements all day, parsing them once saves it
/// time per operation.
fn exec(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// The one row `sql` returns, through the statement cache (see [`exec`]).
fn row<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

fn scope_columns(key: ReplayKey<'_>) -> (i64, String) {
    match key.scope {
        Some(scope) => (1, scope.to_owned()),
        None => (0, String::new()),
    }
}

/// The `(agented, agent)` columns of a cap partition: a flag and a value,
/// so `None` and `Some("")` are distinct partitions.
fn agent_columns(agent: Option<&str>) -> (i64, String) {
    match agent {
        Some(agent) => (1, agent.to_owned()),
        None => (0, String::new()),
    }
}

/// An owned [`CapKey`]: `(keyid, agented, agent)`.
type CapColumns = (String, i64, String);

fn cap_columns(cap: CapKey<'_>) -> CapColumns {
    let (agented, agent) = agent_columns(cap.agent);
    (cap.keyid.to_owned(), agented, agent)
}

/// The [`CapKey`] of owned [`CapColumns`].
fn cap_key((keyid, agented, agent): &CapColumns) -> CapKey<'_> {
    CapKey {
        agent: (*agented != 0).then_some(agent.as_str()),
        keyid,
    }
}

/// Live entries counted toward the per-keyid cap of one `(agent, keyid)`.
fn cap_count(conn: &Connection, (keyid, agented, agent): &CapColumns) -> rusqlite::Result<u64> {
    row(
        conn,
        "SELECT n FROM adcp_replay_cap_counts WHERE keyid = ?1 AND agented = ?2 AND agent = ?3",
        params![keyid, agented, agent],
        |row| row.get::<_, i64>(0),
    )
    .optional()
    .map(|n| n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn as_count(cap: usize) -> u64 {
    u64::try_from(cap).unwrap_or(u64::MAX)
}

#[async_trait]
impl ReplayStore for SqliteStore {
    async fn keyid_cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        let partition = cap_columns(cap);
        let limit = as_count(self.options.replay_limits.per_keyid_cap);
        let purged = Arc::clone(&self.purged);
        let caps = Arc::clone(&self.caps);
        let index = self.index.clone();
        self.run(move |conn| {
            purged.replay(conn, &mut *index.ready(conn)?, now)?;
            let count = cap_count(conn, &partition)?;
            caps.observe(cap_key(&partition), count);
            Ok(count >= limit)
        })
        .await
        .map_err(StoreError)
    }

    /// Answers at once for a partition this store saw below its cap (see
    /// `cap_counts.rs`: the insert enforces the cap exactly); anything
    /// else is asked of the database.
    fn keyid_cap_reached_now(&self, cap: CapKey<'_>, _now: i64) -> Option<Result<bool, StoreError>> {
        let limit = as_count(self.options.replay_limits.per_keyid_cap);
        self.caps.known_below(cap, limit).then_some(Ok(false))
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        let keyid = key.keyid.to_owned();
        let nonce = key.nonce.to_vec();
        let (scoped, scope) = scope_columns(key);
        let index = self.index.clone();
        self.run(move |conn| {
            let mut maps = index.ready(conn)?;
            let hash = maps.replay_hash(&keyid, scoped, &scope, &nonce);
            let held = find_entry(conn, &mut maps, hash, &keyid, scoped, &scope, &nonce)?;
            Ok(held.is_some_and(|(_, expires_at)| now <= expires_at))
        })
        .await
        .map_err(StoreError)
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        self.run_hot(self.insert_op(key, expires_at, now))
            .await
            .map_err(StoreError)
    }

    /// Answers once the insert ran in the writer's open transaction: the
    /// verifier's caller submits its claim meanwhile, and the claim's
    /// commit covers the entry's (one commit wait per event fewer).
    async fn insert_early(
        &self,
        key: ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> Result<(InsertOutcome, Durability), StoreError> {
        let (early, committed) = self
            .writer
            .submit_early(self.insert_op(key, expires_at, now))
            .map_err(StoreError)?;
        let outcome = self.answer(early).await.map_err(StoreError)?;
        let durability = Durability::pending(async move {
            match committed.await {
                Ok(committed) => committed.map_err(StoreError),
                Err(_) => Err(StoreError(writer::stopped())),
            }
        });
        Ok((outcome, durability))
    }
}

impl SqliteStore {
    /// Step 13 on the writer's connection: the replay check, the caps and
    /// the insert, with the expired rows of the second purged first.
    fn insert_op(
        &self,
        key: ReplayKey<'_>,
        expires_at: i64,
        now: i64,
    ) -> impl FnMut(&Connection) -> rusqlite::Result<InsertOutcome> + Send + 'static {
        let partition = cap_columns(key.cap_key());
        let nonce = key.nonce.to_vec();
        let (scoped, scope) = scope_columns(key);
        let limits = self.options.replay_limits;
        let purged = Arc::clone(&self.purged);
        let caps = Arc::clone(&self.caps);
        let index = self.index.clone();
        move |conn| {
            let (keyid, agented, agent) = &partition;
            let mut maps = index.ready(conn)?;
            purged.replay(conn, &mut maps, now)?;
            // Uniqueness ignores the agent: the key has none.
            let hash = maps.replay_hash(keyid, scoped, &scope, &nonce);
            match find_entry(conn, &mut maps, hash, keyid, scoped, &scope, &nonce)? {
                Some((_, held_until)) if held_until >= now => return Ok(InsertOutcome::Replayed),
                // This nonce's own row expired and is still there (see
                // `Purged`): it goes before the new one.
                Some((rowid, _)) => {
                    exec(conn, "DELETE FROM adcp_replay_entries WHERE id = ?1", [rowid])?;
                    maps.replay.forget(hash, rowid);
                }
                None => {}
            }
            if expires_at < now {
                return Ok(InsertOutcome::Inserted);
            }
            let count = cap_count(conn, &partition)?;
            caps.observe(cap_key(&partition), count);
            let outcome = if count >= as_count(limits.per_keyid_cap) {
                InsertOutcome::KeyidCapReached
            } else if row(conn, "SELECT n FROM adcp_replay_total WHERE id = 0", [], |row| {
                row.get::<_, i64>(0)
            })? >= i64::try_from(limits.aggregate_cap).unwrap_or(i64::MAX)
            {
                InsertOutcome::AggregateCapReached
            } else {
                exec(
                    conn,
                    "INSERT INTO adcp_replay_entries (keyid, scoped, scope, nonce, expires_at, agented, agent)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![keyid, scoped, scope, nonce, expires_at, agented, agent],
                )?;
                maps.replay.inserted(hash, conn.last_insert_rowid());
                caps.observe(cap_key(&partition), count.saturating_add(1));
                InsertOutcome::Inserted
            };
            Ok(outcome)
        }
    }
}

/// A replay entry's row (found through the key index): the columns
/// [`find_entry`] checks, then `expires_at`.
const SELECT_ENTRY: &str = "SELECT keyid, scoped, scope, nonce, expires_at FROM adcp_replay_entries WHERE id = ?1";

/// A dedup record's row (found through the key index): the columns
/// [`read_record`] reads, then the key [`find_record`] checks.
const SELECT_RECORD: &str = "SELECT fingerprint, completed, token, attempt, lease_expires_at, completed_at,
        created_at, expires_at, sender, key
     FROM adcp_idempotency_records WHERE id = ?1";

fn read_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<IdempotencyRecord> {
    record_from_columns(row.get(0)?, row.get(1)?, |i| row.get(i))
}

/// The live or expired replay entry of a key (`hash` is its
/// [`Maps::replay_hash`]), as `(rowid, expires_at)`.
fn find_entry(
    conn: &Connection,
    maps: &mut Maps,
    hash: KeyHash,
    keyid: &str,
    scoped: i64,
    scope: &str,
    nonce: &[u8],
) -> rusqlite::Result<Option<(i64, i64)>> {
    let Some(rowid) = maps.replay.get(hash) else {
        return Ok(None);
    };
    let found = by_rowid(conn, SELECT_ENTRY, rowid, |row| {
        let same = row.get_ref(0)?.as_str()? == keyid
            && row.get::<_, i64>(1)? == scoped
            && row.get_ref(2)?.as_str()? == scope
            && row.get_ref(3)?.as_blob()? == nonce;
        Ok((same, row.get::<_, i64>(4)?))
    })?;
    maps.replay.checked(hash, rowid, found)
}

/// The dedup record of a key (`hash` is its [`Maps::record_hash`]),
/// expired or not, with its rowid.
fn find_record(
    conn: &Connection,
    maps: &mut Maps,
    hash: KeyHash,
    sender: &str,
    idem_key: &str,
) -> rusqlite::Result<Option<(i64, IdempotencyRecord)>> {
    let Some(rowid) = maps.records.get(hash) else {
        return Ok(None);
    };
    let found = by_rowid(conn, SELECT_RECORD, rowid, |row| {
        let same = row.get_ref(8)?.as_str()? == sender && row.get_ref(9)?.as_str()? == idem_key;
        Ok((same, read_record(row)?))
    })?;
    maps.records.checked(hash, rowid, found)
}

fn unavailable(e: String) -> IdempotencyError {
    IdempotencyError::Unavailable(e)
}

/// One claim, inside the writer's batch transaction.
fn claim_in(
    conn: &Connection,
    maps: &mut Maps,
    sender: &str,
    idem_key: &str,
    fingerprint: &[u8],
    config: &IdempotencyConfig,
    now: i64,
) -> rusqlite::Result<ClaimOutcome> {
    let hash = maps.record_hash(sender, idem_key);
    let found = find_record(conn, maps, hash, sender, idem_key)?;
    // An expired row still there (not purged yet, see `Purged`) is no
    // record; it makes way for the new one.
    let expired_row = found
        .as_ref()
        .filter(|(_, record)| record.expires_at < now)
        .map(|(rowid, _)| *rowid);
    let rowid = found.as_ref().map(|(rowid, _)| *rowid);
    let existing = found.filter(|_| expired_row.is_none()).map(|(_, record)| record);
    let sender_live = row(
        conn,
        "SELECT n FROM adcp_idempotency_counts WHERE sender = ?1",
        [sender],
        |row| row.get::<_, i64>(0),
    )
    .optional()?
    .map_or(0, |n| u64::try_from(n).unwrap_or(0));
    let outcome = match plan_claim(existing.as_ref(), fingerprint, sender_live, config, now) {
        ClaimStep::Answer(outcome) => outcome,
        ClaimStep::Write(write) if write.takeover => {
            exec(
                conn,
                "UPDATE adcp_idempotency_records SET token = ?2, attempt = ?3, lease_expires_at = ?4,
                        expires_at = MAX(expires_at, ?5)
                     WHERE id = ?1",
                params![
                    rowid,
                    write.claim.token.0,
                    write.claim.attempt,
                    write.claim.lease_expires_at,
                    write.expires_at
                ],
            )?;
            write.outcome()
        }
        ClaimStep::Write(write) => {
            if let Some(expired) = expired_row {
                exec(conn, "DELETE FROM adcp_idempotency_records WHERE id = ?1", [expired])?;
                maps.records.forget(hash, expired);
            }
            exec(
                conn,
                "INSERT INTO adcp_idempotency_records (sender, key, fingerprint, completed, token, attempt,
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
            maps.records.inserted(hash, conn.last_insert_rowid());
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
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let fingerprint = fingerprint.as_bytes().to_vec();
        let config = self.options.idempotency;
        let purged = Arc::clone(&self.purged);
        let index = self.index.clone();
        self.run_hot(move |conn| {
            let mut maps = index.ready(conn)?;
            purged.idempotency(conn, &mut maps, now)?;
            claim_in(conn, &mut maps, &sender, &idem_key, &fingerprint, &config, now)
        })
        .await
        .map_err(unavailable)
    }

    /// All requests in one operation of the writer (one savepoint of a batch
    /// transaction), so one fsync acknowledges the whole batch and no other
    /// operation interleaves; if it fails, none of it is applied and every
    /// request answers `Unavailable`.
    async fn claim_many(&self, requests: &[ClaimRequest<'_>], now: i64) -> Vec<Result<ClaimOutcome, IdempotencyError>> {
        if requests.is_empty() {
            return Vec::new();
        }
        let owned: Vec<(String, String, Vec<u8>)> = requests
            .iter()
            .map(|r| {
                (
                    r.key.sender.to_owned(),
                    r.key.idempotency_key.to_owned(),
                    r.fingerprint.as_bytes().to_vec(),
                )
            })
            .collect();
        let config = self.options.idempotency;
        let purged = Arc::clone(&self.purged);
        let index = self.index.clone();
        let answers = self
            .run(move |conn| {
                let mut maps = index.ready(conn)?;
                purged.idempotency(conn, &mut maps, now)?;
                let mut answers = Vec::with_capacity(owned.len());
                for (sender, key, fingerprint) in &owned {
                    answers.push(claim_in(conn, &mut maps, sender, key, fingerprint, &config, now)?);
                }
                Ok(answers)
            })
            .await;
        let mut answers = match answers {
            Ok(answers) => answers.into_iter(),
            Err(e) => return requests.iter().map(|_| Err(unavailable(e.clone()))).collect(),
        };
        requests
            .iter()
            .map(|_| {
                answers
                    .next()
                    .ok_or_else(|| unavailable("sqlite: missing claim answer".to_owned()))
            })
            .collect()
    }

    async fn complete(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        self.complete_with_notification(key, token, None, now).await
    }

    /// One operation of the writer: the completion and the notification
    /// record commit in one transaction.
    async fn complete_with_notification(
        &self,
        key: SenderKey<'_>,
        token: ClaimToken,
        notification_id: Option<&str>,
        now: i64,
    ) -> Result<(), IdempotencyError> {
        crate::notification::check_optional(notification_id)?;
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let notification_id = notification_id.map(str::to_owned);
        let until = now.saturating_add(self.options.idempotency.window_secs);
        let index = self.index.clone();
        let owned = self
            .run_hot(move |conn| {
                let mut maps = index.ready(conn)?;
                let hash = maps.record_hash(&sender, &idem_key);
                let Some((rowid, _)) = find_record(conn, &mut maps, hash, &sender, &idem_key)? else {
                    return Ok(false);
                };
                let updated = exec(
                    conn,
                    "UPDATE adcp_idempotency_records SET completed = 1, completed_at = ?3,
                        expires_at = MAX(expires_at, ?4)
                     WHERE id = ?1 AND token = ?2 AND completed = 0 AND expires_at >= ?3",
                    params![rowid, token.0, now, until],
                )?;
                let owned = updated == 1
                    || row(
                        conn,
                        "SELECT 1 FROM adcp_idempotency_records
                             WHERE id = ?1 AND token = ?2 AND completed = 1 AND expires_at >= ?3",
                        params![rowid, token.0, now],
                        |_| Ok(()),
                    )
                    .optional()?
                    .is_some();
                if let (true, Some(notification_id)) = (owned, &notification_id) {
                    notification::record(conn, &sender, notification_id, &idem_key, until, now)?;
                }
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

    async fn notification_origin(
        &self,
        sender: &str,
        notification_id: &str,
        now: i64,
    ) -> Result<Option<String>, IdempotencyError> {
        crate::notification::check(notification_id)?;
        let sender = sender.to_owned();
        let notification_id = notification_id.to_owned();
        self.run(move |conn| notification::origin(conn, &sender, &notification_id, now))
            .await
            .map_err(unavailable)
    }

    async fn release(&self, key: SenderKey<'_>, token: ClaimToken, now: i64) -> Result<(), IdempotencyError> {
        let sender = key.sender.to_owned();
        let idem_key = key.idempotency_key.to_owned();
        let index = self.index.clone();
        let deleted = self
            .run(move |conn| {
                let mut maps = index.ready(conn)?;
                let hash = maps.record_hash(&sender, &idem_key);
                let Some((rowid, _)) = find_record(conn, &mut maps, hash, &sender, &idem_key)? else {
                    return Ok(0);
                };
                let deleted = exec(
                    conn,
                    "DELETE FROM adcp_idempotency_records
                     WHERE id = ?1 AND token = ?2 AND completed = 0 AND expires_at >= ?3",
                    params![rowid, token.0, now],
                )?;
                if deleted == 1 {
                    maps.records.forget(hash, rowid);
                }
                Ok(deleted)
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
        let index = self.index.clone();
        self.run(move |conn| {
            let mut maps = index.ready(conn)?;
            let hash = maps.record_hash(&sender, &idem_key);
            let found = find_record(conn, &mut maps, hash, &sender, &idem_key)?;
            Ok(found
                .map(|(_, record)| record)
                .filter(|record| record.expires_at >= now))
        })
        .await
        .map_err(unavailable)
    }

    /// Counts by reading every record (no index leads by sender): for
    /// operators and tests, not for a path taken per event.
    async fn sender_len(&self, sender: &str, now: i64) -> Result<u64, IdempotencyError> {
        let sender = sender.to_owned();
        self.run(move |conn| {
            row(
                conn,
                "SELECT COUNT(*) FROM adcp_idempotency_records WHERE sender = ?1 AND expires_at >= ?2",
                params![sender, now],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| u64::try_from(n).unwrap_or(0))
        })
        .await
        .map_err(unavailable)
    }
}

#[cfg(test)]
mod purge_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::idempotency::{ClaimOutcome, Fingerprint, SenderKey};

    fn store(tag: &str) -> (SqliteStore, PathBuf) {
        let dir = std::env::temp_dir().join(format!("adcp-store-purge-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        (
            SqliteStore::open(dir.join("s.sqlite"), SqliteOptions::default()).unwrap(),
            dir,
        )
    }

    /// A purge skipped for a second whose rows are still there (a batch
    /// rolled back after its purge ran) changes no answer: the key's own
    /// expired row is deleted before its new claim, the nonce's before its
    /// new insert.
    #[tokio::test]
    async fn expired_rows_left_by_a_skipped_purge_change_no_answer() {
        let (s, dir) = store("skipped");
        let key = SenderKey {
            sender: "https://seller.example",
            idempotency_key: "key-0123456789abcdef",
        };
        let fp = [7_u8; 32];
        let first = s.claim(key, Fingerprint::new(&fp).unwrap(), 1_000).await.unwrap();
        assert!(matches!(first, ClaimOutcome::Claimed(_)));
        let replay = ReplayKey {
            agent: Some("https://seller.example"),
            keyid: "k1",
            nonce: b"nonce-1",
            scope: None,
        };
        assert_eq!(s.insert(replay, 1_100, 1_000).await.unwrap(), InsertOutcome::Inserted);
        // Both rows expired by `later`; the marks say that second was purged.
        let later = 1_000 + s.options().idempotency.window_secs + 10;
        s.purged.idempotency.store(later, Ordering::Relaxed);
        s.purged.replay.store(later, Ordering::Relaxed);
        let again = s
            .claim(key, Fingerprint::new(&[8_u8; 32]).unwrap(), later)
            .await
            .unwrap();
        assert!(matches!(again, ClaimOutcome::Claimed(_)), "{again:?}");
        assert_eq!(
            s.insert(replay, later + 100, later).await.unwrap(),
            InsertOutcome::Inserted
        );
        // The explicit purge still deletes what expired by its `now`.
        let much_later = later + s.options().idempotency.window_secs + 1_000;
        assert_eq!(s.purge_expired(much_later).await.unwrap(), 2);
        drop(s);
        let _ = std::fs::remove_dir_all(dir);
    }
}
