//! A test-owned `redis-server`: a child process on a free port with its
//! own directory and AOF (`appendfsync always` unless told otherwise), killed and removed on drop
//! (even when the test fails).

// Test infrastructure: a missing `redis-server` or a failed spawn should
// fail the test at once, loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A `redis-server` child process.
pub struct Server {
    port: u16,
    dir: PathBuf,
    cluster: bool,
    fsync: &'static str,
    child: Option<Child>,
}

impl Server {
    /// A standalone server with `maxmemory-policy policy`.
    pub fn start(port: u16, dir: PathBuf, policy: &str) -> Self {
        Self::start_with(port, dir, policy, false)
    }

    /// A single-node Redis Cluster owning every slot: it enforces the
    /// cluster's rules (a script whose keys span slots fails with
    /// `CROSSSLOT`) without `MOVED` redirections.
    pub fn start_cluster_node(port: u16, dir: PathBuf) -> Self {
        let server = Self::start_with(port, dir, "noeviction", true);
        wait_cluster_ok(&port.to_string(), &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
        server
    }

    /// A standalone, non-evicting server with `appendfsync fsync`
    /// (`always`, `everysec` or `no`).
    pub fn start_with_fsync(port: u16, dir: PathBuf, fsync: &'static str) -> Self {
        let mut server = Self::new(port, dir, false);
        server.fsync = fsync;
        server.spawn("noeviction");
        server
    }

    fn new(port: u16, dir: PathBuf, cluster: bool) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        Server {
            port,
            dir,
            cluster,
            fsync: "always",
            child: None,
        }
    }

    fn start_with(port: u16, dir: PathBuf, policy: &str, cluster: bool) -> Self {
        let mut server = Self::new(port, dir, cluster);
        server.spawn(policy);
        server
    }

    /// Starts (or restarts, on the same directory and AOF) the server.
    pub fn spawn(&mut self, policy: &str) {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", self.fsync, "--daemonize", "no"])
            .args(["--maxmemory-policy", policy])
            .arg("--dir")
            .arg(&self.dir);
        if self.cluster {
            command.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whoever answers on the port must be our child, not a server that
        // already held it (ours then exits on a failed bind).
        std::thread::sleep(Duration::from_millis(50));
        if let Some(child) = self.child.as_mut() {
            assert!(
                matches!(child.try_wait(), Ok(None)),
                "redis-server on port {} exited at start (port taken?)",
                self.port
            );
        }
    }

    /// SIGKILL: no graceful shutdown, only the AOF survives.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port nothing listens on right now.
///
/// Taken from 15000–21999, below the kernel's ephemeral range (32768+), with
/// `port + 10000` free too: a cluster node also binds its bus port there,
/// and an ephemeral port handed to a client or to `bind(0)` elsewhere can
/// then never be one of them. Each process walks its own stride of the
/// range, and a port is returned once per process.
pub fn free_port() -> u16 {
    const LOW: u32 = 15_000;
    const SPAN: u32 = 7_000;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let start = (std::process::id() % 700) * 10;
    let bindable = |port: u32| u16::try_from(port).is_ok_and(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok());
    for _ in 0..SPAN {
        let offset = (start + NEXT.fetch_add(1, Ordering::Relaxed) as u32) % SPAN;
        let port = LOW + offset;
        if bindable(port) && bindable(port + 10_000) {
            return u16::try_from(port).unwrap_or(0);
        }
    }
    panic!("no free port pair in {LOW}..{}", LOW + SPAN);
}

/// A fresh directory name under the system temp dir.
pub fn temp_dir(tag: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::env::temp_dir().join(format!(
        "adcp-test-redis-{tag}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A test-owned Redis Cluster of `n` primaries (no replicas), each a
/// [`Server`] on a free port; stopped and removed on drop.
pub struct Cluster {
    /// The primaries, in slot order.
    pub nodes: Vec<Server>,
}

impl Cluster {
    /// Starts `n` cluster-mode servers and joins them with
    /// `redis-cli --cluster create`, which spreads the 16,384 slots.
    pub fn start(n: usize) -> Self {
        let nodes: Vec<Server> = (0..n)
            .map(|_| Server::start_with(free_port(), temp_dir("cluster-member"), "noeviction", true))
            .collect();
        let addresses: Vec<String> = nodes.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli on PATH");
        assert!(
            created.status.success(),
            "{}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in &nodes {
            loop {
                let info = Command::new("redis-cli")
                    .args(["-p", &node.port.to_string(), "CLUSTER", "INFO"])
                    .output()
                    .expect("redis-cli on PATH");
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not become ready");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Cluster { nodes }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,…`, as `RedisStore::connect` takes it.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }
}

/// Starts a private, non-persistent `redis-server` for the shared-Redis
/// tests when `REDIS_URL` does not answer (see [`crate::redis_url`]) and
/// returns its URL, `redis://127.0.0.1:PORT`.
///
/// Unlike [`Server`], it outlives every test of the process: a sidecar
/// (see `watchdog.rs`) kills it and removes its directory once the test
/// process has exited. `Err(None)`: `redis-server` is not installed.
pub(crate) fn start_private() -> Result<String, Option<String>> {
    start_private_server(false)
}

/// A private single-node Redis Cluster owning every slot, started once per
/// test process and outliving its tests (the same sidecar removes it): for
/// suites that give each store its own key prefix instead of its own
/// server. A node turns `cluster_state:ok` only about two seconds after it
/// starts (Redis delays a restarted primary's writes), so one node per
/// process instead of one per test saves those seconds per test.
///
/// # Panics
///
/// When `redis-server` is missing or the node does not become ready.
pub fn private_cluster_node_url() -> String {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        let url = match start_private_server(true) {
            Ok(url) => url,
            Err(None) => panic!("redis-server is not installed (the Redis Cluster tests need it)"),
            Err(Some(why)) => panic!("{why}"),
        };
        let port = url.rsplit(':').next().unwrap_or_default().to_owned();
        wait_cluster_ok(&port, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
        url
    })
    .clone()
}

/// Gives the node at `port` its slots (`add`) and waits for
/// `cluster_state:ok`.
fn wait_cluster_ok(port: &str, add: &[&str]) {
    let cli = |args: &[&str]| {
        Command::new("redis-cli")
            .args(["-p", port])
            .args(args)
            .output()
            .expect("redis-cli on PATH")
    };
    let added = cli(add);
    assert!(
        String::from_utf8_lossy(&added.stdout).contains("OK"),
        "{}",
        String::from_utf8_lossy(&added.stdout)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = cli(&["CLUSTER", "INFO"]);
        if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
            return;
        }
        assert!(Instant::now() < deadline, "the cluster node did not become ready");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_private_server(cluster: bool) -> Result<String, Option<String>> {
    let port = free_port();
    let dir = temp_dir(if cluster { "shared-cluster" } else { "shared" });
    std::fs::create_dir_all(&dir).map_err(|e| Some(format!("{}: {e}", dir.display())))?;
    let mut command = Command::new("redis-server");
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
        .args(["--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(&dir);
    if cluster {
        command.args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]);
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // Its own process group: a Ctrl-C on the test run leaves it to the
    // sidecar.
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err((e.kind() != std::io::ErrorKind::NotFound).then(|| format!("redis-server: {e}")));
        }
    };
    let pid = child.id().to_string();
    if let Err(e) = crate::watchdog::spawn(&dir, &["kill", &pid]) {
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
        return Err(Some(e));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline || !matches!(child.try_wait(), Ok(None)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let answers = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    // Whoever answers must be our child, not a server that already held
    // the port (ours then exits on a failed bind).
    std::thread::sleep(Duration::from_millis(50));
    if answers && matches!(child.try_wait(), Ok(None)) {
        return Ok(format!("redis://127.0.0.1:{port}"));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(Some(format!(
        "redis-server on port {port} exited at start or did not answer"
    )))
}
