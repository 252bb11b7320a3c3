//! Shared by the `delivery` bench and the `relay_load` tool: the sink,
//! the process CPU clock, the events, and the in-process baseline.
#![allow(dead_code)] // each bench target uses part of it

use adcp_outbox::{NewEvent, OutboxDestination};
use adcp_sign::{Algorithm, BoxSigner, HttpSigner, SoftwareSigner, WebhookEvent};
use adcp_webhook::{Destination, DestinationPolicy, WebhookSender};
use serde_json::{json, Value};
use std::io::BufRead as _;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The notification every variant delivers (`account.status_changed`,
/// ≈ 330 bytes signed): one schema-valid event per `n`, the same shape
/// on every side (the relay, the outbox API, the in-process sender, the
/// Python SDK).
pub fn payload(n: u64) -> Value {
    json!({
        "notification_type": "account.status_changed",
        "notification_id": format!("acc_{n}.status.1"),
        "subscriber_id": "sub_bench",
        "fired_at": "2026-04-18T12:00:00Z",
        "account_id": format!("acc_{n}"),
        "status": "active",
        "previous_status": "pending_approval",
        "observed_at": "2026-04-18T11:59:00Z",
        "reason_code": "seller_approved"
    })
}

/// A fresh Ed25519 webhook signer.
pub fn signer() -> HttpSigner<BoxSigner> {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "bench-2026-01").expect("key");
    HttpSigner::webhook(BoxSigner::new(key)).expect("signer")
}

/// Plain HTTP to a loopback sink, as `adcp-sig relay --allow-http`.
pub fn loopback_policy() -> DestinationPolicy {
    DestinationPolicy::default().dangerously_allow_plain_http_loopback()
}

/// `n` events for the in-process sender, numbered from `from`.
pub fn webhook_events(from: u64, n: usize) -> Vec<WebhookEvent> {
    (from..from + n as u64)
        .map(|i| WebhookEvent::new(&payload(i)).expect("event"))
        .collect()
}

/// `n` events for the outbox, numbered from `from`, to `url`.
pub fn outbox_events(from: u64, n: usize, url: &str) -> Vec<NewEvent> {
    webhook_events(from, n)
        .into_iter()
        .map(|e| NewEvent::new(e, OutboxDestination::new(url)))
        .collect()
}

/// CPU time (user + system) of this process, all threads, ns resolution.
pub fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// User + system CPU of process `pid` from `/proc/PID/stat` (clock-tick
/// resolution, threads that exited included).
pub fn pid_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_cpu(&stat)
}

fn stat_cpu(stat: &str) -> Option<Duration> {
    // The command name is in parentheses and may hold spaces: count
    // fields after the last ')'. utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Some(Duration::from_secs_f64((utime + stime) as f64 / hz as f64))
}

/// CPU of this process's live threads by thread name (`tokio-rt-worker`,
/// `adcp-sqlite-wri`, …), from `/proc/self/task/*/stat`.
pub fn thread_cpu() -> Vec<(String, Duration)> {
    let mut by_name: Vec<(String, Duration)> = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return by_name;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let cpu = stat_cpu(&stat).unwrap_or_default();
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += cpu,
            None => by_name.push((name, cpu)),
        }
    }
    by_name
}

/// `after - before` per thread name.
pub fn thread_cpu_since(before: &[(String, Duration)]) -> Vec<(String, Duration)> {
    thread_cpu()
        .into_iter()
        .map(|(name, cpu)| {
            let earlier = before
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(Duration::ZERO, |(_, d)| *d);
            (name, cpu.saturating_sub(earlier))
        })
        .collect()
}

/// CPU of every process named `postgres` on this machine (the server's
/// backends, WAL writer, checkpointer …): what the database spends,
/// which is outside the relay's own process. Other clients of the same
/// server count too; run on a quiet server.
pub fn postgres_server_cpu() -> Duration {
    let mut total = Duration::ZERO;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return total;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if stat.contains("(postgres)") {
            total += stat_cpu(&stat).unwrap_or_default();
        }
    }
    total
}

/// The sink: answers every `POST` with `200` after reading the body and
/// counts them; `GET /stats` answers `{"requests": N}`. Runs in its own
/// process so that its CPU is not the measured process's.
pub fn serve_sink(listen: SocketAddr) -> ! {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let requests = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&requests);
        let app = axum::Router::new()
            .route(
                "/stats",
                axum::routing::get(move || {
                    let n = count.load(Ordering::Relaxed);
                    async move { axum::Json(json!({"requests": n})) }
                }),
            )
            .fallback(move |body: axum::body::Bytes| {
                let _ = body.len();
                requests.fetch_add(1, Ordering::Relaxed);
                async { axum::http::StatusCode::OK }
            });
        let listener = tokio::net::TcpListener::bind(listen).await.expect("bind");
        println!("listening on http://{}", listener.local_addr().expect("addr"));
        axum::serve(listener, app).await.expect("serve");
    });
    std::process::exit(0)
}

/// A sink in a child process (this executable with `ADCP_BENCH_ROLE=sink`),
/// stopped when dropped.
pub struct SinkProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl SinkProcess {
    /// Starts it and waits for its listening line.
    pub fn spawn() -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .env("ADCP_BENCH_ROLE", "sink")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn sink");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).expect("sink line");
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("sink said {line:?}"))
            .to_owned();
        Self { child, base }
    }

    /// The destination URL.
    pub fn url(&self) -> String {
        format!("{}/webhooks/adcp/op_bench", self.base)
    }
}

impl Drop for SinkProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// When this executable was started as the sink, serves and never returns.
pub fn sink_role() {
    if std::env::var("ADCP_BENCH_ROLE").as_deref() == Ok("sink") {
        serve_sink(SocketAddr::from(([127, 0, 0, 1], 0)));
    }
}

/// The in-process, non-durable baseline: one `WebhookSender`, `concurrency`
/// tasks each calling `deliver` on the next event until none is left.
pub struct InProcess {
    sender: WebhookSender<BoxSigner>,
    destination: Destination,
    concurrency: usize,
}

impl InProcess {
    /// A sender to `url` with the relay's loopback policy.
    pub fn new(url: &str, concurrency: usize) -> Self {
        let sender = WebhookSender::builder(signer())
            .destination_policy(loopback_policy())
            .build()
            .expect("sender");
        Self {
            sender,
            destination: Destination::new(url),
            concurrency,
        }
    }

    /// Delivers `events`; panics unless every one is delivered on its
    /// first attempt.
    pub async fn deliver_all(&self, events: Vec<WebhookEvent>) {
        let events = Arc::new(events);
        let next = Arc::new(AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..self.concurrency {
            let (sender, destination) = (self.sender.clone(), self.destination.clone());
            let (events, next) = (Arc::clone(&events), Arc::clone(&next));
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(event) = events.get(i) else { break };
                    let report = sender.deliver(&destination, event).await;
                    assert!(
                        report.outcome.is_delivered() && report.attempts.len() == 1,
                        "{report:?}"
                    );
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("delivery task");
        }
    }
}

/// Wall and CPU time of a piece of work.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    /// Wall clock.
    pub wall: Duration,
    /// Process CPU (user + system).
    pub cpu: Duration,
}

impl Cost {
    /// Times `f` on `rt`.
    pub fn of<F: std::future::Future>(rt: &tokio::runtime::Runtime, f: F) -> (Self, F::Output) {
        let (cpu0, t0) = (process_cpu(), Instant::now());
        let out = rt.block_on(f);
        let cost = Self {
            wall: t0.elapsed(),
            cpu: process_cpu().saturating_sub(cpu0),
        };
        (cost, out)
    }
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Self) {
        self.wall += other.wall;
        self.cpu += other.cpu;
    }
}
