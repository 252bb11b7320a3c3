//! The 8-step `identity.brand_json_url` chain against a local HTTPS server:
//! every spec rejection code, the per-step trace, and the resolver on top.

use crate::common::{jwks, key, ok, redirect, Resp, Server};
use adcp_jwks::{resolve_brand_json_url, CapabilitiesSource, HttpsCapabilities};
use adcp_jwks::{
    ChainOptions, FetchError, HttpsKeyResolver, KeySource, PublisherPin, SigningSurface, StaticCapabilities,
    StepOutcome,
};
use adcp_verify::KeyResolver;
use serde_json::json;
use std::sync::Arc;

const NOW: i64 = 1_776_520_800;
const NAMES: &[&str] = &[
    "op.example",
    "agent.op.example",
    "keys.op.example",
    "saas.example",
    "victim.github.io",
    "attacker.github.io",
];

struct Fx {
    s: Server,
    agent: String,
    brand: String,
}

async fn fx() -> Fx {
    let s = Server::start(NAMES).await;
    let agent = s.url("agent.op.example", "/mcp");
    let brand = s.url("op.example", "/.well-known/brand.json");
    s.set(
        "op.example/.well-known/brand.json",
        ok(
            json!({"agents": [{"url": agent, "type": "sales", "jwks_uri": s.url("keys.op.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    s.set("keys.op.example/jwks.json", ok(jwks(vec![key("k1")])));
    Fx { s, agent, brand }
}

fn caps(brand_json_url: Option<&str>, key_origins: serde_json::Value) -> StaticCapabilities {
    let mut identity = json!({ "key_origins": key_origins });
    if let Some(u) = brand_json_url {
        identity["brand_json_url"] = u.into();
    }
    StaticCapabilities(
        json!({
            "identity": identity,
            "request_signing": {"supported_for": ["create_media_buy"]},
            "webhook_signing": {"supported": true}
        })
        .to_string()
        .into_bytes(),
    )
}

fn origins() -> serde_json::Value {
    json!({"request_signing": "https://keys.op.example", "webhook_signing": "https://KEYS.op.example"})
}

fn request() -> ChainOptions {
    ChainOptions {
        surface: SigningSurface::Request,
        publisher_pin: None,
    }
}

impl Fx {
    async fn run(
        &self,
        agent: &str,
        caps: &dyn CapabilitiesSource,
        options: &ChainOptions,
    ) -> Result<adcp_jwks::AgentResolution, String> {
        resolve_brand_json_url(&self.s.fetcher(), agent, caps, options, NOW)
            .await
            .map_err(|f| {
                // The trace's failing step carries the same code.
                let failed = f.trace.failure().expect("a failed step");
                assert_eq!(
                    failed.outcome,
                    StepOutcome::Failed(f.error.code_suffix()),
                    "{:?}",
                    f.trace
                );
                f.error.code("request")
            })
    }
}

#[tokio::test]
async fn happy_path_with_full_trace() {
    let f = fx().await;
    let r = f
        .run(&f.agent, &caps(Some(&f.brand), origins()), &request())
        .await
        .unwrap();
    assert_eq!(r.agent_entry.url, f.agent);
    assert_eq!(r.brand_json_url.as_str(), f.brand);
    assert_eq!(r.jwks_uri().unwrap().as_str(), f.s.url("keys.op.example", "/jwks.json"));
    assert!(r.jwks.key("k1").is_some());
    assert_eq!(r.jwks_json["keys"][0]["adcp_use"], "request-signing");
    let steps: Vec<(u8, &str)> = r.trace.steps.iter().map(|s| (s.step, s.outcome.as_str())).collect();
    assert_eq!(steps, (1..=8).map(|i| (i, "ok")).collect::<Vec<_>>(), "{}", r.trace);
    let brand_step = &r.trace.steps[3];
    assert_eq!(brand_step.url.as_deref(), Some(f.brand.as_str()));
    assert_eq!(brand_step.http_status, Some(200));
    assert_eq!(brand_step.fetched_at, Some(NOW));
    assert_eq!(brand_step.age_secs(NOW + 42), Some(42));
    let json = r.trace.to_json(NOW + 5);
    assert_eq!(json[7]["name"], "jwks");
    assert_eq!(json[7]["age_seconds"], 5);
    assert_eq!(
        json[2]["detail"].as_str().unwrap(),
        format!("eTLD+1 op.example on both (PSL {})", adcp_jwks::psl::PSL_VERSION)
    );
}

#[tokio::test]
async fn brand_json_url_missing_or_not_https() {
    let f = fx().await;
    for c in [
        caps(None, origins()),
        caps(Some(&f.brand.replace("https://", "http://")), origins()),
        caps(Some("op.example/.well-known/brand.json"), origins()),
    ] {
        assert_eq!(
            f.run(&f.agent, &c, &request()).await.unwrap_err(),
            "request_signature_brand_json_url_missing"
        );
    }
    assert_eq!(f.s.hits("/.well-known/brand.json"), 0);
}

#[tokio::test]
async fn capabilities_unreachable() {
    let f = fx().await;
    // A capabilities document served at a URL that answers 503.
    f.s.set(
        "agent.op.example/caps",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    let source = HttpsCapabilities::new(
        f.s.fetcher(),
        url::Url::parse(&f.s.url("agent.op.example", "/caps")).unwrap(),
    );
    assert_eq!(
        f.run(&f.agent, &source, &request()).await.unwrap_err(),
        "request_signature_capabilities_unreachable"
    );
    assert!(matches!(
        source.capabilities(&f.agent).await,
        Err(FetchError::Status(503))
    ));
}

#[tokio::test]
async fn origin_binding_and_authorized_operators() {
    let f = fx().await;
    // A SaaS-hosted agent listed by the operator, on another eTLD+1.
    let saas_agent = f.s.url("saas.example", "/tenants/op/mcp");
    let doc = |operators: serde_json::Value| {
        ok(json!({
            "agents": [{"url": saas_agent, "jwks_uri": f.s.url("keys.op.example", "/jwks.json")}],
            "authorized_operators": operators
        })
        .to_string())
    };
    f.s.set("op.example/.well-known/brand.json", doc(json!([])));
    let c = caps(Some(&f.brand), origins());
    assert_eq!(
        f.run(&saas_agent, &c, &request()).await.unwrap_err(),
        "request_signature_brand_origin_mismatch"
    );
    // Delegated: canonicalized comparison (case).
    f.s.set(
        "op.example/.well-known/brand.json",
        doc(json!([{"domain": "SAAS.example"}])),
    );
    let r = f.run(&saas_agent, &c, &request()).await.unwrap();
    assert!(r.trace.steps[2].detail.contains("delegated"), "{}", r.trace);

    // PSL private section: two github.io tenants are two registrants.
    let victim_brand = f.s.url("victim.github.io", "/.well-known/brand.json");
    let attacker_agent = f.s.url("attacker.github.io", "/mcp");
    f.s.set(
        "victim.github.io/.well-known/brand.json",
        ok(json!({"agents": [{"url": attacker_agent}]}).to_string()),
    );
    assert_eq!(
        f.run(&attacker_agent, &caps(Some(&victim_brand), origins()), &request())
            .await
            .unwrap_err(),
        "request_signature_brand_origin_mismatch"
    );
}

#[tokio::test]
async fn brand_json_fetch_failures() {
    let f = fx().await;
    let c = caps(Some(&f.brand), origins());
    let route = "op.example/.well-known/brand.json";
    f.s.set(
        route,
        Resp {
            status: 404,
            ..ok("{}")
        },
    );
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_brand_json_unreachable"
    );
    // No HTTP redirect is followed on the bootstrap fetch.
    f.s.set(route, redirect(302, &f.s.url("op.example", "/elsewhere.json")));
    f.s.set("op.example/elsewhere.json", ok("{}"));
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_brand_json_unreachable"
    );
    assert_eq!(f.s.hits("op.example/elsewhere.json"), 0);
    // Nor the authoritative_location carve-out.
    f.s.set(
        route,
        ok(json!({"authoritative_location": f.s.url("op.example", "/elsewhere.json")}).to_string()),
    );
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_brand_json_malformed"
    );
    assert_eq!(f.s.hits("op.example/elsewhere.json"), 0);
    // Duplicate keys, oversize, non-JSON.
    let dup = format!(r#"{{"agents":[{{"url":"{0}","url":"{0}"}}]}}"#, f.agent);
    for body in [dup.into_bytes(), vec![b' '; 256 * 1024 + 1], b"<html>".to_vec()] {
        f.s.set(route, ok(body));
        assert_eq!(
            f.run(&f.agent, &c, &request()).await.unwrap_err(),
            "request_signature_brand_json_malformed"
        );
    }
}

#[tokio::test]
async fn agents_entry_byte_equal_and_unique() {
    let f = fx().await;
    let c = caps(Some(&f.brand), origins());
    for variant in [
        format!("{}/", f.agent),
        f.agent.replace("https://", "http://"),
        f.agent.replace("agent.op", "AGENT.op"),
    ] {
        f.s.set(
            "op.example/.well-known/brand.json",
            ok(json!({"agents": [{"url": variant}]}).to_string()),
        );
        assert_eq!(
            f.run(&f.agent, &c, &request()).await.unwrap_err(),
            "request_signature_agent_not_in_brand_json"
        );
    }
    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": f.agent}, {"url": f.agent, "type": "buying"}]}).to_string()),
    );
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_brand_json_ambiguous"
    );
}

#[tokio::test]
async fn key_origins_consistency() {
    let f = fx().await;
    let mismatch = caps(Some(&f.brand), json!({"request_signing": "https://other.op.example"}));
    assert_eq!(
        f.run(&f.agent, &mismatch, &request()).await.unwrap_err(),
        "request_signature_key_origin_mismatch"
    );
    let missing = caps(Some(&f.brand), json!({}));
    assert_eq!(
        f.run(&f.agent, &missing, &request()).await.unwrap_err(),
        "request_signature_key_origin_missing"
    );
    // Nothing was fetched past step 7.
    assert_eq!(f.s.hits("keys.op.example/jwks.json"), 0);
    // Default jwks_uri (origin of A) must match too.
    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": f.agent}]}).to_string()),
    );
    f.s.set("agent.op.example/.well-known/jwks.json", ok(jwks(vec![key("k9")])));
    let c = caps(
        Some(&f.brand),
        json!({"request_signing": "https://agent.op.example", "webhook_signing": "https://agent.op.example"}),
    );
    let r = f.run(&f.agent, &c, &request()).await.unwrap();
    assert!(r.jwks.key("k9").is_some());
    assert_eq!(
        f.run(&f.agent, &caps(Some(&f.brand), origins()), &request())
            .await
            .unwrap_err(),
        "request_signature_key_origin_mismatch"
    );
}

#[tokio::test]
async fn jwks_failures_keep_their_codes() {
    let f = fx().await;
    let c = caps(Some(&f.brand), origins());
    f.s.set(
        "keys.op.example/jwks.json",
        Resp {
            status: 500,
            ..ok("{}")
        },
    );
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_jwks_unavailable"
    );
    f.s.set("keys.op.example/jwks.json", ok(r#"{"keys":[{"kid":1}]}"#));
    assert_eq!(
        f.run(&f.agent, &c, &request()).await.unwrap_err(),
        "request_signature_jwks_unavailable"
    );
    // A repeated kid is not a JWKS failure: the chain resolves and only
    // that kid is unusable (the verifier refuses it at step 8).
    let a = key("dup");
    f.s.set("keys.op.example/jwks.json", ok(jwks(vec![a.clone(), key("k2"), a])));
    let r = f.run(&f.agent, &c, &request()).await.unwrap();
    assert_eq!(
        r.jwks.get("dup").and_then(|e| e.error()),
        Some(adcp_sigbase::jwk::JwkError::KidCollision)
    );
    assert!(r.jwks.key("k2").is_some());
}

#[tokio::test]
async fn publisher_pin_applies_to_sell_side_webhooks_only() {
    let f = fx().await;
    let c = caps(Some(&f.brand), json!({"request_signing": "https://keys.op.example"}));
    let pin =
        Arc::new(PublisherPin::from_keys(&[key("pinned")], "https://pub.example/.well-known/adagents.json").unwrap());
    let webhook = ChainOptions {
        surface: SigningSurface::Webhook,
        publisher_pin: Some(pin.clone()),
    };
    // webhook_signing is declared but sourced from the pin: its key_origins
    // check is skipped (request_signing is still checked).
    let r = f.run(&f.agent, &c, &webhook).await.unwrap();
    assert_eq!(r.key_source, KeySource::PublisherPin(pin.source.clone()));
    assert!(r.jwks.key("pinned").is_some() && r.jwks.key("k1").is_none());
    assert_eq!(
        f.s.hits("keys.op.example/jwks.json"),
        0,
        "the pin replaces the jwks_uri"
    );
    // On the request surface the pin is ignored, so the operator-side
    // webhook_signing declaration needs its key_origins entry again...
    let req = ChainOptions {
        surface: SigningSurface::Request,
        publisher_pin: Some(pin),
    };
    assert_eq!(
        f.run(&f.agent, &c, &req).await.unwrap_err(),
        "request_signature_key_origin_missing"
    );
    // ...and the keys come from the operator's jwks_uri.
    let r = f.run(&f.agent, &caps(Some(&f.brand), origins()), &req).await.unwrap();
    assert!(r.jwks.key("k1").is_some() && r.jwks.key("pinned").is_none());
}

#[tokio::test]
async fn resolver_uses_the_chain_and_keeps_the_trace() {
    let f = fx().await;
    let r = HttpsKeyResolver::builder(f.agent.clone())
        .fetch_config(f.s.fetch_config())
        .capabilities(Arc::new(caps(Some(&f.brand), origins())))
        .surface(SigningSurface::Request)
        .clock(Arc::new(|| NOW))
        .build()
        .unwrap();
    let k = r.resolve("k1").await.unwrap().unwrap();
    assert_eq!(k.agent_url(), f.agent);
    let (trace, failed) = r.last_trace().unwrap();
    assert_eq!(trace.steps.len(), 8);
    assert!(failed.is_none());
    // Cached: no more fetches.
    let hits = f.s.hits("op.example/.well-known/brand.json");
    assert!(r.resolve("k1").await.unwrap().is_some());
    assert_eq!(f.s.hits("op.example/.well-known/brand.json"), hits);

    // A failing chain: typed error, verifier-facing mapping, trace kept.
    let bad = HttpsKeyResolver::builder(f.agent.clone())
        .fetch_config(f.s.fetch_config())
        .capabilities(Arc::new(caps(Some(&f.brand), json!({}))))
        .surface(SigningSurface::Request)
        .clock(Arc::new(|| NOW))
        .build()
        .unwrap();
    let err = bad.resolve_typed("k1").await.unwrap_err();
    assert_eq!(err.code("request"), "request_signature_key_origin_missing");
    assert!(
        matches!(err.to_resolve_error(), adcp_verify::ResolveError::Discovery { code: adcp_verify::ErrorCode::KeyOriginMissing, ref detail } if detail.contains("key_origin_missing"))
    );
    assert_eq!(bad.last_trace().unwrap().1.as_deref(), Some("key_origin_missing"));
}
