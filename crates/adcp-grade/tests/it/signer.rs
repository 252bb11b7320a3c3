//! `grade_signer` with a key file and with an HTTP signing oracle, against
//! keys published through brand.json on a loopback HTTPS server; and with
//! deliberately wrong setups, each reported by the verifier's code.

use crate::support::{options, serve};
use adcp_grade::{grade_signer, PublishedKeys, Report, SignerConfig, SignerUnderTest, Status};
use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::jwk::Jwk;
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

#[path = "../../../adcp-jwks/tests/common/mod.rs"]
mod jwks_server;

use jwks_server::{ok, Server};

struct Agent {
    _server: Server,
    url: String,
    fetch: adcp_jwks::FetchConfig,
}

impl Agent {
    fn keys(&self) -> PublishedKeys {
        PublishedKeys::Agent {
            url: self.url.clone(),
            fetch: self.fetch.clone(),
        }
    }
}

fn public(key: &SigningKey, kid: &str, adcp_use: &str) -> Value {
    let mut v = Jwk::from_signing_key(key, kid).unwrap().to_public_json();
    v["adcp_use"] = adcp_use.into();
    v["use"] = "sig".into();
    v["key_ops"] = json!(["verify"]);
    v
}

fn private_file(key: &SigningKey, kid: &str) -> Vec<u8> {
    Jwk::with_private(key, kid).unwrap().to_json().to_string().into_bytes()
}

/// The agent's brand.json and JWKS on loopback HTTPS.
async fn agent(keys: Vec<Value>) -> Agent {
    let server = Server::start(&["seller.example", "keys.example"]).await;
    let url = server.url("seller.example", "/mcp");
    server.set(
        "/.well-known/brand.json",
        ok(json!({"agents": [{"url": url, "jwks_uri": server.url("keys.example", "/jwks.json")}]}).to_string()),
    );
    server.set("/jwks.json", ok(json!({ "keys": keys }).to_string()));
    let fetch = server.fetch_config();
    Agent {
        _server: server,
        url,
        fetch,
    }
}

/// A signing oracle for `key`: `POST {payload_b64, kid, alg}` →
/// `{signature_b64}`; `der` answers ECDSA signatures DER-encoded.
async fn oracle(key: SigningKey, der: bool) -> String {
    let key = Arc::new(key);
    let app = Router::new().route(
        "/sign",
        post(move |Json(request): Json<Value>| {
            let key = Arc::clone(&key);
            async move {
                let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                let payload = engine.decode(request["payload_b64"].as_str().unwrap()).unwrap();
                let mut sig = key.sign(&payload).unwrap().into_bytes();
                if der {
                    sig = to_der(&sig);
                }
                Json(json!({ "signature_b64": engine.encode(sig) }))
            }
        }),
    );
    format!("http://{}/sign", serve(app).await)
}

/// r‖s as an ASN.1 `SEQUENCE { INTEGER r, INTEGER s }`.
fn to_der(rs: &[u8]) -> Vec<u8> {
    fn integer(bytes: &[u8]) -> Vec<u8> {
        let mut v: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
        if v.first().is_none_or(|b| *b & 0x80 != 0) {
            v.insert(0, 0);
        }
        let mut out = vec![0x02, u8::try_from(v.len()).unwrap()];
        out.extend(v);
        out
    }
    let mut body = integer(&rs[..32]);
    body.extend(integer(&rs[32..]));
    let mut out = vec![0x30, u8::try_from(body.len()).unwrap()];
    out.extend(body);
    out
}

async fn grade(signer: SignerUnderTest, keys: PublishedKeys) -> Report {
    let suite = adcp_vectors::dir().unwrap_or_else(|| PathBuf::from("."));
    let config = SignerConfig { signer, keys };
    grade_signer(&config, &options(suite, 1)).await.unwrap()
}

fn codes(report: &Report) -> Vec<(String, Status, String)> {
    report
        .cases
        .iter()
        .map(|c| (c.id.clone(), c.status, c.got.clone()))
        .collect()
}

fn all_failed_with(report: &Report, code_suffix: &str) {
    for case in &report.cases {
        assert_eq!(case.status, Status::Failed, "{:?}", codes(report));
        assert!(
            case.got.ends_with(code_suffix),
            "{}: expected *{code_suffix}, got {} ({})",
            case.id,
            case.got,
            case.reason
        );
    }
    assert!(report.cases.iter().any(|c| c.got.starts_with("request_")));
    assert!(report.cases.iter().any(|c| c.got.starts_with("webhook_")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_file_and_an_oracle_matching_the_published_keys_pass() {
    let ed = SigningKey::generate_ed25519().unwrap();
    let es = SigningKey::generate_p256().unwrap();
    let agent = agent(vec![
        public(&ed, "agent-ed", "request-signing"),
        public(&es, "agent-es", "request-signing"),
    ])
    .await;
    let report = grade(SignerUnderTest::Jwk(private_file(&ed, "agent-ed")), agent.keys()).await;
    assert!(report.is_success(), "{:?}", codes(&report));
    assert_eq!(report.summary_line(), "2 passed, 0 failed, 0 skipped");

    let url = oracle(es, false).await;
    let signer = SignerUnderTest::Oracle {
        url,
        kid: "agent-es".into(),
        alg: "ecdsa-p256-sha256".into(),
    };
    let report = grade(signer, agent.keys()).await;
    assert!(report.is_success(), "{:?}", codes(&report));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_setups_are_reported_by_the_verifier_code() {
    let ed = SigningKey::generate_ed25519().unwrap();
    let es = SigningKey::generate_p256().unwrap();
    let other = SigningKey::generate_ed25519().unwrap();
    let agent = agent(vec![
        public(&ed, "agent-ed", "request-signing"),
        public(&es, "agent-es", "request-signing"),
        public(&other, "agent-response", "response-signing"),
    ])
    .await;

    // A kid the agent does not publish.
    let report = grade(SignerUnderTest::Jwk(private_file(&ed, "agent-typo")), agent.keys()).await;
    all_failed_with(&report, "_signature_key_unknown");

    // Another key under the published kid.
    let wrong = SigningKey::generate_ed25519().unwrap();
    let report = grade(SignerUnderTest::Jwk(private_file(&wrong, "agent-ed")), agent.keys()).await;
    all_failed_with(&report, "_signature_invalid");

    // A key published for another purpose.
    let report = grade(
        SignerUnderTest::Jwk(private_file(&other, "agent-response")),
        agent.keys(),
    )
    .await;
    all_failed_with(&report, "_signature_key_purpose_invalid");

    // DER instead of r‖s from a KMS-style oracle: named in the reason.
    let url = oracle(es, true).await;
    let signer = SignerUnderTest::Oracle {
        url,
        kid: "agent-es".into(),
        alg: "ecdsa-p256-sha256".into(),
    };
    let report = grade(signer, agent.keys()).await;
    all_failed_with(&report, "_signature_invalid");
    assert!(
        report.cases.iter().all(|c| c.reason.contains("DER")),
        "{:?}",
        report.cases
    );

    // The oracle labels its Ed25519 signatures as ES256.
    let url = oracle(ed, false).await;
    let signer = SignerUnderTest::Oracle {
        url,
        kid: "agent-ed".into(),
        alg: "ecdsa-p256-sha256".into(),
    };
    let report = grade(signer, agent.keys()).await;
    all_failed_with(&report, "_signature_key_purpose_invalid");
}
