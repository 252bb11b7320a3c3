//! The contract suite, durability and fail-closed behaviour of the SQLite backend.

use adcp_store::testing as contract;
use adcp_store::{ClaimOutcome, Fingerprint, IdempotencyConfig, IdempotencyStore, SenderKey};
use adcp_store::{SqliteOptions, SqliteStore};
use adcp_verify::{ReplayLimits, ReplayStore};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("adcp-store-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Sqlite {
    dir: TempDir,
    next: AtomicUsize,
}

impl Sqlite {
    fn open(&self, options: SqliteOptions) -> Arc<SqliteStore> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Arc::new(SqliteStore::open(self.dir.path().join(format!("{n}.sqlite")), options).unwrap())
    }
}

#[async_trait]
impl contract::Backend for Sqlite {
    type Replay = SqliteStore;
    type Idem = SqliteStore;

    async fn new() -> Self {
        Sqlite {
            dir: TempDir::new(),
            next: AtomicUsize::new(0),
        }
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<SqliteStore> {
        self.open(SqliteOptions {
            replay_limits: limits,
            ..SqliteOptions::default()
        })
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<SqliteStore> {
        self.open(SqliteOptions {
            idempotency: config,
            ..SqliteOptions::default()
        })
    }

    async fn cleanup(&self) {
        let _ = std::fs::remove_dir_all(self.dir.path());
    }
}

contract::contract_tests!(Sqlite);

const NOW: i64 = contract::NOW;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x11; 32]);
const SELLER: &str = "https://seller.example/mcp";

#[test]
fn open_sets_wal_and_full_sync_and_refuses_short_windows() {
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 3);
    drop(conn);
    let short = SqliteOptions {
        idempotency: IdempotencyConfig {
            window_secs: 3_600,
            ..IdempotencyConfig::default()
        },
        ..SqliteOptions::default()
    };
    assert!(SqliteStore::open(dir.path().join("short.sqlite"), short).is_err());
    // A newer schema is refused rather than misread.
    let newer = dir.path().join("newer.sqlite");
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    assert!(SqliteStore::open(&newer, SqliteOptions::default()).is_err());
}

#[tokio::test]
async fn records_survive_reopening_and_are_shared_by_two_handles() {
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let a = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let b = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let e = SenderKey {
        sender: SELLER,
        idempotency_key: "whk_shared",
    };
    let ClaimOutcome::Claimed(claim) = a.claim(e, FP, NOW).await.unwrap() else {
        panic!()
    };
    assert!(matches!(
        b.claim(e, FP, NOW).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    b.complete(e, claim.token, NOW).await.unwrap();
    drop((a, b));
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(reopened.claim(e, FP, NOW + 10).await.unwrap(), ClaimOutcome::Completed);
    let nonce = adcp_verify::ReplayKey {
        agent: None,
        keyid: "k",
        nonce: b"n",
        scope: None,
    };
    reopened.insert(nonce, NOW + 360, NOW).await.unwrap();
    assert_eq!(reopened.purge_expired(NOW + DAY_PLUS).await.unwrap(), 2);
}

const DAY_PLUS: i64 = contract::DAY + 100;

/// The replay tables of schema version 1 (per-keyid counters), as an older
/// build created them.
const SCHEMA_V1_REPLAY: &str = "
CREATE TABLE adcp_replay (
    keyid TEXT NOT NULL, scoped INTEGER NOT NULL, scope TEXT NOT NULL, nonce BLOB NOT NULL,
    expires_at INTEGER NOT NULL, PRIMARY KEY (keyid, scoped, scope, nonce)
) WITHOUT ROWID;
CREATE INDEX adcp_replay_expires ON adcp_replay (expires_at);
CREATE TABLE adcp_replay_counts (keyid TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE adcp_replay_total (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT INTO adcp_replay_total (id, n) VALUES (0, 0);
CREATE TRIGGER adcp_replay_ins AFTER INSERT ON adcp_replay BEGIN
    INSERT INTO adcp_replay_counts (keyid, n) VALUES (NEW.keyid, 1)
        ON CONFLICT (keyid) DO UPDATE SET n = n + 1;
    UPDATE adcp_replay_total SET n = n + 1 WHERE id = 0;
END;
CREATE TRIGGER adcp_replay_del AFTER DELETE ON adcp_replay BEGIN
    UPDATE adcp_replay_counts SET n = n - 1 WHERE keyid = OLD.keyid;
    DELETE FROM adcp_replay_counts WHERE keyid = OLD.keyid AND n <= 0;
    UPDATE adcp_replay_total SET n = n - 1 WHERE id = 0;
END;
INSERT INTO adcp_replay VALUES ('key-1', 0, '', x'01', 1776521160);
INSERT INTO adcp_replay VALUES ('key-1', 1, 'https://buyer.example/hook', x'02', 1776521160);
INSERT INTO adcp_replay VALUES ('other', 0, '', x'01', 1776521160);
PRAGMA user_version = 1;
";

#[tokio::test]
async fn a_version_1_database_is_migrated_keeping_its_entries() {
    use adcp_verify::{CapKey, InsertOutcome, ReplayKey};
    let dir = TempDir::new();
    let path = dir.path().join("v1.sqlite");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(SCHEMA_V1_REPLAY)
        .unwrap();
    let options = SqliteOptions {
        replay_limits: ReplayLimits::new(2, 4),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open(&path, options).unwrap();
    // The live entries survived and still reject replays, from any agent.
    let held = ReplayKey {
        agent: Some("https://seller-b.example/mcp"),
        ..replay_key("key-1", &[1])
    };
    assert!(store.contains(held, NOW).await.unwrap());
    assert_eq!(
        store.insert(held, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Replayed
    );
    // They count toward the `agent: None` partition, as they did per keyid.
    let none = CapKey {
        agent: None,
        keyid: "key-1",
    };
    assert!(store.keyid_cap_reached(none, NOW).await.unwrap());
    assert_eq!(
        store.insert(replay_key("key-1", &[3]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::KeyidCapReached
    );
    // An agent sharing the kid has its own count; the aggregate count (3
    // migrated + 1) is exact.
    let by_a = ReplayKey {
        agent: Some("https://seller-a.example/mcp"),
        ..replay_key("key-1", &[3])
    };
    assert_eq!(
        store.insert(by_a, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        store.insert(replay_key("new", &[1]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::AggregateCapReached
    );
    // Expiry frees the migrated counts through the new triggers.
    assert_eq!(store.purge_expired(NOW + 361).await.unwrap(), 4);
    assert!(!store.keyid_cap_reached(none, NOW + 361).await.unwrap());
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 3);
    let leftovers: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master
                WHERE name IN ('adcp_replay', 'adcp_replay_counts', 'adcp_replay_ins', 'adcp_replay_del')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(leftovers, 0, "the version-1 table, counters and triggers are gone");
    let (counted, total): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COALESCE(SUM(n), 0) FROM adcp_replay_cap_counts), (SELECT n FROM adcp_replay_total)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((counted, total), (0, 0));
    drop(conn);
    // Reopening a migrated file is a no-op.
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(
        store.insert(replay_key("key-1", &[1]), NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );
}

#[tokio::test]
async fn a_full_database_fails_closed() {
    let dir = TempDir::new();
    let options = SqliteOptions {
        max_db_bytes: Some(64 * 1024),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open(dir.path().join("small.sqlite"), options).unwrap();
    let mut failed = None;
    for i in 0..10_000u32 {
        let k = format!("whk_{i:0>64}");
        match store
            .claim(
                SenderKey {
                    sender: SELLER,
                    idempotency_key: &k,
                },
                FP,
                NOW,
            )
            .await
        {
            Ok(ClaimOutcome::Claimed(_)) => {}
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let e = failed.expect("the size ceiling is enforced");
    assert!(e.is_retryable(), "{e}");
    let nonce = adcp_verify::ReplayKey {
        agent: None,
        keyid: "k",
        nonce: &[7; 600],
        scope: None,
    };
    let mut replay_failed = false;
    for i in 0..1_000u32 {
        let n = [&i.to_be_bytes()[..], &[7; 600]].concat();
        if store
            .insert(adcp_verify::ReplayKey { nonce: &n, ..nonce }, NOW + 360, NOW)
            .await
            .is_err()
        {
            replay_failed = true;
            break;
        }
    }
    assert!(replay_failed, "replay inserts fail closed too");
}

/// Child half of the kill -9 test: claims keys and prints each acknowledged one.
#[test]
#[ignore = "run by sigkill_keeps_every_acknowledged_claim"]
fn sigkill_child() {
    let Ok(path) = std::env::var("ADCP_STORE_SIGKILL_DB") else {
        return;
    };
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        let k = format!("whk_{i}");
        let outcome = rt
            .block_on(store.claim(
                SenderKey {
                    sender: SELLER,
                    idempotency_key: &k,
                },
                FP,
                NOW,
            ))
            .unwrap();
        assert!(matches!(outcome, ClaimOutcome::Claimed(_)));
        writeln!(out, "ack {k}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_keeps_every_acknowledged_claim() {
    use std::io::BufRead;
    let dir = TempDir::new();
    let path = dir.path().join("kill.sqlite");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            // Its name in this binary (tests/it/main.rs, module `sqlite`).
            "sqlite::sigkill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ADCP_STORE_SIGKILL_DB", &path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(k) = line.strip_prefix("ack ") {
            acked.push(k.to_owned());
            if acked.len() == 200 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    assert_eq!(acked.len(), 200);
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for k in &acked {
        let outcome = rt
            .block_on(store.claim(
                SenderKey {
                    sender: SELLER,
                    idempotency_key: k,
                },
                FP,
                NOW + 1,
            ))
            .unwrap();
        assert!(matches!(outcome, ClaimOutcome::InProgress { .. }), "{k}: {outcome:?}");
    }
}

#[test]
fn works_without_a_tokio_runtime() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.path().join("db.sqlite"), SqliteOptions::default()).unwrap();
    use std::future::Future;
    let fut = store.contains(
        adcp_verify::ReplayKey {
            agent: None,
            keyid: "k",
            nonce: b"n",
            scope: None,
        },
        NOW,
    );
    // A minimal executor: the future completes on first poll when run inline.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut fut = std::pin::pin!(fut);
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => assert!(!r.unwrap()),
        std::task::Poll::Pending => panic!("inline call should complete"),
    }
}

// Group commit: one writer thread runs the operations of concurrent callers
// in shared transactions.

fn replay_key<'a>(keyid: &'a str, nonce: &'a [u8]) -> adcp_verify::ReplayKey<'a> {
    adcp_verify::ReplayKey {
        agent: None,
        keyid,
        nonce,
        scope: None,
    }
}

fn key(idempotency_key: &str) -> SenderKey<'_> {
    SenderKey {
        sender: SELLER,
        idempotency_key,
    }
}

/// Runs a store call outside any runtime: it blocks until the writer
/// answered, so the future is ready on its first poll.
fn now<F: std::future::Future>(fut: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(fut).poll(&mut cx) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("a call outside a runtime should complete inline"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_and_inserts_are_each_answered_once_and_survive_reopening() {
    const CALLS: usize = 2_000;
    const KEYS: usize = 500;
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let store = Arc::clone(&store);
        tasks.spawn(async move {
            let k = format!("whk_{}", i % KEYS);
            let claim = store.claim(key(&k), FP, NOW).await.unwrap();
            let nonce = format!("n_{}", i % KEYS);
            let insert = store
                .insert(replay_key("k", nonce.as_bytes()), NOW + 360, NOW)
                .await
                .unwrap();
            (i, claim, insert)
        });
    }
    let mut answered = vec![false; CALLS];
    let mut winners = std::collections::HashSet::new();
    let mut inserted = std::collections::HashSet::new();
    while let Some(done) = tasks.join_next().await {
        let (i, claim, insert) = done.unwrap();
        assert!(!std::mem::replace(&mut answered[i], true));
        match claim {
            ClaimOutcome::Claimed(c) => {
                assert_eq!(c.attempt, 1);
                assert!(winners.insert(i % KEYS), "two winners for key {}", i % KEYS);
            }
            ClaimOutcome::InProgress { lease_expires_at } => assert!(lease_expires_at > NOW),
            other => panic!("unexpected {other:?}"),
        }
        match insert {
            adcp_verify::InsertOutcome::Inserted => {
                assert!(inserted.insert(i % KEYS), "nonce {} inserted twice", i % KEYS);
            }
            adcp_verify::InsertOutcome::Replayed => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(answered.iter().all(|a| *a));
    assert_eq!(winners.len(), KEYS);
    assert_eq!(inserted.len(), KEYS);
    assert_eq!(store.sender_len(SELLER, NOW).await.unwrap(), KEYS as u64);
    drop(store);
    // Every acknowledged write is in the file.
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    for i in 0..KEYS {
        let k = format!("whk_{i}");
        assert!(matches!(
            reopened.claim(key(&k), FP, NOW + 1).await.unwrap(),
            ClaimOutcome::InProgress { .. }
        ));
        let nonce = format!("n_{i}");
        assert!(reopened
            .contains(replay_key("k", nonce.as_bytes()), NOW + 1)
            .await
            .unwrap());
    }
}

/// Holds the SQLite write lock from another connection, as another process
/// sharing the file would; the store's writer waits for it.
fn lock_file(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_failing_inside_a_batch_fails_alone() {
    const BIG: usize = 5_000; // larger than a page: needs new pages
    let dir = TempDir::new();
    let path = dir.path().join("small.sqlite");
    let options = SqliteOptions {
        max_db_bytes: Some(256 * 1024),
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteStore::open(&path, options).unwrap());
    let ClaimOutcome::Claimed(pre) = store.claim(key("whk_pre"), FP, NOW).await.unwrap() else {
        panic!()
    };
    // Fill the file up to its ceiling with large replay entries.
    let mut full = false;
    for i in 0..1_000u32 {
        let nonce = [&i.to_be_bytes()[..], &[1; BIG]].concat();
        if store.insert(replay_key("k", &nonce), NOW + 360, NOW).await.is_err() {
            full = true;
            break;
        }
    }
    assert!(full, "the ceiling is reached");
    // Queue small writes (they fit in the idempotency tables' pages) and
    // large inserts (they need pages the ceiling refuses), interleaved,
    // behind a held lock so that they are drained as one batch.
    let locker = lock_file(&path);
    let blocker = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.lookup(key("whk_pre"), NOW).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let mut claims = Vec::new();
    let mut inserts = Vec::new();
    for i in 0..10u32 {
        let store_c = Arc::clone(&store);
        claims.push(tokio::spawn(async move {
            let k = format!("whk_ok_{i}");
            store_c.claim(key(&k), FP, NOW).await
        }));
        let store_i = Arc::clone(&store);
        inserts.push(tokio::spawn(async move {
            let nonce = [&(10_000 + i).to_be_bytes()[..], &[2; BIG]].concat();
            store_i.insert(replay_key("k", &nonce), NOW + 360, NOW).await
        }));
    }
    let completed = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.complete(key("whk_pre"), pre.token, NOW).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    locker.execute_batch("ROLLBACK").unwrap();
    drop(locker);
    assert!(blocker.await.unwrap().unwrap().is_some());
    for claim in claims {
        assert!(matches!(claim.await.unwrap(), Ok(ClaimOutcome::Claimed(_))));
    }
    for insert in inserts {
        assert!(
            insert.await.unwrap().is_err(),
            "an insert beyond the ceiling fails closed"
        );
    }
    completed.await.unwrap().unwrap();
    drop(store);
    // The writes acknowledged next to the failures are durable.
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    for i in 0..10u32 {
        let k = format!("whk_ok_{i}");
        assert!(reopened.lookup(key(&k), NOW).await.unwrap().is_some(), "{k}");
    }
    assert_eq!(
        reopened.claim(key("whk_pre"), FP, NOW + 1).await.unwrap(),
        ClaimOutcome::Completed
    );
}

#[tokio::test]
async fn a_write_lock_held_past_the_busy_timeout_fails_closed_then_recovers() {
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let options = SqliteOptions {
        busy_timeout: std::time::Duration::from_millis(200),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open(&path, options).unwrap();
    let locker = lock_file(&path);
    let (a, b) = tokio::join!(
        store.claim(key("whk_a"), FP, NOW),
        store.insert(replay_key("k", b"n"), NOW + 360, NOW)
    );
    assert!(a.unwrap_err().is_retryable());
    assert!(b.is_err());
    drop(locker);
    assert!(matches!(
        store.claim(key("whk_a"), FP, NOW).await.unwrap(),
        ClaimOutcome::Claimed(_)
    ));
}

#[tokio::test]
async fn dropping_the_last_clone_closes_the_database() {
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let wal = dir.path().join("db.sqlite-wal");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let clone = store.clone();
    assert!(matches!(
        store.claim(key("whk_a"), FP, NOW).await.unwrap(),
        ClaimOutcome::Claimed(_)
    ));
    // Queued, then abandoned by its caller: still applied before the close.
    {
        let mut queued = std::pin::pin!(clone.claim(key("whk_b"), FP, NOW));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = std::future::Future::poll(queued.as_mut(), &mut cx);
    }
    drop(store);
    assert!(wal.exists(), "a clone is alive: its writer holds the database open");
    drop(clone);
    // SQLite checkpoints and deletes the WAL when its last connection
    // closes: the writer thread has closed the connection when the drop
    // returns.
    assert!(!wal.exists(), "the writer thread still holds the database");
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(reopened.lookup(key("whk_b"), NOW).await.unwrap().is_some());
}

#[test]
fn plain_threads_share_the_writer_without_a_runtime() {
    let dir = TempDir::new();
    let store = SqliteStore::open(dir.path().join("db.sqlite"), SqliteOptions::default()).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut wins = 0;
                for i in 0..50 {
                    let k = format!("whk_{}", (i + t * 7) % 100);
                    match now(store.claim(key(&k), FP, NOW)).unwrap() {
                        ClaimOutcome::Claimed(c) => {
                            now(store.complete(key(&k), c.token, NOW)).unwrap();
                            wins += 1;
                        }
                        ClaimOutcome::InProgress { .. } | ClaimOutcome::Completed => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
                wins
            })
        })
        .collect();
    let wins: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let claimed = (0..8).flat_map(|t| (0..50).map(move |i| (i + t * 7) % 100));
    let distinct: std::collections::HashSet<_> = claimed.collect();
    assert_eq!(wins, distinct.len());
    assert_eq!(now(store.sender_len(SELLER, NOW)).unwrap(), distinct.len() as u64);
    assert_eq!(now(store.purge_expired(NOW + DAY_PLUS)).unwrap(), distinct.len() as u64);
}

/// Step 13 answered before its commit: the outcome is the insert's, the
/// durability resolves once the entry is committed (it survives a reopen),
/// and the next operation sees the entry at once.
#[tokio::test]
async fn an_early_replay_insert_is_durable_once_its_durability_resolves() {
    use adcp_verify::InsertOutcome;
    let dir = TempDir::new();
    let path = dir.path().join("early.sqlite");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let (outcome, durability) = store
        .insert_early(replay_key("k", b"early"), NOW + 360, NOW)
        .await
        .unwrap();
    assert_eq!(outcome, InsertOutcome::Inserted);
    assert!(durability.is_pending());
    let (again, _) = store
        .insert_early(replay_key("k", b"early"), NOW + 360, NOW)
        .await
        .unwrap();
    assert_eq!(again, InsertOutcome::Replayed);
    durability.wait().await.unwrap();
    drop(store);
    let reopened = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert!(reopened.contains(replay_key("k", b"early"), NOW).await.unwrap());
}

/// A version-2 file as the last builds of that version left it: replay
/// entries unique on their key, dedup records in a rowid table with a
/// unique index on `(sender, key)` (`{records}` closes the table, or
/// makes it the older `WITHOUT ROWID` table keyed by it), their counters, no
/// notification records; one live replay entry, a completed record, one
/// held under token 7 and one of another sender.
const SCHEMA_V2: &str = "
CREATE TABLE adcp_replay (
    keyid TEXT NOT NULL, scoped INTEGER NOT NULL, scope TEXT NOT NULL, nonce BLOB NOT NULL,
    expires_at INTEGER NOT NULL, agented INTEGER NOT NULL DEFAULT 0, agent TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (keyid, scoped, scope, nonce)
) WITHOUT ROWID;
CREATE INDEX adcp_replay_expires ON adcp_replay (expires_at);
CREATE TABLE adcp_replay_cap_counts (
    keyid TEXT NOT NULL, agented INTEGER NOT NULL, agent TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (keyid, agented, agent)
) WITHOUT ROWID;
CREATE TABLE adcp_replay_total (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL);
INSERT INTO adcp_replay_total (id, n) VALUES (0, 0);
CREATE TRIGGER adcp_replay_cap_ins AFTER INSERT ON adcp_replay BEGIN
    INSERT INTO adcp_replay_cap_counts (keyid, agented, agent, n) VALUES (NEW.keyid, NEW.agented, NEW.agent, 1)
        ON CONFLICT (keyid, agented, agent) DO UPDATE SET n = n + 1;
    UPDATE adcp_replay_total SET n = n + 1 WHERE id = 0;
END;
CREATE TRIGGER adcp_replay_cap_del AFTER DELETE ON adcp_replay BEGIN
    UPDATE adcp_replay_cap_counts SET n = n - 1
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent;
    DELETE FROM adcp_replay_cap_counts
        WHERE keyid = OLD.keyid AND agented = OLD.agented AND agent = OLD.agent AND n <= 0;
    UPDATE adcp_replay_total SET n = n - 1 WHERE id = 0;
END;
CREATE TABLE adcp_idempotency (
    sender TEXT NOT NULL, key TEXT NOT NULL, fingerprint BLOB NOT NULL, completed INTEGER NOT NULL,
    token INTEGER NOT NULL, attempt INTEGER NOT NULL, lease_expires_at INTEGER NOT NULL,
    completed_at INTEGER NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    {records};
CREATE INDEX adcp_idempotency_expires ON adcp_idempotency (expires_at);
CREATE TABLE adcp_idempotency_counts (sender TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER adcp_idempotency_ins AFTER INSERT ON adcp_idempotency BEGIN
    INSERT INTO adcp_idempotency_counts (sender, n) VALUES (NEW.sender, 1)
        ON CONFLICT (sender) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER adcp_idempotency_del AFTER DELETE ON adcp_idempotency BEGIN
    UPDATE adcp_idempotency_counts SET n = n - 1 WHERE sender = OLD.sender;
    DELETE FROM adcp_idempotency_counts WHERE sender = OLD.sender AND n <= 0;
END;
INSERT INTO adcp_replay VALUES ('key-1', 0, '', x'01', 1776521160, 1, 'https://seller.example/mcp');
INSERT INTO adcp_idempotency VALUES
    ('https://seller.example/mcp', 'whk_done', zeroblob(32), 1, 3, 1, 0, 1776520800, 1776520800, 1776607200),
    ('https://seller.example/mcp', 'whk_held', zeroblob(32), 0, 7, 2, 1776521100, 0, 1776520800, 1776607200),
    ('https://other.example/mcp', 'whk_other', zeroblob(32), 0, 1, 1, 1776521100, 0, 1776520800, 1776607200);
PRAGMA user_version = 2;
";

/// A version-2 file, with either layout of its dedup table, moves to
/// version 3 at open keeping every replay entry and record (completed,
/// held, with its token) and the counts, gains the notification records,
/// and keeps every key unique in the new layout.
#[tokio::test]
async fn a_version_2_database_moves_to_version_3_keeping_its_entries_and_records() {
    use adcp_store::ClaimToken;
    use adcp_verify::InsertOutcome;
    assert_eq!(NOW, 1_776_520_800, "the fixture's timestamps");
    let zeros = Fingerprint::from_array(&[0; 32]);
    for (layout, records) in [
        ("rowid", "UNIQUE (sender, key))"),
        ("keyed", "PRIMARY KEY (sender, key)) WITHOUT ROWID"),
    ] {
        let dir = TempDir::new();
        let path = dir.path().join(format!("v2-{layout}.sqlite"));
        let fixture = SCHEMA_V2.replace("{records}", records);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&fixture)
            .unwrap();

        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        assert_eq!(
            store.insert(replay_key("key-1", &[1]), NOW + 360, NOW).await.unwrap(),
            InsertOutcome::Replayed,
            "{layout}"
        );
        assert_eq!(
            store.claim(key("whk_done"), zeros, NOW + 1).await.unwrap(),
            ClaimOutcome::Completed
        );
        assert!(matches!(
            store.claim(key("whk_held"), zeros, NOW + 1).await.unwrap(),
            ClaimOutcome::InProgress { .. }
        ));
        // The holder's token still completes its claim.
        store.complete(key("whk_held"), ClaimToken(7), NOW + 1).await.unwrap();
        assert_eq!(
            store.claim(key("whk_held"), zeros, NOW + 2).await.unwrap(),
            ClaimOutcome::Completed
        );
        assert_eq!(store.sender_len(SELLER, NOW + 2).await.unwrap(), 2);
        assert_eq!(store.sender_len("https://other.example/mcp", NOW + 2).await.unwrap(), 1);
        // Uniqueness holds in the new layout: a second claim of a key is no insert.
        let ClaimOutcome::Claimed(new) = store.claim(key("whk_new"), FP, NOW + 2).await.unwrap() else {
            panic!("fresh claim expected")
        };
        assert!(matches!(
            store.claim(key("whk_new"), FP, NOW + 2).await.unwrap(),
            ClaimOutcome::InProgress { .. }
        ));
        assert_eq!(store.sender_len(SELLER, NOW + 2).await.unwrap(), 3);
        // Notification records work on the migrated file.
        store
            .complete_with_notification(key("whk_new"), new.token, Some("ntf_1"), NOW + 2)
            .await
            .unwrap();
        assert_eq!(
            store
                .notification_origin(SELLER, "ntf_1", NOW + 2)
                .await
                .unwrap()
                .as_deref(),
            Some("whk_new")
        );
        // Everything expires: one replay entry, four records, one notification.
        assert_eq!(store.purge_expired(NOW + 2 * contract::DAY).await.unwrap(), 6);
        drop(store);

        let conn = rusqlite::Connection::open(&path).unwrap();
        let (leftovers, counted, total): (i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM sqlite_master WHERE name IN ('adcp_replay', 'adcp_idempotency')),
                        (SELECT COUNT(*) FROM adcp_idempotency_counts) + (SELECT COUNT(*) FROM adcp_replay_cap_counts),
                        (SELECT n FROM adcp_replay_total)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(leftovers, 0, "the version-2 tables are gone ({layout})");
        assert_eq!((counted, total), (0, 0), "the purge emptied the counts ({layout})");
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 3);
    }
}

/// Step 9a's pre-check answers from memory only for a partition the store
/// saw below its cap; at the cap, or for a partition it never saw, it sends
/// the verifier to the database. A second handle's inserts are not seen by
/// the first one's pre-check, but the first one's insert still refuses.
#[tokio::test]
async fn the_keyid_cap_pre_check_never_refuses_from_memory_and_the_insert_enforces_the_cap() {
    let dir = TempDir::new();
    let path = dir.path().join("db.sqlite");
    let options = SqliteOptions {
        replay_limits: ReplayLimits {
            per_keyid_cap: 3,
            ..ReplayLimits::webhook()
        },
        ..SqliteOptions::default()
    };
    let a = SqliteStore::open(&path, options).unwrap();
    let b = SqliteStore::open(&path, options).unwrap();
    let cap = replay_key("k", b"").cap_key();
    assert_eq!(
        a.keyid_cap_reached_now(cap, NOW),
        None,
        "never seen: asked of the database"
    );
    assert!(!a.keyid_cap_reached(cap, NOW).await.unwrap());
    assert_eq!(a.keyid_cap_reached_now(cap, NOW), Some(Ok(false)), "seen empty");
    for nonce in [b"1", b"2"] {
        assert_eq!(
            a.insert(replay_key("k", nonce), NOW + 360, NOW).await.unwrap(),
            adcp_verify::InsertOutcome::Inserted
        );
    }
    assert_eq!(a.keyid_cap_reached_now(cap, NOW), Some(Ok(false)), "two of three");
    // The third entry, through the other handle: `a` does not know.
    b.insert(replay_key("k", b"3"), NOW + 360, NOW).await.unwrap();
    assert_eq!(a.keyid_cap_reached_now(cap, NOW), Some(Ok(false)));
    assert_eq!(
        a.insert(replay_key("k", b"4"), NOW + 360, NOW).await.unwrap(),
        adcp_verify::InsertOutcome::KeyidCapReached,
        "the insert counts every entry in the file"
    );
    assert_eq!(a.keyid_cap_reached_now(cap, NOW), None, "now known to be at the cap");
    assert!(a.keyid_cap_reached(cap, NOW).await.unwrap());
    // Once the entries expire the database says so, and memory follows.
    assert!(!a.keyid_cap_reached(cap, NOW + 361).await.unwrap());
    assert_eq!(a.keyid_cap_reached_now(cap, NOW + 361), Some(Ok(false)));
}

/// Two handles on one file stand for two processes sharing it: each finds
/// the rows the other inserted, and a row the other deleted is no record,
/// whatever its own key index still holds.
#[tokio::test]
async fn two_handles_find_each_others_rows_and_forget_the_deleted_ones() {
    use adcp_verify::InsertOutcome;
    let dir = TempDir::new();
    let path = dir.path().join("shared.sqlite");
    let a = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let b = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let k = key("whk_shared_row");
    let ClaimOutcome::Claimed(first) = a.claim(k, FP, NOW).await.unwrap() else {
        panic!("fresh claim expected")
    };
    assert!(matches!(
        b.claim(k, FP, NOW).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    // `a` releases: `b`'s index still points at the deleted row.
    a.release(k, first.token, NOW).await.unwrap();
    let ClaimOutcome::Claimed(second) = b.claim(k, FP, NOW).await.unwrap() else {
        panic!("the released key is claimed again")
    };
    assert!(matches!(
        a.claim(k, FP, NOW).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    a.complete(k, second.token, NOW).await.unwrap();
    assert_eq!(b.claim(k, FP, NOW + 1).await.unwrap(), ClaimOutcome::Completed);
    assert!(b.lookup(k, NOW + 1).await.unwrap().is_some());
    // Replay entries too.
    let nonce = replay_key("k", b"shared-nonce");
    assert_eq!(a.insert(nonce, NOW + 360, NOW).await.unwrap(), InsertOutcome::Inserted);
    assert_eq!(b.insert(nonce, NOW + 360, NOW).await.unwrap(), InsertOutcome::Replayed);
    assert!(b.contains(nonce, NOW).await.unwrap());
    // `b` purges what expired; `a` claims and inserts again afterwards.
    let later = NOW + 2 * contract::DAY;
    assert_eq!(b.purge_expired(later).await.unwrap(), 2);
    assert!(a.lookup(k, later).await.unwrap().is_none());
    assert!(matches!(a.claim(k, FP, later).await.unwrap(), ClaimOutcome::Claimed(_)));
    assert!(matches!(
        b.claim(k, FP, later).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
    assert_eq!(
        a.insert(nonce, later + 360, later).await.unwrap(),
        InsertOutcome::Inserted
    );
    assert_eq!(
        b.insert(nonce, later + 360, later).await.unwrap(),
        InsertOutcome::Replayed
    );
}

/// A job whose writes are rolled back to its savepoint (here `claim_many`
/// running out of room halfway) leaves no trace in the key index: the
/// claims it undid are claimed afresh later, though their rowids went to
/// other keys meanwhile.
#[tokio::test]
async fn writes_rolled_back_to_a_savepoint_leave_no_trace_in_the_key_index() {
    use adcp_store::ClaimRequest;
    const BIG: usize = 5_000; // larger than a page: needs new pages
    let dir = TempDir::new();
    let path = dir.path().join("small.sqlite");
    let options = SqliteOptions {
        max_db_bytes: Some(256 * 1024),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open(&path, options).unwrap();
    let mut full = false;
    for i in 0..1_000u32 {
        let nonce = [&i.to_be_bytes()[..], &[1; BIG]].concat();
        if store.insert(replay_key("k", &nonce), NOW + 360, NOW).await.is_err() {
            full = true;
            break;
        }
    }
    assert!(full, "the ceiling is reached");
    let huge = "h".repeat(BIG);
    let requests = [
        ClaimRequest {
            key: key("whk_undone"),
            fingerprint: FP,
        },
        ClaimRequest {
            key: key(&huge),
            fingerprint: FP,
        },
    ];
    let answers = store.claim_many(&requests, NOW).await;
    assert!(answers.iter().all(Result::is_err), "{answers:?}");
    // The next claim takes the rowid the undone one had.
    assert!(matches!(
        store.claim(key("whk_other"), FP, NOW).await.unwrap(),
        ClaimOutcome::Claimed(_)
    ));
    assert!(matches!(
        store.claim(key("whk_undone"), FP, NOW).await.unwrap(),
        ClaimOutcome::Claimed(_)
    ));
    assert!(matches!(
        store.claim(key("whk_other"), FP, NOW).await.unwrap(),
        ClaimOutcome::InProgress { .. }
    ));
}
