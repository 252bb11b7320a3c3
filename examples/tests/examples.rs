//! Runs every example and checks it exits 0: each one starts its own
//! counterpart on loopback and fails (exit 1) when its scenario does not
//! hold. `cargo test` builds the examples before the tests; when a
//! filtered run did not build them, the test is skipped (and fails under
//! `CI=true`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

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

/// Runs `name` to completion; returns its standard output.
fn run(name: &str) -> Option<String> {
    let path = example(name)?;
    let out = Command::new(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("{name}: ok")), "{stdout}");
    Some(stdout)
}

#[test]
fn seller_send() {
    if let Some(out) = run("seller_send") {
        assert!(out.contains("activation of"), "{out}");
        assert!(out.contains("webhook_activity"), "{out}");
    }
}

#[test]
fn buyer_receive() {
    if let Some(out) = run("buyer_receive") {
        assert!(out.contains("forged request -> 401"), "{out}");
        assert_eq!(out.matches("applied ").count(), 4, "{out}");
    }
}

#[test]
fn custom_stack() {
    if let Some(out) = run("custom_stack") {
        assert_eq!(out.matches("applying ").count(), 2, "{out}");
    }
}

#[test]
fn embed_gateway() {
    if let Some(out) = run("embed_gateway") {
        assert_eq!(
            out.matches("upstream: event from https://seller.example/mcp").count(),
            3,
            "{out}"
        );
    }
}

#[test]
fn buyer_call() {
    if let Some(out) = run("buyer_call") {
        assert!(out.contains("get_adcp_capabilities primed 1 time(s)"), "{out}");
        assert!(
            out.contains("create_media_buy -> 200 signed=true (required_for)"),
            "{out}"
        );
        assert!(out.contains("get_products -> 200"), "{out}");
    }
}

#[test]
fn seller_mcp_server() {
    if let Some(out) = run("seller_mcp_server") {
        assert!(out.contains("signed call -> 200"), "{out}");
        assert!(out.contains("unsigned call -> 401"), "{out}");
        assert!(out.contains("bearer call -> 200"), "{out}");
        assert!(out.contains("tampered call -> 401"), "{out}");
    }
}
