//! The contract suite and fault behaviour of the Redis backend. The contract
//! reads `REDIS_URL` (default `redis://127.0.0.1:6379`); every store gets its
//! own key prefix, whose keys are deleted afterwards. The fault test starts
//! its own `redis-server` on a free port.

#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;

use adcp_store::idempotency::{
    ClaimOutcome, ConfigError, Fingerprint, IdempotencyConfig, IdempotencyError, IdempotencyStore, SenderKey,
};
use adcp_store::redis::{RedisOptions, RedisStore};
use adcp_verify::replay::{InsertOutcome, ReplayKey, ReplayLimits, ReplayStore};
use async_trait::async_trait;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

fn unique_prefix() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "adcp-test:{}:{}:{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

struct Redis {
    stores: Mutex<Vec<Arc<RedisStore>>>,
}

impl Redis {
    async fn open(&self, options: RedisOptions) -> Arc<RedisStore> {
        let store = Arc::new(RedisStore::connect(&url(), options).await.unwrap());
        self.stores.lock().unwrap().push(Arc::clone(&store));
        store
    }
}

#[async_trait]
impl contract::Backend for Redis {
    type Replay = RedisStore;
    type Idem = RedisStore;

    async fn new() -> Self {
        Redis {
            stores: Mutex::new(Vec::new()),
        }
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<RedisStore> {
        self.open(RedisOptions {
            replay_limits: limits,
            key_prefix: unique_prefix(),
            ..RedisOptions::default()
        })
        .await
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<RedisStore> {
        self.open(RedisOptions {
            idempotency: config,
            key_prefix: unique_prefix(),
            ..RedisOptions::default()
        })
        .await
    }

    async fn cleanup(&self) {
        let stores = std::mem::take(&mut *self.stores.lock().unwrap());
        for store in stores {
            store.delete_all().await.unwrap();
        }
    }
}

contract_tests!(Redis);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint(&[0x33; 32]);

fn event(key: &str) -> SenderKey<'_> {
    SenderKey {
        sender: "https://seller.example/mcp",
        idempotency_key: key,
    }
}

#[tokio::test]
async fn refuses_short_windows_and_bad_prefixes() {
    let short = RedisOptions {
        idempotency: IdempotencyConfig {
            window_secs: 3_600,
            ..IdempotencyConfig::default()
        },
        ..RedisOptions::default()
    };
    assert!(matches!(
        RedisStore::connect(&url(), short).await.unwrap_err(),
        ConfigError::WindowTooShort { window_secs: 3_600 }
    ));
    let braces = RedisOptions {
        key_prefix: "a{b}".to_owned(),
        ..RedisOptions::default()
    };
    assert!(RedisStore::connect(&url(), braces).await.is_err());
}

#[tokio::test]
async fn entries_carry_a_ttl_and_counts_ignore_expired_members() {
    let prefix = unique_prefix();
    let store = RedisStore::connect(
        &url(),
        RedisOptions {
            key_prefix: prefix.clone(),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let nonce = ReplayKey {
        keyid: "k{1}",
        nonce: b"n",
        scope: None,
    };
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    let ClaimOutcome::Claimed(_) = store.claim(event("whk_ttl"), FP, NOW).await.unwrap() else {
        panic!()
    };
    let client = redis::Client::open(url()).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(keys.len(), 5, "{keys:?}");
    for key in &keys {
        let ttl: i64 = redis::cmd("TTL").arg(key).query_async(&mut con).await.unwrap();
        assert!(ttl > 0, "{key} has no TTL ({ttl})");
        if key.contains(":replay:") {
            assert!(ttl <= 360 + 60 + 1, "{key}: {ttl}");
        }
    }
    // Hash tags keep each keyid's keys in one slot.
    assert!(keys.iter().any(|k| k.contains(":replay:{6b7b317d}:n:")), "{keys:?}");
    assert_eq!(store.sender_len("https://seller.example/mcp", NOW).await.unwrap(), 1);
    assert_eq!(
        store
            .sender_len("https://seller.example/mcp", NOW + contract::DAY + 1)
            .await
            .unwrap(),
        0
    );
    assert!(store.delete_all().await.unwrap() >= 5);
}

#[tokio::test]
async fn an_unreachable_server_fails_closed() {
    let err = RedisStore::connect(
        "redis://127.0.0.1:1",
        RedisOptions {
            op_timeout: Duration::from_secs(2),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("redis"), "{err}");
}

/// A `redis-server` child on a free port with AOF in a temp dir; killed and
/// removed on drop, even when the test fails.
struct Server {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Server {
    fn start(port: u16, dir: PathBuf, policy: &str) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        let mut server = Server { port, dir, child: None };
        server.spawn(policy);
        server
    }

    fn spawn(&mut self, policy: &str) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"])
            .args(["--maxmemory-policy", policy])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn temp_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("adcp-store-redis-{tag}-{}", unique_prefix().replace(':', "-")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_an_evicting_server_unless_told_to_skip_the_check() {
    let server = Server::start(free_port(), temp_dir("evict"), "allkeys-lru");
    let err = RedisStore::connect(&server.url(), RedisOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("noeviction"), "{err}");
    let skip = RedisOptions {
        check_eviction_policy: false,
        ..RedisOptions::default()
    };
    RedisStore::connect(&server.url(), skip).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_fails_closed_and_aof_keeps_claims() {
    let mut server = Server::start(free_port(), temp_dir("fault"), "noeviction");
    let options = RedisOptions {
        op_timeout: Duration::from_millis(800),
        ..RedisOptions::default()
    };
    let store = RedisStore::connect(&server.url(), options).await.unwrap();
    let done = event("whk_done");
    let ClaimOutcome::Claimed(claim) = store.claim(done, FP, NOW).await.unwrap() else {
        panic!()
    };
    store.complete(done, claim.token, NOW + 1).await.unwrap();
    let held = event("whk_held");
    let ClaimOutcome::Claimed(held_claim) = store.claim(held, FP, NOW).await.unwrap() else {
        panic!()
    };
    let nonce = ReplayKey {
        keyid: "seller",
        nonce: b"nonce",
        scope: None,
    };
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );

    // SIGKILL mid-run: no graceful shutdown, only the AOF survives.
    server.kill();
    let started = Instant::now();
    let fresh = event("whk_new");
    assert!(matches!(
        store.claim(fresh, FP, NOW + 2).await,
        Err(IdempotencyError::Unavailable(_))
    ));
    assert!(matches!(
        store.claim(done, FP, NOW + 2).await,
        Err(IdempotencyError::Unavailable(_))
    ));
    assert!(store
        .complete(held, held_claim.token, NOW + 2)
        .await
        .unwrap_err()
        .is_retryable());
    let other = ReplayKey {
        nonce: b"other",
        ..nonce
    };
    assert!(store.insert(other, NOW + 360, NOW + 2).await.is_err());
    assert!(store.contains(nonce, NOW + 2).await.is_err());
    assert!(store.keyid_cap_reached("seller", NOW + 2).await.is_err());
    assert!(store.lookup(done, NOW + 2).await.is_err());
    assert!(store.sender_len("https://seller.example/mcp", NOW + 2).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    // Restart on the same AOF: every acknowledged write is back, and the
    // same store recovers by itself.
    server.spawn("noeviction");
    let deadline = Instant::now() + Duration::from_secs(10);
    let outcome = loop {
        match store.claim(done, FP, NOW + 3).await {
            Ok(outcome) => break outcome,
            Err(e) => {
                assert!(e.is_retryable());
                assert!(Instant::now() < deadline, "store did not reconnect: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(outcome, ClaimOutcome::Completed);
    assert_eq!(
        store.claim(held, FP, NOW + 3).await.unwrap(),
        ClaimOutcome::InProgress {
            lease_expires_at: held_claim.lease_expires_at
        }
    );
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW + 3).await.unwrap(),
        InsertOutcome::Replayed
    );
    assert_eq!(store.lookup(fresh, NOW + 3).await.unwrap(), None);
    store.complete(held, held_claim.token, NOW + 4).await.unwrap();
    assert_eq!(
        store.sender_len("https://seller.example/mcp", NOW + 4).await.unwrap(),
        2
    );
}
