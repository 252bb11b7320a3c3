//! `brand_json_url` chain failures reach the verifier as typed codes: a
//! request signed with `adcp-sign`, verified by `adcp-verify` over an
//! `HttpsKeyResolver` on the chain (local HTTPS server), is rejected with
//! the exact `request_signature_*` code of the failing chain step; a
//! webhook-profile verifier reports the generic `webhook_signature_jwks_*`
//! code of the same retry class.

use crate::common::{ok, Resp, Server};
use adcp_jwks::{HttpsKeyResolver, SigningSurface, StaticCapabilities};
use adcp_sigbase::Message;
use adcp_sign::{Algorithm, Body, FixedClock, HttpSigner, SoftwareSigner, UnsignedRequest, WebhookEvent};
use adcp_verify::FixedClock as VerifyClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::Verifier;
use adcp_verify::{ErrorCode, Step};
use adcp_verify::{KeyResolver, ResolveError};
use serde_json::json;
use std::sync::Arc;

const NOW: i64 = 1_776_520_800;

struct Fx {
    s: Server,
    agent: String,
    brand: String,
    signer: SoftwareSigner,
}

async fn fx() -> Fx {
    let s = Server::start(&["op.example", "agent.op.example", "keys.op.example", "saas.example"]).await;
    let agent = s.url("agent.op.example", "/mcp");
    let brand = s.url("op.example", "/.well-known/brand.json");
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "k1").unwrap();
    s.set(
        "op.example/.well-known/brand.json",
        ok(
            json!({"agents": [{"url": agent, "type": "sales", "jwks_uri": s.url("keys.op.example", "/jwks.json")}]})
                .to_string(),
        ),
    );
    s.set(
        "keys.op.example/jwks.json",
        ok(crate::common::jwks(vec![signer.public_jwk().unwrap().to_public_json()])),
    );
    Fx {
        s,
        agent,
        brand,
        signer,
    }
}

fn caps(brand_json_url: &str) -> StaticCapabilities {
    StaticCapabilities(
        json!({
            "identity": {
                "brand_json_url": brand_json_url,
                "key_origins": {"request_signing": "https://keys.op.example", "webhook_signing": "https://keys.op.example"}
            },
            "request_signing": {"supported_for": ["create_media_buy"]},
            "webhook_signing": {"supported": true}
        })
        .to_string()
        .into_bytes(),
    )
}

impl Fx {
    fn resolver(&self, agent: &str, surface: SigningSurface) -> HttpsKeyResolver {
        HttpsKeyResolver::builder(agent.to_owned())
            .fetch_config(self.s.fetch_config())
            .capabilities(Arc::new(caps(&self.brand)))
            .surface(surface)
            .clock(Arc::new(|| NOW))
            .build()
            .unwrap()
    }

    /// Signs a request (or a webhook) and verifies it under the matching
    /// profile through `resolver`: the verdict's code string and step, or
    /// "ok".
    async fn verify(&self, resolver: HttpsKeyResolver, webhook: bool) -> (String, Option<Step>) {
        let url = "https://seller.example/adcp/create_media_buy";
        let signed = if webhook {
            let event = WebhookEvent::new(&json!({"task_id": "t1", "status": "completed"})).unwrap();
            HttpSigner::webhook(&self.signer)
                .unwrap()
                .with_clock(FixedClock(NOW))
                .sign_webhook(url, &event)
                .await
                .unwrap()
        } else {
            let body = Body::from_json_bytes(r#"{"plan_id":"plan_001"}"#).unwrap();
            HttpSigner::request(&self.signer)
                .unwrap()
                .with_clock(FixedClock(NOW))
                .sign(&UnsignedRequest::post(url, &body))
                .await
                .unwrap()
        };
        let target = adcp_canon::canonicalize_received(signed.url()).unwrap();
        let mut msg = Message::request(signed.method(), signed.url()).with_header("Host", target.authority());
        for (name, value) in signed.headers() {
            msg.push_header(*name, value.as_str());
        }
        let body = signed.body().unwrap().as_bytes().to_vec();
        let msg = msg.with_body(&body);
        let (profile, replay) = if webhook {
            (Profile::webhook_v1(), MemoryReplayStore::webhook())
        } else {
            (Profile::request_v3_2(), MemoryReplayStore::request())
        };
        let verifier = Verifier::new(profile, resolver, replay, VerifyClock(NOW));
        match verifier.verify(&msg).await {
            Ok(_) => ("ok".into(), None),
            Err(e) => (e.code_str().to_owned(), Some(e.step())),
        }
    }
}

#[tokio::test]
async fn brand_origin_mismatch_reaches_the_verifier_with_its_code() {
    let f = fx().await;
    // Control: the same chain with the agent on the operator's eTLD+1.
    assert_eq!(
        f.verify(f.resolver(&f.agent, SigningSurface::Request), false).await.0,
        "ok"
    );

    // An agent on another eTLD+1, listed by the operator but not delegated
    // by `authorized_operators[]`.
    let saas_agent = f.s.url("saas.example", "/tenants/op/mcp");
    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({
            "agents": [{"url": saas_agent, "jwks_uri": f.s.url("keys.op.example", "/jwks.json")}],
            "authorized_operators": []
        })
        .to_string()),
    );
    let resolver = f.resolver(&saas_agent, SigningSurface::Request);
    let typed = resolver.resolve("k1").await.unwrap_err();
    assert_eq!(
        typed,
        ResolveError::Discovery {
            code: ErrorCode::BrandOriginMismatch,
            detail: match &typed {
                ResolveError::Discovery { detail, .. } => detail.clone(),
                other => panic!("{other:?}"),
            },
        }
    );
    let (code, step) = f.verify(resolver, false).await;
    assert_eq!(code, "request_signature_brand_origin_mismatch");
    assert_eq!(step, Some(Step::new(7)));
}

#[tokio::test]
async fn agent_not_in_brand_json_and_ambiguous_reach_the_verifier() {
    let f = fx().await;
    let jwks_uri = f.s.url("keys.op.example", "/jwks.json");
    // Trailing slash: not byte-equal.
    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": format!("{}/", f.agent), "jwks_uri": jwks_uri}]}).to_string()),
    );
    let (code, _) = f.verify(f.resolver(&f.agent, SigningSurface::Request), false).await;
    assert_eq!(code, "request_signature_agent_not_in_brand_json");

    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": f.agent, "jwks_uri": jwks_uri}, {"url": f.agent}]}).to_string()),
    );
    let (code, _) = f.verify(f.resolver(&f.agent, SigningSurface::Request), false).await;
    assert_eq!(code, "request_signature_brand_json_ambiguous");
}

#[tokio::test]
async fn transient_chain_failures_are_retryable_with_their_code() {
    let f = fx().await;
    f.s.set(
        "op.example/.well-known/brand.json",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    let resolver = f.resolver(&f.agent, SigningSurface::Request);
    let typed = resolver.resolve("k1").await.unwrap_err();
    assert!(
        matches!(
            typed,
            ResolveError::Discovery {
                code: ErrorCode::BrandJsonUnreachable,
                ..
            }
        ),
        "{typed:?}"
    );
    let (code, _) = f.verify(resolver, false).await;
    assert_eq!(code, "request_signature_brand_json_unreachable");
    assert!(ErrorCode::BrandJsonUnreachable.is_retryable());
    assert_eq!(ErrorCode::BrandJsonUnreachable.http_status(), 503);
}

#[tokio::test]
async fn webhook_profile_reports_the_generic_key_source_code() {
    let f = fx().await;
    let jwks_uri = f.s.url("keys.op.example", "/jwks.json");
    // Webhook surface through the chain (no publisher pin): control first.
    assert_eq!(
        f.verify(f.resolver(&f.agent, SigningSurface::Webhook), true).await.0,
        "ok"
    );
    // Permanent refusal: the generic untrusted code.
    f.s.set(
        "op.example/.well-known/brand.json",
        ok(json!({"agents": [{"url": format!("{}/", f.agent), "jwks_uri": jwks_uri}]}).to_string()),
    );
    let (code, step) = f.verify(f.resolver(&f.agent, SigningSurface::Webhook), true).await;
    assert_eq!(code, "webhook_signature_jwks_untrusted");
    assert_eq!(step, Some(Step::new(7)));
    // Transient: the generic unavailable code.
    f.s.set(
        "op.example/.well-known/brand.json",
        Resp {
            status: 503,
            ..ok("{}")
        },
    );
    let (code, _) = f.verify(f.resolver(&f.agent, SigningSurface::Webhook), true).await;
    assert_eq!(code, "webhook_signature_jwks_unavailable");
}
