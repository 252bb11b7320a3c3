//! A sidecar that cleans up after the test process once it has exited.
//!
//! A test binary never runs destructors of statics, and registering an
//! `atexit` handler needs `unsafe` (denied in this workspace). So each
//! private server gets a small `sh` process, spawned detached in its own
//! process group (a Ctrl-C aimed at the test run does not reach it), that
//! polls the test process with `kill -0` once a second; when the test
//! process is gone — however it ended: normal exit, panic, `SIGKILL` — the
//! sidecar runs the stop command and removes the server's directory, then
//! exits. Its standard streams are `/dev/null`, so it never holds the
//! pipes of whoever runs `cargo test`.

use std::path::Path;
use std::process::{Command, Stdio};

const SCRIPT: &str = r#"trap '' INT HUP
pid=$1; dir=$2; shift 2
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
"$@" >/dev/null 2>&1
rm -rf "$dir"
"#;

/// Spawns the sidecar: once this process has exited, it runs `stop` (a
/// program and its arguments) and then `rm -rf dir`.
pub(crate) fn spawn(dir: &Path, stop: &[&str]) -> Result<(), String> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .arg("adcp-test-watchdog")
        .arg(std::process::id().to_string())
        .arg(dir)
        .args(stop)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
        .spawn()
        .map(drop)
        .map_err(|e| format!("could not spawn the cleanup sidecar (`sh`): {e}"))
}
