//! Durable delivery against the in-process sender, side by side in one
//! run: signed Ed25519 deliveries per second to one local sink, and the
//! CPU each delivered event costs this process.
//!
//! Variants, each delivering batches of `DELIVERY_BATCH` (default 2,000)
//! `account.status_changed` events to one sink (a minimal axum server
//! answering `200`, in a child process so its CPU is not counted):
//!
//! - `in_process` (the baseline): one `WebhookSender`, 64 tasks each
//!   calling `deliver` on the next event (the non-durable path);
//! - `sqlite`: 64 tasks calling `Outbox::enqueue` on a `SqliteOutbox` (a
//!   file in the temporary directory: WAL, `synchronous=FULL`) while a
//!   `Dispatcher` (concurrency 64, 64 per destination) delivers; a batch
//!   ends when every event is recorded `delivered` in the store;
//! - `postgres`: the same on the PostgreSQL outbox at `DATABASE_URL`
//!   (default `postgres://root@127.0.0.1:5432/test`; tables under a
//!   prefix of this run, dropped at the end), when the build has it
//!   (`--features postgres`) and the server answers.
//!
//! Output: criterion's estimates, then per variant deliveries/s, µs of
//! process CPU per event (user + system, all threads, over every timed
//! batch) and the ratios to the baseline; then the *interleaved* figure:
//! `DELIVERY_ROUNDS` (default 5) rounds of one batch of each variant in
//! turn, reporting the median of the per-round ratios. For PostgreSQL the
//! server's CPU (every `postgres` process on this machine) is reported
//! beside ours.
//!
//! `cargo bench -p adcp-outbox --features postgres --bench delivery`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

mod support;

use adcp_outbox::{
    open_store, BreakerPolicy, DispatchMetrics, Dispatcher, DispatcherConfig, EventState, NewEvent, Outbox,
    OutboxConfig, OutboxError, StaticSigners,
};
use adcp_test_support::{criterion_dir, criterion_mean_ns};
use adcp_webhook::AttemptClient;
use criterion::{Criterion, SamplingMode, Throughput};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Cost, InProcess, SinkProcess};
use tokio::runtime::Runtime;

/// Concurrent `deliver` calls, enqueueing clients, attempts in flight.
const CONCURRENCY: usize = 64;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Where a durable variant's store lives, to remove it at the end.
enum Cleanup {
    Dir(PathBuf),
    Postgres { url: String, prefix: String },
}

/// An outbox with its dispatcher running on the bench runtime.
struct Durable {
    outbox: Outbox,
    metrics: Arc<DispatchMetrics>,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    delivered: u64,
    cleanup: Cleanup,
}

impl Durable {
    async fn open(store: &str, prefix: &str, url: &str, cleanup: Cleanup) -> Result<Self, OutboxError> {
        let store = open_store(store, prefix, BreakerPolicy::default()).await?;
        let outbox = Outbox::new(store, OutboxConfig::default())?;
        let client = AttemptClient::builder()
            .destination_policy(support::loopback_policy())
            .build()
            .map_err(|e| OutboxError::Config(e.to_string()))?;
        let signers = StaticSigners::new().with("default", support::signer());
        let dispatcher = Dispatcher::new(
            outbox.clone(),
            client,
            Arc::new(signers),
            DispatcherConfig {
                concurrency: CONCURRENCY,
                per_destination: CONCURRENCY,
                ..DispatcherConfig::default()
            },
        )?;
        let metrics = dispatcher.metrics();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(dispatcher.run_with_drain(
            async move {
                let _ = stopped.await;
            },
            Duration::from_secs(10),
        ));
        Ok(Self {
            outbox,
            metrics,
            url: url.to_owned(),
            stop: Some(stop),
            task: Some(task),
            delivered: 0,
            cleanup,
        })
    }

    /// Enqueues `events` from 64 concurrent clients while the dispatcher
    /// runs; returns once all are recorded `delivered`.
    async fn deliver_all(&mut self, events: Vec<NewEvent>) {
        let target = self.delivered + events.len() as u64;
        let queue = Arc::new(Mutex::new(events));
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..CONCURRENCY {
            let (outbox, queue) = (self.outbox.clone(), Arc::clone(&queue));
            clients.spawn(async move {
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some(event) = next else { break };
                    outbox.enqueue(event).await.expect("enqueue");
                }
            });
        }
        while let Some(done) = clients.join_next().await {
            done.expect("enqueue task");
        }
        while self.metrics.delivered_count() < target {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Delivered means recorded: the dispatcher counts an attempt in
        // flight until its outcome's transaction has committed, and
        // publishes the count at every turn of its loop (a store query for
        // the delivered count would scan the table, on the writer thread).
        while in_flight(&self.metrics) > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.delivered = target;
    }

    fn batch(&self, from: u64, n: usize) -> Vec<NewEvent> {
        support::outbox_events(from, n, &self.url)
    }

    /// Stops the dispatcher, checks the accounting, removes the store.
    async fn close(mut self, name: &str) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let stats = self.outbox.stats().await.expect("stats");
        let others: u64 = EventState::ALL
            .iter()
            .filter(|s| **s != EventState::Delivered)
            .map(|s| stats.count(*s))
            .sum();
        println!(
            "  {name}: {} of {} events delivered, {others} in any other state, {} fenced, {} store errors",
            stats.count(EventState::Delivered),
            self.delivered,
            self.metrics.fenced_count(),
            self.metrics.store_errors()
        );
        drop(self.outbox);
        match &self.cleanup {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Postgres { url, prefix } => drop_postgres_prefix(url, prefix).await,
        }
    }
}

/// The dispatcher's `adcp_outbox_in_flight` gauge.
fn in_flight(metrics: &DispatchMetrics) -> u64 {
    metrics
        .render()
        .lines()
        .find_map(|l| l.strip_prefix("adcp_outbox_in_flight "))
        .and_then(|v| v.trim().parse().ok())
        .expect("adcp_outbox_in_flight")
}

/// Drops every table and function whose name starts with `prefix`.
async fn drop_postgres_prefix(url: &str, prefix: &str) {
    let Ok((client, connection)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await else {
        eprintln!("could not connect to drop the bench tables {prefix}*");
        return;
    };
    tokio::spawn(connection);
    let tables = client
        .query(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, $1)",
            &[&prefix],
        )
        .await
        .unwrap_or_default();
    for t in tables {
        let name: String = t.get(0);
        let _ = client
            .batch_execute(&format!("DROP TABLE IF EXISTS {name} CASCADE"))
            .await;
    }
    let functions = client
        .query(
            "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = current_schema() AND starts_with(p.proname, $1)",
            &[&prefix],
        )
        .await
        .unwrap_or_default();
    for f in functions {
        let name: String = f.get(0);
        let _ = client
            .batch_execute(&format!("DROP FUNCTION IF EXISTS {name} CASCADE"))
            .await;
    }
}

/// Numbers events across every batch of the run (distinct payloads).
struct Counter(Cell<u64>);

impl Counter {
    fn take(&self, n: usize) -> u64 {
        let from = self.0.get();
        self.0.set(from + n as u64);
        from
    }
}

/// What one variant cost over all its timed batches.
#[derive(Default, Clone)]
struct Totals {
    cost: Cost,
    events: u64,
    postgres_cpu: Duration,
    /// Process CPU by thread name.
    threads: Vec<(String, Duration)>,
}

impl Totals {
    fn add(&mut self, cost: Cost, events: usize, threads: Vec<(String, Duration)>) {
        self.cost += cost;
        self.events += events as u64;
        for (name, cpu) in threads {
            match self.threads.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += cpu,
                None => self.threads.push((name, cpu)),
            }
        }
    }

    fn per_sec(&self) -> f64 {
        self.events as f64 / self.cost.wall.as_secs_f64()
    }

    fn cpu_us(&self) -> f64 {
        self.cost.cpu.as_secs_f64() * 1e6 / self.events as f64
    }

    fn postgres_cpu_us(&self) -> f64 {
        self.postgres_cpu.as_secs_f64() * 1e6 / self.events as f64
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn main() {
    support::sink_role();
    let started = std::time::SystemTime::now();
    let batch = env_usize("DELIVERY_BATCH", 2000);
    let rounds = env_usize("DELIVERY_ROUNDS", 5);
    let rt = Runtime::new().unwrap();
    let sink = SinkProcess::spawn();
    let url = sink.url();
    let counter = Counter(Cell::new(0));

    let baseline = InProcess::new(&url, CONCURRENCY);
    let dir = std::env::temp_dir().join(format!("adcp-outbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = rt
        .block_on(Durable::open(
            &format!("sqlite:{}", dir.join("outbox.sqlite").display()),
            adcp_outbox::DEFAULT_TABLE_PREFIX,
            &url,
            Cleanup::Dir(dir.clone()),
        ))
        .expect("sqlite outbox");
    let pg_url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned());
    let prefix = format!("bench_{}_", std::process::id());
    let postgres = match rt.block_on(Durable::open(
        &pg_url,
        &prefix,
        &url,
        Cleanup::Postgres {
            url: pg_url.clone(),
            prefix: prefix.clone(),
        },
    )) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("postgres: skipped ({e})");
            None
        }
    };
    let sqlite = RefCell::new(sqlite);
    let postgres = postgres.map(RefCell::new);

    let totals: RefCell<[Totals; 3]> = RefCell::new(std::array::from_fn(|_| Totals::default()));
    let run_baseline = |from: u64| {
        let events = support::webhook_events(from, batch);
        let threads = support::thread_cpu();
        let cost = Cost::of(&rt, baseline.deliver_all(events)).0;
        (cost, support::thread_cpu_since(&threads))
    };
    let run_durable = |d: &RefCell<Durable>, from: u64| {
        let mut d = d.borrow_mut();
        let events = d.batch(from, batch);
        let threads = support::thread_cpu();
        let cost = Cost::of(&rt, d.deliver_all(events)).0;
        (cost, support::thread_cpu_since(&threads))
    };

    let mut c = Criterion::default().configure_from_args();
    {
        let mut group = c.benchmark_group("delivery");
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .throughput(Throughput::Elements(batch as u64));
        group.bench_function("in_process", |b| {
            b.iter_custom(|iters| {
                let mut wall = Duration::ZERO;
                for _ in 0..iters {
                    let (cost, threads) = run_baseline(counter.take(batch));
                    totals.borrow_mut()[0].add(cost, batch, threads);
                    wall += cost.wall;
                }
                wall
            })
        });
        group.bench_function("sqlite", |b| {
            b.iter_custom(|iters| {
                let mut wall = Duration::ZERO;
                for _ in 0..iters {
                    let (cost, threads) = run_durable(&sqlite, counter.take(batch));
                    totals.borrow_mut()[1].add(cost, batch, threads);
                    wall += cost.wall;
                }
                wall
            })
        });
        if let Some(pg) = &postgres {
            group.bench_function("postgres", |b| {
                b.iter_custom(|iters| {
                    let mut wall = Duration::ZERO;
                    for _ in 0..iters {
                        let server0 = support::postgres_server_cpu();
                        let (cost, threads) = run_durable(pg, counter.take(batch));
                        let server = support::postgres_server_cpu().saturating_sub(server0);
                        let mut t = totals.borrow_mut();
                        t[2].add(cost, batch, threads);
                        t[2].postgres_cpu += server;
                        wall += cost.wall;
                    }
                    wall
                })
            });
        }
        group.finish();
    }
    c.final_summary();

    // Interleaved: one batch of each in turn, ratios per round.
    let mut tput = (Vec::new(), Vec::new());
    let mut cpu = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (base, _) = run_baseline(counter.take(batch));
        let (s, _) = run_durable(&sqlite, counter.take(batch));
        tput.0.push(base.wall.as_secs_f64() / s.wall.as_secs_f64());
        cpu.0.push(s.cpu.as_secs_f64() / base.cpu.as_secs_f64());
        if let Some(pg) = &postgres {
            let (p, _) = run_durable(pg, counter.take(batch));
            tput.1.push(base.wall.as_secs_f64() / p.wall.as_secs_f64());
            cpu.1.push(p.cpu.as_secs_f64() / base.cpu.as_secs_f64());
        }
    }

    println!("\naccounting:");
    rt.block_on(sqlite.into_inner().close("sqlite"));
    if let Some(pg) = postgres {
        rt.block_on(pg.into_inner().close("postgres"));
    }
    drop(sink);

    let t = totals.into_inner();
    let t = &t;
    let names = ["in_process", "sqlite", "postgres"];
    // Criterion's estimates of this run only (a filtered or skipped
    // variant leaves an older file behind); else this run's own totals.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mean = |name: &str| {
        let id = format!("delivery/{name}");
        let file = criterion_dir(manifest)?.join(&id).join("new").join("estimates.json");
        let fresh = std::fs::metadata(file)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= started);
        if fresh {
            criterion_mean_ns(manifest, &id)
        } else {
            None
        }
    };
    println!(
        "\ndelivery of {batch} signed Ed25519 events to one local sink, {CONCURRENCY} concurrent \
         (criterion means; CPU = this process, user + system, over every timed batch):"
    );
    println!(
        "  {:<12} {:>14} {:>14} {:>12} {:>13}",
        "variant", "deliveries/s", "CPU µs/event", "× rate", "× CPU/event"
    );
    let base_mean = mean(names[0]);
    for (i, name) in names.iter().enumerate() {
        if t[i].events == 0 {
            continue;
        }
        let per_sec = mean(name).map_or_else(|| t[i].per_sec(), |m| batch as f64 / (m / 1e9));
        let base_per_sec = base_mean.map_or_else(|| t[0].per_sec(), |m| batch as f64 / (m / 1e9));
        let rate = format!("{:.3}", per_sec / base_per_sec);
        print!(
            "  {name:<12} {per_sec:>14.0} {:>14.1} {rate:>12} {:>13.3}",
            t[i].cpu_us(),
            t[i].cpu_us() / t[0].cpu_us()
        );
        if i == 2 {
            print!("   (+ {:.1} µs/event in the PostgreSQL server)", t[i].postgres_cpu_us());
        }
        println!();
    }
    println!("\nCPU µs/event by thread (clock ticks of /proc/self/task; live threads):");
    for (i, name) in names.iter().enumerate() {
        if t[i].events == 0 {
            continue;
        }
        let threads: Vec<String> = t[i]
            .threads
            .iter()
            .filter(|(_, cpu)| !cpu.is_zero())
            .map(|(n, cpu)| format!("{n} {:.1}", cpu.as_secs_f64() * 1e6 / t[i].events as f64))
            .collect();
        println!("  {name:<12} {}", threads.join(", "));
    }
    println!("\ninterleaved, median of {rounds} rounds (one batch of each per round):");
    println!(
        "  sqlite / in_process: rate ×{:.3}, CPU/event ×{:.3}   (targets: rate ≥ 0.5, CPU ≤ 2)",
        median(tput.0),
        median(cpu.0)
    );
    if !tput.1.is_empty() {
        println!(
            "  postgres / in_process: rate ×{:.3}, CPU/event ×{:.3} (this process only)",
            median(tput.1),
            median(cpu.1)
        );
    }
}
