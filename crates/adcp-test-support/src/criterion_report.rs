//! Reading criterion's estimates to report ratios measured in one run.

use std::path::{Path, PathBuf};

/// Criterion's output directory: `$CRITERION_HOME`, else
/// `$CARGO_TARGET_DIR/criterion`, else the nearest `target/criterion`
/// above `start` (pass `env!("CARGO_MANIFEST_DIR")`).
pub fn criterion_dir(start: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(dir).join("criterion"));
    }
    start
        .ancestors()
        .map(|a| a.join("target").join("criterion"))
        .find(|p| p.is_dir())
}

/// Mean time per iteration, in nanoseconds, of benchmark `id` (the path
/// below criterion's directory: `group/function` or `group/function/input`)
/// from the latest run.
pub fn criterion_mean_ns(start: &Path, id: &str) -> Option<f64> {
    let path = criterion_dir(start)?.join(id).join("new").join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<serde_json::Value>(&text).ok()?["mean"]["point_estimate"].as_f64()
}
