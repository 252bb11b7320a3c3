//! Determinism against the AdCP conformance vectors: with the vector's
//! created / expires / nonce / keyid and the suite's test key, the signer
//! reproduces the vector's headers and signature base byte for byte.
//!
//! Everything is read from the suite at run time (`adcp_vectors`); nothing
//! is copied into the repository.

use std::path::Path;

use adcp_sigbase::jwk::Jwks;
use adcp_sigbase::SignatureInput;
use adcp_sign::{Body, HttpSigner, LegacyDigest, Nonce, SignOptions, SigningProfile, SoftwareSigner, UnsignedRequest};
use adcp_vectors::VectorRequest;

fn suite() -> Option<std::path::PathBuf> {
    adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// The suite's key `kid` from `keys_file`, with its published test-only
/// private key adopted.
fn test_key(suite: &Path, keys_file: &str, kid: &str) -> SoftwareSigner {
    let doc = adcp_vectors::load_json(suite, keys_file).unwrap();
    let jwks = Jwks::from_json_value(&doc)
        .unwrap()
        .with_test_private_member("_private_d_for_test_only")
        .unwrap();
    SoftwareSigner::from_jwk(jwks.key(kid).unwrap()).unwrap()
}

fn header<'a>(req: &'a VectorRequest, name: &str) -> &'a str {
    req.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("vector has no {name}"))
}

/// Signs the vector's request with its parameters and compares.
fn reproduce(suite: &Path, keys_file: &str, relative: &str, profile: SigningProfile) {
    let vector = adcp_vectors::load_json(suite, relative).unwrap();
    let req = VectorRequest::from_json(&vector["request"]).unwrap();
    let input = SignatureInput::parse(header(&req, "Signature-Input").as_bytes()).unwrap();
    let params = input.require("sig1").unwrap();
    let signer = test_key(suite, keys_file, params.keyid().unwrap());
    let signer = HttpSigner::new(profile, signer).unwrap();
    let options = SignOptions::new()
        .with_created(params.created().unwrap())
        .with_expires(params.expires().unwrap())
        .with_nonce(Nonce::parse(params.nonce().unwrap()).unwrap());

    let body = req.body.as_deref().map(|b| Body::from_json_bytes(b).unwrap());
    let mut unsigned = UnsignedRequest::new(&req.method, &req.url);
    if let Some(body) = &body {
        unsigned = unsigned.with_body(body).with_content_type(header(&req, "Content-Type"));
    }
    let signed = tokio_block_on(signer.sign_with(&unsigned, &options)).unwrap();

    assert_eq!(
        String::from_utf8_lossy(signed.signature_base()),
        vector["expected_signature_base"].as_str().unwrap(),
        "{relative}: signature base"
    );
    assert_eq!(
        signed.header("Signature-Input"),
        Some(header(&req, "Signature-Input")),
        "{relative}"
    );
    if params.covers("content-digest") {
        assert_eq!(
            signed.header("Content-Digest"),
            Some(header(&req, "Content-Digest")),
            "{relative}"
        );
    } else {
        assert_eq!(signed.header("Content-Digest"), None, "{relative}");
    }
    assert_eq!(
        signed.header("Signature"),
        Some(header(&req, "Signature")),
        "{relative}: Signature"
    );
    assert_eq!(
        signed.body().map(Body::as_str),
        req.body.as_deref(),
        "{relative}: body bytes"
    );
}

fn tokio_block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn webhook_positive_vectors_001_004_005_006_are_reproduced_byte_for_byte() {
    let Some(suite) = suite() else { return };
    for vector in [
        "001-basic-post.json",
        "004-default-port-stripped.json",
        "005-percent-encoded-path.json",
        "006-query-byte-preserved.json",
    ] {
        reproduce(
            &suite,
            "webhook-signing/keys.json",
            &format!("webhook-signing/positive/{vector}"),
            SigningProfile::webhook_v1(),
        );
    }
}

#[test]
fn other_ed25519_webhook_vectors_are_reproduced_too() {
    let Some(suite) = suite() else { return };
    // 007 (no idempotency_key in the body: the signature layer does not
    // care) and 008 (a request-signing key reused for webhooks).
    for vector in [
        "007-body-without-idempotency-key.json",
        "008-request-signing-key-reuse.json",
    ] {
        reproduce(
            &suite,
            "webhook-signing/keys.json",
            &format!("webhook-signing/positive/{vector}"),
            SigningProfile::webhook_v1(),
        );
    }
}

#[test]
fn request_vectors_are_reproduced_under_their_profiles() {
    let Some(suite) = suite() else { return };
    let keys = "request-signing/keys.json";
    // AdCP 3.2: RFC 8941 Base64 for Signature and Content-Digest.
    reproduce(
        &suite,
        keys,
        "request-signing/profile-3.2/positive/001-post-with-content-digest.json",
        SigningProfile::request_v3_2(),
    );
    // Legacy 3.0/3.1, explicitly selected: unpadded base64url, digest
    // covered (vector 002) or not (vector 001, an `either` endpoint).
    reproduce(
        &suite,
        keys,
        "request-signing/positive/002-post-with-content-digest.json",
        SigningProfile::request_legacy(LegacyDigest::Cover),
    );
    reproduce(
        &suite,
        keys,
        "request-signing/positive/001-basic-post.json",
        SigningProfile::request_legacy(LegacyDigest::Omit),
    );
}

#[test]
fn the_es256_webhook_vector_verifies_with_our_base_and_digest() {
    // ECDSA signatures are randomized, so vector 002 cannot be reproduced
    // byte for byte; everything but the signature bytes can.
    let Some(suite) = suite() else { return };
    let relative = "webhook-signing/positive/002-es256-post.json";
    let vector = adcp_vectors::load_json(&suite, relative).unwrap();
    let req = VectorRequest::from_json(&vector["request"]).unwrap();
    let input = SignatureInput::parse(header(&req, "Signature-Input").as_bytes()).unwrap();
    let params = input.require("sig1").unwrap();
    let key = test_key(&suite, "webhook-signing/keys.json", params.keyid().unwrap());
    let public = key.verifying_key();
    let signer = HttpSigner::webhook(key).unwrap();
    let body = Body::from_json_bytes(req.body.clone().unwrap()).unwrap();
    let options = SignOptions::new()
        .with_created(params.created().unwrap())
        .with_expires(params.expires().unwrap())
        .with_nonce(Nonce::parse(params.nonce().unwrap()).unwrap());
    let signed = tokio_block_on(signer.sign_with(&UnsignedRequest::post(&req.url, &body), &options)).unwrap();
    assert_eq!(
        String::from_utf8_lossy(signed.signature_base()),
        vector["expected_signature_base"].as_str().unwrap()
    );
    assert_eq!(signed.header("Content-Digest"), Some(header(&req, "Content-Digest")));
    assert_eq!(signed.header("Signature-Input"), Some(header(&req, "Signature-Input")));
    let ours = signed.header("Signature").unwrap();
    let bytes = adcp_sigbase::encoding::BinaryEncoding::Base64UrlUnpadded
        .decode(ours.trim_start_matches("sig1=:").trim_end_matches(':'))
        .unwrap();
    public
        .verify(adcp_sign::Algorithm::EcdsaP256Sha256, signed.signature_base(), &bytes)
        .unwrap();
}
