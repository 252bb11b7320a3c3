//! `grade sender` against senders built here with the workspace's signing
//! crates: a correct one (nothing fails), and deliberately broken ones,
//! each failing exactly the case its fault breaks.

use adcp_grade::{PublishedKeys, Registration, Report, SenderConfig, SenderGrader, Status};
use adcp_sign::{Algorithm, HttpSigner, IdempotencyKey, SignOptions, SoftwareSigner, UnsignedRequest, WebhookEvent};
use serde_json::{json, Value};
use std::time::Duration;

// The loopback brand.json / JWKS server `signer.rs` also loads; its copy
// is private to that module.
#[allow(clippy::duplicate_mod)]
#[path = "../../../adcp-jwks/tests/common/mod.rs"]
mod jwks_server;

const AGENT: &str = "https://seller.example/mcp";

/// How the sender under test breaks the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// The retry is signed with the first attempt's nonce.
    NonceReused,
    /// The retry carries the same key with a changed payload.
    BodyChanged,
    /// Keys from a counter.
    SequentialKeys,
    /// Signature-Input's `tag` is the request-signing one.
    WrongTag,
    /// A `503` is never retried.
    NoRetry,
}

/// A task webhook for `registration`, event `n`.
fn payload(registration: &Registration, n: usize, message: &str) -> Value {
    json!({
        "task_id": format!("task_{n}"),
        "task_type": "create_media_buy",
        "status": "completed",
        "timestamp": "2026-12-07T06:00:00Z",
        "operation_id": registration.operation_id,
        "token": registration.token,
        "message": message,
        "result": {"media_buy_id": format!("mb_{n}")},
    })
}

struct Sender {
    signer: HttpSigner<SoftwareSigner>,
    client: reqwest::Client,
    fault: Fault,
}

impl Sender {
    fn new(key: SoftwareSigner, fault: Fault) -> Self {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        Self {
            signer: HttpSigner::webhook(key).unwrap(),
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            fault,
        }
    }

    /// Signs and posts `event`; the status answered.
    async fn attempt(&self, url: &str, event: &WebhookEvent, options: &SignOptions) -> (u16, adcp_sign::Nonce) {
        let signed = self
            .signer
            .sign_with(&UnsignedRequest::post(url, event.body()), options)
            .await
            .unwrap();
        let mut request = self.client.post(signed.url()).body(event.body().as_bytes().to_vec());
        for (name, value) in signed.headers() {
            let value = if self.fault == Fault::WrongTag && *name == "Signature-Input" {
                value.replace("adcp/webhook-signing/v1", "adcp/request-signing/v1")
            } else {
                value.clone()
            };
            request = request.header(*name, value);
        }
        let status = request.send().await.unwrap().status().as_u16();
        (status, signed.nonce().clone())
    }

    /// Delivers event `n` until it is answered 2xx (the fault permitting).
    async fn deliver(&self, registration: &Registration, n: usize) {
        let key = match self.fault {
            Fault::SequentialKeys => IdempotencyKey::new(format!("evt-seq-key-{n:08}")).unwrap(),
            _ => IdempotencyKey::generate().unwrap(),
        };
        let first = WebhookEvent::with_idempotency_key(key.clone(), &payload(registration, n, "created")).unwrap();
        let (status, nonce) = self.attempt(&registration.url, &first, &SignOptions::new()).await;
        if (200..300).contains(&status) || self.fault == Fault::NoRetry {
            return;
        }
        assert_eq!(status, 503, "the first delivery of a key is answered 503");
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (retry, options) = match self.fault {
            Fault::BodyChanged => (
                WebhookEvent::with_idempotency_key(key, &payload(registration, n, "created (retry)")).unwrap(),
                SignOptions::new(),
            ),
            Fault::NonceReused => (first, SignOptions::new().with_nonce(nonce)),
            _ => (first, SignOptions::new()),
        };
        let (status, _) = self.attempt(&registration.url, &retry, &options).await;
        assert_eq!(status, 200, "a retry is answered 2xx");
    }
}

/// Binds a grader (window `window`), lets a `fault`y sender deliver two
/// events, and returns the report at the end of the window.
async fn grade(fault: Fault, window: Duration) -> Report {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let keys = PublishedKeys::Jwks {
        jwks: key.jwks().unwrap().to_public_json(),
        agent: AGENT.into(),
    };
    grade_with(key, keys, fault, window).await
}

/// [`grade`] with the seller's `key`, published as `keys`.
async fn grade_with(key: SoftwareSigner, keys: PublishedKeys, fault: Fault, window: Duration) -> Report {
    let mut config = SenderConfig::new("127.0.0.1:0".parse().unwrap(), keys);
    config.window = window;
    config.allow_http = true;
    let grader = SenderGrader::bind(config).await.unwrap();
    let registration = grader.registration().clone();
    assert_eq!(registration.url, format!("{}/webhook", grader.listening_url()));
    let sender = Sender::new(key, fault);
    let report = tokio::spawn(grader.run());
    for n in 1..=2 {
        sender.deliver(&registration, n).await;
    }
    report.await.unwrap().unwrap()
}

fn status(report: &Report, id: &str) -> Status {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
        .status
}

fn case<'r>(report: &'r Report, id: &str) -> &'r adcp_grade::CaseResult {
    report.cases.iter().find(|c| c.id == id).unwrap()
}

fn fails_exactly(report: &Report, id: &str) {
    assert_eq!(report.failed_ids(), vec![id], "{:#?}", report.cases);
}

const WINDOW: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_sender_fails_nothing() {
    let report = grade(Fault::None, WINDOW).await;
    assert_eq!(report.failed(), 0, "{:#?}", report.cases);
    assert_eq!(report.grader, "sender");
    // Every case was observed (the schema one needs the 3.2 schemas).
    for (id, _) in report.cases.iter().map(|c| (c.id.as_str(), ())) {
        if id == "sender/schema" && adcp_vectors::schemas_dir().is_none() {
            continue;
        }
        assert_eq!(status(&report, id), Status::Passed, "{id}: {:#?}", case(&report, id));
    }
    assert_eq!(report.cases.len(), 15);
    assert_eq!(case(&report, "sender/delivery").got, "4 deliveries of 2 events");
    assert!(case(&report, "sender/signature")
        .reason
        .contains("kid seller-2026-12 of https://seller.example/mcp"));
    assert_eq!(report.summary_line().split(',').nth(1).map(str::trim), Some("0 failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nonce_reused_on_retry_fails_fresh_nonce_only() {
    let report = grade(Fault::NonceReused, WINDOW).await;
    fails_exactly(&report, "sender/fresh-nonce");
    assert!(case(&report, "sender/fresh-nonce")
        .reason
        .contains("reuses the nonce of #1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_changed_on_retry_fails_retry_same_body_only() {
    let report = grade(Fault::BodyChanged, WINDOW).await;
    fails_exactly(&report, "sender/retry-same-body");
    assert!(case(&report, "sender/retry-same-body")
        .reason
        .contains("member message"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_keys_fail_unpredictable_key_only() {
    let report = grade(Fault::SequentialKeys, WINDOW).await;
    fails_exactly(&report, "sender/unpredictable-key");
    assert!(case(&report, "sender/unpredictable-key").reason.contains("differ by 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_signing_tag_fails_signature_only() {
    let report = grade(Fault::WrongTag, WINDOW).await;
    fails_exactly(&report, "sender/signature");
    assert!(case(&report, "sender/signature")
        .got
        .contains("webhook_signature_tag_invalid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_retry_after_a_503_fails_retry_after_503_only() {
    let report = grade(Fault::NoRetry, WINDOW).await;
    fails_exactly(&report, "sender/retry-after-503");
    let retry = case(&report, "sender/retry-after-503");
    assert_eq!(retry.got, "0 of 2 retried within 90 s");
    assert!(retry.reason.contains("before 90 s"), "{}", retry.reason);
    // Nothing to compare is skipped, not passed.
    for id in ["sender/retry-same-body", "sender/no-retry-after-2xx"] {
        assert_eq!(status(&report, id), Status::Skipped, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_arriving_fails_delivery_and_skips_the_rest() {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let mut config = SenderConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        PublishedKeys::Jwks {
            jwks: key.jwks().unwrap().to_public_json(),
            agent: AGENT.into(),
        },
    );
    config.window = Duration::from_millis(300);
    config.allow_http = true;
    let report = SenderGrader::bind(config).await.unwrap().run().await.unwrap();
    assert_eq!(report.failed_ids(), vec!["sender/delivery"]);
    assert_eq!(report.skipped(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_deliveries_are_bounded_and_graded_not_panicked_on() {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let mut config = SenderConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        PublishedKeys::Jwks {
            jwks: key.jwks().unwrap().to_public_json(),
            agent: AGENT.into(),
        },
    );
    config.window = Duration::from_secs(2);
    config.allow_http = true;
    let grader = SenderGrader::bind(config).await.unwrap();
    let url = grader.registration().url.clone();
    let report = tokio::spawn(grader.run());
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let big = vec![b'x'; adcp_grade::MAX_BODY_BYTES + 1];
    let answers = [
        client.post(&url).body(big).send().await.unwrap().status().as_u16(),
        client
            .post(format!("{url}/any/path?q=1"))
            .header("content-type", "application/json")
            .header("signature-input", "sig1=(")
            .header("signature", "garbage")
            .body(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaaaaaaa","a":{"b":[1,2,"#)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        client
            .post(&url)
            .header("x-big", "y".repeat(adcp_grade::MAX_HEADER_BYTES / 2))
            .header("x-big-2", "y".repeat(adcp_grade::MAX_HEADER_BYTES / 2))
            .body(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaaaaaab"}"#)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        client
            .put(&url)
            .body(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaaaaaab","idempotency_key":"x"}"#)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
    ];
    assert_eq!(answers, [413, 400, 431, 503]);
    let report = report.await.unwrap().unwrap();
    assert_eq!(case(&report, "sender/delivery").got, "4 deliveries of 1 events");
    assert_eq!(status(&report, "sender/signature"), Status::Failed);
    assert_eq!(status(&report, "sender/idempotency-key"), Status::Failed);
}

#[tokio::test]
async fn an_address_in_use_is_a_listen_error() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = SenderConfig::new(
        taken.local_addr().unwrap(),
        PublishedKeys::Jwks {
            jwks: json!({"keys": []}),
            agent: AGENT.into(),
        },
    );
    config.allow_http = true;
    let e = SenderGrader::bind(config).await.unwrap_err();
    assert!(matches!(e, adcp_grade::GradeError::Listen(_)), "{e:?}");
    assert!(e.to_string().starts_with("listen: --listen 127.0.0.1:"), "{e}");
}

#[tokio::test]
async fn plain_http_needs_allow_http_and_the_window_is_bounded() {
    let keys = || PublishedKeys::Jwks {
        jwks: json!({"keys": []}),
        agent: AGENT.into(),
    };
    let config = SenderConfig::new("127.0.0.1:0".parse().unwrap(), keys());
    let e = SenderGrader::bind(config).await.unwrap_err();
    assert!(e.to_string().contains("--allow-http"), "{e}");
    let mut config = SenderConfig::new("127.0.0.1:0".parse().unwrap(), keys());
    config.public_url = Some("http://buyer.example/hook".into());
    assert!(SenderGrader::bind(config).await.is_err());
    let mut config = SenderConfig::new("127.0.0.1:0".parse().unwrap(), keys());
    config.public_url = Some("https://buyer.example:8443/hooks/adcp?x=1".into());
    config.window = Duration::ZERO;
    assert!(SenderGrader::bind(config)
        .await
        .unwrap_err()
        .to_string()
        .contains("--window"));
    let mut config = SenderConfig::new("127.0.0.1:0".parse().unwrap(), keys());
    config.public_url = Some("https://buyer.example:8443/hooks/adcp?x=1".into());
    let grader = SenderGrader::bind(config).await.unwrap();
    let registration = grader.registration();
    assert_eq!(registration.url, "https://buyer.example:8443/hooks/adcp?x=1");
    assert_ne!(registration.token, registration.operation_id);
    assert!(registration.token.as_ref().is_some_and(|t| t.len() >= 16));
}

/// Behind a TLS terminator: the seller signs the public URL; the listener
/// sees another `Host` and path, and verification uses the public URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_public_url_is_the_target_behind_a_proxy() {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let mut config = SenderConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        PublishedKeys::Jwks {
            jwks: key.jwks().unwrap().to_public_json(),
            agent: AGENT.into(),
        },
    );
    config.public_url = Some("https://hooks.buyer.example/grader/webhook".into());
    config.window = Duration::from_secs(2);
    let grader = SenderGrader::bind(config).await.unwrap();
    let registration = grader.registration().clone();
    let local = grader.listening_url();
    let report = tokio::spawn(grader.run());
    let sender = Sender::new(key, Fault::None);
    let event = WebhookEvent::new(&payload(&registration, 1, "created")).unwrap();
    let signed = sender.signer.sign_webhook(&registration.url, &event).await.unwrap();
    // The proxy forwards to the listener under another path and Host.
    let mut request = sender
        .client
        .post(format!("{local}/webhook"))
        .body(event.body().as_bytes().to_vec());
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    assert_eq!(request.send().await.unwrap().status().as_u16(), 503);
    let report = report.await.unwrap().unwrap();
    assert_eq!(
        status(&report, "sender/signature"),
        Status::Passed,
        "{:#?}",
        report.cases
    );
    assert_eq!(report.target, "https://hooks.buyer.example/grader/webhook");
}

/// `--agent`: the keys discovered through the agent's brand.json (on a
/// loopback HTTPS server), as `grade signer` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_discovered_through_brand_json_verify_the_sender() {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let server = jwks_server::Server::start(&["seller.example", "keys.example"]).await;
    let url = server.url("seller.example", "/mcp");
    server.set(
        "/.well-known/brand.json",
        jwks_server::ok(
            json!({"agents": [{"url": url, "jwks_uri": server.url("keys.example", "/jwks.json")}]}).to_string(),
        ),
    );
    server.set(
        "/jwks.json",
        jwks_server::ok(key.jwks().unwrap().to_public_json().to_string()),
    );
    let keys = PublishedKeys::Agent {
        url: url.clone(),
        fetch: server.fetch_config(),
    };
    let report = grade_with(key, keys, Fault::None, WINDOW).await;
    assert_eq!(report.failed(), 0, "{:#?}", report.cases);
    assert!(case(&report, "sender/signature")
        .reason
        .contains(&format!("kid seller-2026-12 of {url}")));
    // Another agent's keys: every delivery is refused by its code.
    let other = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026-12").unwrap();
    let keys = PublishedKeys::Agent {
        url,
        fetch: server.fetch_config(),
    };
    let report = grade_with(other, keys, Fault::None, WINDOW).await;
    assert_eq!(report.failed_ids(), vec!["sender/signature"]);
    assert!(
        case(&report, "sender/signature")
            .got
            .contains("webhook_signature_invalid"),
        "{:#?}",
        report.cases
    );
}
