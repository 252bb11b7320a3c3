//! Gateways sharing one store behave as one receiver, and a store outage
//! fails closed: readiness false, 503, nothing forwarded.
//!
//! Shared Redis at `REDIS_URL` (default `redis://127.0.0.1:6379`, a unique
//! key prefix per test), PostgreSQL at `DATABASE_URL` (default
//! `postgres://root@127.0.0.1:5432/test`, a unique schema per test), each
//! replaced by a private server when it does not answer
//! (`adcp_test_support`); the outage test starts and stops its own
//! `redis-server`.

use crate::support::gateway as common;
use adcp_test_support::{database_url, redis_server, redis_url};

use common::{event, gateway, get, send, unique, Seller, Upstream};

/// Two gateways on one store; the same events go to both, concurrently
/// and as later retries; the upstream applies each exactly once.
async fn two_gateways_one_store(store: &str, namespace: &str) {
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let one = gateway(&seller, store, namespace, upstream.url()).await;
    let two = gateway(&seller, store, namespace, upstream.url()).await;

    let events: Vec<_> = (0..5).map(|i| event(&format!("e{i}"))).collect();
    for e in &events {
        let (to_one, to_two) = (seller.sign(&one, e).await, seller.sign(&two, e).await);
        let (a, b) = tokio::join!(send(&one, &to_one, None), send(&two, &to_two, None));
        // One wins; the other sees it in progress (503, the seller retries)
        // or already completed (200 without forwarding).
        assert!(a.0 == 200 || b.0 == 200, "{a:?} {b:?}");
        for r in [&a, &b] {
            assert!(r.0 == 200 || r.0 == 503, "{a:?} {b:?}");
        }
    }
    // Retries through either instance: 200, never forwarded again.
    for e in &events {
        for handle in [&one, &two] {
            let retry = seller.sign(handle, e).await;
            assert_eq!(send(handle, &retry, None).await, (200, None));
        }
    }
    let mut applied = upstream.applied_keys();
    applied.sort();
    let mut expected: Vec<String> = events.iter().map(|e| e.idempotency_key().as_str().to_owned()).collect();
    expected.sort();
    assert_eq!(applied, expected, "each event applied exactly once");
    let forwarded = one.gateway().metrics().forwarded_count() + two.gateway().metrics().forwarded_count();
    assert_eq!(forwarded, 5);
    one.shutdown().await.unwrap();
    two.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_sharing_redis_forward_each_event_once() {
    two_gateways_one_store(&redis_url(), &unique("redis")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_sharing_postgres_forward_each_event_once() {
    two_gateways_one_store(&database_url(), &unique("pg")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_down_means_not_ready_and_503_and_nothing_forwarded() {
    let mut server = redis_server::Server::start(
        redis_server::free_port(),
        redis_server::temp_dir("gateway-down"),
        "noeviction",
    );
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway(&seller, &server.url(), &unique("down"), upstream.url()).await;
    let base = handle.base_url();
    assert_eq!(get(format!("{base}/readyz")).await.0, 200);

    server.kill();
    let (status, body) = get(format!("{base}/readyz")).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(get(format!("{base}/healthz")).await.0, 200, "alive, not ready");
    let a = event("a");
    let signed = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &signed, None).await.0, 503);
    assert!(upstream.applied_keys().is_empty(), "nothing forwarded unverified");
    assert_eq!(upstream.seen.requests.load(std::sync::atomic::Ordering::SeqCst), 0);

    // Back up (same AOF): ready again, the seller's retry is forwarded once.
    server.spawn("noeviction");
    let mut ready = false;
    for _ in 0..50 {
        if get(format!("{base}/readyz")).await.0 == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ready, "readiness did not come back with the store");
    let retry = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &retry, None).await, (200, None));
    let again = seller.sign(&handle, &a).await;
    assert_eq!(send(&handle, &again, None).await, (200, None));
    assert_eq!(upstream.applied_keys(), [a.idempotency_key().as_str()]);
    handle.shutdown().await.unwrap();
}

/// Every AdCP 3.2 payload kind (the project's fixtures, but A2A — deduped
/// on its fingerprint — and the challenges, answered not forwarded) through
/// one gateway on `store`: forwarded once with its identity headers, a
/// retry not forwarded, the same key with another payload `409`, and a
/// re-emission forwarded marked with the first key.
async fn every_kind_through_the_gateway(store: &str, namespace: &str) {
    use adcp_webhook::payload::PayloadKind;
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let handle = gateway(&seller, store, namespace, upstream.url()).await;
    let url = format!("{}{}", handle.base_url(), common::PATH);
    let sign = |body: &serde_json::Value| {
        let event = adcp_sign::WebhookEvent::from_json_bytes(body.to_string()).unwrap();
        let url = url.clone();
        let signer = &seller.signer;
        async move { signer.sign_webhook(&url, &event).await.unwrap() }
    };
    let mut forwarded = 0;
    for kind in PayloadKind::ALL {
        if matches!(
            kind,
            PayloadKind::A2aTask | PayloadKind::AccountChallenge | PayloadKind::AgentChallenge
        ) {
            continue;
        }
        let path = format!(
            "{}/../adcp-webhook/tests/fixtures/payloads/{}.json",
            env!("CARGO_MANIFEST_DIR"),
            kind.as_str()
        );
        let body: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let key = body["idempotency_key"].as_str().unwrap().to_owned();
        assert_eq!(send(&handle, &sign(&body).await, None).await, (200, None), "{kind:?}");
        forwarded += 1;
        assert_eq!(upstream.applied_keys().len(), forwarded, "{kind:?}");
        {
            let applied = upstream.seen.applied.lock().unwrap();
            let headers = &applied.last().unwrap().0;
            assert_eq!(headers["x-adcp-idempotency-key"], key.as_str());
            match body.get("notification_id").and_then(serde_json::Value::as_str) {
                Some(id) => assert_eq!(headers["x-adcp-notification-id"], id, "{kind:?}"),
                None => assert!(headers.get("x-adcp-notification-id").is_none(), "{kind:?}"),
            }
        }
        assert_eq!(
            send(&handle, &sign(&body).await, None).await,
            (200, None),
            "{kind:?} retry"
        );
        let mut changed = body.clone();
        changed["x_changed"] = serde_json::json!(1);
        assert_eq!(
            send(&handle, &sign(&changed).await, None).await.0,
            409,
            "{kind:?} conflict"
        );
        assert_eq!(upstream.applied_keys().len(), forwarded, "{kind:?} not forwarded again");
        if body.get("notification_id").is_some() && kind != PayloadKind::McpTask {
            let mut again = body.clone();
            again["idempotency_key"] = serde_json::json!(format!("reemitted-{}", kind.as_str()));
            assert_eq!(
                send(&handle, &sign(&again).await, None).await,
                (200, None),
                "{kind:?} re-emission"
            );
            forwarded += 1;
            let applied = upstream.seen.applied.lock().unwrap();
            assert_eq!(
                applied.last().unwrap().0["x-adcp-reemission-of"],
                key.as_str(),
                "{kind:?}"
            );
        }
    }
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_through_the_gateway_on_sqlite() {
    let dir = common::TempDir::new("kinds");
    every_kind_through_the_gateway(&dir.sqlite(), "adcp").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_through_the_gateway_on_redis() {
    let namespace = unique("kinds_redis");
    every_kind_through_the_gateway(&redis_url(), &namespace).await;
    let options = adcp_store::RedisOptions {
        key_prefix: namespace,
        ..adcp_store::RedisOptions::default()
    };
    let store = adcp_store::RedisStore::connect(&redis_url(), options).await.unwrap();
    store.delete_all().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_through_the_gateway_on_postgres() {
    let namespace = unique("kinds_pg");
    every_kind_through_the_gateway(&database_url(), &namespace).await;
    let options = adcp_store::PostgresOptions {
        schema: namespace,
        pool_size: 1,
        ..adcp_store::PostgresOptions::default()
    };
    let store = adcp_store::PostgresStore::connect(&database_url(), options)
        .await
        .unwrap();
    store.drop_schema().await.unwrap();
}
