//! Verification throughput with two threads against one: a receiver shares
//! one `Verifier` (key cache and replay store) between its workers, so the
//! hot path must not serialize on a lock. Target: 2 threads ≥ 1.8× one
//! thread.
//!
//! A pool of requests is signed up front (each with its own nonce) and
//! split between the threads; every round uses a fresh verifier (built
//! outside the timing) so that every nonce is new. Rounds alternate 1 and
//! 2 threads; the figure is the median of the paired throughput ratios.
//! On a machine whose two vCPUs are hyperthreads of one core, or that runs
//! other jobs, the ceiling is lower than 2: `nproc` and the load are
//! printed with the result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench setup: failing loudly is the point

#[path = "../tests/support/mod.rs"]
mod support;

use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use std::time::{Duration, Instant};
use support::{message, run_now, Template};

const POOL: usize = 512;
const ROUNDS: usize = 15;

type Shared = Verifier<StaticKeyResolver, MemoryReplayStore, FixedClock>;

fn verifier(t: &Template) -> Shared {
    Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&t.jwks(), "https://seller.example/agent"),
        MemoryReplayStore::webhook(),
        FixedClock(t.now),
    )
}

/// Verifies the whole pool with `threads` workers sharing one verifier.
fn run(t: &Template, pool: &[Vec<(String, String)>], threads: usize) -> Duration {
    let shared = verifier(t);
    let chunk = pool.len().div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in pool.chunks(chunk) {
            let shared = &shared;
            s.spawn(move || {
                for headers in part {
                    let msg = message(&t.url, headers, &t.body);
                    assert!(run_now(shared.verify(&msg)).is_ok());
                }
            });
        }
    });
    start.elapsed()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(suite) = adcp_vectors::dir() else {
        eprintln!("conformance vectors not found; nothing to measure");
        return;
    };
    let t = Template::load(&suite, "webhook-signing/positive/001-basic-post.json");
    let pool: Vec<_> = (0..POOL)
        .map(|i| {
            let mut nonce = [0u8; 16];
            nonce[..8].copy_from_slice(&(i as u64).to_le_bytes());
            t.sign(nonce)
        })
        .collect();
    run(&t, &pool, 1); // warm-up
    let mut ratios: Vec<f64> = (0..ROUNDS)
        .map(|round| {
            let (one, two) = if round % 2 == 0 {
                let one = run(&t, &pool, 1);
                (one, run(&t, &pool, 2))
            } else {
                let two = run(&t, &pool, 2);
                (run(&t, &pool, 1), two)
            };
            one.as_secs_f64() / two.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "verification throughput, 2 threads / 1 thread: median {:.2}x over {ROUNDS} rounds of {POOL} requests (target >= 1.8; {} CPUs, load {})",
        ratios[ROUNDS / 2],
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace().next().unwrap_or("?")
    );
}
