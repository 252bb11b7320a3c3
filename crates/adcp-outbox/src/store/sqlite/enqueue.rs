//! Enqueue: idempotent on `(signing_scope, idempotency_key)`, coalescing
//! inside a window, and optionally leased at once to the enqueueing
//! process's dispatcher (the first attempt's claim in the same write).

use super::sql::Sql;
use super::{refuse, unavailable};
use crate::error::OutboxError;
use crate::event::OutboxDestination;
use crate::id::EventId;
use crate::store::{Claimed, Enqueued, Insert, LeaseGrant};
use rusqlite::{params, Connection, OptionalExtension};

/// Enqueues `row` on `conn` (an application's open transaction, or any
/// connection): the row commits or rolls back with the transaction. Wakes
/// nothing: a relay on the same file finds it at its next poll.
///
/// # Errors
///
/// [`OutboxError::KeyConflict`], [`OutboxError::KeyUsedForOtherDestination`],
/// or [`OutboxError::Unavailable`] for an SQL failure.
pub fn enqueue_sqlite(conn: &Connection, prefix: &str, row: &Insert) -> Result<Enqueued, OutboxError> {
    crate::store::schema::check_prefix(prefix)?;
    enqueue_in(conn, &Sql::cached(prefix), row, None)
        .map(|(done, _)| done)
        .map_err(|e| super::refusal(&e).unwrap_or_else(|| unavailable(e)))
}

/// The enqueue; with `lease`, the event is inserted in flight (attempt 1,
/// leased) and returned for its first attempt, unless it is a duplicate,
/// is held by a coalescing window, or its origin's breaker is open.
///
/// Every refusal (a key taken by another payload or destination, a
/// channel not active) comes before the first write, so the store's
/// writer runs it without a savepoint of its own.
pub(super) fn enqueue_in(
    conn: &Connection,
    q: &Sql,
    row: &Insert,
    lease: Option<&LeaseGrant>,
) -> rusqlite::Result<(Enqueued, Option<Claimed>)> {
    if let Some(channel) = &row.channel_id {
        super::channels::check_in(conn, q, channel)?;
    }
    let held = row.coalescing_window_ms > 0;
    if held {
        // A duplicate must be found before it could supersede anything.
        if let Some(done) = duplicate(conn, q, row)? {
            return Ok((done, None));
        }
    }
    let now = row.enqueued_at_ms;
    let mut next_attempt_at = now.saturating_add(row.coalescing_window_ms);
    let mut superseded = None;
    if let (Some(kind), Some(key), true) = (&row.notification_type, &row.coalescing_key, held) {
        let older: Option<(String, i64)> = conn
            .prepare_cached(&q.held)?
            .query_row(params![row.url, kind, key, now], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((old, hold_until)) = older {
            conn.prepare_cached(&q.supersede)?
                .execute(params![old, row.id.as_str(), now])?;
            // The window is fixed from the first held event: the newest
            // one goes out when the first would have.
            next_attempt_at = hold_until;
            superseded = Some(EventId::from_stored(old));
        }
    }
    let lease = match lease {
        Some(grant) if !held => {
            let open: Option<i64> = conn
                .prepare_cached(&q.breaker_open)?
                .query_row(params![row.origin], |r| r.get(0))
                .optional()?;
            (open.unwrap_or(0) == 0).then_some(grant)
        }
        _ => None,
    };
    let inserted = conn.prepare_cached(&q.insert)?.execute(params![
        row.id.as_str(),
        row.signing_scope,
        row.idempotency_key,
        &row.fingerprint[..],
        row.body,
        i64::try_from(row.body_size).unwrap_or(i64::MAX),
        row.key_id,
        row.notification_type,
        row.notification_id,
        row.subscriber_id,
        row.sequence_number,
        row.channel_id,
        row.principal,
        row.url,
        row.origin,
        row.operation_id,
        row.auth_scheme,
        row.auth_credentials,
        row.coalescing_key,
        now,
        row.horizon_ms,
        next_attempt_at,
        now.saturating_add(row.horizon_ms),
        lease.map(|l| l.token),
        lease.map(|l| l.owner.as_str()),
        lease.map(|l| l.until_ms),
    ])?;
    if inserted == 0 {
        // The key was taken (the insert ignores conflicts: one statement
        // for the usual case, and no statement journal).
        return match duplicate(conn, q, row)? {
            Some(done) => Ok((done, None)),
            None => Err(rusqlite::Error::QueryReturnedNoRows),
        };
    }
    if !row.resources.is_empty() {
        let mut insert = conn.prepare_cached(&q.resource)?;
        for resource in &row.resources {
            insert.execute(params![resource, row.id.as_str()])?;
        }
    }
    if let Some(channel) = &row.channel_id {
        super::channels::close_after_final_in(conn, q, channel, row)?;
    }
    // A leased row is its attempt's pending record (`attempt_at` set).
    let claimed = lease.map(|grant| leased(row, grant));
    let done = Enqueued {
        id: row.id.clone(),
        idempotency_key: row.idempotency_key.clone(),
        duplicate: false,
        superseded,
    };
    Ok((done, claimed))
}

/// What enqueueing `row` again gives when its key is already stored:
/// the first enqueue's id for the same payload and destination, a
/// refusal otherwise; `None` when the key is free.
fn duplicate(conn: &Connection, q: &Sql, row: &Insert) -> rusqlite::Result<Option<Enqueued>> {
    let existing: Option<(String, Vec<u8>, String)> = conn
        .prepare_cached(&q.existing)?
        .query_row(params![row.signing_scope, row.idempotency_key], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((id, fingerprint, url)) = existing else {
        return Ok(None);
    };
    if fingerprint != row.fingerprint {
        return Err(refuse(OutboxError::KeyConflict {
            scope: row.signing_scope.clone(),
            key: row.idempotency_key.clone(),
        }));
    }
    if url != row.url {
        return Err(refuse(OutboxError::KeyUsedForOtherDestination {
            key: row.idempotency_key.clone(),
        }));
    }
    Ok(Some(Enqueued {
        id: EventId::from_stored(id),
        idempotency_key: row.idempotency_key.clone(),
        duplicate: true,
        superseded: None,
    }))
}

/// The first attempt of `row`, leased by `grant`.
fn leased(row: &Insert, grant: &LeaseGrant) -> Claimed {
    Claimed {
        id: row.id.clone(),
        lease_token: grant.token,
        attempt: 1,
        body: row.body.clone(),
        idempotency_key: row.idempotency_key.clone(),
        destination: OutboxDestination::from_parts(
            row.url.clone(),
            row.operation_id.clone(),
            row.auth_scheme.clone(),
            row.auth_credentials.as_deref(),
        ),
        origin: row.origin.clone(),
        signing_scope: row.signing_scope.clone(),
        notification_type: row.notification_type.clone(),
        notification_id: row.notification_id.clone(),
        subscriber_id: row.subscriber_id.clone(),
        principal: row.principal.clone(),
        deadline_ms: row.enqueued_at_ms.saturating_add(row.horizon_ms),
        probe: false,
        enqueued_at_ms: row.enqueued_at_ms,
    }
}
