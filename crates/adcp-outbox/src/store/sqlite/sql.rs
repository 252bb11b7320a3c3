//! The statements of the SQLite outbox, formatted once per table prefix.
//!
//! `prepare_cached` finds a statement by its text: formatting the text
//! before every call allocated and hashed a few hundred bytes per
//! statement on the writer thread, the one thread every operation of the
//! store waits for.

use std::cell::RefCell;
use std::sync::Arc;

/// The columns [`Sql::get`] and [`Sql::list`] read, in `view`'s order.
const VIEW_COLUMNS: &str = "id, idempotency_key, state, attempts, notification_type, notification_id, subscriber_id,
    signing_scope, principal, url, enqueued_at, first_attempt_at, next_attempt_at, deadline_at, last_status,
    last_http_status, last_error, reason, superseded_by, finished_at";

/// The columns of a stored activity record, in `record`'s order.
const RECORD_COLUMNS: &str = "a.idempotency_key, a.notification_id, a.subscriber_id, a.fired_at, a.completed_at,
    a.notification_type, a.sequence_number, a.attempt, a.status, a.target_url, a.http_status_code,
    a.response_time_ms, a.payload_size_bytes, a.error_message";

/// The same columns for the `pending` record of an attempt in flight,
/// read from its event's row.
const PENDING_COLUMNS: &str = "e.idempotency_key, e.notification_id, e.subscriber_id,
    COALESCE(e.attempt_at, e.first_attempt_at, e.enqueued_at), NULL, e.notification_type, e.sequence_number,
    e.attempts, 'pending', e.url, NULL, NULL, e.body_size, NULL";

/// The events whose attempt is in flight and has a record.
const IN_FLIGHT: &str = "e.state = 'in_flight' AND e.notification_type IS NOT NULL";

/// What a lease read back returns, in `claim_in`'s order.
const LEASED_COLUMNS: &str = "attempts, body, idempotency_key, url, operation_id, auth_scheme, auth_credentials,
    signing_scope, notification_type, notification_id, subscriber_id, principal, deadline_at, enqueued_at";

/// The sizes of the due-candidates scan: the smallest at least four times
/// the claim's limit, at most the largest.
pub(super) const CANDIDATE_SCANS: [usize; 4] = [64, 256, 1024, 4096];

/// Every statement of the outbox for one table prefix.
#[derive(Debug)]
pub(super) struct Sql {
    pub(super) prefix: String,
    pub(super) existing: String,
    pub(super) held: String,
    pub(super) supersede: String,
    pub(super) insert: String,
    pub(super) resource: String,
    pub(super) breaker_open: String,
    pub(super) breakers_open: String,
    pub(super) breaker: String,
    pub(super) breaker_delete: String,
    pub(super) breaker_save: String,
    pub(super) breaker_probe_until: String,
    pub(super) push_back: String,
    pub(super) stale: String,
    pub(super) stale_event: String,
    pub(super) probe: String,
    /// The due-candidates scan, one statement per [`CANDIDATE_SCANS`] size.
    pub(super) candidates: [String; 4],
    pub(super) lease: String,
    pub(super) record_attempt: String,
    pub(super) record: String,
    pub(super) fence: String,
    pub(super) undo_event: String,
    pub(super) done_event: String,
    pub(super) expire: String,
    pub(super) next_due: String,
    pub(super) get: String,
    pub(super) list: String,
    pub(super) redrive_row: String,
    pub(super) redrive: String,
    pub(super) activity_principal: String,
    pub(super) activity_resource: String,
    pub(super) activity_url: String,
    pub(super) stats_states: String,
    pub(super) stats_oldest: String,
    pub(super) stats_open: String,
}

impl Sql {
    /// The statements for tables prefixed `p` (already checked).
    pub(super) fn new(p: &str) -> Self {
        // Columns 4 and 8 of both halves: fired_at, attempt.
        let order = "ORDER BY 4 DESC, 8 DESC LIMIT";
        Self {
            prefix: p.to_owned(),
            existing: format!(
                "SELECT id, fingerprint, url FROM {p}events WHERE signing_scope = ?1 AND idempotency_key = ?2"
            ),
            held: format!(
                "SELECT id, next_attempt_at FROM {p}events
                 WHERE url = ?1 AND notification_type = ?2 AND coalescing_key = ?3
                   AND state = 'pending' AND attempts = 0 AND next_attempt_at > ?4
                 ORDER BY next_attempt_at LIMIT 1"
            ),
            supersede: format!(
                "UPDATE {p}events SET state = 'superseded', superseded_by = ?2, finished_at = ?3,
                    reason = 'replaced by a newer event inside its coalescing window'
                 WHERE id = ?1"
            ),
            // A leased insert (?24 not null) is the first attempt's claim:
            // in flight, attempt 1, its horizon running from now. A taken
            // key inserts nothing (the caller then reads the stored event):
            // one statement for a new event, and, unlike a conflict that
            // aborts, no statement journal.
            insert: format!(
                "INSERT OR IGNORE INTO {p}events (id, signing_scope, idempotency_key, fingerprint, body, body_size, key_id,
                    notification_type, notification_id, subscriber_id, sequence_number, channel_id, principal,
                    url, origin, operation_id, auth_scheme, auth_credentials, coalescing_key, state, attempts,
                    enqueued_at, horizon_ms, next_attempt_at, deadline_at, lease_token, lease_owner, lease_until,
                    first_attempt_at, attempt_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                    CASE WHEN ?24 IS NULL THEN 'pending' ELSE 'in_flight' END,
                    CASE WHEN ?24 IS NULL THEN 0 ELSE 1 END,
                    ?20, ?21, ?22, ?23, ?24, ?25, ?26, CASE WHEN ?24 IS NULL THEN NULL ELSE ?20 END,
                    CASE WHEN ?24 IS NULL THEN NULL ELSE ?20 END)"
            ),
            resource: format!("INSERT OR IGNORE INTO {p}resources (resource, event_id) VALUES (?1, ?2)"),
            breaker_open: format!("SELECT open FROM {p}breakers WHERE origin = ?1"),
            breakers_open: format!(
                "SELECT origin, failures, open, opened, retry_at, probe_until, failing_since FROM {p}breakers WHERE open = 1"
            ),
            breaker: format!(
                "SELECT failures, open, opened, retry_at, probe_until, failing_since FROM {p}breakers WHERE origin = ?1"
            ),
            breaker_delete: format!("DELETE FROM {p}breakers WHERE origin = ?1"),
            breaker_save: format!(
                "INSERT INTO {p}breakers (origin, failures, open, opened, retry_at, probe_until, failing_since)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (origin) DO UPDATE SET failures = excluded.failures, open = excluded.open,
                    opened = excluded.opened, retry_at = excluded.retry_at, probe_until = excluded.probe_until,
                    failing_since = excluded.failing_since"
            ),
            breaker_probe_until: format!("UPDATE {p}breakers SET probe_until = ?2 WHERE origin = ?1"),
            push_back: format!(
                "UPDATE {p}events SET next_attempt_at = MAX(next_attempt_at, ?2)
                 WHERE origin = ?1 AND state = 'pending'"
            ),
            stale: format!("SELECT id FROM {p}events WHERE state = 'in_flight' AND lease_until <= ?1"),
            stale_event: format!(
                "UPDATE {p}events SET state = 'pending', lease_token = NULL, lease_owner = NULL, lease_until = NULL,
                    probe = 0, next_attempt_at = ?2, last_status = 'connection_error', last_http_status = NULL,
                    last_error = ?3
                 WHERE id = ?1"
            ),
            probe: format!(
                "SELECT id FROM {p}events
                 WHERE origin = ?1 AND state = 'pending' AND next_attempt_at <= ?2 AND deadline_at > ?2
                 ORDER BY attempts = 0, next_attempt_at LIMIT 1"
            ),
            // ?2 lists the excluded origins as `|a|b|` (an origin has no
            // `|`). The scan's size is a literal, one statement per size:
            // a bound LIMIT made SQLite prepare the statement again at
            // every run.
            candidates: CANDIDATE_SCANS.map(|n| {
                format!(
                    "SELECT id, origin FROM {p}events
                     WHERE state = 'pending' AND next_attempt_at <= ?1 AND deadline_at > ?1
                       AND instr(?2, '|' || origin || '|') = 0
                     ORDER BY next_attempt_at LIMIT {n}"
                )
            }),
            lease: format!(
                "UPDATE {p}events SET state = 'in_flight', attempts = attempts + 1, lease_token = ?2,
                    lease_owner = ?3, lease_until = ?4, probe = ?5, attempt_at = ?6,
                    deadline_at = CASE WHEN first_attempt_at IS NULL THEN ?6 + horizon_ms ELSE deadline_at END,
                    first_attempt_at = COALESCE(first_attempt_at, ?6)
                 WHERE id = ?1 AND state = 'pending'
                 RETURNING {LEASED_COLUMNS}"
            ),
            // One attempt's record, from its event's row (before the row
            // leaves the attempt): ?2 completed, ?3 status, ?4 HTTP status,
            // ?5 response time, ?6 error.
            record_attempt: format!(
                "INSERT OR REPLACE INTO {p}activity (event_id, attempt, idempotency_key, notification_id,
                    notification_type, subscriber_id, sequence_number, principal, target_url, fired_at,
                    completed_at, status, http_status_code, response_time_ms, payload_size_bytes, error_message)
                 SELECT id, attempts, idempotency_key, notification_id, notification_type, subscriber_id,
                    sequence_number, principal, url, COALESCE(attempt_at, first_attempt_at, ?2), ?2, ?3, ?4, ?5,
                    body_size, ?6
                 FROM {p}events WHERE id = ?1 AND notification_type IS NOT NULL"
            ),
            // One attempt's record from values: a single-row insert, which
            // SQLite runs without a statement journal (an INSERT … SELECT
            // copies every page it changes into one, even in a batch).
            record: format!(
                "INSERT INTO {p}activity (event_id, attempt, idempotency_key, notification_id, notification_type,
                    subscriber_id, sequence_number, principal, target_url, fired_at, completed_at, status,
                    http_status_code, response_time_ms, payload_size_bytes, error_message)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
            ),
            // A lease still held, and what its attempt's record needs
            // (columns 1–10; the row keeps them through the outcome).
            fence: format!(
                "SELECT probe, attempts, idempotency_key, notification_id, notification_type, subscriber_id,
                    sequence_number, principal, url, COALESCE(attempt_at, first_attempt_at), body_size
                 FROM {p}events
                 WHERE id = ?1 AND lease_token = ?2 AND state = 'in_flight' AND lease_until > ?3"
            ),
            undo_event: format!(
                "UPDATE {p}events SET state = ?2, attempts = attempts - 1, next_attempt_at = ?3,
                    lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
                    deadline_at = CASE WHEN attempts = 1 THEN enqueued_at + horizon_ms ELSE deadline_at END,
                    first_attempt_at = CASE WHEN attempts = 1 THEN NULL ELSE first_attempt_at END,
                    reason = ?4, finished_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?5 END
                 WHERE id = ?1"
            ),
            // The outcome of the lease `fence` just found current.
            done_event: format!(
                "UPDATE {p}events SET state = ?2, next_attempt_at = COALESCE(?3, next_attempt_at),
                    lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
                    last_status = ?4, last_http_status = ?5, last_error = ?6, reason = ?7,
                    finished_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?8 END
                 WHERE id = ?1"
            ),
            expire: format!(
                "UPDATE {p}events SET state = 'expired', finished_at = ?1,
                    reason = CASE WHEN attempts = 0 THEN 'retry horizon passed before any attempt'
                                  ELSE 'retry horizon passed' END
                 WHERE state = 'pending' AND deadline_at <= ?1"
            ),
            next_due: format!(
                "SELECT MIN(t) FROM (
                    SELECT MIN(next_attempt_at) AS t FROM {p}events
                      WHERE state = 'pending' AND origin NOT IN (SELECT origin FROM {p}breakers WHERE open = 1)
                    UNION ALL SELECT MIN(deadline_at) FROM {p}events WHERE state = 'pending'
                    UNION ALL SELECT MIN(lease_until) FROM {p}events WHERE state = 'in_flight'
                    UNION ALL SELECT MIN(MAX(b.retry_at, b.probe_until)) FROM {p}breakers b
                      WHERE b.open = 1 AND EXISTS (SELECT 1 FROM {p}events e WHERE e.origin = b.origin AND e.state = 'pending')
                )"
            ),
            get: format!("SELECT {VIEW_COLUMNS} FROM {p}events WHERE id = ?1"),
            list: format!(
                "SELECT {VIEW_COLUMNS} FROM {p}events
                 WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR id < ?2)
                 ORDER BY id DESC LIMIT ?3"
            ),
            redrive_row: format!(
                "SELECT state, first_attempt_at, enqueued_at, horizon_ms FROM {p}events WHERE id = ?1"
            ),
            redrive: format!(
                "UPDATE {p}events SET state = 'pending', next_attempt_at = ?2, deadline_at = ?3, reason = NULL,
                    finished_at = NULL
                 WHERE id = ?1"
            ),
            activity_principal: format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a WHERE a.principal = ?1
                 UNION ALL SELECT {PENDING_COLUMNS} FROM {p}events e WHERE {IN_FLIGHT} AND e.principal = ?1
                 {order} ?2"
            ),
            activity_resource: format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a JOIN {p}resources r ON r.event_id = a.event_id
                   WHERE a.principal = ?1 AND r.resource = ?2
                 UNION ALL SELECT {PENDING_COLUMNS} FROM {p}events e JOIN {p}resources r ON r.event_id = e.id
                   WHERE {IN_FLIGHT} AND e.principal = ?1 AND r.resource = ?2
                 {order} ?3"
            ),
            activity_url: format!(
                "SELECT {RECORD_COLUMNS} FROM {p}activity a WHERE a.target_url = ?1
                 UNION ALL SELECT {PENDING_COLUMNS} FROM {p}events e WHERE {IN_FLIGHT} AND e.url = ?1
                 {order} ?2"
            ),
            stats_states: format!("SELECT state, COUNT(*) FROM {p}events GROUP BY state"),
            stats_oldest: format!("SELECT MIN(enqueued_at) FROM {p}events WHERE state = 'pending'"),
            stats_open: format!("SELECT COUNT(*) FROM {p}breakers WHERE open = 1"),
        }
    }

    /// The statements for `p`, from a per-thread cache of the last prefix
    /// used ([`enqueue_sqlite`](super::enqueue_sqlite) on an application's
    /// own connection has no store to keep them in).
    pub(super) fn cached(p: &str) -> Arc<Self> {
        thread_local! {
            static LAST: RefCell<Option<Arc<Sql>>> = const { RefCell::new(None) };
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            match last.as_ref() {
                Some(sql) if sql.prefix == p => Arc::clone(sql),
                _ => {
                    let sql = Arc::new(Self::new(p));
                    *last = Some(Arc::clone(&sql));
                    sql
                }
            }
        })
    }
}
