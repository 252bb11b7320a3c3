//! `request_profile`: one request-signing profile per request-mode gateway.
//! A 3.2 gateway and two legacy (3.0/3.1) gateways, each with its own
//! capabilities, run side by side in front of one seller: a request signed
//! in the legacy encoding passes a legacy gateway and is refused by the 3.2
//! one, a 3.2 request the other way round, and each legacy gateway applies
//! the `covers_content_digest` policy its capabilities advertise. The
//! setting comes from TOML, the environment or code; 3.2 is the default.

use crate::request_mode::{send_raw, Answer, Seller};
use crate::support::TempDir;
use adcp_gateway::{ConfigError, Gateway, GatewayConfig, GatewayHandle, GatewayProfile, RequestProfileSetting};
use adcp_sign::{Algorithm, HttpSigner, LegacyDigest, SigningProfile, SoftwareSigner, UnsignedRequest};
use adcp_verify::FixedClock;
use serde_json::json;
use std::sync::Arc;

const NOW: i64 = 1_776_520_800;
const BUYER: &str = "https://buyer.example/";
const URL: &str = "https://seller.example/mcp";

/// The buyer's signer, its clock pinned.
type Signer = HttpSigner<SoftwareSigner, FixedClock>;

/// What a gateway does with a request: forwards it verified, or refuses it
/// with this code.
type Outcome = Result<(), &'static str>;

/// A request-mode gateway from a `GatewayConfig`: the buyer's JWKS, the
/// capabilities advertising `coverage`, `profile` (`None`: the default).
async fn gateway(
    dir: &TempDir,
    name: &str,
    seller: &Seller,
    coverage: &str,
    profile: Option<RequestProfileSetting>,
) -> GatewayHandle {
    let caps = dir.0.join(format!("{name}-caps.json"));
    std::fs::write(
        &caps,
        json!({"supported": true, "covers_content_digest": coverage, "required_for": ["create_media_buy"]}).to_string(),
    )
    .unwrap();
    let mut config = GatewayConfig::new(seller.url());
    config.profile = GatewayProfile::Request;
    config.request_profile = profile;
    config.capabilities = Some(caps);
    config.jwks = Some(dir.0.join("buyer-jwks.json"));
    config.jwks_agent = BUYER.to_owned();
    config.public_url = Some("https://seller.example/".parse().unwrap());
    config.store = "memory:".parse().unwrap();
    config.access_log = false;
    let gateway = Gateway::from_config_with_clock(&config, Some(Arc::new(FixedClock(NOW))))
        .await
        .unwrap();
    gateway
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

/// A signed `tools/call` of `create_media_buy` (`id` in its idempotency
/// key, so that every request has a nonce and body of its own).
async fn sign(signer: &HttpSigner<SoftwareSigner, FixedClock>, id: &str) -> (Vec<(String, String)>, Vec<u8>) {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "create_media_buy", "arguments": {"idempotency_key": id}}});
    let body = adcp_sign::Body::json(&call).unwrap();
    let signed = signer.sign(&UnsignedRequest::post(URL, &body)).await.unwrap();
    let headers = signed
        .headers()
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.clone()))
        .collect();
    (headers, signed.body().unwrap().as_bytes().to_vec())
}

/// `Ok` for a forwarded, verified request; the refusal code otherwise.
fn outcome(answer: &Answer) -> Result<(), String> {
    if answer.status == 200 {
        return Ok(());
    }
    let code = answer.json()["error"].as_str().unwrap_or("?").to_owned();
    answer.check_rejected(&code, 401)?;
    Err(code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_and_a_3_2_gateway_side_by_side_each_verify_their_own_profile_only() {
    let dir = TempDir::new("request-profiles");
    let seller = Seller::start().await;
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "gw-buyer-2026").unwrap();
    std::fs::write(
        dir.0.join("buyer-jwks.json"),
        key.jwks().unwrap().to_public_json().to_string(),
    )
    .unwrap();
    let private = key.private_jwk().unwrap();
    let signer = |profile: SigningProfile| {
        HttpSigner::new(profile, SoftwareSigner::from_jwk(&private).unwrap())
            .unwrap()
            .with_clock(FixedClock(NOW))
    };
    let v3_2 = signer(SigningProfile::request_v3_2());
    let legacy = signer(SigningProfile::request_legacy(LegacyDigest::Cover));
    let legacy_no_digest = signer(SigningProfile::request_legacy(LegacyDigest::Omit));

    let current = gateway(&dir, "current", &seller, "required", None).await;
    let transition = gateway(
        &dir,
        "transition",
        &seller,
        "either",
        Some(RequestProfileSetting::Legacy),
    )
    .await;
    let no_digest = gateway(
        &dir,
        "no-digest",
        &seller,
        "forbidden",
        Some(RequestProfileSetting::Legacy),
    )
    .await;
    let gateways = [
        ("3.2", &current),
        ("legacy either", &transition),
        ("legacy forbidden", &no_digest),
    ];
    // Per signing encoding, the outcome at each gateway in order.
    let cases: [(&str, &Signer, [Outcome; 3]); 3] = [
        (
            "3.2 encoding",
            &v3_2,
            [
                Ok(()),
                Err("request_signature_header_malformed"),
                Err("request_signature_header_malformed"),
            ],
        ),
        (
            "legacy encoding, digest covered",
            &legacy,
            [
                Err("request_signature_header_malformed"),
                Ok(()),
                Err("request_signature_components_unexpected"),
            ],
        ),
        (
            "legacy encoding, no digest",
            &legacy_no_digest,
            [Err("request_signature_header_malformed"), Ok(()), Ok(())],
        ),
    ];
    let mut forwarded = 0;
    for (n, (signed_as, signer, expected)) in cases.iter().enumerate() {
        for (m, ((gateway_name, handle), expected)) in gateways.iter().zip(expected).enumerate() {
            let (headers, body) = sign(signer, &format!("k-{n}-{m}")).await;
            let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
            let got = outcome(&answer);
            assert_eq!(
                got.as_ref().map_err(String::as_str),
                expected.as_ref().map_err(|e| *e),
                "{signed_as} -> {gateway_name} gateway: {answer:?}"
            );
            if got.is_ok() {
                forwarded += 1;
                let seen = seller.seen();
                let last = seen.last().unwrap();
                assert_eq!(last.body, body);
                assert_eq!(last.headers["x-adcp-signature"], "verified");
                assert_eq!(last.headers["x-adcp-verified-keyid"], "gw-buyer-2026");
            }
            assert_eq!(seller.seen().len(), forwarded, "refusals are not forwarded");
        }
    }
    // Each gateway reports its own profile.
    for ((_, handle), name) in gateways.iter().zip(["request-3.2", "request-legacy", "request-legacy"]) {
        assert_eq!(handle.gateway().request_verifier().unwrap().profile().name(), name);
    }
    for (_, handle) in gateways {
        let outcomes = handle.gateway().request_outcomes().unwrap().snapshot();
        assert!(outcomes.contains_key("verified"), "{outcomes:?}");
    }
    current.shutdown().await.unwrap();
    transition.shutdown().await.unwrap();
    no_digest.shutdown().await.unwrap();
}

/// The request-mode settings of `request_mode`'s configuration tests, with
/// the capabilities file.
fn request_toml(extra: &str) -> String {
    crate::request_mode::request_toml(&format!("capabilities = \"caps.json\"\n{extra}"))
}

#[test]
fn the_request_profile_comes_from_toml_or_the_environment_and_is_checked_against_the_capabilities() {
    let dir = TempDir::new("request-profile-config");
    let write = |name: &str, text: &str| std::fs::write(dir.0.join(name), text).unwrap();
    write("buyer-jwks.json", r#"{"keys": []}"#);
    let caps = |coverage: &str| {
        write(
            "caps.json",
            &json!({"request_signing": {"supported": true, "covers_content_digest": coverage}}).to_string(),
        );
    };
    let load = |text: &str| {
        write("gateway.toml", text);
        GatewayConfig::from_toml_file(dir.0.join("gateway.toml")).unwrap()
    };

    // The default: 3.2, which applies "required" only, with a hint.
    caps("required");
    let config = load(&request_toml(""));
    assert_eq!(config.request_profile, None);
    config.validate().unwrap();
    for coverage in ["either", "forbidden"] {
        caps(coverage);
        for config in [
            load(&request_toml("")),
            load(&request_toml("request_profile = \"3.2\"")),
        ] {
            let e = config.validate().unwrap_err();
            assert!(matches!(e, ConfigError::RequestVerifier(_)), "{e:?}");
            assert!(e.to_string().contains("--request-profile legacy"), "{e}");
        }
    }
    // Legacy takes whichever policy is advertised.
    for coverage in ["required", "either", "forbidden"] {
        caps(coverage);
        let config = load(&request_toml("request_profile = \"legacy\""));
        assert_eq!(config.request_profile, Some(RequestProfileSetting::Legacy));
        config.validate().unwrap();
    }
    // It serializes to its TOML key and reads back.
    let text = toml::to_string(&load(&request_toml("request_profile = \"legacy\""))).unwrap();
    assert!(text.contains("request_profile = \"legacy\""), "{text}");
    // Webhook mode refuses it; unknown values are errors naming the flag.
    let webhook = "upstream = \"http://127.0.0.1:9/\"\njwks = \"buyer-jwks.json\"\nrequest_profile = \"3.2\"\n";
    assert!(matches!(
        load(webhook).validate(),
        Err(ConfigError::RequestModeOnly {
            setting: "--request-profile"
        })
    ));
    for bad in ["3.1", "3.0", "legacy3", ""] {
        let e = GatewayConfig::from_toml_str(&format!("request_profile = \"{bad}\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--request-profile must be 3.2 or legacy"), "{e}");
    }

    // The environment.
    let mut config = GatewayConfig::default();
    config
        .apply_env_vars(|name| (name == "ADCP_GATEWAY_REQUEST_PROFILE").then(|| "legacy".into()))
        .unwrap();
    assert_eq!(config.request_profile, Some(RequestProfileSetting::Legacy));
    let e = config
        .apply_env_vars(|name| (name == "ADCP_GATEWAY_REQUEST_PROFILE").then(|| "3.1".into()))
        .unwrap_err();
    assert!(matches!(e, ConfigError::Env { .. }), "{e:?}");
    assert!(e.to_string().contains("3.2 or legacy"), "{e}");
    assert_eq!(config.request_profile, Some(RequestProfileSetting::Legacy), "unchanged");
    assert_eq!(
        "3.2".parse::<RequestProfileSetting>().unwrap(),
        RequestProfileSetting::default()
    );
}
