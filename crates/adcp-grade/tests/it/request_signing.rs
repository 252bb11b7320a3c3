//! `grade_request_signing` against `adcp_request::RequestVerifierLayer` and
//! our gateway in request mode,
//! configured per the signed-requests test kit, and against broken
//! endpoints.

use crate::support::{accept_everything, options, proxy, serve, suite, Fault};
use adcp_grade::{grade_request_signing, RateAbuse, Report, RequestSigningConfig, Status};
use adcp_grade::{Transport, VectorProfile};
use adcp_request::{RequestVerifier, RequestVerifierLayer};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{DigestCoverage, MemoryReplayStore, Profile, ReplayLimits, StaticKeyResolver};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// The per-keyid cap of the graded verifier (and the grader's target):
/// above the positives' acceptances, low enough to grade quickly.
const CAP: usize = 40;

fn capability() -> serde_json::Value {
    json!({
        "supported": true,
        "covers_content_digest": "required",
        "required_for": ["create_media_buy"],
        "protocol_methods_required_for": ["tasks/cancel"]
    })
}

/// A seller per the kit: the suite's request-signing keys trusted,
/// `test-revoked-2026` revoked, a per-keyid cap of [`CAP`].
async fn seller(suite: &Path) -> SocketAddr {
    seller_with(suite, capability(), None).await
}

/// [`seller`] advertising `capability` (also answered to an unsigned
/// `get_adcp_capabilities`), under `profile` (default 3.2).
async fn seller_with(suite: &Path, capability: serde_json::Value, profile: Option<Profile>) -> SocketAddr {
    let keys = adcp_vectors::load_json(suite, "request-signing/keys.json").unwrap();
    let resolver = StaticKeyResolver::new()
        .with_jwks(&keys, "https://buyer-test-counterparty.example/")
        .revoke("test-revoked-2026");
    let limits = ReplayLimits {
        per_keyid_cap: CAP,
        ..ReplayLimits::request()
    };
    let mut builder = RequestVerifier::builder(
        Arc::new(resolver),
        Arc::new(MemoryReplayStore::new(limits)),
        VerifierCapability::from_json(&capability).unwrap(),
    )
    .scheme("http");
    if let Some(profile) = profile {
        builder = builder.profile(profile);
    }
    let verifier = builder.build().unwrap();
    let document = json!({"adcp": {"major_versions": [3]}, "request_signing": capability});
    let app = Router::new()
        .route(
            "/adcp/get_adcp_capabilities",
            post(move || {
                let document = document.clone();
                async move { axum::Json(document) }
            }),
        )
        .fallback(|| async { StatusCode::OK })
        .layer(RequestVerifierLayer::new(verifier));
    serve(app).await
}

async fn grade(addr: SocketAddr, suite: &Path, tweak: impl FnOnce(&mut adcp_grade::GradeOptions)) -> Report {
    let mut config = RequestSigningConfig::new(format!("http://{addr}/"));
    config.capabilities = Some(capability());
    let mut options = options(suite.to_path_buf(), CAP);
    tweak(&mut options);
    grade_request_signing(&config, &options).await.unwrap()
}

fn show(report: &Report) -> String {
    report
        .cases
        .iter()
        .map(|c| {
            format!(
                "{:?} {} expected {} got {} {}",
                c.status, c.id, c.expected, c.got, c.reason
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_request_verifier_passes_every_vector() {
    let Some(suite) = suite() else { return };
    let addr = seller(&suite).await;
    let report = grade(addr, &suite, |_| {}).await;
    assert!(report.is_success(), "{}", show(&report));
    // Skips only with reasons, and only for what the capability lacks.
    for case in report.cases.iter().filter(|c| c.status == Status::Skipped) {
        assert!(!case.reason.is_empty(), "{}", case.id);
    }
    assert!(report.passed() >= 40, "{}", show(&report));
    let stateful = [
        "negative/016-replayed-nonce",
        "negative/017-key-revoked",
        "negative/020-rate-abuse",
    ];
    let tail: Vec<&str> = report.cases.iter().rev().take(3).rev().map(|c| c.id.as_str()).collect();
    assert_eq!(tail, stateful, "stateful vectors run last");
    assert!(report
        .cases
        .iter()
        .all(|c| c.status == Status::Passed || !stateful.contains(&c.id.as_str())));
    assert_eq!(
        report.summary_line(),
        format!("{} passed, 0 failed, {} skipped", report.passed(), report.skipped())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_accepting_everything_fails_every_negative() {
    let Some(suite) = suite() else { return };
    let addr = accept_everything().await;
    let report = grade(addr, &suite, |o| o.rate_abuse = RateAbuse::Cap(3)).await;
    let failed = report.failed_ids();
    let negatives: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.id.starts_with("negative/") && c.status != Status::Skipped)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(failed, negatives, "{}", show(&report));
    assert!(!failed.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_error_code_fails_every_negative_but_the_one_it_names() {
    let Some(suite) = suite() else { return };
    let addr = proxy(seller(&suite).await, Fault::WrongCode("request_signature_invalid")).await;
    let report = grade(addr, &suite, |_| {}).await;
    let negatives: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| {
            c.id.starts_with("negative/")
                && c.status != Status::Skipped
                && c.expected != "401 request_signature_invalid"
                // Refused before any signature check: no challenge to rewrite.
                && !c.expected.contains("request_body_malformed")
        })
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(report.failed_ids(), negatives, "{}", show(&report));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_replay_detection_fails_exactly_the_replay_vector() {
    let Some(suite) = suite() else { return };
    let addr = proxy(seller(&suite).await, Fault::NoDedup).await;
    let report = grade(addr, &suite, |o| o.rate_abuse = RateAbuse::Skip).await;
    assert_eq!(
        report.failed_ids(),
        ["negative/016-replayed-nonce"],
        "{}",
        show(&report)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capability_is_asked_of_the_agent_when_not_given() {
    let Some(suite) = suite() else { return };
    let addr = seller(&suite).await;
    let config = RequestSigningConfig::new(format!("http://{addr}/"));
    let report = grade_request_signing(&config, &options(suite.clone(), CAP))
        .await
        .unwrap();
    assert!(report.is_success(), "{}", show(&report));
    assert_eq!(report.skipped(), 1, "{}", show(&report));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_every_vector_is_a_tools_call_to_the_mount() {
    let Some(suite) = suite() else { return };
    let addr = seller(&suite).await;
    let mut config = RequestSigningConfig::new(format!("http://{addr}/mcp"));
    config.capabilities = Some(capability());
    config.transport = Transport::Mcp;
    let report = grade_request_signing(&config, &options(suite.clone(), CAP))
        .await
        .unwrap();
    assert!(report.is_success(), "{}", show(&report));
    assert!(report.passed() >= 40, "{}", show(&report));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_verifier_passes_the_root_vectors_it_can_advertise() {
    let Some(suite) = suite() else { return };
    let legacy = json!({
        "supported": true,
        "covers_content_digest": "either",
        "required_for": ["create_media_buy"],
        "protocol_methods_required_for": ["tasks/cancel"]
    });
    let addr = seller_with(
        &suite,
        legacy.clone(),
        Some(Profile::request_legacy(DigestCoverage::Either)),
    )
    .await;
    let mut config = RequestSigningConfig::new(format!("http://{addr}/"));
    config.capabilities = Some(legacy);
    config.profile = VectorProfile::Legacy;
    let report = grade_request_signing(&config, &options(suite.clone(), CAP))
        .await
        .unwrap();
    assert!(report.is_success(), "{}", show(&report));
    assert!(report.passed() >= 30, "{}", show(&report));
    // The root vectors for the digest postures the agent does not advertise
    // (`required`, `forbidden`) are skipped, saying so.
    for case in report.cases.iter().filter(|c| c.status == Status::Skipped) {
        assert!(
            case.reason.contains("covers_content_digest") || case.reason.contains("jwks_override"),
            "{}: {}",
            case.id,
            case.reason
        );
    }
}

/// Our gateway in request mode per the kit (the suite's request-signing
/// keys trusted, `test-revoked-2026` revoked, a per-keyid cap of [`CAP`]),
/// in front of an upstream that answers everything `200`.
async fn gateway(suite: &Path) -> adcp_gateway::GatewayHandle {
    let upstream = serve(Router::new().fallback(|| async { StatusCode::OK })).await;
    let dir = std::env::temp_dir().join(format!("adcp-grade-request-gateway-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let jwks = dir.join("buyer-jwks.json");
    std::fs::copy(suite.join("request-signing/keys.json"), &jwks).unwrap();
    let capabilities = dir.join("capabilities.json");
    std::fs::write(
        &capabilities,
        json!({"adcp": {"major_versions": [3]}, "request_signing": capability()}).to_string(),
    )
    .unwrap();
    let toml = format!(
        "profile = \"request\"\nlisten = \"127.0.0.1:0\"\nupstream = \"http://{upstream}\"\ncapabilities = \"{}\"\njwks = \"{}\"\njwks_agent = \"https://buyer-test-counterparty.example/\"\nstore = \"sqlite:{}\"\nrevoked_kids = [\"test-revoked-2026\"]\nreplay_cap_per_keyid = {CAP}\n",
        capabilities.display(),
        jwks.display(),
        dir.join("replay.sqlite").display()
    );
    let config = adcp_gateway::GatewayConfig::from_toml_str(&toml).unwrap();
    let gateway = adcp_gateway::Gateway::from_config(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    gateway.serve(listener).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_gateway_in_request_mode_passes_every_vector() {
    let Some(suite) = suite() else { return };
    let handle = gateway(&suite).await;
    let report = grade(handle.local_addr(), &suite, |_| {}).await;
    assert!(report.is_success(), "{}", show(&report));
    for case in report.cases.iter().filter(|c| c.status == Status::Skipped) {
        assert!(!case.reason.is_empty(), "{}", case.id);
    }
    assert!(report.passed() >= 40, "{}", show(&report));
    assert_eq!(report.failed(), 0, "{}", show(&report));
}
