//! `adcp-sig call` end to end: the binary against a loopback seller that
//! primes `get_adcp_capabilities` and gates every call with
//! `adcp_verify::request_policy::decide` + `Verifier::verify` +
//! `VerifyPlan::conclude`.

use crate::support::{adcp_sig_async, stdout};
use adcp_sigbase::Message;
use adcp_sign::{Algorithm, SoftwareSigner};
use adcp_verify::request_policy::{
    decide, Binding, Decision, FallbackCredential, Rejection, Verdict, VerifierCapability,
};
use adcp_verify::{MemoryReplayStore, Profile, StaticKeyResolver, SystemClock, Verifier};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "call_cli-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const REQUIRED: &str =
    r#"{"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}"#;

/// What the seller saw of one gated call.
#[derive(Debug, Clone)]
struct Seen {
    operation: Option<String>,
    signed: bool,
    error: Option<String>,
}

struct Seller {
    binding: Binding,
    /// Enforced, and advertised by `get_adcp_capabilities`.
    capability: Value,
    verifier: Verifier<StaticKeyResolver, MemoryReplayStore, SystemClock>,
    primings: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
}

/// A seller on loopback verifying with `jwks`; returns its base URL.
async fn seller(binding: Binding, capability: &str, jwks: &Value) -> (String, Arc<Seller>) {
    let state = Arc::new(Seller {
        binding,
        capability: serde_json::from_str(capability).unwrap(),
        verifier: Verifier::new(
            Profile::request_v3_2(),
            StaticKeyResolver::new().with_jwks(jwks, "https://buyer.example/agent"),
            MemoryReplayStore::request(),
            SystemClock,
        ),
        primings: AtomicUsize::new(0),
        seen: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new().fallback(handle).with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, state)
}

async fn handle(State(seller): State<Arc<Seller>>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let path = parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default();
    let signed = parts.headers.contains_key("signature-input");
    let http_request = http::Request::from_parts(parts, body.clone());
    let msg = Message::from_http(&http_request).with_target_uri(format!("http://{host}{path}"));
    let capability = VerifierCapability::from_json(&seller.capability).unwrap();
    let verdict: Verdict<_> = match decide(&capability, seller.binding, &msg, FallbackCredential::Absent) {
        Decision::Verify(plan) => plan.conclude(seller.verifier.verify(&msg).await),
        other => other.verdict().unwrap(),
    };
    let request_json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rejected = |status: u16, code: &str, challenge: Option<String>| {
        let mut response = (
            http::StatusCode::from_u16(status).unwrap(),
            json!({"error": code}).to_string(),
        )
            .into_response();
        if let Some(challenge) = challenge {
            response
                .headers_mut()
                .insert("www-authenticate", challenge.parse().unwrap());
        }
        response
    };
    let (operation, result) = match &verdict {
        Verdict::Verified { request, .. } | Verdict::Accepted { request, .. } => {
            let op = request.operation().map(str::to_owned);
            if op.as_deref() == Some("get_adcp_capabilities") {
                seller.primings.fetch_add(1, Ordering::SeqCst);
                return wrap(
                    seller.binding,
                    &request_json,
                    json!({"request_signing": seller.capability}),
                );
            }
            (
                op.clone(),
                json!({"operation": op, "signed": matches!(verdict, Verdict::Verified { .. })}),
            )
        }
        Verdict::Rejected(Rejection::Error(e)) => {
            seller.seen.lock().unwrap().push(Seen {
                operation: None,
                signed,
                error: Some(e.code_str().to_owned()),
            });
            return rejected(e.code().http_status(), e.code_str(), e.www_authenticate());
        }
        Verdict::Rejected(Rejection::Unauthenticated { warning }) => {
            return rejected(401, warning.code_str(), None);
        }
    };
    seller.seen.lock().unwrap().push(Seen {
        operation,
        signed,
        error: None,
    });
    wrap(seller.binding, &request_json, result)
}

fn wrap(binding: Binding, request: &Value, result: Value) -> Response {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let body = match (binding, request.get("method").and_then(Value::as_str)) {
        (Binding::JsonRpc, Some("SendMessage")) => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"task": {"id": "t1", "artifacts": [{"parts": [{"data": result}]}]}}})
        }
        (Binding::JsonRpc, _) => json!({"jsonrpc": "2.0", "id": id, "result": {"structuredContent": result}}),
        _ => result,
    };
    ([("content-type", "application/json")], body.to_string()).into_response()
}

/// A key file and its public JWKS.
fn key(dir: &Path) -> (PathBuf, Value) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "buyer-cli-test").unwrap();
    let path = dir.join("key.json");
    std::fs::write(&path, key.private_jwk().unwrap().to_json().to_string()).unwrap();
    (path, key.jwks().unwrap().to_public_json())
}

fn file(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_str().unwrap().to_owned()
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_call_is_primed_signed_and_accepted() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &jwks).await;
    let body = file(&dir, "body.json", r#"{"plan_id": "p1"}"#);
    let url = format!("{base}/mcp");
    let out = adcp_sig_async(args(&[
        "call",
        &url,
        "--operation",
        "create_media_buy",
        "--body",
        &body,
        "--key",
        key.to_str().unwrap(),
        "--allow-http",
    ]))
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", crate::support::stderr(&out));
    assert!(text.contains("status: 200"), "{text}");
    assert!(
        text.contains("signed: yes (required_for; AdCP 3.2 encoding; content-digest covered)"),
        "{text}"
    );
    assert!(text.contains("\"operation\":\"create_media_buy\""), "{text}");
    assert_eq!(seller.primings.load(Ordering::SeqCst), 1);
    let seen = seller.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].signed && seen[0].error.is_none());
    assert_eq!(seen[0].operation.as_deref(), Some("create_media_buy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_with_supplied_capabilities_and_each_transport() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let body = file(&dir, "body.json", r#"{"plan_id": "p1"}"#);
    let caps = file(&dir, "caps.json", REQUIRED);
    for (transport, binding, path) in [
        ("mcp", Binding::JsonRpc, "/mcp"),
        ("a2a", Binding::JsonRpc, "/a2a"),
        ("raw", Binding::OperationPath, "/adcp"),
    ] {
        let (base, seller) = seller(binding, REQUIRED, &jwks).await;
        let url = format!("{base}{path}");
        let out = adcp_sig_async(args(&[
            "call",
            &url,
            "--operation",
            "create_media_buy",
            "--body",
            &body,
            "--key",
            key.to_str().unwrap(),
            "--capabilities",
            &caps,
            "--transport",
            transport,
            "--allow-http",
            "--json",
        ]))
        .await;
        assert_eq!(out.status.code(), Some(0), "{transport}: {}", stdout(&out));
        let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["outcome"], "ok", "{report}");
        assert_eq!(report["status"], 200);
        assert_eq!(report["signed"], true);
        assert_eq!(report["reason"], "required_for");
        assert_eq!(report["covers_content_digest"], true);
        assert_eq!(report["attempts"], 1);
        assert_eq!(
            seller.primings.load(Ordering::SeqCst),
            0,
            "{transport}: supplied, not primed"
        );
        let seen = seller.seen.lock().unwrap().clone();
        assert_eq!(seen[0].operation.as_deref(), Some("create_media_buy"), "{transport}");
        assert!(seen[0].signed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_capability_is_challenged_and_retried_signed() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &jwks).await;
    let body = file(&dir, "body.json", "{}");
    // A full get_adcp_capabilities response that (wrongly) says unsupported.
    let caps = file(
        &dir,
        "caps.json",
        r#"{"adcp": {"major_versions": [3]}, "request_signing": {"supported": false}}"#,
    );
    let out = adcp_sig_async(args(&[
        "call",
        &base,
        "--operation",
        "create_media_buy",
        "--body",
        &body,
        "--key",
        key.to_str().unwrap(),
        "--capabilities",
        &caps,
        "--allow-http",
        "--json",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (report["attempts"].as_u64(), report["reason"].as_str()),
        (Some(2), Some("challenged"))
    );
    let seen = seller.seen.lock().unwrap().clone();
    assert_eq!(seen[0].error.as_deref(), Some("request_signature_required"));
    assert!(!seen[0].signed && seen[1].signed && seen[1].error.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_signature_exits_1_with_the_code() {
    let dir = scratch();
    let (key, _) = key(&dir);
    // The seller knows another key under the same kid.
    let (_, other) = crate::call::key(&scratch());
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &other).await;
    let body = file(&dir, "body.json", "{}");
    let out = adcp_sig_async(args(&[
        "call",
        &base,
        "--operation",
        "create_media_buy",
        "--body",
        &body,
        "--key",
        key.to_str().unwrap(),
        "--allow-http",
        "--json",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["outcome"], "rejected");
    assert_eq!(report["status"], 401);
    assert_eq!(report["signed"], true);
    assert_eq!(report["signature_error"], "request_signature_invalid");
    assert_eq!(seller.seen.lock().unwrap().len(), 1, "not retried");

    // Text mode says the same.
    let out = adcp_sig_async(args(&[
        "call",
        &base,
        "--operation",
        "create_media_buy",
        "--body",
        &body,
        "--key",
        key.to_str().unwrap(),
        "--allow-http",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("signature error: request_signature_invalid"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_and_loopback_need_allow_http() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &jwks).await;
    let body = file(&dir, "body.json", "{}");
    let port = base.rsplit(':').next().unwrap().to_owned();
    for url in [
        base.clone(),
        format!("https://127.0.0.1:{port}/mcp"),
        format!("https://localhost:{port}/mcp"),
    ] {
        let out = adcp_sig_async(args(&[
            "call",
            &url,
            "--operation",
            "create_media_buy",
            "--body",
            &body,
            "--key",
            key.to_str().unwrap(),
            "--json",
        ]))
        .await;
        assert_eq!(out.status.code(), Some(1), "{url}: {}", stdout(&out));
        let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["outcome"], "error");
        assert_eq!(report["error"], "target_untrusted", "{url}: {report}");
    }
    assert_eq!(seller.primings.load(Ordering::SeqCst), 0);
    assert!(seller.seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_2_and_send_nothing() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &jwks).await;
    let key = key.to_str().unwrap().to_owned();
    let body = file(&dir, "body.json", "{}");
    let dup = file(&dir, "dup.json", r#"{"a": 1, "a": 2}"#);
    let bad_caps = file(&dir, "caps.json", r#"{"supported": true}"#);
    let missing = dir.join("missing.json").to_str().unwrap().to_owned();
    for (extra, code) in [
        (
            vec!["--operation", "create_media_buy", "--body", &missing],
            "file_unreadable",
        ),
        (vec!["--operation", "create_media_buy", "--body", &dup], "json_invalid"),
        (vec!["--operation", "Create-Media-Buy", "--body", &body], "invalid_call"),
        (
            vec![
                "--operation",
                "create_media_buy",
                "--body",
                &body,
                "--capabilities",
                &bad_caps,
            ],
            "capabilities_invalid",
        ),
        (
            vec!["--operation", "create_media_buy", "--body", &body, "--timeout", "0"],
            "timeout_invalid",
        ),
    ] {
        let mut argv = args(&["call", &base, "--key", &key, "--allow-http", "--json"]);
        argv.extend(extra.iter().map(|s| (*s).to_owned()));
        let out = adcp_sig_async(argv).await;
        assert_eq!(out.status.code(), Some(2), "{code}: {}", stdout(&out));
        let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["outcome"], "usage_error");
        assert_eq!(report["error"], code, "{report}");
    }
    // clap: a missing required flag.
    let out = adcp_sig_async(args(&["call", &base, "--key", &key])).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(seller.primings.load(Ordering::SeqCst), 0);
    assert!(seller.seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_selects_the_legacy_encoding_which_a_3_2_seller_refuses() {
    let dir = scratch();
    let (key, jwks) = key(&dir);
    let (base, seller) = seller(Binding::JsonRpc, REQUIRED, &jwks).await;
    let body = file(&dir, "body.json", "{}");
    let run = |legacy: bool| {
        let mut argv = args(&[
            "call",
            &base,
            "--operation",
            "create_media_buy",
            "--body",
            &body,
            "--key",
            key.to_str().unwrap(),
            "--allow-http",
            "--json",
        ]);
        if legacy {
            argv.push("--legacy".into());
        }
        adcp_sig_async(argv)
    };
    let out = run(true).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (report["signed"].as_bool(), report["version"].as_str()),
        (Some(true), Some("legacy"))
    );
    assert_eq!(
        report["signature_error"], "request_signature_header_malformed",
        "{report}"
    );
    let out = run(false).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["version"], "3.2");
    assert_eq!(seller.seen.lock().unwrap().len(), 2);
}
