//! Loading signing keys (JWK, PKCS#8 PEM/DER, raw) and exporting the
//! public half as a JWK / JWK Set a verifier accepts.

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::jwk::{Jwk, Jwks};
use adcp_sign::{Algorithm, KeyPurpose, Signer, SoftwareSigner};

use crate::common::block_on;

/// Signs with `signer` and verifies with the public JWK it exports.
fn assert_signs_for_its_public_jwk(signer: &SoftwareSigner) {
    let jwk = Jwk::parse(&serde_json::to_vec(&signer.public_jwk().unwrap().to_public_json()).unwrap()).unwrap();
    let signature = block_on(Signer::sign(signer, b"base")).unwrap();
    jwk.verifying_key()
        .verify(jwk.algorithm(), b"base", &signature)
        .unwrap();
}

#[test]
fn public_exports_carry_the_adcp_members() {
    for (alg, jose, kty) in [
        (Algorithm::Ed25519, "EdDSA", "OKP"),
        (Algorithm::EcdsaP256Sha256, "ES256", "EC"),
    ] {
        let signer = SoftwareSigner::generate(alg, "seller-2026").unwrap();
        let public = signer.public_jwk().unwrap().to_public_json();
        assert_eq!(public["kid"], "seller-2026");
        assert_eq!(public["kty"], kty);
        assert_eq!(public["alg"], jose);
        assert_eq!(public["use"], "sig");
        assert_eq!(public["key_ops"], serde_json::json!(["verify"]));
        assert_eq!(public["adcp_use"], "request-signing");
        assert!(public.get("d").is_none());

        let jwks = signer.jwks().unwrap().to_public_json();
        assert_eq!(jwks["keys"][0], public);
        assert_eq!(jwks.as_object().unwrap().len(), 1);

        // The private JWK round-trips to the same signer.
        let private = signer.private_jwk().unwrap().to_json();
        assert!(private["d"].is_string());
        assert_eq!(private["adcp_use"], "request-signing");
        let again = SoftwareSigner::from_jwk_json(&serde_json::to_vec(&private).unwrap()).unwrap();
        assert_eq!(again.key_id(), "seller-2026");
        assert_eq!(again.algorithm(), alg);
        assert_eq!(again.public_jwk().unwrap().to_public_json(), public);
        assert_signs_for_its_public_jwk(&again);
    }
}

#[test]
fn the_deprecated_purpose_is_kept_when_a_key_is_loaded() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "old")
        .unwrap()
        .with_key_purpose(KeyPurpose::WebhookSigning);
    assert!(signer.key_purpose().is_deprecated());
    let private = signer.private_jwk().unwrap().to_json();
    assert_eq!(private["adcp_use"], "webhook-signing");
    let again = SoftwareSigner::from_jwk_json(&serde_json::to_vec(&private).unwrap()).unwrap();
    assert_eq!(again.key_purpose(), KeyPurpose::WebhookSigning);
    assert_eq!(
        again.public_jwk().unwrap().to_public_json()["adcp_use"],
        "webhook-signing"
    );
    // Without adcp_use, the key is published as request-signing.
    let mut bare = private.clone();
    bare.as_object_mut().unwrap().remove("adcp_use");
    let again = SoftwareSigner::from_jwk_json(&serde_json::to_vec(&bare).unwrap()).unwrap();
    assert_eq!(again.key_purpose(), KeyPurpose::RequestSigning);
}

#[test]
fn pkcs8_pem_der_and_raw_keys_load() {
    for alg in [Algorithm::Ed25519, Algorithm::EcdsaP256Sha256] {
        let key = match alg {
            Algorithm::Ed25519 => SigningKey::generate_ed25519().unwrap(),
            _ => SigningKey::generate_p256().unwrap(),
        };
        let der = key.to_pkcs8_der().unwrap();
        let from_der = SoftwareSigner::from_pkcs8_der(der.expose_secret(), "k").unwrap();
        assert_eq!(from_der.algorithm(), alg);
        assert_signs_for_its_public_jwk(&from_der);

        let pem = pem("PRIVATE KEY", der.expose_secret());
        let from_pem = SoftwareSigner::from_pkcs8_pem(&pem, "k").unwrap();
        assert_eq!(
            from_pem.public_jwk().unwrap().to_public_json(),
            from_der.public_jwk().unwrap().to_public_json()
        );

        // Raw: the JWK `d` bytes, read as the named algorithm.
        let d = from_der.private_jwk().unwrap().to_json()["d"]
            .as_str()
            .unwrap()
            .to_owned();
        let raw = adcp_sigbase::encoding::BinaryEncoding::Base64UrlUnpadded
            .decode(&d)
            .unwrap();
        let from_raw = SoftwareSigner::from_raw(alg, &raw, "k").unwrap();
        assert_eq!(
            from_raw.public_jwk().unwrap().to_public_json(),
            from_der.public_jwk().unwrap().to_public_json()
        );
    }
    assert_eq!(
        SoftwareSigner::from_pkcs8_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "k")
            .unwrap_err()
            .code(),
        "key_invalid"
    );
    assert_eq!(
        SoftwareSigner::from_raw(Algorithm::Ed25519, &[1; 31], "k")
            .unwrap_err()
            .code(),
        "key_invalid"
    );
    assert_eq!(
        SoftwareSigner::from_raw(Algorithm::EcdsaP256Sha256, &[0; 32], "k")
            .unwrap_err()
            .code(),
        "key_invalid"
    );
}

#[test]
fn the_conformance_test_keys_load_only_when_adopted_explicitly() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let doc = adcp_vectors::load_json(&suite, "webhook-signing/keys.json").unwrap();
    let plain = Jwks::from_json_value(&doc).unwrap();
    let key = plain.key("test-ed25519-webhook-2026").unwrap();
    assert_eq!(SoftwareSigner::from_jwk(key).unwrap_err().code(), "private_key_missing");

    let adopted = plain.with_test_private_member("_private_d_for_test_only").unwrap();
    for kid in ["test-ed25519-webhook-2026", "test-es256-webhook-2026"] {
        let signer = SoftwareSigner::from_jwk(adopted.key(kid).unwrap()).unwrap();
        assert_eq!(signer.key_purpose(), KeyPurpose::WebhookSigning);
        let public = signer.public_jwk().unwrap().to_public_json();
        assert!(public.get("_private_d_for_test_only").is_none());
        assert_signs_for_its_public_jwk(&signer);
    }
    // A key for another profile's purpose is not loaded.
    let response = adopted.key("test-response-purpose-2026").unwrap();
    assert_eq!(
        SoftwareSigner::from_jwk(response).unwrap_err().code(),
        "key_purpose_invalid"
    );
}

#[test]
fn debug_never_prints_secrets() {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "k1").unwrap();
    let d = signer.private_jwk().unwrap().to_json()["d"]
        .as_str()
        .unwrap()
        .to_owned();
    let debug = format!("{signer:?}");
    assert!(!debug.contains(&d), "{debug}");
    assert!(debug.contains("k1") && debug.contains("ed25519"), "{debug}");
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = adcp_sigbase::encoding::BinaryEncoding::Base64Padded.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
