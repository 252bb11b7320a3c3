//! `adcp-sig gateway` without TLS as a process, reloading on `SIGHUP`: it
//! survives the signal, a kid newly revoked in its TOML file is refused
//! after the signal (not before) while one given as a flag stays revoked,
//! a key added to its `--jwks` file verifies after the signal, a broken
//! JWKS file keeps the keys in force and is counted as a failed reload,
//! and a changed setting that needs a restart is reported, not applied.

use crate::support::gateway as common;
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use common::{event, line_with, TempDir, Upstream, AGENT, PATH};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn key(kid: &str) -> (HttpSigner<SoftwareSigner>, serde_json::Value) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let jwk = key.jwks().unwrap().to_public_json()["keys"][0].clone();
    (HttpSigner::webhook(key).unwrap(), jwk)
}

/// Posts `n`'s event signed by `signer`: the status and `WWW-Authenticate`.
async fn post(
    client: &reqwest::Client,
    url: &str,
    signer: &HttpSigner<SoftwareSigner>,
    n: &str,
) -> (u16, Option<String>) {
    let signed = signer.sign_webhook(url, &event(n)).await.unwrap();
    let response = common::signed_post(client, url, &signed).send().await.unwrap();
    let code = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), code)
}

fn signal(child: &std::process::Child, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_gateway_reloads_keys_and_revoked_kids_on_sighup() {
    let dir = TempDir::new("cli-reload");
    let upstream = Upstream::start().await;
    let (current, current_jwk) = key("seller-current");
    let (retired, retired_jwk) = key("seller-retired");
    let (flagged, flagged_jwk) = key("seller-flagged");
    let (added, added_jwk) = key("seller-added");
    let jwks = |keys: &[&serde_json::Value]| {
        std::fs::write(dir.0.join("jwks.json"), serde_json::json!({ "keys": keys }).to_string()).unwrap();
    };
    let toml = |extra: &str| {
        std::fs::write(
            dir.0.join("gateway.toml"),
            format!("jwks = \"jwks.json\"\njwks_agent = \"{AGENT}\"\n{extra}"),
        )
        .unwrap();
    };
    jwks(&[&current_jwk, &retired_jwk, &flagged_jwk]);
    toml("store_timeout = 5\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .arg("gateway")
        .arg("--config")
        .arg(dir.0.join("gateway.toml"))
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream.url().as_str()])
        .args(["--store", &dir.sqlite(), "--quiet"])
        // Given as a variable: stays as given whatever the file says.
        .env("ADCP_GATEWAY_REVOKED_KIDS", "seller-flagged")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (_, addr) = common::listening(&mut stderr);
    let base = format!("http://{addr}");
    let url = format!("{base}{PATH}");
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let refused = |code: &str| (401, Some(format!("Signature error=\"{code}\"")));
    // One client throughout: its keep-alive connection outlives the
    // signals.
    assert_eq!(post(&client, &url, &current, "a").await, (200, None));
    assert_eq!(post(&client, &url, &retired, "b").await, (200, None));
    assert_eq!(
        post(&client, &url, &flagged, "c").await,
        refused("webhook_signature_key_revoked")
    );
    assert_eq!(
        post(&client, &url, &added, "d").await,
        refused("webhook_signature_key_unknown")
    );

    // The file revokes a kid (and un-revokes the flagged one, which the
    // variable keeps revoked); the JWKS file gets a key; a setting that
    // needs a restart changes.
    toml("revoked_kids = [\"seller-retired\"]\nstore_timeout = 7\n");
    jwks(&[&current_jwk, &retired_jwk, &flagged_jwk, &added_jwk]);
    assert_eq!(
        post(&client, &url, &retired, "e").await,
        (200, None),
        "not before the signal"
    );
    signal(&child, "-HUP");
    let reloaded = line_with(&mut stderr, "SIGHUP");
    assert!(
        reloaded.starts_with("SIGHUP: keys and policies reloaded; ") && !reloaded.contains("revoked_kids"),
        "the variable's value is unchanged: {reloaded}"
    );
    assert!(
        reloaded.contains("; store_timeout changed but not applied: a restart applies them"),
        "{reloaded}"
    );
    assert_eq!(
        post(&client, &url, &retired, "f").await,
        (200, None),
        "the variable wins over the file"
    );
    assert_eq!(
        post(&client, &url, &added, "g").await,
        (200, None),
        "the added key verifies"
    );
    assert_eq!(
        post(&client, &url, &flagged, "h").await,
        refused("webhook_signature_key_revoked")
    );

    // A broken JWKS file fails the reload; the keys in force stay.
    std::fs::write(dir.0.join("jwks.json"), "{\"keys\": [").unwrap();
    signal(&child, "-HUP");
    let failed = line_with(&mut stderr, "SIGHUP");
    assert!(
        failed.starts_with("error: SIGHUP: keys and policies not reloaded, keeping the current ones: --jwks")
            && failed.contains("jwks.json"),
        "{failed}"
    );
    assert_eq!(
        post(&client, &url, &added, "i").await,
        (200, None),
        "the keys in force stay"
    );
    let (status, metrics) = common::get(format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("adcp_gateway_reloads_total{result=\"ok\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("adcp_gateway_reloads_total{result=\"failed\"} 1\n"),
        "{metrics}"
    );
    assert_eq!(upstream.applied_keys().len(), 6);

    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let rest: String = stderr.lines().map(|l| l.unwrap() + "\n").collect();
    assert_eq!(status.code(), Some(0), "{rest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_kid_added_to_the_toml_file_is_refused_after_sighup() {
    let dir = TempDir::new("cli-reload-revoke");
    let upstream = Upstream::start().await;
    let (seller, jwk) = key("seller-2026");
    std::fs::write(
        dir.0.join("jwks.json"),
        serde_json::json!({ "keys": [jwk] }).to_string(),
    )
    .unwrap();
    let toml = |revoked: &str| {
        std::fs::write(
            dir.0.join("gateway.toml"),
            format!("jwks = \"jwks.json\"\njwks_agent = \"{AGENT}\"\nrevoked_kids = [{revoked}]\n"),
        )
        .unwrap();
    };
    toml("");
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .arg("gateway")
        .arg("--config")
        .arg(dir.0.join("gateway.toml"))
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream.url().as_str()])
        .args(["--store", &dir.sqlite(), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (_, addr) = common::listening(&mut stderr);
    let url = format!("http://{addr}{PATH}");
    // One client: its keep-alive connection stays open across the signal.
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    assert_eq!(post(&client, &url, &seller, "a").await.0, 200);
    toml("\"seller-2026\"");
    assert_eq!(post(&client, &url, &seller, "b").await.0, 200, "not before the signal");
    signal(&child, "-HUP");
    let reloaded = line_with(&mut stderr, "SIGHUP");
    assert!(
        reloaded.contains("SIGHUP: keys and policies reloaded (changed: revoked_kids)"),
        "{reloaded}"
    );
    assert_eq!(
        post(&client, &url, &seller, "c").await.0,
        401,
        "refused after the signal, no restart"
    );
    // A second signal, the file unchanged: still alive, still refused.
    signal(&child, "-HUP");
    let again = line_with(&mut stderr, "SIGHUP");
    assert!(again.contains("keys and policies reloaded"), "{again}");
    assert_eq!(post(&client, &url, &seller, "d").await.0, 401);
    assert_eq!(upstream.applied_keys().len(), 2);
    signal(&child, "-TERM");
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
