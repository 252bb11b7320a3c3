//! Helpers of the relay acceptance tests (`relay_*.rs`): the `adcp-sig
//! relay` process (started on a store, SIGKILLed, restarted, drained with
//! SIGTERM; killed on drop), its signing key on disk, clients that post
//! events and retry across restarts, sinks listening on many loopback
//! ports (one destination origin each), a private PostgreSQL the test can
//! stop and restart, and a snapshot of an outbox store.
//!
//! Sizes: every test runs a default size that fits in about a minute of a
//! debug build on two cores; `ADCP_RELAY_ACCEPTANCE_FULL=1` runs the
//! counts the acceptance criteria name ([`size`]).
#![allow(dead_code)]

use crate::support::gateway::{http_client, TempDir};
use adcp_outbox::{open_store, BreakerPolicy, EventView, ListFilter, OutboxError};
use adcp_sign::{Algorithm, SoftwareSigner};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The environment variable that selects the full sizes.
pub const FULL_ENV: &str = "ADCP_RELAY_ACCEPTANCE_FULL";

/// Whether the full sizes run (`ADCP_RELAY_ACCEPTANCE_FULL=1`).
pub fn full() -> bool {
    std::env::var(FULL_ENV).is_ok_and(|v| v == "1")
}

/// `default`, or `full` under `ADCP_RELAY_ACCEPTANCE_FULL=1`.
pub fn size(default: usize, full_size: usize) -> usize {
    if full() {
        full_size
    } else {
        default
    }
}

/// A table prefix of its own for one test run (`tag`: a few lowercase
/// letters; the whole stays within the 40 characters allowed).
pub fn prefix(tag: &str) -> String {
    // The gateway tests' unique name (`gw_{tag}_…`), starting `r` instead.
    let unique = crate::support::gateway::unique(tag);
    format!("r{}_", unique.trim_start_matches("gw_"))
}

/// A private signing key on disk, and the JWKS a receiver trusts.
pub struct Key {
    pub private: PathBuf,
    pub jwks: Value,
    pub kid: String,
}

/// Writes a fresh Ed25519 private JWK into `dir`.
pub fn key(dir: &Path, kid: &str) -> Key {
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let private = dir.join(format!("{kid}.jwk"));
    std::fs::write(&private, signer.private_jwk().unwrap().to_json().to_string()).unwrap();
    Key {
        private,
        jwks: signer.jwks().unwrap().to_public_json(),
        kid: kid.to_owned(),
    }
}

/// How to start one relay (again and again, on the same store).
#[derive(Clone)]
pub struct RelaySpec {
    pub store: String,
    pub key: PathBuf,
    pub prefix: String,
    /// More flags (`--concurrency`, `--attempt-timeout-seconds`, …).
    pub args: Vec<String>,
    /// Where the processes' stderr goes, one file per start.
    pub logs: PathBuf,
}

impl RelaySpec {
    pub fn new(store: impl Into<String>, key: &Key, prefix: &str, logs: &Path) -> Self {
        Self {
            store: store.into(),
            key: key.private.clone(),
            prefix: prefix.to_owned(),
            args: Vec::new(),
            logs: logs.to_path_buf(),
        }
    }

    #[must_use]
    pub fn arg(mut self, flag: &str, value: impl ToString) -> Self {
        self.args.push(flag.to_owned());
        self.args.push(value.to_string());
        self
    }
}

/// A running `adcp-sig relay`, killed (SIGKILL) on drop.
pub struct Relay {
    child: Option<Child>,
    /// `http://ADDR` from its listening line.
    pub base: String,
    pub log: PathBuf,
}

static STARTS: AtomicUsize = AtomicUsize::new(0);

impl Relay {
    /// Starts a relay and waits for its listening line.
    pub async fn start(spec: &RelaySpec) -> Self {
        let log = spec
            .logs
            .join(format!("relay-{}.log", STARTS.fetch_add(1, Ordering::Relaxed)));
        let stderr = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_adcp-sig"));
        command
            .arg("relay")
            .args(["--store", &spec.store, "--table-prefix", &spec.prefix])
            .arg("--key")
            .arg(&spec.key)
            .args(["--listen", "127.0.0.1:0", "--allow-http"])
            .args(&spec.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        // Settings come from the flags above only.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("ADCP_RELAY_") {
                command.env_remove(name);
            }
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix("listening on ") {
                    let _ = tx.send(addr.trim().to_owned());
                    break;
                }
            }
            // Keep the pipe drained until the process exits.
            for _ in lines {}
        });
        let base = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(60)))
            .await
            .unwrap();
        match base {
            Ok(base) => Self {
                child: Some(child),
                base,
                log,
            },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the relay did not print its listening line:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGKILL, and reap it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and wait up to `limit` for it to exit; its exit code.
    pub async fn terminate(&mut self, limit: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the relay did not exit within {limit:?} of SIGTERM:\n{}",
                    self.log_text()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET /metrics`.
    pub async fn metrics(&self) -> String {
        get_text(&format!("{}/metrics", self.base)).await.1
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `GET url`: status and body (status 0 when it could not be sent).
pub async fn get_text(url: &str) -> (u16, String) {
    let client = http_client(Duration::from_secs(30)).unwrap();
    match client.get(url).send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
        Err(_) => (0, String::new()),
    }
}

/// `GET url` as JSON, panicking unless `200`.
pub async fn get_json(url: &str) -> Value {
    let (status, body) = get_text(url).await;
    assert_eq!(status, 200, "GET {url}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// The value of the metric line starting with `name ` (e.g.
/// `adcp_outbox_open_breakers`, `adcp_outbox_events{state="pending"}`).
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// The relay's current base URL, shared by clients across restarts.
#[derive(Clone, Default)]
pub struct Base(Arc<RwLock<String>>);

impl Base {
    pub fn new(base: &str) -> Self {
        Self(Arc::new(RwLock::new(base.to_owned())))
    }

    pub fn get(&self) -> String {
        self.0.read().unwrap().clone()
    }

    pub fn set(&self, base: &str) {
        *self.0.write().unwrap() = base.to_owned();
    }
}

/// One `POST /v1/events`: the status and the JSON answer, or the transport
/// error.
pub async fn post_event(client: &reqwest::Client, base: &str, body: &Value) -> Result<(u16, Value), String> {
    let response = client
        .post(format!("{base}/v1/events"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| format!("{e:?}"))?;
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// Posts `body` until the relay accepts it: connection errors (a relay
/// killed or restarting) and `503` are retried against the current
/// [`Base`], with the same payload and key; any other answer fails the
/// test. Returns the event id.
pub async fn enqueue(client: &reqwest::Client, base: &Base, body: &Value, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut last = String::new();
    while Instant::now() < deadline {
        match post_event(client, &base.get(), body).await {
            Ok((202, answer)) => return answer["id"].as_str().unwrap().to_owned(),
            Ok((503, answer)) => last = format!("503 {answer}"),
            Ok((status, answer)) => panic!("POST /v1/events answered {status}: {answer}\nfor {body}"),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("POST /v1/events not accepted within {limit:?}; last: {last}");
}

/// Runs `f(i)` for every `i` in `0..n` on `workers` concurrent tasks;
/// returns the results in index order.
pub async fn for_each_concurrently<T, F, Fut>(n: usize, workers: usize, f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let mut tasks = Vec::new();
    for _ in 0..workers.max(1) {
        let next = Arc::clone(&next);
        let f = Arc::clone(&f);
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                out.push((i, f(i).await));
            }
            out
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, v)| v).collect()
}

/// A task envelope (`create_media_buy` completed) with its own key: a
/// retried `POST` of it is idempotent.
pub fn task_event(url: &str, op: &str, key: &str) -> Value {
    json!({
        "destination": {"url": url, "operation_id": op},
        "payload": {
            "task_id": format!("task_{op}"),
            "task_type": "create_media_buy",
            "status": "completed",
            "timestamp": "2026-04-18T12:00:00Z",
            "operation_id": op,
            "result": {"media_buy_id": format!("mb_{op}")},
            "idempotency_key": key,
        },
    })
}

/// An `account.status_changed` notification (it gets activity records)
/// for `principal`, with its own key.
pub fn notification_event(url: &str, n: usize, key: &str, principal: &str) -> Value {
    json!({
        "destination": {"url": url},
        "notification_type": "account.status_changed",
        "principal": principal,
        "payload": {
            "notification_type": "account.status_changed",
            "notification_id": format!("acct_{n}.status.7"),
            "subscriber_id": "sub_1",
            "fired_at": "2026-04-18T12:00:00Z",
            "account_id": format!("acc_{n}"),
            "status": "active",
            "previous_status": "pending_approval",
            "observed_at": "2026-04-18T11:59:00Z",
            "reason_code": "seller_approved",
            "idempotency_key": key,
        },
    })
}

/// Serves `app` on `n` loopback listeners (each a destination origin of
/// its own: the outbox's breakers and in-flight caps are per origin);
/// stopped on drop.
pub struct Ports {
    pub ports: Vec<u16>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Ports {
    pub async fn serve(n: usize, app: axum::Router) -> Self {
        let mut ports = Vec::with_capacity(n);
        let mut tasks = Vec::with_capacity(n);
        for _ in 0..n {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ports.push(listener.local_addr().unwrap().port());
            let app = app.clone();
            tasks.push(tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            }));
        }
        Self { ports, tasks }
    }

    /// The URL of `path` on the `i`-th origin (modulo their number).
    pub fn url(&self, i: usize, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.ports[i % self.ports.len()])
    }
}

impl Drop for Ports {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Whether this build's outbox opens `postgres://` stores (the relay binary
/// is built with the same features as this test). Checked by opening a URL
/// nothing listens on: a build without PostgreSQL refuses it as
/// configuration at once.
pub async fn postgres_supported() -> bool {
    match tokio::time::timeout(
        Duration::from_secs(20),
        open_store(
            "postgres://root@127.0.0.1:1/none",
            "adcp_outbox_",
            BreakerPolicy::default(),
        ),
    )
    .await
    {
        Ok(Err(OutboxError::Config(message))) => {
            eprintln!("note: this build has no PostgreSQL outbox ({message})");
            false
        }
        _ => true,
    }
}

/// Every event of a store, newest first (paged through `list`).
pub async fn all_events(store: &str, prefix: &str) -> Vec<EventView> {
    let store = open_store(store, prefix, BreakerPolicy::default()).await.unwrap();
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .list(&ListFilter {
                state: None,
                before: before.clone(),
                limit: 1000,
            })
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        before = Some(last.id.clone());
        all.extend(page);
    }
    all
}

/// `adcp-sig outbox list --state STATE` on a store: its output lines.
pub async fn outbox_list(store: &str, prefix: &str, state: &str) -> Vec<String> {
    let out = crate::support::adcp_sig_async(
        [
            "outbox",
            "list",
            "--store",
            store,
            "--table-prefix",
            prefix,
            "--state",
            state,
            "--limit",
            "1000",
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    assert!(
        out.status.success(),
        "adcp-sig outbox list: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The `q`-quantile (0–1) of `values` (nearest rank).
pub fn quantile(values: &[Duration], q: f64) -> Duration {
    let mut v = values.to_vec();
    v.sort();
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Waits (real time) until `f` holds, up to `limit`; whether it did.
pub async fn until(limit: Duration, mut f: impl AsyncFnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    f().await
}

/// The `nonce` parameter of a `Signature-Input` header.
pub fn nonce(signature_input: &str) -> Option<String> {
    let rest = signature_input.split("nonce=\"").nth(1)?;
    Some(rest.split('"').next()?.to_owned())
}

/// A small deterministic pseudo-random number (splitmix64) of `seed`.
pub fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A private PostgreSQL server the test owns: stopped and started again on
/// the same port and data, removed on drop. (The shared one of
/// [`adcp_test_support::database_url`] must not be stopped under other
/// tests.) As root the server runs as `postgres` (else `nobody`), as
/// [`adcp_test_support::postgres_server`] does.
pub struct PgServer {
    dir: TempDir,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    as_user: Vec<String>,
    running: bool,
}

impl PgServer {
    pub fn start() -> Result<Self, String> {
        let bin = adcp_test_support::postgres_server::bin_dir().ok_or("no initdb/pg_ctl installed")?;
        let dir = TempDir::new("relay-pg");
        let is_root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let mut as_user = Vec::new();
        if is_root {
            let user = ["postgres", "nobody"]
                .into_iter()
                .find(|u| {
                    Command::new("id")
                        .args(["-u", u])
                        .output()
                        .is_ok_and(|o| o.status.success())
                })
                .ok_or("root, and no postgres or nobody user to run PostgreSQL as")?;
            let chown = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(&dir.0)
                .status()
                .map_err(|e| e.to_string())?;
            if !chown.success() {
                return Err(format!("chown {user} {}", dir.0.display()));
            }
            as_user = vec![
                "setpriv".to_owned(),
                format!("--reuid={user}"),
                format!("--regid={user}"),
                "--clear-groups".to_owned(),
            ];
        }
        let mut server = Self {
            data: dir.0.join("data"),
            dir,
            bin,
            port: adcp_test_support::redis_server::free_port(),
            as_user,
            running: false,
        };
        server.run(&[
            "initdb",
            "-D",
            &server.data.to_string_lossy(),
            "-U",
            "root",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])?;
        server.restart()?;
        let createdb = if server.bin.join("createdb").is_file() {
            server.bin.join("createdb")
        } else {
            PathBuf::from("createdb")
        };
        let created = Command::new(createdb)
            .args(["-h", "127.0.0.1", "-p", &server.port.to_string(), "-U", "root", "test"])
            .output()
            .map_err(|e| e.to_string())?;
        if !created.status.success() {
            return Err(format!("createdb: {}", String::from_utf8_lossy(&created.stderr)));
        }
        Ok(server)
    }

    fn run(&self, argv: &[&str]) -> Result<(), String> {
        let mut full: Vec<String> = self.as_user.clone();
        full.push(self.bin.join(argv[0]).to_string_lossy().into_owned());
        full.extend(argv[1..].iter().map(|s| (*s).to_owned()));
        let out = Command::new(&full[0])
            .args(&full[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", full[0]))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{argv:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    pub fn url(&self) -> String {
        format!("postgres://root@127.0.0.1:{}/test", self.port)
    }

    /// `pg_ctl stop -m immediate`: every connection dropped at once, as
    /// in a crash.
    pub fn stop(&mut self) -> Result<(), String> {
        let data = self.data.to_string_lossy().into_owned();
        self.run(&["pg_ctl", "-D", &data, "-m", "immediate", "-w", "stop"])?;
        self.running = false;
        Ok(())
    }

    /// `pg_ctl start` on the same port and data.
    pub fn restart(&mut self) -> Result<(), String> {
        let data = self.data.to_string_lossy().into_owned();
        let log = self.dir.0.join("server.log").to_string_lossy().into_owned();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.0.display()
        );
        self.run(&["pg_ctl", "-D", &data, "-l", &log, "-o", &options, "-w", "start"])?;
        self.running = true;
        Ok(())
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop();
        }
    }
}

/// Drops the tables whose names start with `prefix` (a test's own outbox
/// on a shared PostgreSQL); best effort.
pub async fn drop_postgres_tables(url: &str, prefix: &str) {
    let Ok((client, connection)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await else {
        return;
    };
    let task = tokio::spawn(connection);
    if let Ok(rows) = client
        .query(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
            &[],
        )
        .await
    {
        for row in rows {
            let name: String = row.get(0);
            if name.starts_with(prefix) {
                let _ = client
                    .execute(&format!("DROP TABLE IF EXISTS \"{name}\" CASCADE"), &[])
                    .await;
            }
        }
    }
    drop(client);
    let _ = task.await;
}

/// CPU time (user + system) a process has used so far, from
/// `/proc/PID/stat` (Linux; `None` elsewhere), assuming 100 ticks a second.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces: the fields start after its `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
