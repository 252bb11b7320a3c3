//! A cached key is served without I/O and without allocating: the typed
//! call allocates nothing, the `KeyResolver` trait call only the one box
//! `async_trait` puts its future in. Counted with the counting allocator,
//! on one thread (futures polled once, in place, with a no-op waker).
//!
//! A binary of its own, not a module of `tests/it`: it installs
//! `CountingAllocator` as the `#[global_allocator]`, which is process-wide
//! (one per binary), so every test sharing the binary would run on it too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use adcp_jwks::HttpsKeyResolver;
use adcp_test_support::{allocations_during, CountingAllocator};
use adcp_verify::KeyResolver;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator;

fn poll_once<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a cached resolution suspended"),
    }
}

#[tokio::test]
async fn cached_resolution_allocates_nothing_and_fetches_nothing() {
    let s = common::Server::start(&["seller.example", "keys.example"]).await;
    let agent = s.url("seller.example", "/mcp");
    s.set(
        "/.well-known/brand.json",
        common::ok(
            serde_json::json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    s.set("/jwks.json", common::ok(common::jwks(vec![common::key("k1")])));
    let r = HttpsKeyResolver::builder(agent)
        .fetch_config(s.fetch_config())
        .build()
        .unwrap();
    assert!(r.resolve("k1").await.unwrap().is_some());
    let (fetches, requests) = (r.fetch_count(), s.total_requests());

    let typed = allocations_during(|| {
        for _ in 0..100 {
            assert!(poll_once(r.resolve_typed("k1")).unwrap().is_some());
        }
    });
    assert_eq!(typed, 0, "resolve_typed of a cached kid allocated");
    let via_trait = allocations_during(|| {
        for _ in 0..100 {
            assert!(poll_once(KeyResolver::resolve(&r, "k1")).unwrap().is_some());
        }
    });
    assert_eq!(via_trait, 100, "one async_trait box per call, nothing else");
    assert_eq!(r.fetch_count(), fetches);
    assert_eq!(s.total_requests(), requests);
}
