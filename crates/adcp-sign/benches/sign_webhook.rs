//! Signing a 1 KiB webhook against its floor: one bare Ed25519 signature of
//! the same signature base plus one SHA-256 of the body. Target: at most
//! 1.15× the floor, measured in the same run.
//!
//! Criterion drives every measurement (`iter_custom`). Besides the two
//! separate benchmarks, `interleaved` alternates batches of 32 floor
//! operations and 32 signatures (which side goes first alternates too), so load on a shared machine affects both
//! sides of a pair alike; the ratio printed at the end is the median over
//! all batch pairs (the totals' ratio and the separate benchmarks' ratio
//! are printed too). ES256, the end-to-end path (event built and signed)
//! and the legacy HMAC scheme are reported for information.
//!
//! ```text
//! cargo bench -p adcp-sign --bench sign_webhook -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use adcp_sigbase::crypto::SigningKey;
use adcp_sign::{Body, HttpSigner, LegacyHmacSigner, SoftwareSigner, WebhookEvent};
use criterion::{Bencher, Criterion};
use sha2::Digest as _;

const URL: &str = "https://buyer.example.com/adcp/webhook/create_media_buy/agent_123/op_abc";

static TOTALS: Mutex<BTreeMap<&'static str, (u64, Duration)>> = Mutex::new(BTreeMap::new());

/// The signer / floor ratio of each interleaved batch pair.
static RATIOS: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// Iterations per batch in the interleaved measurement: short enough that
/// a burst of load on the machine rarely spans a floor batch and the
/// signer batch after it, long enough to dwarf the clock reads.
const BATCH: u64 = 32;

fn record(name: &'static str, iters: u64, elapsed: Duration) {
    let mut totals = TOTALS.lock().unwrap();
    let entry = totals.entry(name).or_insert((0, Duration::ZERO));
    entry.0 += iters;
    entry.1 += elapsed;
}

fn measure(b: &mut Bencher<'_>, name: &'static str, mut f: impl FnMut()) {
    b.iter_custom(|iters| {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        record(name, iters, elapsed);
        elapsed
    });
}

/// Polls a future that completes without waiting (the software signer
/// never does), so no executor cost is measured.
fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the software signer does not wait"),
    }
}

/// A realistic webhook payload of exactly 1,024 bytes once the
/// idempotency key is inserted.
fn payload(target: usize) -> serde_json::Value {
    let mut payload = serde_json::json!({
        "task_id": "task_456",
        "operation_id": "op_abc",
        "status": "completed",
        "timestamp": "2026-04-18T10:00:00Z",
        "result": {"media_buy_id": "mb_001", "packages": [{"package_id": "pkg_1", "status": "active"}]},
        "message": "",
    });
    let key_len = r#""idempotency_key":"00000000-0000-4000-8000-000000000000","#.len();
    let len = serde_json::to_string(&payload).unwrap().len() + key_len;
    payload["message"] = "x".repeat(target - len).into();
    payload
}

struct Setup {
    event: WebhookEvent,
    base: Vec<u8>,
    ed25519: HttpSigner<SoftwareSigner>,
    ed25519_key: SigningKey,
    es256: HttpSigner<SoftwareSigner>,
    es256_key: SigningKey,
    es256_base: Vec<u8>,
    hmac: LegacyHmacSigner,
}

fn setup() -> Setup {
    let event = WebhookEvent::new(&payload(1024)).unwrap();
    assert_eq!(event.body().len(), 1024);
    let ed25519_key = SigningKey::generate_ed25519().unwrap();
    let ed25519 = HttpSigner::webhook(SoftwareSigner::new(ed25519_key.clone(), "bench-ed25519").unwrap()).unwrap();
    let es256_key = SigningKey::generate_p256().unwrap();
    let es256 = HttpSigner::webhook(SoftwareSigner::new(es256_key.clone(), "bench-es256").unwrap()).unwrap();
    let base = now(ed25519.sign_webhook(URL, &event))
        .unwrap()
        .signature_base()
        .to_vec();
    let es256_base = now(es256.sign_webhook(URL, &event)).unwrap().signature_base().to_vec();
    let hmac = LegacyHmacSigner::new(b"bench secret, 32 bytes or longer!!").unwrap();
    Setup {
        event,
        base,
        ed25519,
        ed25519_key,
        es256,
        es256_key,
        es256_base,
        hmac,
    }
}

fn floor(key: &SigningKey, base: &[u8], body: &Body) {
    black_box(sha2::Sha256::digest(black_box(body.as_bytes())));
    black_box(key.sign(black_box(base)).unwrap());
}

fn bench(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("sign_1KiB_webhook");
    group.bench_function("floor: ed25519 sign(base) + sha256(body)", |b| {
        measure(b, "floor", || floor(&s.ed25519_key, &s.base, s.event.body()));
    });
    group.bench_function("HttpSigner::sign_webhook ed25519", |b| {
        measure(b, "sign", || {
            black_box(now(s.ed25519.sign_webhook(black_box(URL), black_box(&s.event))).unwrap());
        });
    });
    group.bench_function("interleaved floor / sign_webhook", |b| {
        let run_floor = |n: u64| {
            let start = Instant::now();
            for _ in 0..n {
                floor(&s.ed25519_key, &s.base, s.event.body());
            }
            start.elapsed()
        };
        let run_sign = |n: u64| {
            let start = Instant::now();
            for _ in 0..n {
                black_box(now(s.ed25519.sign_webhook(black_box(URL), black_box(&s.event))).unwrap());
            }
            start.elapsed()
        };
        let mut pair = 0_u64;
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let n = BATCH.min(iters - done);
                // Alternate which side runs first, so that whatever the
                // second batch inherits (caches, branch history, a burst of
                // load) falls on both sides equally.
                pair += 1;
                let (f, g) = if pair % 2 == 0 {
                    let f = run_floor(n);
                    (f, run_sign(n))
                } else {
                    let g = run_sign(n);
                    (run_floor(n), g)
                };
                record("interleaved floor", n, f);
                record("interleaved sign", n, g);
                RATIOS.lock().unwrap().push(g.as_secs_f64() / f.as_secs_f64());
                total += f + g;
                done += n;
            }
            total
        });
    });
    group.bench_function("WebhookEvent::new + sign_webhook ed25519 (end to end)", |b| {
        let payload = payload(1024);
        measure(b, "end to end", || {
            let event = WebhookEvent::new(black_box(&payload)).unwrap();
            black_box(now(s.ed25519.sign_webhook(URL, &event)).unwrap());
        });
    });
    group.bench_function("floor: p256 sign(base) + sha256(body)", |b| {
        measure(b, "es256 floor", || floor(&s.es256_key, &s.es256_base, s.event.body()));
    });
    group.bench_function("HttpSigner::sign_webhook es256", |b| {
        measure(b, "es256 sign", || {
            black_box(now(s.es256.sign_webhook(black_box(URL), black_box(&s.event))).unwrap());
        });
    });
    group.bench_function("LegacyHmacSigner::sign_event", |b| {
        measure(b, "hmac", || {
            black_box(s.hmac.sign_event(black_box(&s.event)).unwrap());
        });
    });
    group.finish();
}

fn mean(totals: &BTreeMap<&'static str, (u64, Duration)>, name: &str) -> Option<f64> {
    let (iters, time) = totals.get(name)?;
    (*iters > 0).then(|| time.as_nanos() as f64 / *iters as f64)
}

fn main() {
    let setup = setup();
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &setup);
    c.final_summary();

    let totals = TOTALS.lock().unwrap();
    let mut ratios = RATIOS.lock().unwrap().clone();
    ratios.sort_by(f64::total_cmp);
    println!();
    if let (Some(median), Some(f), Some(s)) = (
        ratios.get(ratios.len() / 2),
        mean(&totals, "interleaved floor"),
        mean(&totals, "interleaved sign"),
    ) {
        println!(
            "sign_webhook / (ed25519 sign + sha256), interleaved: median of {} batch pairs {median:.3} \
             (totals {:.3}: {s:.0} ns vs {f:.0} ns); target <= 1.15",
            ratios.len(),
            s / f
        );
    }
    if let (Some(f), Some(s)) = (mean(&totals, "floor"), mean(&totals, "sign")) {
        println!(
            "sign_webhook / (ed25519 sign + sha256), separate runs: {:.3} ({s:.0} ns vs {f:.0} ns)",
            s / f
        );
    }
    if let (Some(f), Some(s)) = (mean(&totals, "floor"), mean(&totals, "end to end")) {
        println!("WebhookEvent::new + sign_webhook / floor: {:.3} ({s:.0} ns)", s / f);
    }
    if let (Some(f), Some(s)) = (mean(&totals, "es256 floor"), mean(&totals, "es256 sign")) {
        println!(
            "es256 sign_webhook / (p256 sign + sha256): {:.3} ({s:.0} ns vs {f:.0} ns)",
            s / f
        );
    }
    if let Some(h) = mean(&totals, "hmac") {
        println!("legacy HMAC sign_event: {h:.0} ns");
    }
}
