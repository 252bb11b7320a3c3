//! Finds the official AdCP conformance suite on disk.
//!
//! The suite is data, not part of this repository. It is looked up, in
//! order, at `$ADCP_VECTORS_DIR`, at `shared/vectors/adcp` in the workspace's
//! parent directories (the workplace layout), and at `test-vectors/adcp` in
//! the workspace (filled by `scripts/fetch-vectors.sh`). When `CI=true` and
//! no suite is found, [`require_dir`] fails instead of letting tests skip.
//! The AdCP 3.2 JSON Schemas of the webhook kinds are found the same way
//! ([`schemas_dir`], [`require_schemas_dir`]).
//!
//! ```
//! match adcp_vectors::dir() {
//!     Some(dir) => assert!(dir.join("request-signing").is_dir()),
//!     None => eprintln!("conformance suite not found; tests that need it skip outside CI"),
//! }
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

use std::path::{Path, PathBuf};

/// The workspace root (two levels above this crate's manifest).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

fn is_suite(dir: &Path) -> bool {
    dir.join("request-signing").is_dir()
}

/// The conformance suite directory, if one can be found.
pub fn dir() -> Option<PathBuf> {
    if let Some(env) = std::env::var_os("ADCP_VECTORS_DIR") {
        let dir = PathBuf::from(env);
        return is_suite(&dir).then_some(dir);
    }
    let root = workspace_root();
    for ancestor in root.ancestors().skip(1) {
        let dir = ancestor.join("shared").join("vectors").join("adcp");
        if is_suite(&dir) {
            return Some(dir);
        }
    }
    let fetched = root.join("test-vectors").join("adcp");
    is_suite(&fetched).then_some(fetched)
}

/// Whether this run is on CI (`CI=true`), where a missing suite is an error.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The suite directory for a test. Returns `Ok(None)` (skip, with a note on
/// stderr) when the suite is missing outside CI, and an error on CI.
pub fn require_dir() -> Result<Option<PathBuf>, String> {
    match dir() {
        Some(dir) => Ok(Some(dir)),
        None if on_ci() => Err("AdCP conformance vectors not found (set ADCP_VECTORS_DIR or run scripts/fetch-vectors.sh); CI=true, refusing to skip".into()),
        None => {
            eprintln!("AdCP conformance vectors not found; skipping (set ADCP_VECTORS_DIR)");
            Ok(None)
        }
    }
}

fn is_schema_dir(dir: &Path) -> bool {
    dir.join("core").join("mcp-webhook-payload.json").is_file()
}

/// The AdCP 3.2 JSON Schema directory (the webhook subset), if one can be
/// found: `$ADCP_SCHEMAS_DIR`, else `shared/spec/adcp/schemas/3.2` in the
/// workspace's parent directories. Like the suite, the schemas are read
/// where they are, never copied into the repository.
pub fn schemas_dir() -> Option<PathBuf> {
    if let Some(env) = std::env::var_os("ADCP_SCHEMAS_DIR") {
        let dir = PathBuf::from(env);
        return is_schema_dir(&dir).then_some(dir);
    }
    workspace_root().ancestors().skip(1).find_map(|ancestor| {
        let dir = ancestor
            .join("shared")
            .join("spec")
            .join("adcp")
            .join("schemas")
            .join("3.2");
        is_schema_dir(&dir).then_some(dir)
    })
}

/// The schema directory for a test. Returns `Ok(None)` (skip, with a note
/// on stderr) when it is missing outside CI, and an error on CI.
pub fn require_schemas_dir() -> Result<Option<PathBuf>, String> {
    match schemas_dir() {
        Some(dir) => Ok(Some(dir)),
        None if on_ci() => {
            Err("AdCP 3.2 JSON Schemas not found (set ADCP_SCHEMAS_DIR); CI=true, refusing to skip".into())
        }
        None => {
            eprintln!("AdCP 3.2 JSON Schemas not found; skipping (set ADCP_SCHEMAS_DIR)");
            Ok(None)
        }
    }
}

/// Reads and parses a JSON file of the suite, by path relative to it.
pub fn load_json(suite: &Path, relative: &str) -> Result<serde_json::Value, String> {
    let path = suite.join(relative);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The key a vector signs with: the member of the suite's key file `keys`
/// (relative to the suite, e.g. `webhook-signing/keys.json`) whose `kid`
/// is the vector's first `jwks_ref`, with its test-only private member.
pub fn referenced_jwk(suite: &Path, keys: &str, vector: &serde_json::Value) -> Result<serde_json::Value, String> {
    let kid = &vector["jwks_ref"][0];
    load_json(suite, keys)?["keys"]
        .as_array()
        .and_then(|all| all.iter().find(|k| &k["kid"] == kid))
        .cloned()
        .ok_or_else(|| format!("{keys}: no key with kid {kid}"))
}

/// A request as the conformance vectors (and `adcp-sig base --request`)
/// describe it: `{"method", "url", "headers": {name: value | [values]}, "body"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorRequest {
    /// The request method.
    pub method: String,
    /// The absolute request URL as sent.
    pub url: String,
    /// Header field lines; a JSON array value becomes several lines.
    pub headers: Vec<(String, String)>,
    /// The body, if any (UTF-8 text in the vectors).
    pub body: Option<String>,
}

impl VectorRequest {
    /// Reads the request object of a vector (or a stand-alone request file).
    pub fn from_json(value: &serde_json::Value) -> Result<Self, String> {
        let text = |key: &str| {
            value[key]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("request.{key} must be a string"))
        };
        let mut headers = Vec::new();
        if let Some(map) = value["headers"].as_object() {
            for (name, v) in map {
                match v {
                    serde_json::Value::String(s) => headers.push((name.clone(), s.clone())),
                    serde_json::Value::Array(lines) => {
                        for line in lines {
                            let s = line
                                .as_str()
                                .ok_or_else(|| format!("request.headers.{name} lines must be strings"))?;
                            headers.push((name.clone(), s.to_owned()));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "request.headers.{name} must be a string or an array of strings"
                        ))
                    }
                }
            }
        } else if !value["headers"].is_null() {
            return Err("request.headers must be an object".into());
        }
        let body = match &value["body"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(s) => Some(s.clone()),
            _ => return Err("request.body must be a string".into()),
        };
        Ok(Self {
            method: text("method")?,
            url: text("url")?,
            headers,
            body,
        })
    }
}

/// Every `*.json` file under `suite/relative` (recursively), sorted.
pub fn json_files(suite: &Path, relative: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&suite.join(relative), &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_dir_is_recognized_by_its_envelope_schema() {
        let empty = std::env::temp_dir().join("adcp-vectors-no-schemas");
        assert!(!is_schema_dir(&empty));
        if let Some(dir) = schemas_dir() {
            assert!(dir.join("core").join("webhook-challenge.json").is_file());
        }
    }

    #[test]
    fn require_schemas_dir_agrees_with_schemas_dir() {
        match require_schemas_dir() {
            Ok(found) => assert_eq!(found, schemas_dir()),
            Err(_) => assert!(on_ci() && schemas_dir().is_none()),
        }
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
