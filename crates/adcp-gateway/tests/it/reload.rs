//! Reloading keys and policies without a restart (`Gateway::reload`, what
//! `SIGHUP` runs): a kid newly revoked in the TOML file is refused after
//! the reload and not before, a key added to the `--jwks` file verifies
//! after it and not before; a broken file keeps the set in force and is
//! counted as a failed reload; settings that need a restart are reported,
//! not applied; request mode's capabilities, the sellers' key sets, the
//! HMAC secret file and the subscriptions file reload too; a gateway built
//! from parts has nothing to reload.

use crate::request_mode::{memory_store, send_raw, Seller as SellerServer};
use crate::support::{
    event, http_client, metrics_text, post_signed, serve_loopback, Seller, TempDir, Upstream, AGENT, PATH,
};
use adcp_gateway::{ConfigError, Gateway, GatewayConfig, GatewayOptions};
use adcp_sign::{Algorithm, HttpSigner, SoftwareSigner};
use std::path::PathBuf;
use std::sync::Arc;

/// A second signer of the same seller, under `kid`; its public JWK.
fn key(kid: &str) -> (HttpSigner<SoftwareSigner>, serde_json::Value) {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
    let jwk = key.jwks().unwrap().to_public_json()["keys"][0].clone();
    (HttpSigner::webhook(key).unwrap(), jwk)
}

/// Writes the seller's JWKS file with `keys`.
fn write_jwks(dir: &TempDir, keys: &[&serde_json::Value]) {
    std::fs::write(
        dir.0.join("seller-jwks.json"),
        serde_json::json!({ "keys": keys }).to_string(),
    )
    .unwrap();
}

/// Writes the TOML file (`extra` appended) and reads it back.
fn write_toml(dir: &TempDir, upstream: &Upstream, extra: &str) -> GatewayConfig {
    let toml = format!(
        "upstream = \"{}\"\njwks = \"seller-jwks.json\"\njwks_agent = \"{AGENT}\"\nstore = \"sqlite:{}\"\nupstream_timeout = 5\n{extra}",
        upstream.url(),
        dir.0.join("dedup.sqlite").display()
    );
    let path: PathBuf = dir.0.join("gateway.toml");
    std::fs::write(&path, toml).unwrap();
    let mut config = GatewayConfig::from_toml_file(&path).unwrap();
    config.access_log = false;
    config
}

/// Posts `n`'s event signed by `signer` to `base`: the status and the
/// `WWW-Authenticate` value.
async fn deliver(signer: &HttpSigner<SoftwareSigner>, base: &str, n: &str) -> (u16, Option<String>) {
    let url = format!("{base}{PATH}");
    let signed = signer.sign_webhook(&url, &event(n)).await.unwrap();
    let response = post_signed(http_client().post(&url), &signed).await;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

fn refused(code: &str) -> (u16, Option<String>) {
    (401, Some(format!("Signature error=\"{code}\"")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_applies_new_keys_and_revoked_kids_and_a_broken_file_keeps_the_old_set() {
    let dir = TempDir::new("reload");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let (second, second_jwk) = key("seller-second");
    let (added, added_jwk) = key("seller-added");
    let first_jwk = seller.jwks["keys"][0].clone();
    write_jwks(&dir, &[&first_jwk, &second_jwk]);
    let config = write_toml(&dir, &upstream, "");
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let base = handle.base_url();

    assert_eq!(deliver(&seller.signer, &base, "a").await, (200, None));
    assert_eq!(deliver(&second, &base, "b").await, (200, None));
    assert_eq!(
        deliver(&added, &base, "c").await,
        refused("webhook_signature_key_unknown")
    );

    // The second kid revoked and a key added in the files: nothing changes
    // until the reload.
    write_jwks(&dir, &[&first_jwk, &second_jwk, &added_jwk]);
    let edited = write_toml(&dir, &upstream, "revoked_kids = [\"seller-second\"]\n");
    assert_eq!(deliver(&second, &base, "d").await, (200, None), "not before the reload");
    assert_eq!(
        deliver(&added, &base, "e").await,
        refused("webhook_signature_key_unknown")
    );
    let reloaded = gateway.reload(&edited).unwrap();
    assert_eq!(reloaded.changed, ["revoked_kids"]);
    assert!(reloaded.needs_restart.is_empty(), "{reloaded:?}");
    assert_eq!(
        deliver(&second, &base, "f").await,
        refused("webhook_signature_key_revoked")
    );
    assert_eq!(deliver(&added, &base, "g").await, (200, None), "the added key verifies");
    assert_eq!(deliver(&seller.signer, &base, "h").await, (200, None));
    assert_eq!(gateway.metrics().reload_count(), 1);

    // A broken JWKS file: the reload fails, says why, and the set in force
    // stays (the added key still verifies, the revoked kid is still
    // refused).
    std::fs::write(dir.0.join("seller-jwks.json"), "{\"keys\": [").unwrap();
    let e = gateway.reload(&edited).unwrap_err();
    assert!(matches!(e, ConfigError::JwksJson { .. }), "{e:?}");
    assert!(e.to_string().contains("seller-jwks.json"), "{e}");
    assert_eq!(deliver(&added, &base, "i").await, (200, None));
    assert_eq!(
        deliver(&second, &base, "j").await,
        refused("webhook_signature_key_revoked")
    );
    assert_eq!(gateway.metrics().reload_failure_count(), 1);
    let text = metrics_text(&base).await;
    assert!(text.contains("adcp_gateway_reloads_total{result=\"ok\"} 1\n"), "{text}");
    assert!(
        text.contains("adcp_gateway_reloads_total{result=\"failed\"} 1\n"),
        "{text}"
    );
    // The outcome counters carried over the reload.
    assert!(
        text.contains("adcp_gateway_webhooks_total{outcome=\"accepted\"} 6\n"),
        "{text}"
    );
    assert!(
        text.contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_key_revoked\"} 2\n"),
        "{text}"
    );
    assert_eq!(gateway.receiver().metrics().get("accepted"), 6);

    // A setting that needs a restart is reported, not applied; the keys
    // reload with it.
    write_jwks(&dir, &[&first_jwk, &second_jwk, &added_jwk]);
    let restart = write_toml(
        &dir,
        &upstream,
        "revoked_kids = [\"seller-second\", \"seller-added\"]\nmax_body_bytes = 10\nheader_timeout = 3\n",
    );
    let reloaded = gateway.reload(&restart).unwrap();
    assert_eq!(reloaded.changed, ["revoked_kids"]);
    assert_eq!(reloaded.needs_restart, ["header_timeout", "max_body_bytes"]);
    assert_eq!(
        deliver(&added, &base, "k").await,
        refused("webhook_signature_key_revoked")
    );
    assert_eq!(
        deliver(&seller.signer, &base, "l").await,
        (200, None),
        "max_body_bytes kept"
    );
    // Reloading the same configuration again changes nothing.
    let again = gateway.reload(&restart).unwrap();
    assert!(again.changed.is_empty(), "{again:?}");
    assert_eq!(gateway.metrics().reload_count(), 3);
    assert_eq!(upstream.applied().len(), 7);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_mode_reloads_its_capabilities() {
    let dir = TempDir::new("reload-request");
    let seller = SellerServer::start().await;
    std::fs::write(dir.0.join("buyer-jwks.json"), r#"{"keys": []}"#).unwrap();
    let caps = |required: &[&str]| {
        std::fs::write(
            dir.0.join("caps.json"),
            serde_json::json!({"supported": true, "covers_content_digest": "required", "required_for": required})
                .to_string(),
        )
        .unwrap();
    };
    caps(&[]);
    let mut config = GatewayConfig::new(seller.url());
    config.profile = adcp_gateway::GatewayProfile::Request;
    config.capabilities = Some(dir.0.join("caps.json"));
    config.jwks = Some(dir.0.join("buyer-jwks.json"));
    config.store = "memory:".parse().unwrap();
    config.access_log = false;
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let addr = handle.local_addr();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "create_media_buy", "arguments": {"idempotency_key": "k"}}});
    let body = serde_json::to_vec(&call).unwrap();
    let headers = [("Content-Type".to_owned(), "application/json".to_owned())];
    let url = format!("http://{addr}/mcp");
    // Unsigned and not required: forwarded marked unsigned.
    assert_eq!(send_raw(addr, "POST", &url, &headers, &body).await.status, 200);
    // Now required: refused after the reload.
    caps(&["create_media_buy"]);
    let reloaded = gateway.reload(&config).unwrap();
    assert!(reloaded.changed.is_empty(), "same path, new content: {reloaded:?}");
    let answer = send_raw(addr, "POST", &url, &headers, &body).await;
    answer.check_rejected("request_signature_required", 401).unwrap();
    assert_eq!(seller.seen().len(), 1);
    // A capabilities file that no longer parses keeps the policy in force.
    std::fs::write(dir.0.join("caps.json"), "{").unwrap();
    assert!(matches!(
        gateway.reload(&config),
        Err(ConfigError::CapabilitiesJson { .. })
    ));
    let answer = send_raw(addr, "POST", &url, &headers, &body).await;
    answer.check_rejected("request_signature_required", 401).unwrap();
    // The profile needs a restart: reported, not applied.
    caps(&["create_media_buy"]);
    let mut legacy = config.clone();
    legacy.request_profile = Some(adcp_gateway::RequestProfileSetting::Legacy);
    let reloaded = gateway.reload(&legacy).unwrap();
    assert_eq!(reloaded.needs_restart, ["request_profile"]);
    assert_eq!(gateway.request_verifier().unwrap().profile().name(), "request-3.2");
    handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_gateway_built_from_parts_has_nothing_to_reload() {
    let options = GatewayOptions::new("http://127.0.0.1:9/events".parse().unwrap());
    let keys = Arc::new(adcp_verify::StaticKeyResolver::new());
    let gateway = Gateway::new(keys, memory_store().await, options).unwrap();
    let config = GatewayConfig::new("http://127.0.0.1:9/events".parse().unwrap());
    assert!(matches!(gateway.reload(&config), Err(ConfigError::NotReloadable)));
    assert_eq!(gateway.metrics().reload_failure_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_applies_seller_key_sets_and_the_hmac_secret_file() {
    let dir = TempDir::new("reload-sellers");
    let upstream = Upstream::start().await;
    let (one, one_jwk) = key("seller-one-key");
    let (rotated, rotated_jwk) = key("seller-one-rotated");
    let (two, two_jwk) = key("seller-two-key");
    let jwks = |name: &str, keys: &[&serde_json::Value]| {
        std::fs::write(dir.0.join(name), serde_json::json!({ "keys": keys }).to_string()).unwrap();
    };
    let toml = |sellers: &str| {
        let path = dir.0.join("gateway.toml");
        std::fs::write(
            &path,
            format!(
                "upstream = \"{}\"\nstore = \"sqlite:{}\"\n\n[sellers]\n{sellers}",
                upstream.url(),
                dir.0.join("dedup.sqlite").display()
            ),
        )
        .unwrap();
        let mut config = GatewayConfig::from_toml_file(&path).unwrap();
        config.access_log = false;
        config
    };
    jwks("one.json", &[&one_jwk]);
    jwks("two.json", &[&two_jwk]);
    let config = toml("\"https://one.example/mcp\" = \"one.json\"\n");
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let base = handle.base_url();
    assert_eq!(deliver(&one, &base, "a").await, (200, None));
    assert_eq!(
        deliver(&rotated, &base, "b").await,
        refused("webhook_signature_key_unknown")
    );
    assert_eq!(
        deliver(&two, &base, "c").await,
        refused("webhook_signature_key_unknown")
    );
    // A rotated key in the first seller's file, a second seller in the table.
    jwks("one.json", &[&one_jwk, &rotated_jwk]);
    let config = toml("\"https://one.example/mcp\" = \"one.json\"\n\"https://two.example/mcp\" = \"two.json\"\n");
    assert_eq!(gateway.reload(&config).unwrap().changed, ["sellers"]);
    assert_eq!(deliver(&rotated, &base, "d").await, (200, None));
    assert_eq!(deliver(&two, &base, "e").await, (200, None));
    let agents: Vec<String> = upstream
        .applied()
        .iter()
        .map(|(headers, _)| headers["x-adcp-verified-agent"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        agents,
        [
            "https://one.example/mcp",
            "https://one.example/mcp",
            "https://two.example/mcp"
        ]
    );
    handle.shutdown().await.unwrap();

    // A legacy HMAC registration: the secret file read again.
    let hmac_dir = TempDir::new("reload-hmac");
    let secret_file = hmac_dir.0.join("hmac.secret");
    std::fs::write(&secret_file, "first-shared-secret-0123456789abcdef\n").unwrap();
    let mut config = GatewayConfig::new(upstream.url().parse().unwrap());
    config.hmac_secret_file = Some(secret_file.clone());
    config.hmac_sender = Some(AGENT.to_owned());
    config.store = "memory:".parse().unwrap();
    config.access_log = false;
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let post = |secret: &'static str, n: &'static str| {
        let url = format!("{}{PATH}", handle.base_url());
        async move {
            let signed = adcp_sign::LegacyHmacSigner::new(secret.as_bytes())
                .unwrap()
                .sign_event(&event(n))
                .unwrap();
            let mut request = http_client().post(url).header("content-type", "application/json");
            for (name, value) in signed.headers() {
                request = request.header(name, value);
            }
            let response = request.body(signed.body().as_bytes().to_vec()).send().await.unwrap();
            response.status().as_u16()
        }
    };
    assert_eq!(post("first-shared-secret-0123456789abcdef", "h1").await, 200);
    std::fs::write(&secret_file, "second-shared-secret-0123456789abcdef\n").unwrap();
    assert_eq!(
        post("second-shared-secret-0123456789abcdef", "h2").await,
        401,
        "not before"
    );
    let reloaded = gateway.reload(&config).unwrap();
    assert!(reloaded.changed.is_empty(), "same path: {reloaded:?}");
    assert_eq!(post("second-shared-secret-0123456789abcdef", "h3").await, 200);
    assert_eq!(post("first-shared-secret-0123456789abcdef", "h4").await, 401);
    // An empty secret file is refused; the second secret stays.
    std::fs::write(&secret_file, "").unwrap();
    assert!(matches!(gateway.reload(&config), Err(ConfigError::EmptyHmacSecret)));
    assert_eq!(post("second-shared-secret-0123456789abcdef", "h5").await, 200);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_applies_the_subscriptions_file() {
    let dir = TempDir::new("reload-subscriptions");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let registrations = |active: bool| {
        let registration = serde_json::json!([{
            "url": "https://buyer.example/hooks",
            "seller_agent_url": AGENT,
            "subscriber_id": "desk-1",
            "account_id": "acct_1",
            "delivery_auth": {"mode": "rfc9421"},
            "event_types": ["creative.status_changed"],
            "active": active
        }]);
        std::fs::write(dir.0.join("subscriptions.json"), registration.to_string()).unwrap();
    };
    registrations(true);
    let mut config = GatewayConfig::new(upstream.url().parse().unwrap());
    config.jwks = Some(dir.0.join("seller-jwks.json"));
    config.jwks_agent = AGENT.to_owned();
    config.subscriptions = Some(dir.0.join("subscriptions.json"));
    config.public_url = Some("https://buyer.example".parse().unwrap());
    config.store = "memory:".parse().unwrap();
    config.access_log = false;
    let gateway = Gateway::from_config(&config).await.unwrap();
    let handle = serve_loopback(&gateway).await;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../adcp-webhook/tests/fixtures/payloads/creative_status_changed.json"
    );
    let note = |key: &str| {
        let mut note: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        note["idempotency_key"] = serde_json::json!(key);
        note["notification_id"] = serde_json::json!(format!("crv_1.{key}"));
        note["subscriber_id"] = serde_json::json!("desk-1");
        note["account_id"] = serde_json::json!("acct_1");
        note
    };
    let post = |payload: serde_json::Value| {
        let (url, seller) = (format!("{}/hooks", handle.base_url()), &seller);
        async move {
            let body = adcp_sign::Body::from_json_bytes(payload.to_string()).unwrap();
            let request = adcp_sign::UnsignedRequest::new("POST", "https://buyer.example/hooks")
                .with_body(&body)
                .with_content_type("application/json");
            let signed = seller
                .signer
                .sign_with(&request, &adcp_sign::SignOptions::new())
                .await
                .unwrap();
            let response = post_signed(http_client().post(url).header("host", "buyer.example"), &signed).await;
            let status = response.status().as_u16();
            let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap_or_default();
            (status, body["error"].as_str().map(str::to_owned))
        }
    };
    assert_eq!(post(note("note-key-000000000001")).await, (200, None));
    // The registration paused in the file: applied on reload only.
    registrations(false);
    assert_eq!(post(note("note-key-000000000002")).await, (200, None), "not before");
    gateway.reload(&config).unwrap();
    assert_eq!(
        post(note("note-key-000000000003")).await,
        (403, Some("subscription_mismatch".to_owned()))
    );
    // A registrations file the start would refuse keeps the ones in force.
    std::fs::write(dir.0.join("subscriptions.json"), "[{\"url\": 1}]").unwrap();
    assert!(matches!(gateway.reload(&config), Err(ConfigError::Registrations(_))));
    assert_eq!(
        post(note("note-key-000000000004")).await,
        (403, Some("subscription_mismatch".to_owned()))
    );
    assert_eq!(upstream.applied().len(), 2);
    handle.shutdown().await.unwrap();
}
