//! One conformance vector file, as data.

use std::path::{Path, PathBuf};

/// What a vector expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The request verifies.
    Accept,
    /// The request is rejected with this exact code.
    Reject {
        /// The spec code.
        code: String,
        /// The checklist step, when the vector names one.
        step: Option<u64>,
    },
}

/// A loaded vector file.
#[derive(Debug, Clone)]
pub struct Vector {
    /// Absolute path.
    pub path: PathBuf,
    /// Path relative to the suite root (`webhook-signing/positive/001-….json`).
    pub relative: String,
    /// The parsed document.
    pub doc: serde_json::Value,
}

impl Vector {
    /// Loads `path`, which must lie under `suite`.
    pub fn load(suite: &Path, path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let doc = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let relative = path.strip_prefix(suite).map_or_else(
            |_| path.display().to_string(),
            |r| r.to_string_lossy().replace('\\', "/"),
        );
        Ok(Self {
            path: path.to_path_buf(),
            relative,
            doc,
        })
    }

    /// The expected outcome.
    pub fn expected(&self) -> Result<Expected, String> {
        let outcome = &self.doc["expected_outcome"];
        match outcome["success"].as_bool() {
            Some(true) => Ok(Expected::Accept),
            Some(false) => Ok(Expected::Reject {
                code: outcome["error_code"]
                    .as_str()
                    .ok_or_else(|| format!("{}: expected_outcome.error_code missing", self.relative))?
                    .to_owned(),
                step: outcome["failed_step"].as_u64(),
            }),
            None => Err(format!("{}: expected_outcome.success missing", self.relative)),
        }
    }

    /// `reference_now`.
    pub fn reference_now(&self) -> Result<i64, String> {
        self.doc["reference_now"]
            .as_i64()
            .ok_or_else(|| format!("{}: reference_now missing", self.relative))
    }
}
