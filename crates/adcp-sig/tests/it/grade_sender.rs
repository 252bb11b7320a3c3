//! `adcp-sig grade sender` (the binary) against our own relay: the grader
//! prints its push_notification_config and listening line, the relay
//! delivers task webhooks registered with it (retrying the `503` the grader
//! answers to each first delivery, within its one-second retry base), and
//! nothing fails. Then the exit codes of a failing run and of usage errors.

use crate::relay_support::{enqueue, key, prefix, Base, Relay, RelaySpec};
use crate::support::gateway::{http_client, TempDir};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `adcp-sig grade sender`: its registration, and every stdout
/// line after the listening line once it exits.
struct Grader {
    child: Child,
    registration: Value,
    listening: String,
    rest: std::sync::mpsc::Receiver<String>,
}

impl Grader {
    /// Starts the grader with `args` and waits for its listening line.
    fn start(jwks: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
            .args(["grade", "sender", "--listen", "127.0.0.1:0", "--jwks"])
            .arg(jwks)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let next = || rx.recv_timeout(Duration::from_secs(60)).unwrap();
        let registration: Value = serde_json::from_str(&next()).unwrap();
        let listening = next();
        assert!(listening.starts_with("listening on http://127.0.0.1:"), "{listening}");
        Self {
            child,
            registration: registration["push_notification_config"].clone(),
            listening,
            rest: rx,
        }
    }

    /// Waits for the exit: its code and the remaining stdout lines.
    async fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let status = tokio::task::spawn_blocking(move || self.child.wait().unwrap())
            .await
            .unwrap();
        let lines = self.rest.try_iter().collect();
        (status.code(), lines)
    }
}

fn jwks_file(dir: &Path, jwks: &Value) -> std::path::PathBuf {
    let path = dir.join("seller-jwks.json");
    std::fs::write(&path, jwks.to_string()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_passes_grade_sender() {
    let dir = TempDir::new("grade-sender");
    let key = key(&dir.0, "relay-seller-2026");
    let jwks = jwks_file(&dir.0, &key.jwks);
    let spec = RelaySpec::new(
        format!("sqlite:{}", dir.0.join("relay.sqlite").display()),
        &key,
        &prefix("gsend"),
        &dir.0,
    );
    let relay = Relay::start(&spec).await;
    let grader = Grader::start(&jwks, &["--window", "10", "--allow-http", "--json"]);
    let registration = grader.registration.clone();
    let url = registration["url"].as_str().unwrap();
    assert_eq!(
        url,
        format!("{}/webhook", grader.listening.trim_start_matches("listening on "))
    );
    let client = http_client(Duration::from_secs(30)).unwrap();
    let base = Base::new(&relay.base);
    for n in 0..2 {
        // The registration as the seller received it; the relay echoes the
        // operation_id and token into the envelope and mints the key.
        let event = json!({
            "destination": registration,
            "payload": {
                "task_id": format!("task_grade_{n}"),
                "task_type": "create_media_buy",
                "status": "completed",
                "timestamp": "2026-12-07T06:00:00Z",
                "result": {"media_buy_id": format!("mb_{n}")},
            },
        });
        enqueue(&client, &base, &event, Duration::from_secs(30)).await;
    }
    let (code, lines) = grader.finish().await;
    let report: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(report["failed"], 0, "{report:#}\n{}", relay.log_text());
    assert_eq!(code, Some(0));
    assert_eq!(report["grader"], "sender");
    assert_eq!(
        report["summary"],
        format!("{} passed, 0 failed, {} skipped", report["passed"], report["skipped"])
    );
    let status = |id: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| c["status"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    for id in [
        "sender/delivery",
        "sender/signature",
        "sender/content-type",
        "sender/content-digest",
        "sender/idempotency-key",
        "sender/unpredictable-key",
        "sender/retry-after-503",
        "sender/retry-same-key",
        "sender/retry-same-body",
        "sender/fresh-nonce",
        "sender/no-retry-after-2xx",
        "sender/result",
        "sender/operation-id",
        "sender/token",
    ] {
        assert_eq!(status(id), "passed", "{id}: {report:#}");
    }
    if adcp_vectors::schemas_dir().is_some() {
        assert_eq!(status("sender/schema"), "passed", "{report:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_that_never_comes_exits_1_with_the_closing_line() {
    let dir = TempDir::new("grade-sender-none");
    let key = key(&dir.0, "seller-2026");
    let jwks = jwks_file(&dir.0, &key.jwks);
    let grader = Grader::start(&jwks, &["--window", "1", "--allow-http"]);
    assert!(grader.registration["token"].as_str().is_some_and(|t| t.len() >= 16));
    assert!(grader.registration["operation_id"].as_str().is_some());
    let (code, lines) = grader.finish().await;
    assert_eq!(code, Some(1), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("FAIL sender/delivery")), "{lines:?}");
    assert_eq!(lines.last().map(String::as_str), Some("0 passed, 1 failed, 14 skipped"));
}

#[test]
fn usage_errors_exit_2() {
    let dir = TempDir::new("grade-sender-usage");
    let key = key(&dir.0, "seller-2026");
    let jwks = jwks_file(&dir.0, &key.jwks);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
            .args(["grade", "sender"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let jwks = jwks.to_str().unwrap();
    for args in [
        // No keys.
        vec!["--listen", "127.0.0.1:0", "--allow-http"],
        // Plain HTTP without --allow-http.
        vec!["--listen", "127.0.0.1:0", "--jwks", jwks],
        // A plain-http public URL without --allow-http.
        vec![
            "--listen",
            "127.0.0.1:0",
            "--jwks",
            jwks,
            "--public-url",
            "http://buyer.example/hook",
        ],
        vec![
            "--listen",
            "127.0.0.1:0",
            "--jwks",
            jwks,
            "--allow-http",
            "--window",
            "0",
        ],
        vec!["--listen", "not-an-address", "--jwks", jwks, "--allow-http"],
        vec![
            "--listen",
            "127.0.0.1:0",
            "--jwks",
            "/nonexistent/jwks.json",
            "--allow-http",
        ],
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("listening on"),
            "{args:?}"
        );
    }
    let out = run(&["--listen", "127.0.0.1:0", "--jwks", jwks, "--window", "0", "--json"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["outcome"], "usage_error");
}
