//! Building a legacy HMAC signer logs one deprecation warning. A test
//! binary of its own: `tracing` caches per-callsite interest process-wide,
//! and a parallel test hitting the callsite with no subscriber installed
//! could make this one miss the event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use adcp_sign::{Body, LegacyHmacSigner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counts WARN events whose target is the legacy HMAC module.
struct WarnCounter(Arc<AtomicUsize>);

impl tracing::Subscriber for WarnCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let meta = event.metadata();
        if *meta.level() == tracing::Level::WARN && meta.target() == "adcp_sign::legacy_hmac" {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn building_a_legacy_signer_logs_a_deprecation_warning() {
    let count = Arc::new(AtomicUsize::new(0));
    tracing::subscriber::with_default(WarnCounter(Arc::clone(&count)), || {
        let signer = LegacyHmacSigner::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let body = Body::from_json_bytes("{}").unwrap();
        signer.sign_at(&body, 0).unwrap();
        assert!(LegacyHmacSigner::new(b"short").is_err());
    });
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "one warning per signer built, none for a refused secret"
    );
}
