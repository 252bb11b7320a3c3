//! A warm verifier accepts a webhook with a bounded, small number of heap
//! allocations (the hot path of every receiver; allocator traffic is a
//! measurable share of the non-crypto time).
//!
//! A binary of its own, not a module of `tests/it`: it installs
//! `CountingAllocator` as the `#[global_allocator]`, which is process-wide
//! (one per binary), so every test sharing the binary would run on it too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod support;

use adcp_test_support::{allocations_during, CountingAllocator};
use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use support::{message, run_now, Template};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The most allocations one warm webhook verification may make.
const BUDGET: usize = 20;

#[test]
fn a_warm_webhook_verification_stays_within_its_allocation_budget() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let t = Template::load(&suite, "webhook-signing/positive/001-basic-post.json");
    // Two requests with their own nonces: one to warm the verifier, one to count.
    let (warm, counted) = (t.sign([1; 16]), t.sign([2; 16]));
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&t.jwks(), "https://seller.example/agent"),
        MemoryReplayStore::webhook(),
        FixedClock(t.now),
    );
    run_now(verifier.verify(&message(&t.url, &warm, &t.body))).unwrap();

    let msg = message(&t.url, &counted, &t.body);
    let mut outcome = None;
    let count = allocations_during(|| outcome = Some(run_now(verifier.verify(&msg))));
    outcome.unwrap().unwrap();
    println!("allocations per warm verification: {count}");
    assert!(count <= BUDGET, "{count} allocations (budget {BUDGET})");
}
