//! `adcp-sig gateway --profile request` as a process: a signed call is
//! verified and proxied to the seller's server with the verified identity,
//! an unsigned call to a `required_for` operation is refused with the
//! signature challenge, one carrying the credential header (named by the
//! environment here) is forwarded marked `unsigned`; a 3.2 and a legacy
//! (3.0/3.1) request-profile gateway run side by side.

use crate::support::gateway as common;
use adcp_sign::{Algorithm, HttpSigner, SigningProfile, SoftwareSigner, UnsignedRequest};
use axum::http::HeaderMap;
use axum::Router;
use common::TempDir;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BUYER: &str = "https://buyer.example/";

type Seen = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

/// The seller's own server: records path, headers and body; answers 200.
async fn seller_server() -> (std::net::SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let recorded = Arc::clone(&seen);
    let app = Router::new().fallback(move |request: axum::extract::Request| {
        let recorded = Arc::clone(&recorded);
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            recorded
                .lock()
                .unwrap()
                .push((parts.uri.to_string(), parts.headers, body.to_vec()));
            r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, seen)
}

fn tools_call(operation: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": operation, "arguments": {"idempotency_key": "cli-1"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_gateway_process_forwards_signed_calls_and_refuses_unsigned_required_ones() {
    let dir = TempDir::new("cli-request");
    let (upstream, seen) = seller_server().await;
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "cli-buyer-2026").unwrap();
    std::fs::write(
        dir.0.join("buyer-jwks.json"),
        key.jwks().unwrap().to_public_json().to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.0.join("capabilities.json"),
        json!({
            "adcp": {"major_versions": [3]},
            "request_signing": {"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}
        })
        .to_string(),
    )
    .unwrap();
    // Flags for most settings; the credential header from the environment.
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(["gateway", "--profile", "request", "--upstream"])
        .arg(format!("http://{upstream}/"))
        .arg("--capabilities")
        .arg(dir.0.join("capabilities.json"))
        .arg("--jwks")
        .arg(dir.0.join("buyer-jwks.json"))
        .args(["--jwks-agent", BUYER, "--listen", "127.0.0.1:0", "--store"])
        .arg(dir.sqlite())
        .env("ADCP_GATEWAY_CREDENTIAL_HEADER", "x-api-key")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (line, addr) = common::listening(&mut stderr);
    assert!(line.contains("signed requests"), "{line}");
    assert!(line.contains("credential header x-api-key"), "{line}");

    let url = format!("http://{addr}/mcp");
    let signer = HttpSigner::new(SigningProfile::request_v3_2(), key).unwrap();
    let body = adcp_sign::Body::json(&tools_call("create_media_buy")).unwrap();
    let signed = signer.sign(&UnsignedRequest::post(&url, &body)).await.unwrap();
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let response = common::signed_post(&client, &url, &signed)
        .header("Mcp-Session-Id", "s-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.text().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#
    );
    {
        let seen = seen.lock().unwrap();
        let [(path, headers, forwarded)] = seen.as_slice() else {
            panic!("{seen:?}")
        };
        assert_eq!(path, "/mcp");
        assert_eq!(forwarded, body.as_bytes());
        assert_eq!(headers["x-adcp-verified-agent"], BUYER);
        assert_eq!(headers["x-adcp-verified-keyid"], "cli-buyer-2026");
        assert_eq!(headers["x-adcp-signature"], "verified");
        assert_eq!(headers["mcp-session-id"], "s-1");
    }

    // Unsigned, required, `Authorization` is not the credential header here.
    let unsigned = serde_json::to_vec(&tools_call("create_media_buy")).unwrap();
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("authorization", "Bearer t")
        .body(unsigned.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Signature error=\"request_signature_required\""
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "not forwarded");
    // With the configured credential header: the seller's to judge.
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .header("x-api-key", "k")
        .body(unsigned)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].1["x-adcp-signature"], "unsigned");
        assert!(!seen[1].1.contains_key("x-adcp-verified-agent"));
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    for l in stderr.lines() {
        rest.push_str(&l.unwrap());
        rest.push('\n');
    }
    assert_eq!(status.code(), Some(0), "{rest}");
    // The access log: request mode's outcomes.
    assert!(rest.contains("request 200 verified "), "{rest}");
    assert!(rest.contains("request 401 request_signature_required "), "{rest}");
    assert!(rest.contains("request 200 unsigned "), "{rest}");
}

#[test]
fn request_mode_usage_errors_exit_2() {
    let dir = TempDir::new("cli-request-usage");
    std::fs::write(dir.0.join("k.json"), r#"{"keys":[]}"#).unwrap();
    std::fs::write(
        dir.0.join("caps.json"),
        r#"{"supported": true, "covers_content_digest": "required"}"#,
    )
    .unwrap();
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command
            .arg("gateway")
            .args([
                "--upstream",
                "http://127.0.0.1:9/",
                "--jwks",
                "k.json",
                "--store",
                "memory:",
            ])
            .args(args)
            .current_dir(&dir.0);
        for (k, v) in envs {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out) = run(&["--profile", "request"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("needs --capabilities"), "{out}");
    let (code, out) = run(&["--capabilities", "caps.json"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--capabilities is a request-mode setting"), "{out}");
    // The environment's profile, overridden by the flag.
    let (code, out) = run(
        &["--capabilities", "caps.json", "--profile", "webhook"],
        &[("ADCP_GATEWAY_PROFILE", "request")],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("request-mode setting"), "{out}");
    let (code, out) = run(&["--binding", "rest"], &[("ADCP_GATEWAY_PROFILE", "request")]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--binding must be"), "{out}");
    // The request profile: its values, request mode only, and a 3.2
    // gateway needs covers_content_digest "required".
    let (code, out) = run(
        &[
            "--profile",
            "request",
            "--capabilities",
            "caps.json",
            "--request-profile",
            "3.1",
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--request-profile must be 3.2 or legacy"), "{out}");
    let (code, out) = run(&[], &[("ADCP_GATEWAY_REQUEST_PROFILE", "legacy")]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--request-profile is a request-mode setting"), "{out}");
    std::fs::write(
        dir.0.join("either.json"),
        r#"{"supported": true, "covers_content_digest": "either"}"#,
    )
    .unwrap();
    let (code, out) = run(&["--profile", "request", "--capabilities", "either.json"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("takes --request-profile legacy"), "{out}");
}

/// A seller in transition runs two gateway processes in front of one
/// server: `--request-profile 3.2` (the default) and, from the
/// environment, `legacy` with its own capabilities. Each passes requests
/// signed in its profile's encoding and refuses the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_3_2_and_a_legacy_gateway_process_side_by_side() {
    use adcp_sign::LegacyDigest;
    let dir = TempDir::new("cli-request-profiles");
    let (upstream, seen) = seller_server().await;
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "cli-buyer-2026").unwrap();
    std::fs::write(
        dir.0.join("buyer-jwks.json"),
        key.jwks().unwrap().to_public_json().to_string(),
    )
    .unwrap();
    let private = key.private_jwk().unwrap();
    for (name, coverage) in [("caps-3.2.json", "required"), ("caps-legacy.json", "either")] {
        std::fs::write(
            dir.0.join(name),
            json!({"supported": true, "covers_content_digest": coverage, "required_for": ["create_media_buy"]})
                .to_string(),
        )
        .unwrap();
    }
    let start = |caps: &str, profile: Option<&str>, store: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command
            .args(["gateway", "--profile", "request", "--upstream"])
            .arg(format!("http://{upstream}/"))
            .arg("--capabilities")
            .arg(dir.0.join(caps))
            .arg("--jwks")
            .arg(dir.0.join("buyer-jwks.json"))
            .args(["--jwks-agent", BUYER, "--listen", "127.0.0.1:0", "--store"])
            .arg(format!("sqlite:{}", dir.0.join(store).display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(profile) = profile {
            command.env("ADCP_GATEWAY_REQUEST_PROFILE", profile);
        }
        let mut child = command.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (line, addr) = common::listening(&mut stderr);
        (child, stderr, line, addr)
    };
    let (mut current, _current_log, current_line, current_addr) = start("caps-3.2.json", None, "a.sqlite");
    let (mut legacy, _legacy_log, legacy_line, legacy_addr) = start("caps-legacy.json", Some("legacy"), "b.sqlite");
    assert!(current_line.contains("3.2 request profile"), "{current_line}");
    assert!(legacy_line.contains("legacy 3.0/3.1 request profile"), "{legacy_line}");

    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let mut n = 0;
    for (signed_as, profile) in [
        ("3.2", SigningProfile::request_v3_2()),
        ("legacy", SigningProfile::request_legacy(LegacyDigest::Cover)),
    ] {
        let signer = HttpSigner::new(profile, SoftwareSigner::from_jwk(&private).unwrap()).unwrap();
        for (gateway, addr) in [("3.2", &current_addr), ("legacy", &legacy_addr)] {
            n += 1;
            let url = format!("http://{addr}/mcp");
            let mut call = tools_call("create_media_buy");
            call["params"]["arguments"]["idempotency_key"] = json!(format!("cli-{n}"));
            let body = adcp_sign::Body::json(&call).unwrap();
            let signed = signer.sign(&UnsignedRequest::post(&url, &body)).await.unwrap();
            let response = common::signed_post(&client, &url, &signed).send().await.unwrap();
            let status = response.status().as_u16();
            let challenge = response
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            if signed_as == gateway {
                assert_eq!((status, challenge), (200, None), "{signed_as} -> {gateway}");
                let seen = seen.lock().unwrap();
                assert_eq!(seen.last().unwrap().1["x-adcp-signature"], "verified");
            } else {
                assert_eq!(
                    (status, challenge.as_deref()),
                    (401, Some("Signature error=\"request_signature_header_malformed\"")),
                    "{signed_as} -> {gateway}"
                );
            }
        }
    }
    assert_eq!(seen.lock().unwrap().len(), 2, "only the matching profiles forwarded");
    for child in [&mut current, &mut legacy] {
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert_eq!(child.wait().unwrap().code(), Some(0));
    }
}

/// `--agent` in request mode discovers a *buyer* agent's keys through the
/// `identity.brand_json_url` chain (the agent's `get_adcp_capabilities` →
/// brand.json → `agents[]` → `jwks_uri`) and attributes the verified
/// request to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_mode_discovers_a_buyer_agents_keys_with_agent() {
    use crate::support::jwks::{ok, Server};
    let dir = TempDir::new("cli-request-agent");
    let (upstream, seen) = seller_server().await;
    let s = Server::start(&["buyer.example", "keys.buyer.example"]).await;
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "buyer-discovered-1").unwrap();
    let agent = s.url("buyer.example", "/");
    // The agent answers its (unsigned, MCP) get_adcp_capabilities call.
    let capabilities = json!({"identity": {"brand_json_url": s.url("buyer.example", "/.well-known/brand.json")}});
    s.set(
        "buyer.example/",
        ok(json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": capabilities}}).to_string()),
    );
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.buyer.example", "/jwks.json")}]}).to_string()),
    );
    s.set(
        "/jwks.json",
        ok(key.jwks().unwrap().to_public_json().to_string().into_bytes()),
    );
    let ca = dir.0.join("ca.der");
    std::fs::write(&ca, &s.ca_der).unwrap();
    std::fs::write(
        dir.0.join("capabilities.json"),
        json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]})
            .to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args([
            "gateway",
            "--profile",
            "request",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
        ])
        .arg(format!("http://{upstream}/"))
        .arg("--capabilities")
        .arg(dir.0.join("capabilities.json"))
        .args(["--agent", &agent, "--store", &dir.sqlite()])
        .args(crate::support::test_network::flags(&ca, &s.names))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (_, addr) = common::listening(&mut stderr);
    let url = format!("http://{addr}/mcp");
    let signer = HttpSigner::new(SigningProfile::request_v3_2(), key).unwrap();
    let body = adcp_sign::Body::json(&tools_call("create_media_buy")).unwrap();
    let signed = signer.sign(&UnsignedRequest::post(&url, &body)).await.unwrap();
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let status = common::signed_post(&client, &url, &signed)
        .send()
        .await
        .unwrap()
        .status();
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let exit = child.wait().unwrap();
    let log: String = stderr.lines().map(|l| l.unwrap() + "\n").collect();
    assert_eq!(exit.code(), Some(0), "{log}");
    assert_eq!(status, 200, "{log}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].1["x-adcp-verified-agent"], agent.as_str());
    assert_eq!(seen[0].1["x-adcp-verified-keyid"], "buyer-discovered-1");
}
