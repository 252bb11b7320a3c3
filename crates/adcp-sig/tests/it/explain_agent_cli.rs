//! `adcp-sig explain --agent URL`: keys discovered over HTTPS (a local
//! server reached through the hidden test-only flags) instead of a JWKS
//! file; a discovery failure is explained at step 7 with the verifier's
//! code.

use crate::support::adcp_sig_async as adcp_sig;
use crate::support::jwks as common;
use crate::support::test_network;
use common::{ok, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("explain_agent_cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

fn test_flags(s: &Server, dir: &Path) -> Vec<String> {
    let ca = dir.join("ca.der");
    std::fs::write(&ca, &s.ca_der).unwrap();
    test_network::flags(&ca, &s.names)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_with_keys_discovered_from_the_agent() {
    let d = dir();
    let (private, jwks) = (d.join("k.jwk"), d.join("jwks.json"));
    let out = adcp_sig(strings(&[
        "keygen",
        "--alg",
        "ed25519",
        "--kid",
        "agent-k1",
        "--out-private",
        &p(&private),
        "--out-jwks",
        &p(&jwks),
    ]))
    .await;
    assert_eq!(out.status.code(), Some(0));
    let out = adcp_sig(strings(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        "https://buyer.example/webhooks/adcp",
        "--body",
        r#"{"task_id":"t1","status":"completed"}"#,
        "--key",
        &p(&private),
    ]))
    .await;
    assert_eq!(out.status.code(), Some(0));
    let request = d.join("request.json");
    std::fs::write(&request, &out.stdout).unwrap();

    let s = Server::start(&["seller.example", "keys.example"]).await;
    let agent = s.url("seller.example", "/mcp");
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]}).to_string()),
    );
    s.set("/jwks.json", ok(std::fs::read(&jwks).unwrap()));

    let explain = |agent: String| {
        let mut args = strings(&["explain", "--request", &p(&request), "--json", "--agent"]);
        args.push(agent);
        args.extend(test_flags(&s, &d));
        adcp_sig(args)
    };
    let out = explain(agent.clone()).await;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["key"]["kid"], "agent-k1");

    // Not byte-equal to the agents[] entry: discovery refuses the chain,
    // and the webhook profile reports the generic untrusted code.
    let out = explain(format!("{agent}/")).await;
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["step"], "7");
    assert_eq!(v["error_code"], "webhook_signature_jwks_untrusted");
    assert!(v["detail"].as_str().unwrap().contains("agent_not_in_brand_json"), "{v}");
    assert!(v.get("key").is_none(), "{v}");
}
