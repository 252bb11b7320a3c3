//! `adcp-sig gateway --agent A --agent B`: keys discovered over HTTPS for
//! each seller (a local server reached through the hidden test-only
//! flags); each seller's events are forwarded with its own verified agent.

use crate::support::gateway as common;
use crate::support::jwks as jwks_common;
use crate::support::test_network;
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use common::{event, TempDir, Upstream, PATH};
use jwks_common::{ok, Server};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn seller(kid: &str) -> (HttpSigner<SoftwareSigner>, Vec<u8>) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let jwks = key.jwks().unwrap().to_public_json().to_string().into_bytes();
    (HttpSigner::webhook(key).unwrap(), jwks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_each_verified_with_its_own_discovered_keys() {
    let dir = TempDir::new("agents");
    let upstream = Upstream::start().await;
    let s = Server::start(&["seller.example", "other.example", "keys.example"]).await;
    let (one, one_jwks) = seller("seller-one-k1");
    let (two, two_jwks) = seller("seller-two-k1");
    let (agent_one, agent_two) = (s.url("seller.example", "/mcp"), s.url("other.example", "/mcp"));
    s.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [
            {"url": agent_one, "jwks_uri": s.url("keys.example", "/one.json")},
            {"url": agent_two, "jwks_uri": s.url("keys.example", "/two.json")},
        ]})
        .to_string()),
    );
    s.set("/one.json", ok(one_jwks));
    s.set("/two.json", ok(two_jwks));
    let ca = dir.0.join("ca.der");
    std::fs::write(&ca, &s.ca_der).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
    command
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream.url().as_str(),
        ])
        .args(["--agent", &agent_one, "--agent", &agent_two, "--store", &dir.sqlite()])
        .args(test_network::flags(&ca, &s.names));
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (_, addr) = common::listening(&mut stderr);

    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let url = format!("http://{addr}{PATH}");
    let (stranger, _) = seller("nobody-k1");
    let mut answers = Vec::new();
    for (signer, n) in [(&one, "one"), (&two, "two"), (&stranger, "three")] {
        let signed = signer.sign_webhook(&url, &event(n)).await.unwrap();
        let response = common::signed_post(&client, &url, &signed).send().await.unwrap();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        answers.push((response.status().as_u16(), challenge));
    }
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    let log: String = stderr.lines().map(|l| l.unwrap() + "\n").collect();
    assert_eq!(status.code(), Some(0), "{log}");

    assert_eq!(answers[0], (200, None), "{log}");
    assert_eq!(answers[1], (200, None), "{log}");
    assert_eq!(
        answers[2],
        (
            401,
            Some("Signature error=\"webhook_signature_key_unknown\"".to_owned())
        ),
        "{log}"
    );
    let applied = upstream.seen.applied.lock().unwrap().clone();
    let agents: Vec<_> = applied
        .iter()
        .map(|(h, _)| {
            (
                h["x-adcp-verified-agent"].to_str().unwrap().to_owned(),
                h["x-adcp-verified-keyid"].to_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            (agent_one, "seller-one-k1".to_owned()),
            (agent_two, "seller-two-k1".to_owned())
        ]
    );
}
