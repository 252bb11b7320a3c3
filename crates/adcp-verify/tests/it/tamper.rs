//! Property tests: a valid signature never verifies after any single-byte
//! change to a covered component, the signature or the body; the verifier
//! never panics on arbitrary headers and bodies.

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use proptest::prelude::*;
use std::sync::OnceLock;

const NOW: i64 = 1_790_000_000;
const URL: &str = "https://buyer.example.com/adcp/webhook/create_media_buy/op_1?acct=42";

struct Fixture {
    key: SigningKey,
    jwks: serde_json::Value,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let key = SigningKey::generate_ed25519().unwrap();
        let jwk = Jwk::from_signing_key(&key, "k1")
            .unwrap()
            .with_member("adcp_use", serde_json::json!("request-signing"))
            .unwrap();
        Fixture {
            key,
            jwks: serde_json::json!({ "keys": [jwk.to_public_json()] }),
        }
    })
}

/// A signed webhook: (url, headers, body).
fn signed(body: &[u8], nonce: &[u8]) -> (String, Vec<(String, String)>) {
    let f = fixture();
    let digest = ContentDigest::compute(body, &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
    let input = format!(
        "sig1=(\"@method\" \"@target-uri\" \"@authority\" \"content-type\" \"content-digest\");created={NOW};expires={};nonce=\"{}\";keyid=\"k1\";alg=\"ed25519\";tag=\"adcp/webhook-signing/v1\"",
        NOW + 300,
        BinaryEncoding::Base64UrlUnpadded.encode(nonce)
    );
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Content-Digest".to_owned(), digest),
        ("Signature-Input".to_owned(), input),
    ];
    let msg = message(URL, &headers, body);
    let params = SignatureInput::from_message(&msg).unwrap().unwrap();
    let canonical = adcp_canon::canonicalize(URL).unwrap();
    let opts = BaseOptions {
        target_uri: Some(canonical.as_str()),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
    let sig = f.key.sign(base.as_bytes()).unwrap();
    headers.push((
        "Signature".to_owned(),
        format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(sig.as_bytes())),
    ));
    (URL.to_owned(), headers)
}

fn message<'a>(url: &'a str, headers: &'a [(String, String)], body: &'a [u8]) -> Message<'a> {
    let mut msg = Message::request("POST", url);
    for (n, v) in headers {
        msg.push_header(n.as_str(), v.as_str());
    }
    msg.with_body(body)
}

fn verify(url: &str, headers: &[(String, String)], body: &[u8]) -> Result<(), String> {
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&fixture().jwks, "https://seller.example/agent"),
        MemoryReplayStore::webhook(),
        FixedClock(NOW),
    );
    let msg = message(url, headers, body);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(verifier.verify(&msg))
        .map(|_| ())
        .map_err(|e| e.code_str().to_owned())
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    ("[a-z]{1,12}", "[ -~]{0,40}").prop_map(|(k, v)| {
        serde_json::json!({ "idempotency_key": k, "status": "completed", "message": v })
            .to_string()
            .into_bytes()
    })
}

#[test]
fn admissions_reach_the_monitor_only_after_full_verification() {
    use adcp_verify::admission::{AdmissionMonitor, AdmissionThresholds};
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&fixture().jwks, "https://seller.example/agent"),
        MemoryReplayStore::webhook(),
        FixedClock(NOW),
    )
    .with_admission_monitor(AdmissionMonitor::new(
        AdmissionThresholds::tuning_guide_starting_values(),
    ));
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let body = br#"{"idempotency_key":"a","status":"completed"}"#;
    let (url, headers) = signed(body, &[7; 16]);
    rt.block_on(verifier.verify(&message(&url, &headers, body))).unwrap();
    let monitor = verifier.admission_monitor().unwrap();
    assert_eq!(
        monitor
            .known_keyids()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["k1"]
    );
    // A replay is rejected before admission and does not count.
    assert!(rt.block_on(verifier.verify(&message(&url, &headers, body))).is_err());
    assert_eq!(monitor.tracked_keyids(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn untouched_requests_verify(body in body(), nonce in prop::array::uniform16(any::<u8>())) {
        let (url, headers) = signed(&body, &nonce);
        prop_assert_eq!(verify(&url, &headers, &body), Ok(()));
    }

    #[test]
    fn any_body_byte_change_is_rejected(body in body(), nonce in prop::array::uniform16(any::<u8>()), at in any::<prop::sample::Index>(), xor in 1u8..=255) {
        let (url, headers) = signed(&body, &nonce);
        let mut tampered = body.clone();
        let i = at.index(tampered.len());
        tampered[i] ^= xor;
        prop_assert!(verify(&url, &headers, &tampered).is_err());
    }

    #[test]
    fn any_signature_byte_change_is_rejected(body in body(), nonce in prop::array::uniform16(any::<u8>()), at in any::<prop::sample::Index>(), xor in 1u8..=255) {
        let (url, mut headers) = signed(&body, &nonce);
        let sig_header = headers.iter_mut().find(|(n, _)| n == "Signature").unwrap();
        let token = sig_header.1.trim_start_matches("sig1=:").trim_end_matches(':');
        let mut sig = BinaryEncoding::Base64UrlUnpadded.decode(token).unwrap();
        let i = at.index(sig.len());
        sig[i] ^= xor;
        sig_header.1 = format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(&sig));
        prop_assert_eq!(verify(&url, &headers, &body), Err("webhook_signature_invalid".to_owned()));
    }

    #[test]
    fn any_covered_component_change_is_rejected(
        body in body(),
        nonce in prop::array::uniform16(any::<u8>()),
        which in 0usize..3,
        at in any::<prop::sample::Index>(),
        replacement in prop::sample::select(b"abcXYZ019-_.~/?=&%:".to_vec()),
    ) {
        let (url, mut headers) = signed(&body, &nonce);
        let mut url = url;
        let original = adcp_canon::canonicalize(&url).unwrap();
        let change = |s: &mut String, at: prop::sample::Index| {
            let mut bytes = s.clone().into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = replacement;
            *s = String::from_utf8_lossy(&bytes).into_owned();
        };
        match which {
            0 => {
                change(&mut url, at);
                // A change that canonicalizes to the same target is not a
                // change of the covered component.
                prop_assume!(adcp_canon::canonicalize(&url).map(|c| c != original).unwrap_or(true));
            }
            1 => {
                let ct = headers.iter_mut().find(|(n, _)| n == "Content-Type").unwrap();
                let before = ct.1.clone();
                change(&mut ct.1, at);
                prop_assume!(ct.1.trim() != before.trim());
            }
            _ => {
                let cd = headers.iter_mut().find(|(n, _)| n == "Content-Digest").unwrap();
                let before = cd.1.clone();
                change(&mut cd.1, at);
                prop_assume!(cd.1 != before);
            }
        }
        prop_assert!(verify(&url, &headers, &body).is_err());
    }

    #[test]
    fn never_panics_on_arbitrary_headers(
        input in "[ -~]{0,200}",
        sig in "[ -~]{0,120}",
        digest in "[ -~]{0,80}",
        host in "[ -~]{0,40}",
        body in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let headers = vec![
            ("Signature-Input".to_owned(), input),
            ("Signature".to_owned(), sig),
            ("Content-Digest".to_owned(), digest),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Host".to_owned(), host),
        ];
        let _ = verify(URL, &headers, &body);
    }
}
