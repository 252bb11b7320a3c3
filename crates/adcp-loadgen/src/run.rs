//! `adcp-loadgen run`: sign, send, measure, account.
//!
//! A producer on its own OS thread signs jobs ([`crate::plan::Planner`])
//! into a bounded channel (or all of them before the timed phase with
//! `presign`). With [`Pace::Rate`] a pacer hands job *i* to the workers at
//! `start + i / rate`; when every worker is busy the pacer blocks, and how
//! late each job was picked up is recorded (the offered rate never drops
//! silently). With [`Pace::Max`] the workers take jobs as fast as they
//! finish them. Each of the `connections` workers holds one keep-alive
//! connection per URL.

use crate::client::{Connection, Target};
use crate::plan::{Job, Kind, PlanConfig, Planner, SignProfile};
use crate::report::{Interval, Report};
use crate::sink::fetch_stats;
use crate::Error;
use adcp_sign::{Algorithm, SoftwareSigner};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Where the signing keys come from.
///
/// Each key is one `keyid`, and a receiver keeps at most 100,000 replay
/// entries per `keyid` for as long as their signatures are valid (300 s):
/// one key sustains about 330 requests/s against the gateway. Give as many
/// keys as the rate needs; requests rotate over them.
#[derive(Debug)]
pub enum KeySource {
    /// A private JWK file (`adcp-sig keygen --out-private`), or a set
    /// `{"keys": [private JWK, …]}` (`adcp-loadgen keygen`).
    JwkFile(PathBuf),
    /// Fresh Ed25519 keys; their public JWKS is written to the path.
    Generate {
        /// Where the public JWKS goes.
        jwks_out: PathBuf,
        /// How many keys.
        count: usize,
    },
    /// Keys already loaded.
    Keys(Vec<SoftwareSigner>),
}

/// `count` fresh Ed25519 keys (`keyid` `{prefix}-{i}`).
///
/// # Errors
///
/// The operating system's CSPRNG failed, or the prefix is not a valid
/// `keyid`.
pub fn generate_keys(prefix: &str, count: usize) -> Result<Vec<SoftwareSigner>, Error> {
    (0..count.max(1))
        .map(|i| Ok(SoftwareSigner::generate(Algorithm::Ed25519, format!("{prefix}-{i}"))?))
        .collect()
}

/// The public JWKS of `keys`.
///
/// # Errors
///
/// A key cannot be exported.
pub fn public_jwks(keys: &[SoftwareSigner]) -> Result<serde_json::Value, Error> {
    let keys = keys
        .iter()
        .map(|k| Ok(k.public_jwk()?.to_public_json()))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(serde_json::json!({ "keys": keys }))
}

/// The private keys as `{"keys": [private JWK, …]}` (secret: write it to a
/// file only the load generator reads).
///
/// # Errors
///
/// A key cannot be exported.
pub fn private_jwks(keys: &[SoftwareSigner]) -> Result<serde_json::Value, Error> {
    let keys = keys
        .iter()
        .map(|k| Ok(k.private_jwk()?.to_json()))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(serde_json::json!({ "keys": keys }))
}

impl KeySource {
    fn load(self) -> Result<Vec<SoftwareSigner>, Error> {
        match self {
            Self::JwkFile(path) => {
                let bytes = std::fs::read(&path).map_err(|e| Error::new(format!("{}: {e}", path.display())))?;
                let value: serde_json::Value =
                    serde_json::from_slice(&bytes).map_err(|e| Error::new(format!("{}: {e}", path.display())))?;
                match value.get("keys").and_then(serde_json::Value::as_array) {
                    Some(keys) if !keys.is_empty() => keys
                        .iter()
                        .map(|k| Ok(SoftwareSigner::from_jwk_json(k.to_string().as_bytes())?))
                        .collect(),
                    Some(_) => Err(Error::new(format!("{}: no keys", path.display()))),
                    None => Ok(vec![SoftwareSigner::from_jwk_json(&bytes)?]),
                }
            }
            Self::Generate { jwks_out, count } => {
                let keys = generate_keys("adcp-loadgen", count)?;
                std::fs::write(&jwks_out, serde_json::to_vec_pretty(&public_jwks(&keys)?)?)
                    .map_err(|e| Error::new(format!("{}: {e}", jwks_out.display())))?;
                Ok(keys)
            }
            Self::Keys(keys) if keys.is_empty() => Err(Error::new("no signing key")),
            Self::Keys(keys) => Ok(keys),
        }
    }
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// A constant arrival rate, requests per second.
    Rate(f64),
    /// As fast as the server answers.
    Max,
}

/// Everything a run needs.
#[derive(Debug)]
pub struct RunOptions {
    /// The URLs (gateways) to send to; each request is signed for its URL.
    pub urls: Vec<String>,
    /// The signing keys (requests rotate over them).
    pub key: KeySource,
    /// Rate or max.
    pub pace: Pace,
    /// Length of the timed phase.
    pub duration: Duration,
    /// Concurrent workers, each with one keep-alive connection per URL.
    pub connections: usize,
    /// Approximate body size.
    pub body_bytes: usize,
    /// Fraction of requests re-delivering an earlier event.
    pub duplicates: f64,
    /// Fraction of requests with a body changed after signing.
    pub tampered: f64,
    /// Sign every request before the timed phase (signatures are valid
    /// 300 s: keep such runs under about 4 minutes).
    pub presign: bool,
    /// With `presign` and [`Pace::Max`]: how many requests to sign
    /// (default `duration × 12,000`).
    pub requests: Option<u64>,
    /// Time-series interval.
    pub sample: Option<Duration>,
    /// Processes whose RSS is sampled.
    pub watch_pids: Vec<u32>,
    /// Base URL of the sink (`GET /stats`), for the accounting.
    pub sink: Option<String>,
    /// Seed of the request mix.
    pub seed: u64,
    /// A retry re-delivers an event sent at least this many requests
    /// earlier (default: the larger of 64, 4 × `connections` and 0.2 s of
    /// the rate). Whatever the lag, a retry is sent only once its first
    /// delivery was answered (or failed): a retry of an event still in
    /// flight would get `503`, another instance holding the claim, and
    /// a seller retries an answered or failed delivery, never a pending
    /// one.
    pub duplicate_lag: Option<usize>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Print each interval on stderr as it ends.
    pub progress: bool,
    /// What is signed: webhooks (default) or AdCP requests.
    pub profile: SignProfile,
}

impl RunOptions {
    /// Defaults: generate nothing (set [`RunOptions::key`]), 100 req/s for
    /// 10 s over 8 connections, 200-byte bodies, 10 % duplicates, 1 %
    /// tampered.
    #[must_use]
    pub fn new(urls: Vec<String>) -> Self {
        Self {
            urls,
            key: KeySource::Generate {
                jwks_out: PathBuf::from("adcp-loadgen-jwks.json"),
                count: 1,
            },
            pace: Pace::Rate(100.0),
            duration: Duration::from_secs(10),
            connections: 8,
            body_bytes: 200,
            duplicates: 0.10,
            tampered: 0.01,
            presign: false,
            requests: None,
            sample: None,
            watch_pids: Vec::new(),
            sink: None,
            seed: 0x00AD_C951_6000,
            duplicate_lag: None,
            timeout: Duration::from_secs(10),
            progress: false,
            profile: SignProfile::Webhook,
        }
    }
}

/// What one kind of request got back.
#[derive(Debug, Clone, Default)]
pub(crate) struct KindCounts {
    pub(crate) sent: u64,
    pub(crate) statuses: BTreeMap<String, u64>,
    pub(crate) codes: BTreeMap<String, u64>,
}

/// Counters shared by the workers and the sampler.
pub(crate) struct Stats {
    pub(crate) total: Histogram<u64>,
    pub(crate) interval: Histogram<u64>,
    pub(crate) behind: Histogram<u64>,
    pub(crate) interval_behind_max: u64,
    pub(crate) interval_requests: u64,
    pub(crate) interval_errors: u64,
    pub(crate) requests: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) statuses: BTreeMap<u16, u64>,
    pub(crate) codes: BTreeMap<String, u64>,
    pub(crate) kinds: [KindCounts; 3],
    pub(crate) acknowledged: HashSet<u64>,
    pub(crate) unique_sent: HashSet<u64>,
    pub(crate) last_behind_us: u64,
}

fn histogram() -> Result<Histogram<u64>, Error> {
    // Microseconds, 1 µs .. 1 h, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| Error::new(e.to_string()))
}

impl Stats {
    fn new() -> Result<Self, Error> {
        Ok(Self {
            total: histogram()?,
            interval: histogram()?,
            behind: histogram()?,
            interval_behind_max: 0,
            interval_requests: 0,
            interval_errors: 0,
            requests: 0,
            errors: BTreeMap::new(),
            statuses: BTreeMap::new(),
            codes: BTreeMap::new(),
            kinds: Default::default(),
            acknowledged: HashSet::new(),
            unique_sent: HashSet::new(),
            last_behind_us: 0,
        })
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Runs the load and returns the report.
///
/// # Errors
///
/// Setting up failed (a URL, the key, the sink's stats before or after).
/// Failed requests are counted in the report, not returned here.
pub async fn run(mut options: RunOptions) -> Result<Report, Error> {
    if options.connections == 0 {
        return Err(Error::new("--connections must be at least 1"));
    }
    if let Pace::Rate(rate) = options.pace {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(Error::new(format!("--rate must be positive, not {rate}")));
        }
    }
    let mut targets = Vec::with_capacity(options.urls.len());
    for url in &options.urls {
        targets.push(Target::resolve(url).await?);
    }
    let keys = std::mem::replace(&mut options.key, KeySource::Keys(Vec::new())).load()?;
    let sink_before = match &options.sink {
        Some(base) => Some(fetch_stats(base).await?),
        None => None,
    };

    let duration_secs = options.duration.as_secs_f64();
    let total: Option<u64> = match (options.pace, options.presign) {
        (Pace::Rate(rate), _) => Some((rate * duration_secs).ceil().max(1.0) as u64),
        (Pace::Max, true) => Some(
            options
                .requests
                .unwrap_or_else(|| (duration_secs * 12_000.0).ceil().max(1.0) as u64),
        ),
        (Pace::Max, false) => options.requests,
    };
    let rate_lag = match options.pace {
        Pace::Rate(rate) => (rate * 0.2) as usize,
        Pace::Max => 0,
    };
    let plan = PlanConfig {
        urls: options.urls.clone(),
        body_bytes: options.body_bytes,
        duplicates: options.duplicates,
        tampered: options.tampered,
        seed: options.seed,
        duplicate_lag: options
            .duplicate_lag
            .unwrap_or_else(|| (options.connections * 4).max(64).max(rate_lag)),
        profile: options.profile,
    };
    let planner = Planner::new(plan, keys)?;

    // The producer thread.
    let capacity = match (options.presign, total) {
        (true, Some(n)) => usize::try_from(n).unwrap_or(usize::MAX).clamp(1, 1 << 22),
        _ => 4096,
    };
    let (job_tx, job_rx) = mpsc::channel::<Job>(capacity);
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<(u64, Duration), Error>>();
    let presign = options.presign;
    let producer = std::thread::Builder::new()
        .name("adcp-loadgen-signer".into())
        .spawn(move || produce(planner, total, presign, &job_tx, ready_tx))?;
    let (presigned, presign_time) = ready_rx.await.map_err(|_| Error::new("the signing thread stopped"))??;
    if presign && options.progress {
        eprintln!("presigned {presigned} requests in {:.1} s", presign_time.as_secs_f64());
    }

    let stats = Arc::new(Mutex::new(Stats::new()?));
    let rss_start: Vec<Option<u64>> = options.watch_pids.iter().map(|&p| crate::rss::rss_kib(p)).collect();
    let start = Instant::now();
    let mut not_sent = 0u64;

    // Dispatch.
    let (work_rx, pacer) = match options.pace {
        Pace::Max => (Arc::new(tokio::sync::Mutex::new(job_rx)), None),
        Pace::Rate(rate) => {
            let (work_tx, work_rx) = mpsc::channel::<Job>(options.connections);
            let limit = options.duration + Duration::from_secs_f64((duration_secs * 0.1).max(5.0));
            let pacer = tokio::spawn(pace(job_rx, work_tx, rate, start, limit, total.unwrap_or(0)));
            (Arc::new(tokio::sync::Mutex::new(work_rx)), Some(pacer))
        }
    };
    let deadline = match options.pace {
        Pace::Max => Some(start + options.duration),
        Pace::Rate(_) => None,
    };
    let answered = Arc::new(tokio::sync::Notify::new());
    let mut workers = Vec::with_capacity(options.connections);
    for _ in 0..options.connections {
        workers.push(tokio::spawn(worker(
            Arc::clone(&work_rx),
            targets.iter().map(|t| Connection::new(t.addr)).collect(),
            Arc::clone(&stats),
            Arc::clone(&answered),
            deadline,
            options.timeout,
        )));
    }

    // Sampling.
    let (sampler_stop, sampler_stopped) = tokio::sync::oneshot::channel::<()>();
    let sampler = options.sample.map(|every| {
        tokio::spawn(sample(
            Arc::clone(&stats),
            options.watch_pids.clone(),
            every,
            start,
            options.progress,
            sampler_stopped,
        ))
    });

    for w in workers {
        w.await.map_err(|e| Error::new(format!("worker: {e}")))?;
    }
    let elapsed = start.elapsed();
    if let Some(pacer) = pacer {
        not_sent = pacer.await.map_err(|e| Error::new(format!("pacer: {e}")))?;
    }
    let _ = sampler_stop.send(());
    let mut intervals = match sampler {
        Some(task) => task.await.map_err(|e| Error::new(format!("sampler: {e}")))?,
        None => Vec::new(),
    };
    if let Some(every) = options.sample {
        // The last, partial interval, unless it is a sliver (the answers
        // still in flight at the last sample: its rate would mean
        // nothing). The totals count every request either way.
        if let Ok(mut s) = stats.lock() {
            let last_t = intervals.last().map_or(0.0, |i: &Interval| i.t_secs);
            if s.interval_requests > 0 && elapsed.as_secs_f64() - last_t >= every.as_secs_f64() / 2.0 {
                intervals.push(take_interval(
                    &mut s,
                    &options.watch_pids,
                    elapsed.as_secs_f64(),
                    last_t,
                ));
            }
        }
    }
    drop(work_rx);
    // The producer ends when its channel is closed (streaming) or empty.
    let _ = tokio::task::spawn_blocking(move || producer.join()).await;

    let sink_after = match (&options.sink, sink_before) {
        (Some(base), Some(before)) => Some(fetch_stats(base).await?.since(&before)),
        _ => None,
    };
    let rss_end: Vec<Option<u64>> = options.watch_pids.iter().map(|&p| crate::rss::rss_kib(p)).collect();
    let stats = stats.lock().map_err(|_| Error::new("stats lock poisoned"))?;
    Ok(Report::build(
        &options,
        &stats,
        elapsed,
        presign.then_some((presigned, presign_time)),
        not_sent,
        intervals,
        sink_after,
        &rss_start,
        &rss_end,
    ))
}

/// The producer: signs `total` jobs (or until the channel closes).
fn produce(
    mut planner: Planner,
    total: Option<u64>,
    presign: bool,
    tx: &mpsc::Sender<Job>,
    ready: tokio::sync::oneshot::Sender<Result<(u64, Duration), Error>>,
) {
    if presign {
        let started = Instant::now();
        let n = total.unwrap_or(0);
        let mut jobs = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        for _ in 0..n {
            match planner.next_job() {
                Ok(job) => jobs.push(job),
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            }
        }
        let _ = ready.send(Ok((n, started.elapsed())));
        for job in jobs {
            if tx.blocking_send(job).is_err() {
                return;
            }
        }
        return;
    }
    let _ = ready.send(Ok((0, Duration::ZERO)));
    let mut produced = 0u64;
    while total.is_none_or(|t| produced < t) {
        let Ok(job) = planner.next_job() else {
            // Signing a well-formed event cannot fail once the first one
            // succeeded; stop producing rather than spin.
            return;
        };
        if tx.blocking_send(job).is_err() {
            return;
        }
        produced += 1;
    }
}

/// The pacer: job `i` is offered at `start + i / rate`. Returns how many
/// jobs were never sent because the run fell too far behind (`limit`).
async fn pace(
    mut jobs: mpsc::Receiver<Job>,
    work: mpsc::Sender<Job>,
    rate: f64,
    start: Instant,
    limit: Duration,
    total: u64,
) -> u64 {
    let tick = Duration::from_secs_f64(1.0 / rate);
    let mut sent = 0u64;
    while sent < total {
        let due = start + tick.mul_f64(sent as f64);
        tokio::time::sleep_until(due.into()).await;
        if start.elapsed() > limit {
            break;
        }
        let Some(mut job) = jobs.recv().await else {
            break;
        };
        job.scheduled = Some(due);
        if work.send(job).await.is_err() {
            break;
        }
        sent += 1;
    }
    total.saturating_sub(sent)
}

/// Waits until the first delivery of `event` has been answered (or has
/// failed). It cannot wait forever: jobs leave the queue in order, so the
/// original was taken by another worker before this retry was, and that
/// worker records it within its timeout.
async fn original_answered(event: u64, stats: &Mutex<Stats>, answered: &tokio::sync::Notify) {
    loop {
        let mut notified = std::pin::pin!(answered.notified());
        // Registered before the check, so an answer recorded between the
        // check and the await still wakes this retry.
        notified.as_mut().enable();
        if stats.lock().map_or(true, |s| s.unique_sent.contains(&event)) {
            return;
        }
        notified.await;
    }
}

async fn worker(
    jobs: Arc<tokio::sync::Mutex<mpsc::Receiver<Job>>>,
    mut connections: Vec<Connection>,
    stats: Arc<Mutex<Stats>>,
    answered: Arc<tokio::sync::Notify>,
    deadline: Option<Instant>,
    timeout: Duration,
) {
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        let job = {
            let mut rx = jobs.lock().await;
            rx.recv().await
        };
        let Some(job) = job else {
            return;
        };
        if job.kind == Kind::Duplicate {
            original_answered(job.event, &stats, &answered).await;
        }
        let picked = Instant::now();
        let behind = job.scheduled.map(|s| micros(picked.saturating_duration_since(s)));
        let Some(conn) = connections.get_mut(job.target) else {
            continue;
        };
        let answer = tokio::time::timeout(timeout, conn.send(job.request)).await;
        let latency = micros(picked.elapsed());
        let Ok(mut s) = stats.lock() else {
            // Retries waiting on this answer read a poisoned lock as
            // answered: wake them rather than leave them waiting.
            answered.notify_waiters();
            return;
        };
        s.requests += 1;
        s.interval_requests += 1;
        s.total.saturating_record(latency);
        s.interval.saturating_record(latency);
        if let Some(behind) = behind {
            s.behind.saturating_record(behind);
            s.last_behind_us = behind;
            s.interval_behind_max = s.interval_behind_max.max(behind);
        }
        if job.kind == Kind::Unique {
            s.unique_sent.insert(job.event);
            answered.notify_waiters();
        }
        let kind = &mut s.kinds[job.kind.index()];
        kind.sent += 1;
        match answer {
            Ok(Ok(answer)) => {
                *kind.statuses.entry(answer.status.to_string()).or_default() += 1;
                if let Some(code) = &answer.error_code {
                    *kind.codes.entry(code.clone()).or_default() += 1;
                }
                *s.statuses.entry(answer.status).or_default() += 1;
                if let Some(code) = answer.error_code {
                    *s.codes.entry(code).or_default() += 1;
                }
                if answer.status == 200 && job.kind != Kind::Tampered {
                    s.acknowledged.insert(job.event);
                }
            }
            Ok(Err(e)) => {
                *kind.statuses.entry("error".to_owned()).or_default() += 1;
                s.interval_errors += 1;
                let class = if e.0.starts_with("connect") { "connect" } else { "io" };
                *s.errors.entry(class.to_owned()).or_default() += 1;
            }
            Err(_) => {
                *kind.statuses.entry("timeout".to_owned()).or_default() += 1;
                s.interval_errors += 1;
                *s.errors.entry("timeout".to_owned()).or_default() += 1;
            }
        }
    }
}

fn take_interval(s: &mut Stats, pids: &[u32], t: f64, previous_t: f64) -> Interval {
    let span = (t - previous_t).max(1e-9);
    let ms = |us: u64| us as f64 / 1000.0;
    let interval = Interval {
        t_secs: t,
        requests: s.interval_requests,
        requests_per_sec: s.interval_requests as f64 / span,
        p50_ms: ms(s.interval.value_at_quantile(0.50)),
        p99_ms: ms(s.interval.value_at_quantile(0.99)),
        max_ms: ms(s.interval.max()),
        errors: s.interval_errors,
        behind_max_ms: ms(s.interval_behind_max),
        rss_kib: pids.iter().map(|&p| crate::rss::rss_kib(p)).collect(),
    };
    s.interval.reset();
    s.interval_requests = 0;
    s.interval_errors = 0;
    s.interval_behind_max = 0;
    interval
}

async fn sample(
    stats: Arc<Mutex<Stats>>,
    pids: Vec<u32>,
    every: Duration,
    start: Instant,
    progress: bool,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    let mut n = 1u32;
    loop {
        let due = start + every * n;
        tokio::select! {
            () = tokio::time::sleep_until(due.into()) => {}
            _ = &mut stop => return out,
        }
        let t = start.elapsed().as_secs_f64();
        let previous = out.last().map_or(0.0, |i| i.t_secs);
        let interval = match stats.lock() {
            Ok(mut s) => take_interval(&mut s, &pids, t, previous),
            Err(_) => return out,
        };
        if progress {
            eprintln!("{}", interval.render_line());
        }
        out.push(interval);
        n += 1;
    }
}
