//! Outcomes: fenced by the lease token, the event and its activity record
//! updated, the destination's breaker fed; expiry and the next due time.

use super::claim::{breaker, record_attempt, save_breaker};
use super::sql::Sql;
use crate::activity::{clip_message, ActivityStatus};
use crate::breaker::BreakerPolicy;
use crate::store::{EventState, Finish, Outcome};
use rusqlite::{params, Connection, OptionalExtension};

/// Records one outcome; `false` when `f`'s lease is no longer current.
pub(super) fn finish_in(conn: &Connection, q: &Sql, f: &Finish, policy: &BreakerPolicy) -> rusqlite::Result<bool> {
    let current: Option<i64> = conn
        .prepare_cached(&q.fence)?
        .query_row(params![f.id.as_str(), f.lease_token, f.now_ms], |r| r.get(0))
        .optional()?;
    let Some(probe) = current else {
        return Ok(false);
    };
    let now = f.now_ms;
    let undone = match &f.outcome {
        Outcome::Release(at) => Some((EventState::Pending, *at, None)),
        Outcome::Withdrawn(reason) => Some((EventState::Refused, now, Some(reason.as_str()))),
        _ => None,
    };
    if let Some((state, at, reason)) = undone {
        // Not attempted after all: the attempt is undone, with no record.
        conn.prepare_cached(&q.undo_event)?
            .execute(params![f.id.as_str(), state.as_str(), at, reason, now])?;
        if probe != 0 {
            conn.prepare_cached(&q.breaker_probe_until)?
                .execute(params![f.origin, 0_i64])?;
        }
        return Ok(true);
    }
    let (state, next, reason): (EventState, Option<i64>, Option<&str>) = match &f.outcome {
        Outcome::Delivered => (EventState::Delivered, None, None),
        Outcome::RetryAt(at) => (EventState::Pending, Some(*at), None),
        Outcome::Refused(reason) => (EventState::Refused, None, Some(reason)),
        Outcome::Expired(reason) => (EventState::Expired, None, Some(reason)),
        // Handled above.
        Outcome::Release(_) | Outcome::Withdrawn(_) => return Ok(true),
    };
    let facts = f.facts.as_ref();
    let status = facts.map_or(ActivityStatus::ConnectionError, |x| x.status);
    let http = facts.and_then(|x| x.http_status).map(i64::from);
    let error = facts.and_then(|x| x.error_message.as_deref()).map(clip_message);
    let completed = facts.map_or(now, |x| x.completed_at_ms);
    record_attempt(
        conn,
        q,
        f.id.as_str(),
        completed,
        (
            status.as_str(),
            http,
            facts.and_then(|x| x.response_time_ms),
            error.as_deref(),
        ),
    )?;
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
        b.record(facts.health, probe != 0, now, policy);
        if probe != 0 && b.open {
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

/// Expires pending events past their horizon.
pub(super) fn expire_in(conn: &Connection, q: &Sql, now: i64) -> rusqlite::Result<u64> {
    let n = conn.prepare_cached(&q.expire)?.execute(params![now])?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// When something next becomes due.
pub(super) fn next_due_in(conn: &Connection, q: &Sql) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(&q.next_due)?.query_row([], |r| r.get(0))
}
