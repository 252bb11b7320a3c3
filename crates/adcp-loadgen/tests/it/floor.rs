//! The verifying floor verifies: a correctly signed webhook is forwarded,
//! a tampered body, an unsigned request and a key it does not know are
//! refused with 401 and the gateway's code, and none of those reaches the
//! upstream. (A floor that stopped verifying would make every gateway
//! ratio against it meaningless.)

use adcp_loadgen::bare::{self, Forward};
use adcp_loadgen::floor::{self, FloorKeys};
use adcp_loadgen::run::{KeySource, Pace, RunOptions};
use adcp_loadgen::sink::Sink;
use std::net::SocketAddr;
use std::time::Duration;

async fn start_floor(
    keys: FloorKeys,
    upstream: &str,
) -> (SocketAddr, tokio::task::JoinHandle<Result<(), adcp_loadgen::Error>>) {
    let forward = Forward::new(upstream.parse().unwrap(), Duration::from_secs(5)).unwrap();
    let listener = bare::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    (addr, tokio::spawn(floor::serve(listener, keys, forward)))
}

/// A presigned run of `requests` with the `tampered` fraction.
fn options(addr: SocketAddr, keys: Vec<adcp_sign::SoftwareSigner>, requests: u64, tampered: f64) -> RunOptions {
    let mut options = RunOptions::new(vec![format!("http://{addr}/webhooks/adcp")]);
    options.key = KeySource::Keys(keys);
    options.pace = Pace::Max;
    options.presign = true;
    options.requests = Some(requests);
    // Only a bound: the pool ends the run, however slow a loaded host is.
    options.duration = Duration::from_secs(60);
    options.connections = 4;
    options.duplicates = 0.0;
    options.tampered = tampered;
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floor_forwards_signed_webhooks_and_refuses_tampered_unsigned_and_unknown() {
    let _alone = crate::end_to_end::RUNS.lock().await;
    let sink = Sink::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let keys = adcp_loadgen::run::generate_keys("floor-test", 2).unwrap();
    let jwks = adcp_loadgen::run::public_jwks(&keys).unwrap();
    let floor_keys = FloorKeys::from_jwks(&jwks).unwrap();
    assert_eq!(floor_keys.len(), 2);
    let (addr, server) = start_floor(floor_keys, &sink.url("/events")).await;

    // Signed webhooks, some with a body byte changed after signing.
    let report = adcp_loadgen::run::run(options(addr, keys, 200, 0.25)).await.unwrap();
    let text = report.render_text();
    let unique = &report.kinds["unique"];
    let tampered = &report.kinds["tampered"];
    assert_eq!(unique.sent + tampered.sent, 200, "{text}");
    assert!(unique.sent > 100 && tampered.sent > 20, "{text}");
    assert_eq!(unique.statuses.get("200"), Some(&unique.sent), "{text}");
    assert_eq!(tampered.statuses.get("401"), Some(&tampered.sent), "{text}");
    assert_eq!(
        tampered.codes.get("webhook_signature_digest_mismatch"),
        Some(&tampered.sent),
        "{text}"
    );
    assert_eq!(
        sink.stats().requests,
        unique.sent,
        "only verified bodies reach the upstream"
    );

    // Signed by a key the floor was not given (the same keyids, other
    // material): the signature does not verify.
    let strangers = adcp_loadgen::run::generate_keys("floor-test", 2).unwrap();
    let report = adcp_loadgen::run::run(options(addr, strangers, 20, 0.0)).await.unwrap();
    let text = report.render_text();
    let unique = &report.kinds["unique"];
    assert_eq!(unique.statuses.get("401"), Some(&20), "{text}");
    assert_eq!(unique.codes.get("webhook_signature_invalid"), Some(&20), "{text}");
    // A keyid it does not know at all.
    let unknown = adcp_loadgen::run::generate_keys("someone-else", 1).unwrap();
    let report = adcp_loadgen::run::run(options(addr, unknown, 10, 0.0)).await.unwrap();
    let text = report.render_text();
    let unique = &report.kinds["unique"];
    assert_eq!(unique.statuses.get("401"), Some(&10), "{text}");
    assert_eq!(unique.codes.get("webhook_signature_key_unknown"), Some(&10), "{text}");

    // Unsigned.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = br#"{"task_id":"t1","task_type":"create_media_buy","status":"completed"}"#;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /webhooks/adcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains(r#"www-authenticate: signature error="webhook_signature_header_malformed""#),
        "{answer}"
    );

    let forwarded = sink.stats().requests;
    assert_eq!(forwarded, 200 - tampered.sent, "nothing refused was forwarded");
    server.abort();
    sink.shutdown().await.unwrap();
}

#[test]
fn floor_keys_refuse_a_set_without_usable_keys() {
    assert!(FloorKeys::from_jwks(&serde_json::json!({"keys": []})).is_err());
    assert!(FloorKeys::from_jwks(&serde_json::json!({})).is_err());
}
