//! Composition with fallback authenticators, through the layer: fallback
//! valid/absent × required/warn/supported/unlisted × unsigned, malformed
//! pair, failed signature, verified signature; and the webhook-registration
//! rule.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{received, send, tools_call, Answer, Buyer, NOW};
use adcp_request::RequestVerifier;
use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
use adcp_verify::{DigestCoverage, FixedClock, MemoryReplayStore};
use serde_json::json;
use std::sync::Arc;

const BEARER: &str = "Bearer good";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Unsigned,
    Malformed,
    Failed,
    Verified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Required,
    Warn,
    Supported,
    Unlisted,
}

fn verifier(buyer: &Buyer) -> RequestVerifier {
    let capability = VerifierCapability::builder(DigestCoverage::Required)
        .required_for(["create_media_buy"])
        .warn_for(["update_media_buy"])
        .supported_for(["sync_creatives"])
        .build()
        .unwrap();
    RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .clock(Arc::new(FixedClock(NOW)))
    .authenticator_fn(|parts, _| match parts.headers.get(http::header::AUTHORIZATION) {
        Some(v) if v == BEARER => FallbackCredential::Valid,
        _ => FallbackCredential::Absent,
    })
    .build()
    .unwrap()
}

fn operation(mode: Mode) -> &'static str {
    match mode {
        Mode::Required => "create_media_buy",
        Mode::Warn => "update_media_buy",
        Mode::Supported => "sync_creatives",
        Mode::Unlisted => "get_products",
    }
}

/// The spec's composition rules, stated independently of the gate's code.
enum Want {
    Accept {
        source: &'static str,
        signer: bool,
        warning: bool,
    },
    Reject(&'static str),
    Unauthenticated,
}

fn want(mode: Mode, shape: Shape, fallback: bool) -> Want {
    use Want::*;
    match (shape, mode, fallback) {
        (Shape::Verified, _, _) => Accept {
            source: "signature",
            signer: true,
            warning: false,
        },
        (Shape::Malformed, _, _) => Reject("request_signature_header_malformed"),
        (Shape::Failed, Mode::Warn, true) => Accept {
            source: "fallback",
            signer: false,
            warning: true,
        },
        (Shape::Failed, Mode::Warn, false) => Unauthenticated,
        (Shape::Failed, _, _) => Reject("request_signature_invalid"),
        (Shape::Unsigned, Mode::Required, false) => Reject("request_signature_required"),
        (Shape::Unsigned, Mode::Warn, false) => Unauthenticated,
        (Shape::Unsigned, Mode::Warn, true) => Accept {
            source: "fallback",
            signer: false,
            warning: true,
        },
        (Shape::Unsigned, _, true) => Accept {
            source: "fallback",
            signer: false,
            warning: false,
        },
        (Shape::Unsigned, _, false) => Accept {
            source: "anonymous",
            signer: false,
            warning: false,
        },
    }
}

async fn request(buyer: &Buyer, mode: Mode, shape: Shape, fallback: bool) -> Answer {
    let body = tools_call(
        operation(mode),
        json!({"idempotency_key": format!("{mode:?}-{shape:?}-{fallback}")}),
    );
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let mut request = received(&signed);
    let headers = request.headers_mut();
    match shape {
        Shape::Unsigned => {
            headers.remove("signature");
            headers.remove("signature-input");
        }
        Shape::Malformed => {
            headers.remove("signature-input");
        }
        Shape::Failed => {
            // Well formed, wrong bytes.
            let value = flip(headers["signature"].to_str().unwrap());
            headers.insert("signature", value.parse().unwrap());
        }
        Shape::Verified => {}
    }
    if fallback {
        headers.insert(http::header::AUTHORIZATION, BEARER.parse().unwrap());
    }
    send(&verifier(buyer), request).await
}

/// The same `sig1=:…:` value with the first decoded byte flipped.
fn flip(value: &str) -> String {
    use adcp_sigbase::encoding::BinaryEncoding;
    let inner = value.strip_prefix("sig1=:").and_then(|v| v.strip_suffix(':')).unwrap();
    let mut bytes = BinaryEncoding::Base64Padded.decode(inner).unwrap();
    bytes[0] ^= 0x80;
    format!("sig1=:{}:", BinaryEncoding::Base64Padded.encode(&bytes))
}

#[tokio::test]
async fn fallback_composition_matrix() {
    let buyer = Buyer::new();
    let mut cases = 0;
    for mode in [Mode::Required, Mode::Warn, Mode::Supported, Mode::Unlisted] {
        for shape in [Shape::Unsigned, Shape::Malformed, Shape::Failed, Shape::Verified] {
            for fallback in [false, true] {
                let context = format!("{mode:?} {shape:?} fallback={fallback}");
                let answer = request(&buyer, mode, shape, fallback).await;
                match want(mode, shape, fallback) {
                    Want::Accept {
                        source,
                        signer,
                        warning,
                    } => {
                        assert!(answer.reached_handler(), "{context}: {answer:?}");
                        assert_eq!(answer.json["source"], source, "{context}");
                        assert_eq!(answer.json["keyid"].is_string(), signer, "{context}");
                        assert_eq!(answer.json["verified_at"].as_i64(), signer.then_some(NOW), "{context}");
                        assert_eq!(answer.json["warning"].is_string(), warning, "{context}");
                        assert_eq!(answer.json["operation"], operation(mode), "{context}");
                    }
                    Want::Reject(code) => answer.assert_rejected_with(code, &context),
                    Want::Unauthenticated => answer.assert_unauthenticated(&context),
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 32);
}

/// A webhook registration carrying `authentication` must arrive signed,
/// even from a caller with a valid bearer token, on an operation that
/// requires nothing; signed, it is accepted.
#[tokio::test]
async fn webhook_registration_with_authentication_must_be_signed() {
    let buyer = Buyer::new();
    let arguments = json!({
        "idempotency_key": "reg-1",
        "push_notification_config": {
            "url": "https://buyer.example/hooks",
            "authentication": {"schemes": ["Bearer"], "credentials": "a-shared-secret-of-at-least-32-characters"}
        }
    });
    let body = tools_call("get_products", arguments);
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;

    let mut unsigned = received(&signed);
    unsigned.headers_mut().remove("signature");
    unsigned.headers_mut().remove("signature-input");
    unsigned
        .headers_mut()
        .insert(http::header::AUTHORIZATION, BEARER.parse().unwrap());
    send(&verifier(&buyer), unsigned)
        .await
        .assert_rejected_with("request_signature_required", "unsigned registration with bearer");

    let answer = send(&verifier(&buyer), received(&signed)).await;
    assert!(answer.reached_handler(), "{answer:?}");
    assert_eq!(answer.json["source"], "signature");
}

/// A client-sent header cannot make the handler see a verified signer.
#[tokio::test]
async fn headers_cannot_impersonate_a_signer() {
    let buyer = Buyer::new();
    let body = tools_call("get_products", json!({}));
    let signed = buyer.sign("https://seller.example.com/mcp", &body).await;
    let mut request = received(&signed);
    let headers = request.headers_mut();
    headers.remove("signature");
    headers.remove("signature-input");
    for (name, value) in [
        ("x-adcp-verified-agent", "https://buyer.example/"),
        ("x-verified-signer", "buyer-test-2026"),
        ("x-adcp-auth-source", "signature"),
    ] {
        headers.insert(name, value.parse().unwrap());
    }
    let answer = send(&verifier(&buyer), request).await;
    assert!(answer.reached_handler());
    assert_eq!(answer.json["source"], "anonymous");
    assert!(answer.json["keyid"].is_null());
}
