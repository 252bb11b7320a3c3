//! A cached key costs no network I/O and about one hash lookup.
//!
//! A resolver is warmed once against a local HTTPS server (test CA, loopback
//! through the test-only SSRF exception); then, in one run:
//! - `hashmap_lookup`: a bare `HashMap<String, Arc<ResolvedKey>>` lookup
//!   and `Arc` clone (the floor);
//! - `resolve_typed_cached`: `HttpsKeyResolver::resolve_typed` of a cached
//!   kid (clock read, `RwLock` read, hash lookup, `Arc` clone);
//! - `resolve_cached`: the same through `KeyResolver::resolve` (what the
//!   verifier calls; `async_trait` boxes the future).
//!
//! Futures are polled once with a no-op waker: a cached resolution never
//! suspends (the bench fails if one does). Afterwards it checks that no
//! fetch was started and no request reached the server, and prints
//! interleaved median ratios against the bare lookup.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use adcp_jwks::HttpsKeyResolver;
use adcp_verify::{KeyResolver, ResolvedKey};
use criterion::{black_box, Criterion};
use std::collections::HashMap;
use std::future::Future;
use std::hint;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

const GROUP: &str = "key_discovery";

fn poll_once<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a cached resolution suspended (it would have done I/O)"),
    }
}

fn time(iters: u64, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (server, resolver, fixed) = rt.block_on(async {
        let s = common::Server::start(&["seller.example", "keys.example"]).await;
        let agent = s.url("seller.example", "/mcp");
        s.set(
            "/.well-known/brand.json",
            common::ok(
                serde_json::json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]})
                    .to_string(),
            ),
        );
        let keys: Vec<_> = (0..16).map(|i| common::key(&format!("k{i}"))).collect();
        s.set("/jwks.json", common::ok(common::jwks(keys)));
        let r = HttpsKeyResolver::builder(agent)
            .fetch_config(s.fetch_config())
            .jwks_ttl_secs(30 * 60)
            .build()
            .unwrap();
        assert!(r.resolve("k7").await.unwrap().is_some());
        // The same, with a constant injected clock: isolates what the
        // resolver adds besides reading the system clock.
        let fixed = HttpsKeyResolver::builder(s.url("seller.example", "/mcp"))
            .fetch_config(s.fetch_config())
            .clock(Arc::new(|| 1_776_520_800))
            .build()
            .unwrap();
        assert!(fixed.resolve("k7").await.unwrap().is_some());
        (s, r, fixed)
    });
    let fetches = resolver.fetch_count() + fixed.fetch_count();
    let requests = server.total_requests();

    // The floor: the same keys in a bare map.
    let mut bare: HashMap<String, Arc<ResolvedKey>> = HashMap::new();
    for i in 0..16 {
        let kid = format!("k{i}");
        let key = poll_once(resolver.resolve_typed(&kid)).unwrap().unwrap();
        bare.insert(kid, key);
    }
    let kid = String::from("k7");

    let lookup = || {
        black_box(bare.get(black_box(kid.as_str())).cloned());
    };
    let typed = || {
        black_box(poll_once(resolver.resolve_typed(black_box(kid.as_str()))).unwrap());
    };
    let typed_fixed_clock = || {
        black_box(poll_once(fixed.resolve_typed(black_box(kid.as_str()))).unwrap());
    };
    let via_trait = || {
        black_box(poll_once(KeyResolver::resolve(&resolver, black_box(kid.as_str()))).unwrap());
    };

    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let mut group = c.benchmark_group(GROUP);
    group.bench_function("hashmap_lookup", |b| b.iter(lookup));
    group.bench_function("resolve_typed_cached", |b| b.iter(typed));
    group.bench_function("resolve_cached", |b| b.iter(via_trait));
    group.bench_function("resolve_typed_cached_fixed_clock", |b| b.iter(typed_fixed_clock));
    group.finish();

    // Interleaved rounds, robust to load drift on a shared machine.
    let median_ratio = |f: &dyn Fn()| {
        let mut ratios: Vec<f64> = (0..41)
            .map(|_| {
                let a = time(20_000, f);
                let b = time(20_000, lookup);
                a.as_secs_f64() / b.as_secs_f64()
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios[20]
    };
    let per_call = |f: &dyn Fn()| time(200_000, f).as_nanos() as f64 / 200_000.0;
    // What the resolver adds besides the lookup: one clock read (the
    // snapshot's TTL) — the same `SystemTime` read the default clock does.
    let clock = || {
        black_box(std::time::SystemTime::now());
    };
    println!("{GROUP}: one SystemTime::now() {:.1} ns", per_call(&clock));
    println!(
        "{GROUP}: bare HashMap lookup {:.1} ns, resolve_typed {:.1} ns, KeyResolver::resolve {:.1} ns, resolve_typed with a constant clock {:.1} ns",
        per_call(&lookup),
        per_call(&typed),
        per_call(&via_trait),
        per_call(&typed_fixed_clock)
    );
    println!(
        "{GROUP}: interleaved median ratio vs bare lookup: resolve_typed {:.2}, KeyResolver::resolve {:.2}, resolve_typed with a constant clock {:.2}",
        median_ratio(&typed),
        median_ratio(&via_trait),
        median_ratio(&typed_fixed_clock)
    );
    hint::black_box(&server);
    assert_eq!(
        resolver.fetch_count() + fixed.fetch_count(),
        fetches,
        "a cached resolution started a fetch"
    );
    assert_eq!(
        server.total_requests(),
        requests,
        "a cached resolution reached the server"
    );
    println!("{GROUP}: network fetches during the benchmark: 0 (fetch_count and server requests unchanged)");
}
