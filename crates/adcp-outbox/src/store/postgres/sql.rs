//! The statements of the PostgreSQL outbox, one text per [`S`], for a
//! table qualifier `q` (`schema.prefix`, or a bare prefix resolved through
//! the session's `search_path`).
//!
//! The semantics are those of the SQLite backend's statements, with
//! PostgreSQL's spellings (`GREATEST` for the scalar `MAX`, arrays and
//! `unnest` for `json_each` and for batches) and row locks where SQLite
//! relies on its single writer.

use tokio_postgres::{Client, Statement};

/// One statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum S {
    /// The enqueue: coalescing lookup (locked), insert (idempotent),
    /// supersede, in one statement.
    Insert,
    /// The row holding a key (after a conflicting insert).
    Existing,
    /// The resources of a just-inserted event.
    Resources,
    /// `pg_notify` when the event was inserted.
    NotifyInserted,
    /// `pg_notify`, always.
    Notify,
    /// Expired leases back to pending, their pending records closed.
    Stale,
    /// The probes due: the open breakers whose probe is due (locked,
    /// skipping locked rows), one event for each (locked, skipping locked
    /// rows), preferring an event already attempted.
    Probes,
    /// Due candidates of origins whose breaker is not open (locked,
    /// skipping locked rows).
    Candidates,
    /// The leases of the chosen candidates, their pending records and the
    /// probes' breakers.
    Lease,
    /// The current leases among a finish batch, locked in id order.
    Fence,
    /// Placeholder breaker rows (so they can be locked).
    EnsureBreakers,
    /// The breakers of a finish batch's origins, locked in origin order.
    LockBreakers,
    /// Undone attempts: their pending records.
    UndoActivity,
    /// Undone attempts: their events.
    UndoEvents,
    /// Finished attempts: their events.
    DoneEvents,
    /// Finished attempts: their records.
    DoneActivity,
    /// Breakers back to the default state.
    DeleteBreakers,
    /// Breakers changed.
    SaveBreakers,
    /// The pending events of origins whose breaker (re)opened, pushed back
    /// to its retry time.
    PushBack,
    /// Pending events past their horizon.
    Expire,
    /// When something next becomes due.
    NextDue,
    /// One event.
    Get,
    /// Events, newest first.
    List,
    /// A redriven event's row, locked.
    RedriveLock,
    /// A redriven event back to pending.
    Redrive,
    /// Records of a principal.
    ActivityPrincipal,
    /// Records of a principal and a resource.
    ActivityResource,
    /// Records of a URL.
    ActivityUrl,
    /// Purge: records.
    PurgeActivity,
    /// Purge: events.
    PurgeEvents,
    /// Purge: resources of nothing.
    PurgeResources,
    /// Purge: idle breakers.
    PurgeBreakers,
    /// Stats: events per state.
    StatsStates,
    /// Stats: the oldest pending event.
    StatsOldest,
    /// Stats: open breakers.
    StatsOpen,
}

impl S {
    /// Every statement, in the order of [`Statements`].
    pub(super) const ALL: [Self; 35] = [
        Self::Insert,
        Self::Existing,
        Self::Resources,
        Self::NotifyInserted,
        Self::Notify,
        Self::Stale,
        Self::Probes,
        Self::Candidates,
        Self::Lease,
        Self::Fence,
        Self::EnsureBreakers,
        Self::LockBreakers,
        Self::UndoActivity,
        Self::UndoEvents,
        Self::DoneEvents,
        Self::DoneActivity,
        Self::DeleteBreakers,
        Self::SaveBreakers,
        Self::PushBack,
        Self::Expire,
        Self::NextDue,
        Self::Get,
        Self::List,
        Self::RedriveLock,
        Self::Redrive,
        Self::ActivityPrincipal,
        Self::ActivityResource,
        Self::ActivityUrl,
        Self::PurgeActivity,
        Self::PurgeEvents,
        Self::PurgeResources,
        Self::PurgeBreakers,
        Self::StatsStates,
        Self::StatsOldest,
        Self::StatsOpen,
    ];

    /// The statement's text for tables `{q}events`, `{q}activity`, ….
    pub(super) fn text(self, q: &str) -> String {
        match self {
            Self::Insert => format!(
                "WITH held AS MATERIALIZED (
    SELECT id, next_attempt_at FROM {q}events
    WHERE $24::boolean AND url = $14::text AND notification_type = $8::text AND coalescing_key = $19::text
      AND state = 'pending' AND attempts = 0 AND next_attempt_at > $20::bigint
    ORDER BY next_attempt_at LIMIT 1
    FOR UPDATE
), ins AS (
    INSERT INTO {q}events (id, signing_scope, idempotency_key, fingerprint, body, body_size, key_id,
        notification_type, notification_id, subscriber_id, sequence_number, channel_id, principal,
        url, origin, operation_id, auth_scheme, auth_credentials, coalescing_key, state, attempts,
        enqueued_at, horizon_ms, next_attempt_at, deadline_at)
    VALUES ($1::text, $2::text, $3::text, $4::bytea, $5::bytea, $6::bigint, $7::text, $8::text, $9::text,
        $10::text, $11::bigint, $12::text, $13::text, $14::text, $15::text, $16::text, $17::text, $18::bytea,
        $19::text, 'pending', 0, $20::bigint, $21::bigint,
        COALESCE((SELECT next_attempt_at FROM held), $22::bigint), $23::bigint)
    ON CONFLICT (signing_scope, idempotency_key) DO NOTHING
    RETURNING id
), sup AS (
    UPDATE {q}events e SET state = 'superseded', superseded_by = ins.id, finished_at = $20::bigint,
        reason = 'replaced by a newer event inside its coalescing window'
    FROM held, ins WHERE e.id = held.id
    RETURNING e.id
)
SELECT (SELECT id FROM ins) AS inserted, (SELECT id FROM sup) AS superseded"
            ),
            Self::Existing => format!(
                "SELECT id, fingerprint, url FROM {q}events WHERE signing_scope = $1::text AND idempotency_key = $2::text"
            ),
            Self::Resources => format!(
                "INSERT INTO {q}resources (resource, event_id)
SELECT DISTINCT r, $2::text FROM unnest($1::text[]) AS r
WHERE EXISTS (SELECT 1 FROM {q}events WHERE id = $2::text)
ON CONFLICT DO NOTHING"
            ),
            Self::NotifyInserted => {
                format!("SELECT pg_notify($1::text, '') FROM {q}events WHERE id = $2::text")
            }
            Self::Notify => "SELECT pg_notify($1::text, '')".to_owned(),
            Self::Stale => format!(
                "WITH ev AS (
    UPDATE {q}events SET state = 'pending', lease_token = NULL, lease_owner = NULL, lease_until = NULL,
        probe = 0, next_attempt_at = $1::bigint, last_status = 'connection_error', last_http_status = NULL,
        last_error = $2::text
    WHERE id IN (SELECT id FROM {q}events WHERE state = 'in_flight' AND lease_until <= $1::bigint
                 FOR UPDATE SKIP LOCKED)
      AND state = 'in_flight' AND lease_until <= $1::bigint
    RETURNING id, attempts
), act AS (
    UPDATE {q}activity a SET status = 'connection_error', completed_at = $1::bigint, error_message = $2::text
    FROM ev WHERE a.event_id = ev.id AND a.attempt = ev.attempts AND a.status = 'pending'
)
SELECT count(*) FROM ev"
            ),
            // A breaker's row stays locked until the claim commits its probe's
            // lease (and `probe_until`): of two claims at once, the one that
            // skips it sends no probe. The due breakers with an event due are
            // locked lazily, as the limit pulls them (the longest waiting
            // first; an open breaker with nothing due, a dead destination's
            // whose events expired, is left alone); each gets its own lookup
            // of one event on `events_origin_pending`, an event already
            // attempted first (a receiver refusing every first delivery
            // would fail every fresh probe).
            Self::Probes => format!(
                "WITH due AS MATERIALIZED (
    SELECT b.origin FROM {q}breakers b
    WHERE b.open = 1 AND b.retry_at <= $1::bigint AND b.probe_until <= $1::bigint
      AND b.origin <> ALL($2::text[])
      AND EXISTS (SELECT 1 FROM {q}events x
                  WHERE x.origin = b.origin AND x.state = 'pending' AND x.next_attempt_at <= $1::bigint)
    ORDER BY b.retry_at
    FOR UPDATE OF b SKIP LOCKED
)
SELECT e.id, due.origin, e.url
FROM due CROSS JOIN LATERAL (
    SELECT id, url FROM {q}events
    WHERE origin = due.origin AND state = 'pending' AND next_attempt_at <= $1::bigint AND deadline_at > $1::bigint
    ORDER BY (attempts = 0), next_attempt_at LIMIT 1
    FOR UPDATE SKIP LOCKED
) e
LIMIT $3::bigint"
            ),
            // Every open breaker's origin is left out, probe due or not: its
            // probe is chosen by `Probes`, and an open breaker another claim
            // holds locked blocks its origin.
            Self::Candidates => format!(
                "SELECT e.id, e.origin, e.url
FROM {q}events e
WHERE e.state = 'pending' AND e.next_attempt_at <= $1::bigint AND e.deadline_at > $1::bigint
  AND e.origin <> ALL($2::text[]) AND e.origin NOT IN (SELECT origin FROM {q}breakers WHERE open = 1)
ORDER BY e.next_attempt_at LIMIT $3::bigint
FOR UPDATE OF e SKIP LOCKED"
            ),
            Self::Lease => format!(
                "WITH u AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[]) AS u(id, token, probe, redacted)
), c AS (
    UPDATE {q}events e SET state = 'in_flight', attempts = e.attempts + 1, lease_token = u.token,
        lease_owner = $5::text, lease_until = $6::bigint, probe = u.probe,
        deadline_at = CASE WHEN e.first_attempt_at IS NULL THEN $7::bigint + e.horizon_ms ELSE e.deadline_at END,
        first_attempt_at = COALESCE(e.first_attempt_at, $7::bigint)
    FROM u WHERE e.id = u.id AND e.state = 'pending'
    RETURNING e.id, e.attempts, e.body, e.idempotency_key, e.url, e.operation_id, e.auth_scheme,
        e.auth_credentials, e.signing_scope, e.notification_type, e.notification_id, e.subscriber_id,
        e.principal, e.deadline_at, e.enqueued_at, e.origin, e.probe, e.lease_token, e.sequence_number,
        e.body_size, u.redacted
), a AS (
    INSERT INTO {q}activity (event_id, attempt, idempotency_key, notification_id, notification_type,
        subscriber_id, sequence_number, principal, target_url, url, fired_at, completed_at, status,
        http_status_code, response_time_ms, payload_size_bytes, error_message)
    SELECT id, attempts, idempotency_key, notification_id, notification_type, subscriber_id, sequence_number,
        principal, url, redacted, $7::bigint, NULL, 'pending', NULL, NULL, body_size, NULL
    FROM c WHERE notification_type IS NOT NULL
    ON CONFLICT (event_id, attempt) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key,
        notification_id = EXCLUDED.notification_id, notification_type = EXCLUDED.notification_type,
        subscriber_id = EXCLUDED.subscriber_id, sequence_number = EXCLUDED.sequence_number,
        principal = EXCLUDED.principal, target_url = EXCLUDED.target_url, url = EXCLUDED.url,
        fired_at = EXCLUDED.fired_at, completed_at = NULL, status = 'pending', http_status_code = NULL,
        response_time_ms = NULL, payload_size_bytes = EXCLUDED.payload_size_bytes, error_message = NULL
), b AS (
    UPDATE {q}breakers SET probe_until = $6::bigint WHERE origin IN (SELECT origin FROM c WHERE probe <> 0)
)
SELECT id, attempts, body, idempotency_key, url, operation_id, auth_scheme, auth_credentials, signing_scope,
    notification_type, notification_id, subscriber_id, principal, deadline_at, enqueued_at, origin, probe,
    lease_token
FROM c"
            ),
            Self::Fence => format!(
                "SELECT e.id, u.token, e.attempts, e.probe
FROM {q}events e
JOIN unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(id, token, now) ON e.id = u.id
WHERE e.lease_token = u.token AND e.state = 'in_flight' AND e.lease_until > u.now
ORDER BY e.id
FOR UPDATE OF e"
            ),
            Self::EnsureBreakers => format!(
                "INSERT INTO {q}breakers (origin, failures, open, opened, retry_at, probe_until)
SELECT o, 0, 0, 0, 0, 0 FROM unnest($1::text[]) AS o
ON CONFLICT (origin) DO NOTHING"
            ),
            Self::LockBreakers => format!(
                "SELECT origin, failures, open, opened, retry_at, probe_until, failing_since FROM {q}breakers
WHERE origin = ANY($1::text[]) ORDER BY origin FOR UPDATE"
            ),
            Self::UndoActivity => format!(
                "DELETE FROM {q}activity a USING unnest($1::text[], $2::bigint[]) AS u(id, attempt)
WHERE a.event_id = u.id AND a.attempt = u.attempt AND a.status = 'pending'"
            ),
            Self::UndoEvents => format!(
                "UPDATE {q}events e SET state = u.state, attempts = e.attempts - 1, next_attempt_at = u.at,
    lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
    deadline_at = CASE WHEN e.attempts = 1 THEN e.enqueued_at + e.horizon_ms ELSE e.deadline_at END,
    first_attempt_at = CASE WHEN e.attempts = 1 THEN NULL ELSE e.first_attempt_at END,
    reason = u.reason, finished_at = CASE WHEN u.state = 'pending' THEN NULL ELSE u.now END
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]) AS u(id, state, at, reason, now)
WHERE e.id = u.id"
            ),
            Self::DoneEvents => format!(
                "UPDATE {q}events e SET state = u.state, next_attempt_at = COALESCE(u.next, e.next_attempt_at),
    lease_token = NULL, lease_owner = NULL, lease_until = NULL, probe = 0,
    last_status = u.status, last_http_status = u.http, last_error = u.error, reason = u.reason,
    finished_at = CASE WHEN u.state = 'pending' THEN NULL ELSE u.now END
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::bigint[])
    AS u(id, state, next, status, http, error, reason, now)
WHERE e.id = u.id"
            ),
            Self::DoneActivity => format!(
                "UPDATE {q}activity a SET completed_at = u.completed, status = u.status, http_status_code = u.http,
    response_time_ms = u.rt, error_message = u.error
FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::text[])
    AS u(id, attempt, completed, status, http, rt, error)
WHERE a.event_id = u.id AND a.attempt = u.attempt AND a.status = 'pending'"
            ),
            Self::DeleteBreakers => format!("DELETE FROM {q}breakers WHERE origin = ANY($1::text[])"),
            Self::SaveBreakers => format!(
                "INSERT INTO {q}breakers (origin, failures, open, opened, retry_at, probe_until, failing_since)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
ON CONFLICT (origin) DO UPDATE SET failures = EXCLUDED.failures, open = EXCLUDED.open,
    opened = EXCLUDED.opened, retry_at = EXCLUDED.retry_at, probe_until = EXCLUDED.probe_until,
    failing_since = EXCLUDED.failing_since"
            ),
            // `next_attempt_at = GREATEST(next_attempt_at, at)`, without
            // rewriting the rows already later; `$3`: the batch's own events
            // (their times were set by the batch).
            Self::PushBack => format!(
                "UPDATE {q}events e SET next_attempt_at = u.at
FROM unnest($1::text[], $2::bigint[]) AS u(origin, at)
WHERE e.origin = u.origin AND e.state = 'pending' AND e.next_attempt_at < u.at AND e.id <> ALL($3::text[])"
            ),
            Self::Expire => format!(
                "UPDATE {q}events SET state = 'expired', finished_at = $1::bigint,
    reason = CASE WHEN attempts = 0 THEN 'retry horizon passed before any attempt'
                  ELSE 'retry horizon passed' END
WHERE id IN (SELECT id FROM {q}events WHERE state = 'pending' AND deadline_at <= $1::bigint
             FOR UPDATE SKIP LOCKED)
  AND state = 'pending' AND deadline_at <= $1::bigint"
            ),
            Self::NextDue => format!(
                "SELECT MIN(t) FROM (
    SELECT MIN(next_attempt_at) AS t FROM {q}events
      WHERE state = 'pending' AND origin NOT IN (SELECT origin FROM {q}breakers WHERE open = 1)
    UNION ALL SELECT MIN(deadline_at) FROM {q}events WHERE state = 'pending'
    UNION ALL SELECT MIN(lease_until) FROM {q}events WHERE state = 'in_flight'
    UNION ALL SELECT MIN(GREATEST(b.retry_at, b.probe_until)) FROM {q}breakers b
      WHERE b.open = 1 AND EXISTS (SELECT 1 FROM {q}events e WHERE e.origin = b.origin AND e.state = 'pending')
) AS due"
            ),
            Self::Get => format!("SELECT {VIEW_COLUMNS} FROM {q}events WHERE id = $1::text"),
            Self::List => format!(
                "SELECT {VIEW_COLUMNS} FROM {q}events
WHERE ($1::text IS NULL OR state = $1::text) AND ($2::text IS NULL OR id < $2::text)
ORDER BY id DESC LIMIT $3::bigint"
            ),
            Self::RedriveLock => format!(
                "SELECT state, first_attempt_at, enqueued_at, horizon_ms FROM {q}events WHERE id = $1::text FOR UPDATE"
            ),
            Self::Redrive => format!(
                "UPDATE {q}events SET state = 'pending', next_attempt_at = $2::bigint, deadline_at = $3::bigint,
    reason = NULL, finished_at = NULL
WHERE id = $1::text
RETURNING {VIEW_COLUMNS}"
            ),
            Self::ActivityPrincipal => format!(
                "SELECT {RECORD_COLUMNS} FROM {q}activity a WHERE a.principal = $1::text {ORDER} $2::bigint"
            ),
            Self::ActivityResource => format!(
                "SELECT {RECORD_COLUMNS} FROM {q}activity a JOIN {q}resources r ON r.event_id = a.event_id
WHERE a.principal = $1::text AND r.resource = $2::text {ORDER} $3::bigint"
            ),
            Self::ActivityUrl => format!(
                "SELECT {RECORD_COLUMNS} FROM {q}activity a WHERE a.target_url = $1::text {ORDER} $2::bigint"
            ),
            Self::PurgeActivity => format!(
                "DELETE FROM {q}activity WHERE completed_at < $1::bigint
    OR (completed_at IS NULL AND fired_at < $1::bigint)"
            ),
            Self::PurgeEvents => format!(
                "DELETE FROM {q}events WHERE finished_at IS NOT NULL AND finished_at < $1::bigint"
            ),
            // NOT EXISTS rather than SQLite's NOT IN: the same rows (the
            // columns are NOT NULL), without a subplan per row on large tables.
            Self::PurgeResources => format!(
                "DELETE FROM {q}resources r
WHERE NOT EXISTS (SELECT 1 FROM {q}events e WHERE e.id = r.event_id)
  AND NOT EXISTS (SELECT 1 FROM {q}activity a WHERE a.event_id = r.event_id)"
            ),
            Self::PurgeBreakers => format!(
                "DELETE FROM {q}breakers b WHERE b.open = 0
  AND NOT EXISTS (SELECT 1 FROM {q}events e WHERE e.origin = b.origin AND e.state IN ('pending', 'in_flight'))"
            ),
            Self::StatsStates => format!("SELECT state, COUNT(*) FROM {q}events GROUP BY state"),
            Self::StatsOldest => format!("SELECT MIN(enqueued_at) FROM {q}events WHERE state = 'pending'"),
            Self::StatsOpen => format!("SELECT COUNT(*) FROM {q}breakers WHERE open = 1"),
        }
    }
}

/// The columns of an [`EventView`](crate::EventView), in the order the reader expects.
pub(super) const VIEW_COLUMNS: &str = "id, idempotency_key, state, attempts, notification_type, notification_id,
    subscriber_id, signing_scope, principal, url, enqueued_at, first_attempt_at, next_attempt_at, deadline_at,
    last_status, last_http_status, last_error, reason, superseded_by, finished_at";

/// The columns of an [`ActivityRecord`](crate::ActivityRecord), in the order the reader expects.
const RECORD_COLUMNS: &str = "a.idempotency_key, a.notification_id, a.subscriber_id, a.fired_at, a.completed_at,
    a.notification_type, a.sequence_number, a.attempt, a.status, a.url, a.http_status_code, a.response_time_ms,
    a.payload_size_bytes, a.error_message";

/// Newest first.
const ORDER: &str = "ORDER BY a.fired_at DESC, a.attempt DESC LIMIT";

/// Every statement prepared on one connection: a call then costs one
/// round trip per pipelined burst, not a parse round trip per statement.
pub(super) struct Statements(Vec<Statement>);

impl Statements {
    /// Prepares every statement for qualifier `q` on `client`, pipelined.
    pub(super) async fn prepare(client: &Client, q: &str) -> Result<Self, tokio_postgres::Error> {
        let texts: Vec<String> = S::ALL.iter().map(|s| s.text(q)).collect();
        let prepared = futures_util::future::try_join_all(texts.iter().map(|t| client.prepare(t))).await?;
        Ok(Self(prepared))
    }

    /// One statement (all are prepared, in [`S::ALL`] order).
    pub(super) fn get(&self, s: S) -> &Statement {
        // `ALL` lists the variants in declaration order, so the
        // discriminant is the index.
        &self.0[s as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::S;

    #[test]
    fn all_lists_every_statement_in_declaration_order() {
        for (i, s) in S::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
    }
}
