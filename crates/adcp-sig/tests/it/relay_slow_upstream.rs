//! A relay attempt that gives up while our verifying gateway still waits on
//! a slow upstream: the relay's attempt timeout (1 s here, 10 s by
//! default) is shorter than the upstream's answer, which comes well inside
//! the gateway's claim lease (3 s here, 60 s by default).
//!
//! Expected: the upstream applies the event once. The relay's next attempt
//! finds the claim completed (`200`, not forwarded) or, while the first is
//! still under way, in progress (`503` with `Retry-After`).
//!
//! The bug this guards against: the gateway awaited its upstream forward
//! in the request's own future, so a sender hanging up dropped it between
//! the claim and `complete`/`release`. The claim was held until its lease
//! expired (every retry answered `503` in progress) and the next retry was
//! forwarded again: the upstream applied the event twice. The gateway now
//! forwards a claimed event and records the outcome in a task of its own
//! (`adcp-gateway/src/server.rs`, `webhook` and `deliver`).

use crate::relay_support::{enqueue, get_json, key, prefix, task_event, until, Base, Relay, RelaySpec};
use crate::support::gateway::{http_client, TempDir};
use adcp_gateway::{Gateway, GatewayOptions};
use adcp_store::{StoreOptions, StoreUrl};
use adcp_verify::StaticKeyResolver;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_attempt_timing_out_at_the_gateway_is_applied_once_upstream() {
    let dir = TempDir::new("relay-slow-upstream");
    let key = key(&dir.0, "relay-slow-1");
    // Applies every request; the first one answers only after 1.5 s.
    let applied = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&applied);
    let upstream = Router::new().route(
        "/events",
        post(move || {
            let counter = Arc::clone(&counter);
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                }
                StatusCode::OK
            }
        }),
    );
    let up = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_addr = up.local_addr().unwrap();
    let up_task = tokio::spawn(async move {
        let _ = axum::serve(up, upstream).await;
    });

    let store: StoreUrl = format!("sqlite:{}", dir.0.join("gateway.sqlite").display())
        .parse()
        .unwrap();
    let mut store_options = StoreOptions {
        namespace: "relay_slow".to_owned(),
        op_timeout: Duration::from_secs(2),
        ..StoreOptions::default()
    };
    store_options.idempotency.lease_secs = 3;
    let store = adcp_store::open(&store, store_options).await.unwrap();
    let mut options = GatewayOptions::new(format!("http://{up_addr}/events").parse().unwrap());
    options.upstream_timeout = Duration::from_secs(5);
    let gateway = Gateway::new(
        Arc::new(StaticKeyResolver::new().with_jwks(&key.jwks, "https://seller.example/mcp")),
        store,
        options,
    )
    .unwrap();
    let handle = gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap();

    let spec = RelaySpec::new(
        format!("sqlite:{}", dir.0.join("relay.sqlite").display()),
        &key,
        &prefix("slow"),
        &dir.0,
    )
    .arg("--attempt-timeout-seconds", 1);
    let mut relay = Relay::start(&spec).await;
    let client = http_client(Duration::from_secs(10)).unwrap();
    let request = task_event(
        &format!("{}/hooks/op_slow", handle.base_url()),
        "op_slow",
        "whk_relay_slow_upstream_0001",
    );
    let id = enqueue(&client, &Base::new(&relay.base), &request, Duration::from_secs(10)).await;
    let url = format!("{}/v1/events/{id}", relay.base);
    let delivered = until(Duration::from_secs(40), async || {
        get_json(&url).await["state"] == "delivered"
    })
    .await;
    let event = get_json(&url).await;
    assert_eq!(relay.terminate(Duration::from_secs(30)).await, Some(0));
    assert!(delivered, "not delivered: {event}");
    assert_eq!(
        applied.load(Ordering::SeqCst),
        1,
        "the upstream applied one event more than once ({} attempts: {event})",
        event["attempts"]
    );
    handle.shutdown().await.unwrap();
    up_task.abort();
}
