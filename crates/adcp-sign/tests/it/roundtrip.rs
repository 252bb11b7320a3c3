//! Sign → verify round trips through `adcp-verify`, over generated URLs
//! (IDN hosts, default and explicit ports, dot segments, percent-encoding,
//! queries, fragments), both algorithms and every profile.

use std::sync::OnceLock;

use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_sign::{
    Algorithm, Body, FixedClock, HttpSigner, LegacyDigest, SignedRequest, SigningProfile, SoftwareSigner,
    UnsignedRequest, WebhookEvent,
};
use adcp_verify::FixedClock as VerifyClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use adcp_verify::{DigestCoverage, Profile};
use proptest::prelude::*;

const NOW: i64 = 1_776_520_800;

/// One Ed25519 and one ES256 key, and the JWKS publishing both.
fn keys() -> &'static (Vec<SoftwareSigner>, serde_json::Value) {
    static KEYS: OnceLock<(Vec<SoftwareSigner>, serde_json::Value)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let signers = vec![
            SoftwareSigner::generate(Algorithm::Ed25519, "rt-ed25519").unwrap(),
            SoftwareSigner::generate(Algorithm::EcdsaP256Sha256, "rt-es256").unwrap(),
        ];
        let keys: Vec<serde_json::Value> = signers
            .iter()
            .map(|s| s.public_jwk().unwrap().to_public_json())
            .collect();
        (signers, serde_json::json!({ "keys": keys }))
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

/// Verifies `signed` as a receiver would: the URL it was sent to, a `Host`
/// header from that URL, the headers and the raw body.
fn verify(rt: &tokio::runtime::Runtime, signed: &SignedRequest, profile: Profile) -> Result<String, String> {
    let target = adcp_canon::canonicalize_received(signed.url()).map_err(|e| e.to_string())?;
    let mut msg = Message::request(signed.method(), signed.url()).with_header("Host", target.authority());
    for (name, value) in signed.headers() {
        msg.push_header(*name, value.as_str());
    }
    if let Some(body) = signed.body() {
        msg = msg.with_body(body.as_bytes());
    }
    let store = if profile.is_webhook() {
        MemoryReplayStore::webhook()
    } else {
        MemoryReplayStore::request()
    };
    let resolver = StaticKeyResolver::new().with_jwks(&keys().1, "https://seller.example.com");
    let verifier = Verifier::new(profile, resolver, store, VerifyClock(NOW));
    rt.block_on(verifier.verify(&msg))
        .map(|v| v.target_uri)
        .map_err(|e| format!("{} at step {}: {}", e.code_str(), e.step(), e.detail()))
}

/// The base `adcp_sigbase::signature_base` (the general RFC 9421
/// implementation, the reference) builds from what was emitted.
fn reference_base(signed: &SignedRequest) -> Vec<u8> {
    let mut msg = Message::request(signed.method(), signed.url());
    for (name, value) in signed.headers() {
        msg.push_header(*name, value.as_str());
    }
    let input = SignatureInput::from_message(&msg).unwrap().unwrap();
    let target = adcp_canon::canonicalize_received(signed.url()).unwrap();
    let options = BaseOptions {
        target_uri: Some(target.as_str()),
        authority: Some(target.authority()),
        ..BaseOptions::default()
    };
    signature_base(&msg, input.require("sig1").unwrap(), &options)
        .unwrap()
        .into_bytes()
}

fn url() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![Just("https"), Just("http"), Just("HTTPS")];
    let host = prop_oneof![
        Just("buyer.example.com"),
        Just("Buyer.Example.COM"),
        Just("bücher.example"),
        Just("xn--bcher-kva.example"),
        Just("MÜNCHEN.de"),
        Just("例え.jp"),
        Just("example.com."),
        Just("127.0.0.1"),
        Just("[2001:DB8::1]"),
    ];
    let port = prop_oneof![Just(""), Just(":443"), Just(":80"), Just(":8443"), Just(":")];
    let segment = prop_oneof![
        "[a-z0-9_~-]{1,6}",
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("%7e".to_owned()),
        Just("%2f".to_owned()),
        Just("%e2%98%83".to_owned()),
        Just("caf%C3%A9".to_owned()),
        Just("café".to_owned()),
        Just("a+b".to_owned()),
        Just(String::new()),
    ];
    let query = prop_oneof![
        Just(String::new()),
        Just("?".to_owned()),
        Just("?b=2&a=1&c=3".to_owned()),
        Just("?x=%7e&y=+&z=%2F".to_owned()),
        Just("?q=caf%c3%a9&q=2".to_owned()),
        "\\?[a-z]{1,4}=[a-z0-9]{0,4}",
    ];
    let fragment = prop_oneof![Just(""), Just("#frag")];
    (
        scheme,
        host,
        port,
        prop::collection::vec(segment, 0..5),
        query,
        fragment,
    )
        .prop_map(|(scheme, host, port, segments, query, fragment)| {
            let mut url = format!("{scheme}://{host}{port}");
            for s in segments {
                url.push('/');
                url.push_str(&s);
            }
            url.push_str(&query);
            url.push_str(fragment);
            url
        })
}

fn payload() -> impl Strategy<Value = serde_json::Value> {
    (
        "[a-z_]{1,12}",
        "[ -~]{0,40}",
        any::<i32>(),
        prop::collection::vec("[a-zA-Z0-9 é€😀\\\\\"]{0,8}", 0..4),
    )
        .prop_map(|(task, status, n, items)| {
            serde_json::json!({"task_id": task, "status": status, "n": n, "items": items, "nested": {"ok": true}})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn webhooks_signed_here_verify(url in url(), payload in payload(), es256 in any::<bool>()) {
        let rt = runtime();
        let key = &keys().0[usize::from(es256)];
        let expected = adcp_canon::canonicalize(&url).unwrap();
        let event = WebhookEvent::new(&payload).unwrap();
        let signer = HttpSigner::webhook(key).unwrap().with_clock(FixedClock(NOW));
        let signed = rt.block_on(signer.sign_webhook(&url, &event)).unwrap();
        prop_assert_eq!(signed.url(), expected.as_str());
        prop_assert_eq!(signed.body(), Some(event.body()));
        prop_assert_eq!(reference_base(&signed), signed.signature_base());
        let verified = verify(&rt, &signed, Profile::webhook_v1());
        prop_assert_eq!(verified.as_deref(), Ok(expected.as_str()), "{}", url);
    }

    #[test]
    fn requests_signed_here_verify(
        url in url(),
        payload in prop::option::of(payload()),
        es256 in any::<bool>(),
        legacy in any::<bool>(),
    ) {
        let rt = runtime();
        let key = &keys().0[usize::from(es256)];
        let (profile, verify_profile) = if legacy {
            (SigningProfile::request_legacy(LegacyDigest::Cover), Profile::request_legacy(DigestCoverage::Required))
        } else {
            (SigningProfile::request_v3_2(), Profile::request_v3_2())
        };
        let signer = HttpSigner::new(profile, key).unwrap().with_clock(FixedClock(NOW));
        let body = payload.map(|p| Body::json(&p).unwrap());
        let request = match &body {
            Some(body) => UnsignedRequest::post(&url, body),
            None => UnsignedRequest::new("GET", &url),
        };
        let signed = rt.block_on(signer.sign(&request)).unwrap();
        let covered = signed.header("Signature-Input").unwrap().to_owned();
        prop_assert_eq!(covered.contains("\"content-digest\""), body.is_some());
        prop_assert_eq!(covered.contains("\"content-type\""), body.is_some());
        prop_assert_eq!(reference_base(&signed), signed.signature_base());
        let expected = adcp_canon::canonicalize(&url).unwrap();
        let verified = verify(&rt, &signed, verify_profile);
        prop_assert_eq!(verified.as_deref(), Ok(expected.as_str()), "{}", url);
    }
}

/// A signer with any printable `keyid`, for base comparisons (its output
/// is a fixed 64 bytes: nothing verifies it).
struct AnyKeyId(String);

impl adcp_sign::Signer for AnyKeyId {
    fn key_id(&self) -> &str {
        &self.0
    }
    fn algorithm(&self) -> Algorithm {
        Algorithm::EcdsaP256Sha256
    }
    async fn sign(&self, _message: &[u8]) -> Result<Vec<u8>, adcp_sign::SignerError> {
        Ok(vec![7; 64])
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bases_are_the_bytes_adcp_sigbase_builds(
        url in url(),
        keyid in "[ -~]{1,40}",
        content_type in prop_oneof![
            Just("application/json"),
            Just("application/json; charset=utf-8"),
            Just("application/vnd.adcp+json;v=\"3,2\""),
            Just("text/plain;\tq=1"),
        ],
        method in prop_oneof![Just("POST"), Just("PUT"), Just("GET"), Just("M-SEARCH")],
        with_body in any::<bool>(),
        profile in 0..4_u8,
        created in 0..4_000_000_000_i64,
        validity in 1..=300_i64,
    ) {
        let rt = runtime();
        let profile = match profile {
            0 => SigningProfile::webhook_v1(),
            1 => SigningProfile::request_v3_2(),
            2 => SigningProfile::request_legacy(LegacyDigest::Cover),
            _ => SigningProfile::request_legacy(LegacyDigest::Omit),
        };
        let signer = HttpSigner::new(profile, AnyKeyId(keyid)).unwrap().with_clock(FixedClock(created));
        let signer = signer.with_validity(validity).unwrap();
        let body = Body::from_json_bytes(r#"{"a":[1,2,{"b":null}]}"#).unwrap();
        let mut request = UnsignedRequest::new(method, &url);
        if with_body || profile.requires_body() {
            request = request.with_body(&body).with_content_type(content_type);
        }
        let signed = rt.block_on(signer.sign(&request)).unwrap();
        prop_assert_eq!(reference_base(&signed), signed.signature_base());
        prop_assert_eq!(signed.expires() - signed.created(), validity);
    }
}

#[test]
fn a_signature_for_one_profile_does_not_verify_under_another() {
    let rt = runtime();
    let key = &keys().0[0];
    let body = Body::json(&serde_json::json!({"idempotency_key": "whk_01HW9D3H8FZP2N6R8T0V4X6Z9B"})).unwrap();
    let url = "https://buyer.example.com/hook";
    let sign = |profile| {
        let signer = HttpSigner::new(profile, key).unwrap().with_clock(FixedClock(NOW));
        rt.block_on(signer.sign(&UnsignedRequest::post(url, &body))).unwrap()
    };
    let webhook = sign(SigningProfile::webhook_v1());
    let request = sign(SigningProfile::request_v3_2());
    assert!(verify(&rt, &webhook, Profile::webhook_v1()).is_ok());
    assert!(verify(&rt, &request, Profile::request_v3_2()).is_ok());
    assert!(verify(&rt, &webhook, Profile::request_v3_2())
        .unwrap_err()
        .starts_with("request_signature_header_malformed"));
    assert!(verify(&rt, &request, Profile::webhook_v1())
        .unwrap_err()
        .starts_with("webhook_signature_header_malformed"));
    // A legacy signature is refused by a 3.2 endpoint, as it must be.
    let legacy = sign(SigningProfile::request_legacy(LegacyDigest::Cover));
    assert!(verify(&rt, &legacy, Profile::request_v3_2()).is_err());
    assert!(verify(&rt, &legacy, Profile::request_legacy(DigestCoverage::Required)).is_ok());
    // An `Omit` legacy signature suits a `forbidden` endpoint only.
    let omit = sign(SigningProfile::request_legacy(LegacyDigest::Omit));
    assert!(verify(&rt, &omit, Profile::request_legacy(DigestCoverage::Forbidden)).is_ok());
    assert!(verify(&rt, &omit, Profile::request_legacy(DigestCoverage::Required))
        .unwrap_err()
        .starts_with("request_signature_components_incomplete"));
}

#[test]
fn tampering_after_signing_is_detected() {
    let rt = runtime();
    let key = &keys().0[1];
    let event = WebhookEvent::new(&serde_json::json!({"status": "approved"})).unwrap();
    let signer = HttpSigner::webhook(key).unwrap().with_clock(FixedClock(NOW));
    let signed = rt
        .block_on(signer.sign_webhook("https://buyer.example.com/hook", &event))
        .unwrap();
    let tampered = Body::from_json_bytes(event.body().as_str().replace("approved", "rejected")).unwrap();
    let mut msg = Message::request("POST", signed.url());
    for (name, value) in signed.headers() {
        msg.push_header(*name, value.as_str());
    }
    let msg = msg.with_body(tampered.as_bytes());
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&keys().1, "https://seller.example.com"),
        MemoryReplayStore::webhook(),
        VerifyClock(NOW),
    );
    let err = rt.block_on(verifier.verify(&msg)).unwrap_err();
    assert_eq!(err.code_str(), "webhook_signature_digest_mismatch");
}
