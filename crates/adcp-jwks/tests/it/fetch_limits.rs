//! Body caps and deadlines hold while streaming: a body without
//! `Content-Length` is cut off at the cap, and a server that sends its body
//! slowly is abandoned at the total deadline.

use crate::common::{ok, Resp, Server};
use adcp_jwks::MAX_JWKS_BYTES;
use adcp_jwks::{FetchError, HttpsKeyResolver};
use std::time::{Duration, Instant};

#[tokio::test]
async fn body_without_length_is_cut_off_at_the_cap() {
    let s = Server::start(&["keys.example"]).await;
    s.set(
        "/jwks.json",
        Resp {
            no_length: true,
            ..ok(vec![b' '; 8 * MAX_JWKS_BYTES])
        },
    );
    let url = url::Url::parse(&s.url("keys.example", "/jwks.json")).unwrap();
    assert_eq!(
        s.fetcher().get(&url, MAX_JWKS_BYTES).await,
        Err(FetchError::TooLarge { limit: MAX_JWKS_BYTES })
    );
    // Exactly at the cap is fine.
    s.set(
        "/exact.json",
        Resp {
            no_length: true,
            ..ok(vec![b' '; MAX_JWKS_BYTES])
        },
    );
    let url = url::Url::parse(&s.url("keys.example", "/exact.json")).unwrap();
    assert_eq!(
        s.fetcher().get(&url, MAX_JWKS_BYTES).await.unwrap().len(),
        MAX_JWKS_BYTES
    );
}

#[tokio::test]
async fn slow_body_hits_the_total_deadline() {
    let s = Server::start(&["seller.example", "keys.example"]).await;
    // Headers at once, then 1 KiB every 300 ms: 20 KiB would take 6 s.
    s.set(
        "/jwks.json",
        Resp {
            trickle: Duration::from_millis(300),
            ..ok(vec![b' '; 20 * 1024])
        },
    );
    let url = url::Url::parse(&s.url("keys.example", "/jwks.json")).unwrap();
    let started = Instant::now();
    assert_eq!(s.fetcher().get(&url, MAX_JWKS_BYTES).await, Err(FetchError::Timeout));
    // The test config's total deadline is 3 s.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // Through the resolver, a slow JWKS is `*_jwks_unavailable`.
    let agent = s.url("seller.example", "/mcp");
    s.set(
        "/.well-known/brand.json",
        ok(
            serde_json::json!({"agents": [{"url": agent, "jwks_uri": s.url("keys.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    let r = HttpsKeyResolver::builder(agent)
        .fetch_config(s.fetch_config())
        .build()
        .unwrap();
    let err = r.resolve_typed("k1").await.unwrap_err();
    assert_eq!(err.code("webhook"), "webhook_signature_jwks_unavailable");
    let (trace, failed) = r.last_trace().unwrap();
    assert_eq!(failed.as_deref(), Some("jwks_unavailable"));
    assert_eq!(trace.steps.last().unwrap().name, "jwks");
}
