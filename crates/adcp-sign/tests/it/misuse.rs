//! Misuse is a typed error with a stable code, never a panic, and nothing
//! is signed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use adcp_sign::{
    Algorithm, Body, FixedClock, HttpSigner, IdempotencyKey, LegacyDigest, Nonce, SignError, SignOptions, Signer,
    SignerError, SigningProfile, SoftwareSigner, UnsignedRequest, WebhookEvent,
};

use crate::common::block_on;

fn ed25519() -> SoftwareSigner {
    SoftwareSigner::generate(Algorithm::Ed25519, "k1").unwrap()
}

fn body() -> Body {
    Body::from_json_bytes(r#"{"status":"completed"}"#).unwrap()
}

const URL: &str = "https://buyer.example.com/hook";

fn sign_err(
    signer: &HttpSigner<SoftwareSigner, FixedClock>,
    request: &UnsignedRequest<'_>,
    options: &SignOptions,
) -> SignError {
    block_on(signer.sign_with(request, options)).unwrap_err()
}

#[test]
fn a_validity_window_over_300_seconds_is_refused() {
    let signer = HttpSigner::webhook(ed25519()).unwrap().with_clock(FixedClock(1_000));
    let body = body();
    let request = UnsignedRequest::post(URL, &body);
    let err = sign_err(
        &signer,
        &request,
        &SignOptions::new().with_created(1_000).with_expires(1_301),
    );
    assert_eq!(err.code(), "validity_too_long");
    assert_eq!(
        err.to_string(),
        "validity_too_long: expires - created is 301 s, at most 300 s allowed"
    );
    // Exactly 300 is fine; only `expires` fixed counts from the clock.
    assert!(block_on(signer.sign_with(&request, &SignOptions::new().with_expires(1_300))).is_ok());
    assert_eq!(
        sign_err(&signer, &request, &SignOptions::new().with_expires(1_301)).code(),
        "validity_too_long"
    );
    assert_eq!(
        sign_err(
            &signer,
            &request,
            &SignOptions::new().with_created(1_000).with_expires(1_000)
        )
        .code(),
        "validity_invalid"
    );
    assert_eq!(
        sign_err(&signer, &request, &SignOptions::new().with_created(-5).with_expires(10)).code(),
        "validity_invalid"
    );
    // Overflow near i64::MAX saturates into a refusal, not a panic.
    assert_eq!(
        sign_err(&signer, &request, &SignOptions::new().with_created(i64::MAX)).code(),
        "validity_invalid"
    );

    let err = HttpSigner::webhook(ed25519()).unwrap().with_validity(301).unwrap_err();
    assert_eq!(err.code(), "validity_too_long");
    let err = HttpSigner::webhook(ed25519()).unwrap().with_validity(0).unwrap_err();
    assert_eq!(err.code(), "validity_invalid");
    let short = HttpSigner::webhook(ed25519())
        .unwrap()
        .with_validity(60)
        .unwrap()
        .with_clock(FixedClock(1_000));
    let signed = block_on(short.sign(&request)).unwrap();
    assert_eq!((signed.created(), signed.expires()), (1_000, 1_060));
}

#[test]
fn a_key_whose_algorithm_does_not_match_is_refused() {
    let err = ed25519().require_algorithm(Algorithm::EcdsaP256Sha256).unwrap_err();
    assert_eq!(err.code(), "key_algorithm_mismatch");
    assert_eq!(
        err.to_string(),
        "key_algorithm_mismatch: ecdsa-p256-sha256 requested, the key is ed25519"
    );
    assert!(ed25519().require_algorithm(Algorithm::Ed25519).is_ok());

    // A JWK whose alg contradicts its kty/crv.
    let es256 = SoftwareSigner::generate(Algorithm::EcdsaP256Sha256, "k2").unwrap();
    let mut jwk = es256.private_jwk().unwrap().to_json();
    jwk["alg"] = "EdDSA".into();
    let err = SoftwareSigner::from_jwk_json(&serde_json::to_vec(&jwk).unwrap()).unwrap_err();
    assert_eq!(err.code(), "key_algorithm_mismatch");

    // Raw bytes are read as the algorithm says; HMAC is not an AdCP algorithm.
    assert_eq!(
        SoftwareSigner::from_raw(Algorithm::HmacSha256, &[1; 32], "k")
            .unwrap_err()
            .code(),
        "alg_not_allowed"
    );
    assert_eq!(
        SoftwareSigner::generate(Algorithm::HmacSha256, "k").unwrap_err().code(),
        "alg_not_allowed"
    );
    let hmac = adcp_sigbase::crypto::SigningKey::hmac_sha256(b"0123456789abcdef0123456789abcdef").unwrap();
    assert_eq!(SoftwareSigner::new(hmac, "k").unwrap_err().code(), "alg_not_allowed");
}

#[test]
fn a_public_only_jwk_cannot_sign() {
    let public = ed25519().public_jwk().unwrap().to_public_json();
    let err = SoftwareSigner::from_jwk_json(&serde_json::to_vec(&public).unwrap()).unwrap_err();
    assert_eq!(err.code(), "private_key_missing");
    let jwks = ed25519().jwks().unwrap().to_public_json();
    let jwk = adcp_sigbase::jwk::Jwks::from_json_value(&jwks).unwrap();
    assert_eq!(
        SoftwareSigner::from_jwk(jwk.key("k1").unwrap()).unwrap_err().code(),
        "private_key_missing"
    );
}

#[test]
fn a_short_hmac_secret_is_refused() {
    let err = adcp_sign::LegacyHmacSigner::new(&[0x5a; 16]).unwrap_err();
    assert_eq!(err.code(), "hmac_secret_too_short");
    assert!(matches!(
        err,
        SignError::HmacSecretTooShort {
            minimum: 32,
            actual: 16
        }
    ));
    assert_eq!(
        adcp_sign::LegacyHmacSigner::new(&[]).unwrap_err().code(),
        "hmac_secret_too_short"
    );
    assert_eq!(
        adcp_sign::LegacyHmacSigner::new(&[0; 64]).unwrap_err().code(),
        "hmac_secret_weak"
    );
}

#[test]
fn jwk_files_are_checked() {
    let signer = ed25519();
    let mut jwk = signer.private_jwk().unwrap().to_json();
    // No kid.
    jwk.as_object_mut().unwrap().remove("kid");
    assert_eq!(
        SoftwareSigner::from_jwk_json(&serde_json::to_vec(&jwk).unwrap())
            .unwrap_err()
            .code(),
        "key_id_missing"
    );
    // A key published for another purpose.
    let mut jwk = signer.private_jwk().unwrap().to_json();
    jwk["adcp_use"] = "governance-signing".into();
    assert_eq!(
        SoftwareSigner::from_jwk_json(&serde_json::to_vec(&jwk).unwrap())
            .unwrap_err()
            .code(),
        "key_purpose_invalid"
    );
    // Duplicate members in the key file itself.
    let text = serde_json::to_string(&signer.private_jwk().unwrap().to_json()).unwrap();
    let doubled = format!("{{\"kid\":\"other\",{}", &text[1..]);
    assert!(doubled.contains("\"kid\":\"k1\""));
    assert_eq!(
        SoftwareSigner::from_jwk_json(doubled.as_bytes()).unwrap_err().code(),
        "key_invalid"
    );
    assert_eq!(
        SoftwareSigner::from_jwk_json(b"not json").unwrap_err().code(),
        "key_invalid"
    );
    // A keyid that cannot be an RFC 8941 string.
    assert_eq!(
        SoftwareSigner::generate(Algorithm::Ed25519, "k\u{e9}")
            .unwrap_err()
            .code(),
        "key_id_invalid"
    );
    assert_eq!(
        SoftwareSigner::generate(Algorithm::Ed25519, "").unwrap_err().code(),
        "key_id_invalid"
    );
    assert_eq!(
        SoftwareSigner::generate(Algorithm::Ed25519, "a\nb").unwrap_err().code(),
        "key_id_invalid"
    );
}

#[test]
fn request_shape_errors() {
    let signer = HttpSigner::webhook(ed25519()).unwrap().with_clock(FixedClock(1_000));
    let body = body();
    let none = SignOptions::new();
    // Webhooks carry a body.
    assert_eq!(
        sign_err(&signer, &UnsignedRequest::new("POST", URL), &none).code(),
        "body_required"
    );
    // Methods are case-sensitive tokens.
    for method in ["post", "", "PO ST", "GET\r\n"] {
        let request = UnsignedRequest::new(method, URL).with_body(&body);
        assert_eq!(
            sign_err(&signer, &request, &none).code(),
            "method_invalid",
            "{method:?}"
        );
    }
    // Content types: single, printable, no top-level comma.
    for ct in [
        "",
        " application/json",
        "application/json, text/plain",
        "a\u{e9}",
        "x\ny",
        "a; p=\"unterminated",
    ] {
        let request = UnsignedRequest::post(URL, &body).with_content_type(ct);
        assert_eq!(
            sign_err(&signer, &request, &none).code(),
            "content_type_invalid",
            "{ct:?}"
        );
    }
    let quoted = UnsignedRequest::post(URL, &body).with_content_type("application/json; x=\"a,b\"");
    assert!(block_on(signer.sign(&quoted)).is_ok());
    // URLs the canonicalizer rejects.
    for url in [
        "not a url",
        "https://[fe80::1%25eth0]/p",
        "https://a..b./",
        "//host/p",
        "https://example.com/%zz",
    ] {
        let request = UnsignedRequest::post(url, &body);
        assert_eq!(
            sign_err(&signer, &request, &none).code(),
            "target_uri_malformed",
            "{url}"
        );
    }
    // A webhook through a request-profile signer would carry the wrong tag.
    let request_signer = HttpSigner::request(ed25519()).unwrap();
    let event = WebhookEvent::new(&serde_json::json!({"status": "completed"})).unwrap();
    assert_eq!(
        block_on(request_signer.sign_webhook(URL, &event)).unwrap_err().code(),
        "profile_mismatch"
    );
}

#[test]
fn nonces_and_idempotency_keys_are_checked() {
    for (nonce, _why) in [
        ("KXYnfEfJ0PBRZXQyVXfVQA==", "padded"),
        ("KXYnfEfJ0PBRZXQyVXfV", "15 bytes"),
        ("KXYnfEfJ0PBRZXQyVXfVQ+", "standard alphabet"),
        ("KXYnfEfJ0PBRZXQyVXfVQB", "non-canonical trailing bits"),
        ("", "empty"),
    ] {
        assert_eq!(Nonce::parse(nonce).unwrap_err().code(), "nonce_invalid", "{nonce}");
    }
    assert!(Nonce::parse(&"A".repeat(86)).is_ok()); // 64 bytes
    assert_eq!(Nonce::parse(&"A".repeat(88)).unwrap_err().code(), "nonce_invalid");

    for key in [
        "short",
        "has space in it 123",
        "aaaaaaaaaaaaaaaaaaaa",
        &"k".repeat(256),
        "ünïcödé-key-0123456",
    ] {
        assert_eq!(
            IdempotencyKey::new(key).unwrap_err().code(),
            "idempotency_key_invalid",
            "{key}"
        );
    }
    assert!(IdempotencyKey::new("550e8400-e29b-41d4-a716-446655440000").is_ok());

    for (bytes, code) in [
        (r#"{"status":"completed"}"#, "idempotency_key_missing"),
        (r#"{"idempotency_key":42}"#, "idempotency_key_missing"),
        (r#"{"idempotency_key":"short"}"#, "idempotency_key_invalid"),
        (r#"["idempotency_key"]"#, "payload_not_object"),
        (
            r#"{"idempotency_key":"whk_01HW9D3H8FZP2N6R8T0V4X6Z9B","a":1,"a":2}"#,
            "duplicate_key_input",
        ),
        (
            r#"{"idempotency_key":"whk_01HW9D3H8FZP2N6R8T0V4X6Z9B",}"#,
            "invalid_json_input",
        ),
    ] {
        assert_eq!(
            WebhookEvent::from_json_bytes(bytes).unwrap_err().code(),
            code,
            "{bytes}"
        );
    }
    let event = WebhookEvent::from_json_bytes(r#" {"idempotency_key":"whk_01HW9D3H8FZP2N6R8T0V4X6Z9B"}"#).unwrap();
    assert_eq!(event.idempotency_key().as_str(), "whk_01HW9D3H8FZP2N6R8T0V4X6Z9B");

    // Payloads that are not objects cannot carry an idempotency key.
    assert_eq!(
        WebhookEvent::new(&[1, 2, 3]).unwrap_err().code(),
        "payload_not_serializable"
    );
    assert_eq!(
        WebhookEvent::new("text").unwrap_err().code(),
        "payload_not_serializable"
    );
}

/// A signer that returns what it is told to, counting calls.
struct Scripted {
    algorithm: Algorithm,
    output: Result<Vec<u8>, bool>,
    calls: AtomicUsize,
}

impl Signer for Scripted {
    fn key_id(&self) -> &str {
        "remote-1"
    }
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
    async fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, SignerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match &self.output {
            Ok(bytes) => Ok(bytes.clone()),
            Err(true) => Err(SignerError::unavailable("throttled")),
            Err(false) => Err(SignerError::failed("key disabled")),
        }
    }
}

fn scripted(algorithm: Algorithm, output: Result<Vec<u8>, bool>) -> Arc<Scripted> {
    Arc::new(Scripted {
        algorithm,
        output,
        calls: AtomicUsize::new(0),
    })
}

#[test]
fn custom_signers_are_held_to_the_profile() {
    let body = body();
    let request = UnsignedRequest::post(URL, &body);

    // An HMAC "KMS key" is refused at construction.
    let hmac = scripted(Algorithm::HmacSha256, Ok(vec![0; 32]));
    assert_eq!(
        HttpSigner::webhook(Arc::clone(&hmac)).unwrap_err().code(),
        "alg_not_allowed"
    );

    // DER output from a KMS is refused, not sent.
    let der = scripted(Algorithm::EcdsaP256Sha256, Ok(vec![0x30; 71]));
    let signer = HttpSigner::webhook(Arc::clone(&der)).unwrap();
    let err = block_on(signer.sign(&request)).unwrap_err();
    assert_eq!(err.code(), "signer_output_invalid");
    assert!(err.to_string().contains("71 bytes, 64 required"), "{err}");

    // Backend errors keep their retry class.
    let down = scripted(Algorithm::Ed25519, Err(true));
    let err = block_on(HttpSigner::webhook(Arc::clone(&down)).unwrap().sign(&request)).unwrap_err();
    assert_eq!(err.code(), "signer_unavailable");
    assert!(err.is_retryable());
    let disabled = scripted(Algorithm::Ed25519, Err(false));
    let err = block_on(HttpSigner::webhook(Arc::clone(&disabled)).unwrap().sign(&request)).unwrap_err();
    assert_eq!(err.code(), "signer_failed");
    assert!(!err.is_retryable());

    // Input errors are found before the backend is called.
    let ok = scripted(Algorithm::Ed25519, Ok(vec![0; 64]));
    let signer = HttpSigner::new(SigningProfile::request_legacy(LegacyDigest::Cover), Arc::clone(&ok)).unwrap();
    let bad = UnsignedRequest::post("https://bad host/", &body);
    assert_eq!(block_on(signer.sign(&bad)).unwrap_err().code(), "target_uri_malformed");
    assert_eq!(ok.calls.load(Ordering::SeqCst), 0);
    assert!(block_on(signer.sign(&request)).is_ok());
    assert_eq!(ok.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn der_signatures_convert_to_r_s() {
    let key = SoftwareSigner::generate(Algorithm::EcdsaP256Sha256, "k").unwrap();
    let raw = block_on(Signer::sign(&key, b"message")).unwrap();
    let sig = p256::ecdsa::Signature::from_slice(&raw).unwrap();
    let der = sig.to_der();
    assert_eq!(
        adcp_sign::p256_signature_from_der(der.as_bytes()).unwrap().to_vec(),
        raw
    );
    assert_eq!(
        adcp_sign::p256_signature_from_der(b"\x30\x00").unwrap_err().kind(),
        adcp_sign::SignerErrorKind::Failed
    );
}

#[test]
fn every_error_code_is_a_stable_snake_case_identifier() {
    let errors = [
        Body::from_json_bytes("{\"a\":1,\"a\":2}").unwrap_err(),
        Body::from_json_bytes("{").unwrap_err(),
        Nonce::parse("x").unwrap_err(),
        IdempotencyKey::new("x").unwrap_err(),
        SoftwareSigner::generate(Algorithm::Ed25519, "").unwrap_err(),
    ];
    for err in errors {
        let code = err.code();
        assert!(code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{code}");
        assert!(err.to_string().starts_with(code), "{err}");
    }
}

#[test]
fn a_deprecated_webhook_signing_key_cannot_sign_requests() {
    let webhook_key = || ed25519().with_key_purpose(adcp_sign::KeyPurpose::WebhookSigning);
    assert_eq!(
        HttpSigner::request(webhook_key()).unwrap_err().code(),
        "key_purpose_invalid"
    );
    assert_eq!(
        HttpSigner::new(SigningProfile::request_legacy(LegacyDigest::Cover), webhook_key())
            .unwrap_err()
            .code(),
        "key_purpose_invalid"
    );
    // Webhook verifiers still accept it.
    assert!(HttpSigner::webhook(webhook_key()).is_ok());
    assert!(HttpSigner::request(ed25519()).is_ok());
}

#[test]
fn signed_requests_convert_to_http_requests() {
    let signer = HttpSigner::webhook(ed25519()).unwrap();
    let body = body();
    let signed = block_on(signer.sign(&UnsignedRequest::post("https://Buyer.Example.com:443/h?a=1", &body))).unwrap();
    let http = signed.to_http().unwrap();
    assert_eq!(http.method(), "POST");
    assert_eq!(http.uri(), "https://buyer.example.com/h?a=1");
    assert_eq!(http.body().as_slice(), body.as_bytes());
    for (name, value) in signed.headers() {
        assert_eq!(http.headers()[*name], value.as_str());
    }
    assert_eq!(http.headers().len(), 4);
    // A raw character AdCP canonicalization keeps but `http::Uri` refuses.
    let signed = block_on(signer.sign(&UnsignedRequest::post("https://buyer.example.com/a<b", &body))).unwrap();
    assert_eq!(signed.url(), "https://buyer.example.com/a<b");
    assert_eq!(signed.to_http().unwrap_err().code(), "http_request_invalid");
}
