//! The whole webhook checklist over arbitrary headers and body, with a
//! fixed Ed25519 key and clock: never panics, and an accepted request is
//! never accepted twice (the replay store sees it).
//!
//! Input layout: the target URI, then header lines `name: value`, each
//! ended by `\n` (values may hold any bytes but `\n`), then an empty line,
//! then the body.
#![no_main]
#![forbid(unsafe_code)]

use adcp_sigbase::Message;
use adcp_verify::FixedClock;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Profile;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Verifier;
use libfuzzer_sys::fuzz_target;
use std::future::Future;
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

/// The conformance suite's reference time (the seeds are its requests).
const NOW: i64 = 1_776_520_800;

/// The webhook-signing keys of the conformance suite when it is present
/// (`ADCP_VECTORS_DIR`, else `../shared/vectors/adcp` beside the checkout),
/// so seeds built from its vectors reach the cryptography and beyond;
/// otherwise the RFC 8032 test-1 key alone.
fn resolver() -> &'static StaticKeyResolver {
    static KEYS: OnceLock<StaticKeyResolver> = OnceLock::new();
    KEYS.get_or_init(|| {
        let suite = std::env::var_os("ADCP_VECTORS_DIR").map(std::path::PathBuf::from).unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors/adcp")
        });
        let jwks = std::fs::read(suite.join("webhook-signing/keys.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_else(|| {
                serde_json::json!({ "keys": [{
                    "kty": "OKP", "crv": "Ed25519", "kid": "fuzz-ed25519", "alg": "EdDSA",
                    "use": "sig", "key_ops": ["verify"], "adcp_use": "request-signing",
                    "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
                }]})
            });
        StaticKeyResolver::new().with_jwks(&jwks, "https://seller.example/mcp")
    })
}

fn run_now<F: Future>(f: F) -> Option<F::Output> {
    match pin!(f).as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[][..]),
    };
    // First line: the target URI as received; then the header lines.
    let mut lines = head.split(|&b| b == b'\n');
    let target = lines.next().and_then(|l| std::str::from_utf8(l).ok()).unwrap_or_default();
    let mut msg = Message::request("POST", target.to_owned());
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let Ok(name) = std::str::from_utf8(&line[..colon]) else { continue };
        let value = line[colon + 1..].strip_prefix(b" ").unwrap_or(&line[colon + 1..]);
        msg.push_header(name.to_owned(), value.to_vec());
    }
    let msg = msg.with_body(body);
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        resolver().clone(),
        MemoryReplayStore::webhook(),
        FixedClock(NOW),
    );
    let first = run_now(verifier.verify(&msg)).expect("in-memory verification never waits");
    if first.is_ok() {
        let second = run_now(verifier.verify(&msg)).expect("in-memory verification never waits");
        assert!(second.is_err(), "an accepted request was accepted twice");
    }
    // Batch verification agrees with the sequential outcome.
    let batch = run_now(Verifier::new(
        Profile::webhook_v1(),
        resolver().clone(),
        MemoryReplayStore::webhook(),
        FixedClock(NOW),
    )
    .verify_batch(std::slice::from_ref(&msg)))
    .expect("in-memory verification never waits");
    assert_eq!(batch[0].is_ok(), first.is_ok());
    if let (Err(a), Err(b)) = (&batch[0], &first) {
        assert_eq!(a.code(), b.code());
    }
});
