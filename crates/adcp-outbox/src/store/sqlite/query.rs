//! Reads (events, activity records, figures), redrive and purge.

use super::refuse;
use super::sql::Sql;
use crate::activity::{redact_url, ActivityRecord, ActivityStatus};
use crate::error::OutboxError;
use crate::id::EventId;
use crate::store::{ActivityQuery, ActivitySelector, EventState, EventView, ListFilter, OutboxStats};
use rusqlite::{params, Connection, OptionalExtension, Row};

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

pub(super) fn get_in(conn: &Connection, q: &Sql, id: &str) -> rusqlite::Result<Option<EventView>> {
    conn.prepare_cached(&q.get)?.query_row(params![id], view).optional()
}

pub(super) fn list_in(conn: &Connection, q: &Sql, filter: &ListFilter) -> rusqlite::Result<Vec<EventView>> {
    let limit = i64::try_from(filter.limit.clamp(1, 1000)).unwrap_or(50);
    let mut stmt = conn.prepare_cached(&q.list)?;
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

pub(super) fn redrive_in(conn: &Connection, q: &Sql, id: &str, now: i64) -> rusqlite::Result<EventView> {
    let row: Option<(String, Option<i64>, i64, i64)> = conn
        .prepare_cached(&q.redrive_row)?
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
    conn.prepare_cached(&q.redrive)?.execute(params![id, now, end])?;
    get_in(conn, q, id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
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
        // Stored as registered; the record shows it redacted.
        url: redact_url(&r.get::<_, String>(9)?),
        http_status_code: r.get::<_, Option<i64>>(10)?.and_then(|s| u16::try_from(s).ok()),
        response_time_ms: r.get(11)?,
        payload_size_bytes: u64::try_from(r.get::<_, i64>(12)?).unwrap_or(0),
        error_message: r.get(13)?,
    })
}

pub(super) fn activity_in(conn: &Connection, sql: &Sql, q: &ActivityQuery) -> rusqlite::Result<Vec<ActivityRecord>> {
    let limit = i64::from(q.limit.clamp(1, crate::store::MAX_ACTIVITY_LIMIT));
    match &q.selector {
        ActivitySelector::Principal {
            principal,
            resource: None,
        } => conn
            .prepare_cached(&sql.activity_principal)?
            .query_map(params![principal, limit], record)?
            .collect(),
        ActivitySelector::Principal {
            principal,
            resource: Some(resource),
        } => conn
            .prepare_cached(&sql.activity_resource)?
            .query_map(params![principal, resource, limit], record)?
            .collect(),
        ActivitySelector::Url(url) => conn
            .prepare_cached(&sql.activity_url)?
            .query_map(params![url, limit], record)?
            .collect(),
    }
}

/// Deletes what the retention no longer keeps: records completed before
/// `cutoff`, and finished events enqueued two longest horizons before it.
/// Ids start with the enqueue time and an event finishes within two
/// horizons of its enqueue (a never-attempted one expires one horizon
/// after it; an attempted one one horizon after its first attempt, itself
/// within the first horizon), so such an event finished, and its records
/// completed, before `cutoff`.
pub(super) fn purge_in(conn: &Connection, q: &Sql, cutoff: i64) -> rusqlite::Result<u64> {
    let p = &q.prefix;
    let longest = i64::try_from(adcp_webhook::RetryPolicy::MAX_HORIZON.as_millis()).unwrap_or(i64::MAX);
    let bound = EventId::time_floor(cutoff.saturating_sub(longest.saturating_mul(2)));
    let old = records_before(conn, p, cutoff)?;
    let mut n = conn.execute(
        &format!("DELETE FROM {p}activity WHERE rowid < ?1 AND completed_at < ?2"),
        params![old, cutoff],
    )?;
    n += conn.execute(
        &format!("DELETE FROM {p}events WHERE id < ?1 AND finished_at IS NOT NULL"),
        params![bound],
    )?;
    n += conn.execute(
        &format!(
            "DELETE FROM {p}resources WHERE event_id < ?1
               AND NOT EXISTS (SELECT 1 FROM {p}events e WHERE e.id = {p}resources.event_id)"
        ),
        params![bound],
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

/// The first rowid of the records to keep: records are written in the
/// order of their outcomes, so those completed before `cutoff` are the
/// rows below it (found in a logarithmic number of lookups; the delete
/// checks `completed_at` too, in case processes sharing the file wrote a
/// few out of order).
fn records_before(conn: &Connection, p: &str, cutoff: i64) -> rusqlite::Result<i64> {
    let (first, last): (Option<i64>, Option<i64>) =
        conn.query_row(&format!("SELECT MIN(rowid), MAX(rowid) FROM {p}activity"), [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(mut lo), Some(last)) = (first, last) else {
        return Ok(0);
    };
    let mut at = conn.prepare(&format!(
        "SELECT rowid, completed_at FROM {p}activity WHERE rowid >= ?1 ORDER BY rowid LIMIT 1"
    ))?;
    // Rows below `lo` are older than the cutoff; rows from `hi` on are not.
    let mut hi = last.saturating_add(1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let row: Option<(i64, i64)> = at.query_row(params![mid], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        match row {
            Some((rowid, completed)) if completed < cutoff => lo = rowid.saturating_add(1),
            _ => hi = mid,
        }
    }
    Ok(lo)
}

pub(super) fn stats_in(conn: &Connection, q: &Sql) -> rusqlite::Result<OutboxStats> {
    let by_state = conn
        .prepare_cached(&q.stats_states)?
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .filter_map(|row| match row {
            Ok((s, n)) => EventState::parse(&s).map(|s| Ok((s, u64::try_from(n).unwrap_or(0)))),
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let oldest = conn.prepare_cached(&q.stats_oldest)?.query_row([], |r| r.get(0))?;
    let open: i64 = conn.prepare_cached(&q.stats_open)?.query_row([], |r| r.get(0))?;
    Ok(OutboxStats {
        by_state,
        oldest_pending_enqueued_ms: oldest,
        open_breakers: u64::try_from(open).unwrap_or(0),
    })
}
