//! The embedded SQLite outbox: the operations as functions of a
//! connection (so an application's own `rusqlite::Transaction` can
//! enqueue), and [`SqliteOutbox`], which runs them on a group-commit
//! writer thread.

use super::schema::{check_prefix, migration, version_table, SCHEMA_VERSION};
use super::{
    lease_token, ActivityQuery, ActivitySelector, ClaimRequest, Claimed, Enqueued, EventState, EventView, Finish,
    Insert, ListFilter, OutboxStats, OutboxStore, Outcome, ABANDONED,
};
use crate::activity::{clip_message, redact_url, ActivityRecord, ActivityStatus};
use crate::breaker::{BreakerPolicy, BreakerState};
use crate::error::OutboxError;
use crate::event::OutboxDestination;
use crate::id::EventId;
use adcp_store::SqliteWriter;
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::collections::HashMap;
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
    prefix: Arc<str>,
    breaker: BreakerPolicy,
    wake: Arc<Notify>,
}

impl std::fmt::Debug for SqliteOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteOutbox")
            .field("path", &self.path)
            .field("prefix", &self.prefix)
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
            conn.execute_batch(&sql).map_err(unavailable)?;
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
            prefix: options.table_prefix.into(),
            breaker: options.breaker,
            wake: Arc::new(Notify::new()),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn run<T, F>(&self, mut f: F) -> Result<T, OutboxError>
    where
        T: Send + 'static,
        F: FnMut(&Connection, &str) -> rusqlite::Result<T> + Send + 'static,
    {
        let prefix = Arc::clone(&self.prefix);
        let answer = self
            .writer
            .submit(move |conn| f(conn, &prefix))
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

/// Enqueues `row` on `conn` (an application's open transaction, or any
/// connection): the row commits or rolls back with the transaction. Wakes
/// nothing: a relay on the same file finds it at its next poll.
///
/// # Errors
///
/// [`OutboxError::KeyConflict`], [`OutboxError::KeyUsedForOtherDestination`],
/// or [`OutboxError::Unavailable`] for an SQL failure.
pub fn enqueue_sqlite(conn: &Connection, prefix: &str, row: &Insert) -> Result<Enqueued, OutboxError> {
    check_prefix(prefix)?;
    enqueue_in(conn, prefix, row).map_err(|e| refusal(&e).unwrap_or_else(|| unavailable(e)))
}

fn enqueue_in(conn: &Connection, p: &str, row: &Insert) -> rusqlite::Result<Enqueued> {
    let existing: Option<(String, Vec<u8>, String)> = conn
        .prepare_cached(&format!(
            "SELECT id, fingerprint, url FROM {p}events WHERE signing_scope = ?1 AND idempotency_key = ?2"
        ))?
        .query_row(params![row.signing_scope, row.idempotency_key], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    if let Some((id, fingerprint, url)) = existing {
        if fingerprint != row.fingerprint {
            return Err(refuse(OutboxError::KeyConflict {
                scope: row.signing_scope.clone(),
                key: row.idempotency_key.clone(),
            }));
        }
        if url != row.url {
            return Err(refuse(OutboxError::KeyUsedForOtherDestination {
                key: row.idempotency_key.clone(),
            }));
        }
        return Ok(Enqueued {
            id: EventId::from_stored(id),
            idempotency_key: row.idempotency_key.clone(),
            duplicate: true,
            superseded: None,
        });
    }
    let now = row.enqueued_at_ms;
    let mut next_attempt_at = now.saturating_add(row.coalescing_window_ms);
    let mut superseded = None;
    if let (Some(kind), Some(key), true) = (
        &row.notification_type,
        &row.coalescing_key,
        row.coalescing_window_ms > 0,
    ) {
        let held: Option<(String, i64)> = conn
            .prepare_cached(&format!(
                "SELECT id, next_attempt_at FROM {p}events
                 WHERE url = ?1 AND notification_type = ?2 AND coalescing_key = ?3
                   AND state = 'pending' AND attempts = 0 AND next_attempt_at > ?4
                 ORDER BY next_attempt_at LIMIT 1"
            ))?
            .query_row(params![row.url, kind, key, now], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((old, hold_until)) = held {
            conn.prepare_cached(&format!(
                "UPDATE {p}events SET state = 'superseded', superseded_by = ?2, finished_at = ?3,
                    reason = 'replaced by a newer event inside its coalescing window'
                 WHERE id = ?1"
            ))?
            .execute(params![old, row.id.as_str(), now])?;
            // The window is fixed from the first held event: the newest
            // one goes out when the first would have.
            next_attempt_at = hold_until;
            superseded = Some(EventId::from_stored(old));
        }
    }
    conn.prepare_cached(&format!(
        "INSERT INTO {p}events (id, signing_scope, idempotency_key, fingerprint, body, body_size, key_id,
            notification_type, notification_id, subscriber_id, sequence_number, channel_id, principal,
            url, origin, operation_id, auth_scheme, auth_credentials, coalescing_key, state, attempts,
            enqueued_at, horizon_ms, next_attempt_at, deadline_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
            'pending', 0, ?20, ?21, ?22, ?23)"
    ))?
    .execute(params![
        row.id.as_str(),
        row.signing_scope,
        row.idempotency_key,
        &row.fingerprint[..],
        row.body,
        i64::try_from(row.body_size).unwrap_or(i64::MAX),
        row.key_id,
        row.notification_type,
        row.notification_id,
        row.subscriber_id,
        row.sequence_number,
        row.channel_id,
        row.principal,
        row.url,
        row.origin,
        row.operation_id,
        row.auth_scheme,
        row.auth_credentials,
        row.coalescing_key,
        now,
        row.horizon_ms,
        next_attempt_at,
        now.saturating_add(row.horizon_ms),
    ])?;
    let mut insert = conn.prepare_cached(&format!(
        "INSERT OR IGNORE INTO {p}resources (resource, event_id) VALUES (?1, ?2)"
    ))?;
    for resource in &row.resources {
        insert.execute(params![resource, row.id.as_str()])?;
    }
    Ok(Enqueued {
        id: row.id.clone(),
        idempotency_key: row.idempotency_key.clone(),
        duplicate: false,
        superseded,
    })
}

fn breakers(conn: &Connection, p: &str, open_only: bool) -> rusqlite::Result<HashMap<String, BreakerState>> {
    let sql = if open_only {
        format!("SELECT origin, failures, open, opened, retry_at, probe_until, failing_since FROM {p}breakers WHERE open = 1")
    } else {
        format!("SELECT origin, failures, open, opened, retry_at, probe_until, failing_since FROM {p}breakers")
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            BreakerState {
                failures: u32::try_from(r.get::<_, i64>(1)?).unwrap_or(u32::MAX),
                open: r.get::<_, i64>(2)? != 0,
                opened: u32::try_from(r.get::<_, i64>(3)?).unwrap_or(u32::MAX),
                retry_at_ms: r.get(4)?,
                probe_until_ms: r.get(5)?,
                failing_since_ms: r.get(6)?,
            },
        ))
    })?;
    rows.collect()
}

fn breaker(conn: &Connection, p: &str, origin: &str) -> rusqlite::Result<BreakerState> {
    conn.prepare_cached(&format!(
        "SELECT failures, open, opened, retry_at, probe_until, failing_since FROM {p}breakers WHERE origin = ?1"
    ))?
    .query_row(params![origin], |r| {
        Ok(BreakerState {
            failures: u32::try_from(r.get::<_, i64>(0)?).unwrap_or(u32::MAX),
            open: r.get::<_, i64>(1)? != 0,
            opened: u32::try_from(r.get::<_, i64>(2)?).unwrap_or(u32::MAX),
            retry_at_ms: r.get(3)?,
            probe_until_ms: r.get(4)?,
            failing_since_ms: r.get(5)?,
        })
    })
    .optional()
    .map(Option::unwrap_or_default)
}

fn save_breaker(conn: &Connection, p: &str, origin: &str, b: &BreakerState) -> rusqlite::Result<()> {
    if *b == BreakerState::default() {
        conn.prepare_cached(&format!("DELETE FROM {p}breakers WHERE origin = ?1"))?
            .execute(params![origin])?;
    } else {
        conn.prepare_cached(&format!(
            "INSERT INTO {p}breakers (origin, failures, open, opened, retry_at, probe_until, failing_since)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (origin) DO UPDATE SET failures = excluded.failures, open = excluded.open,
                opened = excluded.opened, retry_at = excluded.retry_at, probe_until = excluded.probe_until,
                failing_since = excluded.failing_since"
        ))?
        .execute(params![
            origin,
            i64::from(b.failures),
            i64::from(b.open),
            i64::from(b.opened),
            b.retry_at_ms,
            b.probe_until_ms,
            b.failing_since_ms
        ])?;
    }
    Ok(())
}

fn claim_in(conn: &Connection, p: &str, req: &ClaimRequest) -> rusqlite::Result<Vec<Claimed>> {
    let now = req.now_ms;
    // Leases whose worker vanished: their pending record is closed as
    // abandoned and the event is due again at once.
    let stale: Vec<(String, i64)> = conn
        .prepare_cached(&format!(
            "SELECT id, attempts FROM {p}events WHERE state = 'in_flight' AND lease_until <= ?1"
        ))?
        .query_map(params![now], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, attempt) in stale {
        conn.prepare_cached(&format!(
            "UPDATE {p}activity SET status = 'connection_error', completed_at = ?3, error_message = ?4
             WHERE event_id = ?1 AND attempt = ?2 AND status = 'pending'"
        ))?
        .execute(params![id, attempt, now, ABANDONED])?;
        conn.prepare_cached(&format!(
            "UPDATE {p}events SET state = 'pending', lease_token = NULL, lease_owner = NULL, lease_until = NULL,
                probe = 0, next_attempt_at = ?2, last_status = 'connection_error', last_http_status = NULL,
                last_error = ?3
             WHERE id = ?1"
        ))?
        .execute(params![id, now, ABANDONED])?;
    }
    let open = breakers(conn, p, true)?;
    let mut room: HashMap<String, usize> = HashMap::new();
    // Open breakers keep their origins out of the general scan (their
    // events were pushed back to the breaker's retry time anyway); a due
    // probe is chosen on its own, preferring an event already attempted:
    // a receiver that refuses every first delivery would otherwise fail
    // every probe.
    let mut excluded: Vec<&str> = open.keys().map(String::as_str).collect();
    let mut candidates: Vec<(String, String)> = Vec::new();
    for (origin, b) in &open {
        let busy = req.in_flight.get(origin).copied().unwrap_or(0);
        if b.probe_due(now) && busy == 0 && candidates.len() < req.limit {
            let probe: Option<String> = conn
                .prepare_cached(&format!(
                    "SELECT id FROM {p}events
                     WHERE origin = ?1 AND state = 'pending' AND next_attempt_at <= ?2 AND deadline_at > ?2
                     ORDER BY attempts = 0, next_attempt_at LIMIT 1"
                ))?
                .query_row(params![origin, now], |r| r.get(0))
                .optional()?;
            if let Some(id) = probe {
                room.insert(origin.clone(), 1);
                candidates.push((id, origin.clone()));
            }
        }
    }
    for (origin, busy) in &req.in_flight {
        if *busy >= req.per_origin_cap && !open.contains_key(origin) {
            excluded.push(origin);
        }
    }
    let excluded = serde_json::to_string(&excluded).unwrap_or_else(|_| "[]".to_owned());
    let scan = i64::try_from(req.limit.saturating_mul(4).max(64)).unwrap_or(i64::MAX);
    let general: Vec<(String, String)> = conn
        .prepare_cached(&format!(
            "SELECT id, origin FROM {p}events
             WHERE state = 'pending' AND next_attempt_at <= ?1 AND deadline_at > ?1
               AND origin NOT IN (SELECT value FROM json_each(?2))
             ORDER BY next_attempt_at LIMIT ?3"
        ))?
        .query_map(params![now, excluded, scan], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    candidates.extend(general);
    let mut claimed = Vec::new();
    for (id, origin) in candidates {
        if claimed.len() >= req.limit {
            break;
        }
        let probe = open.contains_key(&origin);
        let left = room.entry(origin.clone()).or_insert_with(|| {
            req.per_origin_cap
                .saturating_sub(req.in_flight.get(&origin).copied().unwrap_or(0))
        });
        if *left == 0 {
            continue;
        }
        *left -= 1;
        let token = lease_token();
        let c = conn
            .prepare_cached(&format!(
                "UPDATE {p}events SET state = 'in_flight', attempts = attempts + 1, lease_token = ?2,
                    lease_owner = ?3, lease_until = ?4, probe = ?5,
                    deadline_at = CASE WHEN first_attempt_at IS NULL THEN ?6 + horizon_ms ELSE deadline_at END,
                    first_attempt_at = COALESCE(first_attempt_at, ?6)
                 WHERE id = ?1 AND state = 'pending'
                 RETURNING attempts, body, idempotency_key, url, operation_id, auth_scheme, auth_credentials,
                    signing_scope, notification_type, notification_id, subscriber_id, sequence_number,
                    principal, deadline_at, body_size, enqueued_at"
            ))?
            .query_row(
                params![
                    id,
                    token,
                    req.owner,
                    now.saturating_add(req.lease_ms),
                    i64::from(probe),
                    now
                ],
                |r| {
                    let legacy = match (r.get::<_, Option<String>>(5)?, r.get::<_, Option<Vec<u8>>>(6)?) {
                        (Some(scheme), Some(cred)) => Some((scheme, String::from_utf8_lossy(&cred).into_owned())),
                        _ => None,
                    };
                    Ok((
                        Claimed {
                            id: EventId::from_stored(id.clone()),
                            lease_token: token,
                            attempt: u32::try_from(r.get::<_, i64>(0)?).unwrap_or(u32::MAX),
                            body: r.get(1)?,
                            idempotency_key: r.get(2)?,
                            destination: OutboxDestination::from_parts(r.get(3)?, r.get(4)?, legacy),
                            origin: origin.clone(),
                            signing_scope: r.get(7)?,
                            notification_type: r.get(8)?,
                            notification_id: r.get(9)?,
                            subscriber_id: r.get(10)?,
                            principal: r.get(12)?,
                            deadline_ms: r.get(13)?,
                            probe,
                            enqueued_at_ms: r.get(15)?,
                        },
                        r.get::<_, Option<i64>>(11)?,
                        r.get::<_, i64>(14)?,
                    ))
                },
            )
            .optional()?;
        let Some((c, sequence_number, body_size)) = c else {
            continue;
        };
        if let Some(kind) = &c.notification_type {
            conn.prepare_cached(&format!(
                "INSERT OR REPLACE INTO {p}activity (event_id, attempt, idempotency_key, notification_id,
                    notification_type, subscriber_id, sequence_number, principal, target_url, url, fired_at,
                    completed_at, status, http_status_code, response_time_ms, payload_size_bytes, error_message)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, NULL, 'pending', NULL, NULL, ?12, NULL)"
            ))?
            .execute(params![
                c.id.as_str(),
                i64::from(c.attempt),
                c.idempotency_key,
                c.notification_id,
                kind,
                c.subscriber_id,
                sequence_number,
                c.principal,
                c.destination.url(),
                redact_url(c.destination.url()),
                now,
                body_size,
            ])?;
        }
        if probe {
            conn.prepare_cached(&format!("UPDATE {p}breakers SET probe_until = ?2 WHERE origin = ?1"))?
                .execute(params![c.origin, now.saturating_add(req.lease_ms)])?;
        }
        claimed.push(c);
    }
    Ok(claimed)
}

fn finish_in(conn: &Connection, p: &str, f: &Finish, policy: &BreakerPolicy) -> rusqlite::Result<bool> {
    let current: Option<(i64, i64)> = conn
        .prepare_cached(&format!(
            "SELECT attempts, probe FROM {p}events
             WHERE id = ?1 AND lease_token = ?2 AND state = 'in_flight' AND lease_until > ?3"
        ))?
        .query_row(params![f.id.as_str(), f.lease_token, f.now_ms], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let Some((attempt, probe)) = current else {
        return Ok(false);
    };
    let now = f.now_ms;
    let undone = match &f.outcome {
        Outcome::Release(at) => Some((EventState::Pending, *at, None)),
        Outcome::Withdrawn(reason) => Some((EventState::Refused, now, Some(reason.as_str()))),
        _ => None,
    };
    if let Some((state, at, reason)) = undone {
        conn.prepare_cached(&format!(
            "DELETE FROM {p}activity WHERE event_id = ?1 AND attempt = ?2 AND status = 'pending'"
        ))?
        .execute(params![f.id.as_str(), attempt])?;
        conn.prepare_cached(&format!(
            "UPDATE {p}events SET state = ?2, attempts = attempts - 1, next_attempt_at = ?3,
                lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
                deadline_at = CASE WHEN attempts = 1 THEN enqueued_at + horizon_ms ELSE deadline_at END,
                first_attempt_at = CASE WHEN attempts = 1 THEN NULL ELSE first_attempt_at END,
                reason = ?4, finished_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?5 END
             WHERE id = ?1"
        ))?
        .execute(params![f.id.as_str(), state.as_str(), at, reason, now])?;
        if probe != 0 {
            conn.prepare_cached(&format!("UPDATE {p}breakers SET probe_until = 0 WHERE origin = ?1"))?
                .execute(params![f.origin])?;
        }
        return Ok(true);
    }
    let (state, next, reason): (EventState, Option<i64>, Option<&str>) = match &f.outcome {
        Outcome::Delivered => (EventState::Delivered, None, None),
        Outcome::RetryAt(at) => (EventState::Pending, Some(*at), None),
        Outcome::Refused(reason) => (EventState::Refused, None, Some(reason)),
        Outcome::Expired(reason) => (EventState::Expired, None, Some(reason)),
        // Handled above.
        Outcome::Release(_) | Outcome::Withdrawn(_) => return Ok(true),
    };
    let facts = f.facts.as_ref();
    let status = facts.map_or(ActivityStatus::ConnectionError, |x| x.status);
    let http = facts.and_then(|x| x.http_status).map(i64::from);
    let error = facts.and_then(|x| x.error_message.as_deref()).map(clip_message);
    let completed = facts.map_or(now, |x| x.completed_at_ms);
    conn.prepare_cached(&format!(
        "UPDATE {p}events SET state = ?2, next_attempt_at = COALESCE(?3, next_attempt_at),
            lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
            last_status = ?4, last_http_status = ?5, last_error = ?6, reason = ?7,
            finished_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?8 END
         WHERE id = ?1"
    ))?
    .execute(params![
        f.id.as_str(),
        state.as_str(),
        next,
        status.as_str(),
        http,
        error,
        reason,
        now
    ])?;
    conn.prepare_cached(&format!(
        "UPDATE {p}activity SET completed_at = ?3, status = ?4, http_status_code = ?5, response_time_ms = ?6,
            error_message = ?7
         WHERE event_id = ?1 AND attempt = ?2 AND status = 'pending'"
    ))?
    .execute(params![
        f.id.as_str(),
        attempt,
        completed,
        status.as_str(),
        http,
        facts.and_then(|x| x.response_time_ms),
        error
    ])?;
    if let Some(facts) = facts {
        let mut b = breaker(conn, p, &f.origin)?;
        let before = b;
        b.record(facts.health, probe != 0, now, policy);
        if probe != 0 && b.open {
            b.probe_until_ms = 0;
        }
        if b != before {
            save_breaker(conn, p, &f.origin, &b)?;
        }
        if b.open && b.retry_at_ms != before.retry_at_ms {
            // Opened, or reopened by a failed probe: the origin's events
            // wait for the next probe, off the claims' due-time scan.
            conn.prepare_cached(&format!(
                "UPDATE {p}events SET next_attempt_at = MAX(next_attempt_at, ?2)
                 WHERE origin = ?1 AND state = 'pending'"
            ))?
            .execute(params![f.origin, b.retry_at_ms])?;
        }
    }
    Ok(true)
}

fn expire_in(conn: &Connection, p: &str, now: i64) -> rusqlite::Result<u64> {
    let n = conn
        .prepare_cached(&format!(
            "UPDATE {p}events SET state = 'expired', finished_at = ?1,
                reason = CASE WHEN attempts = 0 THEN 'retry horizon passed before any attempt'
                              ELSE 'retry horizon passed' END
             WHERE state = 'pending' AND deadline_at <= ?1"
        ))?
        .execute(params![now])?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn next_due_in(conn: &Connection, p: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(&format!(
        "SELECT MIN(t) FROM (
            SELECT MIN(next_attempt_at) AS t FROM {p}events
              WHERE state = 'pending' AND origin NOT IN (SELECT origin FROM {p}breakers WHERE open = 1)
            UNION ALL SELECT MIN(deadline_at) FROM {p}events WHERE state = 'pending'
            UNION ALL SELECT MIN(lease_until) FROM {p}events WHERE state = 'in_flight'
            UNION ALL SELECT MIN(MAX(b.retry_at, b.probe_until)) FROM {p}breakers b
              WHERE b.open = 1 AND EXISTS (SELECT 1 FROM {p}events e WHERE e.origin = b.origin AND e.state = 'pending')
        )"
    ))?
    .query_row([], |r| r.get(0))
}

const VIEW_COLUMNS: &str = "id, idempotency_key, state, attempts, notification_type, notification_id, subscriber_id,
    signing_scope, principal, url, enqueued_at, first_attempt_at, next_attempt_at, deadline_at, last_status,
    last_http_status, last_error, reason, superseded_by, finished_at";

fn view(r: &Row<'_>) -> rusqlite::Result<EventView> {
    let state: String = r.get(2)?;
    let state = EventState::parse(&state).unwrap_or(EventState::Pending);
    Ok(EventView {
        id: EventId::from_stored(r.get(0)?),
        idempotency_key: r.get(1)?,
        state,
        attempts: u32::try_from(r.get::<_, i64>(3)?).unwrap_or(u32::MAX),
        notification_type: r.get(4)?,
        notification_id: r.get(5)?,
        subscriber_id: r.get(6)?,
        signing_scope: r.get(7)?,
        principal: r.get(8)?,
        url: redact_url(&r.get::<_, String>(9)?),
        enqueued_at_ms: r.get(10)?,
        first_attempt_at_ms: r.get(11)?,
        next_attempt_at_ms: (state == EventState::Pending).then(|| r.get(12)).transpose()?,
        deadline_ms: r.get(13)?,
        last_status: r
            .get::<_, Option<String>>(14)?
            .as_deref()
            .and_then(ActivityStatus::parse),
        last_http_status: r.get::<_, Option<i64>>(15)?.and_then(|s| u16::try_from(s).ok()),
        last_error: r.get(16)?,
        reason: r.get(17)?,
        superseded_by: r.get::<_, Option<String>>(18)?.map(EventId::from_stored),
        finished_at_ms: r.get(19)?,
    })
}

fn get_in(conn: &Connection, p: &str, id: &str) -> rusqlite::Result<Option<EventView>> {
    conn.prepare_cached(&format!("SELECT {VIEW_COLUMNS} FROM {p}events WHERE id = ?1"))?
        .query_row(params![id], view)
        .optional()
}

fn list_in(conn: &Connection, p: &str, filter: &ListFilter) -> rusqlite::Result<Vec<EventView>> {
    let limit = i64::try_from(filter.limit.clamp(1, 1000)).unwrap_or(50);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {VIEW_COLUMNS} FROM {p}events
         WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR id < ?2)
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            filter.state.map(EventState::as_str),
            filter.before.as_ref().map(EventId::as_str),
            limit
        ],
        view,
    )?;
    rows.collect()
}

fn redrive_in(conn: &Connection, p: &str, id: &str, now: i64) -> rusqlite::Result<EventView> {
    let row: Option<(String, Option<i64>, i64, i64)> = conn
        .prepare_cached(&format!(
            "SELECT state, first_attempt_at, enqueued_at, horizon_ms FROM {p}events WHERE id = ?1"
        ))?
        .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let Some((state, first, enqueued, horizon)) = row else {
        return Err(refuse(OutboxError::NotFound(id.to_owned())));
    };
    if state != "refused" && state != "expired" {
        return Err(refuse(OutboxError::NotRedrivable(format!(
            "it is {state}; only refused or expired events are redriven"
        ))));
    }
    let end = first.unwrap_or(enqueued).saturating_add(horizon);
    if now >= end {
        return Err(refuse(OutboxError::NotRedrivable(format!(
            "its retry horizon ended at {}",
            crate::clock::rfc3339_ms(end)
        ))));
    }
    conn.prepare_cached(&format!(
        "UPDATE {p}events SET state = 'pending', next_attempt_at = ?2, deadline_at = ?3, reason = NULL,
            finished_at = NULL
         WHERE id = ?1"
    ))?
    .execute(params![id, now, end])?;
    get_in(conn, p, id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
}

fn record(r: &Row<'_>) -> rusqlite::Result<ActivityRecord> {
    Ok(ActivityRecord {
        idempotency_key: r.get(0)?,
        notification_id: r.get(1)?,
        subscriber_id: r.get(2)?,
        fired_at_ms: r.get(3)?,
        completed_at_ms: r.get(4)?,
        notification_type: r.get(5)?,
        sequence_number: r.get(6)?,
        attempt: u32::try_from(r.get::<_, i64>(7)?).unwrap_or(1),
        status: ActivityStatus::parse(&r.get::<_, String>(8)?).unwrap_or(ActivityStatus::Pending),
        url: r.get(9)?,
        http_status_code: r.get::<_, Option<i64>>(10)?.and_then(|s| u16::try_from(s).ok()),
        response_time_ms: r.get(11)?,
        payload_size_bytes: u64::try_from(r.get::<_, i64>(12)?).unwrap_or(0),
        error_message: r.get(13)?,
    })
}

const RECORD_COLUMNS: &str = "a.idempotency_key, a.notification_id, a.subscriber_id, a.fired_at, a.completed_at,
    a.notification_type, a.sequence_number, a.attempt, a.status, a.url, a.http_status_code, a.response_time_ms,
    a.payload_size_bytes, a.error_message";

fn activity_in(conn: &Connection, p: &str, q: &ActivityQuery) -> rusqlite::Result<Vec<ActivityRecord>> {
    let limit = i64::from(q.limit.clamp(1, super::MAX_ACTIVITY_LIMIT));
    let order = "ORDER BY a.fired_at DESC, a.attempt DESC LIMIT";
    match &q.selector {
        ActivitySelector::Principal {
            principal,
            resource: None,
        } => conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a WHERE a.principal = ?1 {order} ?2"
            ))?
            .query_map(params![principal, limit], record)?
            .collect(),
        ActivitySelector::Principal {
            principal,
            resource: Some(resource),
        } => conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a JOIN {p}resources r ON r.event_id = a.event_id
                 WHERE a.principal = ?1 AND r.resource = ?2 {order} ?3"
            ))?
            .query_map(params![principal, resource, limit], record)?
            .collect(),
        ActivitySelector::Url(url) => conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a WHERE a.target_url = ?1 {order} ?2"
            ))?
            .query_map(params![url, limit], record)?
            .collect(),
    }
}

fn purge_in(conn: &Connection, p: &str, cutoff: i64) -> rusqlite::Result<u64> {
    let mut n = conn.execute(
        &format!("DELETE FROM {p}activity WHERE completed_at < ?1 OR (completed_at IS NULL AND fired_at < ?1)"),
        params![cutoff],
    )?;
    n += conn.execute(
        &format!("DELETE FROM {p}events WHERE finished_at IS NOT NULL AND finished_at < ?1"),
        params![cutoff],
    )?;
    n += conn.execute(
        &format!(
            "DELETE FROM {p}resources WHERE event_id NOT IN (SELECT id FROM {p}events)
               AND event_id NOT IN (SELECT event_id FROM {p}activity)"
        ),
        [],
    )?;
    n += conn.execute(
        &format!(
            "DELETE FROM {p}breakers WHERE open = 0
               AND origin NOT IN (SELECT origin FROM {p}events WHERE state IN ('pending', 'in_flight'))"
        ),
        [],
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn stats_in(conn: &Connection, p: &str) -> rusqlite::Result<OutboxStats> {
    let by_state = conn
        .prepare_cached(&format!("SELECT state, COUNT(*) FROM {p}events GROUP BY state"))?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .filter_map(|row| match row {
            Ok((s, n)) => EventState::parse(&s).map(|s| Ok((s, u64::try_from(n).unwrap_or(0)))),
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let oldest = conn
        .prepare_cached(&format!(
            "SELECT MIN(enqueued_at) FROM {p}events WHERE state = 'pending'"
        ))?
        .query_row([], |r| r.get(0))?;
    let open: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) FROM {p}breakers WHERE open = 1"))?
        .query_row([], |r| r.get(0))?;
    Ok(OutboxStats {
        by_state,
        oldest_pending_enqueued_ms: oldest,
        open_breakers: u64::try_from(open).unwrap_or(0),
    })
}

#[async_trait::async_trait]
impl OutboxStore for SqliteOutbox {
    async fn enqueue(&self, row: Insert) -> Result<Enqueued, OutboxError> {
        let done = self
            .run(move |conn, p| Ok(enqueue_in(conn, p, &row).map_err(|e| refusal(&e).ok_or(e))))
            .await?;
        let done = match done {
            Ok(done) => done,
            Err(Ok(refused)) => return Err(refused),
            Err(Err(e)) => return Err(unavailable(e)),
        };
        self.wake.notify_one();
        Ok(done)
    }

    async fn claim(&self, request: ClaimRequest) -> Result<Vec<Claimed>, OutboxError> {
        self.run(move |conn, p| claim_in(conn, p, &request)).await
    }

    async fn finish(&self, batch: Vec<Finish>) -> Result<Vec<bool>, OutboxError> {
        let policy = self.breaker;
        self.run(move |conn, p| batch.iter().map(|f| finish_in(conn, p, f, &policy)).collect())
            .await
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, OutboxError> {
        self.run(move |conn, p| expire_in(conn, p, now_ms)).await
    }

    async fn next_due(&self, _now_ms: i64) -> Result<Option<i64>, OutboxError> {
        self.run(next_due_in).await
    }

    async fn get(&self, id: &EventId) -> Result<Option<EventView>, OutboxError> {
        let id = id.as_str().to_owned();
        self.run(move |conn, p| get_in(conn, p, &id)).await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<EventView>, OutboxError> {
        let filter = filter.clone();
        self.run(move |conn, p| list_in(conn, p, &filter)).await
    }

    async fn redrive(&self, id: &EventId, now_ms: i64) -> Result<EventView, OutboxError> {
        let id = id.as_str().to_owned();
        let done = self
            .run(move |conn, p| Ok(redrive_in(conn, p, &id, now_ms).map_err(|e| refusal(&e).ok_or(e))))
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
        self.run(move |conn, p| activity_in(conn, p, &query)).await
    }

    async fn purge(&self, now_ms: i64, retention_ms: i64) -> Result<u64, OutboxError> {
        self.run(move |conn, p| purge_in(conn, p, now_ms.saturating_sub(retention_ms)))
            .await
    }

    async fn stats(&self, _now_ms: i64) -> Result<OutboxStats, OutboxError> {
        self.run(stats_in).await
    }

    fn wakeups(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }
}
