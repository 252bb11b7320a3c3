//! Tests of `adcp_sigbase::jwk`: the AdCP conformance keys and JWK vectors,
//! published RFC examples, round trips, every rejection, and never-panics
//! properties.

use std::path::{Path, PathBuf};

use adcp_sigbase::crypto::{Algorithm, CryptoError, KeyKind, KeyRejection, SigningKey, VerifyingKey};
use adcp_sigbase::encoding::{EncodingError, PaddingErrorKind};
use adcp_sigbase::jwk::{Jwk, JwkError, JwkMember, Jwks, JwksEntry, JwksLimits, MAX_JWKS_KEYS, MAX_JWKS_LEN};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::hex;

const TEST_MEMBER: &str = "_private_d_for_test_only";

// RFC 8037 Appendix A.1 (Ed25519 private key) and A.3 (its thumbprint).
const RFC8037_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
const RFC8037_THUMBPRINT: &str = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";

// RFC 7515 Appendix A.3 (ES256 key).
const RFC7515_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
const RFC7515_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
const RFC7515_D: &str = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI";

// RFC 9449 §4.2 / §6.1 (DPoP): an EC P-256 key and its published `jkt`.
const RFC9449_X: &str = "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs";
const RFC9449_Y: &str = "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA";
const RFC9449_JKT: &str = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";

/// The P-256 group order n.
const P256_ORDER_HEX: &str = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn ed25519() -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X})
}

fn ed25519_private() -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "d": RFC8037_D})
}

fn p256() -> Value {
    json!({"kty": "EC", "crv": "P-256", "x": RFC7515_X, "y": RFC7515_Y})
}

fn p256_private() -> Value {
    json!({"kty": "EC", "crv": "P-256", "x": RFC7515_X, "y": RFC7515_Y, "d": RFC7515_D})
}

/// `base` with `member` set to `value` (or removed when `value` is `None`).
fn with(base: &Value, member: &str, value: Option<Value>) -> Value {
    let mut out = base.clone();
    let map = out.as_object_mut().unwrap();
    match value {
        Some(v) => {
            map.insert(member.to_owned(), v);
        }
        None => {
            map.remove(member);
        }
    }
    out
}

fn err(value: &Value) -> JwkError {
    match Jwk::from_json_value(value) {
        Ok(jwk) => panic!("accepted {value}: {jwk:?}"),
        Err(e) => e,
    }
}

fn invalid(member: JwkMember) -> JwkError {
    JwkError::InvalidMember { member }
}

fn missing(member: JwkMember) -> JwkError {
    JwkError::MissingMember { member }
}

fn suite() -> Option<PathBuf> {
    adcp_vectors::require_dir().unwrap()
}

fn sign_and_verify(signer: &SigningKey, jwk: &Jwk) {
    let signature = signer.sign(b"signature base").unwrap();
    jwk.verifying_key()
        .verify(jwk.algorithm(), b"signature base", signature.as_bytes())
        .unwrap();
}

// ------------------------------------------------------ AdCP conformance keys

fn check_keys_file(dir: &Path, relative: &str, expected: &[&str]) {
    let original = adcp_vectors::load_json(dir, relative).unwrap();
    let bytes = std::fs::read(dir.join(relative)).unwrap();
    let jwks = Jwks::parse(&bytes).unwrap();
    assert_eq!(Jwks::from_json_value(&original).unwrap().to_json(), original);
    assert_eq!(jwks.to_json(), original, "{relative}: round trip");
    assert_eq!(jwks.member("$comment"), original.get("$comment"));
    assert_eq!(jwks.len(), original["keys"].as_array().unwrap().len());
    let kids: Vec<&str> = jwks.keys().filter_map(Jwk::kid).collect();
    assert_eq!(kids, expected, "{relative}");

    for (raw, entry) in original["keys"].as_array().unwrap().iter().zip(jwks.entries()) {
        let jwk = entry
            .jwk()
            .unwrap_or_else(|e| panic!("{relative} {:?}: {e}", entry.kid()));
        let kid = jwk.kid().unwrap();
        assert_eq!(Jwk::from_json_value(raw).unwrap().to_json(), *raw);
        assert_eq!(jwk.to_json(), *raw, "{kid}");
        assert_eq!(jwk.member("adcp_use"), raw.get("adcp_use"));
        assert_eq!(entry.member("adcp_use"), raw.get("adcp_use"));
        assert_eq!(jwk.key_use(), Some("sig"));
        assert_eq!(jwk.key_ops(), Some(&["verify".to_owned()][..]));
        assert_eq!(jwk.alg(), Some(jwk.algorithm().jose_name()));
        // The test member is an ordinary member until adopted explicitly.
        assert!(!jwk.has_private_key(), "{kid}");
        assert_eq!(jwk.signing_key().err(), Some(JwkError::MissingPrivateKey));
        let private = jwk.clone().with_test_private_member(TEST_MEMBER).unwrap();
        assert!(private.has_private_key());
        let signer = private.signing_key().unwrap();
        assert_eq!(signer.algorithm(), jwk.algorithm());
        assert_eq!(
            signer.verifying_key(),
            *jwk.verifying_key(),
            "{kid}: private member matches x/y"
        );
        sign_and_verify(&signer, jwk);
        // to_json still reproduces the file; to_public_json drops the secret.
        assert_eq!(private.to_json(), *raw);
        let public = private.to_public_json();
        assert!(public.get(TEST_MEMBER).is_none());
        assert!(public.get("d").is_none());
        assert_eq!(with(raw, TEST_MEMBER, None), public);
        // The standard private form of the same key.
        let standard = Jwk::with_private(&signer, kid).unwrap();
        assert_eq!(standard.to_json()["d"], raw[TEST_MEMBER], "{kid}: exported d");
        assert_eq!(standard.thumbprint(), jwk.thumbprint());
    }

    let private = jwks.clone().with_test_private_member(TEST_MEMBER).unwrap();
    assert!(private.keys().all(Jwk::has_private_key));
    assert_eq!(private.to_json(), original);
    assert!(private.to_public_json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k.get(TEST_MEMBER).is_none()));
}

#[test]
fn adcp_webhook_signing_keys_parse_and_their_private_members_match() {
    let Some(dir) = suite() else { return };
    check_keys_file(
        &dir,
        "webhook-signing/keys.json",
        &[
            "test-ed25519-webhook-2026",
            "test-es256-webhook-2026",
            "test-wrong-purpose-2026",
            "test-response-purpose-2026",
            "test-revoked-webhook-2026",
        ],
    );
}

#[test]
fn adcp_request_signing_keys_parse_and_their_private_members_match() {
    let Some(dir) = suite() else { return };
    check_keys_file(
        &dir,
        "request-signing/keys.json",
        &[
            "test-ed25519-2026",
            "test-es256-2026",
            "test-gov-2026",
            "test-revoked-2026",
        ],
    );
}

#[test]
fn adcp_negative_025_jwk_alg_crv_mismatch_is_an_algorithm_mismatch() {
    let Some(dir) = suite() else { return };
    for relative in [
        "request-signing/negative/025-jwk-alg-crv-mismatch.json",
        "request-signing/profile-3.2/negative/025-jwk-alg-crv-mismatch.json",
    ] {
        let vector = adcp_vectors::load_json(&dir, relative).unwrap();
        let overridden = &vector["jwks_override"];
        let raw = &overridden["keys"][0];
        assert_eq!(
            Jwk::from_json_value(raw).err(),
            Some(JwkError::AlgorithmMismatch),
            "{relative}"
        );
        assert_eq!(
            Jwk::parse(raw.to_string().as_bytes()).err(),
            Some(JwkError::AlgorithmMismatch)
        );
        // In a set the key stays listed: the kid is known, the key unusable.
        let jwks = Jwks::parse(overridden.to_string().as_bytes()).unwrap();
        let entry = jwks.get("test-alg-crv-mismatch-2026").expect("kid listed");
        assert_eq!(entry.error(), Some(JwkError::AlgorithmMismatch));
        assert_eq!(entry.jwk().err(), Some(JwkError::AlgorithmMismatch));
        assert!(matches!(entry, JwksEntry::Unusable(_)));
        assert_eq!(entry.member("adcp_use"), Some(&json!("request-signing")));
        assert!(jwks.key("test-alg-crv-mismatch-2026").is_none());
        assert_eq!(jwks.keys().count(), 0);
        assert_eq!(jwks.to_json(), *overridden);
    }
}

#[test]
fn adcp_webhook_negative_020_key_ops_override_parses_with_its_key_ops() {
    let Some(dir) = suite() else { return };
    let vector = adcp_vectors::load_json(&dir, "webhook-signing/negative/020-key-ops-missing-verify.json").unwrap();
    // This override is a map kid -> JWK, not a JWK Set.
    let raw = &vector["jwks_override"]["test-ed25519-webhook-2026"];
    let jwk = Jwk::from_json_value(raw).unwrap();
    assert_eq!(jwk.key_ops(), Some(&["sign".to_owned()][..]));
    assert_eq!(jwk.to_json(), *raw);
}

// ------------------------------------------------------------- RFC examples

#[test]
fn rfc8037_ed25519_key_thumbprint_and_signature() {
    let jwk = Jwk::from_json_value(&ed25519_private()).unwrap();
    assert_eq!(jwk.thumbprint(), RFC8037_THUMBPRINT);
    assert_eq!(jwk.algorithm(), Algorithm::Ed25519);
    assert_eq!((jwk.kty(), jwk.crv(), jwk.y()), ("OKP", "Ed25519", None));
    assert_eq!(b64(jwk.x()), RFC8037_X);
    // RFC 8037 A.4: Ed25519 is deterministic, so the published JWS
    // signature is reproduced exactly.
    let signer = jwk.signing_key().unwrap();
    let signature = signer
        .sign(b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc")
        .unwrap();
    assert_eq!(
        b64(signature.as_bytes()),
        "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    );
    // The thumbprint depends on the public key only.
    let public = Jwk::from_json_value(&ed25519()).unwrap();
    assert_eq!(public.thumbprint(), RFC8037_THUMBPRINT);
    let decorated = json!({"kid": "k", "alg": "EdDSA", "use": "sig", "key_ops": ["verify"], "adcp_use": "x",
        "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X});
    assert_eq!(
        Jwk::from_json_value(&decorated).unwrap().thumbprint(),
        RFC8037_THUMBPRINT
    );
    assert_eq!(
        public.thumbprint_sha256().to_vec(),
        URL_SAFE_NO_PAD.decode(RFC8037_THUMBPRINT).unwrap()
    );
}

#[test]
fn rfc9449_p256_thumbprint() {
    let jwk = Jwk::from_json_value(&json!({"kty": "EC", "x": RFC9449_X, "y": RFC9449_Y, "crv": "P-256"})).unwrap();
    assert_eq!(jwk.thumbprint(), RFC9449_JKT);
    assert_eq!(jwk.algorithm(), Algorithm::EcdsaP256Sha256);
    assert_eq!((jwk.kty(), jwk.crv()), ("EC", "P-256"));
    assert_eq!(b64(jwk.y().unwrap()), RFC9449_Y);
}

#[test]
fn rfc7515_p256_private_key_matches_its_public_key() {
    let jwk = Jwk::from_json_value(&p256_private()).unwrap();
    assert!(jwk.has_private_key());
    let signer = jwk.signing_key().unwrap();
    assert_eq!(signer.algorithm(), Algorithm::EcdsaP256Sha256);
    sign_and_verify(&signer, &jwk);
    assert_eq!(jwk.to_json(), p256_private());
    assert_eq!(jwk.to_public_json(), p256());
}

// --------------------------------------------------------------- round trips

#[test]
fn from_signing_key_gives_the_published_form_and_round_trips() {
    for signer in [
        SigningKey::generate_ed25519().unwrap(),
        SigningKey::generate_p256().unwrap(),
    ] {
        let jwk = Jwk::from_signing_key(&signer, "k1").unwrap();
        let json = jwk.to_json();
        let alg = signer.algorithm().jose_name();
        assert_eq!(json["kid"], "k1");
        assert_eq!(json["alg"], alg);
        assert_eq!(json["use"], "sig");
        assert_eq!(json["key_ops"], json!(["verify"]));
        assert!(json.get("d").is_none());
        assert_eq!(json, jwk.to_public_json());
        assert_eq!(jwk.verifying_key(), &signer.verifying_key());
        assert_eq!(
            Jwk::from_verifying_key(&signer.verifying_key(), "k1")
                .unwrap()
                .to_json(),
            json
        );

        let parsed = Jwk::parse(json.to_string().as_bytes()).unwrap();
        assert_eq!(parsed.to_json(), json);
        assert_eq!(parsed.thumbprint(), jwk.thumbprint());
        sign_and_verify(&signer, &parsed);

        // With the private key: d is written, parsed back, and usable.
        let private = Jwk::with_private(&signer, "k1").unwrap();
        let private_json = private.to_json();
        assert!(private_json["d"].is_string());
        assert_eq!(private.to_public_json(), json);
        let reparsed = Jwk::parse(private_json.to_string().as_bytes()).unwrap();
        assert_eq!(reparsed.to_json(), private_json);
        let resigner = reparsed.signing_key().unwrap();
        assert_eq!(resigner.verifying_key(), signer.verifying_key());
        sign_and_verify(&resigner, &jwk);
    }
}

#[test]
fn extension_members_are_kept_set_and_reserved() {
    let signer = SigningKey::generate_ed25519().unwrap();
    let jwk = Jwk::from_signing_key(&signer, "k")
        .unwrap()
        .with_member("adcp_use", json!("request-signing"))
        .unwrap()
        .with_member("nested", json!({"a": [1, 2.5, null, true]}))
        .unwrap()
        .with_member("adcp_use", json!("webhook-signing"))
        .unwrap();
    assert_eq!(jwk.member("adcp_use"), Some(&json!("webhook-signing")));
    let names: Vec<&str> = jwk.members().map(|(n, _)| n).collect();
    assert_eq!(names, ["adcp_use", "nested"]);
    assert_eq!(
        jwk.member("kid"),
        None,
        "standard members are typed, not extension members"
    );
    let parsed = Jwk::from_json_value(&jwk.to_json()).unwrap();
    assert_eq!(parsed.member("nested"), Some(&json!({"a": [1, 2.5, null, true]})));
    assert_eq!(parsed.to_json(), jwk.to_json());
    for name in ["kty", "kid", "use", "key_ops", "alg", "crv", "x", "y", "d"] {
        assert_eq!(
            jwk.clone().with_member(name, json!("v")).err(),
            Some(JwkError::ReservedMember),
            "{name}"
        );
    }
}

#[test]
fn optional_members_and_parsed_values_round_trip() {
    // No kid, alg Ed25519 (RFC 9864), empty key_ops, unknown use and ops.
    let raw = json!({"kty": "OKP", "crv": "Ed25519", "alg": "Ed25519", "x": RFC8037_X,
        "use": "enc", "key_ops": [], "x5c": ["MII"], "$comment": "c"});
    let jwk = Jwk::from_json_value(&raw).unwrap();
    assert_eq!(
        (jwk.kid(), jwk.alg(), jwk.key_use()),
        (None, Some("Ed25519"), Some("enc"))
    );
    assert_eq!(jwk.key_ops(), Some(&[][..]));
    assert_eq!(jwk.to_json(), raw);
    let ops = json!({"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "key_ops": ["verify", "sign", "custom"]});
    assert_eq!(
        Jwk::from_json_value(&ops).unwrap().key_ops().unwrap(),
        ["verify", "sign", "custom"]
    );
    let kid = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "", "x": RFC7515_X, "y": RFC7515_Y});
    assert_eq!(Jwk::from_json_value(&kid).unwrap().kid(), Some(""));
}

#[test]
fn jwks_round_trips_and_lists_unusable_keys() {
    let a = Jwk::with_private(&SigningKey::generate_ed25519().unwrap(), "a").unwrap();
    let b = Jwk::from_signing_key(&SigningKey::generate_p256().unwrap(), "b").unwrap();
    let jwks = Jwks::from_keys([a.clone(), b.clone()]).unwrap();
    assert_eq!(jwks.len(), 2);
    let json = jwks.to_json();
    assert!(json["keys"][0]["d"].is_string());
    assert!(jwks.to_public_json()["keys"][0].get("d").is_none());
    let parsed = Jwks::parse(json.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.to_json(), json);
    assert_eq!(parsed.key("a").unwrap().thumbprint(), a.thumbprint());
    assert!(parsed.key("a").unwrap().has_private_key());
    assert_eq!(parsed.key("b").unwrap().algorithm(), Algorithm::EcdsaP256Sha256);

    let mixed = json!({"keys": [
        {"kid": "rsa", "kty": "RSA", "n": "AQAB", "e": "AQAB", "d": "AQAB", "adcp_use": "request-signing"},
        {"kid": "x25519", "kty": "OKP", "crv": "X25519", "x": RFC8037_X},
        {"kty": "oct", "k": "AAAA"},
        {"kty": "oct", "k": "AAAB"},
        {"kid": 7, "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X},
        {"kid": "ok", "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X}
    ], "$comment": "kept"});
    let jwks = Jwks::from_json_value(&mixed).unwrap();
    assert_eq!(jwks.len(), 6);
    assert_eq!(jwks.keys().filter_map(Jwk::kid).collect::<Vec<_>>(), ["ok"]);
    let rsa = jwks.get("rsa").unwrap();
    assert_eq!(rsa.kid(), Some("rsa"));
    assert_eq!(rsa.error(), Some(JwkError::Unsupported { member: JwkMember::Kty }));
    assert_eq!(rsa.member("adcp_use"), Some(&json!("request-signing")));
    assert_eq!(rsa.member("kty"), None);
    let JwksEntry::Unusable(unusable) = rsa else {
        panic!("usable rsa")
    };
    assert_eq!(unusable.error(), JwkError::Unsupported { member: JwkMember::Kty });
    assert!(
        unusable.to_json().get("d").is_none(),
        "the d of a rejected key is dropped"
    );
    assert!(!format!("{unusable:?}").contains("AQAB"));
    assert_eq!(
        jwks.get("x25519").unwrap().error(),
        Some(JwkError::Unsupported { member: JwkMember::Crv })
    );
    assert_eq!(jwks.entries()[4].kid(), None);
    assert_eq!(jwks.entries()[4].error(), Some(invalid(JwkMember::Kid)));
    assert!(jwks.get("missing").is_none());
    assert!(jwks.key("rsa").is_none());
    assert_eq!(jwks.member("$comment"), Some(&json!("kept")));
    let mut expected = mixed.clone();
    expected["keys"][0].as_object_mut().unwrap().remove("d");
    assert_eq!(jwks.to_json(), expected);

    let empty = Jwks::parse(br#"{"keys": []}"#).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.keys().count(), 0);
    assert!(Jwks::default().is_empty());
}

#[test]
fn debug_never_prints_private_keys_or_member_values() {
    let signer = SigningKey::generate_ed25519().unwrap();
    let jwk = Jwk::with_private(&signer, "k").unwrap();
    let d = jwk.to_json()["d"].as_str().unwrap().to_owned();
    let debug = format!("{jwk:?}");
    assert!(debug.contains("REDACTED"), "{debug}");
    assert!(!debug.contains(&d), "{debug}");
    let jwks = Jwks::from_keys([jwk]).unwrap();
    assert!(!format!("{jwks:?}").contains(&d));

    let raw = with(&ed25519(), TEST_MEMBER, Some(json!(RFC8037_D)));
    let jwk = Jwk::from_json_value(&raw)
        .unwrap()
        .with_test_private_member(TEST_MEMBER)
        .unwrap();
    let debug = format!("{jwk:?}");
    assert!(debug.contains(TEST_MEMBER) && !debug.contains(RFC8037_D), "{debug}");
}

#[test]
fn test_private_member_is_explicit_and_checked() {
    let raw = with(&ed25519(), TEST_MEMBER, Some(json!(RFC8037_D)));
    let jwk = Jwk::from_json_value(&raw).unwrap();
    assert!(!jwk.has_private_key());
    assert_eq!(
        jwk.clone().with_test_private_member("other").err(),
        Some(missing(JwkMember::TestPrivate))
    );
    assert_eq!(
        jwk.clone().with_test_private_member("d").err(),
        Some(JwkError::ReservedMember)
    );
    let private = jwk.with_test_private_member(TEST_MEMBER).unwrap();
    assert_eq!(private.to_json(), raw);
    assert_eq!(private.to_public_json(), ed25519());

    let wrong = with(&ed25519(), TEST_MEMBER, Some(json!(RFC7515_D)));
    let wrong = Jwk::from_json_value(&wrong).unwrap();
    assert_eq!(
        wrong.with_test_private_member(TEST_MEMBER).err(),
        Some(JwkError::PrivateKeyMismatch)
    );
    let number = Jwk::from_json_value(&with(&ed25519(), TEST_MEMBER, Some(json!(1)))).unwrap();
    assert_eq!(
        number.with_test_private_member(TEST_MEMBER).err(),
        Some(invalid(JwkMember::TestPrivate))
    );
    let padded = Jwk::from_json_value(&with(&ed25519(), TEST_MEMBER, Some(json!(format!("{RFC8037_D}="))))).unwrap();
    assert!(matches!(
        padded.with_test_private_member(TEST_MEMBER),
        Err(JwkError::InvalidBase64 {
            member: JwkMember::TestPrivate,
            ..
        })
    ));
    let short = Jwk::from_json_value(&with(&ed25519(), TEST_MEMBER, Some(json!(b64(&[1; 31]))))).unwrap();
    assert_eq!(
        short.with_test_private_member(TEST_MEMBER).err(),
        Some(JwkError::InvalidLength {
            member: JwkMember::TestPrivate,
            expected: 32,
            actual: 31
        })
    );

    // With both d and the member: they must agree, d is kept.
    let both = with(&ed25519_private(), TEST_MEMBER, Some(json!(RFC8037_D)));
    let jwk = Jwk::from_json_value(&both)
        .unwrap()
        .with_test_private_member(TEST_MEMBER)
        .unwrap();
    assert_eq!(jwk.to_json(), both);
    assert_eq!(jwk.to_public_json(), ed25519());
    let other_seed = b64(&[7; 32]);
    let disagree = with(&ed25519_private(), TEST_MEMBER, Some(json!(other_seed)));
    let _ = Jwk::from_json_value(&disagree)
        .unwrap()
        .with_test_private_member(TEST_MEMBER)
        .unwrap_err();
}

// ------------------------------------------------------------------- errors

#[test]
fn kty_and_crv_are_required_and_supported() {
    assert_eq!(err(&json!([])), JwkError::NotAnObject);
    assert_eq!(err(&json!("OKP")), JwkError::NotAnObject);
    assert_eq!(err(&with(&ed25519(), "kty", None)), missing(JwkMember::Kty));
    assert_eq!(err(&with(&ed25519(), "kty", Some(json!(1)))), invalid(JwkMember::Kty));
    assert_eq!(err(&with(&ed25519(), "crv", None)), missing(JwkMember::Crv));
    assert_eq!(
        err(&with(&ed25519(), "crv", Some(json!(null)))),
        invalid(JwkMember::Crv)
    );
    let kty = JwkError::Unsupported { member: JwkMember::Kty };
    for value in ["RSA", "oct", "okp", "ec", "OKP ", ""] {
        assert_eq!(err(&with(&ed25519(), "kty", Some(json!(value)))), kty, "{value}");
    }
    assert_eq!(err(&json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"})), kty);
    assert_eq!(err(&json!({"kty": "oct", "k": "AAAA"})), kty);
    let crv = JwkError::Unsupported { member: JwkMember::Crv };
    for value in ["X25519", "Ed448", "P-256", "ed25519"] {
        assert_eq!(err(&with(&ed25519(), "crv", Some(json!(value)))), crv, "OKP {value}");
    }
    for value in ["P-384", "P-521", "secp256k1", "Ed25519", "p-256"] {
        assert_eq!(err(&with(&p256(), "crv", Some(json!(value)))), crv, "EC {value}");
    }
}

#[test]
fn alg_must_match_kty_and_crv() {
    for alg in ["EdDSA", "Ed25519"] {
        assert!(Jwk::from_json_value(&with(&ed25519(), "alg", Some(json!(alg)))).is_ok());
    }
    assert!(Jwk::from_json_value(&with(&p256(), "alg", Some(json!("ES256")))).is_ok());
    for alg in ["ES256", "RS256", "HS256", "none", "eddsa", "EDDSA", "Ed448", ""] {
        assert_eq!(
            err(&with(&ed25519(), "alg", Some(json!(alg)))),
            JwkError::AlgorithmMismatch,
            "{alg}"
        );
    }
    for alg in ["EdDSA", "Ed25519", "ES384", "es256", "HS256", "ES256K"] {
        assert_eq!(
            err(&with(&p256(), "alg", Some(json!(alg)))),
            JwkError::AlgorithmMismatch,
            "{alg}"
        );
    }
    assert_eq!(
        err(&with(&ed25519(), "alg", Some(json!(["EdDSA"])))),
        invalid(JwkMember::Alg)
    );
    // The parameters are checked before the key material: the AdCP vector
    // shape (EC / P-256 / EdDSA with an Ed25519 x and no y).
    let vector = json!({"kty": "EC", "crv": "P-256", "alg": "EdDSA", "x": RFC8037_X});
    assert_eq!(err(&vector), JwkError::AlgorithmMismatch);
}

#[test]
fn kid_use_and_key_ops_types_are_checked() {
    assert_eq!(err(&with(&ed25519(), "kid", Some(json!(1)))), invalid(JwkMember::Kid));
    assert_eq!(
        err(&with(&ed25519(), "kid", Some(json!(null)))),
        invalid(JwkMember::Kid)
    );
    assert_eq!(
        err(&with(&ed25519(), "use", Some(json!(["sig"])))),
        invalid(JwkMember::Use)
    );
    let ops = invalid(JwkMember::KeyOps);
    for value in [
        json!("verify"),
        json!([1]),
        json!(["verify", null]),
        json!(["verify", "verify"]),
        json!({"0": "verify"}),
    ] {
        assert_eq!(err(&with(&ed25519(), "key_ops", Some(value.clone()))), ops, "{value}");
    }
}

#[test]
fn key_components_must_be_strict_base64url_of_the_right_length() {
    assert_eq!(err(&with(&ed25519(), "x", None)), missing(JwkMember::X));
    assert_eq!(err(&with(&ed25519(), "x", Some(json!(1)))), invalid(JwkMember::X));
    assert_eq!(err(&with(&p256(), "y", None)), missing(JwkMember::Y));
    assert_eq!(err(&with(&p256(), "y", Some(json!([])))), invalid(JwkMember::Y));
    assert_eq!(
        err(&with(&ed25519(), "y", Some(json!(RFC7515_Y)))),
        invalid(JwkMember::Y)
    );
    assert_eq!(
        err(&with(&ed25519_private(), "d", Some(json!(0)))),
        invalid(JwkMember::D)
    );

    let x = JwkMember::X;
    // Padding.
    assert_eq!(
        err(&with(&ed25519(), "x", Some(json!(format!("{RFC8037_X}="))))),
        JwkError::InvalidBase64 {
            member: x,
            error: EncodingError::Padding {
                offset: 43,
                kind: PaddingErrorKind::Unexpected
            }
        }
    );
    // The standard alphabet ('/' and '+' instead of '_' and '-').
    let standard = RFC7515_Y.replace('_', "/");
    assert!(matches!(
        err(&with(&p256(), "y", Some(json!(standard)))),
        JwkError::InvalidBase64 {
            member: JwkMember::Y,
            error: EncodingError::WrongAlphabet { .. }
        }
    ));
    let plus = b64(&[0xf8; 32]).replace('-', "+");
    assert!(plus.contains('+') && !plus.contains('_'));
    assert!(matches!(
        err(&with(&ed25519(), "x", Some(json!(plus)))),
        JwkError::InvalidBase64 {
            member: JwkMember::X,
            error: EncodingError::WrongAlphabet { .. }
        }
    ));
    // Non-zero trailing bits: the last symbol of a 32-byte value carries 4
    // bits that must be zero ('o' = 40 = 0b101000 is canonical, 'p' is not).
    let mut trailing = RFC8037_X.to_owned();
    assert!(trailing.ends_with('o'));
    trailing.pop();
    trailing.push('p');
    assert!(matches!(
        err(&with(&ed25519(), "x", Some(json!(trailing)))),
        JwkError::InvalidBase64 {
            member: JwkMember::X,
            error: EncodingError::NonCanonical { .. }
        }
    ));
    assert!(matches!(
        err(&with(&ed25519(), "x", Some(json!("not base64!")))),
        JwkError::InvalidBase64 {
            member: JwkMember::X,
            ..
        }
    ));
    assert!(matches!(
        err(&with(&ed25519_private(), "d", Some(json!(format!("{RFC8037_D}="))))),
        JwkError::InvalidBase64 {
            member: JwkMember::D,
            ..
        }
    ));
    // Lengths.
    for (base, member, len) in [
        (ed25519(), "x", 31),
        (ed25519(), "x", 33),
        (ed25519(), "x", 0),
        (p256(), "x", 31),
        (p256(), "y", 33),
        (p256(), "y", 64),
        (ed25519_private(), "d", 31),
        (p256_private(), "d", 33),
    ] {
        let expected = JwkError::InvalidLength {
            member: match member {
                "x" => JwkMember::X,
                "y" => JwkMember::Y,
                _ => JwkMember::D,
            },
            expected: 32,
            actual: len,
        };
        assert_eq!(
            err(&with(&base, member, Some(json!(b64(&vec![1; len]))))),
            expected,
            "{member} {len}"
        );
    }
    // A P-256 coordinate with its leading zero byte stripped is too short.
    let short_y = json!({"kty": "EC", "crv": "P-256", "x": RFC7515_X, "y": b64(&[0xab; 31])});
    assert!(matches!(err(&short_y), JwkError::InvalidLength { actual: 31, .. }));
}

#[test]
fn public_keys_must_be_valid_points() {
    let kind = KeyKind::Ed25519PublicKey;
    let weak = |reason| JwkError::InvalidKey {
        error: CryptoError::InvalidKey { kind, reason },
    };
    assert_eq!(
        err(&with(&ed25519(), "x", Some(json!(b64(&[0; 32]))))),
        weak(KeyRejection::WeakKey)
    );
    let mut identity_neg = [0u8; 32];
    identity_neg[0] = 1;
    identity_neg[31] = 0x80;
    assert_eq!(
        err(&with(&ed25519(), "x", Some(json!(b64(&identity_neg))))),
        weak(KeyRejection::NonCanonical)
    );
    // A P-256 point off the curve: y + 1.
    let mut y = URL_SAFE_NO_PAD.decode(RFC7515_Y).unwrap();
    y[31] ^= 1;
    assert_eq!(
        err(&with(&p256(), "y", Some(json!(b64(&y))))),
        JwkError::InvalidKey {
            error: CryptoError::InvalidKey {
                kind: KeyKind::P256PublicKey,
                reason: KeyRejection::InvalidPoint
            }
        }
    );
    // The AdCP vector's Ed25519 bytes with a made-up y are not a P-256 point.
    let ec = json!({"kty": "EC", "crv": "P-256", "x": RFC8037_X, "y": RFC8037_X});
    assert!(matches!(err(&ec), JwkError::InvalidKey { .. }));
}

#[test]
fn private_keys_must_be_valid_and_belong_to_the_public_key() {
    let scalar = |d: &[u8]| err(&with(&p256_private(), "d", Some(json!(b64(d)))));
    let invalid_scalar = JwkError::InvalidPrivateKey {
        error: CryptoError::InvalidKey {
            kind: KeyKind::P256PrivateKey,
            reason: KeyRejection::InvalidScalar,
        },
    };
    assert_eq!(scalar(&[0; 32]), invalid_scalar);
    assert_eq!(scalar(&hex(P256_ORDER_HEX)), invalid_scalar);
    assert_eq!(scalar(&[0xff; 32]), invalid_scalar);
    assert_eq!(scalar(&[1; 32]), JwkError::PrivateKeyMismatch);
    assert_eq!(
        err(&with(&ed25519_private(), "d", Some(json!(b64(&[1; 32]))))),
        JwkError::PrivateKeyMismatch
    );
    // The d of the other curve's example has the right length but the wrong key.
    assert_eq!(
        err(&with(&ed25519_private(), "d", Some(json!(RFC7515_D)))),
        JwkError::PrivateKeyMismatch
    );
    let public = Jwk::from_json_value(&ed25519()).unwrap();
    assert_eq!(public.signing_key().err(), Some(JwkError::MissingPrivateKey));
}

#[test]
fn checks_run_in_the_documented_order() {
    // kty before crv before alg before types before x before y before point before d.
    let everything_wrong = json!({"kty": "RSA", "crv": "nope", "alg": 1, "kid": 1, "x": "!", "d": 1});
    assert_eq!(err(&everything_wrong), JwkError::Unsupported { member: JwkMember::Kty });
    let crv_wrong = json!({"kty": "OKP", "crv": "nope", "alg": 1, "kid": 1, "x": "!"});
    assert_eq!(err(&crv_wrong), JwkError::Unsupported { member: JwkMember::Crv });
    let alg_wrong = json!({"kty": "OKP", "crv": "Ed25519", "alg": "ES256", "kid": 1, "x": "!"});
    assert_eq!(err(&alg_wrong), JwkError::AlgorithmMismatch);
    let kid_wrong = json!({"kty": "OKP", "crv": "Ed25519", "kid": 1, "use": 1, "x": "!"});
    assert_eq!(err(&kid_wrong), invalid(JwkMember::Kid));
    let use_wrong = json!({"kty": "OKP", "crv": "Ed25519", "use": 1, "key_ops": 1, "x": "!"});
    assert_eq!(err(&use_wrong), invalid(JwkMember::Use));
    let x_wrong = json!({"kty": "EC", "crv": "P-256", "x": "!", "d": 1});
    assert!(matches!(
        err(&x_wrong),
        JwkError::InvalidBase64 {
            member: JwkMember::X,
            ..
        }
    ));
    let point_wrong = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(&[0; 32]), "d": 1});
    assert!(matches!(err(&point_wrong), JwkError::InvalidKey { .. }));
}

#[test]
fn jwks_structure_errors() {
    let parse = |v: Value| Jwks::from_json_value(&v).err();
    assert_eq!(parse(json!([])), Some(JwkError::NotAnObject));
    assert_eq!(parse(json!({})), Some(missing(JwkMember::Keys)));
    assert_eq!(parse(json!({"keys": {}})), Some(invalid(JwkMember::Keys)));
    assert_eq!(parse(json!({"keys": [ed25519(), 1]})), Some(invalid(JwkMember::Keys)));
    assert_eq!(parse(json!({"keys": [null]})), Some(invalid(JwkMember::Keys)));
    // Keys without a kid never collide.
    assert_eq!(
        Jwks::from_json_value(&json!({"keys": [ed25519(), ed25519()]}))
            .unwrap()
            .len(),
        2
    );
    // Building a set to publish with a repeated kid is a caller error.
    let dup = Jwk::from_json_value(&with(&ed25519(), "kid", Some(json!("a")))).unwrap();
    assert_eq!(
        Jwks::from_keys([dup.clone(), dup]).err(),
        Some(JwkError::DuplicateKid { index: 1 })
    );
}

/// A `kid` on several entries (spec: a signing JWK's `kid` "MUST NOT
/// collide with any other entry's `kid` regardless of `adcp_use`") makes
/// every entry with it unusable, whatever their order, purposes or
/// usability, and leaves the set and its other kids usable.
#[test]
fn colliding_kids_are_unusable_in_either_order() {
    let purpose = |jwk: &Value, kid: &str, adcp_use: &str| {
        with(&with(jwk, "kid", Some(json!(kid))), "adcp_use", Some(json!(adcp_use)))
    };
    let request = purpose(&ed25519(), "a", "request-signing");
    let governance = purpose(&p256(), "a", "governance-signing");
    let rsa = json!({"kid": "a", "kty": "RSA", "adcp_use": "request-signing"});
    let other = purpose(&p256(), "b", "request-signing");
    for keys in [
        vec![request.clone(), governance.clone(), other.clone()],
        vec![governance.clone(), other.clone(), request.clone()],
        vec![other.clone(), request.clone(), request.clone()],
        vec![rsa.clone(), request.clone(), other.clone()],
        vec![request.clone(), other.clone(), rsa.clone()],
    ] {
        let text = json!({ "keys": keys }).to_string();
        let jwks = Jwks::parse(text.as_bytes()).unwrap();
        assert_eq!(jwks.len(), 3, "{text}");
        assert_eq!(
            jwks.get("a").and_then(JwksEntry::error),
            Some(JwkError::KidCollision),
            "{text}"
        );
        assert!(jwks.key("a").is_none(), "{text}");
        let colliding = jwks.entries().iter().filter(|e| e.kid() == Some("a"));
        assert!(colliding.clone().count() == 2, "{text}");
        for entry in colliding {
            assert_eq!(entry.error(), Some(JwkError::KidCollision), "{text}");
            // Still listed with its members, for diagnostics.
            assert!(entry.member("adcp_use").is_some(), "{text}");
        }
        assert_eq!(jwks.keys().count(), 1, "{text}");
        assert!(jwks.key("b").is_some(), "{text}");
    }
}

#[test]
fn size_and_count_caps() {
    let keys: Vec<Value> = (0..=MAX_JWKS_KEYS)
        .map(|i| with(&ed25519(), "kid", Some(json!(format!("k{i}")))))
        .collect();
    let too_many = json!({ "keys": keys });
    assert_eq!(
        Jwks::from_json_value(&too_many).err(),
        Some(JwkError::TooManyKeys {
            limit: MAX_JWKS_KEYS,
            actual: MAX_JWKS_KEYS + 1
        })
    );
    let text = too_many.to_string();
    assert!(text.len() < MAX_JWKS_LEN);
    assert!(matches!(
        Jwks::parse(text.as_bytes()),
        Err(JwkError::TooManyKeys { .. })
    ));
    let fits = json!({ "keys": &keys[..MAX_JWKS_KEYS] });
    assert_eq!(Jwks::parse(fits.to_string().as_bytes()).unwrap().len(), MAX_JWKS_KEYS);
    let relaxed = JwksLimits {
        max_keys: 1000,
        ..JwksLimits::default()
    };
    assert_eq!(
        Jwks::parse_with_limits(text.as_bytes(), &relaxed).unwrap().len(),
        MAX_JWKS_KEYS + 1
    );

    let padding = "a".repeat(MAX_JWKS_LEN);
    let big = json!({"keys": [], "pad": padding}).to_string();
    assert_eq!(
        Jwks::parse(big.as_bytes()).err(),
        Some(JwkError::TooLarge {
            limit: MAX_JWKS_LEN,
            actual: big.len()
        })
    );
    let big_key = with(&ed25519(), "pad", Some(json!(padding))).to_string();
    assert!(matches!(Jwk::parse(big_key.as_bytes()), Err(JwkError::TooLarge { .. })));
    // Exactly at the cap is accepted.
    let base = json!({"keys": [], "pad": ""}).to_string();
    let at_cap = json!({"keys": [], "pad": "a".repeat(MAX_JWKS_LEN - base.len())}).to_string();
    assert_eq!(at_cap.len(), MAX_JWKS_LEN);
    assert!(Jwks::parse(at_cap.as_bytes()).is_ok());
}

#[test]
fn malformed_json_is_a_json_error() {
    for input in [
        &b""[..],
        b"{",
        b"{\"keys\": []} trailing",
        b"{\"kty\": \"OKP\",}",
        b"\xff\xfe",
        b"{\"kty\": \"\xff\"}",
    ] {
        assert!(matches!(Jwk::parse(input), Err(JwkError::Json { .. })), "{input:?}");
        assert!(matches!(Jwks::parse(input), Err(JwkError::Json { .. })), "{input:?}");
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(Jwks::parse(deep.as_bytes()), Err(JwkError::Json { .. })));
    assert_eq!(Jwk::parse(b"[]").err(), Some(JwkError::NotAnObject));
}

#[test]
fn duplicate_member_names_are_rejected() {
    let jwk = format!(r#"{{"kty":"OKP","crv":"Ed25519","alg":"ES256","alg":"EdDSA","x":"{RFC8037_X}"}}"#);
    assert_eq!(Jwk::parse(jwk.as_bytes()).err(), Some(JwkError::StrictJson));
    let jwks = format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC8037_X}","x":"{RFC8037_X}"}}]}}"#);
    assert_eq!(Jwks::parse(jwks.as_bytes()).err(), Some(JwkError::StrictJson));
    assert_eq!(
        Jwks::parse(br#"{"keys":[],"keys":[]}"#).err(),
        Some(JwkError::StrictJson)
    );
}

#[test]
fn hmac_keys_have_no_jwk_form_here() {
    let secret = SigningKey::hmac_sha256(b"0123456789abcdef0123456789abcdef-test-only").unwrap();
    let unsupported = Some(JwkError::Unsupported { member: JwkMember::Kty });
    assert_eq!(Jwk::from_signing_key(&secret, "h").err(), unsupported);
    assert_eq!(Jwk::with_private(&secret, "h").err(), unsupported);
    let verifier = VerifyingKey::hmac_sha256(b"0123456789abcdef0123456789abcdef-test-only").unwrap();
    assert_eq!(Jwk::from_verifying_key(&verifier, "h").err(), unsupported);
    assert_eq!(Jwk::from_verifying_key(&secret.verifying_key(), "h").err(), unsupported);
}

#[test]
fn errors_display_without_key_material() {
    let errors = [
        JwkError::TooLarge { limit: 1, actual: 2 },
        JwkError::TooManyKeys { limit: 1, actual: 2 },
        JwkError::Json { line: 1, column: 2 },
        JwkError::StrictJson,
        JwkError::NotAnObject,
        missing(JwkMember::Kty),
        invalid(JwkMember::KeyOps),
        JwkError::Unsupported { member: JwkMember::Crv },
        JwkError::AlgorithmMismatch,
        err(&with(&ed25519(), "x", Some(json!(format!("{RFC8037_X}="))))),
        err(&with(&ed25519(), "x", Some(json!(b64(&[1; 31]))))),
        err(&with(&ed25519(), "x", Some(json!(b64(&[0; 32]))))),
        err(&with(&p256_private(), "d", Some(json!(b64(&[0; 32]))))),
        JwkError::PrivateKeyMismatch,
        JwkError::MissingPrivateKey,
        JwkError::DuplicateKid { index: 3 },
        JwkError::KidCollision,
        JwkError::ReservedMember,
        JwkError::Crypto {
            error: CryptoError::KeyExportFailed,
        },
    ];
    for error in errors {
        let text = error.to_string();
        assert!(!text.is_empty());
        assert!(!text.contains(RFC8037_X) && !text.contains(RFC7515_D), "{text}");
        let _ = std::error::Error::source(&error);
    }
    assert_eq!(JwkMember::KeyOps.to_string(), "key_ops");
}

// --------------------------------------------------------------- properties

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            "OKP", "EC", "RSA", "oct", "Ed25519", "P-256", "X25519", "EdDSA", "ES256", "sig", "verify", RFC8037_X,
            RFC8037_D, RFC7515_X, RFC7515_Y, RFC7515_D, "", "=", "AA==",
        ])
        .prop_map(Value::from),
        "[A-Za-z0-9_+/=-]{0,50}".prop_map(Value::from),
        prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| Value::from(b64(&b))),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// JWK-shaped objects: mostly standard member names with plausible values.
fn jwk_like() -> impl Strategy<Value = Value> {
    let name = prop::sample::select(vec![
        "kty",
        "crv",
        "x",
        "y",
        "d",
        "alg",
        "kid",
        "use",
        "key_ops",
        "adcp_use",
        TEST_MEMBER,
    ]);
    prop::collection::vec((name, json_value()), 0..10).prop_map(|members| {
        let mut map = serde_json::Map::new();
        for (name, value) in members {
            map.insert(name.to_owned(), value);
        }
        Value::Object(map)
    })
}

fn check_no_panic(value: &Value) {
    if let Ok(jwk) = Jwk::from_json_value(value) {
        // Anything accepted round-trips and converts.
        assert_eq!(Jwk::from_json_value(&jwk.to_json()).unwrap().to_json(), jwk.to_json());
        let _ = jwk.thumbprint();
        let _ = jwk.signing_key();
        let _ = jwk.clone().with_test_private_member(TEST_MEMBER);
        let _ = format!("{jwk:?}");
    }
    let _ = Jwks::from_json_value(value);
    let _ = Jwks::from_json_value(&json!({ "keys": [value] }));
    let text = value.to_string();
    let _ = Jwk::parse(text.as_bytes());
    let _ = Jwks::parse(text.as_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Jwk::parse(&bytes);
        let _ = Jwks::parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_jwk_like_json(value in jwk_like()) {
        check_no_panic(&value);
    }

    #[test]
    fn parse_never_panics_on_mutated_valid_jwks(
        which in 0usize..4,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let base = [ed25519(), ed25519_private(), p256(), p256_private()][which].clone();
        let mut bytes = json!({ "keys": [base] }).to_string().into_bytes();
        for (index, byte) in flips {
            let i = index.index(bytes.len());
            bytes[i] = byte;
        }
        let _ = Jwks::parse(&bytes);
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            check_no_panic(&value);
            if let Some(key) = value.get("keys").and_then(|k| k.get(0)) {
                check_no_panic(key);
            }
        }
    }

    #[test]
    fn generated_ed25519_keys_round_trip(seed in any::<[u8; 32]>(), kid in "[a-zA-Z0-9._-]{0,20}") {
        let signer = SigningKey::ed25519_from_seed(&seed).unwrap();
        let jwk = Jwk::with_private(&signer, kid.as_str()).unwrap();
        prop_assert_eq!(jwk.to_json()["d"].clone(), json!(b64(&seed)));
        let parsed = Jwk::parse(jwk.to_json().to_string().as_bytes()).unwrap();
        prop_assert_eq!(parsed.kid(), Some(kid.as_str()));
        prop_assert_eq!(parsed.to_json(), jwk.to_json());
        prop_assert_eq!(parsed.signing_key().unwrap().verifying_key(), signer.verifying_key());
        prop_assert_eq!(parsed.thumbprint(), jwk.thumbprint());
    }
}
