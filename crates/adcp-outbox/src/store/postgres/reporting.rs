//! The reporting schedule's streams on PostgreSQL: a compare-and-set of
//! the stream and the enqueue of its report in one transaction.

use super::{enqueue_existing, enqueue_statements, pg, EnqueueSql};
use crate::error::OutboxError;
use crate::store::{Insert, StreamRow, StreamUpdate};
use tokio_postgres::{Client, Row};

const COLUMNS: &str = "id, registration, state, version, next_check_at";

fn row(r: &Row) -> Result<StreamRow, OutboxError> {
    Ok(StreamRow {
        id: r.try_get(0).map_err(pg)?,
        registration: r.try_get(1).map_err(pg)?,
        state: r.try_get(2).map_err(pg)?,
        version: r.try_get(3).map_err(pg)?,
        next_check_at: r.try_get(4).map_err(pg)?,
    })
}

pub(super) async fn get(client: &Client, q: &str, id: &str) -> Result<Option<StreamRow>, OutboxError> {
    let found = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM {q}report_streams WHERE id = $1"),
            &[&id],
        )
        .await
        .map_err(pg)?;
    found.as_ref().map(row).transpose()
}

pub(super) async fn create(client: &Client, q: &str, new: &StreamRow, now_ms: i64) -> Result<StreamRow, OutboxError> {
    client
        .execute(
            &format!(
                "INSERT INTO {q}report_streams (id, registration, state, version, next_check_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING"
            ),
            &[
                &new.id,
                &new.registration,
                &new.state,
                &new.version,
                &new.next_check_at,
                &now_ms,
            ],
        )
        .await
        .map_err(pg)?;
    get(client, q, &new.id)
        .await?
        .ok_or_else(|| OutboxError::Unavailable("postgres: the stream vanished after its insert".to_owned()))
}

pub(super) async fn due(client: &Client, q: &str, now_ms: i64, limit: usize) -> Result<Vec<StreamRow>, OutboxError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    client
        .query(
            &format!(
                "SELECT {COLUMNS} FROM {q}report_streams WHERE next_check_at IS NOT NULL AND next_check_at <= $1
                 ORDER BY next_check_at LIMIT $2"
            ),
            &[&now_ms, &limit],
        )
        .await
        .map_err(pg)?
        .iter()
        .map(row)
        .collect()
}

async fn rollback<T>(client: &Client, e: OutboxError) -> Result<T, OutboxError> {
    let _ = client.batch_execute("ROLLBACK").await;
    Err(e)
}

/// The compare-and-set and the enqueue, committed together: `false` when
/// the stream was no longer at the expected version (nothing changed).
pub(super) async fn advance(
    client: &Client,
    q: &str,
    channel: &str,
    update: &StreamUpdate,
    event: Option<&Insert>,
) -> Result<bool, OutboxError> {
    client.batch_execute("BEGIN").await.map_err(pg)?;
    if let Some(channel_id) = event.and_then(|e| e.channel_id.as_deref()) {
        if let Err(e) = super::channels::check(client, q, channel_id).await {
            return rollback(client, e).await;
        }
    }
    let changed = client
        .execute(
            &format!(
                "UPDATE {q}report_streams SET registration = COALESCE($3, registration), state = $4,
                     version = $2 + 1, next_check_at = $5, updated_at = $6
                 WHERE id = $1 AND version = $2"
            ),
            &[
                &update.id,
                &update.expected_version,
                &update.registration,
                &update.state,
                &update.next_check_at,
                &update.now_ms,
            ],
        )
        .await;
    match changed {
        Ok(0) => {
            let _ = client.batch_execute("ROLLBACK").await;
            return Ok(false);
        }
        Ok(_) => {}
        Err(e) => return rollback(client, pg(e)).await,
    }
    if let Some(event) = event {
        let (insert, existing, resources) = (
            super::S::Insert.text(q),
            super::S::Existing.text(q),
            super::S::Resources.text(q),
        );
        // The wake-up after the commit, as for an enqueue.
        let sql = EnqueueSql {
            insert: insert.as_str(),
            existing: existing.as_str(),
            resources: resources.as_str(),
            notify: None,
        };
        let done = match enqueue_statements(client, &sql, channel, event).await {
            Ok(Some(_)) => super::channels::close_after_final(client, q, event).await,
            Ok(None) => enqueue_existing(client, sql.existing, event).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            return rollback(client, e).await;
        }
    }
    client.batch_execute("COMMIT").await.map_err(pg)?;
    if let Some(event) = event {
        let id = event.id.as_str();
        if let Err(e) = client
            .execute(&super::S::NotifyInserted.text(q), &[&channel, &id])
            .await
        {
            tracing::debug!(error = %e, "outbox NOTIFY after a report's enqueue failed");
        }
    }
    Ok(true)
}

pub(super) async fn channel_busy(client: &Client, q: &str, channel: &str) -> Result<bool, OutboxError> {
    client
        .query_one(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM {q}events WHERE channel_id = $1 AND state IN ('pending', 'in_flight'))"
            ),
            &[&channel],
        )
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)
}
