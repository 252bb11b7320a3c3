//! The notification records in `adcp_idempotency_notifications`, written
//! inside the completion's operation (one savepoint of the writer's batch
//! transaction), so a completion and its record commit together or not at
//! all.

use super::{exec, row};
use rusqlite::{params, Connection, OptionalExtension};

/// Records a completion of `idem_key` carrying `notification_id`: a live
/// record keeps its first key and only grows its expiry; an absent or
/// expired one is replaced whole (the rule of every backend). Expired
/// records are dropped first, like every write of the store.
pub(super) fn record(
    conn: &Connection,
    sender: &str,
    notification_id: &str,
    idem_key: &str,
    expires_at: i64,
    now: i64,
) -> rusqlite::Result<()> {
    purge(conn, now)?;
    // SET expressions read the row as it was before the update.
    exec(
        conn,
        "INSERT INTO adcp_idempotency_notifications (sender, notification_id, key, expires_at)
             VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (sender, notification_id) DO UPDATE SET
             key = CASE WHEN expires_at < ?5 THEN excluded.key ELSE key END,
             expires_at = MAX(expires_at, excluded.expires_at)",
        params![sender, notification_id, idem_key, expires_at, now],
    )?;
    Ok(())
}

/// The first key of the live record, if any.
pub(super) fn origin(
    conn: &Connection,
    sender: &str,
    notification_id: &str,
    now: i64,
) -> rusqlite::Result<Option<String>> {
    row(
        conn,
        "SELECT key FROM adcp_idempotency_notifications
             WHERE sender = ?1 AND notification_id = ?2 AND expires_at >= ?3",
        params![sender, notification_id, now],
        |row| row.get(0),
    )
    .optional()
}

/// Deletes the records expired at `now`; returns how many.
pub(super) fn purge(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    exec(
        conn,
        "DELETE FROM adcp_idempotency_notifications WHERE expires_at < ?1",
        [now],
    )
}
