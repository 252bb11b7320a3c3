//! `grade_receiver` against our own gateway in webhook mode (the suite's
//! webhook keys trusted, `test-revoked-webhook-2026` revoked, a low
//! per-keyid cap), and against broken receivers.

use crate::support::{accept_everything, options, proxy, serve, suite, Fault};
use adcp_gateway::{Gateway, GatewayConfig, GatewayHandle};
use adcp_grade::{grade_receiver, RateAbuse, ReceiverConfig, Report, Status};
use axum::http::StatusCode;
use axum::Router;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

const AGENT: &str = "https://seller-test-counterparty.example/";
const CAP: usize = 40;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("adcp-grade-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Our gateway in webhook mode per the receiver grader's preconditions,
/// forwarding to an upstream that applies everything.
async fn gateway(suite: &Path, tag: &str) -> GatewayHandle {
    let upstream = serve(Router::new().fallback(|| async { StatusCode::OK })).await;
    let dir = scratch(tag);
    let jwks = dir.join("seller-jwks.json");
    std::fs::copy(suite.join("webhook-signing/keys.json"), &jwks).unwrap();
    let toml = format!(
        "listen = \"127.0.0.1:0\"\nupstream = \"http://{upstream}/events\"\njwks = \"{}\"\njwks_agent = \"{AGENT}\"\nstore = \"sqlite:{}\"\nrevoked_kids = [\"test-revoked-webhook-2026\"]\nreplay_cap_per_keyid = {CAP}\n",
        jwks.display(),
        dir.join("dedup.sqlite").display()
    );
    let config = GatewayConfig::from_toml_str(&toml).unwrap();
    let gateway = Gateway::from_config(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    gateway.serve(listener).unwrap()
}

async fn grade(addr: SocketAddr, suite: &Path, cap: usize) -> Report {
    let mut config = ReceiverConfig::new(format!("http://{addr}/webhooks/adcp"));
    config.agent_url = Some(AGENT.to_owned());
    grade_receiver(&config, &options(suite.to_path_buf(), cap))
        .await
        .unwrap()
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

fn ids(report: &Report, keep: impl Fn(&adcp_grade::CaseResult) -> bool) -> Vec<&str> {
    report.cases.iter().filter(|c| keep(c)).map(|c| c.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_gateway_passes_every_vector_and_the_contract() {
    let Some(suite) = suite() else { return };
    let handle = gateway(&suite, "ok").await;
    let report = grade(handle.local_addr(), &suite, CAP).await;
    assert!(report.is_success(), "{}", show(&report));
    assert_eq!(report.advisory_failed(), 0, "{}", show(&report));
    // Skipped: only what a black box cannot set up, with the reason.
    assert_eq!(
        ids(&report, |c| c.status == Status::Skipped),
        ["negative/019-revocation-stale", "negative/020-key-ops-missing-verify"],
        "{}",
        show(&report)
    );
    assert!(report
        .cases
        .iter()
        .all(|c| c.status != Status::Skipped || !c.reason.is_empty()));
    assert_eq!(
        report.cases.last().map(|c| c.id.as_str()),
        Some("negative/018-rate-abuse")
    );
    for id in ["contract/retry", "contract/changed-payload", "contract/replay"] {
        assert!(
            report.cases.iter().any(|c| c.id == id && c.status == Status::Passed),
            "{id}"
        );
    }
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_accepting_everything_fails_the_negatives_and_the_contract() {
    let Some(suite) = suite() else { return };
    let addr = accept_everything().await;
    let report = grade(addr, &suite, 3).await;
    let mut expected = ids(&report, |c| {
        c.id.starts_with("negative/") && c.status != Status::Skipped
    });
    expected.retain(|id| *id != "negative/018-rate-abuse");
    let failed = report.failed_ids();
    let mut want: Vec<&str> = expected.clone();
    want.extend(["contract/changed-payload", "contract/replay", "negative/018-rate-abuse"]);
    want.sort_unstable();
    let mut got = failed.clone();
    got.sort_unstable();
    assert_eq!(got, want, "{}", show(&report));
    // Size and media type are advisory: reported, not failed.
    assert_eq!(report.advisory_failed(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_error_code_fails_every_negative_but_the_one_it_names() {
    let Some(suite) = suite() else { return };
    let handle = gateway(&suite, "wrong-code").await;
    let addr = proxy(handle.local_addr(), Fault::WrongCode("webhook_signature_invalid")).await;
    let report = grade(addr, &suite, CAP).await;
    let mut want = ids(&report, |c| {
        c.id.starts_with("negative/") && c.status != Status::Skipped && c.expected != "401 webhook_signature_invalid"
    });
    want.push("contract/replay");
    want.sort_unstable();
    let mut got = report.failed_ids();
    got.sort_unstable();
    assert_eq!(got, want, "{}", show(&report));
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_deduplication_fails_the_conflict_and_the_replays() {
    let Some(suite) = suite() else { return };
    let handle = gateway(&suite, "no-dedup").await;
    let addr = proxy(handle.local_addr(), Fault::NoDedup).await;
    let mut options = options(suite.clone(), CAP);
    options.rate_abuse = RateAbuse::Skip;
    let mut config = ReceiverConfig::new(format!("http://{addr}/webhooks/adcp"));
    config.agent_url = Some(AGENT.to_owned());
    let report = grade_receiver(&config, &options).await.unwrap();
    assert_eq!(
        report.failed_ids(),
        [
            "contract/changed-payload",
            "contract/replay",
            "negative/016-replayed-nonce"
        ],
        "{}",
        show(&report)
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_409_on_a_completed_duplicate_fails_exactly_the_retry() {
    let Some(suite) = suite() else { return };
    let handle = gateway(&suite, "conflict").await;
    let addr = proxy(handle.local_addr(), Fault::ConflictOnDuplicate).await;
    let report = grade(addr, &suite, CAP).await;
    assert_eq!(report.failed_ids(), ["contract/retry"], "{}", show(&report));
    handle.shutdown().await.unwrap();
}
