//! The database layout and the connection settings every store relies on.

use super::SqliteOptions;
use crate::idempotency::ConfigError;
use rusqlite::Connection;
use std::fmt;

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
    Ok(())
}
