//! `adcp-sig resolve` end to end: the trace and JWKS of a resolved agent
//! served by a local HTTPS server (reached through the hidden, clearly
//! named test-only flags), the spec code and exit 1 of a failed check, and
//! exit 2 for usage and I/O errors.

use crate::support::adcp_sig_async as adcp_sig;
use crate::support::jwks as common;
use crate::support::test_network;
use common::{jwks, key, ok, Server};
use serde_json::{json, Value};
use std::path::PathBuf;

/// A file of its own for every call: tests run in parallel, each with its
/// own test CA, and must not read each other's.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("resolve_cli-{}-{n}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn test_flags(s: &Server) -> Vec<String> {
    test_network::flags(&scratch("ca.der", &s.ca_der), &s.names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolves_and_prints_trace_and_jwks() {
    let s = Server::start(&["seller.example", "keys.example"]).await;
    let agent = s.url("seller.example", "/mcp");
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]}).to_string()),
    );
    s.set("/jwks.json", ok(jwks(vec![key("cli-k1")])));

    let mut args = vec!["resolve".to_owned(), agent.clone(), "--json".to_owned()];
    args.extend(test_flags(&s));
    let out = adcp_sig(args).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["jwks"]["keys"][0]["kid"], "cli-k1");
    assert_eq!(report["jwks"]["keys"][0]["adcp_use"], "request-signing");
    let trace = report["trace"].as_array().unwrap();
    let names: Vec<&str> = trace.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["brand.json", "agents[] match", "key source", "jwks"]);
    assert_eq!(trace[0]["url"], s.url("seller.example", "/.well-known/brand.json"));
    assert_eq!(trace[0]["http_status"], 200);
    assert!(trace[0]["age_seconds"].as_i64().unwrap() >= 0);
    assert_eq!(trace[3]["url"], s.url("keys.example", "/jwks.json"));
    assert_eq!(trace[3]["http_status"], 200);
    assert!(trace.iter().all(|t| t["ok"] == true));

    // Text form: one line per step with URL, status, age, outcome; then the JWKS.
    let mut args = vec!["resolve".to_owned(), agent.clone()];
    args.extend(test_flags(&s));
    let out = adcp_sig(args).await;
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" 1. brand.json"), "{text}");
    assert!(text.contains("HTTP 200 age "), "{text}");
    assert!(text.contains("\"kid\": \"cli-k1\""), "{text}");

    // A failed check: exit 1 and the spec code, in both forms.
    let mut args = vec!["resolve".to_owned(), format!("{agent}/"), "--json".to_owned()];
    args.extend(test_flags(&s));
    let out = adcp_sig(args).await;
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["code"], "webhook_signature_agent_not_in_brand_json");
    assert_eq!(report["trace"][1]["code"], "agent_not_in_brand_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brand_json_url_chain_reports_request_codes() {
    let s = Server::start(&["agent.op.example", "op.example"]).await;
    let agent = s.url("agent.op.example", "/mcp");
    let caps = json!({"identity": {"brand_json_url": s.url("op.example", "/.well-known/brand.json")},
        "request_signing": {"supported_for": ["create_media_buy"]}});
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": agent}]}).to_string()),
    );
    let file = scratch("caps.json", caps.to_string().as_bytes());
    let mut args = vec![
        "resolve".to_owned(),
        agent,
        "--capabilities".to_owned(),
        file.to_str().unwrap().to_owned(),
    ];
    args.extend(test_flags(&s));
    let out = adcp_sig(args).await;
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error: request_signature_key_origin_missing"), "{text}");
    assert!(text.contains(" 3. origin binding   ok"), "{text}");
    assert!(
        text.contains(" 1. capabilities     ok      — get_adcp_capabilities (supplied by the caller)"),
        "{text}"
    );
}

#[tokio::test]
async fn refusals_without_network_and_usage_errors() {
    // Refused before any network I/O, with the spec code.
    for agent in [
        "http://seller.example/mcp",
        "https://127.0.0.1/mcp",
        "https://[::ffff:10.0.0.1]/mcp",
    ] {
        let out = adcp_sig(vec!["resolve".into(), agent.into(), "--json".into()]).await;
        assert_eq!(out.status.code(), Some(1), "{agent}");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["code"], "webhook_signature_jwks_untrusted", "{agent}");
    }
    // Usage and I/O errors: exit 2.
    for args in [
        vec!["resolve".to_owned()],
        vec![
            "resolve".into(),
            "https://seller.example/mcp".into(),
            "--capabilities".into(),
            "/nonexistent/caps.json".into(),
        ],
        vec![
            "resolve".into(),
            "https://seller.example/mcp".into(),
            "--dangerously-resolve-for-tests".into(),
            "nonsense".into(),
        ],
    ] {
        let out = adcp_sig(args.clone()).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_pin_for_sell_side_webhooks() {
    let s = Server::start(&["seller.example", "keys.example", "pub.example", "other.example"]).await;
    let agent = s.url("seller.example", "/mcp");
    s.set(
        "seller.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]}).to_string()),
    );
    s.set("keys.example/jwks.json", ok(jwks(vec![key("operator-k1")])));
    s.set(
        "pub.example/.well-known/adagents.json",
        ok(json!({"authorized_agents": [{"url": agent, "signing_keys": [key("pinned-1")]}]}).to_string()),
    );
    let mut args = vec![
        "resolve".to_owned(),
        agent.clone(),
        "--json".to_owned(),
        "--publisher".to_owned(),
        s.url("pub.example", "/"),
    ];
    args.extend(test_flags(&s));
    let out = adcp_sig(args.clone()).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["jwks"]["keys"].as_array().unwrap().len(), 1);
    assert_eq!(report["jwks"]["keys"][0]["kid"], "pinned-1");
    assert_eq!(
        report["key_source"]["publisher_pin"],
        s.url("pub.example", "/.well-known/adagents.json")
    );
    assert_eq!(report["publisher_trace"][0]["http_status"], 200);
    assert_eq!(s.hits("keys.example/jwks.json"), 0);

    // A cross-registrable-domain redirect on the publisher file: refused,
    // exit 1, and the other domain is never dialed.
    s.set(
        "pub.example/.well-known/adagents.json",
        common::redirect(302, &s.url("other.example", "/.well-known/adagents.json")),
    );
    let out = adcp_sig(args).await;
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["publisher_trace"][0]["code"], "cross_registrable_domain");
    assert_eq!(s.host_hits("other.example"), 0);
}
