//! What one replay entry and one idempotency record cost in each backend:
//! memory (in-memory store, Redis), disk (PostgreSQL, SQLite) and write
//! volume (Redis AOF, PostgreSQL WAL). The inputs of the capacity model in
//! `docs/operations.md`. Target: ≤ 128 bytes of memory per in-memory replay
//! entry.
//!
//! In-memory figures are resident memory (`VmRSS`, so allocator overhead
//! included) grown by filling a store in a fresh child process, next to a
//! calibration run in the same way: a `Vec` of 16-byte nonces, whose cost
//! is known to be 16 bytes per entry. Allocations per entry are counted
//! with `adcp_test_support::CountingAllocator`.
//!
//! `FOOTPRINT_ENTRIES` (default 1,000,000) sets the in-memory size;
//! `FOOTPRINT_DB_ENTRIES` (default 20,000) the database sizes. Backends as
//! in the `claims` bench; Redis figures come from a bench-owned
//! `redis-server` (`appendonly yes`, `appendfsync everysec`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

use adcp_test_support::redis_server;

use adcp_store::{
    ClaimOutcome, ClaimRequest, ClaimToken, Fingerprint, IdempotencyConfig, IdempotencyStore, MemoryIdempotencyStore,
    SenderKey,
};
use adcp_store::{PostgresOptions, PostgresStore};
use adcp_store::{RedisOptions, RedisStore};
use adcp_store::{SqliteOptions, SqliteStore};
use adcp_test_support::{allocations_during, CountingAllocator};
use adcp_verify::{InsertOutcome, MemoryReplayStore, ReplayKey, ReplayLimits, ReplayStore};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

const NOW: i64 = 1_776_520_800;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x5a; 32]);
const CHILD: &str = "FOOTPRINT_CHILD";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Resident memory of this process, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// A 16-byte nonce (the size of a 128-bit nonce, decoded), distinct per `n`.
fn nonce16(n: u64) -> [u8; 16] {
    let mut nonce = [0u8; 16];
    nonce[..8].copy_from_slice(&n.to_be_bytes());
    nonce[8..].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    nonce
}

/// In-memory stores never wait.
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory store must not wait"),
    }
}

/// Child side: fills one structure and prints `bytes_per_entry allocations_per_entry`.
fn child(shape: &str, entries: usize) {
    let keyids: Vec<String> = (0..100).map(|k| format!("seller-key-{k}")).collect();
    let before = rss();
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    let allocations = allocations_during(|| match shape {
        "calibration_vec16" => {
            let v: Vec<[u8; 16]> = (0..entries as u64).map(nonce16).collect();
            keep.push(Box::new(v));
        }
        "replay_1_keyid" | "replay_100_keyids" => {
            let spread = if shape == "replay_1_keyid" { 1 } else { 100 };
            let store = MemoryReplayStore::new(ReplayLimits::new(entries, entries));
            for n in 0..entries as u64 {
                let nonce = nonce16(n);
                let key = ReplayKey {
                    agent: None,
                    keyid: &keyids[(n % spread) as usize],
                    nonce: &nonce,
                    scope: None,
                };
                assert_eq!(now(store.insert(key, NOW + 360, NOW)).unwrap(), InsertOutcome::Inserted);
            }
            assert_eq!(store.len(), entries);
            keep.push(Box::new(store));
        }
        "idempotency_memory" => {
            let store = MemoryIdempotencyStore::new(IdempotencyConfig::new(86_400, 60, u64::MAX).unwrap()).unwrap();
            let senders: Vec<String> = (0..100).map(|s| format!("https://seller-{s}.example/mcp")).collect();
            for n in 0..entries {
                let k = format!("whk_{n:016x}");
                let key = SenderKey {
                    sender: &senders[n % 100],
                    idempotency_key: &k,
                };
                assert!(matches!(
                    now(store.claim(key, FP, NOW)).unwrap(),
                    ClaimOutcome::Claimed(_)
                ));
            }
            keep.push(Box::new(store));
        }
        other => panic!("unknown shape {other}"),
    });
    let grown = rss().saturating_sub(before);
    println!(
        "{:.1} {:.2}",
        grown as f64 / entries as f64,
        allocations as f64 / entries as f64
    );
    drop(keep);
}

/// Runs one shape in a fresh child process (so no freed memory is reused).
fn in_child(shape: &str, entries: usize) -> (f64, f64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD, shape)
        .env("FOOTPRINT_ENTRIES", entries.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().unwrap());
    (fields.next().unwrap(), fields.next().unwrap())
}

fn events(n: usize, tag: &str) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            (
                format!("https://seller-{}.example/mcp", i % 64),
                format!("whk_{tag}_{i:016x}"),
            )
        })
        .collect()
}

fn requests(events: &[(String, String)]) -> Vec<ClaimRequest<'_>> {
    events
        .iter()
        .map(|(s, k)| ClaimRequest {
            key: SenderKey {
                sender: s,
                idempotency_key: k,
            },
            fingerprint: FP,
        })
        .collect()
}

async fn fill_replay<S: ReplayStore + 'static>(store: Arc<S>, n: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in 0..n.div_ceil(256) {
        let store = Arc::clone(&store);
        tasks.spawn(async move {
            for i in chunk * 256..((chunk + 1) * 256).min(n) {
                let nonce = nonce16(i as u64);
                let keyid = format!("seller-key-{}", i % 64);
                let key = ReplayKey {
                    agent: None,
                    keyid: &keyid,
                    nonce: &nonce,
                    scope: None,
                };
                assert_eq!(
                    store.insert(key, NOW + 360, NOW).await.unwrap(),
                    InsertOutcome::Inserted
                );
            }
        });
        if tasks.len() >= 8 {
            tasks.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

/// Claims `n` fresh keys; returns them with their claim tokens.
async fn fill_claims<S: IdempotencyStore + 'static>(
    store: Arc<S>,
    n: usize,
    tag: &str,
) -> Vec<(String, String, ClaimToken)> {
    let all = events(n, tag);
    let claimed = Arc::new(std::sync::Mutex::new(Vec::with_capacity(n)));
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in all.chunks(256) {
        let store = Arc::clone(&store);
        let chunk = chunk.to_vec();
        let claimed = Arc::clone(&claimed);
        tasks.spawn(async move {
            let outcomes = store.claim_many(&requests(&chunk), NOW).await;
            for ((sender, key), outcome) in chunk.into_iter().zip(outcomes) {
                let ClaimOutcome::Claimed(claim) = outcome.unwrap() else {
                    panic!("fresh claim expected")
                };
                claimed.lock().unwrap().push((sender, key, claim.token));
            }
        });
        if tasks.len() >= 8 {
            tasks.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    std::mem::take(&mut *claimed.lock().unwrap())
}

/// Completes every claim (8 tasks).
async fn complete_all<S: IdempotencyStore + 'static>(store: Arc<S>, claims: Vec<(String, String, ClaimToken)>) {
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in claims.chunks(claims.len().div_ceil(8).max(1)) {
        let store = Arc::clone(&store);
        let chunk = chunk.to_vec();
        tasks.spawn(async move {
            for (sender, key, token) in &chunk {
                let event = SenderKey {
                    sender,
                    idempotency_key: key,
                };
                store.complete(event, *token, NOW + 1).await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

async fn redis_info(url: &str, field: &str) -> i64 {
    let client = redis::Client::open(url).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO").query_async(&mut con).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

async fn pg_scalar(url: &str, sql: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.query_one(sql, &[]).await.unwrap().get(0)
}

fn pg_size_sql(schema: &str, tables: &[&str]) -> String {
    let parts: Vec<String> = tables
        .iter()
        .map(|t| format!("pg_total_relation_size('{schema}.{t}')"))
        .collect();
    format!("SELECT ({})::bigint", parts.join(" + "))
}

const WAL_LSN: &str = "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint";

fn main() {
    if let Ok(shape) = std::env::var(CHILD) {
        child(&shape, env_usize("FOOTPRINT_ENTRIES", 1_000_000));
        return;
    }
    // `cargo bench` passes `--bench`; nothing else is parsed.
    let entries = env_usize("FOOTPRINT_ENTRIES", 1_000_000);
    let db_entries = env_usize("FOOTPRINT_DB_ENTRIES", 20_000);

    println!("In-memory stores, {entries} entries (resident bytes / entry, allocations / entry):");
    let (calibration, _) = in_child("calibration_vec16", entries);
    println!("  calibration: Vec<[u8; 16]>          {calibration:>7.1} B   (exact cost: 16 B)");
    for shape in ["replay_1_keyid", "replay_100_keyids"] {
        let (bytes, allocs) = in_child(shape, entries);
        println!(
            "  MemoryReplayStore, {shape:<17} {bytes:>7.1} B   {allocs:.2} allocations   (target <= 128 B; ×{:.1} the raw nonce)",
            bytes / calibration
        );
    }
    let (bytes, allocs) = in_child("idempotency_memory", entries);
    println!("  MemoryIdempotencyStore             {bytes:>7.1} B   {allocs:.2} allocations");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = IdempotencyConfig::new(86_400, 60, u64::MAX).unwrap();
    let limits = ReplayLimits::new(usize::MAX / 4, usize::MAX / 4);

    // Redis: memory (used_memory) and AOF bytes per write.
    let server = redis_server::Server::start_with_fsync(
        redis_server::free_port(),
        redis_server::temp_dir("footprint"),
        "everysec",
    );
    rt.block_on(async {
        let url = server.url();
        let store = Arc::new(
            RedisStore::connect(
                &url,
                RedisOptions {
                    idempotency: config,
                    replay_limits: limits,
                    ..RedisOptions::default()
                },
            )
            .await
            .unwrap(),
        );
        let n = db_entries * 5;
        let (mem0, aof0) = (
            redis_info(&url, "used_memory").await,
            redis_info(&url, "aof_current_size").await,
        );
        fill_replay(Arc::clone(&store), n).await;
        let (mem1, aof1) = (
            redis_info(&url, "used_memory").await,
            redis_info(&url, "aof_current_size").await,
        );
        let claims = fill_claims(Arc::clone(&store), n, "redis").await;
        let (mem2, aof2) = (
            redis_info(&url, "used_memory").await,
            redis_info(&url, "aof_current_size").await,
        );
        complete_all(Arc::clone(&store), claims).await;
        let (mem3, aof3) = (
            redis_info(&url, "used_memory").await,
            redis_info(&url, "aof_current_size").await,
        );
        println!("\nRedis 7 ({n} entries over 64 keyids / 64 senders; used_memory and AOF growth per entry):");
        println!(
            "  replay entry          {:>6.0} B memory   {:>6.0} B AOF per insert",
            (mem1 - mem0) as f64 / n as f64,
            (aof1 - aof0) as f64 / n as f64
        );
        println!(
            "  idempotency claim     {:>6.0} B memory   {:>6.0} B AOF per claim",
            (mem2 - mem1) as f64 / n as f64,
            (aof2 - aof1) as f64 / n as f64
        );
        println!(
            "  ... then completion   {:>+6.0} B memory   {:>6.0} B AOF per completion",
            (mem3 - mem2) as f64 / n as f64,
            (aof3 - aof2) as f64 / n as f64
        );
    });
    drop(server);

    // PostgreSQL: table + index bytes and WAL bytes per write.
    let pg_url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned());
    let schema = format!("adcp_footprint_{}", std::process::id());
    rt.block_on(async {
        let store = Arc::new(
            PostgresStore::connect(
                &pg_url,
                PostgresOptions {
                    schema: schema.clone(),
                    idempotency: config,
                    replay_limits: limits,
                    ..PostgresOptions::default()
                },
            )
            .await
            .unwrap(),
        );
        let n = db_entries;
        let replay_size = pg_size_sql(&schema, &["replay", "replay_cap_counts", "replay_total"]);
        let idem_size = pg_size_sql(&schema, &["idempotency", "idempotency_counts"]);
        let (r0, i0, w0) = (
            pg_scalar(&pg_url, &replay_size).await,
            pg_scalar(&pg_url, &idem_size).await,
            pg_scalar(&pg_url, WAL_LSN).await,
        );
        fill_replay(Arc::clone(&store), n).await;
        let (r1, w1) = (
            pg_scalar(&pg_url, &replay_size).await,
            pg_scalar(&pg_url, WAL_LSN).await,
        );
        let claims = fill_claims(Arc::clone(&store), n, "pg").await;
        let (i2, w2) = (pg_scalar(&pg_url, &idem_size).await, pg_scalar(&pg_url, WAL_LSN).await);
        complete_all(Arc::clone(&store), claims).await;
        let (i3, w3) = (pg_scalar(&pg_url, &idem_size).await, pg_scalar(&pg_url, WAL_LSN).await);
        println!("\nPostgreSQL ({n} entries; table + index growth and WAL per write, server-wide WAL):");
        println!(
            "  replay entry          {:>6.0} B on disk  {:>6.0} B WAL per insert",
            (r1 - r0) as f64 / n as f64,
            (w1 - w0) as f64 / n as f64
        );
        println!(
            "  idempotency claim     {:>6.0} B on disk  {:>6.0} B WAL per claim",
            (i2 - i0) as f64 / n as f64,
            (w2 - w1) as f64 / n as f64
        );
        println!(
            "  ... then completion   {:>+6.0} B on disk  {:>6.0} B WAL per completion (before vacuum)",
            (i3 - i2) as f64 / n as f64,
            (w3 - w2) as f64 / n as f64
        );
        store.drop_schema().await.unwrap();
    });

    // SQLite: database bytes per row (after a checkpoint).
    let dir = std::env::temp_dir().join(format!("adcp-footprint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("footprint.sqlite");
    rt.block_on(async {
        let store = Arc::new(
            SqliteStore::open(
                &path,
                SqliteOptions {
                    idempotency: config,
                    replay_limits: limits,
                    ..SqliteOptions::default()
                },
            )
            .unwrap(),
        );
        let n = db_entries;
        let size = |p: &std::path::Path| {
            let conn = rusqlite::Connection::open(p).unwrap();
            let _: (i64, i64, i64) = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap();
            let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
            let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0)).unwrap();
            let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
            (pages - free) * page
        };
        let s0 = size(&path);
        fill_replay(Arc::clone(&store), n).await;
        let s1 = size(&path);
        let claims = fill_claims(Arc::clone(&store), n, "sqlite").await;
        let s2 = size(&path);
        complete_all(Arc::clone(&store), claims).await;
        let s3 = size(&path);
        println!("\nSQLite ({n} entries; used pages per row):");
        println!("  replay entry          {:>6.0} B on disk", (s1 - s0) as f64 / n as f64);
        println!("  idempotency claim     {:>6.0} B on disk", (s2 - s1) as f64 / n as f64);
        println!(
            "  ... then completion   {:>+6.0} B on disk",
            (s3 - s2) as f64 / n as f64
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}
