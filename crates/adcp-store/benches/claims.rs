//! Claim and replay-insert throughput of every backend, each against the
//! in-memory stores measured in the same run.
//!
//! Every iteration claims (or inserts) a batch of fresh keys, prepared
//! outside the timed section. The in-memory baseline and SQLite take the
//! batch one call after another (one SQLite transaction, hence one fsync,
//! per call);
//! PostgreSQL and Redis get the batch as concurrent calls (the way a
//! receiver's concurrent requests reach them: PostgreSQL over its pool,
//! Redis multiplexed, hence pipelined, on one connection), and Redis also
//! as one `claim_many` pipeline; SQLite and PostgreSQL also as one
//! `claim_many` transaction (one commit per batch). Target: Redis pipelined claims ≥ 20,000/s
//! on loopback.
//!
//! The `event` group is a gateway's per-event traffic: [`TASKS`] concurrent
//! tasks each take the next event of the batch and claim then complete it
//! (two writes per event). The SQLite row shows what group commit buys: the
//! concurrent calls share transactions, hence fsyncs; the summary compares
//! it with SQLite's sequential claims (one fsync each) of the same run.
//!
//! Backends: PostgreSQL at `DATABASE_URL` (default
//! `postgres://root@127.0.0.1:5432/test`), Redis at `REDIS_URL` (default
//! `redis://127.0.0.1:6379`), plus two bench-owned `redis-server`s with AOF
//! (`appendfsync everysec` and `always`) when `redis-server` is on `PATH`.
//! Everything the bench writes is deleted at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_test_support::redis_server;

use adcp_store::{
    ClaimOutcome, ClaimRequest, Fingerprint, IdempotencyConfig, IdempotencyStore, MemoryIdempotencyStore, SenderKey,
};
use adcp_store::{PostgresOptions, PostgresStore};
use adcp_store::{RedisOptions, RedisStore};
use adcp_store::{SqliteOptions, SqliteStore};
use adcp_verify::{InsertOutcome, MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore};
use criterion::Criterion;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const BATCH: usize = 256;
/// Concurrent tasks of the `event` group (a gateway's connection count).
const TASKS: usize = 32;
const SENDERS: u64 = 64;
const NOW: i64 = 1_776_520_800;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x5a; 32]);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A batch of fresh `(sender, idempotency_key)` pairs over 64 senders.
fn fresh_events() -> Vec<(String, String)> {
    (0..BATCH)
        .map(|_| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            (
                format!("https://seller-{}.example/mcp", n % SENDERS),
                format!("whk_{n:016x}"),
            )
        })
        .collect()
}

/// A batch of fresh 16-byte nonces over 64 keyids.
fn fresh_nonces() -> Vec<(String, [u8; 16])> {
    (0..BATCH)
        .map(|_| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&n.to_be_bytes());
            nonce[8..].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
            (format!("seller-key-{}", n % SENDERS), nonce)
        })
        .collect()
}

fn event(e: &(String, String)) -> SenderKey<'_> {
    SenderKey {
        sender: &e.0,
        idempotency_key: &e.1,
    }
}

fn nonce(n: &(String, [u8; 16])) -> ReplayKey<'_> {
    ReplayKey {
        agent: None,
        keyid: &n.0,
        nonce: &n.1,
        scope: None,
    }
}

fn config() -> IdempotencyConfig {
    IdempotencyConfig::new(86_400, 60, 100_000_000).unwrap()
}

fn limits() -> ReplayLimits {
    ReplayLimits::new(100_000_000, 100_000_000)
}

fn assert_claimed(outcome: ClaimOutcome) {
    assert!(matches!(outcome, ClaimOutcome::Claimed(_)), "{outcome:?}");
}

/// Times `iters` batches; `prepare` runs outside the timed section.
fn timed<T, P, F, Fut>(rt: &Runtime, iters: u64, prepare: P, run: F) -> Duration
where
    P: Fn() -> T,
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let batch = prepare();
        let start = Instant::now();
        rt.block_on(run(batch));
        total += start.elapsed();
    }
    total
}

async fn claim_sequentially<S: IdempotencyStore>(store: &S, events: Vec<(String, String)>) {
    for e in &events {
        assert_claimed(store.claim(event(e), FP, NOW).await.unwrap());
    }
}

async fn claim_concurrently<S: IdempotencyStore + 'static>(store: &Arc<S>, events: Vec<(String, String)>) {
    let mut tasks = tokio::task::JoinSet::new();
    for e in events {
        let store = Arc::clone(store);
        tasks.spawn(async move { assert_claimed(store.claim(event(&e), FP, NOW).await.unwrap()) });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

async fn claim_batched<S: IdempotencyStore>(store: &S, events: Vec<(String, String)>) {
    let requests: Vec<ClaimRequest<'_>> = events
        .iter()
        .map(|e| ClaimRequest {
            key: event(e),
            fingerprint: FP,
        })
        .collect();
    for outcome in store.claim_many(&requests, NOW).await {
        assert_claimed(outcome.unwrap());
    }
}

/// [`TASKS`] tasks share the events: each takes the next one, claims it,
/// then completes the claim.
async fn claim_complete_concurrently<S: IdempotencyStore + 'static>(store: &Arc<S>, events: Vec<(String, String)>) {
    let events = Arc::new(events);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..TASKS {
        let (store, events, next) = (Arc::clone(store), Arc::clone(&events), Arc::clone(&next));
        tasks.spawn(async move {
            while let Some(e) = events.get(next.fetch_add(1, Ordering::Relaxed)) {
                let ClaimOutcome::Claimed(claim) = store.claim(event(e), FP, NOW).await.unwrap() else {
                    panic!("a fresh key was not claimed")
                };
                store.complete(event(e), claim.token, NOW).await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

async fn insert_sequentially<S: ReplayStore>(store: &S, nonces: Vec<(String, [u8; 16])>) {
    for n in &nonces {
        assert_eq!(
            store.insert(nonce(n), NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Inserted
        );
    }
}

async fn insert_concurrently<S: ReplayStore + 'static>(store: &Arc<S>, nonces: Vec<(String, [u8; 16])>) {
    let mut tasks = tokio::task::JoinSet::new();
    for n in nonces {
        let store = Arc::clone(store);
        tasks.spawn(async move {
            assert_eq!(
                store.insert(nonce(&n), NOW + 360, NOW).await.unwrap(),
                InsertOutcome::Inserted
            );
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn unique(tag: &str) -> String {
    format!("adcp_bench_{tag}_{}", std::process::id())
}

async fn redis_store(url: &str, prefix: &str) -> RedisStore {
    RedisStore::connect(
        url,
        RedisOptions {
            key_prefix: prefix.to_owned(),
            idempotency: config(),
            replay_limits: limits(),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap()
}

async fn persistence(url: &str) -> String {
    let client = redis::Client::open(url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let aof: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query_async(&mut con)
        .await
        .unwrap();
    let fsync: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendfsync")
        .query_async(&mut con)
        .await
        .unwrap();
    format!("appendonly {}, appendfsync {}", aof[1], fsync[1])
}

fn mean_ns(id: &str) -> Option<f64> {
    adcp_test_support::criterion_mean_ns(Path::new(env!("CARGO_MANIFEST_DIR")), id)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let redis_url = env_or("REDIS_URL", "redis://127.0.0.1:6379");
    let pg_url = env_or("DATABASE_URL", "postgres://root@127.0.0.1:5432/test");
    let dir = std::env::temp_dir().join(unique("sqlite"));
    std::fs::create_dir_all(&dir).unwrap();

    let memory_idem = Arc::new(MemoryIdempotencyStore::new(config()).unwrap());
    let memory_replay = MemoryReplayStore::new(limits());
    let sqlite = Arc::new(
        SqliteStore::open(
            dir.join("bench.sqlite"),
            SqliteOptions {
                idempotency: config(),
                replay_limits: limits(),
                ..SqliteOptions::default()
            },
        )
        .unwrap(),
    );
    let schema = unique("pg");
    let postgres = Arc::new(
        rt.block_on(PostgresStore::connect(
            &pg_url,
            PostgresOptions {
                schema: schema.clone(),
                idempotency: config(),
                replay_limits: limits(),
                ..PostgresOptions::default()
            },
        ))
        .unwrap(),
    );
    let prefix = unique("redis");
    let redis = Arc::new(rt.block_on(redis_store(&redis_url, &prefix)));
    let redis_settings = rt.block_on(persistence(&redis_url));
    // Bench-owned servers with AOF, to show what each fsync policy costs.
    let aof_servers: Vec<(&str, redis_server::Server, RedisStore)> = if std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok()
    {
        ["everysec", "always"]
            .into_iter()
            .map(|fsync| {
                let server = redis_server::Server::start_with_fsync(
                    redis_server::free_port(),
                    redis_server::temp_dir("bench"),
                    fsync,
                );
                let store = rt.block_on(redis_store(&server.url(), "adcp"));
                (fsync, server, store)
            })
            .collect()
    } else {
        Vec::new()
    };

    let mut c = Criterion::default().sample_size(10).configure_from_args();
    {
        let mut group = c.benchmark_group("claim");
        group.bench_function("memory", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_sequentially(&*memory_idem, e)))
        });
        group.bench_function("sqlite", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_sequentially(&*sqlite, e)))
        });
        group.bench_function("sqlite_batched", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_batched(&*sqlite, e)))
        });
        group.bench_function("postgres", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_concurrently(&postgres, e)))
        });
        group.bench_function("postgres_batched", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_batched(&*postgres, e)))
        });
        group.bench_function("redis", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_concurrently(&redis, e)))
        });
        group.bench_function("redis_pipelined", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_batched(&redis, e)))
        });
        for (fsync, _, store) in &aof_servers {
            group.bench_function(format!("redis_pipelined_aof_{fsync}"), |b| {
                b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_batched(store, e)))
            });
        }
        group.finish();
    }
    {
        let mut group = c.benchmark_group("event");
        group.bench_function("memory", |b| {
            b.iter_custom(|iters| {
                timed(&rt, iters, fresh_events, |e| {
                    claim_complete_concurrently(&memory_idem, e)
                })
            })
        });
        group.bench_function("sqlite", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_events, |e| claim_complete_concurrently(&sqlite, e)))
        });
        group.finish();
    }
    {
        let mut group = c.benchmark_group("replay_insert");
        group.bench_function("memory", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_nonces, |n| insert_sequentially(&memory_replay, n)))
        });
        group.bench_function("sqlite", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_nonces, |n| insert_sequentially(&*sqlite, n)))
        });
        group.bench_function("postgres", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_nonces, |n| insert_concurrently(&postgres, n)))
        });
        group.bench_function("redis", |b| {
            b.iter_custom(|iters| timed(&rt, iters, fresh_nonces, |n| insert_concurrently(&redis, n)))
        });
        group.finish();
    }
    c.final_summary();

    rt.block_on(async {
        redis.delete_all().await.unwrap();
        postgres.drop_schema().await.unwrap();
    });
    drop(sqlite);
    let _ = std::fs::remove_dir_all(&dir);
    drop(aof_servers);

    println!("\nREDIS_URL server: {redis_settings}; bench-owned servers: appendonly yes");
    for (group, baseline, rows) in [
        (
            "claim",
            "memory",
            &[
                "memory",
                "sqlite",
                "sqlite_batched",
                "postgres",
                "postgres_batched",
                "redis",
                "redis_pipelined",
                "redis_pipelined_aof_everysec",
                "redis_pipelined_aof_always",
            ][..],
        ),
        ("event", "memory", &["memory", "sqlite"][..]),
        (
            "replay_insert",
            "memory",
            &["memory", "sqlite", "postgres", "redis"][..],
        ),
    ] {
        let Some(base) = mean_ns(&format!("{group}/{baseline}")) else {
            println!("{group}: no criterion estimates found");
            continue;
        };
        println!("\n{group} ({BATCH} fresh keys per iteration; ratio = time per op / in-memory time per op):");
        for row in rows {
            if let Some(mean) = mean_ns(&format!("{group}/{row}")) {
                let per_op = mean / BATCH as f64;
                println!(
                    "  {row:<30} {per_op:>10.0} ns/op {:>12.0} ops/s  ×{:.1}",
                    1e9 / per_op,
                    mean / base
                );
            }
        }
    }
    if let (Some(events), Some(claims)) = (mean_ns("event/sqlite"), mean_ns("claim/sqlite")) {
        let (events, claims) = (1e9 / (events / BATCH as f64), 1e9 / (claims / BATCH as f64));
        println!(
            "\nSQLite events (claim + complete, {TASKS} concurrent tasks): {events:.0}/s, \
             ×{:.2} the rate of sequential claims (one fsync each) in this run, {claims:.0}/s",
            events / claims
        );
    }
    if let Some(mean) = mean_ns("claim/redis_pipelined") {
        let per_s = 1e9 / (mean / BATCH as f64);
        println!("\nRedis pipelined claims: {per_s:.0}/s (target >= 20,000/s)");
    }
}
