//! The PostgreSQL outbox, for a fleet of relays: the same tables and
//! semantics as the SQLite backend, with row locks (`FOR UPDATE SKIP
//! LOCKED`) so any number of processes claim concurrently, batched
//! statements pipelined on prepared connections, and `LISTEN`/`NOTIFY`
//! wake-ups across processes.

mod channels;
mod listen;
mod reporting;
mod sql;

use super::schema::{check_prefix, migration, version_table, DEFAULT_TABLE_PREFIX, SCHEMA_VERSION};
use super::{
    lease_token, ActivityQuery, ActivitySelector, ChannelRow, ChannelWrite, ClaimRequest, Claimed, Enqueued,
    EventState, EventView, Finish, Insert, ListFilter, OutboxStats, OutboxStore, Outcome, StreamRow, StreamUpdate,
    Unattempted, ABANDONED,
};
use crate::activity::{clip_message, redact_url, ActivityRecord, ActivityStatus};
use crate::breaker::{BreakerPolicy, BreakerState, Health};
use crate::error::OutboxError;
use crate::event::OutboxDestination;
use crate::id::EventId;
use futures_util::future::{join, join3, join4};
use sql::{Statements, S};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{Mutex, Notify};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, NoTls, Row, ToStatement, Transaction};

/// Settings of a [`PostgresOutbox`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOutboxOptions {
    /// The prefix of the outbox's tables (default `adcp_outbox_`; see
    /// [`check_prefix`]). The wake-up channel is `{prefix}wakeup`.
    pub table_prefix: String,
    /// The schema holding the tables (`[a-z_][a-z0-9_]*`, default
    /// `public`); created if missing.
    pub schema: String,
    /// Connections kept open (default 8), besides the listening one.
    pub pool_size: usize,
    /// Bound on every operation, connecting and waiting for a pooled
    /// connection included (default 5 s).
    pub op_timeout: Duration,
    /// The destination breakers' policy.
    pub breaker: BreakerPolicy,
}

impl Default for PostgresOutboxOptions {
    fn default() -> Self {
        Self {
            table_prefix: DEFAULT_TABLE_PREFIX.to_owned(),
            schema: "public".to_owned(),
            pool_size: 8,
            op_timeout: Duration::from_secs(5),
            breaker: BreakerPolicy::default(),
        }
    }
}

/// The outbox in PostgreSQL: every operation is one transaction committed
/// before the call returns, so an acknowledged enqueue or outcome is as
/// durable as the server's `synchronous_commit`.
///
/// Any number of relays may share the tables: claims lock the events they
/// take (`FOR UPDATE SKIP LOCKED`, so two processes never take one event
/// and never wait for each other), a breaker's row is locked while its
/// probe is chosen (one probe across the fleet), and outcomes are fenced by
/// their lease's token. An open breaker keeps its origin out of the claims'
/// scan of due events: its pending events are pushed back to its retry time
/// when it opens (and when a failed probe reopens it), and its probe is
/// looked up on its own, preferring an event already attempted. An enqueue
/// by any process sends `NOTIFY {prefix}wakeup` once committed (an
/// application's transaction through [`enqueue_postgres`] at its commit;
/// this store's own enqueue and redrive in a statement right after theirs,
/// so that their commits are not serialized behind the server's
/// notification lock), which every store's
/// [`wakeups`](OutboxStore::wakeups) receives through a listening
/// connection of its own (reconnected with backoff when lost; a channel is
/// per prefix, so stores of another schema with the same prefix only see
/// spurious wake-ups).
///
/// Connections come from a small built-in pool, each with the outbox's
/// statements prepared once (a pooler in front of the server must support
/// protocol-level prepared statements, as PgBouncer does from 1.21); a
/// connection is replaced after any failed call, and every call is bounded
/// by [`PostgresOutboxOptions::op_timeout`]: when the server is
/// unreachable the call fails closed with [`OutboxError::Unavailable`]
/// and the store recovers by itself once the server is back.
///
/// An enqueue is one round trip (`BEGIN`, the statements, `COMMIT` and
/// the wake-up pipelined; one more to read the first event of a key
/// already taken). A claim is two round trips (the expired leases taken
/// back, the due probes and the other origins' due events chosen,
/// pipelined behind `BEGIN`; then one batched lease statement pipelined
/// with `COMMIT`), whatever the number of events or probes; a batch of
/// outcomes is two as well (the fenced rows and their breakers locked;
/// then the batched writes, the push-back of an opened breaker's events,
/// and `COMMIT`).
#[derive(Clone)]
pub struct PostgresOutbox {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    /// `schema.prefix`: what every statement's table names start with.
    qualifier: String,
    options: PostgresOutboxOptions,
    channel: String,
    pool: Vec<Mutex<Option<Conn>>>,
    next: AtomicUsize,
    wake: Arc<Notify>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl std::fmt::Debug for PostgresOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOutbox")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// A pooled connection and the outbox's statements prepared on it.
struct Conn {
    client: Client,
    sql: Statements,
}

fn pg(e: impl std::fmt::Display) -> OutboxError {
    OutboxError::Unavailable(format!("postgres: {e}"))
}

fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && schema.len() <= 63
}

/// Opens a connection to `url`, its driver spawned.
async fn connect_client(url: &str) -> Result<Client, OutboxError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(pg)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "outbox postgres connection closed");
        }
    });
    Ok(client)
}

impl Conn {
    async fn open(url: &str, qualifier: &str) -> Result<Self, OutboxError> {
        let client = connect_client(url).await?;
        let sql = Statements::prepare(&client, qualifier).await.map_err(pg)?;
        Ok(Self { client, sql })
    }
}

/// Creates or migrates the outbox's tables with `prefix`, in the first
/// schema of the session's `search_path` (`public` by default), in one
/// transaction serialized by an advisory lock keyed on the schema and
/// prefix (relays starting at once migrate one after the other). Run it
/// once at start-up before enqueueing with [`enqueue_postgres`] on tables
/// no [`PostgresOutbox`] created ([`PostgresOutbox::connect`] does it for
/// its own).
///
/// # Errors
///
/// [`OutboxError::Schema`] for tables of a newer schema version;
/// [`OutboxError::Config`] for a bad prefix; [`OutboxError::Unavailable`]
/// when the server fails.
pub async fn migrate_postgres(client: &Client, prefix: &str) -> Result<(), OutboxError> {
    check_prefix(prefix)?;
    migrate_in(client, None, prefix).await
}

/// [`migrate_postgres`] in `schema` (created if missing) when given, else
/// in the session's current schema.
async fn migrate_in(client: &Client, schema: Option<&str>, prefix: &str) -> Result<(), OutboxError> {
    client.batch_execute("BEGIN").await.map_err(pg)?;
    let result = migrate_locked(client, schema, prefix).await;
    match result {
        Ok(()) => client.batch_execute("COMMIT").await.map_err(pg),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e)
        }
    }
}

async fn migrate_locked(client: &Client, schema: Option<&str>, p: &str) -> Result<(), OutboxError> {
    match schema {
        Some(s) => {
            let key = format!("adcp_outbox_migrate:{s}.{p}");
            client
                .execute("SELECT 1 FROM pg_advisory_xact_lock(hashtext($1::text))", &[&key])
                .await
                .map_err(pg)?;
            // `CREATE SCHEMA IF NOT EXISTS` needs the CREATE privilege on
            // the database even when the schema exists: only when missing.
            let exists = client
                .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1::text", &[&s])
                .await
                .map_err(pg)?
                .is_some();
            if !exists {
                client
                    .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {s}"))
                    .await
                    .map_err(pg)?;
            }
            // The migration's index names cannot be qualified: its
            // statements resolve in the schema for this transaction only.
            client
                .batch_execute(&format!("SET LOCAL search_path TO {s}"))
                .await
                .map_err(pg)?;
        }
        None => {
            client
                .execute(
                    "SELECT 1 FROM pg_advisory_xact_lock(hashtext(
                        'adcp_outbox_migrate:' || COALESCE(current_schema(), '') || '.' || $1::text))",
                    &[&p],
                )
                .await
                .map_err(pg)?;
        }
    }
    client.batch_execute(&version_table(p, true)).await.map_err(pg)?;
    let current: i64 = client
        .query_one(&format!("SELECT COALESCE(MAX(version), 0) FROM {p}schema_version"), &[])
        .await
        .map_err(pg)?
        .try_get(0)
        .map_err(pg)?;
    if current > SCHEMA_VERSION {
        return Err(OutboxError::Schema(format!(
            "the outbox tables ({p}*) are at version {current}, newer than this build's {SCHEMA_VERSION}"
        )));
    }
    for version in current + 1..=SCHEMA_VERSION {
        let text = migration(version, p, true)
            .ok_or_else(|| OutboxError::Schema(format!("no migration to version {version}")))?;
        if !text.is_empty() {
            client.batch_execute(&text).await.map_err(pg)?;
        }
        let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        client
            .execute(
                &format!("INSERT INTO {p}schema_version (version, applied_at) VALUES ($1, $2)"),
                &[&version, &now],
            )
            .await
            .map_err(pg)?;
    }
    Ok(())
}

/// The enqueue's statements: prepared ones, or texts.
struct EnqueueSql<'a, T: ?Sized> {
    insert: &'a T,
    existing: &'a T,
    resources: &'a T,
    /// `None`: the caller notifies (after its commit).
    notify: Option<&'a T>,
}

/// Runs the enqueue's statements, pipelined, on `c`: `Some` when the row
/// was inserted, `None` when its key is already taken (read it with
/// [`enqueue_existing`]). Changes nothing but the new row (and what it
/// supersedes).
async fn enqueue_statements<C, T>(
    c: &C,
    sql: &EnqueueSql<'_, T>,
    channel: &str,
    row: &Insert,
) -> Result<Option<Enqueued>, OutboxError>
where
    C: GenericClient + Sync,
    T: ToStatement + ?Sized + Sync + Send,
{
    let now = row.enqueued_at_ms;
    let coalesce = row.notification_type.is_some() && row.coalescing_key.is_some() && row.coalescing_window_ms > 0;
    let body_size = i64::try_from(row.body_size).unwrap_or(i64::MAX);
    let fingerprint: &[u8] = &row.fingerprint;
    let next = now.saturating_add(row.coalescing_window_ms);
    let deadline = now.saturating_add(row.horizon_ms);
    let id = row.id.as_str();
    let params: [&(dyn ToSql + Sync); 24] = [
        &id,
        &row.signing_scope,
        &row.idempotency_key,
        &fingerprint,
        &row.body,
        &body_size,
        &row.key_id,
        &row.notification_type,
        &row.notification_id,
        &row.subscriber_id,
        &row.sequence_number,
        &row.channel_id,
        &row.principal,
        &row.url,
        &row.origin,
        &row.operation_id,
        &row.auth_scheme,
        &row.auth_credentials,
        &row.coalescing_key,
        &now,
        &row.horizon_ms,
        &next,
        &deadline,
        &coalesce,
    ];
    let resource_params: [&(dyn ToSql + Sync); 2] = [&row.resources, &id];
    let notify_params: [&(dyn ToSql + Sync); 2] = [&channel, &id];
    let insert = c.query_one(sql.insert, &params);
    let resources = async {
        if row.resources.is_empty() {
            Ok(0)
        } else {
            c.execute(sql.resources, &resource_params).await
        }
    };
    let notify = async {
        match sql.notify {
            Some(notify) => c.execute(notify, &notify_params).await,
            None => Ok(0),
        }
    };
    let (inserted, resources, notify) = join3(insert, resources, notify).await;
    let inserted = inserted.map_err(pg)?;
    resources.map_err(pg)?;
    notify.map_err(pg)?;
    let new: Option<String> = inserted.try_get(0).map_err(pg)?;
    let superseded: Option<String> = inserted.try_get(1).map_err(pg)?;
    Ok(new.map(|new| Enqueued {
        id: EventId::from_stored(new),
        idempotency_key: row.idempotency_key.clone(),
        duplicate: false,
        superseded: superseded.map(EventId::from_stored),
    }))
}

/// The answer for a row whose key is taken: the same payload and
/// destination is a duplicate of the first, else a refusal.
async fn enqueue_existing<C, T>(c: &C, existing: &T, row: &Insert) -> Result<Enqueued, OutboxError>
where
    C: GenericClient + Sync,
    T: ToStatement + ?Sized + Sync + Send,
{
    let found = c
        .query_opt(existing, &[&row.signing_scope, &row.idempotency_key])
        .await
        .map_err(pg)?;
    let Some(found) = found else {
        // Purged between the conflicting insert and this read.
        return Err(OutboxError::Unavailable(
            "postgres: the event holding this key changed concurrently; retry".to_owned(),
        ));
    };
    let id: String = found.try_get(0).map_err(pg)?;
    let fingerprint: Vec<u8> = found.try_get(1).map_err(pg)?;
    let url: String = found.try_get(2).map_err(pg)?;
    if fingerprint != row.fingerprint {
        return Err(OutboxError::KeyConflict {
            scope: row.signing_scope.clone(),
            key: row.idempotency_key.clone(),
        });
    }
    if url != row.url {
        return Err(OutboxError::KeyUsedForOtherDestination {
            key: row.idempotency_key.clone(),
        });
    }
    Ok(Enqueued {
        id: EventId::from_stored(id),
        idempotency_key: row.idempotency_key.clone(),
        duplicate: true,
        superseded: None,
    })
}

/// Enqueues with text statements for tables `{qualifier}…` on `tx`.
async fn enqueue_texts(
    tx: &Transaction<'_>,
    qualifier: &str,
    channel: &str,
    row: &Insert,
) -> Result<Enqueued, OutboxError> {
    let (insert, existing, resources, notify) = (
        S::Insert.text(qualifier),
        S::Existing.text(qualifier),
        S::Resources.text(qualifier),
        S::NotifyInserted.text(qualifier),
    );
    let sql = EnqueueSql {
        insert: insert.as_str(),
        existing: existing.as_str(),
        resources: resources.as_str(),
        notify: Some(notify.as_str()),
    };
    if let Some(named) = &row.channel_id {
        channels::check(tx, qualifier, named).await?;
    }
    match enqueue_statements(tx, &sql, channel, row).await? {
        Some(done) => {
            channels::close_after_final(tx, qualifier, row).await?;
            Ok(done)
        }
        None => enqueue_existing(tx, sql.existing, row).await,
    }
}

/// The wake-up channel of the tables with `prefix`.
fn channel_of(prefix: &str) -> String {
    format!("{prefix}wakeup")
}

/// Enqueues `row` in `tx` (an application's open transaction): the row
/// commits or rolls back with it, and `NOTIFY {prefix}wakeup` goes out at
/// its commit, waking every [`PostgresOutbox`] on these tables. The tables
/// are found through the session's `search_path` (`public` by default;
/// [`PostgresOutbox::enqueue_in_transaction`] names the store's schema).
///
/// A refusal (`KeyConflict`, `KeyUsedForOtherDestination`) leaves the
/// transaction usable and unchanged. The key is race-safe: of two
/// transactions enqueueing one key at once, the second waits for the first
/// and then answers as a duplicate (or a refusal) of it.
///
/// # Errors
///
/// [`OutboxError::KeyConflict`], [`OutboxError::KeyUsedForOtherDestination`],
/// [`OutboxError::Config`] for a bad prefix, or [`OutboxError::Unavailable`]
/// for an SQL failure (then the transaction is aborted: roll it back).
pub async fn enqueue_postgres(tx: &Transaction<'_>, prefix: &str, row: &Insert) -> Result<Enqueued, OutboxError> {
    check_prefix(prefix)?;
    enqueue_texts(tx, prefix, &channel_of(prefix), row).await
}

type Step<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Runs `steps` pipelined: each is first polled (so sent) in order, then
/// all are awaited. The first error, if any.
async fn pipeline(mut steps: Vec<Step<'_>>) -> Result<(), OutboxError> {
    let mut results: Vec<Option<Result<u64, tokio_postgres::Error>>> = steps.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (step, result) in steps.iter_mut().zip(results.iter_mut()) {
            if result.is_none() {
                match step.as_mut().poll(cx) {
                    Poll::Ready(r) => *result = Some(r),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    for result in results.into_iter().flatten() {
        result.map_err(pg)?;
    }
    Ok(())
}

fn breaker_from(row: &Row, first: usize) -> Result<BreakerState, tokio_postgres::Error> {
    let int = |i: usize| row.try_get::<_, i64>(first + i);
    Ok(BreakerState {
        failures: u32::try_from(int(0)?).unwrap_or(u32::MAX),
        open: int(1)? != 0,
        opened: u32::try_from(int(2)?).unwrap_or(u32::MAX),
        retry_at_ms: int(3)?,
        probe_until_ms: int(4)?,
        failing_since_ms: int(5)?,
    })
}

/// One claim: expired leases taken back, the due probes chosen (one event
/// per open breaker whose probe is due, when this process has no attempt
/// in flight to its origin) and the due events of the other origins
/// chosen (pipelined behind `BEGIN`), then the chosen ones leased in one
/// statement pipelined with `COMMIT`: two round trips, probes or not.
/// Probes count against the limit, and come first.
async fn claim_in(client: &Client, sql: &Statements, req: &ClaimRequest) -> Result<Vec<Claimed>, OutboxError> {
    let now = req.now_ms;
    let busy: Vec<&str> = req
        .in_flight
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(o, _)| o.as_str())
        .collect();
    let capped: Vec<&str> = req
        .in_flight
        .iter()
        .filter(|(_, n)| **n >= req.per_origin_cap)
        .map(|(o, _)| o.as_str())
        .collect();
    let limit = i64::try_from(req.limit).unwrap_or(i64::MAX);
    let scan = if req.limit == 0 {
        0
    } else {
        i64::try_from(req.limit.saturating_mul(4).max(64)).unwrap_or(i64::MAX)
    };
    let (begin, stale, due_probes, candidates) = join4(
        client.batch_execute("BEGIN"),
        client.query_one(sql.get(S::Stale), &[&now, &ABANDONED]),
        client.query(sql.get(S::Probes), &[&now, &busy, &limit]),
        client.query(sql.get(S::Candidates), &[&now, &capped, &scan]),
    )
    .await;
    begin.map_err(pg)?;
    stale.map_err(pg)?;
    let due_probes = due_probes.map_err(pg)?;
    let candidates = candidates.map_err(pg)?;
    let mut ids: Vec<String> = Vec::new();
    let mut probes: Vec<i64> = Vec::new();
    let mut redacted: Vec<String> = Vec::new();
    // One per origin (each its breaker's), at most the limit.
    for row in &due_probes {
        if ids.len() >= req.limit {
            break;
        }
        ids.push(row.try_get(0).map_err(pg)?);
        probes.push(1);
        redacted.push(redact_url(&row.try_get::<_, String>(2).map_err(pg)?));
    }
    // The other origins' (no breaker open), up to their in-flight cap.
    let mut room: HashMap<String, usize> = HashMap::new();
    for row in &candidates {
        if ids.len() >= req.limit {
            break;
        }
        let id: String = row.try_get(0).map_err(pg)?;
        let origin: String = row.try_get(1).map_err(pg)?;
        let url: String = row.try_get(2).map_err(pg)?;
        let left = room.entry(origin).or_insert_with_key(|origin| {
            req.per_origin_cap
                .saturating_sub(req.in_flight.get(origin).copied().unwrap_or(0))
        });
        if *left == 0 {
            continue;
        }
        *left -= 1;
        ids.push(id);
        probes.push(0);
        redacted.push(redact_url(&url));
    }
    if ids.is_empty() {
        client.batch_execute("COMMIT").await.map_err(pg)?;
        return Ok(Vec::new());
    }
    let tokens: Vec<i64> = ids.iter().map(|_| lease_token()).collect();
    let until = now.saturating_add(req.lease_ms);
    let (leased, commit) = join(
        client.query(
            sql.get(S::Lease),
            &[&ids, &tokens, &probes, &redacted, &req.owner, &until, &now],
        ),
        client.batch_execute("COMMIT"),
    )
    .await;
    let leased = leased.map_err(pg)?;
    commit.map_err(pg)?;
    let mut by_id: HashMap<String, Claimed> = HashMap::with_capacity(leased.len());
    for r in &leased {
        let c = claimed_from(r).map_err(pg)?;
        by_id.insert(c.id.as_str().to_owned(), c);
    }
    // In the order chosen (the probes, then the oldest due first).
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

fn claimed_from(r: &Row) -> Result<Claimed, tokio_postgres::Error> {
    let credentials: Option<Vec<u8>> = r.try_get(7)?;
    Ok(Claimed {
        id: EventId::from_stored(r.try_get(0)?),
        attempt: u32::try_from(r.try_get::<_, i64>(1)?).unwrap_or(u32::MAX),
        body: r.try_get(2)?,
        idempotency_key: r.try_get(3)?,
        destination: OutboxDestination::from_parts(r.try_get(4)?, r.try_get(5)?, r.try_get(6)?, credentials.as_deref()),
        signing_scope: r.try_get(8)?,
        notification_type: r.try_get(9)?,
        notification_id: r.try_get(10)?,
        subscriber_id: r.try_get(11)?,
        principal: r.try_get(12)?,
        deadline_ms: r.try_get(13)?,
        enqueued_at_ms: r.try_get(14)?,
        origin: r.try_get(15)?,
        probe: r.try_get::<_, i64>(16)? != 0,
        lease_token: r.try_get(17)?,
    })
}

/// The batched writes of one finish batch.
#[derive(Default)]
struct FinishWrites<'a> {
    undo_ids: Vec<&'a str>,
    undo_attempts: Vec<i64>,
    undo_states: Vec<&'static str>,
    undo_at: Vec<i64>,
    undo_reasons: Vec<Option<&'a str>>,
    undo_now: Vec<i64>,
    done_ids: Vec<&'a str>,
    done_attempts: Vec<i64>,
    done_states: Vec<&'static str>,
    done_next: Vec<Option<i64>>,
    done_status: Vec<&'static str>,
    done_http: Vec<Option<i64>>,
    done_error: Vec<Option<String>>,
    done_reasons: Vec<Option<&'a str>>,
    done_now: Vec<i64>,
    done_completed: Vec<i64>,
    done_rt: Vec<Option<i64>>,
}

/// One finish batch: the current leases among it and their origins'
/// breakers locked (pipelined behind `BEGIN`), then every write batched
/// and pipelined with `COMMIT` (with the push-back of the pending events
/// of an origin whose breaker the batch opened or reopened). Rows apply
/// in batch order, as on SQLite (a breaker sees the batch's earlier
/// outcomes).
async fn finish_in(
    client: &Client,
    sql: &Statements,
    batch: &[Finish],
    policy: &BreakerPolicy,
) -> Result<Vec<bool>, OutboxError> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = batch.iter().map(|f| f.id.as_str()).collect();
    let tokens: Vec<i64> = batch.iter().map(|f| f.lease_token).collect();
    let nows: Vec<i64> = batch.iter().map(|f| f.now_ms).collect();
    let mut origins: Vec<&str> = batch.iter().map(|f| f.origin.as_str()).collect();
    origins.sort_unstable();
    origins.dedup();
    // Only a failure can take an origin's breaker from no row to a row:
    // those rows are created first so that they can be locked.
    let mut failing: Vec<&str> = batch
        .iter()
        .filter(|f| f.facts.as_ref().is_some_and(|x| x.health == Health::Down))
        .map(|f| f.origin.as_str())
        .collect();
    failing.sort_unstable();
    failing.dedup();
    let ensure = async {
        if failing.is_empty() {
            Ok(0)
        } else {
            client.execute(sql.get(S::EnsureBreakers), &[&failing]).await
        }
    };
    let (begin, ensured, fenced, locked) = join4(
        client.batch_execute("BEGIN"),
        ensure,
        client.query(sql.get(S::Fence), &[&ids, &tokens, &nows]),
        client.query(sql.get(S::LockBreakers), &[&origins]),
    )
    .await;
    begin.map_err(pg)?;
    ensured.map_err(pg)?;
    let fenced = fenced.map_err(pg)?;
    let locked = locked.map_err(pg)?;
    let mut current: HashMap<(String, i64), (i64, i64)> = HashMap::with_capacity(fenced.len());
    for r in &fenced {
        let id: String = r.try_get(0).map_err(pg)?;
        let token: i64 = r.try_get(1).map_err(pg)?;
        current.insert((id, token), (r.try_get(2).map_err(pg)?, r.try_get(3).map_err(pg)?));
    }
    let mut read: HashMap<String, BreakerState> = HashMap::with_capacity(locked.len());
    for r in &locked {
        read.insert(r.try_get(0).map_err(pg)?, breaker_from(r, 1).map_err(pg)?);
    }
    let mut breakers = read.clone();
    // The events the batch leaves pending so far, per origin, as indexes
    // into its writes (`true`: an undone attempt's, `false`: a finished
    // one's).
    let mut left_pending: HashMap<&str, Vec<(bool, usize)>> = HashMap::new();
    // The origins whose breaker the batch (re)opened: their pending
    // events wait for the next probe (the latest retry time), off the
    // claims' due-time scan.
    let mut pushed: HashMap<&str, i64> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut applied = Vec::with_capacity(batch.len());
    let mut w = FinishWrites::default();
    for f in batch {
        let Some(&(attempt, probe)) = current.get(&(f.id.as_str().to_owned(), f.lease_token)) else {
            applied.push(false);
            continue;
        };
        // The same lease twice in a batch: the first ends it.
        if !seen.insert(f.id.as_str()) {
            applied.push(false);
            continue;
        }
        applied.push(true);
        let now = f.now_ms;
        let undone = match &f.outcome {
            Outcome::Release(at) => Some((EventState::Pending, *at, None)),
            Outcome::Withdrawn(reason) => Some((EventState::Refused, now, Some(reason.as_str()))),
            _ => None,
        };
        if let Some((state, at, reason)) = undone {
            w.undo_ids.push(f.id.as_str());
            w.undo_attempts.push(attempt);
            w.undo_states.push(state.as_str());
            w.undo_at.push(at);
            w.undo_reasons.push(reason);
            w.undo_now.push(now);
            if state == EventState::Pending {
                left_pending
                    .entry(f.origin.as_str())
                    .or_default()
                    .push((true, w.undo_ids.len() - 1));
            }
            if probe != 0 {
                if let Some(b) = breakers.get_mut(&f.origin) {
                    b.probe_until_ms = 0;
                }
            }
            continue;
        }
        let (state, next, reason): (EventState, Option<i64>, Option<&str>) = match &f.outcome {
            Outcome::Delivered => (EventState::Delivered, None, None),
            Outcome::RetryAt(at) => (EventState::Pending, Some(*at), None),
            Outcome::Refused(reason) => (EventState::Refused, None, Some(reason)),
            Outcome::Expired(reason) => (EventState::Expired, None, Some(reason)),
            // Handled above.
            Outcome::Release(_) | Outcome::Withdrawn(_) => continue,
        };
        let facts = f.facts.as_ref();
        let status = facts.map_or(ActivityStatus::ConnectionError, |x| x.status);
        w.done_ids.push(f.id.as_str());
        w.done_attempts.push(attempt);
        w.done_states.push(state.as_str());
        w.done_next.push(next);
        w.done_status.push(status.as_str());
        w.done_http.push(facts.and_then(|x| x.http_status).map(i64::from));
        w.done_error
            .push(facts.and_then(|x| x.error_message.as_deref()).map(clip_message));
        w.done_reasons.push(reason);
        w.done_now.push(now);
        w.done_completed.push(facts.map_or(now, |x| x.completed_at_ms));
        w.done_rt.push(facts.and_then(|x| x.response_time_ms));
        if state == EventState::Pending {
            left_pending
                .entry(f.origin.as_str())
                .or_default()
                .push((false, w.done_ids.len() - 1));
        }
        if let Some(facts) = facts {
            let b = breakers.entry(f.origin.clone()).or_default();
            let before = *b;
            b.record(facts.health, probe != 0, now, policy);
            if probe != 0 && b.open {
                b.probe_until_ms = 0;
            }
            if b.open && b.retry_at_ms != before.retry_at_ms {
                // Opened, or reopened by a failed probe. As on SQLite,
                // where outcomes apply one after the other, this pushes
                // back the events pending at this point: the batch's own
                // so far here, the others in `PushBack`; a later outcome
                // of the batch keeps its own time.
                let at = b.retry_at_ms;
                let latest = pushed.entry(f.origin.as_str()).or_insert(at);
                *latest = (*latest).max(at);
                for &(undone, i) in left_pending.get(f.origin.as_str()).into_iter().flatten() {
                    if undone {
                        if let Some(t) = w.undo_at.get_mut(i) {
                            *t = (*t).max(at);
                        }
                    } else if let Some(Some(t)) = w.done_next.get_mut(i) {
                        *t = (*t).max(at);
                    }
                }
            }
        }
    }
    let mut deleted: Vec<&str> = Vec::new();
    let mut saved: Vec<(&str, BreakerState)> = Vec::new();
    for (origin, b) in &breakers {
        if *b == BreakerState::default() {
            if read.contains_key(origin) {
                deleted.push(origin);
            }
        } else if read.get(origin) != Some(b) {
            saved.push((origin, *b));
        }
    }
    deleted.sort_unstable();
    saved.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let saved_origins: Vec<&str> = saved.iter().map(|(o, _)| *o).collect();
    let saved_failures: Vec<i64> = saved.iter().map(|(_, b)| i64::from(b.failures)).collect();
    let saved_open: Vec<i64> = saved.iter().map(|(_, b)| i64::from(b.open)).collect();
    let saved_opened: Vec<i64> = saved.iter().map(|(_, b)| i64::from(b.opened)).collect();
    let saved_retry: Vec<i64> = saved.iter().map(|(_, b)| b.retry_at_ms).collect();
    let saved_probe: Vec<i64> = saved.iter().map(|(_, b)| b.probe_until_ms).collect();
    let saved_failing: Vec<i64> = saved.iter().map(|(_, b)| b.failing_since_ms).collect();
    let mut pushed: Vec<(&str, i64)> = pushed.into_iter().collect();
    pushed.sort_unstable();
    let pushed_origins: Vec<&str> = pushed.iter().map(|(o, _)| *o).collect();
    let pushed_at: Vec<i64> = pushed.iter().map(|(_, at)| *at).collect();
    // The batch's own pending events of those origins: their times are set.
    let own: Vec<&str> = pushed_origins
        .iter()
        .flat_map(|o| left_pending.get(o).into_iter().flatten())
        .filter_map(|&(undone, i)| {
            if undone {
                w.undo_ids.get(i).copied()
            } else {
                w.done_ids.get(i).copied()
            }
        })
        .collect();

    let undo_activity: [&(dyn ToSql + Sync); 2] = [&w.undo_ids, &w.undo_attempts];
    let undo_events: [&(dyn ToSql + Sync); 5] = [&w.undo_ids, &w.undo_states, &w.undo_at, &w.undo_reasons, &w.undo_now];
    let done_events: [&(dyn ToSql + Sync); 8] = [
        &w.done_ids,
        &w.done_states,
        &w.done_next,
        &w.done_status,
        &w.done_http,
        &w.done_error,
        &w.done_reasons,
        &w.done_now,
    ];
    let done_activity: [&(dyn ToSql + Sync); 7] = [
        &w.done_ids,
        &w.done_attempts,
        &w.done_completed,
        &w.done_status,
        &w.done_http,
        &w.done_rt,
        &w.done_error,
    ];
    let delete_breakers: [&(dyn ToSql + Sync); 1] = [&deleted];
    let save_breakers: [&(dyn ToSql + Sync); 7] = [
        &saved_origins,
        &saved_failures,
        &saved_open,
        &saved_opened,
        &saved_retry,
        &saved_probe,
        &saved_failing,
    ];
    let push_back: [&(dyn ToSql + Sync); 3] = [&pushed_origins, &pushed_at, &own];
    let mut steps: Vec<Step<'_>> = Vec::new();
    if !w.undo_ids.is_empty() {
        steps.push(client.execute(sql.get(S::UndoActivity), &undo_activity).boxed_step());
        steps.push(client.execute(sql.get(S::UndoEvents), &undo_events).boxed_step());
    }
    if !w.done_ids.is_empty() {
        steps.push(client.execute(sql.get(S::DoneEvents), &done_events).boxed_step());
        steps.push(client.execute(sql.get(S::DoneActivity), &done_activity).boxed_step());
    }
    if !deleted.is_empty() {
        steps.push(
            client
                .execute(sql.get(S::DeleteBreakers), &delete_breakers)
                .boxed_step(),
        );
    }
    if !saved.is_empty() {
        steps.push(client.execute(sql.get(S::SaveBreakers), &save_breakers).boxed_step());
    }
    // After the batch's own writes (an event it leaves pending is pending
    // by then, and excluded).
    if !pushed_origins.is_empty() {
        steps.push(client.execute(sql.get(S::PushBack), &push_back).boxed_step());
    }
    steps.push(Box::pin(async { client.batch_execute("COMMIT").await.map(|()| 0) }));
    pipeline(steps).await?;
    Ok(applied)
}

/// Boxes a statement's future as a [`Step`].
trait BoxedStep<'a> {
    fn boxed_step(self) -> Step<'a>;
}

impl<'a, F> BoxedStep<'a> for F
where
    F: Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a,
{
    fn boxed_step(self) -> Step<'a> {
        Box::pin(self)
    }
}

fn view_from(r: &Row) -> Result<EventView, tokio_postgres::Error> {
    let state: String = r.try_get(2)?;
    let state = EventState::parse(&state).unwrap_or(EventState::Pending);
    Ok(EventView {
        id: EventId::from_stored(r.try_get(0)?),
        idempotency_key: r.try_get(1)?,
        state,
        attempts: u32::try_from(r.try_get::<_, i64>(3)?).unwrap_or(u32::MAX),
        notification_type: r.try_get(4)?,
        notification_id: r.try_get(5)?,
        subscriber_id: r.try_get(6)?,
        signing_scope: r.try_get(7)?,
        principal: r.try_get(8)?,
        url: redact_url(&r.try_get::<_, String>(9)?),
        enqueued_at_ms: r.try_get(10)?,
        first_attempt_at_ms: r.try_get(11)?,
        next_attempt_at_ms: if state == EventState::Pending {
            Some(r.try_get(12)?)
        } else {
            None
        },
        deadline_ms: r.try_get(13)?,
        last_status: r
            .try_get::<_, Option<String>>(14)?
            .as_deref()
            .and_then(ActivityStatus::parse),
        last_http_status: r.try_get::<_, Option<i64>>(15)?.and_then(|s| u16::try_from(s).ok()),
        last_error: r.try_get(16)?,
        reason: r.try_get(17)?,
        superseded_by: r.try_get::<_, Option<String>>(18)?.map(EventId::from_stored),
        finished_at_ms: r.try_get(19)?,
    })
}

fn record_from(r: &Row) -> Result<ActivityRecord, tokio_postgres::Error> {
    Ok(ActivityRecord {
        idempotency_key: r.try_get(0)?,
        notification_id: r.try_get(1)?,
        subscriber_id: r.try_get(2)?,
        fired_at_ms: r.try_get(3)?,
        completed_at_ms: r.try_get(4)?,
        notification_type: r.try_get(5)?,
        sequence_number: r.try_get(6)?,
        attempt: u32::try_from(r.try_get::<_, i64>(7)?).unwrap_or(1),
        status: ActivityStatus::parse(&r.try_get::<_, String>(8)?).unwrap_or(ActivityStatus::Pending),
        url: r.try_get(9)?,
        http_status_code: r.try_get::<_, Option<i64>>(10)?.and_then(|s| u16::try_from(s).ok()),
        response_time_ms: r.try_get(11)?,
        payload_size_bytes: u64::try_from(r.try_get::<_, i64>(12)?).unwrap_or(0),
        error_message: r.try_get(13)?,
    })
}

/// A refused redrive, after rolling its transaction back.
async fn refuse_redrive(client: &Client, e: OutboxError) -> Result<EventView, OutboxError> {
    client.batch_execute("ROLLBACK").await.map_err(pg)?;
    Err(e)
}

async fn redrive_in(
    client: &Client,
    sql: &Statements,
    channel: &str,
    id: &str,
    now: i64,
) -> Result<EventView, OutboxError> {
    let (begin, row) = join(
        client.batch_execute("BEGIN"),
        client.query_opt(sql.get(S::RedriveLock), &[&id]),
    )
    .await;
    begin.map_err(pg)?;
    let Some(row) = row.map_err(pg)? else {
        return refuse_redrive(client, OutboxError::NotFound(id.to_owned())).await;
    };
    let state: String = row.try_get(0).map_err(pg)?;
    let first: Option<i64> = row.try_get(1).map_err(pg)?;
    let enqueued: i64 = row.try_get(2).map_err(pg)?;
    let horizon: i64 = row.try_get(3).map_err(pg)?;
    if state != "refused" && state != "expired" {
        return refuse_redrive(
            client,
            OutboxError::NotRedrivable(format!("it is {state}; only refused or expired events are redriven")),
        )
        .await;
    }
    let end = first.unwrap_or(enqueued).saturating_add(horizon);
    if now >= end {
        return refuse_redrive(
            client,
            OutboxError::NotRedrivable(format!("its retry horizon ended at {}", crate::clock::rfc3339_ms(end))),
        )
        .await;
    }
    // The wake-up after the commit, as for an enqueue.
    let (updated, commit, notified) = join3(
        client.query_one(sql.get(S::Redrive), &[&id, &now, &end]),
        client.batch_execute("COMMIT"),
        client.execute(sql.get(S::Notify), &[&channel]),
    )
    .await;
    let updated = updated.map_err(pg)?;
    commit.map_err(pg)?;
    if let Err(e) = notified {
        tracing::debug!(error = %e, "outbox NOTIFY after a redrive failed");
    }
    view_from(&updated).map_err(pg)
}

impl PostgresOutbox {
    /// Wakes every relay on these tables (after a change outside the
    /// enqueue's own wake-up: a channel's flushed or rebuilt events).
    async fn notify_all(&self) -> Result<(), OutboxError> {
        let channel = self.inner.channel.clone();
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                client
                    .execute(sql.get(S::Notify), &[&channel])
                    .await
                    .map(|_| ())
                    .map_err(pg)
            })
        })
        .await
    }
}

type Work<'c, T> = Pin<Box<dyn Future<Output = Result<T, OutboxError>> + Send + 'c>>;

impl PostgresOutbox {
    /// Connects to `url` (a `postgres://` URL, no TLS), creates or
    /// migrates the tables ([`migrate_postgres`], in
    /// [`PostgresOutboxOptions::schema`]), prepares the statements and
    /// starts listening for wake-ups. Fails when the server is unreachable
    /// within [`PostgresOutboxOptions::op_timeout`] (per step).
    ///
    /// # Errors
    ///
    /// [`OutboxError::Config`] for a bad prefix or schema name;
    /// [`OutboxError::Schema`] for tables of a newer version;
    /// [`OutboxError::Unavailable`] when the server cannot be reached.
    pub async fn connect(url: &str, options: PostgresOutboxOptions) -> Result<Self, OutboxError> {
        check_prefix(&options.table_prefix)?;
        if !valid_schema(&options.schema) {
            return Err(OutboxError::Config(format!(
                "schema {:?} must be 1-63 characters of a-z, 0-9 and _, not starting with a digit",
                options.schema
            )));
        }
        let timeout = options.op_timeout;
        let timed_out = || OutboxError::Unavailable(format!("postgres: timed out after {timeout:?}"));
        let qualifier = format!("{}.{}", options.schema, options.table_prefix);
        let first = tokio::time::timeout(timeout, async {
            let client = connect_client(url).await?;
            migrate_in(&client, Some(&options.schema), &options.table_prefix).await?;
            let sql = Statements::prepare(&client, &qualifier).await.map_err(pg)?;
            Ok::<_, OutboxError>(Conn { client, sql })
        })
        .await
        .map_err(|_| timed_out())??;
        let wake = Arc::new(Notify::new());
        let channel = channel_of(&options.table_prefix);
        let listening = listen::open(url, &channel, timeout, &wake)
            .await
            .map_err(|e| OutboxError::Unavailable(format!("postgres: listening on {channel}: {e}")))?;
        let listener = tokio::spawn(listen::run(
            listening,
            url.to_owned(),
            channel.clone(),
            timeout,
            Arc::clone(&wake),
        ));
        let pool: Vec<Mutex<Option<Conn>>> = (0..options.pool_size.max(1)).map(|_| Mutex::new(None)).collect();
        if let Some(slot) = pool.first() {
            *slot.lock().await = Some(first);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                url: url.to_owned(),
                qualifier,
                options,
                channel,
                pool,
                next: AtomicUsize::new(0),
                wake,
                listener,
            }),
        })
    }

    /// The settings in force.
    #[must_use]
    pub fn options(&self) -> &PostgresOutboxOptions {
        &self.inner.options
    }

    /// The channel enqueues notify (`{prefix}wakeup`).
    #[must_use]
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Enqueues `row` in `tx` (an application's open transaction, on its
    /// own connection) into this store's tables, named with their schema:
    /// [`enqueue_postgres`] without relying on the session's
    /// `search_path`. The row commits or rolls back with `tx`; the
    /// wake-up goes out at its commit.
    ///
    /// # Errors
    ///
    /// As [`enqueue_postgres`].
    pub async fn enqueue_in_transaction(&self, tx: &Transaction<'_>, row: &Insert) -> Result<Enqueued, OutboxError> {
        enqueue_texts(tx, &self.inner.qualifier, &self.inner.channel, row).await
    }

    /// Runs `f` on a pooled connection (a free one if any, connecting and
    /// preparing the statements if needed) within the operation timeout.
    /// The connection is discarded when `f` fails with
    /// [`OutboxError::Unavailable`] or runs out of time (it may be broken,
    /// or inside a transaction): a fresh one replaces it on next use.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, OutboxError>
    where
        F: for<'c> FnOnce(&'c Client, &'c Statements) -> Work<'c, T>,
    {
        let inner = &*self.inner;
        let work = async {
            let n = inner.pool.len();
            let start = inner.next.fetch_add(1, Ordering::Relaxed);
            let mut guard = None;
            for i in 0..n {
                if let Some(Ok(g)) = inner.pool.get((start + i) % n).map(Mutex::try_lock) {
                    guard = Some(g);
                    break;
                }
            }
            let mut guard = match guard {
                Some(g) => g,
                None => match inner.pool.get(start % n.max(1)) {
                    Some(slot) => slot.lock().await,
                    None => return Err(OutboxError::Unavailable("postgres: empty pool".to_owned())),
                },
            };
            let conn = match guard.take() {
                Some(conn) if !conn.client.is_closed() => conn,
                _ => Conn::open(&inner.url, &inner.qualifier).await?,
            };
            let result = f(&conn.client, &conn.sql).await;
            if !matches!(result, Err(OutboxError::Unavailable(_))) {
                *guard = Some(conn);
            }
            result
        };
        match tokio::time::timeout(inner.options.op_timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(OutboxError::Unavailable(format!(
                "postgres: timed out after {:?}",
                inner.options.op_timeout
            ))),
        }
    }
}

#[async_trait::async_trait]
impl OutboxStore for PostgresOutbox {
    async fn enqueue(&self, row: Insert) -> Result<Enqueued, OutboxError> {
        let channel = self.inner.channel.clone();
        if row.channel_id.is_some() {
            let q = self.inner.qualifier.clone();
            let done = self
                .with_conn(move |client, _| {
                    Box::pin(async move { channels::enqueue_checked(client, &q, &channel, &row).await })
                })
                .await?;
            let _ = self.notify_all().await;
            self.inner.wake.notify_one();
            return Ok(done);
        }
        let done = self
            .with_conn(move |client, sql| {
                Box::pin(async move {
                    let statements = EnqueueSql {
                        insert: sql.get(S::Insert),
                        existing: sql.get(S::Existing),
                        resources: sql.get(S::Resources),
                        notify: None,
                    };
                    // One round trip: the statements change nothing but the
                    // new row, so the transaction commits whatever they
                    // find. The wake-up is its own statement after the
                    // commit (it notifies only if the row was inserted):
                    // a transaction that notifies holds the server's
                    // notification lock through its commit's WAL flush,
                    // which would serialize every enqueue's commit.
                    let id = row.id.as_str().to_owned();
                    let notify_params: [&(dyn ToSql + Sync); 2] = [&channel, &id];
                    let (begin, inserted, commit, notified) = join4(
                        client.batch_execute("BEGIN"),
                        enqueue_statements(client, &statements, &channel, &row),
                        client.batch_execute("COMMIT"),
                        client.execute(sql.get(S::NotifyInserted), &notify_params),
                    )
                    .await;
                    begin.map_err(pg)?;
                    let inserted = inserted?;
                    commit.map_err(pg)?;
                    if let Err(e) = notified {
                        // Committed: only the wake-up is lost (the relays
                        // also poll).
                        tracing::debug!(error = %e, "outbox NOTIFY after an enqueue failed");
                    }
                    match inserted {
                        Some(done) => Ok(done),
                        None => enqueue_existing(client, statements.existing, &row).await,
                    }
                })
            })
            .await?;
        self.inner.wake.notify_one();
        Ok(done)
    }

    async fn channel(&self, id: &str) -> Result<Option<ChannelRow>, OutboxError> {
        let (q, id) = (self.inner.qualifier.clone(), id.to_owned());
        self.with_conn(move |client, _| Box::pin(async move { channels::get(client, &q, &id).await }))
            .await
    }

    async fn write_channel(&self, write: ChannelWrite) -> Result<Option<u64>, OutboxError> {
        let (q, channel) = (self.inner.qualifier.clone(), self.inner.channel.clone());
        let wakes = write.flush_held || !write.replace.is_empty();
        let applied = self
            .with_conn(move |client, _| Box::pin(async move { channels::write(client, &q, &channel, &write).await }))
            .await?;
        if applied.is_some() && wakes {
            let _ = self.notify_all().await;
            self.inner.wake.notify_one();
        }
        Ok(applied)
    }

    async fn unattempted(&self, channel_id: &str, limit: usize) -> Result<Vec<Unattempted>, OutboxError> {
        let (q, channel) = (self.inner.qualifier.clone(), channel_id.to_owned());
        self.with_conn(move |client, _| {
            Box::pin(async move { channels::unattempted(client, &q, &channel, limit).await })
        })
        .await
    }

    async fn create_stream(&self, row: StreamRow) -> Result<StreamRow, OutboxError> {
        let q = self.inner.qualifier.clone();
        let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        self.with_conn(move |client, _| Box::pin(async move { reporting::create(client, &q, &row, now).await }))
            .await
    }

    async fn stream(&self, id: &str) -> Result<Option<StreamRow>, OutboxError> {
        let (q, id) = (self.inner.qualifier.clone(), id.to_owned());
        self.with_conn(move |client, _| Box::pin(async move { reporting::get(client, &q, &id).await }))
            .await
    }

    async fn due_streams(&self, now_ms: i64, limit: usize) -> Result<Vec<StreamRow>, OutboxError> {
        let q = self.inner.qualifier.clone();
        self.with_conn(move |client, _| Box::pin(async move { reporting::due(client, &q, now_ms, limit).await }))
            .await
    }

    async fn advance_stream(&self, update: StreamUpdate, event: Option<Insert>) -> Result<bool, OutboxError> {
        let (q, channel) = (self.inner.qualifier.clone(), self.inner.channel.clone());
        let enqueues = event.is_some();
        let applied = self
            .with_conn(move |client, _| {
                Box::pin(async move { reporting::advance(client, &q, &channel, &update, event.as_ref()).await })
            })
            .await?;
        if applied && enqueues {
            self.inner.wake.notify_one();
        }
        Ok(applied)
    }

    async fn channel_busy(&self, channel_id: &str) -> Result<bool, OutboxError> {
        let (q, channel) = (self.inner.qualifier.clone(), channel_id.to_owned());
        self.with_conn(move |client, _| Box::pin(async move { reporting::channel_busy(client, &q, &channel).await }))
            .await
    }

    async fn claim(&self, request: ClaimRequest) -> Result<Vec<Claimed>, OutboxError> {
        self.with_conn(move |client, sql| Box::pin(async move { claim_in(client, sql, &request).await }))
            .await
    }

    async fn finish(&self, batch: Vec<Finish>) -> Result<Vec<bool>, OutboxError> {
        let policy = self.inner.options.breaker;
        self.with_conn(move |client, sql| Box::pin(async move { finish_in(client, sql, &batch, &policy).await }))
            .await
    }

    async fn expire_due(&self, now_ms: i64) -> Result<u64, OutboxError> {
        self.with_conn(move |client, sql| {
            Box::pin(async move { client.execute(sql.get(S::Expire), &[&now_ms]).await.map_err(pg) })
        })
        .await
    }

    async fn next_due(&self, _now_ms: i64) -> Result<Option<i64>, OutboxError> {
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                client
                    .query_one(sql.get(S::NextDue), &[])
                    .await
                    .map_err(pg)?
                    .try_get(0)
                    .map_err(pg)
            })
        })
        .await
    }

    async fn get(&self, id: &EventId) -> Result<Option<EventView>, OutboxError> {
        let id = id.as_str().to_owned();
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                client
                    .query_opt(sql.get(S::Get), &[&id])
                    .await
                    .map_err(pg)?
                    .map(|r| view_from(&r))
                    .transpose()
                    .map_err(pg)
            })
        })
        .await
    }

    async fn list(&self, filter: &ListFilter) -> Result<Vec<EventView>, OutboxError> {
        let state = filter.state.map(EventState::as_str);
        let before = filter.before.as_ref().map(|id| id.as_str().to_owned());
        let limit = i64::try_from(filter.limit.clamp(1, 1000)).unwrap_or(50);
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                client
                    .query(sql.get(S::List), &[&state, &before, &limit])
                    .await
                    .map_err(pg)?
                    .iter()
                    .map(view_from)
                    .collect::<Result<_, _>>()
                    .map_err(pg)
            })
        })
        .await
    }

    async fn redrive(&self, id: &EventId, now_ms: i64) -> Result<EventView, OutboxError> {
        let id = id.as_str().to_owned();
        let channel = self.inner.channel.clone();
        let view = self
            .with_conn(move |client, sql| Box::pin(async move { redrive_in(client, sql, &channel, &id, now_ms).await }))
            .await?;
        self.inner.wake.notify_one();
        Ok(view)
    }

    async fn activity(&self, query: &ActivityQuery) -> Result<Vec<ActivityRecord>, OutboxError> {
        let limit = i64::from(query.limit.clamp(1, super::MAX_ACTIVITY_LIMIT));
        let selector = query.selector.clone();
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                let rows = match &selector {
                    ActivitySelector::Principal {
                        principal,
                        resource: None,
                    } => client.query(sql.get(S::ActivityPrincipal), &[principal, &limit]).await,
                    ActivitySelector::Principal {
                        principal,
                        resource: Some(resource),
                    } => {
                        client
                            .query(sql.get(S::ActivityResource), &[principal, resource, &limit])
                            .await
                    }
                    ActivitySelector::Url(url) => client.query(sql.get(S::ActivityUrl), &[url, &limit]).await,
                }
                .map_err(pg)?;
                rows.iter().map(record_from).collect::<Result<_, _>>().map_err(pg)
            })
        })
        .await
    }

    async fn purge(&self, now_ms: i64, retention_ms: i64) -> Result<u64, OutboxError> {
        let cutoff = now_ms.saturating_sub(retention_ms);
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                let cutoff: [&(dyn ToSql + Sync); 1] = [&cutoff];
                let begin = client.batch_execute("BEGIN");
                let activity = client.execute(sql.get(S::PurgeActivity), &cutoff);
                let events = client.execute(sql.get(S::PurgeEvents), &cutoff);
                let resources = client.execute(sql.get(S::PurgeResources), &[]);
                let breakers = client.execute(sql.get(S::PurgeBreakers), &[]);
                let commit = client.batch_execute("COMMIT");
                let ((begin, activity, events), (resources, breakers, commit)) =
                    join(join3(begin, activity, events), join3(resources, breakers, commit)).await;
                begin.map_err(pg)?;
                let n = activity.map_err(pg)? + events.map_err(pg)? + resources.map_err(pg)? + breakers.map_err(pg)?;
                commit.map_err(pg)?;
                Ok(n)
            })
        })
        .await
    }

    async fn stats(&self, _now_ms: i64) -> Result<OutboxStats, OutboxError> {
        self.with_conn(move |client, sql| {
            Box::pin(async move {
                // One snapshot for the three figures, one round trip.
                let begin = client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
                let states = client.query(sql.get(S::StatsStates), &[]);
                let oldest = client.query_one(sql.get(S::StatsOldest), &[]);
                let open = client.query_one(sql.get(S::StatsOpen), &[]);
                let commit = client.batch_execute("COMMIT");
                let ((begin, states, oldest), (open, commit)) =
                    join(join3(begin, states, oldest), join(open, commit)).await;
                begin.map_err(pg)?;
                let states = states.map_err(pg)?;
                let oldest: Option<i64> = oldest.map_err(pg)?.try_get(0).map_err(pg)?;
                let open: i64 = open.map_err(pg)?.try_get(0).map_err(pg)?;
                commit.map_err(pg)?;
                let mut by_state = Vec::with_capacity(states.len());
                for r in &states {
                    let state: String = r.try_get(0).map_err(pg)?;
                    let n: i64 = r.try_get(1).map_err(pg)?;
                    if let Some(state) = EventState::parse(&state) {
                        by_state.push((state, u64::try_from(n).unwrap_or(0)));
                    }
                }
                Ok(OutboxStats {
                    by_state,
                    oldest_pending_enqueued_ms: oldest,
                    open_breakers: u64::try_from(open).unwrap_or(0),
                })
            })
        })
        .await
    }

    fn wakeups(&self) -> Arc<Notify> {
        Arc::clone(&self.inner.wake)
    }
}
