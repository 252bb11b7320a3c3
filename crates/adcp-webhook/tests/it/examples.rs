//! The examples run against each other on loopback: `seller_send` to
//! `buyer_receive` (axum + SQLite) and to `custom_stack` (no framework).
//! `cargo test` builds the examples before the tests; when a filtered run
//! did not build them, the test is skipped (and fails under `CI=true`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent()?.parent()?.join("examples");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "example {name} not built at {}",
        path.display()
    );
    eprintln!("skipping: example {name} not built (run the whole `cargo test`)");
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts a receiver example and waits for its "listening" line.
fn start(path: &PathBuf, args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(path)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("receiver did not start");
    assert!(first.contains("http://127.0.0.1:"), "{first}");
    (child, rx)
}

fn seller(path: &PathBuf, url: &str, events: &str, extra: &[&str]) -> String {
    let out = Command::new(path)
        .args(["--url", url, "--events", events])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn collect(rx: &std::sync::mpsc::Receiver<String>, mut until: impl FnMut(&str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let done = until(&line);
                lines.push(line);
                if done {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    lines
}

#[test]
fn seller_send_to_buyer_receive_and_custom_stack() {
    let (Some(seller_bin), Some(buyer_bin), Some(custom_bin)) = (
        example("seller_send"),
        example("buyer_receive"),
        example("custom_stack"),
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("adcp-webhook-examples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // axum + SQLite buyer: three task events applied, the re-send
    // acknowledged; the subscription activated, then its notification
    // applied.
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let db = dir.join("dedup.sqlite");
    let (mut buyer, rx) = start(
        &buyer_bin,
        &["--bind", &bind, "--db", db.to_str().unwrap(), "--max-events", "4"],
    );
    let notify = format!("http://{bind}/webhooks/notifications");
    let out = seller(
        &seller_bin,
        &format!("http://{bind}/webhooks/adcp"),
        "3",
        &["--notify", &notify],
    );
    assert_eq!(out.matches("-> Delivered { status: 200 }").count(), 5, "{out}");
    assert!(out.contains("a duplicate: acknowledged, not applied twice"), "{out}");
    assert!(out.contains(&format!("activation of {notify} -> activated")), "{out}");
    let lines = collect(&rx, |l| l.starts_with("outcomes:"));
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("applied ")).count(),
        4,
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("op_demo_001")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("creative.status_changed notification crv_demo_15s.review.1")),
        "{lines:?}"
    );
    let outcomes = lines.last().unwrap();
    assert!(
        outcomes.contains("\"accepted\": 4")
            && outcomes.contains("\"duplicate\": 1")
            && outcomes.contains("\"challenge_answered\": 1"),
        "{outcomes}"
    );
    assert!(buyer.wait().unwrap().success());

    // The framework-free receiver.
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let (mut custom, rx) = start(&custom_bin, &["--bind", &bind]);
    let out = seller(&seller_bin, &format!("http://{bind}/webhooks/adcp"), "2", &[]);
    assert_eq!(out.matches("-> Delivered { status: 200 }").count(), 3, "{out}");
    let mut applying = 0;
    let lines = collect(&rx, |l| {
        applying += usize::from(l.starts_with("applying "));
        applying == 2
    });
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("applying ")).count(),
        2,
        "{lines:?}"
    );
    custom.kill().unwrap();
    custom.wait().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
