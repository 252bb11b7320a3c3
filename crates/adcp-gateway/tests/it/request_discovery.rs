//! `--agent` in request mode: the buyer agent's keys through the spec's
//! `identity.brand_json_url` chain. One loopback HTTPS server (a test CA,
//! every name resolved to it by the test overrides) plays the buyer: its
//! agent answers `get_adcp_capabilities` over MCP with an
//! `identity.brand_json_url`, its brand.json lists the agent with a
//! `jwks_uri`, the JWKS holds the signing key. A signed request through
//! the gateway is verified and forwarded with the agent's identity; an
//! agent whose capabilities carry no `brand_json_url`, or that does not
//! answer them, gets the chain's own code.

use crate::request_mode::{send_raw, Seller};
use crate::support::{serve_loopback, TempDir};
use adcp_gateway::{Gateway, GatewayConfig, GatewayHandle};
use adcp_sign::{Algorithm, HttpSigner, SigningProfile, SoftwareSigner, UnsignedRequest};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

const AGENT_HOST: &str = "agent.buyer.example";
const BRAND_HOST: &str = "buyer.example";
const KEYS_HOST: &str = "keys.buyer.example";
const URL: &str = "https://seller.example/mcp";

fn json_answer(value: &Value) -> impl axum::response::IntoResponse + use<> {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
}

/// The buyer's side over HTTPS on loopback, and how often its agent was
/// asked for its capabilities.
struct Buyer {
    addr: SocketAddr,
    ca_der: Vec<u8>,
    signer: HttpSigner<SoftwareSigner>,
    capabilities_calls: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Buyer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Buyer {
    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.addr.port())
    }

    /// `/mcp` publishes `identity.brand_json_url`; `/bare/mcp` answers
    /// capabilities without one.
    async fn start() -> Self {
        let pki = crate::tls::Pki::new();
        let leaf = pki.leaf(&[AGENT_HOST, BRAND_HOST, KEYS_HOST]);
        let key = SoftwareSigner::generate(Algorithm::Ed25519, "buyer-chain-2026").unwrap();
        let jwks = key.jwks().unwrap().to_public_json();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let port = addr.port();
        let agent = format!("https://{AGENT_HOST}:{port}/mcp");
        let brand = json!({"agents": [{"url": agent, "jwks_uri": format!("https://{KEYS_HOST}:{port}/jwks.json")}]});
        let calls = Arc::new(Mutex::new(Vec::new()));
        let capabilities = |identity: Value, calls: Arc<Mutex<Vec<Value>>>| {
            move |body: axum::body::Bytes| {
                let identity = identity.clone();
                async move {
                    let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    calls.lock().unwrap().push(call.clone());
                    let document = json!({"adcp": {"major_versions": [3]}, "identity": identity});
                    json_answer(&json!({"jsonrpc": "2.0", "id": call["id"], "result": {
                        "structuredContent": document,
                        "content": [{"type": "text", "text": document.to_string()}],
                    }}))
                }
            }
        };
        let app = Router::new()
            .route(
                "/mcp",
                post(capabilities(
                    json!({"brand_json_url": format!("https://{BRAND_HOST}:{port}/.well-known/brand.json")}),
                    Arc::clone(&calls),
                )),
            )
            .route("/bare/mcp", post(capabilities(json!({}), Arc::clone(&calls))))
            .route(
                "/.well-known/brand.json",
                get(move || {
                    let brand = brand.clone();
                    async move { json_answer(&brand) }
                }),
            )
            .route(
                "/jwks.json",
                get(move || {
                    let jwks = jwks.clone();
                    async move { json_answer(&jwks) }
                }),
            );
        let cert = rustls::pki_types::CertificateDer::from(leaf.der.clone());
        let private = {
            use rustls::pki_types::pem::PemObject;
            rustls::pki_types::PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap()
        };
        let tls = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], private)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let app = app.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            ca_der: pki.ca_der(),
            signer: HttpSigner::new(SigningProfile::request_v3_2(), key).unwrap(),
            capabilities_calls: calls,
            task,
        }
    }

    /// A gateway in request mode discovering `agent`'s keys, in front of
    /// `seller`.
    async fn gateway(&self, dir: &TempDir, seller: &Seller, agent: &str) -> GatewayHandle {
        let config = self.config(dir, seller, agent);
        Gateway::from_config(&config)
            .await
            .unwrap()
            .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
            .unwrap()
    }

    /// The settings of [`Buyer::gateway`].
    fn config(&self, dir: &TempDir, seller: &Seller, agent: &str) -> GatewayConfig {
        std::fs::write(dir.0.join("ca.der"), &self.ca_der).unwrap();
        std::fs::write(
            dir.0.join("caps.json"),
            json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]})
                .to_string(),
        )
        .unwrap();
        let mut config = GatewayConfig::new(seller.url());
        config.profile = adcp_gateway::GatewayProfile::Request;
        config.capabilities = Some(dir.0.join("caps.json"));
        config.agents = vec![agent.to_owned()];
        config.public_url = Some("https://seller.example/".parse().unwrap());
        config.store = "memory:".parse().unwrap();
        config.access_log = false;
        config.test_overrides.trust_ca = Some(dir.0.join("ca.der"));
        config.test_overrides.allow_loopback = true;
        config.test_overrides.resolve = [AGENT_HOST, BRAND_HOST, KEYS_HOST]
            .iter()
            .map(|h| ((*h).to_owned(), IpAddr::V4(Ipv4Addr::LOCALHOST)))
            .collect();
        config
    }

    /// A signed `create_media_buy` call: headers and body.
    async fn sign(&self) -> (Vec<(String, String)>, Vec<u8>) {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_media_buy", "arguments": {"idempotency_key": "k-1"}}});
        let body = adcp_sign::Body::json(&call).unwrap();
        let signed = self.signer.sign(&UnsignedRequest::post(URL, &body)).await.unwrap();
        let headers = signed
            .headers()
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect();
        (headers, body.as_bytes().to_vec())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_keys_are_discovered_through_the_agents_brand_json_url() {
    let dir = TempDir::new("request-chain");
    let buyer = Buyer::start().await;
    let seller = Seller::start().await;
    let agent = buyer.url(AGENT_HOST, "/mcp");
    let handle = buyer.gateway(&dir, &seller, &agent).await;
    let (headers, body) = buyer.sign().await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let seen = seller.seen();
    assert_eq!(seen.len(), 1);
    let header = |name: &str| seen[0].headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("x-adcp-signature").as_deref(), Some("verified"));
    assert_eq!(header("x-adcp-verified-agent").as_deref(), Some(agent.as_str()));
    assert_eq!(header("x-adcp-verified-keyid").as_deref(), Some("buyer-chain-2026"));
    // The chain started with an unsigned MCP call of get_adcp_capabilities.
    let calls = buyer.capabilities_calls.lock().unwrap().clone();
    assert!(!calls.is_empty());
    assert_eq!(calls[0]["method"], "tools/call");
    assert_eq!(calls[0]["params"]["name"], "get_adcp_capabilities");
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_chain_answers_the_chains_own_code() {
    let dir = TempDir::new("request-chain-missing");
    let buyer = Buyer::start().await;
    let seller = Seller::start().await;
    let agent = buyer.url(AGENT_HOST, "/bare/mcp");
    let handle = buyer.gateway(&dir, &seller, &agent).await;
    let (headers, body) = buyer.sign().await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    let status = adcp_verify::ErrorCode::BrandJsonUrlMissing.http_status();
    answer
        .check_rejected("request_signature_brand_json_url_missing", status)
        .unwrap();
    assert!(seller.seen().is_empty());
    assert!(!buyer.capabilities_calls.lock().unwrap().is_empty());
    handle.shutdown().await.unwrap();

    // An agent that does not answer its capabilities (404): transient.
    let agent = buyer.url(AGENT_HOST, "/gone/mcp");
    let handle = buyer.gateway(&dir, &seller, &agent).await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    answer
        .check_rejected("request_signature_capabilities_unreachable", 503)
        .unwrap();
    assert!(seller.seen().is_empty());
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_onboarding_brand_json_skips_the_capabilities_call() {
    let dir = TempDir::new("request-chain-onboarding");
    let buyer = Buyer::start().await;
    let seller = Seller::start().await;
    let agent = buyer.url(AGENT_HOST, "/mcp");
    let brand = buyer.url(BRAND_HOST, "/.well-known/brand.json");
    let mut config = buyer.config(&dir, &seller, &agent);
    config
        .set_agent_brand_json_entries([format!("{agent}={brand}")])
        .unwrap();
    let handle = Gateway::from_config(&config)
        .await
        .unwrap()
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap();
    let (headers, body) = buyer.sign().await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let seen = seller.seen();
    assert_eq!(
        seen[0]
            .headers
            .get("x-adcp-verified-agent")
            .map(|v| v.to_str().unwrap()),
        Some(agent.as_str())
    );
    assert!(
        buyer.capabilities_calls.lock().unwrap().is_empty(),
        "no capabilities call"
    );
    handle.shutdown().await.unwrap();

    // Only for an --agent URL, only in request mode.
    let mut other = config.clone();
    other
        .set_agent_brand_json_entries([format!("https://other.example/mcp={brand}")])
        .unwrap();
    assert!(matches!(
        other.validate(),
        Err(adcp_gateway::ConfigError::NotAnAgent { .. })
    ));
    let mut webhook = config.clone();
    webhook.profile = adcp_gateway::GatewayProfile::Webhook;
    webhook.capabilities = None;
    assert!(matches!(
        webhook.validate(),
        Err(adcp_gateway::ConfigError::RequestModeOnly {
            setting: "--agent-brand-json"
        })
    ));

    // From TOML and the environment.
    let pair = (
        "https://a.example/mcp".to_owned(),
        "https://a.example/.well-known/brand.json".to_owned(),
    );
    let toml = GatewayConfig::from_toml_str(
        "[agent_brand_json]\n\"https://a.example/mcp\" = \"https://a.example/.well-known/brand.json\"\n",
    )
    .unwrap();
    assert_eq!(toml.agent_brand_json, std::slice::from_ref(&pair));
    let mut env = GatewayConfig::default();
    env.apply_env_vars(|name| {
        (name == "ADCP_GATEWAY_AGENT_BRAND_JSON")
            .then(|| "https://a.example/mcp=https://a.example/.well-known/brand.json".into())
    })
    .unwrap();
    assert_eq!(env.agent_brand_json, [pair]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_applies_a_changed_onboarding_brand_json() {
    let dir = TempDir::new("request-chain-reload");
    let buyer = Buyer::start().await;
    let seller = Seller::start().await;
    let agent = buyer.url(AGENT_HOST, "/mcp");
    // Onboarded with a brand.json URL that serves nothing.
    let mut config = buyer.config(&dir, &seller, &agent);
    let wrong = buyer.url(BRAND_HOST, "/.well-known/missing.json");
    config
        .set_agent_brand_json_entries([format!("{agent}={wrong}")])
        .unwrap();
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let (headers, body) = buyer.sign().await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_ne!(answer.status, 200, "{answer:?}");
    assert!(seller.seen().is_empty());
    // The mapping corrected and reloaded: that agent gets a new resolver.
    let brand = buyer.url(BRAND_HOST, "/.well-known/brand.json");
    config
        .set_agent_brand_json_entries([format!("{agent}={brand}")])
        .unwrap();
    let reloaded = gateway.reload(&config).unwrap();
    assert_eq!(reloaded.changed, ["agent_brand_json"]);
    let (headers, body) = buyer.sign().await;
    let answer = send_raw(handle.local_addr(), "POST", URL, &headers, &body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        buyer.capabilities_calls.lock().unwrap().is_empty(),
        "still no capabilities call"
    );
    handle.shutdown().await.unwrap();
}
