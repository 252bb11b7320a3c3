//! Channels on PostgreSQL: a channel's write and what it does to its
//! events in one transaction, and the enqueue's check of the event's
//! channel (`FOR SHARE`, so a pause or a close waits for the enqueues
//! that saw the channel active, and later ones see it changed).

use super::{enqueue_existing, enqueue_statements, pg, EnqueueSql, S};
use crate::channels::ChannelState;
use crate::error::OutboxError;
use crate::id::EventId;
use crate::store::{ChannelRow, ChannelWrite, Enqueued, Insert, Unattempted};
use tokio_postgres::{Client, GenericClient};

pub(super) async fn get(client: &Client, q: &str, id: &str) -> Result<Option<ChannelRow>, OutboxError> {
    let row = client
        .query_opt(
            &format!(
                "SELECT id, kind, registration, fingerprint, proven, state, version FROM {q}channels WHERE id = $1"
            ),
            &[&id],
        )
        .await
        .map_err(pg)?;
    row.map(|r| {
        Ok(ChannelRow {
            id: r.try_get(0).map_err(pg)?,
            kind: r.try_get(1).map_err(pg)?,
            registration: r.try_get(2).map_err(pg)?,
            fingerprint: r.try_get(3).map_err(pg)?,
            proven: r.try_get(4).map_err(pg)?,
            state: r.try_get(5).map_err(pg)?,
            version: r.try_get(6).map_err(pg)?,
        })
    })
    .transpose()
}

/// Refuses an event for a channel that does not take events now, holding
/// the channel's row shared until the caller's transaction ends.
pub(super) async fn check<C: GenericClient + Sync>(c: &C, q: &str, channel: &str) -> Result<(), OutboxError> {
    let state: Option<String> = c
        .query_opt(
            &format!("SELECT state FROM {q}channels WHERE id = $1 FOR SHARE"),
            &[&channel],
        )
        .await
        .map_err(pg)?
        .map(|r| r.try_get(0))
        .transpose()
        .map_err(pg)?;
    match state.as_deref().map(ChannelState::parse) {
        None | Some(Some(ChannelState::Active)) => Ok(()),
        Some(state) => Err(OutboxError::ChannelNotActive {
            channel: channel.to_owned(),
            state: state.unwrap_or(ChannelState::Closed),
        }),
    }
}

/// A registered `reporting_webhook` channel closes with its `final`
/// report, in the transaction that enqueues it.
pub(super) async fn close_after_final<C: GenericClient + Sync>(
    c: &C,
    q: &str,
    row: &Insert,
) -> Result<(), OutboxError> {
    let Some(channel) = &row.channel_id else { return Ok(()) };
    if !crate::channels::closes_channel(channel, row.notification_type.as_deref()) {
        return Ok(());
    }
    c.execute(
        &format!(
            "UPDATE {q}channels SET state = 'closed', version = version + 1, updated_at = $2
             WHERE id = $1 AND state <> 'closed'"
        ),
        &[channel, &row.enqueued_at_ms],
    )
    .await
    .map(|_| ())
    .map_err(pg)
}

async fn rollback<T>(client: &Client, e: OutboxError) -> Result<T, OutboxError> {
    let _ = client.batch_execute("ROLLBACK").await;
    Err(e)
}

/// An enqueue whose event names a channel: the check and the insert in one
/// transaction (not pipelined: the check decides).
pub(super) async fn enqueue_checked(
    client: &Client,
    q: &str,
    channel_name: &str,
    row: &Insert,
) -> Result<Enqueued, OutboxError> {
    let Some(channel) = &row.channel_id else {
        return Err(OutboxError::Unavailable("postgres: no channel to check".to_owned()));
    };
    client.batch_execute("BEGIN").await.map_err(pg)?;
    if let Err(e) = check(client, q, channel).await {
        return rollback(client, e).await;
    }
    let mut done = insert(client, q, channel_name, row).await;
    if done.as_ref().is_ok_and(|d| !d.duplicate) {
        if let Err(e) = close_after_final(client, q, row).await {
            done = Err(e);
        }
    }
    match done {
        Ok(done) => {
            client.batch_execute("COMMIT").await.map_err(pg)?;
            Ok(done)
        }
        Err(e) => rollback(client, e).await,
    }
}

async fn insert(client: &Client, q: &str, channel_name: &str, row: &Insert) -> Result<Enqueued, OutboxError> {
    let (insert, existing, resources) = (S::Insert.text(q), S::Existing.text(q), S::Resources.text(q));
    let sql = EnqueueSql {
        insert: insert.as_str(),
        existing: existing.as_str(),
        resources: resources.as_str(),
        notify: None,
    };
    match enqueue_statements(client, &sql, channel_name, row).await? {
        Some(done) => Ok(done),
        None => enqueue_existing(client, sql.existing, row).await,
    }
}

pub(super) async fn write(
    client: &Client,
    q: &str,
    channel_name: &str,
    w: &ChannelWrite,
) -> Result<Option<u64>, OutboxError> {
    let r = &w.row;
    client.batch_execute("BEGIN").await.map_err(pg)?;
    let changed = if w.create {
        client
            .execute(
                &format!(
                    "INSERT INTO {q}channels (id, kind, registration, fingerprint, proven, state, version, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, 0, $7) ON CONFLICT (id) DO NOTHING"
                ),
                &[
                    &r.id,
                    &r.kind,
                    &r.registration,
                    &r.fingerprint,
                    &r.proven,
                    &r.state,
                    &w.now_ms,
                ],
            )
            .await
    } else {
        client
            .execute(
                &format!(
                    "UPDATE {q}channels SET registration = $3, fingerprint = $4, proven = $5, state = $6,
                         version = $2 + 1, updated_at = $7
                     WHERE id = $1 AND version = $2"
                ),
                &[
                    &r.id,
                    &r.version,
                    &r.registration,
                    &r.fingerprint,
                    &r.proven,
                    &r.state,
                    &w.now_ms,
                ],
            )
            .await
    };
    match changed {
        Ok(0) => {
            let _ = client.batch_execute("ROLLBACK").await;
            return Ok(None);
        }
        Ok(_) => {}
        Err(e) => return rollback(client, pg(e)).await,
    }
    match apply(client, q, channel_name, w).await {
        Ok(replaced) => {
            client.batch_execute("COMMIT").await.map_err(pg)?;
            Ok(Some(replaced))
        }
        Err(e) => rollback(client, e).await,
    }
}

async fn apply(client: &Client, q: &str, channel_name: &str, w: &ChannelWrite) -> Result<u64, OutboxError> {
    let id = &w.row.id;
    if let Some(reason) = &w.withdraw {
        client
            .execute(
                &format!(
                    "UPDATE {q}events SET state = 'refused', reason = $2, finished_at = $3
                     WHERE channel_id = $1 AND state = 'pending'"
                ),
                &[id, reason, &w.now_ms],
            )
            .await
            .map_err(pg)?;
    }
    if w.flush_held {
        client
            .execute(
                &format!(
                    "UPDATE {q}events SET next_attempt_at = $2
                     WHERE channel_id = $1 AND state = 'pending' AND attempts = 0 AND next_attempt_at > $2"
                ),
                &[id, &w.now_ms],
            )
            .await
            .map_err(pg)?;
    }
    let mut replaced = 0;
    for (old, new) in &w.replace {
        let taken = client
            .execute(
                &format!(
                    "UPDATE {q}events SET state = 'superseded', superseded_by = $2, finished_at = $3,
                         reason = 'rebuilt for the channel''s new registration'
                     WHERE id = $1 AND channel_id = $4 AND state = 'pending' AND attempts = 0"
                ),
                &[&old.as_str(), &new.id.as_str(), &w.now_ms, id],
            )
            .await
            .map_err(pg)?;
        if taken == 0 {
            continue;
        }
        insert(client, q, channel_name, new).await?;
        client
            .execute(
                &format!(
                    "INSERT INTO {q}resources (resource, event_id)
                     SELECT resource, $2 FROM {q}resources WHERE event_id = $1 ON CONFLICT DO NOTHING"
                ),
                &[&old.as_str(), &new.id.as_str()],
            )
            .await
            .map_err(pg)?;
        replaced += 1;
    }
    Ok(replaced)
}

pub(super) async fn unattempted(
    client: &Client,
    q: &str,
    channel: &str,
    limit: usize,
) -> Result<Vec<Unattempted>, OutboxError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    client
        .query(
            &format!(
                "SELECT id, body, key_id, signing_scope, principal, coalescing_key, next_attempt_at FROM {q}events
                 WHERE channel_id = $1 AND state = 'pending' AND attempts = 0 ORDER BY enqueued_at LIMIT $2"
            ),
            &[&channel, &limit],
        )
        .await
        .map_err(pg)?
        .iter()
        .map(|r| {
            Ok(Unattempted {
                id: EventId::from_stored(r.try_get(0).map_err(pg)?),
                body: r.try_get(1).map_err(pg)?,
                key_id: r.try_get(2).map_err(pg)?,
                signing_scope: r.try_get(3).map_err(pg)?,
                principal: r.try_get(4).map_err(pg)?,
                coalescing_key: r.try_get(5).map_err(pg)?,
                next_attempt_at: r.try_get(6).map_err(pg)?,
            })
        })
        .collect()
}
