//! Helpers shared by the test modules: running the binary and reading its
//! output ([`adcp_sig`], [`adcp_sig_async`], [`stdout`], [`stderr`],
//! [`json_lines`], [`s`]), the gateway fixtures ([`gateway`]), the hidden
//! test-only network flags ([`test_network`]) and the local HTTPS server of
//! `adcp-jwks`'s tests ([`jwks`]).
#![allow(dead_code)]

pub mod gateway;
/// The local HTTPS test server of `adcp-jwks`'s tests (the same file, not
/// a copy).
#[path = "../../../../adcp-jwks/tests/common/mod.rs"]
pub mod jwks;
pub mod test_network;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the `adcp-sig` binary with `args` and waits for it.
pub fn adcp_sig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run adcp-sig: {e}"))
}

/// [`adcp_sig`] without blocking the runtime (for tests that serve
/// something in the same process meanwhile).
pub async fn adcp_sig_async(args: Vec<String>) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run adcp-sig: {e}"))
}

/// The process's stdout, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The process's stderr, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One JSON value per line of stdout.
pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// A path as an argument.
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}
