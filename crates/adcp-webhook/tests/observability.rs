//! Observability: the `webhook.receive` span carries keyid, sender,
//! idempotency key and outcome; nothing logged contains the body; every
//! rejection code is counted.
//!
//! A binary of its own, not a module of `tests/it`: it captures `tracing`
//! spans and events under a thread-local subscriber, and `tracing` caches
//! per-callsite interest process-wide, so the `tests/it` tests driving the
//! same receiver callsites without a subscriber in parallel could make it
//! miss them. It shares the fixtures of `tests/it/common`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "it/common/mod.rs"]
mod common;

use adcp_sign::Algorithm;
use adcp_webhook::{outcome, Receiver};
use adcp_webhook::{McpWebhook, TaskStatus};
use bytes::Bytes;
use common::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span's name and its recorded fields.
type SpanRecord = (String, HashMap<String, String>);

#[derive(Default)]
struct Captured {
    spans: Mutex<HashMap<u64, SpanRecord>>,
    lines: Mutex<Vec<String>>,
    next: AtomicU64,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

struct Capture(Arc<Captured>);

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0
            .spans
            .lock()
            .unwrap()
            .insert(id, (attrs.metadata().name().to_owned(), fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((_, fields)) = self.0.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lines.lock().unwrap().push(format!("{fields:?}"));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn spans_carry_the_event_identity_and_logs_never_the_body() {
    let captured = Arc::new(Captured::default());
    let _guard = tracing::subscriber::set_default(Capture(Arc::clone(&captured)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-obs");
        let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
            .build()
            .unwrap();
        const SECRET: &str = "body-secret-7f3a9c";
        let event = McpWebhook::new(
            "task_obs",
            "create_media_buy",
            TaskStatus::Completed,
            "2026-04-18T12:00:00Z",
        )
        .result(serde_json::json!({"note": SECRET}))
        .into_event()
        .unwrap();
        let signed = signer.sign_webhook("https://buyer.example/hook", &event).await.unwrap();
        let request = signed.to_http().unwrap().map(Bytes::from);
        let ok = receiver
            .handle(request.clone(), |_| async { Ok::<(), String>(()) })
            .await;
        assert_eq!(ok.status(), 200);
        // Replayed as captured: 401 with its code.
        let replayed = receiver.handle(request, |_| async { Ok::<(), String>(()) }).await;
        assert_eq!(replayed.status(), 401);
        // A tampered copy of a fresh signature: digest mismatch.
        let fresh = signer.sign_webhook("https://buyer.example/hook", &event).await.unwrap();
        let tampered = fresh
            .to_http()
            .unwrap()
            .map(|b| Bytes::from(String::from_utf8(b).unwrap().replace(SECRET, "body-secret-000000")));
        assert_eq!(
            receiver
                .handle(tampered, |_| async { Ok::<(), String>(()) })
                .await
                .status(),
            401
        );

        let spans = captured.spans.lock().unwrap();
        let receives: Vec<&HashMap<String, String>> = spans
            .values()
            .filter(|(name, _)| name == "webhook.receive")
            .map(|(_, f)| f)
            .collect();
        assert_eq!(receives.len(), 3);
        let accepted = receives
            .iter()
            .find(|f| f.get("outcome").map(String::as_str) == Some(outcome::ACCEPTED))
            .unwrap_or_else(|| panic!("no accepted span: {receives:?}"));
        assert_eq!(accepted["keyid"], "seller-obs");
        assert_eq!(accepted["sender"], AGENT_URL);
        assert_eq!(accepted["idempotency_key"], event.idempotency_key().as_str());
        let outcomes: Vec<&str> = receives
            .iter()
            .filter_map(|f| f.get("outcome").map(String::as_str))
            .collect();
        assert!(outcomes.contains(&"webhook_signature_replayed"), "{outcomes:?}");
        assert!(outcomes.contains(&"webhook_signature_digest_mismatch"), "{outcomes:?}");

        let everything = format!("{:?}{:?}", *spans, captured.lines.lock().unwrap());
        assert!(!everything.contains(SECRET), "a body reached the logs");
        assert!(!everything.contains("body-secret-000000"), "a body reached the logs");

        let m = receiver.metrics();
        assert_eq!(m.get("webhook_signature_replayed"), 1);
        assert_eq!(m.get("webhook_signature_digest_mismatch"), 1);
        assert_eq!(m.get(outcome::ACCEPTED), 1);
    });
}
