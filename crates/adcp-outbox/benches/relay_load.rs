//! The tool behind `scripts/bench-relay.sh` and
//! `scripts/bench-relay-python.sh` (a bench target so that it builds with
//! the benchmarks' profile; `cargo bench` runs it without a command and it
//! does nothing). Commands:
//!
//! - `sink [--listen ADDR]`: the sink every variant delivers to (axum,
//!   answers `200` after reading the body; `GET /stats` answers
//!   `{"requests": N}`); prints `listening on http://ADDR`.
//! - `enqueue --relay URL --dest URL --events N [--clients C] --sink URL
//!   --pid PID [--postgres-cpu] [--from K]`: `C` (default 64) concurrent
//!   keep-alive clients `POST` N `account.status_changed` events to the
//!   relay's `/v1/events` (each answered `202`); then waits until the sink
//!   has N more requests and the relay's `/metrics` counts N more
//!   `adcp_outbox_events{state="delivered"}`. Prints a JSON report:
//!   deliveries/s from the first `POST` to the last recorded delivery,
//!   the relay process's CPU (`/proc/PID/stat`) per event, and with
//!   `--postgres-cpu` the CPU of every `postgres` process per event.
//! - `baseline --dest URL --events N [--concurrency C]`: the in-process,
//!   non-durable `WebhookSender` with C (default 64) concurrent `deliver`
//!   calls; prints deliveries/s and this process's CPU per event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a bench tool: failing loudly is the point

mod support;

use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: relay_load sink [--listen ADDR] | enqueue --relay URL --dest URL --events N \
[--clients C] --sink URL --pid PID [--postgres-cpu] [--from K] | baseline --dest URL --events N [--concurrency C]";

struct Opts(HashMap<String, String>);

impl Opts {
    fn parse(args: &[String]) -> Self {
        let mut map = HashMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else {
                panic!("unexpected argument {a:?}\n{USAGE}")
            };
            let value = if name == "postgres-cpu" {
                "1".to_owned()
            } else {
                it.next().unwrap_or_else(|| panic!("--{name} needs a value")).clone()
            };
            map.insert(name.to_owned(), value);
        }
        Self(map)
    }

    fn str(&self, name: &str) -> &str {
        self.0
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("--{name} is required\n{USAGE}"))
    }

    fn num(&self, name: &str, default: Option<u64>) -> u64 {
        match (self.0.get(name), default) {
            (Some(v), _) => v.parse().unwrap_or_else(|_| panic!("--{name}: not a number")),
            (None, Some(d)) => d,
            (None, None) => panic!("--{name} is required\n{USAGE}"),
        }
    }

    fn flag(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

fn main() -> ExitCode {
    support::sink_role();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => ("", &[][..]),
    };
    match command {
        "sink" => {
            let opts = Opts::parse(rest);
            let listen = opts.0.get("listen").map_or_else(
                || SocketAddr::from(([127, 0, 0, 1], 0)),
                |a| a.parse().expect("--listen"),
            );
            support::serve_sink(listen)
        }
        "enqueue" => enqueue(&Opts::parse(rest)),
        "baseline" => baseline(&Opts::parse(rest)),
        // `cargo bench` runs every bench target with `--bench`.
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn baseline(opts: &Opts) {
    let events = usize::try_from(opts.num("events", None)).expect("events");
    let concurrency = usize::try_from(opts.num("concurrency", Some(64))).expect("concurrency");
    let rt = runtime();
    let sender = support::InProcess::new(opts.str("dest"), concurrency);
    let batch = support::webhook_events(0, events);
    let (cost, ()) = support::Cost::of(&rt, sender.deliver_all(batch));
    let report = json!({
        "events": events,
        "concurrency": concurrency,
        "secs": cost.wall.as_secs_f64(),
        "per_sec": events as f64 / cost.wall.as_secs_f64(),
        "cpu_secs": cost.cpu.as_secs_f64(),
        "cpu_us_per_event": cost.cpu.as_secs_f64() * 1e6 / events as f64,
    });
    println!("{report}");
}

async fn sink_requests(http: &reqwest::Client, sink: &str) -> u64 {
    let bytes = http
        .get(format!("{sink}/stats"))
        .send()
        .await
        .expect("sink /stats")
        .bytes()
        .await
        .expect("sink /stats body");
    let stats: serde_json::Value = serde_json::from_slice(&bytes).expect("sink /stats JSON");
    stats["requests"].as_u64().expect("requests")
}

async fn relay_delivered(http: &reqwest::Client, relay: &str) -> u64 {
    let text = http
        .get(format!("{relay}/metrics"))
        .send()
        .await
        .expect("relay /metrics")
        .text()
        .await
        .expect("relay /metrics text");
    text.lines()
        .find_map(|l| l.strip_prefix("adcp_outbox_events{state=\"delivered\"} "))
        .and_then(|v| v.trim().parse().ok())
        .expect("adcp_outbox_events{state=\"delivered\"} in /metrics")
}

fn enqueue(opts: &Opts) {
    let events = opts.num("events", None);
    let clients = opts.num("clients", Some(64));
    let from = opts.num("from", Some(0));
    let relay = opts.str("relay").trim_end_matches('/').to_owned();
    let sink = opts.str("sink").trim_end_matches('/').to_owned();
    let dest = opts.str("dest").to_owned();
    let pid = u32::try_from(opts.num("pid", None)).expect("pid");
    let postgres = opts.flag("postgres-cpu");
    let rt = runtime();
    // Plain HTTP only; reqwest is built without a default TLS provider.
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .pool_max_idle_per_host(usize::try_from(clients).expect("clients"))
        .build()
        .expect("client");
    rt.block_on(async move {
        let sink0 = sink_requests(&http, &sink).await;
        let delivered0 = relay_delivered(&http, &relay).await;
        let cpu0 = support::pid_cpu(pid).expect("relay pid");
        let pg0 = postgres.then(support::postgres_server_cpu);
        let started = Instant::now();
        let next = Arc::new(AtomicU64::new(from));
        let end = from + events;
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..clients {
            let (http, next, relay, dest) = (http.clone(), Arc::clone(&next), relay.clone(), dest.clone());
            tasks.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= end {
                        break;
                    }
                    let body = json!({
                        "destination": {"url": dest},
                        "notification_type": "account.status_changed",
                        "payload": support::payload(i),
                    });
                    let response = http
                        .post(format!("{relay}/v1/events"))
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(serde_json::to_vec(&body).expect("JSON"))
                        .send()
                        .await
                        .expect("POST /v1/events");
                    let status = response.status();
                    if status != reqwest::StatusCode::ACCEPTED {
                        panic!(
                            "POST /v1/events: {status} {}",
                            response.text().await.unwrap_or_default()
                        );
                    }
                    let _ = response.bytes().await;
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("client");
        }
        let enqueued = started.elapsed();
        let deadline = Instant::now() + Duration::from_secs(600);
        while sink_requests(&http, &sink).await < sink0 + events {
            assert!(
                Instant::now() < deadline,
                "the sink did not see every event within 600 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut delivered = relay_delivered(&http, &relay).await;
        while delivered < delivered0 + events {
            assert!(
                Instant::now() < deadline,
                "the relay did not record every delivery within 600 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
            delivered = relay_delivered(&http, &relay).await;
        }
        let secs = started.elapsed().as_secs_f64();
        let cpu = support::pid_cpu(pid).expect("relay pid").saturating_sub(cpu0);
        let sink_seen = sink_requests(&http, &sink).await - sink0;
        let mut report = json!({
            "events": events,
            "clients": clients,
            "secs": secs,
            "per_sec": events as f64 / secs,
            "enqueue_secs": enqueued.as_secs_f64(),
            "relay_cpu_secs": cpu.as_secs_f64(),
            "relay_cpu_us_per_event": cpu.as_secs_f64() * 1e6 / events as f64,
            "sink_requests": sink_seen,
            "delivered": delivered - delivered0,
        });
        if let Some(pg0) = pg0 {
            let pg = support::postgres_server_cpu().saturating_sub(pg0);
            report["postgres_cpu_us_per_event"] = json!(pg.as_secs_f64() * 1e6 / events as f64);
        }
        println!("{report}");
    });
}
