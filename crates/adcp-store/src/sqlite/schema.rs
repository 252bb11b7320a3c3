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
///   `adcp_replay_cap_counts`.
/// - 3: replay entries and dedup records in insertion order, without a
///   unique index on their keys (`adcp_replay_entries`,
///   `adcp_idempotency_records`): the store finds them through maps in its
///   memory (`key_index.rs`), and uniqueness is the store's to keep, so a
///   build that relies on a unique index must not write the file. New
///   table names make an older process still running on a migrated file
///   fail closed (`no such table`), and the version makes an older build
///   refuse to open it.
///
/// The notification records (`adcp_idempotency_notifications`) did not
/// bump it: [`SCHEMA`] creates the table at every open (`IF NOT EXISTS`),
/// and builds that predate it never read it.
const SCHEMA_VERSION: i64 = 3;

/// The current schema, idempotent (`IF NOT EXISTS`); on a file of an older
/// version [`migrate`] moves the rows of the older tables into it.
///
/// Rowids are `AUTOINCREMENT`: never reused, even after the newest row is
/// deleted, so "the rows above the highest rowid seen" is every row another
/// connection added since (`key_index.rs`). Trigger and index names differ
/// from the older tables' so that both sets exist during a migration.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS adcp_replay_entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    keyid TEXT NOT NULL,
    scoped INTEGER NOT NULL,
    scope TEXT NOT NULL,
    nonce BLOB NOT NULL,
    expires_at INTEGER NOT NULL,
    agented INTEGER NOT NULL,
    agent TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS adcp_replay_entries_expires ON adcp_replay_entries (expires_at);
CREATE TABLE IF NOT EXISTS adcp_replay_cap_counts (
    keyid TEXT NOT NULL,
    agented INTEGER NOT NULL,
    agent TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (keyid, agented, agent)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS adcp_replay_total (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT OR IGNORE INTO adcp_replay_total (id, n) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS adcp_replay_entries_ins AFTER INSERT ON adcp_replay_entries BEGIN
    INSERT INTO adcp_replay_cap_counts (keyid, agented, agent, n) VALUES (NEW.keyid, NEW.agented, NEW.agent, 1)
        ON CONFLICT (keyid, agented, agent) DO UPDATE SET n = n + 1;
    UPDATE adcp_replay_total SET n = n + 1 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS adcp_replay_entries_del AFTER DELETE ON adcp_replay_entries BEGIN
    UPDATE adcp_replay_cap_counts SET n = n - 1
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent;
    DELETE FROM adcp_replay_cap_counts
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent AND n <= 0;
    UPDATE adcp_replay_total SET n = n - 1 WHERE id = 0;
END;

CREATE TABLE IF NOT EXISTS adcp_idempotency_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sender TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    completed INTEGER NOT NULL,
    token INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    completed_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS adcp_idempotency_records_expires ON adcp_idempotency_records (expires_at);
CREATE TABLE IF NOT EXISTS adcp_idempotency_counts (sender TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS adcp_idempotency_records_ins AFTER INSERT ON adcp_idempotency_records BEGIN
    INSERT INTO adcp_idempotency_counts (sender, n) VALUES (NEW.sender, 1)
        ON CONFLICT (sender) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS adcp_idempotency_records_del AFTER DELETE ON adcp_idempotency_records BEGIN
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

/// After [`SCHEMA`], on a file with the version-1 or -2 replay table
/// (`adcp_replay`, unique on its key): its rows move in expiry order (a
/// version-1 row joins the `agent: None` partition, what it was counted
/// as), and the old table goes with its triggers and index.
const REPLAY_FROM_V2: &str = "
INSERT INTO adcp_replay_entries (keyid, scoped, scope, nonce, expires_at, agented, agent)
    SELECT keyid, scoped, scope, nonce, expires_at, {agented}, {agent} FROM adcp_replay ORDER BY expires_at;
DROP TABLE adcp_replay;
DROP TABLE IF EXISTS adcp_replay_counts;
";

/// After [`SCHEMA`], on a file with the version-2 dedup table
/// (`adcp_idempotency`, keyed by `(sender, key)` or with a unique index on
/// it): its rows move in creation order.
const RECORDS_FROM_V2: &str = "
INSERT INTO adcp_idempotency_records (sender, key, fingerprint, completed, token, attempt,
        lease_expires_at, completed_at, created_at, expires_at)
    SELECT sender, key, fingerprint, completed, token, attempt,
        lease_expires_at, completed_at, created_at, expires_at
    FROM adcp_idempotency ORDER BY created_at;
DROP TABLE adcp_idempotency;
";

/// After moving rows: the counters are recounted from the rows (the new
/// tables' insert triggers counted each moved row once more).
const RECOUNT: &str = "
DELETE FROM adcp_replay_cap_counts;
INSERT INTO adcp_replay_cap_counts (keyid, agented, agent, n)
    SELECT keyid, agented, agent, COUNT(*) FROM adcp_replay_entries GROUP BY keyid, agented, agent;
UPDATE adcp_replay_total SET n = (SELECT COUNT(*) FROM adcp_replay_entries) WHERE id = 0;
DELETE FROM adcp_idempotency_counts;
INSERT INTO adcp_idempotency_counts (sender, n)
    SELECT sender, COUNT(*) FROM adcp_idempotency_records GROUP BY sender;
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
    // Decided from the tables themselves rather than `user_version` alone:
    // an older open that died between creating its tables and recording
    // the version left a file whose version understates its tables.
    let exists =
        |sql: &str| -> Result<bool, ConfigError> { conn.query_row(sql, [], |row| row.get(0)).map_err(backend) };
    let old_replay =
        exists("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'adcp_replay')")?;
    let old_replay_agent =
        exists("SELECT EXISTS (SELECT 1 FROM pragma_table_info('adcp_replay') WHERE name = 'agent')")?;
    let old_records =
        exists("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'adcp_idempotency')")?;
    conn.execute_batch(SCHEMA).map_err(backend)?;
    if old_replay {
        // A version-1 table has no agent columns: its rows join `None`.
        let (agented, agent) = if old_replay_agent {
            ("agented", "agent")
        } else {
            ("0", "''")
        };
        let sql = REPLAY_FROM_V2.replace("{agented}", agented).replace("{agent}", agent);
        conn.execute_batch(&sql).map_err(backend)?;
    }
    if old_records {
        conn.execute_batch(RECORDS_FROM_V2).map_err(backend)?;
    }
    if old_replay || old_records {
        conn.execute_batch(RECOUNT).map_err(backend)?;
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(backend)
}
