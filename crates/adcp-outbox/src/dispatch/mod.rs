//! The workers: claim due events, make one signed attempt each, record
//! the outcome. Any number per process, any number of processes per
//! PostgreSQL store.

mod handoff;
mod hook;
mod metrics;
mod signing;

pub(crate) use handoff::HandoffSlot;

pub use hook::{AttemptHook, HookDecision};
pub use metrics::DispatchMetrics;
pub use signing::{SignerResolver, StaticSigners};

use crate::activity::ActivityStatus;
use crate::breaker::Health;
use crate::error::OutboxError;
use crate::event::OutboxDestination;
use crate::id::EventId;
use crate::outbox::Outbox;
use crate::schedule::{ms, next_attempt, NextAttempt};
use crate::store::{AttemptFacts, ClaimRequest, Claimed, Finish, Outcome};
use adcp_sign::WebhookEvent;
use adcp_webhook::{AttemptClient, AttemptStatus, AttemptVerdict};
use handoff::{Handoff, InFlight};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

/// The tracing target of the dispatcher's events.
pub const DISPATCH_TRACING_TARGET: &str = "adcp_outbox::dispatch";

/// The least a lease must exceed the attempt timeout by: time to record
/// the outcome. A lease shorter than that would let a second worker take
/// over an attempt still under way (a duplicate, the classic visibility
/// timeout bug).
pub const MIN_LEASE_MARGIN: Duration = Duration::from_secs(5);

/// How the workers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatcherConfig {
    /// Attempts in flight in this process (default 32).
    pub concurrency: usize,
    /// Attempts in flight per destination origin in this process
    /// (default 4): a slow or black-holed buyer holds at most this many.
    pub per_destination: usize,
    /// The lease of one attempt (default: the attempt timeout + 30 s; at
    /// least the attempt timeout + [`MIN_LEASE_MARGIN`]).
    pub lease: Option<Duration>,
    /// The longest sleep with nothing due: the polling fallback that finds
    /// events enqueued by other processes without a wakeup (default 1 s).
    pub poll_interval: Duration,
    /// This worker's name in the lease rows.
    pub owner: String,
}

impl Default for DispatcherConfig {
    fn default() -> Self {
        Self {
            concurrency: 32,
            per_destination: 4,
            lease: None,
            poll_interval: Duration::from_secs(1),
            owner: format!("pid-{}", std::process::id()),
        }
    }
}

/// Delivers what an [`Outbox`] holds. Build one per process; run it until
/// shutdown.
pub struct Dispatcher {
    outbox: Outbox,
    client: AttemptClient,
    signers: Arc<dyn SignerResolver>,
    hook: Option<Arc<dyn AttemptHook>>,
    config: DispatcherConfig,
    lease: Duration,
    metrics: Arc<DispatchMetrics>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("config", &self.config)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher delivering `outbox`'s events through `client` (its
    /// attempt timeout and SSRF rules), signing with `signers`.
    ///
    /// # Errors
    ///
    /// [`OutboxError::Config`]: a lease not longer than the attempt
    /// timeout plus [`MIN_LEASE_MARGIN`], a zero concurrency.
    pub fn new(
        outbox: Outbox,
        client: AttemptClient,
        signers: Arc<dyn SignerResolver>,
        config: DispatcherConfig,
    ) -> Result<Self, OutboxError> {
        if config.concurrency == 0 || config.per_destination == 0 {
            return Err(OutboxError::Config(
                "concurrency and per-destination must be at least 1".to_owned(),
            ));
        }
        let floor = client.attempt_timeout() + MIN_LEASE_MARGIN;
        let lease = config
            .lease
            .unwrap_or(client.attempt_timeout() + Duration::from_secs(30));
        if lease < floor {
            return Err(OutboxError::Config(format!(
                "a lease of {lease:?} is shorter than the attempt timeout ({:?}) plus {MIN_LEASE_MARGIN:?}: a second worker could take over an attempt still under way",
                client.attempt_timeout()
            )));
        }
        Ok(Self {
            outbox,
            client,
            signers,
            hook: None,
            config,
            lease,
            metrics: Arc::new(DispatchMetrics::default()),
        })
    }

    /// Runs `hook` before every attempt.
    #[must_use]
    pub fn with_hook(mut self, hook: Arc<dyn AttemptHook>) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The counters (shared; read them while it runs).
    #[must_use]
    pub fn metrics(&self) -> Arc<DispatchMetrics> {
        Arc::clone(&self.metrics)
    }

    /// The lease in force.
    #[must_use]
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Delivers until `shutdown` completes, then stops claiming, lets the
    /// attempts in flight finish for up to `drain`, and records the rest
    /// as abandoned (back to pending, due at once) so that no lease is
    /// left to expire.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        self.run_with_drain(shutdown, Duration::from_secs(10)).await;
    }

    /// [`run`](Self::run) with the drain deadline.
    pub async fn run_with_drain(self, shutdown: impl Future<Output = ()> + Send, drain: Duration) {
        let this = Arc::new(self);
        let in_flight = Arc::new(InFlight::new(Arc::clone(&this.metrics)));
        let progress = Arc::new(Notify::new());
        // Set while due work may be waiting for a slot: the finisher then
        // wakes the loop when it frees some.
        let starved = Arc::new(AtomicBool::new(false));
        let (finish_tx, finish_rx) = mpsc::unbounded_channel::<Finish>();
        let finisher = tokio::spawn(finisher(
            Arc::clone(&this),
            finish_rx,
            Arc::clone(&in_flight),
            Arc::clone(&progress),
            Arc::clone(&starved),
        ));
        let (handed_tx, mut handed_rx) = mpsc::unbounded_channel::<Claimed>();
        let handoff = Arc::new(Handoff::new(
            Arc::clone(&in_flight),
            this.config.concurrency,
            this.config.per_destination,
            ms(this.lease),
            this.config.owner.clone(),
            handed_tx,
        ));
        this.outbox.handoff().set(&handoff);
        let mut attempts = Attempts {
            tasks: JoinSet::new(),
            leases: Arc::new(Mutex::new(HashMap::new())),
            finish_tx: finish_tx.clone(),
        };
        let wake = this.outbox.store().wakeups();
        let clock = Arc::clone(&this.outbox.config().clock);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut store_backoff = Duration::from_millis(100);
        // Expiry runs once a second of real time (an injected clock may
        // stand still between the jumps a test makes).
        let mut last_expiry: Option<tokio::time::Instant> = None;
        let mut scan = true;
        let mut scan_at = tokio::time::Instant::now();
        loop {
            while attempts.tasks.try_join_next().is_some() {}
            let now = clock.now_ms();
            if last_expiry.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                last_expiry = Some(tokio::time::Instant::now());
                if let Err(e) = this.outbox.store().expire_due(now).await {
                    this.metrics.store_error();
                    tracing::warn!(target: DISPATCH_TRACING_TARGET, error = %e, "expiring events failed");
                }
            }
            if scan || tokio::time::Instant::now() >= scan_at {
                scan = false;
                starved.store(true, Ordering::SeqCst);
                let mut claimed_any = false;
                let mut full = true;
                if let Some((free, counts)) = in_flight.begin_claim(this.config.concurrency) {
                    let request = ClaimRequest {
                        now_ms: now,
                        lease_ms: ms(this.lease),
                        owner: this.config.owner.clone(),
                        limit: free,
                        per_origin_cap: this.config.per_destination,
                        in_flight: counts,
                    };
                    match this.outbox.store().claim(request).await {
                        Ok(batch) => {
                            in_flight.end_claim(batch.iter().map(|c| c.origin.as_str()));
                            store_backoff = Duration::from_millis(100);
                            claimed_any = !batch.is_empty();
                            full = batch.len() >= free;
                            for c in batch {
                                attempts.start(&this, c);
                            }
                        }
                        Err(e) => {
                            in_flight.end_claim(std::iter::empty());
                            this.metrics.store_error();
                            tracing::warn!(target: DISPATCH_TRACING_TARGET, error = %e, "claiming events failed; retrying");
                            tokio::select! {
                                () = &mut shutdown => break,
                                () = tokio::time::sleep(store_backoff) => {}
                            }
                            store_backoff = (store_backoff * 2).min(Duration::from_secs(5));
                            scan = true;
                            continue;
                        }
                    }
                }
                if claimed_any {
                    // More may be due: claim again before sleeping.
                    scan = true;
                    tokio::select! {
                        biased;
                        () = &mut shutdown => break,
                        () = std::future::ready(()) => continue,
                    }
                }
                let wait = if full {
                    // Every slot taken: a completion wakes us.
                    this.config.poll_interval
                } else {
                    match this.outbox.store().next_due(now).await {
                        Ok(Some(at)) if at > now => {
                            starved.store(false, Ordering::SeqCst);
                            Duration::from_millis(u64::try_from(at - now).unwrap_or(0))
                        }
                        // Due but not claimable (its origin is at its cap
                        // here): a completion wakes us, or a short poll.
                        Ok(Some(_)) => Duration::from_millis(25),
                        Ok(None) => {
                            starved.store(false, Ordering::SeqCst);
                            this.config.poll_interval
                        }
                        Err(_) => store_backoff,
                    }
                };
                scan_at = tokio::time::Instant::now() + wait.min(this.config.poll_interval);
            }
            tokio::select! {
                () = &mut shutdown => break,
                () = wake.notified() => scan = true,
                () = progress.notified() => scan = true,
                () = tokio::time::sleep_until(scan_at) => scan = true,
                Some(c) = handed_rx.recv() => {
                    attempts.start(&this, c);
                    while let Ok(c) = handed_rx.try_recv() {
                        attempts.start(&this, c);
                    }
                }
            }
        }
        // No more hand-offs; those handed over but not started go back to
        // pending untried.
        this.outbox.handoff().clear(&handoff);
        handed_rx.close();
        let now = clock.now_ms();
        while let Ok(c) = handed_rx.try_recv() {
            let _ = finish_tx.send(Finish::untried(c, now));
        }
        // Drain: no more claims; in-flight attempts get `drain` to finish.
        let Attempts {
            mut tasks,
            leases,
            finish_tx: attempts_tx,
        } = attempts;
        // The finisher ends when every sender is gone.
        drop(attempts_tx);
        let deadline = tokio::time::Instant::now() + drain;
        while !tasks.is_empty() {
            match tokio::time::timeout_at(deadline, tasks.join_next()).await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => {
                    tasks.abort_all();
                    while tasks.join_next().await.is_some() {}
                    break;
                }
            }
        }
        let abandoned: Vec<(EventId, (i64, String))> =
            leases.lock().map(|mut l| l.drain().collect()).unwrap_or_default();
        let now = clock.now_ms();
        for (id, (lease_token, origin)) in abandoned {
            let _ = finish_tx.send(Finish {
                id,
                lease_token,
                origin,
                outcome: Outcome::RetryAt(now),
                facts: Some(AttemptFacts {
                    status: ActivityStatus::ConnectionError,
                    http_status: None,
                    response_time_ms: None,
                    error_message: Some("attempt abandoned: the relay shut down before the answer".to_owned()),
                    completed_at_ms: now,
                    health: Health::Unknown,
                }),
                now_ms: now,
            });
        }
        drop(finish_tx);
        let _ = finisher.await;
    }

    /// The body and destination of `c` as sent: unsealed when encrypted at rest.
    fn unseal(&self, c: &Claimed, stored: Vec<u8>) -> Result<(Vec<u8>, OutboxDestination), OutboxError> {
        let ring = self.outbox.config().encryption.as_ref();
        let body = if crate::crypto::is_sealed(&stored) {
            ring.ok_or_else(|| OutboxError::Crypto("the body is encrypted and no keyring is configured".to_owned()))?
                .open(c.id.as_str(), "body", &stored)?
        } else {
            stored
        };
        let destination = match c.destination.legacy() {
            Some((scheme, sealed)) if crate::crypto::is_sealed_text(sealed) => {
                let ring = ring.ok_or_else(|| {
                    OutboxError::Crypto("the credentials are encrypted and no keyring is configured".to_owned())
                })?;
                let plain = ring.open_text(c.id.as_str(), "credentials", sealed)?;
                c.destination.with_legacy(scheme, &plain)
            }
            _ => c.destination.clone(),
        };
        Ok((body, destination))
    }

    /// One attempt of one claimed event, and how it ends.
    async fn attempt(&self, mut c: Claimed) -> Finish {
        let clock = &self.outbox.config().clock;
        let now = clock.now_ms();
        let finish = |outcome: Outcome, facts: Option<AttemptFacts>, now_ms: i64| Finish {
            id: c.id.clone(),
            lease_token: c.lease_token,
            origin: c.origin.clone(),
            outcome,
            facts,
            now_ms,
        };
        if let Some(hook) = &self.hook {
            if let HookDecision::Suppress(reason) = hook.before_attempt(&c).await {
                tracing::info!(target: DISPATCH_TRACING_TARGET, id = %c.id, reason = %reason, "event suppressed before its attempt");
                self.metrics.refused();
                return finish(
                    Outcome::Withdrawn(format!("suppressed: {reason}")),
                    None,
                    clock.now_ms(),
                );
            }
        }
        let Some(signer) = self.signers.signer(&c.signing_scope) else {
            tracing::error!(target: DISPATCH_TRACING_TARGET, id = %c.id, scope = %c.signing_scope, "no signing key for this signing scope; the event waits");
            return finish(Outcome::Release(now.saturating_add(60_000)), None, now);
        };
        let stored = std::mem::take(&mut c.body);
        let (body, destination) = match self.unseal(&c, stored) {
            Ok(parts) => parts,
            Err(e) => {
                // A key missing from the ring may be added back: wait.
                tracing::error!(target: DISPATCH_TRACING_TARGET, id = %c.id, error = %e, "stored event does not decrypt; the event waits");
                return finish(Outcome::Release(now.saturating_add(60_000)), None, now);
            }
        };
        let destination = match destination.to_destination() {
            Ok(d) => d,
            Err(e) => {
                self.metrics.refused();
                return finish(Outcome::Withdrawn(format!("destination refused: {e}")), None, now);
            }
        };
        let event = match WebhookEvent::from_json_bytes(body) {
            Ok(e) => e,
            Err(e) => {
                self.metrics.refused();
                return finish(
                    Outcome::Withdrawn(format!("stored body unreadable: {}", e.code())),
                    None,
                    now,
                );
            }
        };
        let started = std::time::Instant::now();
        let result = self
            .client
            .attempt(signer.as_ref(), &destination, &event, c.attempt)
            .await;
        let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let done = clock.now_ms();
        let record = result.record;
        let status = match record.status {
            AttemptStatus::Success => ActivityStatus::Success,
            AttemptStatus::Failed => ActivityStatus::Failed,
            AttemptStatus::Timeout => ActivityStatus::Timeout,
            AttemptStatus::ConnectionError => ActivityStatus::ConnectionError,
        };
        let mut facts = AttemptFacts {
            status,
            http_status: record.http_status_code,
            response_time_ms: record.http_status_code.map(|_| elapsed),
            error_message: record.error_message.clone(),
            completed_at_ms: done,
            health: Health::Down,
        };
        let outcome = match result.verdict {
            AttemptVerdict::Delivered { .. } => {
                facts.health = Health::Up;
                facts.error_message = None;
                self.metrics.delivered(done.saturating_sub(c.enqueued_at_ms));
                Outcome::Delivered
            }
            AttemptVerdict::SignatureRejected { code } => {
                facts.health = Health::Up;
                tracing::error!(target: DISPATCH_TRACING_TARGET, id = %c.id, code = %code, "receiver rejected the webhook signature; delivery stopped (terminal per spec)");
                self.metrics.refused();
                Outcome::Refused(format!("receiver rejected the signature: {code}"))
            }
            AttemptVerdict::Conflict => {
                facts.health = Health::Up;
                self.metrics.refused();
                Outcome::Refused("receiver answered 409: the key is bound to another payload there".to_owned())
            }
            AttemptVerdict::InvalidDestination(e) => {
                self.metrics.refused();
                return finish(Outcome::Withdrawn(format!("destination refused: {e}")), None, done);
            }
            AttemptVerdict::SigningFailed(code) => {
                tracing::warn!(target: DISPATCH_TRACING_TARGET, id = %c.id, code = %code, "signing failed; the event waits");
                let retry = self.outbox.config().retry.ceiling(c.attempt);
                return finish(Outcome::Release(done.saturating_add(ms(retry))), None, done);
            }
            AttemptVerdict::Retry { retry_after } => {
                let config = self.outbox.config();
                match next_attempt(
                    &config.retry,
                    c.attempt,
                    retry_after,
                    done,
                    c.deadline_ms,
                    config.random.as_ref(),
                ) {
                    NextAttempt::At(at) => Outcome::RetryAt(at),
                    NextAttempt::Expire => {
                        self.metrics.expired();
                        Outcome::Expired(if config.retry.max_attempts().is_some_and(|m| c.attempt >= m) {
                            "attempt cap reached".to_owned()
                        } else {
                            "retry horizon passed".to_owned()
                        })
                    }
                }
            }
        };
        self.metrics.attempt(facts.status);
        finish(outcome, Some(facts), done)
    }
}

/// Records outcomes in batches (one transaction per batch), retrying
/// while the store is unavailable and the leases may still hold.
async fn finisher(
    this: Arc<Dispatcher>,
    mut rx: mpsc::UnboundedReceiver<Finish>,
    in_flight: Arc<InFlight>,
    progress: Arc<Notify>,
    starved: Arc<AtomicBool>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < 256 {
            match rx.try_recv() {
                Ok(f) => batch.push(f),
                Err(_) => break,
            }
        }
        let mut backoff = Duration::from_millis(50);
        let give_up = tokio::time::Instant::now() + this.lease;
        loop {
            match this.outbox.store().finish(batch.clone()).await {
                Ok(applied) => {
                    for (f, ok) in batch.iter().zip(applied) {
                        if !ok {
                            this.metrics.fenced();
                            tracing::warn!(target: DISPATCH_TRACING_TARGET, id = %f.id, "outcome dropped: the lease had expired or moved on");
                        }
                    }
                    break;
                }
                Err(e) => {
                    this.metrics.store_error();
                    if tokio::time::Instant::now() >= give_up {
                        tracing::error!(target: DISPATCH_TRACING_TARGET, error = %e, n = batch.len(), "outcomes not recorded before their leases expired; the events will be retried");
                        break;
                    }
                    tracing::warn!(target: DISPATCH_TRACING_TARGET, error = %e, "recording outcomes failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
        for f in &batch {
            in_flight.remove(&f.origin);
        }
        // The loop rescans when due work waited for these slots, or when
        // an event went back to pending (its next due time is new).
        let rescheduled = batch
            .iter()
            .any(|f| matches!(f.outcome, Outcome::RetryAt(_) | Outcome::Release(_)));
        if rescheduled || starved.load(Ordering::SeqCst) {
            progress.notify_one();
        }
    }
}

/// The attempts under way: their tasks, and their leases (for the drain to
/// record as abandoned those it had to cut).
struct Attempts {
    tasks: JoinSet<()>,
    leases: Arc<Mutex<HashMap<EventId, (i64, String)>>>,
    finish_tx: mpsc::UnboundedSender<Finish>,
}

impl Attempts {
    /// Starts the attempt of `c` (its slot is already counted).
    fn start(&mut self, this: &Arc<Dispatcher>, c: Claimed) {
        if let Ok(mut l) = self.leases.lock() {
            l.insert(c.id.clone(), (c.lease_token, c.origin.clone()));
        }
        let this = Arc::clone(this);
        let tx = self.finish_tx.clone();
        let leases = Arc::clone(&self.leases);
        self.tasks.spawn(async move {
            let id = c.id.clone();
            let finish = this.attempt(c).await;
            if let Ok(mut l) = leases.lock() {
                l.remove(&id);
            }
            let _ = tx.send(finish);
        });
    }
}
