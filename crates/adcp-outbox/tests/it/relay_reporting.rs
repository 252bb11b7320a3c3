//! The relay's reporting routes with the numbers asked over HTTP from the
//! application: a stream registered through the API, its reports fired
//! from the application's answers, and the relay (its store, scheduler and
//! router) killed and rebuilt from the file around period boundaries on an
//! injected clock, every period reported exactly once.

use crate::support::{fast_retry, temp_file};
use adcp_outbox::relay::RelayApi;
use adcp_outbox::reporting::{HttpDeliverySource, ReportingConfig, ReportingScheduler};
use adcp_outbox::{ManualClock, Outbox, OutboxConfig, SqliteOutbox, SqliteOutboxOptions};
use adcp_webhook::DestinationPolicy;
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tower::ServiceExt;

const HOUR: i64 = 3_600_000;
/// 2026-04-18T00:00:00Z.
const T0: i64 = 1_776_470_400_000;

/// The application: answers the relay's questions, late for some periods.
#[derive(Clone, Default)]
struct App {
    late_until: Arc<Mutex<Vec<(String, i64)>>>,
    clock: Arc<Mutex<Option<ManualClock>>>,
    asked: Arc<Mutex<Vec<Value>>>,
}

async fn serve_app(app: App) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().route(
        "/numbers",
        axum::routing::post(move |axum::Json(q): axum::Json<Value>| {
            let app = app.clone();
            async move {
                app.asked.lock().unwrap().push(q.clone());
                let now = adcp_outbox::Clock::now_ms(app.clock.lock().unwrap().as_ref().unwrap());
                let buy = q["media_buy_id"].as_str().unwrap_or_default().to_owned();
                let row = json!([{"media_buy_id": buy, "status": "active",
                                  "totals": {"impressions": 10, "spend": 1.0}, "by_package": []}]);
                let answer = match q["question"].as_str() {
                    Some("period") => {
                        let start = q["period"]["start"].as_str().unwrap_or_default().to_owned();
                        let late = app
                            .late_until
                            .lock()
                            .unwrap()
                            .iter()
                            .find(|(s, _)| *s == start)
                            .map(|(_, at)| *at);
                        match late {
                            Some(at) if now < at => {
                                json!({"status": "not_ready", "expected_at": adcp_outbox::rfc3339_ms(at)})
                            }
                            _ => json!({"status": "ready", "media_buy_deliveries": row}),
                        }
                    }
                    _ => json!({"status": "closed", "media_buy_deliveries": row}),
                };
                axum::Json(answer)
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/numbers")
}

fn client() -> reqwest::Client {
    adcp_test_support::http_client(std::time::Duration::from_secs(10))
}

/// One relay process: its store, scheduler and router on the file.
fn relay(path: &Path, clock: &ManualClock, source_url: &str) -> (axum::Router, ReportingScheduler) {
    let store = SqliteOutbox::open(path, SqliteOutboxOptions::default()).unwrap();
    let config = OutboxConfig {
        retry: fast_retry(),
        clock: Arc::new(clock.clone()),
        ..OutboxConfig::default()
    };
    let outbox = Outbox::new(Arc::new(store), config).unwrap();
    let scheduler = ReportingScheduler::new(
        outbox.clone(),
        Arc::new(HttpDeliverySource::new(source_url, client())),
        ReportingConfig::default(),
    );
    let router = RelayApi::new(outbox, DestinationPolicy::default(), ["default".to_owned()])
        .with_reporting(scheduler.clone())
        .router();
    (router, scheduler)
}

async fn call(router: &axum::Router, method: &str, uri: &str, body: Value) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_relay_killed_and_restarted_around_boundaries_reports_every_period_once() {
    let app = App::default();
    let clock = ManualClock::new(T0);
    *app.clock.lock().unwrap() = Some(clock.clone());
    // Two hours' data is late.
    for h in [2, 5] {
        app.late_until
            .lock()
            .unwrap()
            .push((adcp_outbox::rfc3339_ms(T0 + h * HOUR), T0 + (h + 6) * HOUR + 60_000));
    }
    let source = serve_app(app.clone()).await;
    let path = temp_file("relay-reporting");
    let (mut router, mut scheduler) = relay(&path, &clock, &source);
    let registration = json!({
        "reporting_webhook": {"url": "https://buyer.example/reports", "token": "rpt_token_0123456789",
                              "reporting_frequency": "hourly"},
        "reporting_capabilities": [{"timezone": "UTC", "expected_delay_minutes": 5,
                                    "available_reporting_frequencies": ["hourly"], "supports_webhooks": true}],
        "start_time": adcp_outbox::rfc3339_ms(T0),
        "end_time": adcp_outbox::rfc3339_ms(T0 + 10 * HOUR),
        "principal": "buyer-1"
    });
    let (s, stream) = call(&router, "PUT", "/v1/reporting/mb_r", registration).await;
    assert_eq!(s, StatusCode::OK, "{stream}");
    assert_eq!(stream["sequence_number"], 0);

    // Steps just before, on and after the boundaries (due at :05), with a
    // kill and restart every other step.
    let steps = [
        5 * 60_000 - 1,
        1,
        1,
        55 * 60_000,
        2 * HOUR + 3 * 60_000,
        1,
        59 * 60_000,
        4 * HOUR,
    ];
    let mut now = T0;
    for (i, step) in steps.iter().cycle().enumerate() {
        now += step;
        if now > T0 + 12 * HOUR {
            break;
        }
        clock.set_ms(now);
        if i % 2 == 1 {
            drop((router, scheduler));
            (router, scheduler) = relay(&path, &clock, &source);
        }
        scheduler.tick().await.unwrap();
    }
    let (s, ended) = call(
        &router,
        "POST",
        "/v1/reporting/mb_r/end",
        json!({"status": "completed", "at": adcp_outbox::rfc3339_ms(T0 + 10 * HOUR)}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{ended}");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE adcp_outbox_events SET state = 'delivered' WHERE state = 'pending'",
            [],
        )
        .unwrap();
    clock.advance_ms(HOUR);
    assert_eq!(scheduler.tick().await.unwrap(), 1, "the final");
    let (_, stream) = call(&router, "GET", "/v1/reporting/mb_r", Value::Null).await;
    assert_eq!(stream["closed"], true, "{stream}");

    let bodies = crate::support::stored_bodies(&path);
    let seq: Vec<u64> = bodies
        .iter()
        .map(|b| b["result"]["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seq, (1..=seq.len() as u64).collect::<Vec<_>>());
    let scheduled: Vec<String> = bodies
        .iter()
        .filter(|b| b["result"]["notification_type"] == "scheduled")
        .map(|b| b["result"]["reporting_period"]["start"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..10).map(|h| adcp_outbox::rfc3339_ms(T0 + h * HOUR)).collect();
    assert_eq!(scheduled, expected, "each hour once, in order");
    let delayed = bodies
        .iter()
        .filter(|b| b["result"]["notification_type"] == "delayed")
        .count();
    assert!((1..=2).contains(&delayed), "{delayed}");
    assert_eq!(bodies.last().unwrap()["result"]["notification_type"], "final");
    assert!(bodies.iter().all(|b| b["token"] == "rpt_token_0123456789"));
}

#[tokio::test]
async fn reporting_routes_refuse_what_they_cannot_schedule() {
    let clock = ManualClock::new(T0);
    let source = serve_app(App::default()).await;
    let (router, _) = relay(&temp_file("relay-reporting-refusals"), &clock, &source);
    let base = json!({
        "reporting_webhook": {"url": "https://buyer.example/reports", "reporting_frequency": "daily"},
        "reporting_capabilities": [{"timezone": "UTC", "expected_delay_minutes": 0,
                                    "available_reporting_frequencies": ["daily"]},
                                   {"timezone": "Europe/Paris", "expected_delay_minutes": 0,
                                    "available_reporting_frequencies": ["daily"]}],
        "start_time": adcp_outbox::rfc3339_ms(T0),
        "end_time": adcp_outbox::rfc3339_ms(T0 + 48 * HOUR)
    });
    let (s, b) = call(&router, "PUT", "/v1/reporting/mb_x", base.clone()).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("reporting_timezone_mismatch"))
    );
    let mut bad_time = base.clone();
    bad_time["reporting_capabilities"].as_array_mut().unwrap().pop();
    bad_time["start_time"] = json!("yesterday");
    let (s, b) = call(&router, "PUT", "/v1/reporting/mb_x", bad_time).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let (s, b) = call(&router, "GET", "/v1/reporting/mb_none", Value::Null).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_stream"))
    );
    let (s, b) = call(
        &router,
        "POST",
        "/v1/reporting/mb_none/end",
        json!({"status": "paused", "at": "x"}),
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
}
