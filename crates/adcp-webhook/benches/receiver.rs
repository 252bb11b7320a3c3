//! Requests per second of the receiver layer over loopback HTTP, beside a
//! bare axum handler that only reads the body, in the same run:
//!
//! - `bare_axum`: `POST` → read the body → `200`;
//! - `layer_memory`: the full receiver layer (size and type checks, the
//!   webhook checklist with Ed25519, envelope, JCS fingerprint, claim,
//!   handler, completion) on in-memory replay and idempotency stores;
//! - `layer_sqlite`: the same on one SQLite file (WAL, `synchronous=FULL`).
//!
//! In process (no HTTP): the verifier alone, the receiver's decision and
//! completion for an MCP task delivery report, and the same for an
//! account-level notification (`creative.status_changed`).
//!
//! The load generator keeps `CONNECTIONS` keep-alive HTTP/1.1 connections
//! busy. Every request is a distinct event with its own nonce, signed up
//! front outside the measurement (a receiver never sees the same nonce or
//! key twice on the hot path). One criterion iteration is one request, so
//! criterion's throughput is requests per second. The ratios are printed
//! at the end from criterion's estimates of this run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_sigbase::SystemClock;
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_store::{SqliteOptions, SqliteStore};
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use adcp_webhook::{Decision, Receiver, ReceiverConfig, ReceiverLayer, Webhook};
use adcp_webhook::{McpWebhook, TaskStatus};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use criterion::{Criterion, Throughput};
use http_body_util::{BodyExt, Full};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUP: &str = "webhook_receiver";
const IN_PROCESS: &str = "webhook_receiver_in_process";
const CONNECTIONS: usize = 8;
const AGENT_URL: &str = "https://seller.example/mcp";

type Signed = http::Request<Bytes>;

struct Target {
    name: &'static str,
    addr: SocketAddr,
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn receiver_app(receiver: Receiver) -> Router {
    Router::new().route(
        "/webhooks/adcp",
        post(|w: Webhook| async move {
            std::hint::black_box(w.payload());
            "ok"
        })
        .layer(ReceiverLayer::new(receiver)),
    )
}

/// Signs `n` distinct events for `addr` (each its own key and nonce).
async fn sign_pool(signer: &HttpSigner<SoftwareSigner>, addr: SocketAddr, n: u64, seq: &AtomicU64) -> Vec<Signed> {
    let url = format!("http://{addr}/webhooks/adcp");
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let i = seq.fetch_add(1, Ordering::Relaxed);
        let event = McpWebhook::new(
            format!("task_{i}"),
            "media_buy_delivery",
            TaskStatus::Completed,
            "2026-05-26T09:00:44Z",
        )
        .operation_id("op_bench")
        .message("Scheduled media buy delivery report available")
        .result(serde_json::json!({
            "notification_type": "scheduled", "sequence_number": i,
            "media_buy_deliveries": [{"media_buy_id": "mb_001", "status": "active",
                "totals": {"impressions": 125000, "spend": 5625.0, "clicks": 250}, "by_package": []}]
        }))
        .into_event()
        .unwrap();
        let signed = signer.sign_webhook(&url, &event).await.unwrap();
        out.push(signed.to_http().unwrap().map(Bytes::from));
    }
    out
}

/// Signs `n` distinct account-level notifications (`creative.status_changed`,
/// each with its own `idempotency_key` and `notification_id`) for `addr`.
async fn sign_notification_pool(
    signer: &HttpSigner<SoftwareSigner>,
    addr: SocketAddr,
    n: u64,
    seq: &AtomicU64,
) -> Vec<Signed> {
    let url = format!("http://{addr}/webhooks/adcp");
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let i = seq.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::json!({
            "idempotency_key": format!("bench-notification-{i:012}"),
            "notification_id": format!("crv_{i}.review.1"),
            "notification_type": "creative.status_changed",
            "fired_at": "2027-03-02T14:05:11Z",
            "subscriber_id": "trafficking-desk",
            "account_id": "acct_bench",
            "creative_id": format!("crv_{i}"),
            "revision_id": "rev_0001",
            "transition": {"from": "pending_review", "to": "approved", "observed_at": "2027-03-02T14:04:58Z"},
            "reason_code": "review_passed",
            "initiator": "seller"
        });
        let event = adcp_sign::WebhookEvent::from_json_bytes(body.to_string()).unwrap();
        let signed = signer.sign_webhook(&url, &event).await.unwrap();
        out.push(signed.to_http().unwrap().map(Bytes::from));
    }
    out
}

/// Sends every request over `CONNECTIONS` keep-alive connections and
/// returns the wall time; every answer must be 200.
async fn blast(addr: SocketAddr, requests: Vec<Signed>) -> Duration {
    let mut shards: Vec<Vec<Signed>> = (0..CONNECTIONS).map(|_| Vec::new()).collect();
    for (i, r) in requests.into_iter().enumerate() {
        shards[i % CONNECTIONS].push(r);
    }
    let mut senders = Vec::new();
    for _ in 0..CONNECTIONS {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        senders.push(sender);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (mut sender, shard) in senders.into_iter().zip(shards) {
        tasks.spawn(async move {
            for request in shard {
                let request = request.map(Full::new);
                sender.ready().await.unwrap();
                let response = sender.send_request(request).await.unwrap();
                assert_eq!(response.status(), 200);
                response.into_body().collect().await.unwrap();
            }
        });
    }
    while let Some(t) = tasks.join_next().await {
        t.unwrap();
    }
    started.elapsed()
}

fn main() {
    if let Some(n) = std::env::var("RECEIVER_CALLGRIND_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        callgrind(n);
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-bench").unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    let signer = HttpSigner::webhook(key).unwrap();
    let config = ReceiverConfig {
        scheme: "http".to_owned(),
        ..ReceiverConfig::default()
    };
    let dir = std::env::temp_dir().join(format!("adcp-webhook-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let targets = runtime.block_on(async {
        let bare = Router::new().route(
            "/webhooks/adcp",
            post(|body: Bytes| async move {
                std::hint::black_box(body);
                "ok"
            }),
        );
        let keys = || Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL));
        let memory = Receiver::builder(
            keys(),
            Arc::new(MemoryReplayStore::webhook()),
            Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap()),
        )
        .config(config.clone())
        .build()
        .unwrap();
        let sqlite = Arc::new(SqliteStore::open(dir.join("bench.sqlite"), SqliteOptions::default()).unwrap());
        let sqlite = Receiver::builder_with_store(keys(), sqlite)
            .config(config.clone())
            .build()
            .unwrap();
        vec![
            Target {
                name: "bare_axum",
                addr: serve(bare).await,
            },
            Target {
                name: "layer_memory",
                addr: serve(receiver_app(memory)).await,
            },
            Target {
                name: "layer_sqlite",
                addr: serve(receiver_app(sqlite)).await,
            },
        ]
    });

    let seq = AtomicU64::new(0);
    let mut criterion = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    {
        let mut group = criterion.benchmark_group(GROUP);
        group.throughput(Throughput::Elements(1));
        for target in &targets {
            group.bench_function(target.name, |b| {
                b.iter_custom(|iters| {
                    runtime.block_on(async {
                        let pool = sign_pool(&signer, target.addr, iters, &seq).await;
                        blast(target.addr, pool).await
                    })
                });
            });
        }
        group.finish();
    }
    {
        // In process, no HTTP: the verifier alone against the receiver's
        // whole decision (mode, checklist, envelope, fingerprint, claim)
        // plus completion, over the same kind of pre-signed requests.
        let mut group = criterion.benchmark_group(IN_PROCESS);
        group.throughput(Throughput::Elements(1));
        let local = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let fake: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let verifier = Verifier::new(
            Profile::webhook_v1(),
            StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL),
            MemoryReplayStore::webhook(),
            SystemClock,
        );
        group.bench_function("verifier_only", |b| {
            b.iter_custom(|iters| {
                local.block_on(async {
                    let pool = sign_pool(&signer, fake, iters, &seq).await;
                    let started = Instant::now();
                    for request in &pool {
                        let msg = adcp_sigbase::Message::from_http(request);
                        verifier.verify(&msg).await.unwrap();
                    }
                    started.elapsed()
                })
            });
        });
        let receiver = Receiver::builder(
            Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL)),
            Arc::new(MemoryReplayStore::webhook()),
            Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap()),
        )
        .config(config.clone())
        .build()
        .unwrap();
        group.bench_function("receiver_decide_complete", |b| {
            b.iter_custom(|iters| {
                local.block_on(async {
                    let pool = sign_pool(&signer, fake, iters, &seq).await;
                    let started = Instant::now();
                    for request in pool {
                        match receiver.decide(request).await {
                            Decision::Deliver(delivery) => receiver.complete(&delivery).await.unwrap(),
                            Decision::Reply(reply) => panic!("refused: {}", reply.outcome()),
                        }
                    }
                    started.elapsed()
                })
            });
        });
        // A receiver of its own: the replay cache's per-keyid cap (100,000
        // live entries) must not fill up across the two measurements.
        let receiver = Receiver::builder(
            Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL)),
            Arc::new(MemoryReplayStore::webhook()),
            Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap()),
        )
        .config(config.clone())
        .build()
        .unwrap();
        group.bench_function("receiver_decide_complete_notification", |b| {
            b.iter_custom(|iters| {
                local.block_on(async {
                    let pool = sign_notification_pool(&signer, fake, iters, &seq).await;
                    let started = Instant::now();
                    for request in pool {
                        match receiver.decide(request).await {
                            Decision::Deliver(delivery) => receiver.complete(&delivery).await.unwrap(),
                            Decision::Reply(reply) => panic!("refused: {}", reply.outcome()),
                        }
                    }
                    started.elapsed()
                })
            });
        });
        group.finish();
    }
    criterion.final_summary();

    let start = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let rps = |name: &str| adcp_test_support::criterion_mean_ns(start, &format!("{GROUP}/{name}")).map(|ns| 1e9 / ns);
    if let (Some(bare), Some(memory), Some(sqlite)) = (rps("bare_axum"), rps("layer_memory"), rps("layer_sqlite")) {
        println!("\nreceiver throughput ({CONNECTIONS} keep-alive connections, loopback, one run):");
        println!("  bare axum (read body)     {bare:>10.0} req/s");
        println!(
            "  layer, in-memory stores   {memory:>10.0} req/s   ratio to bare {:.3}",
            memory / bare
        );
        println!(
            "  layer, SQLite store       {sqlite:>10.0} req/s   ratio to bare {:.3}",
            sqlite / bare
        );
    }
    let ns = |name: &str| adcp_test_support::criterion_mean_ns(start, &format!("{IN_PROCESS}/{name}"));
    if let (Some(verify), Some(decide)) = (ns("verifier_only"), ns("receiver_decide_complete")) {
        println!(
            "in process: verifier alone {:.1} µs, receiver decide + complete {:.1} µs (ratio {:.3})",
            verify / 1e3,
            decide / 1e3,
            decide / verify
        );
        if let Some(notification) = ns("receiver_decide_complete_notification") {
            println!(
                "in process: receiver decide + complete, creative.status_changed notification {:.1} µs (ratio to the verifier {:.3})",
                notification / 1e3,
                notification / verify
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `RECEIVER_CALLGRIND_ITERS=N`: instead of the benchmarks, run the
/// verifier alone over N requests ([`callgrind_verify_all`]) and the
/// receiver's decision plus completion over N others
/// ([`callgrind_decide_all`]), once each, with a fixed key: instruction
/// counts under `valgrind --tool=callgrind --toggle-collect=…` are then
/// comparable between two builds (wall time on shared machines is not).
fn callgrind(n: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let key =
        SoftwareSigner::from_raw(Algorithm::Ed25519, b"receiver bench: callgrind seed!!", "seller-bench").unwrap();
    let jwks = key.jwks().unwrap().to_public_json();
    let signer = HttpSigner::webhook(key).unwrap();
    let config = ReceiverConfig {
        scheme: "http".to_owned(),
        ..ReceiverConfig::default()
    };
    let receiver = Receiver::builder(
        Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL)),
        Arc::new(MemoryReplayStore::webhook()),
        Arc::new(MemoryIdempotencyStore::new(IdempotencyConfig::default()).unwrap()),
    )
    .config(config)
    .build()
    .unwrap();
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL),
        MemoryReplayStore::webhook(),
        SystemClock,
    );
    let seq = AtomicU64::new(0);
    let fake: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let to_verify = rt.block_on(sign_pool(&signer, fake, n, &seq));
    let to_decide = rt.block_on(sign_pool(&signer, fake, n, &seq));
    callgrind_verify_all(&rt, &verifier, &to_verify);
    callgrind_decide_all(&rt, &receiver, to_decide);
}

#[inline(never)]
fn callgrind_verify_all(
    rt: &tokio::runtime::Runtime,
    verifier: &Verifier<StaticKeyResolver, MemoryReplayStore, SystemClock>,
    pool: &[Signed],
) {
    rt.block_on(async {
        for request in pool {
            verifier
                .verify(&adcp_sigbase::Message::from_http(request))
                .await
                .unwrap();
        }
    });
}

#[inline(never)]
fn callgrind_decide_all(rt: &tokio::runtime::Runtime, receiver: &Receiver, pool: Vec<Signed>) {
    rt.block_on(async {
        for request in pool {
            match receiver.decide(request).await {
                Decision::Deliver(delivery) => receiver.complete(&delivery).await.unwrap(),
                Decision::Reply(reply) => panic!("refused: {}", reply.outcome()),
            }
        }
    });
}
