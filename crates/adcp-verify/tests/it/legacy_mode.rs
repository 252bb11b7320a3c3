//! The webhook mode switch: the registration alone picks the scheme, a
//! delivery carrying any other scheme is `webhook_mode_mismatch` (even when
//! that other scheme's signature is valid), and the dispatcher runs exactly
//! one verifier.

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_verify::legacy::{
    BearerToken, ConfigError, HmacSecrets, SchemeEvidence, SecretSlot, VerifiedWebhook, WebhookAuthMode, WebhookScheme,
};
use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use adcp_verify::{ErrorCode, Step, VerifyError};
use serde_json::json;

const NOW: i64 = 1_790_000_000;
const URL: &str = "https://buyer.example.com/adcp/webhook/create_media_buy/op_1";
const AGENT: &str = "https://seller.example.com/mcp";
const SECRET: &str = "hmac-secret-4c7e1a9d3f6b2e8a5c0d7f3b9e6a1c4d";
const TOKEN: &str = "bearer-token-8b2e5d1a7c4f0e3b9d6a2c5f8e1b4d7a";
const BODY: &[u8] = br#"{"idempotency_key":"whk_1","task_id":"task_1","status":"completed"}"#;

struct Seller {
    key: SigningKey,
    jwks: serde_json::Value,
}

fn seller() -> Seller {
    let key = SigningKey::generate_ed25519().unwrap();
    let jwk = Jwk::from_signing_key(&key, "k1")
        .unwrap()
        .with_member("adcp_use", json!("request-signing"))
        .unwrap();
    Seller {
        key,
        jwks: json!({ "keys": [jwk.to_public_json()] }),
    }
}

type Headers = Vec<(String, String)>;

/// The headers of a valid 9421 webhook signature over `BODY`.
fn rfc9421_headers(seller: &Seller, nonce: u8) -> Headers {
    let digest = ContentDigest::compute(BODY, &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
    let input = format!(
        "sig1=(\"@method\" \"@target-uri\" \"@authority\" \"content-type\" \"content-digest\");created={NOW};expires={};nonce=\"{}\";keyid=\"k1\";alg=\"ed25519\";tag=\"adcp/webhook-signing/v1\"",
        NOW + 300,
        BinaryEncoding::Base64UrlUnpadded.encode(&[nonce; 16])
    );
    let mut headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Content-Digest".to_owned(), digest),
        ("Signature-Input".to_owned(), input),
    ];
    let msg = message(&headers);
    let params = SignatureInput::from_message(&msg).unwrap().unwrap();
    let canonical = adcp_canon::canonicalize(URL).unwrap();
    let opts = BaseOptions {
        target_uri: Some(canonical.as_str()),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
    let sig = seller.key.sign(base.as_bytes()).unwrap();
    headers.push((
        "Signature".to_owned(),
        format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(sig.as_bytes())),
    ));
    headers
}

/// The headers of a valid legacy HMAC signature over `BODY`.
fn hmac_headers() -> Headers {
    let ts = NOW.to_string();
    let mac = SigningKey::hmac_sha256(SECRET.as_bytes())
        .unwrap()
        .sign(&[ts.as_bytes(), b".", BODY].concat())
        .unwrap();
    let hex: String = mac.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
    vec![
        ("X-ADCP-Signature".to_owned(), format!("sha256={hex}")),
        ("X-ADCP-Timestamp".to_owned(), ts),
    ]
}

fn bearer_headers() -> Headers {
    vec![("Authorization".to_owned(), format!("Bearer {TOKEN}"))]
}

fn with_content_type(mut headers: Headers) -> Headers {
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
        headers.insert(0, ("Content-Type".to_owned(), "application/json".to_owned()));
    }
    headers
}

fn message(headers: &[(String, String)]) -> Message<'_> {
    let mut msg = Message::request("POST", URL).with_header("Host", "buyer.example.com");
    for (n, v) in headers {
        msg.push_header(n.as_str(), v.as_str());
    }
    msg.with_body(BODY)
}

fn hmac_mode() -> WebhookAuthMode {
    WebhookAuthMode::from_registration(Some(&json!({"schemes": ["HMAC-SHA256"], "credentials": SECRET}))).unwrap()
}

fn bearer_mode() -> WebhookAuthMode {
    WebhookAuthMode::from_registration(Some(&json!({"schemes": ["Bearer"], "credentials": TOKEN}))).unwrap()
}

fn modes() -> [WebhookAuthMode; 3] {
    [WebhookAuthMode::Rfc9421, hmac_mode(), bearer_mode()]
}

fn verifier(seller: &Seller) -> Verifier<StaticKeyResolver, MemoryReplayStore, FixedClock> {
    Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&seller.jwks, AGENT),
        MemoryReplayStore::webhook(),
        FixedClock(NOW),
    )
}

fn assert_mismatch(e: &VerifyError) {
    assert_eq!(e.code(), ErrorCode::ModeMismatch, "{e}");
    assert_eq!(e.code_str(), "webhook_mode_mismatch");
    assert_eq!(e.step(), Step::new(0));
    assert_eq!(e.code().http_status(), 401);
    assert!(!e.is_retryable());
    assert_eq!(
        e.www_authenticate().as_deref(),
        Some("Signature error=\"webhook_mode_mismatch\"")
    );
}

#[test]
fn registration_selects_the_mode() {
    assert_eq!(
        WebhookAuthMode::from_registration(None).unwrap().scheme(),
        WebhookScheme::Rfc9421
    );
    assert_eq!(
        WebhookAuthMode::from_registration(Some(&json!(null))).unwrap().scheme(),
        WebhookScheme::Rfc9421
    );
    assert_eq!(hmac_mode().scheme(), WebhookScheme::HmacSha256);
    assert_eq!(bearer_mode().scheme(), WebhookScheme::Bearer);
    assert!(!WebhookAuthMode::Rfc9421.is_legacy());
    assert!(hmac_mode().is_legacy() && bearer_mode().is_legacy());
    // Unknown members are ignored.
    let extra = json!({"schemes": ["Bearer"], "credentials": TOKEN, "note": "x"});
    assert!(WebhookAuthMode::from_registration(Some(&extra)).is_ok());
}

#[test]
fn malformed_registrations_are_configuration_errors() {
    let cases = [
        json!({}),
        json!("HMAC-SHA256"),
        json!({"credentials": SECRET}),
        json!({"schemes": "HMAC-SHA256", "credentials": SECRET}),
        json!({"schemes": [], "credentials": SECRET}),
        json!({"schemes": ["HMAC-SHA256", "Bearer"], "credentials": SECRET}),
        json!({"schemes": ["hmac-sha256"], "credentials": SECRET}),
        json!({"schemes": ["bearer"], "credentials": TOKEN}),
        json!({"schemes": ["Basic"], "credentials": TOKEN}),
        json!({"schemes": [1], "credentials": SECRET}),
        json!({"schemes": ["HMAC-SHA256"]}),
        json!({"schemes": ["HMAC-SHA256"], "credentials": null}),
        json!({"schemes": ["HMAC-SHA256"], "credentials": 42}),
    ];
    for case in cases {
        let e = WebhookAuthMode::from_registration(Some(&case)).unwrap_err();
        assert!(matches!(e, ConfigError::InvalidAuthentication(_)), "{case}: {e:?}");
    }
    let short = json!({"schemes": ["HMAC-SHA256"], "credentials": "too-short"});
    assert!(matches!(
        WebhookAuthMode::from_registration(Some(&short)),
        Err(ConfigError::TooShort { actual: 9, .. })
    ));
    let short = json!({"schemes": ["Bearer"], "credentials": "too-short"});
    assert!(matches!(
        WebhookAuthMode::from_registration(Some(&short)),
        Err(ConfigError::TooShort { actual: 9, .. })
    ));
}

#[test]
fn evidence_of_each_scheme() {
    let s = seller();
    let evidence = |h: &Headers| SchemeEvidence::of(&message(h));
    let e = evidence(&rfc9421_headers(&s, 1));
    assert_eq!(e.schemes().collect::<Vec<_>>(), [WebhookScheme::Rfc9421]);
    assert_eq!(
        evidence(&hmac_headers()).schemes().collect::<Vec<_>>(),
        [WebhookScheme::HmacSha256]
    );
    assert_eq!(
        evidence(&bearer_headers()).schemes().collect::<Vec<_>>(),
        [WebhookScheme::Bearer]
    );
    assert!(evidence(&vec![]).is_empty());
    assert_eq!(evidence(&vec![]).to_string(), "none");

    // One header of a pair is enough; names are case-insensitive.
    for (name, scheme) in [
        ("signature", WebhookScheme::Rfc9421),
        ("SIGNATURE-INPUT", WebhookScheme::Rfc9421),
        ("x-adcp-signature", WebhookScheme::HmacSha256),
        ("X-ADCP-TIMESTAMP", WebhookScheme::HmacSha256),
    ] {
        let e = evidence(&vec![(name.to_owned(), "x".to_owned())]);
        assert_eq!(e.schemes().collect::<Vec<_>>(), [scheme], "{name}");
    }
    // Bearer is recognized by its scheme, in any case; other schemes are not evidence.
    for (value, bearer) in [
        ("bearer abc", true),
        ("BEARER abc", true),
        ("  Bearer", true),
        ("Basic dXNlcjpwYXNz", false),
        ("Bearerabc", false),
        ("Signature abc", false),
    ] {
        let e = evidence(&vec![("Authorization".to_owned(), value.to_owned())]);
        assert_eq!(e.contains(WebhookScheme::Bearer), bearer, "{value:?}");
    }

    let all: Headers = [rfc9421_headers(&s, 2), hmac_headers(), bearer_headers()].concat();
    let e = evidence(&all);
    assert_eq!(e.schemes().count(), 3);
    assert_eq!(e.to_string(), "rfc9421+hmac-sha256+bearer");
}

/// Every registered mode × every combination of received schemes: the
/// switch passes exactly when nothing foreign is present.
#[test]
fn mismatch_matrix() {
    let s = seller();
    let parts: [(WebhookScheme, Headers); 3] = [
        (WebhookScheme::Rfc9421, rfc9421_headers(&s, 3)),
        (WebhookScheme::HmacSha256, hmac_headers()),
        (WebhookScheme::Bearer, bearer_headers()),
    ];
    let mut checked = 0;
    for mode in modes() {
        for mask in 0u8..8 {
            let received: Vec<WebhookScheme> = (0..3).filter(|i| mask & (1 << i) != 0).map(|i| parts[i].0).collect();
            let headers: Headers = (0..3)
                .filter(|i| mask & (1 << i) != 0)
                .flat_map(|i| parts[i].1.clone())
                .collect();
            let msg = message(&headers);
            let foreign = received.iter().any(|s| *s != mode.scheme());
            match mode.check_scheme(&msg) {
                Ok(()) => assert!(!foreign, "{:?} accepted {received:?}", mode.scheme()),
                Err(e) => {
                    assert!(foreign, "{:?} refused {received:?}", mode.scheme());
                    assert_mismatch(&e);
                    assert!(e.detail().contains(mode.scheme().as_str()), "{}", e.detail());
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 24);
}

#[tokio::test]
async fn each_mode_verifies_its_own_scheme() {
    let s = seller();
    let v = verifier(&s);
    let clock = FixedClock(NOW);

    let h = rfc9421_headers(&s, 4);
    match WebhookAuthMode::Rfc9421.verify(&message(&h), &v, &clock).await.unwrap() {
        VerifiedWebhook::Rfc9421(signer) => assert_eq!(signer.agent_url, AGENT),
        other => panic!("{other:?}"),
    }

    let h = with_content_type(hmac_headers());
    let verified = hmac_mode().verify(&message(&h), &v, &clock).await.unwrap();
    assert_eq!(verified.scheme(), WebhookScheme::HmacSha256);
    let VerifiedWebhook::HmacSha256(hmac) = verified else {
        panic!()
    };
    assert_eq!((hmac.timestamp, hmac.secret), (NOW, SecretSlot::Current));

    let h = with_content_type(bearer_headers());
    assert_eq!(
        bearer_mode().verify(&message(&h), &v, &clock).await.unwrap(),
        VerifiedWebhook::Bearer
    );
}

/// The downgrade/injection cases: a valid signature of the wrong scheme is
/// refused before any verification (a 9421 signature is not even looked
/// at, so its nonce is not burned).
#[tokio::test]
async fn valid_foreign_signatures_are_mode_mismatches() {
    let s = seller();
    let v = verifier(&s);
    let clock = FixedClock(NOW);

    // 9421-signed webhook to an HMAC (or Bearer) registration.
    let h = rfc9421_headers(&s, 5);
    for mode in [hmac_mode(), bearer_mode()] {
        assert_mismatch(&mode.verify(&message(&h), &v, &clock).await.unwrap_err());
    }
    assert!(v.replay_store().is_empty(), "the 9421 verifier must not have run");
    // It was valid all along.
    assert!(WebhookAuthMode::Rfc9421.verify(&message(&h), &v, &clock).await.is_ok());

    // HMAC-signed (or Bearer) webhook to a 9421 registration.
    for h in [with_content_type(hmac_headers()), with_content_type(bearer_headers())] {
        assert_mismatch(
            &WebhookAuthMode::Rfc9421
                .verify(&message(&h), &v, &clock)
                .await
                .unwrap_err(),
        );
    }
    // HMAC to Bearer and Bearer to HMAC.
    let h = with_content_type(hmac_headers());
    assert_mismatch(&bearer_mode().verify(&message(&h), &v, &clock).await.unwrap_err());
    let h = with_content_type(bearer_headers());
    assert_mismatch(&hmac_mode().verify(&message(&h), &v, &clock).await.unwrap_err());

    // Signed both ways (each signature valid): refused under every mode.
    let both: Headers = [rfc9421_headers(&s, 6), hmac_headers()].concat();
    for mode in modes() {
        assert_mismatch(&mode.verify(&message(&both), &v, &clock).await.unwrap_err());
    }
}

/// No credentials at all is not a mismatch: the registered scheme's own
/// verifier rejects the missing headers.
#[tokio::test]
async fn unauthenticated_webhooks_fail_in_the_registered_verifier() {
    let s = seller();
    let v = verifier(&s);
    let clock = FixedClock(NOW);
    let h = with_content_type(vec![]);
    for mode in modes() {
        mode.check_scheme(&message(&h)).unwrap();
        let e = mode.verify(&message(&h), &v, &clock).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::HeaderMalformed, "{:?}: {e}", mode.scheme());
        assert_eq!(e.step(), Step::new(1));
    }
    // An unrelated Authorization scheme is not Bearer evidence either.
    let h = with_content_type(vec![("Authorization".to_owned(), "Basic dXNlcjpwYXNz".to_owned())]);
    assert!(hmac_mode().check_scheme(&message(&h)).is_ok());
    let e = bearer_mode().verify(&message(&h), &v, &clock).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::HeaderMalformed);
}

#[tokio::test]
async fn registered_scheme_failures_keep_their_codes() {
    let s = seller();
    let v = verifier(&s);
    // HMAC under the right mode but outside the window.
    let h = with_content_type(hmac_headers());
    let e = hmac_mode()
        .verify(&message(&h), &v, &FixedClock(NOW + 301))
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "webhook_signature_window_invalid");
    // HMAC registered with another secret.
    let other = WebhookAuthMode::HmacSha256 {
        secrets: HmacSecrets::new("another-secret-0a1b2c3d4e5f6a7b8c9d0e1f2a3b").unwrap(),
    };
    let e = other.verify(&message(&h), &v, &FixedClock(NOW)).await.unwrap_err();
    assert_eq!(e.code_str(), "webhook_signature_invalid");
    // Bearer registered with another token.
    let other = WebhookAuthMode::Bearer {
        token: BearerToken::new("another-token-0a1b2c3d4e5f6a7b8c9d0e1f2a3b").unwrap(),
    };
    let h = with_content_type(bearer_headers());
    let e = other.verify(&message(&h), &v, &FixedClock(NOW)).await.unwrap_err();
    assert_eq!(e.code_str(), "webhook_signature_invalid");
}

#[test]
fn debug_redacts_credentials() {
    for mode in [hmac_mode(), bearer_mode()] {
        let debug = format!("{mode:?}");
        assert!(!debug.contains(SECRET) && !debug.contains(TOKEN), "{debug}");
    }
}
