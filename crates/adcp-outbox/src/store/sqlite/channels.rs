//! Channels on SQLite: a channel's write and what it does to its events
//! (withdraw, flush, replace) in one transaction, and the enqueue's check
//! of the event's channel.

use super::enqueue::enqueue_in;
use super::refuse;
use super::sql::Sql;
use crate::channels::ChannelState;
use crate::error::OutboxError;
use crate::id::EventId;
use crate::store::{ChannelRow, ChannelWrite, Insert, Unattempted};
use rusqlite::{params, Connection, OptionalExtension};

pub(super) fn get_in(conn: &Connection, q: &Sql, id: &str) -> rusqlite::Result<Option<ChannelRow>> {
    let p = &q.prefix;
    conn.prepare_cached(&format!(
        "SELECT id, kind, registration, fingerprint, proven, state, version FROM {p}channels WHERE id = ?1"
    ))?
    .query_row(params![id], |r| {
        Ok(ChannelRow {
            id: r.get(0)?,
            kind: r.get(1)?,
            registration: r.get(2)?,
            fingerprint: r.get(3)?,
            proven: r.get(4)?,
            state: r.get(5)?,
            version: r.get(6)?,
        })
    })
    .optional()
}

/// Refuses an event for a channel that does not take events now. A channel
/// id nobody registered is the application's own label: no check.
pub(super) fn check_in(conn: &Connection, q: &Sql, channel: &str) -> rusqlite::Result<()> {
    let p = &q.prefix;
    let state: Option<String> = conn
        .prepare_cached(&format!("SELECT state FROM {p}channels WHERE id = ?1"))?
        .query_row(params![channel], |r| r.get(0))
        .optional()?;
    match state.as_deref().map(ChannelState::parse) {
        None | Some(Some(ChannelState::Active)) => Ok(()),
        Some(state) => Err(refuse(OutboxError::ChannelNotActive {
            channel: channel.to_owned(),
            state: state.unwrap_or(ChannelState::Closed),
        })),
    }
}

/// A registered `reporting_webhook` channel closes with its `final`
/// report, in the transaction that enqueues it: nothing is sent to it
/// after.
pub(super) fn close_after_final_in(conn: &Connection, q: &Sql, channel: &str, row: &Insert) -> rusqlite::Result<()> {
    if !crate::channels::closes_channel(channel, row.notification_type.as_deref()) {
        return Ok(());
    }
    let p = &q.prefix;
    conn.prepare_cached(&format!(
        "UPDATE {p}channels SET state = 'closed', version = version + 1, updated_at = ?2
         WHERE id = ?1 AND state <> 'closed'"
    ))?
    .execute(params![channel, row.enqueued_at_ms])?;
    Ok(())
}

pub(super) fn write_in(conn: &Connection, q: &Sql, w: &ChannelWrite) -> rusqlite::Result<Option<u64>> {
    let p = &q.prefix;
    let r = &w.row;
    let changed = if w.create {
        conn.prepare_cached(&format!(
            "INSERT OR IGNORE INTO {p}channels (id, kind, registration, fingerprint, proven, state, version, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)"
        ))?
        .execute(params![
            r.id,
            r.kind,
            r.registration,
            r.fingerprint,
            r.proven,
            r.state,
            w.now_ms
        ])?
    } else {
        conn.prepare_cached(&format!(
            "UPDATE {p}channels SET registration = ?3, fingerprint = ?4, proven = ?5, state = ?6, version = ?2 + 1,
                 updated_at = ?7
             WHERE id = ?1 AND version = ?2"
        ))?
        .execute(params![
            r.id,
            r.version,
            r.registration,
            r.fingerprint,
            r.proven,
            r.state,
            w.now_ms
        ])?
    };
    if changed == 0 {
        return Ok(None);
    }
    if let Some(reason) = &w.withdraw {
        conn.prepare_cached(&format!(
            "UPDATE {p}events SET state = 'refused', reason = ?2, finished_at = ?3
             WHERE channel_id = ?1 AND state = 'pending'"
        ))?
        .execute(params![r.id, reason, w.now_ms])?;
    }
    if w.flush_held {
        conn.prepare_cached(&format!(
            "UPDATE {p}events SET next_attempt_at = ?2
             WHERE channel_id = ?1 AND state = 'pending' AND attempts = 0 AND next_attempt_at > ?2"
        ))?
        .execute(params![r.id, w.now_ms])?;
    }
    let mut replaced = 0;
    for (old, new) in &w.replace {
        let taken = conn
            .prepare_cached(&format!(
                "UPDATE {p}events SET state = 'superseded', superseded_by = ?2, finished_at = ?3,
                     reason = 'rebuilt for the channel''s new registration'
                 WHERE id = ?1 AND channel_id = ?4 AND state = 'pending' AND attempts = 0"
            ))?
            .execute(params![old.as_str(), new.id.as_str(), w.now_ms, r.id])?;
        if taken == 0 {
            // Attempted (or gone) meanwhile: it finishes where it started.
            continue;
        }
        enqueue_in(conn, q, new, None)?;
        conn.prepare_cached(&format!(
            "INSERT OR IGNORE INTO {p}resources (resource, event_id)
             SELECT resource, ?2 FROM {p}resources WHERE event_id = ?1"
        ))?
        .execute(params![old.as_str(), new.id.as_str()])?;
        replaced += 1;
    }
    Ok(Some(replaced))
}

pub(super) fn unattempted_in(
    conn: &Connection,
    q: &Sql,
    channel: &str,
    limit: usize,
) -> rusqlite::Result<Vec<Unattempted>> {
    let p = &q.prefix;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    conn.prepare_cached(&format!(
        "SELECT id, body, key_id, signing_scope, principal, coalescing_key, next_attempt_at FROM {p}events
         WHERE channel_id = ?1 AND state = 'pending' AND attempts = 0 ORDER BY enqueued_at LIMIT ?2"
    ))?
    .query_map(params![channel, limit], |r| {
        Ok(Unattempted {
            id: EventId::from_stored(r.get(0)?),
            body: r.get(1)?,
            key_id: r.get(2)?,
            signing_scope: r.get(3)?,
            principal: r.get(4)?,
            coalescing_key: r.get(5)?,
            next_attempt_at: r.get(6)?,
        })
    })?
    .collect()
}
