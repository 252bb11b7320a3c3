//! Signature backends on a ~400-byte RFC 9421 signature base: P-256
//! verification through `aws-lc-rs` (this crate's `VerifyingKey`, parsed key
//! cached) side by side with RustCrypto `p256`, plus Ed25519 `verify_strict`
//! and HMAC-SHA256; P-256 signing through both backends.
//!
//! Criterion drives every measurement (`iter_custom`); the same timings are
//! also summed here so that the end of the run prints operations per second
//! and the aws-lc-rs / RustCrypto ratio.
//!
//! ```text
//! cargo bench -p adcp-sigbase --bench crypto_backends -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use adcp_sigbase::crypto::{Algorithm, SigningKey};
use criterion::{Bencher, Criterion, Throughput};

const P256_AWS_LC: &str = "p256 verify / aws-lc-rs (VerifyingKey, cached parse)";
const P256_AWS_LC_UNPARSED: &str = "p256 verify / aws-lc-rs UnparsedPublicKey (parse per call)";
const P256_RUSTCRYPTO: &str = "p256 verify / RustCrypto p256";
const ED25519: &str = "ed25519 verify_strict / ed25519-dalek";
const HMAC: &str = "hmac-sha256 verify / RustCrypto hmac";
const P256_SIGN_AWS_LC: &str = "p256 sign / aws-lc-rs";
const P256_SIGN_RUSTCRYPTO: &str = "p256 sign / RustCrypto p256";
const ED25519_SIGN: &str = "ed25519 sign / ed25519-dalek";

/// Total iterations and time per benchmark, accumulated across criterion's
/// warm-up and samples.
static TOTALS: Mutex<BTreeMap<&'static str, (u64, Duration)>> = Mutex::new(BTreeMap::new());

fn signature_base() -> Vec<u8> {
    let base = "\"@method\": POST\n\
\"@target-uri\": https://buyer.example.com/adcp/webhook/create_media_buy/agent_123/op_abc\n\
\"@authority\": buyer.example.com\n\
\"content-type\": application/json\n\
\"@signature-params\": (\"@method\" \"@target-uri\" \"@authority\" \"content-type\")\
;created=1776520800;expires=1776521100;nonce=\"KXYnfEfJ0PBRZXQyVXfVQA\";keyid=\"test-es256-webhook-2026\"\
;alg=\"ecdsa-p256-sha256\";tag=\"adcp/webhook-signing/v1\"";
    let base = base.as_bytes().to_vec();
    assert!((380..=420).contains(&base.len()), "base is {} bytes", base.len());
    base
}

/// Runs `f` `iters` times under criterion's control and records the time.
fn measure(b: &mut Bencher<'_>, name: &'static str, mut f: impl FnMut()) {
    b.iter_custom(|iters| {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        let mut totals = TOTALS.lock().unwrap();
        let entry = totals.entry(name).or_insert((0, Duration::ZERO));
        entry.0 += iters;
        entry.1 += elapsed;
        elapsed
    });
}

fn verify(c: &mut Criterion) {
    use p256::ecdsa::signature::Verifier as _;

    let base = signature_base();
    let mut group = c.benchmark_group("verify");
    group.throughput(Throughput::Elements(1));

    // P-256: one key, one signature, verified by both backends.
    let signer = SigningKey::generate_p256().unwrap();
    let sig = signer.sign(&base).unwrap().into_bytes();
    let vk = signer.verifying_key();
    let point = vk.public_key_bytes().unwrap().to_vec();
    let rc_vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&point).unwrap();
    let rc_sig = p256::ecdsa::Signature::from_slice(&sig).unwrap();
    vk.verify(Algorithm::EcdsaP256Sha256, &base, &sig).unwrap();
    rc_vk.verify(&base, &rc_sig).unwrap();

    group.bench_function(P256_AWS_LC, |b| {
        measure(b, P256_AWS_LC, || {
            vk.verify(Algorithm::EcdsaP256Sha256, black_box(&base), black_box(&sig))
                .unwrap();
        });
    });
    group.bench_function(P256_RUSTCRYPTO, |b| {
        measure(b, P256_RUSTCRYPTO, || {
            rc_vk.verify(black_box(&base), black_box(&rc_sig)).unwrap();
        });
    });
    group.bench_function(P256_AWS_LC_UNPARSED, |b| {
        use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
        measure(b, P256_AWS_LC_UNPARSED, || {
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, black_box(&point))
                .verify(black_box(&base), black_box(&sig))
                .unwrap();
        });
    });

    let ed = SigningKey::generate_ed25519().unwrap();
    let ed_sig = ed.sign(&base).unwrap().into_bytes();
    let ed_vk = ed.verifying_key();
    group.bench_function(ED25519, |b| {
        measure(b, ED25519, || {
            ed_vk
                .verify(Algorithm::Ed25519, black_box(&base), black_box(&ed_sig))
                .unwrap();
        });
    });

    let hmac = SigningKey::hmac_sha256(b"bench secret, 32 bytes or longer!").unwrap();
    let tag = hmac.sign(&base).unwrap().into_bytes();
    let hmac_vk = hmac.verifying_key();
    group.bench_function(HMAC, |b| {
        measure(b, HMAC, || {
            hmac_vk
                .verify(Algorithm::HmacSha256, black_box(&base), black_box(&tag))
                .unwrap();
        });
    });
    group.finish();
}

fn sign(c: &mut Criterion) {
    use p256::ecdsa::signature::Signer as _;

    let base = signature_base();
    let mut group = c.benchmark_group("sign");
    group.throughput(Throughput::Elements(1));

    let scalar = [0x42u8; 32];
    let ours = SigningKey::p256_from_scalar(&scalar).unwrap();
    let rc = p256::ecdsa::SigningKey::from_slice(&scalar).unwrap();
    group.bench_function(P256_SIGN_AWS_LC, |b| {
        measure(b, P256_SIGN_AWS_LC, || {
            black_box(ours.sign(black_box(&base)).unwrap());
        });
    });
    group.bench_function(P256_SIGN_RUSTCRYPTO, |b| {
        measure(b, P256_SIGN_RUSTCRYPTO, || {
            let sig: p256::ecdsa::Signature = rc.sign(black_box(&base));
            black_box(sig);
        });
    });
    let ed = SigningKey::ed25519_from_seed(&scalar).unwrap();
    group.bench_function(ED25519_SIGN, |b| {
        measure(b, ED25519_SIGN, || {
            black_box(ed.sign(black_box(&base)).unwrap());
        });
    });
    group.finish();
}

fn per_second(totals: &BTreeMap<&'static str, (u64, Duration)>, name: &str) -> Option<f64> {
    let (iters, time) = totals.get(name)?;
    (*iters > 0 && !time.is_zero()).then(|| *iters as f64 / time.as_secs_f64())
}

fn report() {
    let totals = TOTALS.lock().unwrap();
    println!(
        "\n=== crypto backends on a {}-byte signature base ===",
        signature_base().len()
    );
    for name in [
        P256_AWS_LC,
        P256_AWS_LC_UNPARSED,
        P256_RUSTCRYPTO,
        ED25519,
        HMAC,
        P256_SIGN_AWS_LC,
        P256_SIGN_RUSTCRYPTO,
        ED25519_SIGN,
    ] {
        if let Some(rate) = per_second(&totals, name) {
            println!("{name:<62} {rate:>12.0} ops/s  ({:>8.2} µs/op)", 1e6 / rate);
        }
    }
    let ratio = |fast: &str, slow: &str| Some(per_second(&totals, fast)? / per_second(&totals, slow)?);
    if let Some(r) = ratio(P256_AWS_LC, P256_RUSTCRYPTO) {
        println!("P-256 verify: aws-lc-rs / RustCrypto p256 = {r:.2}x");
    }
    if let Some(r) = ratio(P256_AWS_LC, P256_AWS_LC_UNPARSED) {
        println!("P-256 verify: cached parsed key / parse per call = {r:.2}x");
    }
    if let Some(r) = ratio(P256_SIGN_AWS_LC, P256_SIGN_RUSTCRYPTO) {
        println!("P-256 sign:   aws-lc-rs / RustCrypto p256 = {r:.2}x");
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    verify(&mut c);
    sign(&mut c);
    c.final_summary();
    report();
}
