//! Claims: expired leases back to pending (their attempts recorded as
//! abandoned), breakers' probes, due events leased (a leased row is its
//! attempt's pending activity record).

use super::sql::{Sql, CANDIDATE_SCANS};
use crate::breaker::BreakerState;
use crate::event::OutboxDestination;
use crate::id::EventId;
use crate::store::{ClaimRequest, Claimed, ABANDONED};
use rusqlite::{params, Connection, OptionalExtension, Row};
use std::collections::HashMap;

fn breaker_from(r: &Row<'_>, first: usize) -> rusqlite::Result<BreakerState> {
    Ok(BreakerState {
        failures: u32::try_from(r.get::<_, i64>(first)?).unwrap_or(u32::MAX),
        open: r.get::<_, i64>(first + 1)? != 0,
        opened: u32::try_from(r.get::<_, i64>(first + 2)?).unwrap_or(u32::MAX),
        retry_at_ms: r.get(first + 3)?,
        probe_until_ms: r.get(first + 4)?,
        failing_since_ms: r.get(first + 5)?,
    })
}

fn open_breakers(conn: &Connection, q: &Sql) -> rusqlite::Result<HashMap<String, BreakerState>> {
    let mut stmt = conn.prepare_cached(&q.breakers_open)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, breaker_from(r, 1)?)))?;
    rows.collect()
}

/// The breaker of `origin` (closed and clean when it has no row).
pub(super) fn breaker(conn: &Connection, q: &Sql, origin: &str) -> rusqlite::Result<BreakerState> {
    conn.prepare_cached(&q.breaker)?
        .query_row(params![origin], |r| breaker_from(r, 0))
        .optional()
        .map(Option::unwrap_or_default)
}

/// Stores the breaker of `origin` (no row for a clean one).
pub(super) fn save_breaker(conn: &Connection, q: &Sql, origin: &str, b: &BreakerState) -> rusqlite::Result<()> {
    if *b == BreakerState::default() {
        conn.prepare_cached(&q.breaker_delete)?.execute(params![origin])?;
    } else {
        conn.prepare_cached(&q.breaker_save)?.execute(params![
            origin,
            i64::from(b.failures),
            i64::from(b.open),
            i64::from(b.opened),
            b.retry_at_ms,
            b.probe_until_ms,
            b.failing_since_ms
        ])?;
    }
    Ok(())
}

/// Records the attempt under way on event `id` as ended (before its row
/// leaves the attempt); nothing for an event without a notification type.
pub(super) fn record_attempt(
    conn: &Connection,
    q: &Sql,
    id: &str,
    completed_at: i64,
    facts: (&str, Option<i64>, Option<i64>, Option<&str>),
) -> rusqlite::Result<()> {
    let (status, http, response_time, error) = facts;
    conn.prepare_cached(&q.record_attempt)?
        .execute(params![id, completed_at, status, http, response_time, error])?;
    Ok(())
}

/// Leases due events for `req`; `token_base` seeds the fencing tokens
/// (drawn by the caller, off the writer thread; they only need to differ
/// between the leases of one event).
pub(super) fn claim_in(
    conn: &Connection,
    q: &Sql,
    req: &ClaimRequest,
    token_base: i64,
) -> rusqlite::Result<Vec<Claimed>> {
    let now = req.now_ms;
    // Leases whose worker vanished: their attempt is recorded as
    // abandoned and the event is due again at once.
    let stale: Vec<String> = conn
        .prepare_cached(&q.stale)?
        .query_map(params![now], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in stale {
        record_attempt(conn, q, &id, now, ("connection_error", None, None, Some(ABANDONED)))?;
        conn.prepare_cached(&q.stale_event)?
            .execute(params![id, now, ABANDONED])?;
    }
    let open = open_breakers(conn, q)?;
    let mut room: HashMap<String, usize> = HashMap::new();
    // Open breakers keep their origins out of the general scan (their
    // events were pushed back to the breaker's retry time anyway); a due
    // probe is chosen on its own, preferring an event already attempted:
    // a receiver that refuses every first delivery would otherwise fail
    // every probe.
    let mut excluded: Vec<&str> = open.keys().map(String::as_str).collect();
    let mut candidates: Vec<(String, String)> = Vec::new();
    for (origin, b) in &open {
        let busy = req.in_flight.get(origin).copied().unwrap_or(0);
        if b.probe_due(now) && busy == 0 && candidates.len() < req.limit {
            let probe: Option<String> = conn
                .prepare_cached(&q.probe)?
                .query_row(params![origin, now], |r| r.get(0))
                .optional()?;
            if let Some(id) = probe {
                room.insert(origin.clone(), 1);
                candidates.push((id, origin.clone()));
            }
        }
    }
    for (origin, busy) in &req.in_flight {
        if *busy >= req.per_origin_cap && !open.contains_key(origin) {
            excluded.push(origin);
        }
    }
    let mut listed = String::from("|");
    for origin in &excluded {
        listed.push_str(origin);
        listed.push('|');
    }
    let wanted = req.limit.saturating_mul(4);
    let size = CANDIDATE_SCANS
        .iter()
        .position(|n| *n >= wanted)
        .unwrap_or(CANDIDATE_SCANS.len() - 1);
    let general: Vec<(String, String)> = conn
        .prepare_cached(&q.candidates[size])?
        .query_map(params![now, listed], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    candidates.extend(general);
    let mut claimed = Vec::new();
    for (n, (id, origin)) in candidates.into_iter().enumerate() {
        if claimed.len() >= req.limit {
            break;
        }
        let probe = open.contains_key(&origin);
        let left = room.entry(origin.clone()).or_insert_with(|| {
            req.per_origin_cap
                .saturating_sub(req.in_flight.get(&origin).copied().unwrap_or(0))
        });
        if *left == 0 {
            continue;
        }
        *left -= 1;
        let token = token_base.wrapping_add(i64::try_from(n).unwrap_or(0)) & i64::MAX;
        let c = conn
            .prepare_cached(&q.lease)?
            .query_row(
                params![
                    id,
                    token,
                    req.owner,
                    now.saturating_add(req.lease_ms),
                    i64::from(probe),
                    now
                ],
                |r| {
                    let credentials: Option<Vec<u8>> = r.get(6)?;
                    Ok(Claimed {
                        id: EventId::from_stored(id.clone()),
                        lease_token: token,
                        attempt: u32::try_from(r.get::<_, i64>(0)?).unwrap_or(u32::MAX),
                        body: r.get(1)?,
                        idempotency_key: r.get(2)?,
                        destination: OutboxDestination::from_parts(
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            credentials.as_deref(),
                        ),
                        origin: origin.clone(),
                        signing_scope: r.get(7)?,
                        notification_type: r.get(8)?,
                        notification_id: r.get(9)?,
                        subscriber_id: r.get(10)?,
                        principal: r.get(11)?,
                        deadline_ms: r.get(12)?,
                        probe,
                        enqueued_at_ms: r.get(13)?,
                    })
                },
            )
            .optional()?;
        let Some(c) = c else {
            continue;
        };
        if probe {
            conn.prepare_cached(&q.breaker_probe_until)?
                .execute(params![c.origin, now.saturating_add(req.lease_ms)])?;
        }
        claimed.push(c);
    }
    Ok(claimed)
}
