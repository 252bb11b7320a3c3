//! Acceptance: interop. Our sender's webhooks verify with our receiver for
//! Ed25519 and ES256 (over loopback HTTP, and over TLS through the
//! production SSRF path with a pinned resolver), and every positive
//! webhook-signing conformance vector, replayed byte for byte as a live
//! HTTP request with the clock pinned at its `reference_now`, passes the
//! receiver's verification.

use crate::common::*;
use adcp_sigbase::FixedClock;
use adcp_sign::Algorithm;
use adcp_verify::StaticKeyResolver;
use adcp_webhook::{outcome, Receiver, ReceiverConfig};
use adcp_webhook::{DeliveryOutcome, Destination, DestinationPolicy, WebhookSender};
use adcp_webhook::{McpWebhook, TaskStatus};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn round_trip(alg: Algorithm) {
    let (signer, jwks) = seller(alg, &format!("seller-{}", alg.as_str()));
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .config(http_config())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
    let sender = loopback_sender(signer, fast_retries());
    for (i, status) in [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed]
        .into_iter()
        .enumerate()
    {
        let event = McpWebhook::new(
            "task_interop",
            "create_media_buy",
            status,
            format!("2026-04-18T12:00:0{i}Z"),
        )
        .operation_id("op_interop")
        .context(serde_json::json!({"trace_id": "abc", "nested": {"x": [1, 2.5, "é"]}}))
        .result(serde_json::json!({"percentage": i * 50}))
        .into_event()
        .unwrap();
        let destination =
            Destination::new(url(addr, "/webhooks/op_interop?route=r%2F1")).with_operation_id("op_interop");
        let report = sender.deliver(&destination, &event).await;
        assert_eq!(
            report.outcome,
            DeliveryOutcome::Delivered { status: 200 },
            "{alg:?} {report:?}"
        );
        assert_eq!(report.attempts.len(), 1);
    }
    assert_eq!(effects.count(), 3);
    assert_eq!(receiver.metrics().get(outcome::ACCEPTED), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ed25519_sender_to_receiver() {
    round_trip(Algorithm::Ed25519).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn es256_sender_to_receiver() {
    round_trip(Algorithm::EcdsaP256Sha256).await;
}

/// The production path: HTTPS only, a DNS name resolved by the sender's
/// own resolver, range-checked and pinned; a certificate for that name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_a_pinned_resolver() {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use tokio_rustls::rustls;

    let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-tls");
    let receiver = Receiver::builder(keys_for(&jwks), memory_replay(), memory_idempotency())
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let e = Arc::clone(&effects);
    let app = axum::Router::new().route(
        "/webhooks/tls",
        axum::routing::post(move |w: adcp_webhook::Webhook| {
            let e = Arc::clone(&e);
            async move {
                e.apply(&w);
                "ok"
            }
        })
        .layer(adcp_webhook::ReceiverLayer::new(receiver.clone())),
    );

    let cert = rcgen::generate_simple_self_signed(vec!["buyer.test".to_owned()]).unwrap();
    let cert_der = cert.cert.der().to_vec();
    let key_der = rustls::pki_types::PrivateKeyDer::try_from(cert.key_pair.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![rustls::pki_types::CertificateDer::from(cert_der.clone())], key_der)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else { return };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });

    let sender = WebhookSender::builder(signer)
        .retry_policy(fast_retries())
        .destination_policy(DestinationPolicy::from_ssrf_policy(
            adcp_jwks::SsrfPolicy::new().dangerously_allow_loopback_for_tests(),
        ))
        .dns_resolver(Arc::new(
            adcp_jwks::StaticDnsResolver::new().with("buyer.test", ["127.0.0.1".parse().unwrap()]),
        ))
        .trust_roots(adcp_jwks::TrustRoots::Custom(vec![cert_der]))
        .build()
        .unwrap();
    let event = McpWebhook::new(
        "task_tls",
        "create_media_buy",
        TaskStatus::Completed,
        "2026-04-18T12:00:00Z",
    )
    .into_event()
    .unwrap();
    let report = sender
        .deliver(
            &Destination::new(format!("https://buyer.test:{port}/webhooks/tls")),
            &event,
        )
        .await;
    assert_eq!(report.outcome, DeliveryOutcome::Delivered { status: 200 }, "{report:?}");
    assert_eq!(effects.count(), 1);
}

/// Keys of the suite as a public JWKS (the test-only private members dropped).
fn suite_jwks(suite: &std::path::Path) -> serde_json::Value {
    let keys = adcp_vectors::load_json(suite, "webhook-signing/keys.json").unwrap();
    let public: Vec<serde_json::Value> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let mut k = k.as_object().unwrap().clone();
            k.retain(|name, _| !name.starts_with('_'));
            serde_json::Value::Object(k)
        })
        .collect();
    serde_json::json!({ "keys": public })
}

/// Writes the vector's request on a raw TCP connection, byte for byte
/// (request target exactly as in the URL: no client re-encodes the path or
/// reorders the query), and returns the status and `WWW-Authenticate`.
async fn send_raw(addr: std::net::SocketAddr, request: &adcp_vectors::VectorRequest) -> (u16, Option<String>) {
    let after_scheme = request.url.split_once("://").unwrap().1;
    let (authority, target) = match after_scheme.find('/') {
        Some(i) => after_scheme.split_at(i),
        None => (after_scheme, "/"),
    };
    let body = request.body.clone().unwrap_or_default();
    let mut wire = format!("{} {target} HTTP/1.1\r\nHost: {authority}\r\n", request.method);
    for (name, value) in &request.headers {
        wire.push_str(&format!("{name}: {value}\r\n"));
    }
    wire.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(wire.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let challenge = response
        .lines()
        .find_map(|l| l.strip_prefix("www-authenticate: "))
        .map(str::to_owned);
    (status, challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positive_conformance_vectors_replayed_live_are_accepted() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let jwks = suite_jwks(&suite);
    let files = adcp_vectors::json_files(&suite, "webhook-signing/positive");
    assert!(files.len() >= 8, "{}", files.len());
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let vector: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(vector["expected_outcome"]["success"], true, "{name}");
        let now = vector["reference_now"].as_i64().unwrap();
        let request = adcp_vectors::VectorRequest::from_json(&vector["request"]).unwrap();
        // A fresh receiver per vector (they reuse nonces and keys), with
        // the clock pinned at the vector's reference time; the vectors'
        // URLs are https, as a receiver behind TLS termination sees them.
        let receiver = Receiver::builder(
            Arc::new(StaticKeyResolver::new().with_jwks(&jwks, AGENT_URL)),
            memory_replay(),
            memory_idempotency(),
        )
        .clock(Arc::new(FixedClock(now)))
        .config(ReceiverConfig::default())
        .build()
        .unwrap();
        let effects = Arc::new(Effects::default());
        let addr = serve(receiver.clone(), Arc::clone(&effects)).await;
        let (status, challenge) = send_raw(addr, &request).await;
        // Verification accepted the request: no 401, no challenge, no
        // verifier code counted.
        assert_eq!(challenge, None, "{name}");
        assert!(
            receiver.metrics().snapshot().keys().all(|k| !k.starts_with("webhook_")),
            "{name}: {:?}",
            receiver.metrics().snapshot()
        );
        if name.starts_with("007-") {
            // "Body omits idempotency_key; signature still verifies": the
            // signature is accepted, but an envelope without its key is not
            // dispatchable (receiver-envelope vector `missing-idempotency-key`).
            assert_eq!(status, 400, "{name}");
            assert_eq!(receiver.metrics().get("missing_idempotency_key"), 1, "{name}");
            assert_eq!(effects.count(), 0, "{name}");
        } else {
            assert_eq!(status, 200, "{name}");
            assert_eq!(effects.count(), 1, "{name}");
        }
        // The same bytes again are a replay (nonce burned on first sight).
        let (status, challenge) = send_raw(addr, &request).await;
        assert_eq!(status, 401, "{name}");
        assert_eq!(
            challenge.as_deref(),
            Some("Signature error=\"webhook_signature_replayed\""),
            "{name}"
        );
    }
}

// ------------------------------------------------------------ activation
//
// The seller side of the subscriber activation challenge
// (`WebhookSender::activate`) against local receivers: what activates,
// what does not (with its code), and what is refused before any byte is
// sent. Every challenge received is checked the way a buyer would: it
// classifies as a `Challenge`, and its RFC 9421 webhook-profile signature
// verifies with `adcp_verify`.

mod activation {
    use crate::common::*;
    use adcp_sign::Algorithm;
    use adcp_verify::MemoryReplayStore;
    use adcp_verify::Profile;
    use adcp_verify::StaticKeyResolver;
    use adcp_verify::SystemClock;
    use adcp_verify::Verifier;
    use adcp_webhook::payload::{AcceptKinds, Challenge, Channel, DeliveryAuth, WebhookPayload};
    use adcp_webhook::{
        Activation, ActivationError, ActivationOutcome, DestinationPolicy, EchoError, EchoMember, WebhookSender,
    };
    use axum::http::{header, HeaderMap, StatusCode, Uri};
    use axum::response::{IntoResponse, Response};
    use axum::routing::post;
    use axum::Router;
    use bytes::Bytes;
    use serde_json::{json, Value};
    use sha2::{Digest, Sha256};
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const SELLER: &str = "https://seller.example/adcp";

    /// Every request a test receiver got: headers, path and query, body.
    #[derive(Default)]
    struct Captured {
        requests: Mutex<Vec<(HeaderMap, String, Bytes)>>,
    }

    impl Captured {
        fn count(&self) -> usize {
            self.requests.lock().unwrap().len()
        }

        fn only(&self) -> (HeaderMap, String, Bytes) {
            let requests = self.requests.lock().unwrap();
            assert_eq!(requests.len(), 1, "exactly one challenge POST");
            requests[0].clone()
        }
    }

    /// How a test receiver answers a challenge value.
    type Reply = fn(&str) -> Response;

    /// A receiver that answers with `reply(challenge value)`.
    async fn receiver(reply: Reply) -> (SocketAddr, Arc<Captured>) {
        let captured = Arc::new(Captured::default());
        let seen = Arc::clone(&captured);
        let app = Router::new().fallback(post(move |headers: HeaderMap, uri: Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move {
                let value = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["challenge"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                let path = uri.path_and_query().map(ToString::to_string).unwrap_or_default();
                seen.requests.lock().unwrap().push((headers, path, body));
                reply(&value)
            }
        }));
        (serve_router(app).await, captured)
    }

    fn json_reply(body: Value) -> Response {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }

    fn sender(signer: adcp_sign::HttpSigner<adcp_sign::SoftwareSigner>) -> WebhookSender<adcp_sign::SoftwareSigner> {
        loopback_sender(signer, fast_retries())
    }

    fn account(addr: SocketAddr) -> Activation {
        Activation::account(
            url(addr, "/webhooks/adcp?sub=buyer-primary"),
            "acct_123",
            "buyer-primary",
            SELLER,
            ["creative.status_changed", "creative.purged", "creative.status_changed"],
        )
        .unwrap()
    }

    /// Checks a received challenge as a buyer would: the body classifies
    /// as a challenge of the expected scope, and the signature verifies
    /// under the webhook profile against the seller's JWKS.
    async fn check_received(captured: &Captured, addr: SocketAddr, jwks: &Value) -> Challenge {
        let (headers, path, body) = captured.only();
        let value: Value = serde_json::from_slice(&body).unwrap();
        let challenge = match WebhookPayload::classify(&value, None, AcceptKinds::All).unwrap() {
            WebhookPayload::Challenge(c) => *c,
            other => panic!("not a challenge: {other:?}"),
        };
        let channel = if challenge.account_id().is_some() {
            Channel::AccountNotifications
        } else {
            Channel::AgentNotifications
        };
        assert!(WebhookPayload::classify(&value, Some(channel), AcceptKinds::All).is_ok());
        let target = format!("http://{addr}{path}");
        let mut msg = adcp_sigbase::Message::request("POST", target.as_str());
        for (name, v) in &headers {
            msg = msg.with_header(name.as_str(), v.as_bytes());
        }
        let msg = msg.with_body(body.as_ref());
        let verifier = Verifier::new(
            Profile::webhook_v1(),
            StaticKeyResolver::new().with_jwks(jwks, AGENT_URL),
            MemoryReplayStore::webhook(),
            SystemClock,
        );
        let signer = verifier
            .verify(&msg)
            .await
            .unwrap_or_else(|e| panic!("{}", e.code_str()));
        assert_eq!(signer.agent_url, AGENT_URL);
        let input = headers["signature-input"].to_str().unwrap();
        assert!(input.contains(r#"tag="adcp/webhook-signing/v1""#), "{input}");
        challenge
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_echo_in_challenge_activates_and_the_body_is_the_schema_shape() {
        let (signer, jwks) = seller(Algorithm::Ed25519, "seller-activate");
        let (addr, captured) = receiver(|v| json_reply(json!({"challenge": v}))).await;
        let report = sender(signer).activate(&account(addr)).await;
        assert_eq!(
            report.outcome,
            ActivationOutcome::Activated {
                status: 200,
                member: EchoMember::Challenge
            }
        );
        let challenge = check_received(&captured, addr, &jwks).await;
        assert_eq!(Some(&challenge), report.challenge.as_ref());
        let (_, _, body) = captured.only();
        let value: Value = serde_json::from_slice(&body).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = vec![
            "type",
            "challenge",
            "account_id",
            "subscriber_id",
            "seller_agent_url",
            "delivery_auth",
            "event_types",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected, "exactly the schema's members");
        assert_eq!(value["type"], "webhook.challenge");
        assert_eq!(value["account_id"], "acct_123");
        assert_eq!(value["subscriber_id"], "buyer-primary");
        assert_eq!(value["seller_agent_url"], SELLER);
        assert_eq!(value["delivery_auth"], json!({"mode": "rfc9421"}));
        assert_eq!(
            value["event_types"],
            json!(["creative.purged", "creative.status_changed"]),
            "a sorted set"
        );
        let v = value["challenge"].as_str().unwrap();
        assert!((32..=255).contains(&v.len()), "{v}");
        assert!(v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_echo_in_token_activates_with_legacy_auth_bound_by_fingerprint() {
        let (signer, jwks) = seller(Algorithm::EcdsaP256Sha256, "seller-activate-es");
        let (addr, captured) = receiver(|v| json_reply(json!({"token": v}))).await;
        let credential = "hmac-shared-secret-with-at-least-32-bytes";
        let activation = Activation::agent(
            url(addr, "/agent-hook"),
            "registry-cache",
            SELLER,
            ["capabilities.changed"],
        )
        .unwrap()
        .with_delivery_auth(DeliveryAuth::hmac_sha256(credential))
        .unwrap();
        let report = sender(signer).activate(&activation).await;
        assert_eq!(
            report.outcome,
            ActivationOutcome::Activated {
                status: 200,
                member: EchoMember::Token
            }
        );
        // Signed with the RFC 9421 webhook profile even though later
        // deliveries will be HMAC.
        let challenge = check_received(&captured, addr, &jwks).await;
        let Challenge::Agent(agent) = &challenge else {
            panic!("not agent-level: {challenge:?}")
        };
        assert_eq!(agent.scope, "agent");
        assert_eq!(agent.event_types, ["capabilities.changed"]);
        assert_eq!(agent.delivery_auth.mode, "HMAC-SHA256");
        let expected: String = Sha256::digest(credential.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            agent.delivery_auth.credential_fingerprint.as_deref(),
            Some(expected.as_str())
        );
        let (_, _, body) = captured.only();
        assert!(
            !String::from_utf8_lossy(&body).contains(credential),
            "the credential is never sent"
        );
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert!(value.get("account_id").is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_call_sends_a_fresh_value() {
        let (signer, _) = seller(Algorithm::Ed25519, "seller-fresh");
        let (addr, captured) = receiver(|v| json_reply(json!({"challenge": v}))).await;
        let sender = sender(signer);
        let activation = account(addr);
        let a = sender.activate(&activation).await;
        let b = sender.activate(&activation).await;
        assert!(a.outcome.is_activated() && b.outcome.is_activated());
        assert_ne!(
            a.challenge.unwrap().value(),
            b.challenge.unwrap().value(),
            "a value is never reused"
        );
        assert_eq!(captured.count(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_that_do_not_prove_control() {
        fn wrong_value(_: &str) -> Response {
            json_reply(json!({"challenge": "A".repeat(43)}))
        }
        fn both(v: &str) -> Response {
            json_reply(json!({"challenge": v, "token": v}))
        }
        fn extra(v: &str) -> Response {
            json_reply(json!({"challenge": v, "status": "ok"}))
        }
        fn neither(_: &str) -> Response {
            json_reply(json!({}))
        }
        fn not_json(v: &str) -> Response {
            (StatusCode::OK, v.to_owned()).into_response()
        }
        fn empty(_: &str) -> Response {
            StatusCode::NO_CONTENT.into_response()
        }
        fn duplicate(v: &str) -> Response {
            let body = format!(r#"{{"challenge":"{}","challenge":"{v}"}}"#, "B".repeat(43));
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        fn huge(v: &str) -> Response {
            let body = format!(r#"{{"challenge":"{v}"{}}}"#, " ".repeat(70 * 1024));
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        fn short_value(_: &str) -> Response {
            json_reply(json!({"challenge": "too-short"}))
        }
        fn forbidden(v: &str) -> Response {
            (StatusCode::FORBIDDEN, json!({"challenge": v}).to_string()).into_response()
        }
        fn server_error(v: &str) -> Response {
            (StatusCode::SERVICE_UNAVAILABLE, json!({"challenge": v}).to_string()).into_response()
        }
        let table: [(Reply, &str, Option<&str>, u16); 11] = [
            (wrong_value, "wrong_echo", Some("challenge_response_mismatch"), 200),
            (both, "wrong_echo", Some("challenge_response_ambiguous"), 200),
            (extra, "wrong_echo", Some("challenge_response_unknown_member"), 200),
            (neither, "wrong_echo", Some("challenge_response_missing"), 200),
            (not_json, "wrong_echo", Some("challenge_response_not_json"), 200),
            (empty, "wrong_echo", Some("challenge_response_not_json"), 204),
            (
                duplicate,
                "wrong_echo",
                Some("challenge_response_duplicate_member"),
                200,
            ),
            (huge, "wrong_echo", Some("challenge_response_too_large"), 200),
            (short_value, "wrong_echo", Some("challenge_response_invalid_value"), 200),
            (forbidden, "refused", None, 403),
            (server_error, "refused", None, 503),
        ];
        let (signer, _) = seller(Algorithm::Ed25519, "seller-wrong");
        let sender = sender(signer);
        for (reply, code, reason, status) in table {
            let (addr, captured) = receiver(reply).await;
            let report = sender.activate(&account(addr)).await;
            assert!(!report.outcome.is_activated(), "{code} {reason:?}");
            assert_eq!(report.outcome.code(), code, "{:?}", report.outcome);
            assert_eq!(report.outcome.reason_code(), reason, "{:?}", report.outcome);
            assert_eq!(report.outcome.status(), Some(status));
            assert_eq!(captured.count(), 1, "one POST, no retry");
        }
        // The typed reason, for one of them.
        let (addr, _) = receiver(both).await;
        assert!(matches!(
            sender.activate(&account(addr)).await.outcome,
            ActivationOutcome::WrongEcho {
                reason: EchoError::Response(adcp_webhook::payload::ChallengeResponseError::Ambiguous),
                ..
            }
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_receiver_times_out() {
        let app = Router::new().fallback(post(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "late"
        }));
        let addr = serve_router(app).await;
        let (signer, _) = seller(Algorithm::Ed25519, "seller-slow");
        let activation = account(addr).with_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let report = sender(signer).activate(&activation).await;
        assert_eq!(report.outcome, ActivationOutcome::Timeout);
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_redirect_is_not_followed() {
        let (target, target_seen) = receiver(|v| json_reply(json!({"challenge": v}))).await;
        let location = url(target, "/elsewhere");
        let app = Router::new().fallback(post(move || {
            let location = location.clone();
            async move { (StatusCode::FOUND, [(header::LOCATION, location)]).into_response() }
        }));
        let addr = serve_router(app).await;
        let (signer, _) = seller(Algorithm::Ed25519, "seller-redirect");
        let report = sender(signer).activate(&account(addr)).await;
        assert_eq!(report.outcome, ActivationOutcome::Redirected { status: 302 });
        assert_eq!(report.outcome.code(), "redirect_refused");
        assert_eq!(target_seen.count(), 0, "the redirect target never got a request");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ssrf_refused_urls_get_no_connection() {
        // A listener that counts connections: the production policy must
        // refuse loopback before connecting to it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            while listener.accept().await.is_ok() {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let (signer, _) = seller(Algorithm::Ed25519, "seller-ssrf-activate");
        let prod = WebhookSender::builder(signer).build().unwrap();
        for bad in [
            format!("https://127.0.0.1:{port}/hook"),
            format!("http://127.0.0.1:{port}/hook"),
            "https://10.0.0.7/hook".to_owned(),
            "https://169.254.169.254/latest/meta-data/".to_owned(),
            "https://[::ffff:127.0.0.1]/hook".to_owned(),
            "https://user:pw@buyer.example/hook".to_owned(),
        ] {
            let activation = Activation::agent(bad.as_str(), "s-1", SELLER, ["capabilities.changed"]).unwrap();
            let report = prod.activate(&activation).await;
            assert!(
                matches!(report.outcome, ActivationOutcome::InvalidDestination(_)),
                "{bad}: {report:?}"
            );
            assert_eq!(report.outcome.code(), "ssrf_refused");
            assert!(report.challenge.is_none(), "{bad}: nothing sent");
        }
        // A name resolving to a private address: refused by the pinned
        // resolver, before any connection.
        let (signer, _) = seller(Algorithm::Ed25519, "seller-ssrf-dns");
        let rebinding = WebhookSender::builder(signer)
            .destination_policy(DestinationPolicy::default())
            .dns_resolver(Arc::new(
                adcp_jwks::StaticDnsResolver::new().with("buyer.example", ["10.1.2.3".parse().unwrap()]),
            ))
            .build()
            .unwrap();
        let activation =
            Activation::agent("https://buyer.example/hook", "s-1", SELLER, ["capabilities.changed"]).unwrap();
        let report = rebinding.activate(&activation).await;
        assert!(
            matches!(report.outcome, ActivationOutcome::InvalidDestination(_)),
            "{report:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_endpoint_is_reported_as_such() {
        // Bind then drop: nothing listens on the port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (signer, _) = seller(Algorithm::Ed25519, "seller-unreachable");
        let activation = Activation::agent(
            format!("http://127.0.0.1:{port}/h"),
            "s-1",
            SELLER,
            ["capabilities.changed"],
        )
        .unwrap();
        let report = sender(signer).activate(&activation).await;
        assert_eq!(report.outcome, ActivationOutcome::Unreachable);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scope_rules_refuse_before_sending() {
        let (addr, captured) = receiver(|v| json_reply(json!({"challenge": v}))).await;
        let err = Activation::agent(
            url(addr, "/h"),
            "registry-cache",
            SELLER,
            ["capabilities.changed", "creative.status_changed"],
        )
        .unwrap_err();
        assert_eq!(
            err,
            ActivationError::EventTypeNotAllowed {
                event_type: "creative.status_changed".to_owned(),
                scope: "agent"
            }
        );
        assert_eq!(err.code(), "event_type_not_allowed");
        let err = Activation::account(url(addr, "/h"), "acct_1", "s-1", SELLER, ["capabilities.changed"]).unwrap_err();
        assert_eq!(err.code(), "event_type_not_allowed");
        // Nothing could be activated, so nothing was sent.
        assert_eq!(captured.count(), 0);
    }
}
