//! Acceptance: `webhooks/webhook-payload-extraction.json` and
//! `webhooks/webhook-receiver-envelope.json` pass in full (and, as a
//! bonus, `webhooks/a2a-response-extraction.json`, whose algorithm the
//! extraction page references). The suite is read through `adcp-vectors`;
//! with `CI=true` a missing suite fails instead of skipping.

use crate::common::*;
use adcp_sign::{Algorithm, Body, UnsignedRequest};
use adcp_strict_json::jcs;
use adcp_webhook::check_mcp_envelope;
use adcp_webhook::{a2a_state, detect_format, extract, ExtractError, PayloadFormat};
use adcp_webhook::{outcome, Receiver, ReceiverLayer, Webhook};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

fn format_of(name: &str) -> PayloadFormat {
    match name {
        "mcp" => PayloadFormat::Mcp,
        "a2a" => PayloadFormat::A2a,
        other => panic!("unknown format {other}"),
    }
}

#[test]
fn webhook_payload_extraction_vectors() {
    let Some(file) = suite_file("webhooks/webhook-payload-extraction.json") else {
        return;
    };
    let vectors = file["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 12);
    for v in vectors {
        let id = v["id"].as_str().unwrap();
        let payload = &v["payload"];
        let expected_format = format_of(v["expected_format"].as_str().unwrap());
        let expected = Some(&v["expected_data"]).filter(|d| !d.is_null());
        // The configured format (preferred) and auto-detection agree.
        assert_eq!(
            extract(payload, Some(format_of(v["format"].as_str().unwrap()))).unwrap(),
            expected,
            "{id} (known format)"
        );
        assert_eq!(detect_format(payload), Some(expected_format), "{id} detection");
        assert_eq!(extract(payload, None).unwrap(), expected, "{id} (detected)");
    }
}

#[test]
fn a2a_response_extraction_vectors() {
    let Some(file) = suite_file("webhooks/a2a-response-extraction.json") else {
        return;
    };
    let vectors = file["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 30, "{}", vectors.len());
    for v in vectors {
        let id = v["id"].as_str().unwrap();
        let response = &v["response"];
        let got = extract(response, Some(PayloadFormat::A2a));
        match v["expected_error_type"].as_str() {
            Some(code) => assert_eq!(got.map_err(ExtractError::code), Err(code), "{id}"),
            None => assert_eq!(got.unwrap(), Some(&v["expected_data"]).filter(|d| !d.is_null()), "{id}"),
        }
        match a2a_state(response) {
            Some(state) => assert_eq!(state, v["status"].as_str().unwrap(), "{id} state"),
            // Only an artifact-update event carries no task state.
            None => assert!(response.get("artifactUpdate").is_some(), "{id}"),
        }
    }
}

#[test]
fn webhook_receiver_envelope_vectors() {
    let Some(file) = suite_file("webhooks/webhook-receiver-envelope.json") else {
        return;
    };
    let positive = file["positive"].as_array().unwrap();
    let negative = file["negative"].as_array().unwrap();
    assert_eq!((positive.len(), negative.len()), (2, 3));
    for v in positive {
        let id = v["id"].as_str().unwrap();
        let info = check_mcp_envelope(&v["payload"]).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(info.idempotency_key, v["payload"]["idempotency_key"].as_str().unwrap());
        if let Some(first) = v["same_event_as"].as_str() {
            let original = positive.iter().find(|p| p["id"] == first).unwrap();
            // Same event: same key and the same canonical payload, so the
            // receiver dedupes instead of answering 409.
            assert_eq!(original["payload"]["idempotency_key"], v["payload"]["idempotency_key"]);
            assert_eq!(
                jcs::fingerprint(&original["payload"]),
                jcs::fingerprint(&v["payload"]),
                "{id}"
            );
        }
    }
    for v in negative {
        let id = v["id"].as_str().unwrap();
        let err = check_mcp_envelope(&v["payload"]).expect_err(id);
        assert_eq!(err.code(), v["expected_error"].as_str().unwrap(), "{id}");
    }
}

/// The same envelope vectors through a live receiver: every payload is
/// signed by our signer; positives are dispatched once (the retry is a 2xx
/// duplicate), negatives never reach the handler.
#[tokio::test]
async fn webhook_receiver_envelope_vectors_through_the_receiver() {
    let Some(file) = suite_file("webhooks/webhook-receiver-envelope.json") else {
        return;
    };
    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-envelope");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let e = Arc::clone(&effects);
    let app = Router::new().route(
        "/hook",
        post(move |w: Webhook| {
            let e = Arc::clone(&e);
            async move {
                e.apply(&w);
                "ok"
            }
        })
        .layer(ReceiverLayer::new(receiver.clone())),
    );
    let send = |payload: &Value| {
        let body = Body::from_json_bytes(serde_json::to_vec(payload).unwrap()).unwrap();
        let signer = &signer;
        let app = app.clone();
        async move {
            let signed = signer
                .sign(&UnsignedRequest::post("https://buyer.example/hook", &body))
                .await
                .unwrap();
            let response = app
                .oneshot(signed.to_http().unwrap().map(axum::body::Body::from))
                .await
                .unwrap();
            response.status().as_u16()
        }
    };
    for v in file["positive"].as_array().unwrap() {
        assert_eq!(send(&v["payload"]).await, 200, "{}", v["id"]);
    }
    for v in file["negative"].as_array().unwrap() {
        assert_eq!(send(&v["payload"]).await, 400, "{}", v["id"]);
        let code: &'static str = match v["expected_error"].as_str().unwrap() {
            "missing_envelope_fields" => "missing_envelope_fields",
            "missing_idempotency_key" => "missing_idempotency_key",
            "invalid_envelope_status" => "invalid_envelope_status",
            other => panic!("unexpected code {other}"),
        };
        assert_eq!(receiver.metrics().get(code), 1, "{}", v["id"]);
    }
    assert_eq!(effects.count(), 1, "the retry of the same event was not applied twice");
    assert_eq!(receiver.metrics().get(outcome::DUPLICATE), 1);
}
