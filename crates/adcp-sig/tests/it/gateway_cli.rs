//! `adcp-sig gateway` as a process: settings from a TOML file, the
//! environment and flags; serves, forwards, exits 0 on SIGTERM after
//! draining; usage errors exit 2; secrets never printed.

use crate::support::gateway as common;
use common::{event, Seller, TempDir, Upstream, AGENT, PATH};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_process_serves_forwards_and_stops_on_sigterm() {
    let dir = TempDir::new("cli");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    std::fs::write(
        dir.0.join("gateway.toml"),
        format!(
            "upstream = \"{}\"\njwks = \"seller-jwks.json\"\njwks_agent = \"{AGENT}\"\nlisten = \"127.0.0.1:1\"\n",
            upstream.url()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(["gateway", "--config"])
        .arg(dir.0.join("gateway.toml"))
        .arg("--store")
        .arg(dir.sqlite())
        // The environment wins over the file's listen address.
        .env("ADCP_GATEWAY_LISTEN", "127.0.0.1:0")
        .env("ADCP_GATEWAY_STORE_NAMESPACE", "ignored_by_sqlite")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (line, addr) = common::listening(&mut stderr);
    assert!(line.contains("RFC 9421"), "{line}");

    let signed = seller
        .signer
        .sign_webhook(&format!("http://{addr}{PATH}"), &event("a"))
        .await
        .unwrap();
    let client = common::http_client(Duration::from_secs(10)).unwrap();
    let status = common::signed_post(&client, format!("http://{addr}{PATH}"), &signed)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    assert_eq!(upstream.applied_keys().len(), 1);
    let metrics = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("adcp_gateway_forwarded_total 1\n"), "{metrics}");

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
    assert!(rest.contains("draining"), "{rest}");
    // The access log: status, outcome, verified identity; never the body.
    assert!(rest.contains("webhook 200 forwarded "), "{rest}");
    assert!(
        rest.contains(&format!("sender={AGENT:?} keyid=\"gw-test-key\"")),
        "{rest}"
    );
    assert!(!rest.contains("mb_a"), "{rest}");
}

#[test]
fn usage_errors_exit_2_and_secrets_stay_out_of_the_output() {
    let dir = TempDir::new("cli-usage");
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command.arg("gateway").args(args).current_dir(&dir.0);
        for (k, v) in envs {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    // No keys.
    let (code, out) = run(&["--upstream", "http://127.0.0.1:9/events"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--jwks"), "{out}");
    // No upstream.
    let (code, out) = run(&["--jwks", "missing.json"], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--upstream"), "{out}");
    // A store that cannot be opened: the password is not printed.
    std::fs::write(dir.0.join("k.json"), r#"{"keys":[]}"#).unwrap();
    let (code, out) = run(
        &[
            "--upstream",
            "http://127.0.0.1:9/events",
            "--jwks",
            "k.json",
            "--store",
            "postgres://adcp:hunter2-secret@127.0.0.1:1/db",
        ],
        &[("ADCP_GATEWAY_HMAC_SECRET", "hmac-secret-value")],
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(!out.contains("hunter2-secret"), "{out}");
    assert!(!out.contains("hmac-secret-value"), "{out}");
    assert!(out.contains("***@127.0.0.1:1"), "{out}");
}
