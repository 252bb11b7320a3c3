//! The hidden test-only flags that point `adcp-sig` at a local HTTPS test
//! server (`crates/adcp-jwks/tests/common`): trust its CA, allow loopback, and
//! resolve each of its host names to 127.0.0.1.
#![allow(dead_code, clippy::unwrap_used)] // test code: failing loudly is the point

use std::path::Path;

/// The flags for a server whose CA certificate (DER) is at `ca_path` and
/// whose certificate covers `names`.
pub fn flags(ca_path: &Path, names: &[String]) -> Vec<String> {
    let mut flags = vec![
        "--dangerously-trust-ca-for-tests".to_owned(),
        ca_path.to_str().unwrap().to_owned(),
        "--dangerously-allow-loopback-for-tests".to_owned(),
    ];
    for name in names {
        flags.push("--dangerously-resolve-for-tests".to_owned());
        flags.push(format!("{name}=127.0.0.1"));
    }
    flags
}
