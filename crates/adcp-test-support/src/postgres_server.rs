//! A private PostgreSQL server for one test process, started from the
//! locally installed binaries when `DATABASE_URL` does not answer (see
//! [`crate::database_url`]).
//!
//! `initdb` creates a cluster with a `root` superuser and `trust`
//! authentication in a fresh temporary directory, `pg_ctl` starts it on a
//! free port of 127.0.0.1 (its Unix socket in the same directory, `fsync`
//! off: the data is thrown away), and `createdb` adds the `test` database,
//! so the URL has the shape of the default
//! `postgres://root@127.0.0.1:PORT/test`.
//!
//! Cleanup: before anything is started, a sidecar (`sh`, in its own process
//! group, see `watchdog.rs`) begins polling this process; once it has exited
//! — normally, on a panic or killed — the sidecar runs
//! `pg_ctl stop -m immediate` and removes the directory. No destructor or
//! `atexit` hook is involved (statics are never dropped, and `atexit` would
//! need `unsafe`), so the server goes away even when the test binary is
//! killed.
//!
//! The binaries are looked up on `PATH`, then under
//! `/usr/lib/postgresql/*/bin` (Debian and Ubuntu keep them there), newest
//! version first. PostgreSQL refuses to run as root, so as root the server
//! commands run through `setpriv` as the `postgres` user (else `nobody`),
//! which then owns the directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::redis_server::free_port;

/// Where `initdb`, `pg_ctl` and `createdb` live: the directory of `initdb`
/// on `PATH` (symlinks resolved) or the newest `/usr/lib/postgresql/*/bin`.
pub fn bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("initdb"))
            .find(|initdb| initdb.is_file())
            .and_then(|initdb| std::fs::canonicalize(initdb).ok())
            .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
            .filter(|dir| has_tools(dir))
    });
    on_path.or_else(|| {
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let version = entry.file_name().to_str()?.split('.').next()?.parse().ok()?;
                Some((version, entry.path().join("bin")))
            })
            .filter(|(_, dir)| has_tools(dir))
            .collect();
        versions.sort();
        versions.pop().map(|(_, dir)| dir)
    })
}

/// Starts a private server (see the module docs) and returns its URL,
/// `postgres://root@127.0.0.1:PORT/test`. `Err` carries the reason, with
/// the output of the command that failed.
pub fn start_private() -> Result<String, String> {
    let bin = bin_dir().ok_or("no `initdb`/`pg_ctl` found on PATH or under /usr/lib/postgresql/*/bin")?;
    let tool = |name: &str| bin.join(name).to_string_lossy().into_owned();
    let user = unprivileged_user()?;
    let dir = fresh_dir()?;
    let data = dir.join("data");
    // Commands that must not run as root get this prefix.
    let as_user: Vec<String> = match &user {
        Some(user) => vec![
            "setpriv".into(),
            format!("--reuid={user}"),
            format!("--regid={user}"),
            "--clear-groups".into(),
        ],
        None => Vec::new(),
    };
    let run = |what: &str, args: Vec<String>| -> Result<(), String> {
        let mut argv: Vec<String> = as_user.clone();
        argv.extend(args);
        let output = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{what}: could not run `{}`: {e}", argv[0]))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    };

    // The sidecar first: whatever happens next, the directory goes away.
    let mut stop: Vec<String> = as_user.clone();
    stop.extend([
        tool("pg_ctl"),
        "-D".into(),
        path(&data),
        "-m".into(),
        "immediate".into(),
    ]);
    stop.extend(["-w".into(), "stop".into()]);
    if let Err(e) = crate::watchdog::spawn(&dir, &stop.iter().map(String::as_str).collect::<Vec<_>>()) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    if let Some(user) = &user {
        let chown = Command::new("chown")
            .arg(format!("{user}:"))
            .arg(&dir)
            .status()
            .map_err(|e| format!("chown {user}: {}: {e}", dir.display()))?;
        if !chown.success() {
            return Err(format!("chown {user}: {} failed ({chown})", dir.display()));
        }
    }

    run(
        "initdb",
        vec![
            tool("initdb"),
            "-D".into(),
            path(&data),
            "-U".into(),
            "root".into(),
            "--auth=trust".into(),
            "-E".into(),
            "UTF8".into(),
            "--locale=C".into(),
            "--no-sync".into(),
        ],
    )?;
    let port = free_port();
    let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", path(&dir));
    let log = dir.join("server.log");
    // Its own process group: a Ctrl-C on the test run leaves the server to
    // the sidecar, which stops it once the test process is gone.
    let mut argv = as_user.clone();
    argv.extend([tool("pg_ctl"), "-D".into(), path(&data), "-l".into(), path(&log)]);
    argv.extend(["-o".into(), options, "-w".into(), "start".into()]);
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).stdin(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let output = command.output().map_err(|e| format!("pg_ctl start: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "pg_ctl start failed ({}): {}{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        ));
    }
    let createdb = if bin.join("createdb").is_file() {
        tool("createdb")
    } else {
        "createdb".to_owned()
    };
    let port = port.to_string();
    let created = Command::new(&createdb)
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "root", "test"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run `{createdb}`: {e}"))?;
    if !created.status.success() {
        return Err(format!(
            "createdb test failed ({}): {}",
            created.status,
            String::from_utf8_lossy(&created.stderr)
        ));
    }
    Ok(format!("postgres://root@127.0.0.1:{port}/test"))
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A new, empty directory under the system temp dir.
fn fresh_dir() -> Result<PathBuf, String> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!(
        "adcp-test-postgres-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// `None` when not root; as root, the user the server runs as: `postgres`
/// if it exists, else `nobody`.
fn unprivileged_user() -> Result<Option<String>, String> {
    let id = |args: &[&str]| {
        Command::new("id")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    if id(&["-u"]).as_deref() != Some("0") {
        return Ok(None);
    }
    let user = ["postgres", "nobody"]
        .into_iter()
        .find(|user| id(&["-u", user]).is_some())
        .ok_or("running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as")?;
    Ok(Some(user.to_owned()))
}
