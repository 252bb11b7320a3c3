//! A re-emission racing its first delivery: while the upstream holds the
//! first delivery of a `notification_id`, a delivery of the same
//! notification under another `idempotency_key` is answered `503`
//! (`reemission_in_flight`) and not forwarded; the seller's retry, once the
//! first is applied, is forwarded marked `X-Adcp-Reemission-Of`. If the
//! first delivery fails instead, the retry is the first one applied and
//! goes unmarked, and the first key's own retry is then the re-emission.
//! No delivery of a notification is ever forwarded unmarked after another
//! was applied.

use crate::support::{http_client, metrics_text, post_signed, Seller, TempDir};
use adcp_gateway::{Gateway, GatewayConfig, GatewayHandle};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const AGENT: &str = "https://seller.example/mcp";
const PATH: &str = "/webhooks/notifications";

/// An upstream that records every event's headers and, when a hold is
/// set, keeps the next event waiting until the hold is let go with the
/// status to answer.
#[derive(Default)]
struct Held {
    seen: Mutex<Vec<HeaderMap>>,
    hold: Mutex<Option<tokio::sync::oneshot::Receiver<StatusCode>>>,
}

async fn receive(State(held): State<Arc<Held>>, headers: HeaderMap) -> StatusCode {
    held.seen.lock().unwrap().push(headers);
    let hold = held.hold.lock().unwrap().take();
    match hold {
        Some(hold) => hold.await.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        None => StatusCode::OK,
    }
}

struct Upstream {
    url: String,
    held: Arc<Held>,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    async fn start() -> Self {
        let held = Arc::new(Held::default());
        let app = Router::new()
            .route("/events", axum::routing::post(receive))
            .with_state(Arc::clone(&held));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/events", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, held, task }
    }

    /// Holds the next event until the returned sender answers.
    fn hold_next(&self) -> tokio::sync::oneshot::Sender<StatusCode> {
        let (answer, hold) = tokio::sync::oneshot::channel();
        *self.held.hold.lock().unwrap() = Some(hold);
        answer
    }

    fn seen(&self) -> Vec<HeaderMap> {
        self.held.seen.lock().unwrap().clone()
    }

    async fn until_seen(&self, n: usize) {
        for _ in 0..500 {
            if self.seen().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the upstream never saw {n} events");
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A `creative.status_changed` notification (the payload fixture of
/// `adcp-webhook`) with this `notification_id` and `idempotency_key`.
fn notification(notification_id: &str, idempotency_key: &str) -> serde_json::Value {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../adcp-webhook/tests/fixtures/payloads/creative_status_changed.json"
    );
    let mut note: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    note["notification_id"] = serde_json::json!(notification_id);
    note["idempotency_key"] = serde_json::json!(idempotency_key);
    note
}

/// Signs `payload` afresh and posts it: status, `Retry-After`, body.
async fn deliver(seller: &Seller, base: &str, payload: &serde_json::Value) -> (u16, Option<String>, String) {
    let url = format!("{base}{PATH}");
    let body = adcp_sign::Body::from_json_bytes(payload.to_string()).unwrap();
    let request = adcp_sign::UnsignedRequest::new("POST", &url)
        .with_body(&body)
        .with_content_type("application/json");
    let signed = seller
        .signer
        .sign_with(&request, &adcp_sign::SignOptions::new())
        .await
        .unwrap();
    let response = post_signed(http_client().post(&url), &signed).await;
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), retry_after, response.text().await.unwrap())
}

async fn gateway(dir: &TempDir, seller: &Seller, upstream: &Upstream) -> GatewayHandle {
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let mut config = GatewayConfig::new(upstream.url.parse().unwrap());
    config.jwks = Some(dir.0.join("seller-jwks.json"));
    config.jwks_agent = AGENT.to_owned();
    config.store = format!("sqlite:{}", dir.0.join("dedup.sqlite").display())
        .parse()
        .unwrap();
    config.upstream_timeout = Duration::from_secs(20);
    config.access_log = false;
    Gateway::from_config(&config)
        .await
        .unwrap()
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap()
}

fn reemission_of(headers: &HeaderMap) -> Option<&str> {
    headers.get("x-adcp-reemission-of").map(|v| v.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reemission_arriving_while_the_first_delivery_is_applied_is_never_forwarded_unmarked() {
    let dir = TempDir::new("reemission-race");
    let upstream = Upstream::start().await;
    let seller = Arc::new(Seller::new());
    let handle = gateway(&dir, &seller, &upstream).await;
    let base = handle.base_url();
    let first = notification("crv_1.review.1", "note-key-000000000001");
    let second = notification("crv_1.review.1", "note-key-000000000002");

    // The first delivery, held by the upstream.
    let release = upstream.hold_next();
    let in_flight = tokio::spawn({
        let (seller, base, first) = (Arc::clone(&seller), base.clone(), first.clone());
        async move { deliver(&seller, &base, &first).await }
    });
    upstream.until_seen(1).await;
    // Its re-emission meanwhile: 503, retryable, not forwarded.
    let (status, retry_after, body) = deliver(&seller, &base, &second).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry_after.as_deref(), Some("2"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["error"],
        "reemission_in_flight"
    );
    assert_eq!(upstream.seen().len(), 1, "not forwarded while the first is applied");
    // The first is applied; the seller's retry of the re-emission is
    // forwarded marked.
    release.send(StatusCode::OK).unwrap();
    assert_eq!(in_flight.await.unwrap().0, 200);
    let (status, _, body) = deliver(&seller, &base, &second).await;
    assert_eq!(status, 200, "{body}");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(reemission_of(&seen[0]), None);
    assert_eq!(reemission_of(&seen[1]), Some("note-key-000000000001"));
    // The first key's own retry is a duplicate, not forwarded.
    assert_eq!(deliver(&seller, &base, &first).await.0, 200);
    assert_eq!(upstream.seen().len(), 2);

    // Another notification whose first delivery fails while a re-emission
    // waits: the re-emission's retry is the first applied (unmarked), and
    // the failed key's retry is then its re-emission.
    let a = notification("crv_2.review.1", "note-key-000000000003");
    let b = notification("crv_2.review.1", "note-key-000000000004");
    let fail = upstream.hold_next();
    let in_flight = tokio::spawn({
        let (seller, base, a) = (Arc::clone(&seller), base.clone(), a.clone());
        async move { deliver(&seller, &base, &a).await }
    });
    upstream.until_seen(3).await;
    assert_eq!(deliver(&seller, &base, &b).await.0, 503);
    fail.send(StatusCode::INTERNAL_SERVER_ERROR).unwrap();
    assert_eq!(
        in_flight.await.unwrap().0,
        503,
        "the upstream failed: the seller retries"
    );
    assert_eq!(deliver(&seller, &base, &b).await.0, 200);
    assert_eq!(deliver(&seller, &base, &a).await.0, 200);
    let seen = upstream.seen();
    assert_eq!(seen.len(), 5);
    assert_eq!(reemission_of(&seen[3]), None, "the first delivery applied");
    assert_eq!(reemission_of(&seen[4]), Some("note-key-000000000004"));

    let metrics = metrics_text(&base).await;
    assert!(
        metrics.contains("adcp_gateway_webhooks_total{outcome=\"reemission_in_flight\"} 2\n"),
        "{metrics}"
    );
    handle.shutdown().await.unwrap();
}
