//! Integration tests against real local HTTPS servers (test CA minted at
//! test time with rcgen). Only loopback is contacted, through the
//! explicitly test-only SSRF exception.

use crate::common::{jwks, key, ok, redirect, Resp, Server};
use adcp_jwks::{DiscoveryError, FetchConfig, FetchError, Fetcher, HttpsKeyResolver, StaticDnsResolver, TrustRoots};
use adcp_verify::{KeyResolver, RevocationStatus};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The names on the test server's certificate.
const NAMES: [&str; 2] = ["seller.example", "keys.example"];

/// The server's fetch settings with a 1.5 s total timeout (the slow-body
/// case waits for it).
fn fetch_config(server: &Server) -> FetchConfig {
    FetchConfig {
        total_timeout: Duration::from_millis(1500),
        ..server.fetch_config()
    }
}

struct Fixture {
    server: Server,
    clock: Arc<AtomicI64>,
    agent: String,
}

const T0: i64 = 1_776_520_800;

async fn fixture() -> Fixture {
    let server = Server::start(&NAMES).await;
    let agent = server.url("seller.example", "/mcp");
    let brand = serde_json::json!({
        "agents": [{"url": agent, "type": "sales", "jwks_uri": server.url("keys.example", "/jwks.json")}]
    });
    server.set("/.well-known/brand.json", ok(brand.to_string()));
    server.set("/jwks.json", ok(jwks(vec![key("k1")])));
    Fixture {
        server,
        clock: Arc::new(AtomicI64::new(T0)),
        agent,
    }
}

impl Fixture {
    fn resolver(&self) -> HttpsKeyResolver {
        let clock = self.clock.clone();
        HttpsKeyResolver::builder(self.agent.clone())
            .fetch_config(fetch_config(&self.server))
            .revocation_list_url(self.server.url("seller.example", "/revocations.json"))
            .allow_unsigned_revocation_list(true)
            .clock(Arc::new(move || clock.load(Ordering::SeqCst)))
            .build()
            .unwrap()
    }

    fn advance(&self, secs: i64) -> i64 {
        self.clock.fetch_add(secs, Ordering::SeqCst) + secs
    }
}

/// An unsigned list (these resolvers allow them) issued by the origin of
/// the fixture's agent, as the resolver requires by default.
fn revocations(f: &Fixture, next_update: i64, revoked: &[&str]) -> Resp {
    revocations_from(&f.server.url("seller.example", ""), next_update, revoked)
}

fn revocations_from(issuer: &str, next_update: i64, revoked: &[&str]) -> Resp {
    let ts = |t: i64| {
        let secs = t - T0;
        // T0 is 2026-04-18T14:00:00Z; tests stay within that day.
        format!(
            "2026-04-18T{:02}:{:02}:{:02}Z",
            14 + secs / 3600,
            secs % 3600 / 60,
            secs % 60
        )
    };
    ok(
        serde_json::json!({"version": 1, "issuer": issuer, "next_update": ts(next_update), "revoked_kids": revoked})
            .to_string(),
    )
}

#[tokio::test]
async fn happy_path_and_cached_resolution() {
    let f = fixture().await;
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(k.agent_url(), f.agent);
    assert_eq!(k.adcp_use(), Some("request-signing"));
    assert!(k.key().is_ok());
    assert_eq!(
        r.jwks_uri().unwrap().as_str(),
        f.server.url("keys.example", "/jwks.json")
    );
    let before = f.server.hits("/jwks.json");
    for _ in 0..10 {
        assert!(r.resolve("k1").await.unwrap().is_some());
    }
    assert_eq!(f.server.hits("/jwks.json"), before, "cached keys cost no fetch");
    assert_eq!(f.server.hits("/.well-known/brand.json"), 1);
}

#[tokio::test]
async fn rotation_miss_refetch_then_cooldown() {
    let f = fixture().await;
    let r = f.resolver();
    assert!(r.resolve("k1").await.unwrap().is_some());
    // Rotation: k2 published; first miss refetches immediately.
    f.server.set("/jwks.json", ok(jwks(vec![key("k1"), key("k2")])));
    f.advance(5);
    assert!(r.resolve("k2").await.unwrap().is_some());
    assert_eq!(f.server.hits("/jwks.json"), 2);
    // An unknown kid: one refetch...
    f.advance(40);
    assert!(r.resolve("k3").await.unwrap().is_none());
    assert_eq!(f.server.hits("/jwks.json"), 3);
    // ...then a second unknown kid within 30 s makes no request.
    f.advance(10);
    assert!(r.resolve("k4").await.unwrap().is_none());
    assert_eq!(f.server.hits("/jwks.json"), 3);
    // After the cooldown, refetch again.
    f.advance(31);
    assert!(r.resolve("k4").await.unwrap().is_none());
    assert_eq!(f.server.hits("/jwks.json"), 4);
}

#[tokio::test]
async fn concurrent_misses_coalesce() {
    let f = fixture().await;
    let r = f.resolver();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let r = r.clone();
            tokio::spawn(async move { r.resolve("k1").await })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().unwrap().is_some());
    }
    assert_eq!(f.server.hits("/jwks.json"), 1);
}

#[tokio::test]
async fn ttl_is_bounded_by_revocation_interval() {
    let f = fixture().await;
    f.server.set("/revocations.json", revocations(&f, T0 + 120, &[]));
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Current);
    f.advance(130);
    // The first snapshot was taken before the list: 5 min TTL still.
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.advance(200);
    assert!(r.resolve("k1").await.unwrap().is_some());
    assert_eq!(f.server.hits("/jwks.json"), 2, "expired after the 5 min default TTL");
    // Now the interval (120 s) bounds the TTL.
    f.advance(125);
    assert!(r.resolve("k1").await.unwrap().is_some());
    assert_eq!(f.server.hits("/jwks.json"), 3);
}

#[tokio::test]
async fn revoked_and_stale() {
    let f = fixture().await;
    f.server.set("/revocations.json", revocations(&f, T0 + 60, &["k1"]));
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Revoked);

    let f = fixture().await;
    f.server.set("/revocations.json", revocations(&f, T0 + 60, &[]));
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Current);
    // The endpoint goes down.
    f.server.set(
        "/revocations.json",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    // Within next_update + 4 × 60 s: last good list still used.
    assert_eq!(
        r.revocation_status(&k, T0 + 200).await.unwrap(),
        RevocationStatus::Current
    );
    assert_eq!(
        r.revocation_status(&k, T0 + 301).await.unwrap(),
        RevocationStatus::Stale
    );
    // Never fetched: stale (fail closed).
    let f = fixture().await;
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Stale);
}

#[tokio::test]
async fn unsigned_list_refused_by_default() {
    let f = fixture().await;
    f.server.set("/revocations.json", revocations(&f, T0 + 60, &[]));
    let clock = f.clock.clone();
    let r = HttpsKeyResolver::builder(f.agent.clone())
        .fetch_config(fetch_config(&f.server))
        .revocation_list_url(f.server.url("seller.example", "/revocations.json"))
        .clock(Arc::new(move || clock.load(Ordering::SeqCst)))
        .build()
        .unwrap();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Stale);
}

#[tokio::test]
async fn byte_inequal_agent_url_and_duplicate_keys_rejected() {
    let f = fixture().await;
    for variant in [format!("{}/", f.agent), f.agent.replace("https://", "http://")] {
        let brand =
            serde_json::json!({"agents": [{"url": variant, "jwks_uri": f.server.url("keys.example", "/jwks.json")}]});
        f.server.set("/.well-known/brand.json", ok(brand.to_string()));
        let r = f.resolver();
        let err = r.resolve_typed("k1").await.unwrap_err();
        assert_eq!(err, DiscoveryError::AgentNotInBrandJson);
        assert_eq!(err.code("webhook"), "webhook_signature_agent_not_in_brand_json");
    }
    let dup = format!(r#"{{"agents":[{{"url":"{0}","url":"{0}"}}]}}"#, f.agent);
    f.server.set("/.well-known/brand.json", ok(dup));
    let err = f.resolver().resolve_typed("k1").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Malformed(_)), "{err:?}");
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_unavailable");
}

#[tokio::test]
async fn authoritative_location_followed_once() {
    let f = fixture().await;
    let real = serde_json::json!({
        "agents": [{"url": f.agent, "jwks_uri": f.server.url("keys.example", "/jwks.json")}]
    });
    f.server.set("/real/brand.json", ok(real.to_string()));
    let pointer = serde_json::json!({"authoritative_location": f.server.url("seller.example", "/real/brand.json")});
    f.server.set("/.well-known/brand.json", ok(pointer.to_string()));
    assert!(f.resolver().resolve("k1").await.unwrap().is_some());
    // A second pointer is a chain: refused.
    let pointer2 = serde_json::json!({"authoritative_location": f.server.url("seller.example", "/real/brand.json")});
    f.server.set("/real/brand.json", ok(pointer2.to_string()));
    let err = f.resolver().resolve_typed("k1").await.unwrap_err();
    assert_eq!(err, DiscoveryError::RedirectChain);
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_untrusted");
}

#[tokio::test]
async fn redirects_refused_and_negative_cache() {
    let f = fixture().await;
    f.server.set(
        "/jwks.json",
        redirect(302, &f.server.url("keys.example", "/other.json")),
    );
    f.server.set("/other.json", ok(jwks(vec![key("k1")])));
    let r = f.resolver();
    let err = r.resolve_typed("k1").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Unavailable(_)), "{err:?}");
    assert_eq!(f.server.hits("/other.json"), 0);
    // Negative result cached < 60 s, then retried.
    f.server.set("/jwks.json", ok(jwks(vec![key("k1")])));
    f.advance(30);
    assert!(r.resolve_typed("k1").await.is_err());
    assert_eq!(f.server.hits("/jwks.json"), 1);
    f.advance(31);
    assert!(r.resolve_typed("k1").await.unwrap().is_some());
}

#[tokio::test]
async fn oversize_and_slow_bodies() {
    let f = fixture().await;
    let fetcher = Fetcher::new(fetch_config(&f.server)).unwrap();
    f.server.set("/big", ok(vec![b' '; 70 * 1024]));
    let url = url::Url::parse(&f.server.url("keys.example", "/big")).unwrap();
    assert_eq!(
        fetcher.get(&url, 64 * 1024).await,
        Err(FetchError::TooLarge { limit: 64 * 1024 })
    );
    f.server.set(
        "/slow",
        Resp {
            delay: Duration::from_secs(5),
            ..ok("{}")
        },
    );
    let url = url::Url::parse(&f.server.url("keys.example", "/slow")).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(fetcher.get(&url, 1024).await, Err(FetchError::Timeout));
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn tls_is_verified() {
    let f = fixture().await;
    // Production trust roots do not include the test CA.
    let mut config = fetch_config(&f.server);
    config.roots = TrustRoots::WebPki;
    let fetcher = Fetcher::new(config).unwrap();
    let url = url::Url::parse(&f.server.url("keys.example", "/jwks.json")).unwrap();
    assert!(matches!(fetcher.get(&url, 1024).await, Err(FetchError::Transport(_))));
    // A name not on the certificate.
    let mut config = fetch_config(&f.server);
    config.resolver = Arc::new(StaticDnsResolver::new().with("other.example", [IpAddr::V4(Ipv4Addr::LOCALHOST)]));
    let fetcher = Fetcher::new(config).unwrap();
    let url = url::Url::parse(&f.server.url("other.example", "/jwks.json")).unwrap();
    assert!(matches!(fetcher.get(&url, 1024).await, Err(FetchError::Transport(_))));
    assert_eq!(f.server.hits("/jwks.json"), 0);
}

/// A DNS resolver that counts lookups and answers differently each time.
struct Rebinding {
    calls: AtomicUsize,
    answers: Vec<Vec<IpAddr>>,
}

#[async_trait::async_trait]
impl adcp_jwks::DnsResolver for Rebinding {
    async fn lookup(&self, _host: &str) -> std::io::Result<Vec<IpAddr>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(self.answers[n.min(self.answers.len() - 1)].clone())
    }
}

#[tokio::test]
async fn ssrf_refusals_make_no_connection() {
    // A plain TCP listener on loopback counts every connection attempt.
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            a.fetch_add(1, Ordering::SeqCst);
        }
    });
    let private = |s: &str| -> IpAddr { s.parse().unwrap() };
    let dns = StaticDnsResolver::new()
        .with("loopback.example", [private("127.0.0.1")])
        .with("mixed.example", [private("93.184.216.34"), private("127.0.0.1")])
        .with("mapped.example", [private("::ffff:127.0.0.1")])
        .with("metadata.example", [private("169.254.169.254")])
        .with("private.example", [private("10.0.0.7")])
        .with("empty.example", []);
    let fetcher = Fetcher::new(FetchConfig {
        resolver: Arc::new(dns),
        ..FetchConfig::default()
    })
    .unwrap();
    let hosts = [
        "loopback.example",
        "mixed.example",
        "mapped.example",
        "metadata.example",
        "private.example",
        "empty.example",
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "169.254.169.254",
        "[fd00:ec2::254]",
    ];
    for host in hosts {
        let url = url::Url::parse(&format!("https://{host}:{port}/jwks.json")).unwrap();
        let err = fetcher.get(&url, 1024).await.unwrap_err();
        assert!(err.is_untrusted(), "{host}: {err:?}");
    }
    let http = url::Url::parse(&format!("http://localhost:{port}/")).unwrap();
    assert!(fetcher.get(&http, 1024).await.unwrap_err().is_untrusted());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "no connection reached a reserved address"
    );

    // Rebinding: the first answer is reserved, so nothing connects, and the
    // name is resolved exactly once per attempt (no second resolution).
    let rebinding = Arc::new(Rebinding {
        calls: AtomicUsize::new(0),
        answers: vec![vec![private("10.1.2.3")], vec![private("127.0.0.1")]],
    });
    let fetcher = Fetcher::new(FetchConfig {
        resolver: rebinding.clone(),
        ..FetchConfig::default()
    })
    .unwrap();
    let url = url::Url::parse(&format!("https://rebind.example:{port}/")).unwrap();
    assert!(fetcher.get(&url, 1024).await.unwrap_err().is_untrusted());
    assert_eq!(rebinding.calls.load(Ordering::SeqCst), 1);
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn resolver_refuses_reserved_agent_urls_at_build() {
    for agent in [
        "https://127.0.0.1/mcp",
        "http://seller.example/mcp",
        "https://[::ffff:10.0.0.1]/",
    ] {
        let err = HttpsKeyResolver::builder(agent).build().unwrap_err();
        assert_eq!(err.code("webhook"), "webhook_signature_jwks_untrusted");
    }
}

/// A failed kid-miss refetch is not an unknown kid: through the cooldown
/// the miss keeps answering the fetch failure (retryable), cached kids keep
/// verifying, and the first refetch after the cooldown recovers.
#[tokio::test]
async fn a_failed_refetch_keeps_the_miss_retryable_through_the_cooldown() {
    let f = fixture().await;
    let r = f.resolver();
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.server.set(
        "/jwks.json",
        Resp {
            status: 500,
            ..ok("{}")
        },
    );
    f.advance(5);
    assert!(r.resolve_typed("k2").await.is_err(), "the refetch failed");
    let hits = f.server.hits("/jwks.json");
    f.advance(5);
    assert!(
        r.resolve_typed("k2").await.is_err(),
        "within the cooldown, still the failure, not Ok(None)"
    );
    assert_eq!(f.server.hits("/jwks.json"), hits, "no refetch within the cooldown");
    assert!(r.resolve("k1").await.unwrap().is_some(), "cached kids still resolve");
    f.server.set("/jwks.json", ok(jwks(vec![key("k1"), key("k2")])));
    f.advance(31);
    assert!(r.resolve("k2").await.unwrap().is_some());
}

/// A replayed older list does not un-revoke a kid, and a list long past
/// its own `next_update` does not count as a refresh (both are failed
/// refreshes: the held list stands until the grace runs out).
#[tokio::test]
async fn an_older_or_long_stale_list_is_not_taken() {
    let f = fixture().await;
    f.server.set("/jwks.json", ok(jwks(vec![key("k1"), key("k2")])));
    f.server.set("/revocations.json", revocations(&f, T0 + 120, &["k2"]));
    let r = f.resolver();
    let k1 = r.resolve("k1").await.unwrap().unwrap();
    let k2 = r.resolve("k2").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k2, T0).await.unwrap(), RevocationStatus::Revoked);
    // At the next poll the CDN serves an older list that revoked nothing.
    f.server.set("/revocations.json", revocations(&f, T0 + 60, &[]));
    let now = f.advance(130);
    assert_eq!(r.revocation_status(&k2, now).await.unwrap(), RevocationStatus::Revoked);
    assert_eq!(r.revocation_status(&k1, now).await.unwrap(), RevocationStatus::Current);
    // A list whose next_update is hours past is not a refresh either: once
    // the held list's grace has run out, the status is stale.
    f.server.set("/revocations.json", revocations(&f, T0 + 120, &["k2"]));
    let now = f.advance(3 * 3600);
    assert_eq!(r.revocation_status(&k1, now).await.unwrap(), RevocationStatus::Stale);
    // The publisher refreshes: current again.
    f.server.set("/revocations.json", revocations(&f, now + 300, &["k2"]));
    let now = f.advance(61);
    assert_eq!(r.revocation_status(&k1, now).await.unwrap(), RevocationStatus::Current);
}

impl Fixture {
    /// The fixture's resolver, further configured by `f`.
    fn resolver_with(
        &self,
        f: impl FnOnce(adcp_jwks::HttpsKeyResolverBuilder) -> adcp_jwks::HttpsKeyResolverBuilder,
    ) -> HttpsKeyResolver {
        let clock = self.clock.clone();
        f(HttpsKeyResolver::builder(self.agent.clone())
            .fetch_config(fetch_config(&self.server))
            .clock(Arc::new(move || clock.load(Ordering::SeqCst))))
        .build()
        .unwrap()
    }

    /// brand.json now names `path` on keys.example as the `jwks_uri`.
    fn move_jwks_uri(&self, path: &str) {
        let brand = serde_json::json!({
            "agents": [{"url": self.agent, "type": "sales", "jwks_uri": self.server.url("keys.example", path)}]
        });
        self.server.set("/.well-known/brand.json", ok(brand.to_string()));
        self.server.set(path, ok(jwks(vec![key("k1"), key("k2")])));
    }
}

/// A pinned `jwks_uri` that brand.json resolves to: keys resolve.
#[tokio::test]
async fn pinned_jwks_uri_that_matches_resolves() {
    let f = fixture().await;
    let pin = f.server.url("keys.example", "/jwks.json");
    let r = f.resolver_with(|b| b.pin_jwks_uri(pin.clone()));
    assert_eq!(r.pinned_jwks_uri().map(url::Url::as_str), Some(pin.as_str()));
    assert!(r.resolve("k1").await.unwrap().is_some());
    assert_eq!(r.jwks_uri_changes(), 0);
}

/// A pin that brand.json does not resolve to: refused from the start.
#[tokio::test]
async fn pinned_jwks_uri_mismatch_on_first_discovery_is_untrusted() {
    let f = fixture().await;
    let pin = f.server.url("keys.example", "/onboarded.json");
    let r = f.resolver_with(|b| b.pin_jwks_uri(pin));
    let err = r.resolve_typed("k1").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Untrusted(_)), "{err:?}");
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_untrusted");
    assert_eq!(r.jwks_uri_changes(), 1);
    assert!(r.jwks().is_none(), "nothing adopted");
}

/// brand.json moves the `jwks_uri` away from the pin: refused as
/// untrusted and alarmed; the cached snapshot keeps serving its keys until
/// it expires, and is never replaced by the new URL's keys.
#[tokio::test]
async fn pinned_jwks_uri_change_is_refused_and_cached_keys_last_until_expiry() {
    let f = fixture().await;
    let pin = f.server.url("keys.example", "/jwks.json");
    let r = f.resolver_with(|b| b.pin_jwks_uri(pin.clone()));
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.move_jwks_uri("/moved.json");
    f.advance(5);
    // A kid miss refetches the chain: the new jwks_uri is refused.
    let err = r.resolve_typed("k2").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Untrusted(_)), "{err:?}");
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_untrusted");
    assert_eq!(r.jwks_uri_changes(), 1);
    let verifier_err = r.resolve("k2").await.unwrap_err();
    assert!(
        matches!(verifier_err, adcp_verify::ResolveError::Untrusted(_)),
        "{verifier_err:?}"
    );
    // The old snapshot stands: same jwks_uri, k1 still cached.
    assert_eq!(r.jwks_uri().unwrap().as_str(), pin);
    assert!(r.resolve("k1").await.unwrap().is_some());
    // Once the snapshot expires (5 min default TTL), nothing resolves.
    f.advance(5 * 60);
    let err = r.resolve_typed("k1").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Untrusted(_)), "{err:?}");
    assert_eq!(r.jwks_uri_changes(), 2);
    assert_eq!(r.jwks_uri().unwrap().as_str(), pin, "never replaced");
}

/// Unpinned: the first `jwks_uri` is learned; a different one later is
/// refused by default, like a pinned mismatch.
#[tokio::test]
async fn first_learned_jwks_uri_change_is_refused_by_default() {
    let f = fixture().await;
    let first = f.server.url("keys.example", "/jwks.json");
    let r = f.resolver();
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.move_jwks_uri("/moved.json");
    f.advance(5 * 60 + 1);
    let err = r.resolve_typed("k1").await.unwrap_err();
    assert!(matches!(err, DiscoveryError::Untrusted(_)), "{err:?}");
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_untrusted");
    assert_eq!(r.jwks_uri_changes(), 1);
    assert_eq!(r.jwks_uri().unwrap().as_str(), first);
    assert_eq!(f.server.hits("/moved.json"), 1, "fetched once, not adopted");
    // Still refused after the negative TTL: the change needs an operator.
    f.advance(61);
    assert!(r.resolve_typed("k2").await.is_err());
    assert_eq!(r.jwks_uri_changes(), 2);
}

/// With `adopt_jwks_uri_changes(true)` the new `jwks_uri` is adopted
/// (still counted as an alarm).
#[tokio::test]
async fn first_learned_jwks_uri_change_is_adopted_with_the_switch() {
    let f = fixture().await;
    let r = f.resolver_with(|b| b.adopt_jwks_uri_changes(true));
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.move_jwks_uri("/moved.json");
    f.advance(5);
    assert!(r.resolve("k2").await.unwrap().is_some());
    assert_eq!(r.jwks_uri_changes(), 1);
    assert_eq!(
        r.jwks_uri().unwrap().as_str(),
        f.server.url("keys.example", "/moved.json")
    );
    // The adopted URL is now the learned one: no further alarm.
    f.advance(5 * 60 + 1);
    assert!(r.resolve("k1").await.unwrap().is_some());
    assert_eq!(r.jwks_uri_changes(), 1);
}

/// A pin always wins over the adopt switch.
#[tokio::test]
async fn adopt_switch_does_not_override_a_pin() {
    let f = fixture().await;
    let pin = f.server.url("keys.example", "/jwks.json");
    let r = f.resolver_with(|b| b.pin_jwks_uri(pin).adopt_jwks_uri_changes(true));
    assert!(r.resolve("k1").await.unwrap().is_some());
    f.move_jwks_uri("/moved.json");
    f.advance(5);
    assert!(matches!(r.resolve_typed("k2").await, Err(DiscoveryError::Untrusted(_))));
}

/// A `kid` on two JWKS entries with different `adcp_use` (spec: "MUST NOT
/// collide with any other entry's `kid` regardless of `adcp_use`") is
/// known but unusable, in either order, and is not a fetch failure: the
/// JWKS is not "unavailable", the other kids resolve, nothing is refetched.
#[tokio::test]
async fn colliding_kid_is_unusable_and_the_jwks_stays_available() {
    let mut governance = key("k1");
    governance["adcp_use"] = "governance-signing".into();
    for keys in [
        vec![key("k1"), key("k2"), governance.clone()],
        vec![governance.clone(), key("k2"), key("k1")],
    ] {
        let f = fixture().await;
        f.server.set("/jwks.json", ok(jwks(keys)));
        let r = f.resolver();
        let k1 = r.resolve_typed("k1").await.unwrap().expect("a colliding kid is known");
        assert!(k1.kid_collides());
        assert!(k1.key().is_err() && k1.adcp_use().is_none());
        let k2 = r.resolve_typed("k2").await.unwrap().unwrap();
        assert!(!k2.kid_collides() && k2.key().is_ok());
        assert_eq!(
            r.jwks().unwrap().get("k1").and_then(|e| e.error()),
            Some(adcp_sigbase::jwk::JwkError::KidCollision)
        );
        // Cached like any key: no refetch, no negative caching.
        f.advance(5);
        assert!(r.resolve("k1").await.unwrap().unwrap().kid_collides());
        assert_eq!(f.server.hits("/jwks.json"), 1);
    }
}

/// The list's `issuer` must be the origin of the agent whose keys it
/// lists (the governance list rule "`issuer` MUST match the `iss` origin
/// of tokens this list governs", which the transport list inherits). A
/// list failing it is not a refresh: the held list stands until its
/// grace runs out, then the status is stale.
#[tokio::test]
async fn revocation_list_issuer_must_be_the_agent_origin() {
    let f = fixture().await;
    let origin = f.server.url("seller.example", "");
    let port = f.server.port;
    let wrong = [
        "https://other.example".to_owned(),
        // The origin without its port (another origin).
        "https://seller.example".to_owned(),
        format!("http://seller.example:{port}"),
        format!("{origin}/mcp"),
        format!("{origin}/?x=1"),
        "not a url".to_owned(),
    ];
    // Never a good list: stale at once, whatever the wrong issuer.
    for issuer in &wrong {
        f.server
            .set("/revocations.json", revocations_from(issuer, T0 + 60, &[]));
        let r = f.resolver();
        let k = r.resolve("k1").await.unwrap().unwrap();
        assert_eq!(
            r.revocation_status(&k, T0).await.unwrap(),
            RevocationStatus::Stale,
            "{issuer}"
        );
    }
    // No issuer at all.
    let bare = serde_json::json!({"next_update": "2026-04-18T14:01:00Z", "revoked_kids": []});
    f.server.set("/revocations.json", ok(bare.to_string()));
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Stale);

    // Compared in canonical form.
    let spelled = format!("HTTPS://Seller.EXAMPLE:{port}/");
    f.server
        .set("/revocations.json", revocations_from(&spelled, T0 + 60, &[]));
    let r = f.resolver();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Current);

    // A good list held, then one from another origin revoking k1: not
    // taken (k1 stays current), and the grace runs out.
    f.server
        .set("/revocations.json", revocations_from(&wrong[0], T0 + 120, &["k1"]));
    assert_eq!(
        r.revocation_status(&k, T0 + 61).await.unwrap(),
        RevocationStatus::Current
    );
    assert_eq!(
        r.revocation_status(&k, T0 + 301).await.unwrap(),
        RevocationStatus::Stale
    );

    // An explicitly configured issuer origin replaces the agent's.
    f.server.set(
        "/revocations.json",
        revocations_from("https://ops.example", T0 + 60, &[]),
    );
    let r = f.resolver_with(|b| {
        b.revocation_list_url(f.server.url("seller.example", "/revocations.json"))
            .allow_unsigned_revocation_list(true)
            .revocation_list_issuer("https://OPS.example/")
    });
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(r.revocation_status(&k, T0).await.unwrap(), RevocationStatus::Current);
}
