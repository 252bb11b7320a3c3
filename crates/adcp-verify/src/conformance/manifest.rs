//! The committed manifest: every conformance file's SHA-256 and the vector
//! count per directory, so a missing or altered file fails the run instead
//! of silently shrinking it.

use sha2::{Digest, Sha256};
use std::path::Path;

/// The manifest of AdCP compliance release 3.2.4 (hashes only).
pub const MANIFEST_3_2_4: &str = include_str!("../../../../test-vectors/manifest-3.2.4.json");

/// A parsed manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// `relative path → lowercase hex SHA-256`.
    pub files: Vec<(String, String)>,
    /// `directory → number of vector files`.
    pub counts: Vec<(String, usize)>,
    /// Total vector files.
    pub total: usize,
}

impl Manifest {
    /// Parses a manifest document.
    pub fn parse(text: &str) -> Result<Self, String> {
        let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("manifest: {e}"))?;
        let files = doc["files"]
            .as_object()
            .ok_or("manifest: `files` must be an object")?
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or("manifest: hashes are strings")?.to_owned())))
            .collect::<Result<Vec<_>, &str>>()?;
        let counts = doc["vector_counts"]
            .as_object()
            .ok_or("manifest: `vector_counts` must be an object")?
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_u64().ok_or("manifest: counts are integers")? as usize)))
            .collect::<Result<Vec<_>, &str>>()?;
        let total = doc["vector_total"].as_u64().ok_or("manifest: `vector_total` missing")? as usize;
        Ok(Self { files, counts, total })
    }
}

/// Checks `suite` against `manifest`: every listed file present with the
/// listed hash, and exactly the listed number of `*.json` files in each
/// counted directory. Returns every problem found.
pub fn check_manifest(suite: &Path, manifest: &Manifest) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for (relative, want) in &manifest.files {
        match std::fs::read(suite.join(relative)) {
            Ok(bytes) => {
                let got = hex(&Sha256::digest(&bytes));
                if &got != want {
                    problems.push(format!("{relative}: SHA-256 {got}, manifest says {want}"));
                }
            }
            Err(e) => problems.push(format!("{relative}: {e}")),
        }
    }
    for (dir, want) in &manifest.counts {
        let got = std::fs::read_dir(suite.join(dir))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
            .unwrap_or(0);
        if got != *want {
            problems.push(format!("{dir}: {got} vector files, manifest says {want}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
