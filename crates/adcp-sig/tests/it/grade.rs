//! `adcp-sig grade`: exit codes (0 all graded passed, 1 a failure, 2
//! usage), the closing line, the `--json` report, and the refusal of plain
//! `http` without `--allow-http`.

use crate::support::{adcp_sig, adcp_sig_async, s, stderr, stdout};
use adcp_request::{RequestVerifier, RequestVerifierLayer};
use adcp_sign::{Algorithm, SoftwareSigner};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{MemoryReplayStore, StaticKeyResolver};
use axum::http::StatusCode;
use axum::Router;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn dir(tag: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("grade_cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A private JWK file and the agent's published JWKS file for it.
fn key_files(dir: &Path, kid: &str) -> (PathBuf, PathBuf) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let private = dir.join(format!("{kid}.jwk"));
    let jwks = dir.join(format!("{kid}.jwks.json"));
    std::fs::write(&private, key.private_jwk().unwrap().to_json().to_string()).unwrap();
    std::fs::write(&jwks, key.jwks().unwrap().to_public_json().to_string()).unwrap();
    (private, jwks)
}

fn closing_line(out: &std::process::Output) -> String {
    stdout(out).lines().last().unwrap_or_default().to_owned()
}

#[test]
fn a_matching_signer_exits_0_with_the_closing_line() {
    let d = dir("signer-ok");
    let (private, jwks) = key_files(&d, "agent-k1");
    let out = adcp_sig(&["grade", "signer", "--key-file", s(&private), "--jwks", s(&jwks)]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(closing_line(&out), "2 passed, 0 failed, 0 skipped");
    assert!(stdout(&out).contains("PASS signer/request"));
}

#[test]
fn a_wrong_key_exits_1_with_the_code_and_the_preconditions() {
    let d = dir("signer-wrong");
    let (_, jwks) = key_files(&d, "agent-k1");
    let other = dir("signer-wrong-other");
    let (private, _) = key_files(&other, "agent-k1");
    let out = adcp_sig(&["grade", "signer", "--key-file", s(&private), "--jwks", s(&jwks)]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("FAIL signer/request"), "{text}");
    assert!(text.contains("request_signature_invalid"), "{text}");
    assert!(text.contains("webhook_signature_invalid"), "{text}");
    assert!(text.contains("assumes the endpoint was configured to"), "{text}");
    assert_eq!(closing_line(&out), "0 passed, 2 failed, 0 skipped");
}

#[test]
fn json_prints_the_whole_report() {
    let d = dir("signer-json");
    let (private, jwks) = key_files(&d, "agent-k1");
    let out = adcp_sig(&[
        "grade",
        "signer",
        "--key-file",
        s(&private),
        "--jwks",
        s(&jwks),
        "--only",
        "signer/webhook",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["grader"], "signer");
    assert_eq!(report["passed"], 1);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["skipped"], 0);
    assert_eq!(report["summary"], "1 passed, 0 failed, 0 skipped");
    assert!(report["preconditions"].as_array().is_some_and(|p| !p.is_empty()));
    let case = &report["cases"][0];
    assert_eq!(case["id"], "signer/webhook");
    assert_eq!(case["status"], "passed");
    for field in ["expected", "got", "reason"] {
        assert!(case[field].is_string(), "{field}");
    }
    assert_eq!(case["advisory"], false);
}

#[test]
fn plain_http_is_refused_without_allow_http() {
    for grader in ["request-signing", "receiver"] {
        let out = adcp_sig(&["grade", grader, "http://127.0.0.1:9/"]);
        assert_eq!(out.status.code(), Some(2), "{grader}: {}", stderr(&out));
        assert!(stderr(&out).contains("target refused"), "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    // A private address is refused even over https.
    let out = adcp_sig(&["grade", "receiver", "https://10.0.0.1/hook"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let out = adcp_sig(&["grade", "signer", "--jwks", "x.json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = adcp_sig(&[
        "grade",
        "receiver",
        "http://127.0.0.1:9/",
        "--allow-http",
        "--timeout",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = adcp_sig(&[
        "grade",
        "receiver",
        "https://x.example/",
        "--vectors",
        "/nonexistent-suite",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("suite"), "{}", stderr(&out));
}

/// Runs `adcp-sig` where no conformance suite can be found:
/// `ADCP_VECTORS_DIR` names an empty directory, which is looked at alone.
fn adcp_sig_without_suite(args: &[&str]) -> std::process::Output {
    let empty = dir("no-suite");
    std::process::Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(args)
        .env("ADCP_VECTORS_DIR", &empty)
        .env_remove("CI")
        .output()
        .unwrap()
}

#[test]
fn without_a_suite_the_signer_grades_and_a_refused_target_is_reported_as_such() {
    // The signer grader signs its own sample messages: no suite needed.
    let d = dir("signer-no-suite");
    let (private, jwks) = key_files(&d, "agent-k1");
    let out = adcp_sig_without_suite(&["grade", "signer", "--key-file", s(&private), "--jwks", s(&jwks)]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(closing_line(&out), "2 passed, 0 failed, 0 skipped");
    // An explicit --vectors still has to name a suite.
    let out = adcp_sig_without_suite(&[
        "grade",
        "signer",
        "--key-file",
        s(&private),
        "--jwks",
        s(&jwks),
        "--vectors",
        s(&d),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an AdCP conformance suite"),
        "{}",
        stderr(&out)
    );
    // The target is checked before the suite is looked for.
    let out = adcp_sig_without_suite(&["grade", "receiver", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("target refused"), "{}", stderr(&out));
    // A grader that reads the vectors says the suite is missing.
    let out = adcp_sig_without_suite(&["grade", "request-signing", "http://127.0.0.1:9/", "--allow-http"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("conformance suite not found"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

/// A seller verifying with the suite's request-signing keys, on loopback.
async fn seller(suite: &Path) -> std::net::SocketAddr {
    let keys = adcp_vectors::load_json(suite, "request-signing/keys.json").unwrap();
    let capability = VerifierCapability::from_json(&json!({
        "supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]
    }))
    .unwrap();
    let verifier = RequestVerifier::builder(
        Arc::new(StaticKeyResolver::new().with_jwks(&keys, "https://buyer.example/")),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .scheme("http")
    .build()
    .unwrap();
    let app = Router::new()
        .fallback(|| async { StatusCode::OK })
        .layer(RequestVerifierLayer::new(verifier));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_signing_against_a_loopback_seller_passes_and_skips_with_reasons() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let addr = seller(&suite).await;
    let d = dir("rs");
    let caps = d.join("caps.json");
    std::fs::write(
        &caps,
        json!({"request_signing": {"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}})
            .to_string(),
    )
    .unwrap();
    let args = |only: &str| -> Vec<String> {
        [
            "grade",
            "request-signing",
            &format!("http://{addr}/"),
            "--allow-http",
            "--capabilities",
            s(&caps),
            "--vectors",
            s(&suite),
            "--only",
            only,
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .collect()
    };
    let out = adcp_sig_async(args("positive/001,negative/003,negative/015,negative/028")).await;
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    // 028 needs tasks/cancel in protocol_methods_required_for: skipped, with the reason.
    assert!(
        text.contains("SKIP negative/028-unsigned-protocol-method-required: needs tasks/cancel"),
        "{text}"
    );
    assert_eq!(closing_line(&out), "3 passed, 0 failed, 1 skipped");
    assert!(stderr(&out).contains("live"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_accepting_everything_exits_1_and_reports_advisories_apart() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(|| async { StatusCode::OK });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let args: Vec<String> = [
        "grade",
        "receiver",
        &format!("http://{addr}/webhooks/adcp"),
        "--allow-http",
        "--vectors",
        s(&suite),
        "--only",
        "positive/001,negative/015,contract/retry,contract/changed-payload,contract/oversize",
        "--json",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    let out = adcp_sig_async(args).await;
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["grader"], "receiver");
    let status = |id: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| {
                (
                    c["status"].as_str().unwrap().to_owned(),
                    c["advisory"].as_bool().unwrap(),
                )
            })
            .unwrap()
    };
    assert_eq!(status("positive/001-basic-post"), ("passed".into(), false));
    assert_eq!(status("negative/015-signature-invalid"), ("failed".into(), false));
    assert_eq!(status("contract/retry"), ("passed".into(), false));
    assert_eq!(status("contract/changed-payload"), ("failed".into(), false));
    assert_eq!(status("contract/oversize"), ("failed".into(), true));
    assert_eq!(report["failed"], 2);
    assert_eq!(report["summary"], "2 passed, 2 failed, 0 skipped (1 advisory not met)");
}
