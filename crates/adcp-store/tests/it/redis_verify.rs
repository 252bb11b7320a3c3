//! The checklist on a Redis replay store whose server stops mid-run: while
//! it is down, verification fails closed with the retryable
//! `webhook_verifier_unavailable` (answered `503`), never as accepted or
//! as a replay; once it is back, the same verifier and store accept fresh
//! webhooks and still reject the replays they saw before (AOF).

use adcp_test_support::redis_server;

use adcp_sigbase::Message;
use adcp_sign::{Algorithm, FixedClock, HttpSigner, SignedRequest, SoftwareSigner, WebhookEvent};
use adcp_store::{RedisOptions, RedisStore};
use adcp_verify::ErrorCode;
use adcp_verify::FixedClock as VerifyClock;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use redis_server::{free_port, temp_dir, Server};
use std::time::{Duration, Instant};

const NOW: i64 = 1_776_520_800;
const URL: &str = "https://buyer.example.com/adcp/webhook";

async fn sign(signer: &HttpSigner<SoftwareSigner, FixedClock>, n: u32) -> SignedRequest {
    let event = WebhookEvent::new(&serde_json::json!({"task_id": format!("task_{n}"), "status": "completed"})).unwrap();
    signer.sign_webhook(URL, &event).await.unwrap()
}

/// The request as a receiver sees it.
fn message(signed: &SignedRequest) -> Message<'_> {
    let target = adcp_canon::canonicalize_received(signed.url()).unwrap();
    let mut msg = Message::request(signed.method(), signed.url()).with_header("Host", target.authority().to_owned());
    for (name, value) in signed.headers() {
        msg.push_header(*name, value.as_str());
    }
    if let Some(body) = signed.body() {
        msg = msg.with_body(body.as_bytes());
    }
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_fails_closed_while_redis_is_down_and_recovers_by_itself() {
    let key = SoftwareSigner::generate(Algorithm::Ed25519, "seller-2026").unwrap();
    let jwks = serde_json::json!({ "keys": [key.public_jwk().unwrap().to_public_json()] });
    let signer = HttpSigner::webhook(key).unwrap().with_clock(FixedClock(NOW));
    let mut server = Server::start(free_port(), temp_dir("verify"), "noeviction");
    let store = RedisStore::connect(
        &server.url(),
        RedisOptions {
            op_timeout: Duration::from_millis(500),
            ..RedisOptions::default()
        },
    )
    .await
    .unwrap();
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&jwks, "https://seller.example/mcp"),
        store,
        VerifyClock(NOW),
    );

    let before = sign(&signer, 1).await;
    verifier.verify(&message(&before)).await.unwrap();
    let replay = verifier.verify(&message(&before)).await.unwrap_err();
    assert_eq!(replay.code_str(), "webhook_signature_replayed");

    server.kill();
    // Fresh webhooks and replays alike: neither accepted nor called a
    // replay, only "try again".
    for request in [sign(&signer, 2).await, before.clone()] {
        let err = verifier.verify(&message(&request)).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{}", err.code_str());
        assert_eq!(err.code_str(), "webhook_verifier_unavailable");
        assert!(err.code().is_retryable());
    }

    server.spawn("noeviction");
    // The same verifier and store, no reconnect call: a fresh webhook is
    // accepted as soon as the server answers again.
    let fresh = sign(&signer, 3).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match verifier.verify(&message(&fresh)).await {
            Ok(_) => break,
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{}", e.code_str());
                assert!(Instant::now() < deadline, "verification did not recover");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // The nonce acknowledged before the outage survived it (AOF `always`).
    let replay = verifier.verify(&message(&before)).await.unwrap_err();
    assert_eq!(replay.code_str(), "webhook_signature_replayed");
    let replay = verifier.verify(&message(&fresh)).await.unwrap_err();
    assert_eq!(replay.code_str(), "webhook_signature_replayed");
}
