//! The database layout and the connection settings every store relies on.

use super::SqliteOptions;
use crate::idempotency::ConfigError;
use rusqlite::Connection;
use std::fmt;

/// The schema version this crate writes (`PRAGMA user_version`).
///
/// - 1: replay entries counted per keyid (`adcp_replay_counts`).
/// - 2: replay entries carry the signer's agent (`agented`, `agent`, like
///   `scoped`, `scope`: a flag and a value, so `None` and `Some("")`
///   differ) and the per-keyid cap is counted per `(agent, keyid)` in
///   `adcp_replay_cap_counts`. Uniqueness (the primary key) is unchanged.
///
/// The notification records (`adcp_idempotency_notifications`) and the
/// dedup records' move to a rowid table ([`IDEMPOTENCY_TO_ROWID`]) did not
/// bump it: the version marks layouts an older build would misread, and
/// an added table that older builds never touch is not one. [`SCHEMA`]
/// creates it at every open (`IF NOT EXISTS`, in the open's write
/// transaction), so a version-2 file gains it on its first open by this
/// build and a build without notification records can still open the
/// file (a rollback keeps working; its completions just record nothing).
/// An older build reads and writes the rowid dedup table with the same
/// statements and the same uniqueness.
const SCHEMA_VERSION: i64 = 2;

/// The current schema, idempotent (`IF NOT EXISTS`). On a version-1 file
/// [`MIGRATE_V1_TO_V2`] runs first, since `CREATE TABLE IF NOT EXISTS`
/// would leave the old `adcp_replay` without the agent columns.
///
/// The agent columns come last, where `ALTER TABLE … ADD COLUMN` puts them
/// in a migrated file, so fresh and migrated files have one layout. The cap
/// counters live in a table (and triggers) with new names rather than the
/// version-1 ones, so a version-1 process still running on a migrated file
/// fails closed (`no such table`) instead of reading a count that no longer
/// means what it expects.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS adcp_replay (
    keyid TEXT NOT NULL,
    scoped INTEGER NOT NULL,
    scope TEXT NOT NULL,
    nonce BLOB NOT NULL,
    expires_at INTEGER NOT NULL,
    agented INTEGER NOT NULL DEFAULT 0,
    agent TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (keyid, scoped, scope, nonce)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS adcp_replay_expires ON adcp_replay (expires_at);
CREATE TABLE IF NOT EXISTS adcp_replay_cap_counts (
    keyid TEXT NOT NULL,
    agented INTEGER NOT NULL,
    agent TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (keyid, agented, agent)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS adcp_replay_total (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT OR IGNORE INTO adcp_replay_total (id, n) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS adcp_replay_cap_ins AFTER INSERT ON adcp_replay BEGIN
    INSERT INTO adcp_replay_cap_counts (keyid, agented, agent, n) VALUES (NEW.keyid, NEW.agented, NEW.agent, 1)
        ON CONFLICT (keyid, agented, agent) DO UPDATE SET n = n + 1;
    UPDATE adcp_replay_total SET n = n + 1 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS adcp_replay_cap_del AFTER DELETE ON adcp_replay BEGIN
    UPDATE adcp_replay_cap_counts SET n = n - 1
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent;
    DELETE FROM adcp_replay_cap_counts
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent AND n <= 0;
    UPDATE adcp_replay_total SET n = n - 1 WHERE id = 0;
END;

-- A rowid table with a unique index rather than WITHOUT ROWID on
-- (sender, key): rows go in insertion order, so a completion updates a
-- leaf its batch's other recent claims share instead of a random one
-- (see IDEMPOTENCY_TO_ROWID).
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
    UNIQUE (sender, key)
);
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

CREATE TABLE IF NOT EXISTS adcp_idempotency_notifications (
    sender TEXT NOT NULL,
    notification_id TEXT NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (sender, notification_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS adcp_idempotency_notifications_expires ON adcp_idempotency_notifications (expires_at);
";

/// Version 1 → 2, before [`SCHEMA`]: existing entries keep their rows and
/// join the `agent: None` partition (what every version-1 entry was counted
/// as); the version-1 counters and their triggers go, so the new triggers
/// are the only ones counting.
const MIGRATE_V1_TO_V2: &str = "
ALTER TABLE adcp_replay ADD COLUMN agented INTEGER NOT NULL DEFAULT 0;
ALTER TABLE adcp_replay ADD COLUMN agent TEXT NOT NULL DEFAULT '';
DROP TRIGGER IF EXISTS adcp_replay_ins;
DROP TRIGGER IF EXISTS adcp_replay_del;
DROP TABLE IF EXISTS adcp_replay_counts;
";

/// Before [`SCHEMA`], on a file whose dedup records are still in a
/// `WITHOUT ROWID` table keyed by `(sender, key)`: the table steps aside
/// (its index and triggers go with it) so that [`SCHEMA`] creates the
/// rowid one, and [`IDEMPOTENCY_COPY`] moves the rows over.
///
/// Why the layout changed: keyed by `(sender, key)`, a claim inserts into
/// a random leaf and its completion, a commit later, rewrites that leaf
/// (a second random page in the WAL, the fsync and the checkpoint). In
/// insertion order, the completion lands on a leaf shared with the other
/// claims of the same moment, and only the unique index takes a random
/// leaf, once, at the claim: the SQLite writer's CPU per gateway event
/// fell by about a tenth (docs/performance.md).
const IDEMPOTENCY_TO_ROWID: &str = "
DROP TRIGGER IF EXISTS adcp_idempotency_ins;
DROP TRIGGER IF EXISTS adcp_idempotency_del;
DROP INDEX IF EXISTS adcp_idempotency_expires;
ALTER TABLE adcp_idempotency RENAME TO adcp_idempotency_keyed;
";

/// After [`SCHEMA`], on a file [`IDEMPOTENCY_TO_ROWID`] prepared: the rows
/// move in creation order, and the per-sender counts are recounted from
/// them (the new table's insert trigger counted each row once more).
const IDEMPOTENCY_COPY: &str = "
INSERT INTO adcp_idempotency (sender, key, fingerprint, completed, token, attempt,
        lease_expires_at, completed_at, created_at, expires_at)
    SELECT sender, key, fingerprint, completed, token, attempt,
        lease_expires_at, completed_at, created_at, expires_at
    FROM adcp_idempotency_keyed ORDER BY created_at;
DROP TABLE adcp_idempotency_keyed;
DELETE FROM adcp_idempotency_counts;
INSERT INTO adcp_idempotency_counts (sender, n)
    SELECT sender, COUNT(*) FROM adcp_idempotency GROUP BY sender;
";

/// After [`SCHEMA`] on a migrated file: the cap counters (new, empty) are
/// rebuilt from the rows, and the aggregate counter recounted so it cannot
/// carry drift across the migration.
const RECOUNT_V2: &str = "
DELETE FROM adcp_replay_cap_counts;
INSERT INTO adcp_replay_cap_counts (keyid, agented, agent, n)
    SELECT keyid, agented, agent, COUNT(*) FROM adcp_replay GROUP BY keyid, agented, agent;
UPDATE adcp_replay_total SET n = (SELECT COUNT(*) FROM adcp_replay) WHERE id = 0;
";

fn backend(e: impl fmt::Display) -> ConfigError {
    ConfigError::Backend(format!("sqlite: {e}"))
}

/// Applies the connection settings (busy timeout, WAL, `synchronous=FULL`,
/// the size ceiling) and the schema, refusing a file written by a newer
/// schema version.
pub(super) fn prepare(conn: &Connection, options: &SqliteOptions) -> Result<(), ConfigError> {
    conn.busy_timeout(options.busy_timeout).map_err(backend)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(backend)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(backend(format!("journal_mode is {mode}, WAL required")));
    }
    // A negative cache_size is in KiB.
    let cache_kib = i64::try_from(options.page_cache_bytes / 1024).unwrap_or(i64::MAX);
    conn.pragma_update(None, "cache_size", -cache_kib).map_err(backend)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(backend)?;
    let synchronous: i64 = conn
        .query_row("PRAGMA synchronous", [], |row| row.get(0))
        .map_err(backend)?;
    if synchronous < 2 {
        return Err(backend("synchronous=FULL was not applied"));
    }
    // One write transaction for the version check, any migration and the
    // schema: two processes opening one version-1 file at once serialize
    // here, and the second finds the file already migrated.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
    match migrate(conn) {
        Ok(()) => conn.execute_batch("COMMIT").map_err(backend)?,
        Err(e) => {
            // Leave the file as it was; the open fails closed.
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    }
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
    Ok(())
}

/// Brings the file to [`SCHEMA_VERSION`] inside the caller's transaction.
fn migrate(conn: &Connection) -> Result<(), ConfigError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(backend)?;
    if version > SCHEMA_VERSION {
        return Err(backend(format!(
            "schema version {version} is newer than this build understands ({SCHEMA_VERSION})"
        )));
    }
    // Decided from the table itself rather than `user_version` alone: a
    // version-1 open that died between creating the tables and recording
    // the version left a version-0 file with version-1 tables.
    let has_replay: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'adcp_replay')",
            [],
            |row| row.get(0),
        )
        .map_err(backend)?;
    let has_agent: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('adcp_replay') WHERE name = 'agent')",
            [],
            |row| row.get(0),
        )
        .map_err(backend)?;
    let from_v1 = has_replay && !has_agent;
    // `pragma_table_list.wr` is 1 for a WITHOUT ROWID table.
    let keyed_idempotency: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_list WHERE name = 'adcp_idempotency' AND wr = 1)",
            [],
            |row| row.get(0),
        )
        .map_err(backend)?;
    if from_v1 {
        conn.execute_batch(MIGRATE_V1_TO_V2).map_err(backend)?;
    }
    if keyed_idempotency {
        conn.execute_batch(IDEMPOTENCY_TO_ROWID).map_err(backend)?;
    }
    conn.execute_batch(SCHEMA).map_err(backend)?;
    if from_v1 {
        conn.execute_batch(RECOUNT_V2).map_err(backend)?;
    }
    if keyed_idempotency {
        conn.execute_batch(IDEMPOTENCY_COPY).map_err(backend)?;
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(backend)
}
