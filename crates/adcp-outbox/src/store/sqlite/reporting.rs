//! The reporting schedule's streams on SQLite: a compare-and-set of the
//! stream and the enqueue of its report in one transaction.

use super::enqueue::enqueue_in;
use super::sql::Sql;
use crate::store::{Insert, StreamRow, StreamUpdate};
use rusqlite::{params, Connection, OptionalExtension, Row};

const COLUMNS: &str = "id, registration, state, version, next_check_at";

fn row(r: &Row<'_>) -> rusqlite::Result<StreamRow> {
    Ok(StreamRow {
        id: r.get(0)?,
        registration: r.get(1)?,
        state: r.get(2)?,
        version: r.get(3)?,
        next_check_at: r.get(4)?,
    })
}

pub(super) fn get_in(conn: &Connection, q: &Sql, id: &str) -> rusqlite::Result<Option<StreamRow>> {
    let p = &q.prefix;
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {p}report_streams WHERE id = ?1"))?
        .query_row(params![id], row)
        .optional()
}

pub(super) fn create_in(conn: &Connection, q: &Sql, new: &StreamRow, now_ms: i64) -> rusqlite::Result<StreamRow> {
    let p = &q.prefix;
    conn.prepare_cached(&format!(
        "INSERT OR IGNORE INTO {p}report_streams (id, registration, state, version, next_check_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
    ))?
    .execute(params![
        new.id,
        new.registration,
        new.state,
        new.version,
        new.next_check_at,
        now_ms
    ])?;
    get_in(conn, q, &new.id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
}

pub(super) fn due_in(conn: &Connection, q: &Sql, now_ms: i64, limit: usize) -> rusqlite::Result<Vec<StreamRow>> {
    let p = &q.prefix;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {p}report_streams WHERE next_check_at IS NOT NULL AND next_check_at <= ?1
         ORDER BY next_check_at LIMIT ?2"
    ))?
    .query_map(params![now_ms, limit], row)?
    .collect()
}

/// The compare-and-set, then the enqueue; the caller's transaction (the
/// writer's savepoint) makes them one.
pub(super) fn advance_in(
    conn: &Connection,
    q: &Sql,
    update: &StreamUpdate,
    event: Option<&Insert>,
) -> rusqlite::Result<bool> {
    let p = &q.prefix;
    let changed = conn
        .prepare_cached(&format!(
            "UPDATE {p}report_streams SET registration = COALESCE(?3, registration), state = ?4, version = ?2 + 1,
                 next_check_at = ?5, updated_at = ?6
             WHERE id = ?1 AND version = ?2"
        ))?
        .execute(params![
            update.id,
            update.expected_version,
            update.registration,
            update.state,
            update.next_check_at,
            update.now_ms
        ])?;
    if changed == 0 {
        return Ok(false);
    }
    if let Some(event) = event {
        enqueue_in(conn, q, event, None)?;
    }
    Ok(true)
}

pub(super) fn channel_busy_in(conn: &Connection, q: &Sql, channel: &str) -> rusqlite::Result<bool> {
    let p = &q.prefix;
    conn.prepare_cached(&format!(
        "SELECT EXISTS (SELECT 1 FROM {p}events WHERE channel_id = ?1 AND state IN ('pending', 'in_flight'))"
    ))?
    .query_row(params![channel], |r| r.get(0))
}
