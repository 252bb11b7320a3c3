//! `adcp-sig relay --reporting-source URL`: a buy's reporting stream
//! registered through the API, its overdue periods fired from the
//! application's answers, the final after the end, each report delivered
//! once and in sequence to the buyer; and a relay without a source answers
//! `501`.

use crate::relay_support::{key, prefix, Relay, RelaySpec};
use crate::support::gateway::{http_client, TempDir};
use axum::routing::post;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const HOUR: i64 = 3_600_000;

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

fn rfc3339(ms: i64) -> String {
    adcp_outbox::rfc3339_ms(ms)
}

#[tokio::test]
async fn the_relay_fires_reports_from_the_applications_numbers() {
    let dir = TempDir::new("relay-reporting");
    let app = serve(axum::Router::new().route(
        "/numbers",
        post(|axum::Json(q): axum::Json<Value>| async move {
            let rows = json!([{"media_buy_id": q["media_buy_id"], "status": "active",
                               "totals": {"impressions": 5, "spend": 0.5}, "by_package": []}]);
            axum::Json(match q["question"].as_str() {
                Some("period") => json!({"status": "ready", "media_buy_deliveries": rows}),
                _ => json!({"status": "closed", "media_buy_deliveries": rows}),
            })
        }),
    ))
    .await;
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&received);
    let buyer = serve(axum::Router::new().route(
        "/reports",
        post(move |axum::Json(body): axum::Json<Value>| {
            let seen = Arc::clone(&seen);
            async move {
                seen.lock().unwrap().push(body);
                axum::http::StatusCode::OK
            }
        }),
    ))
    .await;
    let seller = key(&dir.0, "seller-reporting-1");
    let spec = RelaySpec::new(
        format!("sqlite:{}", dir.0.join("relay.sqlite").display()),
        &seller,
        &prefix("rep"),
        &dir.0,
    )
    .arg("--reporting-source", format!("{app}/numbers"));
    let mut relay = Relay::start(&spec).await;
    let client = http_client(Duration::from_secs(10)).unwrap();
    let now = i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap();
    let start = now / HOUR * HOUR - 3 * HOUR;
    let registration = json!({
        "reporting_webhook": {"url": format!("{buyer}/reports"), "token": "rpt_token_0123456789",
                              "reporting_frequency": "hourly"},
        "reporting_capabilities": [{"timezone": "UTC", "expected_delay_minutes": 0,
                                    "available_reporting_frequencies": ["hourly"], "supports_webhooks": true}],
        "start_time": rfc3339(start),
        "end_time": rfc3339(start + 2 * HOUR)
    });
    let answer = client
        .put(format!("{}/v1/reporting/mb_cli", relay.base))
        .json(&registration)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    // Both past hours are due at once.
    let two = crate::relay_support::until(Duration::from_secs(20), async || received.lock().unwrap().len() == 2).await;
    assert!(two, "{}", relay.log_text());
    // Recorded as delivered before the buy ends: the final waits for the
    // earlier reports to end (else it looks again after its recheck).
    let recorded = crate::relay_support::until(Duration::from_secs(20), async || {
        crate::relay_support::metric(&relay.metrics().await, "adcp_outbox_events{state=\"delivered\"}") == Some(2.0)
    })
    .await;
    assert!(recorded);
    let answer = client
        .post(format!("{}/v1/reporting/mb_cli/end", relay.base))
        .json(&json!({"status": "completed", "at": rfc3339(start + 2 * HOUR)}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let three =
        crate::relay_support::until(Duration::from_secs(20), async || received.lock().unwrap().len() == 3).await;
    assert!(three, "{}", relay.log_text());
    let status: Value = client
        .get(format!("{}/v1/reporting/mb_cli", relay.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (status["closed"].as_bool(), status["sequence_number"].as_u64()),
        (Some(true), Some(3))
    );
    relay.terminate(Duration::from_secs(10)).await;
    let bodies = received.lock().unwrap().clone();
    // Reports due together are delivered concurrently: the buyer orders
    // them by sequence_number.
    let mut seen: Vec<(u64, &str)> = bodies
        .iter()
        .map(|b| {
            (
                b["result"]["sequence_number"].as_u64().unwrap(),
                b["result"]["notification_type"].as_str().unwrap(),
            )
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, [(1, "scheduled"), (2, "scheduled"), (3, "final")]);
}

#[tokio::test]
async fn a_relay_without_a_reporting_source_says_so() {
    let dir = TempDir::new("relay-no-reporting");
    let seller = key(&dir.0, "seller-reporting-2");
    let spec = RelaySpec::new(
        format!("sqlite:{}", dir.0.join("relay.sqlite").display()),
        &seller,
        &prefix("norep"),
        &dir.0,
    );
    let mut relay = Relay::start(&spec).await;
    let answer = http_client(Duration::from_secs(10))
        .unwrap()
        .get(format!("{}/v1/reporting/mb_1", relay.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 501);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"], "reporting_unavailable");
    relay.terminate(Duration::from_secs(10)).await;
}
