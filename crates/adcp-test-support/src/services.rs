//! The PostgreSQL and Redis servers of the tests: `DATABASE_URL` /
//! `REDIS_URL` when they answer, else a private server per test process.

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::Duration;

const DEFAULT_DATABASE_URL: &str = "postgres://root@127.0.0.1:5432/test";
const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// The PostgreSQL server of the tests.
///
/// `DATABASE_URL` (default `postgres://root@127.0.0.1:5432/test`) when
/// something accepts TCP connections at its host and port; otherwise a
/// private server started once per process from the installed binaries
/// (see [`crate::postgres_server`]), stopped and removed after the process
/// exits.
///
/// # Panics
///
/// When neither works (PostgreSQL not answering and not installed): see
/// [`redis_url`].
pub fn database_url() -> String {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    resolve(&URL, "DATABASE_URL", DEFAULT_DATABASE_URL, 5432, || {
        if crate::postgres_server::bin_dir().is_none() {
            return Err(None);
        }
        crate::postgres_server::start_private().map_err(Some)
    })
}

/// The shared Redis of the tests.
///
/// `REDIS_URL` (default `redis://127.0.0.1:6379`) when something accepts
/// TCP connections at its host and port; otherwise a private, non-persistent
/// `redis-server` started once per process, stopped and removed after the
/// process exits.
///
/// # Panics
///
/// When neither works (Redis not answering and `redis-server` not
/// installed). The first call prints one line naming the service, the
/// variable and what to install, straight to the process's stderr (past
/// the harness's capture); then this call and every later one fails its
/// test with that same message (captured, shown with the test's output)
/// through [`std::panic::resume_unwind`]: no panic hook, so no backtrace
/// repeated per test, and the test's destructors still run (a test-owned
/// `redis-server` is still stopped), which ending the process would skip.
pub fn redis_url() -> String {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    resolve(
        &URL,
        "REDIS_URL",
        DEFAULT_REDIS_URL,
        6379,
        crate::redis_server::start_private,
    )
}

/// `start`: `Err(None)` when the binaries are missing, `Err(Some(why))`
/// when they failed.
fn resolve(
    cell: &OnceLock<Result<String, String>>,
    var: &str,
    default: &str,
    default_port: u16,
    start: impl FnOnce() -> Result<String, Option<String>>,
) -> String {
    let resolved = cell.get_or_init(|| {
        let set = std::env::var(var).ok();
        let url = set.clone().unwrap_or_else(|| default.to_owned());
        if answers(&url, default_port) {
            return Ok(url);
        }
        let (service, install) = if var == "DATABASE_URL" {
            (
                "PostgreSQL",
                "install PostgreSQL (Debian/Ubuntu: postgresql, and stop the cluster it starts on 5432 \
                 unless `root` may use its database `test`; macOS: brew install postgresql)",
            )
        } else {
            (
                "Redis",
                "install Redis (Debian/Ubuntu: redis-server; macOS: brew install redis)",
            )
        };
        let at = format!("{var}={url}{}", if set.is_some() { "" } else { " (the default)" });
        let message = match start() {
            Ok(private) => {
                eprintln!(
                    "adcp-test-support: {service} is not answering at {at}; \
                     using a private server at {private}, stopped when this test process exits"
                );
                return Ok(private);
            }
            Err(None) => format!(
                "{service} is not answering at {at} and its server binaries are not installed \
                 to start a private one: {install}, or set {var} to a running server"
            ),
            Err(Some(why)) => format!(
                "{service} is not answering at {at}, and starting a private server failed: {why}\n\
                 Set {var} to a running server, or fix the local {service} installation"
            ),
        };
        // Straight to the process's stderr: the harness captures only
        // `eprintln!`.
        let _ = writeln!(std::io::stderr(), "\nerror: {message}\n");
        Err(message)
    });
    match resolved {
        Ok(url) => url.clone(),
        Err(message) => {
            eprintln!("error: {message}");
            std::panic::resume_unwind(Box::new(message.clone()))
        }
    }
}

/// Whether something accepts a TCP connection at the URL's host and port
/// (within a second). A URL whose host cannot be read here (a Unix socket,
/// several hosts) counts as answering: the tests then report what they get.
fn answers(url: &str, default_port: u16) -> bool {
    let Some((host, port)) = host_port(url, default_port) else {
        return true;
    };
    let Ok(addresses) = (host.as_str(), port).to_socket_addrs() else {
        return false;
    };
    addresses
        .into_iter()
        .any(|address| TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok())
}

/// `scheme://[user[:password]@]host[:port][/…]` → `(host, port)`.
fn host_port(url: &str, default_port: u16) -> Option<(String, u16)> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() || host_port.contains(',') {
        return None;
    }
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => {
            let (host, tail) = v6.split_once(']')?;
            (host, tail.strip_prefix(':'))
        }
        None => match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => default_port,
    };
    Some((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn reads_host_and_port() {
        let hp = |url| host_port(url, 5432);
        assert_eq!(
            hp("postgres://root@127.0.0.1:5432/test"),
            Some(("127.0.0.1".into(), 5432))
        );
        assert_eq!(
            hp("postgres://u:p@db.example/test?x=1"),
            Some(("db.example".into(), 5432))
        );
        assert_eq!(hp("redis://127.0.0.1:1"), Some(("127.0.0.1".into(), 1)));
        assert_eq!(hp("redis://[::1]:6380/0"), Some(("::1".into(), 6380)));
        assert_eq!(hp("postgres:///test?host=/var/run/postgresql"), None);
        assert_eq!(hp("redis+cluster://a:1,b:2"), None);
    }
}
