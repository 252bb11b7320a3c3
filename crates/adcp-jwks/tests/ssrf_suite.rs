//! The SSRF suite: hostile targets, every one refused before any connection
//! to a reserved address is made — through the key-discovery fetcher and
//! through the sender-side `DestinationPolicy`.
//!
//! Every URL carries the port of a plain TCP listener on 127.0.0.1 that
//! counts connections: a guard that let a loopback spelling through would
//! show up there. Names go through a counting resolver: IP literals must
//! be refused without a lookup, names after exactly one.
//!
//! A binary of its own, not a module of `tests/it`:
//! `destination_dns_resolver_pins_reqwest_clients` installs rustls's
//! process-wide default `CryptoProvider` (this workspace builds reqwest
//! without one). Sharing a process, every other test would then run with a
//! default provider the library code never gets, and one that needed it by
//! mistake would pass or fail depending on test order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use adcp_jwks::{
    DestinationError, DestinationPolicy, DnsResolver, FetchConfig, FetchError, Fetcher, SsrfPolicy, StaticDnsResolver,
};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Answers from a table, a different answer on each call for a name with
/// several, counting lookups per name.
#[derive(Default)]
struct CountingDns {
    answers: HashMap<&'static str, Vec<Vec<IpAddr>>>,
    calls: Mutex<HashMap<String, usize>>,
}

impl CountingDns {
    fn with(mut self, host: &'static str, answers: &[&[&str]]) -> Self {
        let parsed = answers
            .iter()
            .map(|a| a.iter().map(|s| s.parse().unwrap()).collect())
            .collect();
        self.answers.insert(host, parsed);
        self
    }

    fn calls(&self, host: &str) -> usize {
        self.calls.lock().unwrap().get(host).copied().unwrap_or(0)
    }
}

#[async_trait::async_trait]
impl DnsResolver for CountingDns {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let c = calls.entry(host.to_owned()).or_default();
            *c += 1;
            *c - 1
        };
        let answers = self
            .answers
            .get(host)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "unknown"))?;
        Ok(answers[n.min(answers.len() - 1)].clone())
    }
}

/// IP literals in every spelling. (`host`, what it is)
const LITERALS: &[(&str, &str)] = &[
    ("127.0.0.1", "loopback"),
    ("2130706433", "loopback, decimal"),
    ("0x7f000001", "loopback, hex"),
    ("0x7f.0x0.0x0.0x1", "loopback, dotted hex"),
    ("0177.0.0.1", "loopback, octal"),
    ("017700000001", "loopback, octal integer"),
    ("127.1", "loopback, short form"),
    ("%31%32%37.0.0.1", "loopback, percent-encoded"),
    ("0.0.0.0", "this network"),
    ("0", "this network, integer"),
    ("[::1]", "IPv6 loopback"),
    ("[::]", "IPv6 unspecified"),
    ("[::ffff:127.0.0.1]", "IPv4-mapped loopback"),
    ("[::ffff:7f00:1]", "IPv4-mapped loopback, hex"),
    ("[::ffff:169.254.169.254]", "IPv4-mapped metadata"),
    ("[::127.0.0.1]", "IPv4-compatible loopback"),
    ("[64:ff9b::7f00:1]", "NAT64 loopback"),
    ("169.254.169.254", "instance metadata"),
    ("2852039166", "instance metadata, decimal"),
    ("0xa9fea9fe", "instance metadata, hex"),
    ("0251.0376.0251.0376", "instance metadata, octal"),
    ("[fd00:ec2::254]", "AWS IMDSv2 IPv6"),
    ("100.100.100.200", "Alibaba metadata (CGNAT)"),
    ("10.0.0.1", "RFC 1918"),
    ("0xa000001", "RFC 1918, hex"),
    ("172.16.0.1", "RFC 1918"),
    ("192.168.0.1", "RFC 1918"),
    ("3232235521", "RFC 1918, decimal"),
    ("100.64.0.1", "CGNAT"),
    ("224.0.0.1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("[fc00::1]", "unique-local"),
    ("[fe80::1]", "link-local"),
    ("[ff02::1]", "IPv6 multicast"),
];

/// DNS names whose answers are hostile.
const NAMES: &[(&str, &str)] = &[
    ("internal.example", "resolves to RFC 1918"),
    ("loopback.example", "resolves to loopback"),
    ("metadata.google.internal", "resolves to instance metadata"),
    ("imds6.example", "resolves to fd00:ec2::254"),
    ("mapped.example", "resolves to ::ffff:127.0.0.1"),
    ("mixed.example", "one public and one private address"),
    ("empty.example", "resolves to nothing"),
    ("rebind.example", "private first; a second resolution would say public"),
];

fn dns() -> CountingDns {
    CountingDns::default()
        .with("internal.example", &[&["10.0.0.5"]])
        .with("loopback.example", &[&["127.0.0.1"]])
        .with("metadata.google.internal", &[&["169.254.169.254"]])
        .with("imds6.example", &[&["fd00:ec2::254"]])
        .with("mapped.example", &[&["::ffff:127.0.0.1"]])
        .with("mixed.example", &[&["93.184.216.34", "10.0.0.1"]])
        .with("empty.example", &[&[]])
        .with("rebind.example", &[&["10.1.2.3"], &["93.184.216.34"]])
}

async fn sentinel() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, accepted)
}

#[tokio::test]
async fn hostile_targets_refused_before_any_connection() {
    let (port, accepted) = sentinel().await;
    let dns = Arc::new(dns());
    let fetcher = Fetcher::new(FetchConfig {
        resolver: dns.clone(),
        ..FetchConfig::default()
    })
    .unwrap();
    let mut refused = 0;
    for (host, what) in LITERALS.iter().chain(NAMES) {
        let url = url::Url::parse(&format!("https://{host}:{port}/.well-known/jwks.json")).unwrap();
        let err = fetcher.get(&url, 1024).await.unwrap_err();
        assert!(matches!(err, FetchError::Untrusted(_)), "{host} ({what}): {err:?}");
        refused += 1;
    }
    for url in [
        format!("http://localhost:{port}/"),
        format!("https://user:pw@seller.example:{port}/"),
        format!("ftp://seller.example:{port}/"),
    ] {
        let err = fetcher.get(&url::Url::parse(&url).unwrap(), 1024).await.unwrap_err();
        assert!(err.is_untrusted(), "{url}: {err:?}");
        refused += 1;
    }
    assert!(refused >= 30, "the table has {refused} targets");
    // Literals were refused without a lookup; names after exactly one.
    for (host, _) in LITERALS {
        assert_eq!(dns.calls(host), 0, "{host}");
    }
    for (host, what) in NAMES {
        assert_eq!(dns.calls(host), 1, "{host} ({what}) resolved more than once");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a connection reached the loopback sentinel"
    );
}

#[tokio::test]
async fn the_checked_answer_is_the_one_connected_to() {
    // First answer acceptable (loopback, through the test-only exception,
    // stands in for a public address), a second resolution would be
    // private: the fetcher connects to the first answer and never asks again.
    let (port, accepted) = sentinel().await;
    let dns = Arc::new(CountingDns::default().with("rebind.example", &[&["127.0.0.1"], &["10.0.0.1"]]));
    let fetcher = Fetcher::new(FetchConfig {
        policy: SsrfPolicy::new().dangerously_allow_loopback_for_tests(),
        resolver: dns.clone(),
        connect_timeout: Duration::from_secs(1),
        total_timeout: Duration::from_secs(2),
        ..FetchConfig::default()
    })
    .unwrap();
    let url = url::Url::parse(&format!("https://rebind.example:{port}/")).unwrap();
    // The sentinel drops the connection: a transport error, not a refusal.
    let err = fetcher.get(&url, 1024).await.unwrap_err();
    assert!(!err.is_untrusted(), "{err:?}");
    assert_eq!(dns.calls("rebind.example"), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn destination_policy_refuses_the_same_table() {
    let dns = dns();
    let policy = DestinationPolicy::new();
    for (host, what) in LITERALS {
        let url = format!("https://{host}:9443/webhooks");
        assert!(policy.validate_url(&url).is_err(), "{host} ({what})");
        let parsed = url::Url::parse(&url).unwrap();
        assert!(
            matches!(policy.resolve(&parsed, &dns).await, Err(DestinationError::Refused(_))),
            "{host}"
        );
    }
    for (host, what) in NAMES {
        // A name passes the write-time check (it has no address yet)...
        let url = policy.validate_url(&format!("https://{host}:9443/webhooks")).unwrap();
        // ...and is refused at send time, after one lookup.
        assert!(
            matches!(policy.resolve(&url, &dns).await, Err(DestinationError::Refused(_))),
            "{host} ({what})"
        );
        assert_eq!(dns.calls(host), 1, "{host}");
    }
    // A public destination on a non-standard port is fine by default.
    let ok = StaticDnsResolver::new().with("buyer.example", ["93.184.216.34".parse().unwrap()]);
    let url = policy.validate_url("https://buyer.example:9443/webhooks").unwrap();
    assert_eq!(policy.resolve(&url, &ok).await.unwrap()[0].port(), 9443);
}

#[tokio::test]
async fn destination_dns_resolver_pins_reqwest_clients() {
    // The resolver a webhook sender installs in its own reqwest client.
    let (port, accepted) = sentinel().await;
    let policy = DestinationPolicy::new();
    // reqwest is built without a default TLS provider in this workspace.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(policy.dns_resolver_with(Arc::new(dns())))
        .build()
        .unwrap();
    for host in ["internal.example", "loopback.example", "mixed.example"] {
        let err = client.get(format!("http://{host}:{port}/")).send().await.unwrap_err();
        assert!(err.is_connect(), "{host}: {err:?}");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}
