//! Outcomes: fenced by the lease token, the event and its activity record
//! updated, the destination's breaker fed; expiry and the next due time.

use super::claim::{breaker, save_breaker};
use super::sql::Sql;
use crate::activity::{clip_message, ActivityStatus};
use crate::breaker::BreakerPolicy;
use crate::store::{EventState, Finish, Outcome};
use rusqlite::{params, Connection, OptionalExtension};

/// Records one outcome; `false` when `f`'s lease is no longer current.
pub(super) fn finish_in(conn: &Connection, q: &Sql, f: &Finish, policy: &BreakerPolicy) -> rusqlite::Result<bool> {
    let now = f.now_ms;
    let (state, next, reason): (EventState, Option<i64>, Option<&str>) = match &f.outcome {
        Outcome::Delivered => (EventState::Delivered, None, None),
        Outcome::RetryAt(at) => (EventState::Pending, Some(*at), None),
        Outcome::Refused(reason) => (EventState::Refused, None, Some(reason)),
        Outcome::Expired(reason) => (EventState::Expired, None, Some(reason)),
        Outcome::Release(at) => return undo_in(conn, q, f, EventState::Pending, *at, None),
        Outcome::Withdrawn(reason) => return undo_in(conn, q, f, EventState::Refused, now, Some(reason)),
    };
    let facts = f.facts.as_ref();
    let status = facts.map_or(ActivityStatus::ConnectionError, |x| x.status);
    let http = facts.and_then(|x| x.http_status).map(i64::from);
    let response_time = facts.and_then(|x| x.response_time_ms);
    let error = facts.and_then(|x| x.error_message.as_deref()).map(clip_message);
    let completed = facts.map_or(now, |x| x.completed_at_ms);
    let current = conn
        .prepare_cached(&q.fence)?
        .query_row(params![f.id.as_str(), f.lease_token, now], |r| {
            let probe = r.get::<_, i64>(0)? != 0;
            let Some(kind) = r.get::<_, Option<String>>(4)? else {
                return Ok((probe, None));
            };
            let record = (
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                kind,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<i64>>(6)?,
                r.get::<_, Option<String>>(7)?,
                r.get::<_, String>(8)?,
                r.get::<_, Option<i64>>(9)?.unwrap_or(completed),
                r.get::<_, i64>(10)?,
            );
            Ok((probe, Some(record)))
        })
        .optional()?;
    let Some((probe, record)) = current else {
        return Ok(false);
    };
    if let Some((attempt, key, notification_id, kind, subscriber, sequence, principal, url, fired, size)) = record {
        conn.prepare_cached(&q.record)?.execute(params![
            f.id.as_str(),
            attempt,
            key,
            notification_id,
            kind,
            subscriber,
            sequence,
            principal,
            url,
            fired,
            completed,
            status.as_str(),
            http,
            response_time,
            size,
            error
        ])?;
    }
    conn.prepare_cached(&q.done_event)?.execute(params![
        f.id.as_str(),
        state.as_str(),
        next,
        status.as_str(),
        http,
        error,
        reason,
        now
    ])?;
    if let Some(facts) = facts {
        let mut b = breaker(conn, q, &f.origin)?;
        let before = b;
        b.record(facts.health, probe, now, policy);
        if probe && b.open {
            b.probe_until_ms = 0;
        }
        if b != before {
            save_breaker(conn, q, &f.origin, &b)?;
        }
        if b.open && b.retry_at_ms != before.retry_at_ms {
            // Opened, or reopened by a failed probe: the origin's events
            // wait for the next probe, off the claims' due-time scan.
            conn.prepare_cached(&q.push_back)?
                .execute(params![f.origin, b.retry_at_ms])?;
        }
    }
    Ok(true)
}

/// A lease given back unattempted (released, or withdrawn by the
/// pre-attempt hook): the attempt is undone, with no record; `false` when
/// the lease is no longer current.
fn undo_in(
    conn: &Connection,
    q: &Sql,
    f: &Finish,
    state: EventState,
    at: i64,
    reason: Option<&str>,
) -> rusqlite::Result<bool> {
    let current: Option<i64> = conn
        .prepare_cached(&q.fence)?
        .query_row(params![f.id.as_str(), f.lease_token, f.now_ms], |r| r.get(0))
        .optional()?;
    let Some(probe) = current else {
        return Ok(false);
    };
    conn.prepare_cached(&q.undo_event)?
        .execute(params![f.id.as_str(), state.as_str(), at, reason, f.now_ms])?;
    if probe != 0 {
        conn.prepare_cached(&q.breaker_probe_until)?
            .execute(params![f.origin, 0_i64])?;
    }
    Ok(true)
}

/// Expires pending events past their horizon.
pub(super) fn expire_in(conn: &Connection, q: &Sql, now: i64) -> rusqlite::Result<u64> {
    let n = conn.prepare_cached(&q.expire)?.execute(params![now])?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// When something next becomes due.
pub(super) fn next_due_in(conn: &Connection, q: &Sql) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(&q.next_due)?.query_row([], |r| r.get(0))
}
