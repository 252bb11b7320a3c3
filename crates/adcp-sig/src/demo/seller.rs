//! The seller's side of the demo: webhooks enqueued in a durable outbox
//! (a SQLite file), delivered by a dispatcher through a second gateway
//! to a second counting upstream. The upstream goes down, the dispatcher
//! is stopped with a retry pending, more events are enqueued while
//! nothing delivers, and a new dispatcher on the reopened file finishes
//! the work: the retry scheduled before the restart is kept, nothing is
//! lost and the upstream applies each event once.

use super::upstream::CountingUpstream;
use super::DEMO_PATH;
use adcp_gateway::{Gateway, GatewayHandle, GatewayOptions};
use adcp_outbox::{
    Dispatcher, DispatcherConfig, EventId, EventState, NewEvent, Outbox, OutboxConfig, OutboxDestination, SqliteOutbox,
    StaticSigners,
};
use adcp_sign::{BoxSigner, HttpSigner, SoftwareSigner};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::KeyResolver;
use adcp_webhook::{AttemptClient, DestinationPolicy, McpWebhook, RetryPolicy, TaskStatus};
use serde_json::json;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Events the seller enqueues before the restart, and as many after it.
pub const SELLER_EVENTS_PER_PHASE: usize = 4;
/// Events the seller's upstream must apply, each once.
pub const SELLER_EVENTS: usize = 2 * SELLER_EVENTS_PER_PHASE;

/// What the seller's side of the demo observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SellerReport {
    /// Events enqueued (distinct; the duplicate enqueue is not counted).
    pub enqueued: usize,
    /// Whether enqueueing the first event again returned its id.
    pub duplicate_enqueue_same_id: bool,
    /// Events delivered before the dispatcher was stopped.
    pub delivered_before_restart: usize,
    /// Events pending a retry when the dispatcher was stopped.
    pub retries_across_restart: usize,
    /// Events delivered by the end.
    pub delivered: usize,
    /// Attempts over every event (those refused while the upstream was
    /// down included).
    pub attempts: u64,
    /// Idempotency keys the seller's upstream applied, in order.
    pub applied: Vec<String>,
}

impl SellerReport {
    /// Distinct idempotency keys the seller's upstream applied.
    #[must_use]
    pub fn distinct_applied(&self) -> usize {
        self.applied.iter().collect::<BTreeSet<_>>().len()
    }

    /// Every event delivered and applied exactly once, the retry kept
    /// across the restart, the duplicate enqueue stored once.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.enqueued == SELLER_EVENTS
            && self.duplicate_enqueue_same_id
            && self.retries_across_restart == 1
            && self.delivered == SELLER_EVENTS
            && self.applied.len() == SELLER_EVENTS
            && self.distinct_applied() == SELLER_EVENTS
            && self.attempts > SELLER_EVENTS as u64
    }

    /// The seller's lines of the table.
    pub(crate) fn render(&self, out: &mut String) {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "seller: {} events enqueued in a SQLite outbox (the first one twice: {}), delivered through a second gateway",
            self.enqueued,
            if self.duplicate_enqueue_same_id {
                "same id"
            } else {
                "NEW ID"
            }
        );
        let _ = writeln!(
            out,
            "  dispatcher stopped after {} deliveries with {} retry pending; {} more enqueued while stopped",
            self.delivered_before_restart, self.retries_across_restart, SELLER_EVENTS_PER_PHASE
        );
        let _ = writeln!(
            out,
            "  restarted on the reopened file: {} of {} delivered in {} attempts; upstream applied {} ({} distinct)",
            self.delivered,
            self.enqueued,
            self.attempts,
            self.applied.len(),
            self.distinct_applied()
        );
        let _ = writeln!(
            out,
            "  {}",
            if self.passed() {
                "nothing lost, nothing applied twice"
            } else {
                "FAILED: see the counts above"
            }
        );
    }

    /// The report as JSON.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        json!({
            "enqueued": self.enqueued,
            "duplicate_enqueue_same_id": self.duplicate_enqueue_same_id,
            "delivered_before_restart": self.delivered_before_restart,
            "retries_across_restart": self.retries_across_restart,
            "delivered": self.delivered,
            "attempts": self.attempts,
            "upstream_applied": self.applied.len(),
            "upstream_distinct": self.distinct_applied(),
            "passed": self.passed(),
        })
    }
}

/// A task webhook of the seller's, for the buyer's `operation_id`.
fn task_event(n: usize) -> Result<adcp_sign::WebhookEvent, String> {
    McpWebhook::new(
        format!("task_seller_{n}"),
        "create_media_buy",
        TaskStatus::Completed,
        "2026-04-18T12:00:00Z",
    )
    .operation_id("op_seller")
    .result(json!({"media_buy_id": format!("mb_seller_{n}")}))
    .into_event()
    .map_err(|e| e.to_string())
}

/// The outbox on `path` (opened again after the restart).
fn open_outbox(path: &Path) -> Result<Outbox, String> {
    let store = SqliteOutbox::open(path, Default::default()).map_err(|e| format!("outbox: {e}"))?;
    // Retries within a second, so the demo stays short; the horizon is
    // the spec's shortest.
    let retry = RetryPolicy::new(
        Duration::from_millis(200),
        Duration::from_secs(1),
        RetryPolicy::DEFAULT_HORIZON,
    )
    .map_err(|e| e.to_string())?;
    let config = OutboxConfig {
        retry,
        ..OutboxConfig::default()
    };
    Outbox::new(Arc::new(store), config).map_err(|e| format!("outbox: {e}"))
}

/// A dispatcher on `outbox`, running until the returned sender fires.
fn start_dispatcher(
    outbox: &Outbox,
    key: &Arc<SoftwareSigner>,
) -> Result<(tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>), String> {
    let signers = StaticSigners::new().with(
        adcp_outbox::DEFAULT_SIGNING_SCOPE,
        HttpSigner::webhook(BoxSigner::new(Arc::clone(key))).map_err(|e| e.to_string())?,
    );
    // Plain HTTP to loopback only because the demo's gateway listens
    // there; a production sender keeps the default policy.
    let client = AttemptClient::builder()
        .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
        .build()
        .map_err(|e| e.to_string())?;
    let dispatcher = Dispatcher::new(outbox.clone(), client, Arc::new(signers), DispatcherConfig::default())
        .map_err(|e| e.to_string())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(dispatcher.run(async {
        let _ = stopped.await;
    }));
    Ok((stop, task))
}

/// The states of `ids`, in order.
async fn states(outbox: &Outbox, ids: &[EventId]) -> Result<Vec<(EventState, u32)>, String> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let view = outbox
            .get(id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("event {id} not found"))?;
        out.push((view.state, view.attempts));
    }
    Ok(out)
}

/// Polls until `done` holds for the states of `ids` (at most 15 s).
async fn wait_for(
    outbox: &Outbox,
    ids: &[EventId],
    done: impl Fn(&[(EventState, u32)]) -> bool,
) -> Result<Vec<(EventState, u32)>, String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let now = states(outbox, ids).await?;
        if done(&now) || tokio::time::Instant::now() >= deadline {
            return Ok(now);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn delivered(states: &[(EventState, u32)]) -> usize {
    states.iter().filter(|(s, _)| *s == EventState::Delivered).count()
}

/// Runs the seller's side in `dir`: its own gateway (no public URL: the
/// signed target is the loopback URL it is sent to) and upstream, trusting
/// the same seller key as the buyer's side.
pub(crate) async fn run(
    dir: &Path,
    keys: Arc<dyn KeyResolver>,
    key: &Arc<SoftwareSigner>,
) -> Result<SellerReport, String> {
    let mut upstream = CountingUpstream::start().await?;
    let store_url: StoreUrl = format!("sqlite:{}", dir.join("seller-gateway.sqlite").display())
        .parse()
        .map_err(|e| format!("store: {e}"))?;
    let store = adcp_store::open(&store_url, StoreOptions::default())
        .await
        .map_err(|e| format!("store: {e}"))?;
    let mut options = GatewayOptions::new(upstream.url()?);
    options.upstream_timeout = Duration::from_secs(5);
    let gateway = Gateway::new(keys, store, options).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let handle: GatewayHandle = gateway.serve(listener).map_err(|e| e.to_string())?;
    let result = deliver(dir, &handle, &upstream, key).await;
    handle.shutdown().await.map_err(|e| format!("gateway shutdown: {e}"))?;
    upstream.shutdown().await;
    result
}

async fn deliver(
    dir: &Path,
    handle: &GatewayHandle,
    upstream: &CountingUpstream,
    key: &Arc<SoftwareSigner>,
) -> Result<SellerReport, String> {
    let path = dir.join("seller-outbox.sqlite");
    let destination = OutboxDestination::from_registration(&json!({
        "url": format!("{}{DEMO_PATH}", handle.base_url()),
        "operation_id": "op_seller",
    }))
    .map_err(|e| e.to_string())?;
    let events = (0..SELLER_EVENTS)
        .map(|n| Ok(NewEvent::new(task_event(n)?, destination.clone())))
        .collect::<Result<Vec<_>, String>>()?;
    let enqueue = |outbox: &Outbox, n: usize| {
        let outbox = outbox.clone();
        let event = events[n].clone();
        async move { outbox.enqueue(event).await.map_err(|e| e.to_string()) }
    };

    // Phase 1: the first events delivered; then the upstream goes down
    // (the gateway answers 503) and the last event of the phase waits for
    // a retry when the dispatcher stops.
    let outbox = open_outbox(&path)?;
    let mut ids = Vec::with_capacity(SELLER_EVENTS);
    let mut duplicate_enqueue_same_id = false;
    for n in 0..SELLER_EVENTS_PER_PHASE - 1 {
        let done = enqueue(&outbox, n).await?;
        if n == 0 {
            // The same event again (a seller's own retry of its enqueue).
            let again = enqueue(&outbox, n).await?;
            duplicate_enqueue_same_id = again.duplicate && again.id == done.id;
        }
        ids.push(done.id);
    }
    let (stop, task) = start_dispatcher(&outbox, key)?;
    wait_for(&outbox, &ids, |s| delivered(s) == ids.len()).await?;
    upstream.set_down(true);
    ids.push(enqueue(&outbox, SELLER_EVENTS_PER_PHASE - 1).await?.id);
    let last = ids.len() - 1;
    wait_for(&outbox, &ids[last..], |s| s[0].0 == EventState::Pending && s[0].1 >= 1).await?;
    let _ = stop.send(());
    task.await.map_err(|e| format!("dispatcher: {e}"))?;
    upstream.set_down(false);
    let now = states(&outbox, &ids).await?;
    let delivered_before_restart = delivered(&now);
    let retries_across_restart = now.iter().filter(|(s, n)| *s == EventState::Pending && *n >= 1).count();

    // While nothing delivers, the outbox still accepts: the application
    // enqueues with its business change.
    for n in SELLER_EVENTS_PER_PHASE..SELLER_EVENTS {
        ids.push(enqueue(&outbox, n).await?.id);
    }
    drop(outbox);

    // Phase 2: a new process, in effect: the file opened again, a new
    // dispatcher.
    let outbox = open_outbox(&path)?;
    let (stop, task) = start_dispatcher(&outbox, key)?;
    let end = wait_for(&outbox, &ids, |s| delivered(s) == SELLER_EVENTS).await?;
    let _ = stop.send(());
    task.await.map_err(|e| format!("dispatcher: {e}"))?;
    Ok(SellerReport {
        enqueued: ids.len(),
        duplicate_enqueue_same_id,
        delivered_before_restart,
        retries_across_restart,
        delivered: delivered(&end),
        attempts: end.iter().map(|(_, n)| u64::from(*n)).sum(),
        applied: upstream.applied(),
    })
}
