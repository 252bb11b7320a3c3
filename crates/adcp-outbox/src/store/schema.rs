//! The outbox's tables, their versioned migrations, and the table prefix.
//!
//! Versions are recorded in a table of the outbox's own
//! (`{prefix}schema_version`), never in SQLite's `PRAGMA user_version`,
//! which belongs to the application when the outbox shares its database.

use crate::error::OutboxError;

/// The default table prefix.
pub const DEFAULT_TABLE_PREFIX: &str = "adcp_outbox_";

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i64 = 4;

/// Checks a table prefix: lowercase ASCII letters, digits and `_`, not
/// starting with a digit, at most 40 characters (names stay within
/// PostgreSQL's 63).
///
/// # Errors
///
/// [`OutboxError::Config`].
pub fn check_prefix(prefix: &str) -> Result<(), OutboxError> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 40
        && !prefix.starts_with(|c: char| c.is_ascii_digit())
        && prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(OutboxError::Config(format!(
            "table prefix {prefix:?} must be 1-40 characters of a-z, 0-9 and _, not starting with a digit"
        )))
    }
}

/// Migration `version` (1-based) for a dialect: `blob`/`bigint` spellings
/// differ, and from version 2 the SQLite layout of activity records (see
/// [`sqlite_v2`] and [`sqlite_v3`]).
pub(crate) fn migration(version: i64, p: &str, postgres: bool) -> Option<String> {
    if version == 2 || version == 3 {
        return Some(if postgres {
            // PostgreSQL keeps version 1's layout.
            String::new()
        } else if version == 2 {
            sqlite_v2(p)
        } else {
            sqlite_v3(p)
        });
    }
    let (blob, int) = if postgres {
        ("BYTEA", "BIGINT")
    } else {
        ("BLOB", "INTEGER")
    };
    if version == 4 {
        return Some(reporting_v4(p, blob, int));
    }
    match version {
        1 => Some(format!(
            "
CREATE TABLE {p}events (
    id TEXT PRIMARY KEY,
    signing_scope TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint {blob} NOT NULL,
    body {blob} NOT NULL,
    body_size {int} NOT NULL,
    key_id TEXT,
    notification_type TEXT,
    notification_id TEXT,
    subscriber_id TEXT,
    sequence_number {int},
    channel_id TEXT,
    principal TEXT,
    url TEXT NOT NULL,
    origin TEXT NOT NULL,
    operation_id TEXT,
    auth_scheme TEXT,
    auth_credentials {blob},
    coalescing_key TEXT,
    state TEXT NOT NULL,
    attempts {int} NOT NULL DEFAULT 0,
    enqueued_at {int} NOT NULL,
    horizon_ms {int} NOT NULL,
    next_attempt_at {int} NOT NULL,
    first_attempt_at {int},
    deadline_at {int} NOT NULL,
    lease_token {int},
    lease_owner TEXT,
    lease_until {int},
    probe {int} NOT NULL DEFAULT 0,
    last_status TEXT,
    last_http_status {int},
    last_error TEXT,
    reason TEXT,
    superseded_by TEXT,
    finished_at {int},
    UNIQUE (signing_scope, idempotency_key)
);
CREATE INDEX {p}events_due ON {p}events (next_attempt_at) WHERE state = 'pending';
CREATE INDEX {p}events_deadline ON {p}events (deadline_at) WHERE state = 'pending';
CREATE INDEX {p}events_leases ON {p}events (lease_until) WHERE state = 'in_flight';
CREATE INDEX {p}events_origin_pending ON {p}events (origin, next_attempt_at) WHERE state = 'pending';
CREATE INDEX {p}events_held ON {p}events (url, notification_type, coalescing_key)
    WHERE state = 'pending' AND attempts = 0 AND coalescing_key IS NOT NULL;
CREATE INDEX {p}events_finished ON {p}events (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE {p}resources (
    resource TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (resource, event_id)
);
CREATE INDEX {p}resources_event ON {p}resources (event_id);
CREATE TABLE {p}activity (
    event_id TEXT NOT NULL,
    attempt {int} NOT NULL,
    idempotency_key TEXT NOT NULL,
    notification_id TEXT,
    notification_type TEXT NOT NULL,
    subscriber_id TEXT,
    sequence_number {int},
    principal TEXT,
    target_url TEXT NOT NULL,
    url TEXT NOT NULL,
    fired_at {int} NOT NULL,
    completed_at {int},
    status TEXT NOT NULL,
    http_status_code {int},
    response_time_ms {int},
    payload_size_bytes {int} NOT NULL,
    error_message TEXT,
    PRIMARY KEY (event_id, attempt)
);
CREATE INDEX {p}activity_principal ON {p}activity (principal, fired_at);
CREATE INDEX {p}activity_url ON {p}activity (target_url, fired_at);
CREATE INDEX {p}activity_completed ON {p}activity (completed_at);
CREATE TABLE {p}breakers (
    origin TEXT PRIMARY KEY,
    failures {int} NOT NULL,
    open {int} NOT NULL,
    opened {int} NOT NULL,
    retry_at {int} NOT NULL,
    probe_until {int} NOT NULL,
    failing_since {int} NOT NULL DEFAULT 0
);
"
        )),
        _ => None,
    }
}

/// SQLite version 2: the layout that costs its single writer the fewest
/// pages per attempt.
///
/// - An attempt's `pending` record is its event's row while in flight
///   (`attempt_at` is when the attempt started): the record table gets one
///   insert per attempt, at its outcome, instead of an insert and an update.
/// - Records live in a `WITHOUT ROWID` table clustered on `(event_id,
///   attempt)`, keep the URL as registered (`target_url`; redacted when
///   read), and have no index on `completed_at`.
/// - Purges go by event id, which starts with the enqueue time (an event
///   finishes within two horizons of its enqueue), so `events_finished`
///   and the records' time index are not needed.
fn sqlite_v2(p: &str) -> String {
    format!(
        "
ALTER TABLE {p}events ADD COLUMN attempt_at INTEGER;
UPDATE {p}events SET attempt_at = (
    SELECT a.fired_at FROM {p}activity a WHERE a.event_id = {p}events.id AND a.attempt = {p}events.attempts)
 WHERE state = 'in_flight';
DROP INDEX IF EXISTS {p}events_finished;
CREATE TABLE {p}activity_v2 (
    event_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL,
    notification_id TEXT,
    notification_type TEXT NOT NULL,
    subscriber_id TEXT,
    sequence_number INTEGER,
    principal TEXT,
    target_url TEXT NOT NULL,
    fired_at INTEGER NOT NULL,
    completed_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    http_status_code INTEGER,
    response_time_ms INTEGER,
    payload_size_bytes INTEGER NOT NULL,
    error_message TEXT,
    PRIMARY KEY (event_id, attempt)
) WITHOUT ROWID;
INSERT INTO {p}activity_v2 (event_id, attempt, idempotency_key, notification_id, notification_type, subscriber_id,
    sequence_number, principal, target_url, fired_at, completed_at, status, http_status_code, response_time_ms,
    payload_size_bytes, error_message)
 SELECT event_id, attempt, idempotency_key, notification_id, notification_type, subscriber_id, sequence_number,
    principal, target_url, fired_at, completed_at, status, http_status_code, response_time_ms, payload_size_bytes,
    error_message
 FROM {p}activity WHERE status <> 'pending' AND completed_at IS NOT NULL;
DROP TABLE {p}activity;
ALTER TABLE {p}activity_v2 RENAME TO {p}activity;
CREATE INDEX {p}activity_principal ON {p}activity (principal, fired_at);
CREATE INDEX {p}activity_url ON {p}activity (target_url, fired_at);
"
    )
}

/// SQLite version 3: records in a rowid table, in the order they were
/// written (their outcomes' order).
///
/// A table keyed by `(event_id, attempt)` is an index B-tree, which
/// SQLite splits by spreading cells over the neighbouring pages: each
/// commit wrote about three of its pages. A rowid table appends to a fresh
/// page instead. Nothing looks records up by event (the queries go
/// through the principal and URL indexes), and purges go by age, which
/// the rowid order follows.
fn sqlite_v3(p: &str) -> String {
    format!(
        "
CREATE TABLE {p}activity_v3 (
    event_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL,
    notification_id TEXT,
    notification_type TEXT NOT NULL,
    subscriber_id TEXT,
    sequence_number INTEGER,
    principal TEXT,
    target_url TEXT NOT NULL,
    fired_at INTEGER NOT NULL,
    completed_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    http_status_code INTEGER,
    response_time_ms INTEGER,
    payload_size_bytes INTEGER NOT NULL,
    error_message TEXT
);
INSERT INTO {p}activity_v3 (event_id, attempt, idempotency_key, notification_id, notification_type, subscriber_id,
    sequence_number, principal, target_url, fired_at, completed_at, status, http_status_code, response_time_ms,
    payload_size_bytes, error_message)
 SELECT event_id, attempt, idempotency_key, notification_id, notification_type, subscriber_id, sequence_number,
    principal, target_url, fired_at, completed_at, status, http_status_code, response_time_ms, payload_size_bytes,
    error_message
 FROM {p}activity ORDER BY completed_at, event_id, attempt;
DROP TABLE {p}activity;
ALTER TABLE {p}activity_v3 RENAME TO {p}activity;
CREATE INDEX {p}activity_principal ON {p}activity (principal, fired_at);
CREATE INDEX {p}activity_url ON {p}activity (target_url, fired_at);
"
    )
}

/// The version table.
pub(crate) fn version_table(p: &str, postgres: bool) -> String {
    let int = if postgres { "BIGINT" } else { "INTEGER" };
    format!("CREATE TABLE IF NOT EXISTS {p}schema_version (version {int} PRIMARY KEY, applied_at {int} NOT NULL)")
}

/// Version 4 (both dialects): the reporting schedule's streams (one row
/// per buy: its registration, its progress as JSON, a version for
/// compare-and-set, and when it is next due), an index of the events of a
/// channel still on their way (a `final` report waits for them), and the
/// channels (a registration, the fingerprint of its proof scope and the
/// one proven by an activation challenge, a state, a version).
fn reporting_v4(p: &str, blob: &str, int: &str) -> String {
    format!(
        "
CREATE TABLE {p}report_streams (
    id TEXT PRIMARY KEY,
    registration {blob} NOT NULL,
    state {blob} NOT NULL,
    version {int} NOT NULL,
    next_check_at {int},
    updated_at {int} NOT NULL
);
CREATE INDEX {p}report_streams_due ON {p}report_streams (next_check_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX {p}events_channel_open ON {p}events (channel_id)
    WHERE channel_id IS NOT NULL AND state IN ('pending', 'in_flight');
CREATE TABLE {p}channels (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    registration {blob} NOT NULL,
    fingerprint {blob} NOT NULL,
    proven {blob},
    state TEXT NOT NULL,
    version {int} NOT NULL,
    updated_at {int} NOT NULL
);
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert!(check_prefix("adcp_outbox_").is_ok());
        assert!(check_prefix("app2_").is_ok());
        for bad in ["", "1x_", "Outbox_", "a;drop", "a-b", &"x".repeat(41)] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }
}
