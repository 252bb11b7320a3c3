//! PostgreSQL outages, injected by a test-owned TCP proxy in front of the
//! server at `DATABASE_URL` (or a private one, see
//! `adcp_test_support::database_url`): while the proxy is down (connections cut, new
//! ones refused), every operation fails closed with the retryable error
//! within `op_timeout`; once it is back, the same store recovers by itself
//! and every acknowledged write is still there.

use crate::fixtures::{claim_when_back, claimed, database_url, event, SELLER_NONCE};
use adcp_store::{ClaimOutcome, ClaimRequest, Fingerprint, IdempotencyError, IdempotencyStore};
use adcp_store::{PostgresOptions, PostgresStore};
use adcp_verify::{InsertOutcome, ReplayStore};
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

const NOW: i64 = 1_776_520_800;
const FP: Fingerprint<'static> = Fingerprint::from_array(&[0x66; 32]);

/// Forwards `127.0.0.1:port` to `upstream` while up; `stop` cuts every
/// connection and closes the port, `start` opens it again.
struct Proxy {
    port: u16,
    upstream: SocketAddr,
    tasks: Option<JoinSet<()>>,
}

impl Proxy {
    async fn new(upstream: SocketAddr) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut proxy = Proxy {
            port,
            upstream,
            tasks: None,
        };
        proxy.start().await;
        proxy
    }

    async fn start(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        let upstream = self.upstream;
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
            // Dropping this task (abort) drops the listener and every
            // connection task with it.
        });
        self.tasks = Some(tasks);
    }

    async fn stop(&mut self) {
        if let Some(mut tasks) = self.tasks.take() {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
    }
}

/// The server address and a URL for the same user and database through `port`.
fn through(port: u16) -> (SocketAddr, String) {
    let config = tokio_postgres::Config::from_str(&database_url()).unwrap();
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "127.0.0.1".to_owned(),
    };
    let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
    let upstream = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), upstream_port))
        .unwrap()
        .next()
        .unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or(user);
    let password = config
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    (upstream, format!("postgres://{user}{password}@127.0.0.1:{port}/{db}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_fails_closed_and_the_store_recovers_by_itself() {
    let (upstream, _) = through(0);
    let mut proxy = Proxy::new(upstream).await;
    let (_, url) = through(proxy.port);
    let schema = format!("adcp_fault_{}", std::process::id());
    let store = PostgresStore::connect(
        &url,
        PostgresOptions {
            schema: schema.clone(),
            pool_size: 2,
            op_timeout: Duration::from_secs(1),
            ..PostgresOptions::default()
        },
    )
    .await
    .unwrap();
    let done = event("whk_done");
    let claim = claimed(&store, done, FP, NOW).await;
    store.complete(done, claim.token, NOW).await.unwrap();
    let nonce = SELLER_NONCE;
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW).await.unwrap(),
        InsertOutcome::Inserted
    );

    proxy.stop().await;
    let started = Instant::now();
    for _ in 0..2 {
        // Every pooled connection is cut; none is reported as new or duplicate.
        let err = store.claim(event("whk_new"), FP, NOW + 1).await.unwrap_err();
        assert!(matches!(err, IdempotencyError::Unavailable(_)), "{err}");
        assert!(err.is_retryable());
        assert!(store.claim(done, FP, NOW + 1).await.unwrap_err().is_retryable());
        assert!(store.insert(nonce, NOW + 360, NOW + 1).await.is_err());
        assert!(store.contains(nonce, NOW + 1).await.is_err());
        assert!(store.lookup(done, NOW + 1).await.is_err());
        let batch = [ClaimRequest {
            key: event("whk_batch"),
            fingerprint: FP,
        }; 2];
        for outcome in store.claim_many(&batch, NOW + 1).await {
            assert!(outcome.unwrap_err().is_retryable());
        }
    }
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());

    proxy.start().await;
    // The same store, no reconnect call.
    let outcome = claim_when_back(&store, done, FP, NOW + 2, Duration::from_secs(15)).await;
    assert_eq!(outcome, ClaimOutcome::Completed);
    assert_eq!(
        store.insert(nonce, NOW + 360, NOW + 2).await.unwrap(),
        InsertOutcome::Replayed
    );
    // Both pooled connections work again.
    for i in 0..4 {
        let k = format!("whk_after_{i}");
        assert!(matches!(
            store.claim(event(&k), FP, NOW + 2).await.unwrap(),
            ClaimOutcome::Claimed(_)
        ));
    }
    store.drop_schema().await.unwrap();
    proxy.stop().await;
}
