//! The reporting schedule on the SQLite outbox, end to end: reports on
//! the wire valid against the 3.2 schemas (envelope and `result`), the
//! `final` waiting for earlier reports, and schedulers killed, restarted
//! and racing around period boundaries on an injected clock.

use crate::support::{dispatch, fast_retry, quick, schema_validator, temp_file, until, Answer, Sink};
use adcp_outbox::reporting::{
    BuyEnd, Closing, DeliverySource, Period, PeriodDelivery, ReportingConfig, ReportingRegistration, ReportingScheduler,
};
use adcp_outbox::{ManualClock, Outbox, OutboxConfig, SqliteOutbox, SqliteOutboxOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// 2026-04-18T00:00:00Z.
const T0: i64 = 1_776_470_400_000;

/// A source whose periods are ready from a time the test sets, and whose
/// closing the test opens.
#[derive(Default)]
struct Numbers {
    /// Period start → when its data is ready (absent: at once).
    ready_at: Mutex<HashMap<i64, i64>>,
    closed: Mutex<bool>,
    clock: Mutex<Option<ManualClock>>,
    asked: Mutex<Vec<Period>>,
}

impl Numbers {
    fn now(&self) -> i64 {
        adcp_outbox::Clock::now_ms(self.clock.lock().unwrap().as_ref().unwrap())
    }
}

fn row(buy: &str, status: &str, impressions: u64) -> Value {
    json!([{
        "media_buy_id": buy,
        "currency": "USD",
        "status": status,
        "totals": {"impressions": impressions, "spend": impressions as f64 / 100.0},
        "by_package": [{"package_id": "pkg_1", "impressions": impressions, "spend": impressions as f64 / 100.0,
                        "pricing_model": "cpm", "rate": 10.0, "currency": "USD"}]
    }])
}

#[async_trait::async_trait]
impl DeliverySource for Numbers {
    async fn period(&self, reg: &ReportingRegistration, period: Period) -> Result<PeriodDelivery, String> {
        self.asked.lock().unwrap().push(period);
        let ready = self.ready_at.lock().unwrap().get(&period.start_ms).copied();
        match ready {
            Some(at) if self.now() < at => Ok(PeriodDelivery::NotReady {
                expected_at_ms: Some(at),
            }),
            _ => Ok(PeriodDelivery::Ready(row(reg.media_buy_id(), "active", 1000))),
        }
    }

    async fn closing(&self, reg: &ReportingRegistration, _flight: Period) -> Result<Closing, String> {
        if *self.closed.lock().unwrap() {
            Ok(Closing::Closed(row(reg.media_buy_id(), "completed", 3000)))
        } else {
            Ok(Closing::Open)
        }
    }
}

fn hook(url: &str, frequency: &str) -> Value {
    json!({
        "url": url,
        "token": "rpt_tok_0123456789abcdef",
        "authentication": {"schemes": ["Bearer"], "credentials": "c".repeat(32)},
        "reporting_frequency": frequency
    })
}

fn products(zone: &str, delay_minutes: u64) -> Vec<Value> {
    vec![json!({"timezone": zone, "expected_delay_minutes": delay_minutes,
                "available_reporting_frequencies": ["hourly", "daily", "monthly"], "supports_webhooks": true,
                "available_metrics": ["impressions", "spend"], "date_range_support": "date_range"})]
}

fn open(path: &Path, clock: &ManualClock) -> Outbox {
    let store = SqliteOutbox::open(path, SqliteOutboxOptions::default()).unwrap();
    let config = OutboxConfig {
        retry: fast_retry(),
        clock: Arc::new(clock.clone()),
        ..OutboxConfig::default()
    };
    Outbox::new(Arc::new(store), config).unwrap()
}

fn scheduler(outbox: &Outbox, source: &Arc<Numbers>) -> ReportingScheduler {
    let config = ReportingConfig {
        recheck: Duration::from_secs(600),
        ..ReportingConfig::default()
    };
    ReportingScheduler::new(outbox.clone(), Arc::clone(source) as Arc<dyn DeliverySource>, config)
}

/// The bodies enqueued on a buy's channel, in enqueue order.
fn enqueued(path: &Path, buy: &str) -> Vec<Value> {
    crate::support::stored_bodies_where(path, &format!("reporting_webhook:{buy}"))
}

#[tokio::test]
async fn reports_go_out_in_sequence_and_validate_against_the_schemas() {
    let sink = Sink::start(|_, _| Answer::Status(200)).await;
    let clock = ManualClock::new(T0 + 9 * HOUR);
    let outbox = open(&temp_file("reporting-wire"), &clock);
    let running = dispatch(&outbox, quick());
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    // The second day's data is two hours late.
    source
        .ready_at
        .lock()
        .unwrap()
        .insert(T0 + DAY, T0 + 2 * DAY + 3 * HOUR);
    let s = scheduler(&outbox, &source);
    let reg = ReportingRegistration::from_products(
        "mb_wire",
        &hook(&sink.url("/reports"), "daily"),
        &products("UTC", 60),
        T0 + 9 * HOUR,
        T0 + 3 * DAY,
    )
    .unwrap()
    .principal("buyer-1");
    let status = s.register(reg).await.unwrap();
    assert!(status.operation_id.starts_with("rpt_"));
    assert_eq!(status.next_check_ms, Some(T0 + DAY + HOUR));

    let mut fired = 0;
    for at in [
        T0 + DAY + HOUR,
        T0 + 2 * DAY + HOUR,
        T0 + 2 * DAY + 3 * HOUR,
        T0 + 3 * DAY + HOUR,
    ] {
        clock.set_ms(at);
        fired += s.tick().await.unwrap();
        // Delivered before the clock jumps past their horizon.
        let delivered = until(Duration::from_secs(10), async || {
            outbox.stats().await.unwrap().count(adcp_outbox::EventState::Delivered) == fired as u64
        })
        .await;
        assert!(delivered);
    }
    assert_eq!(fired, 4, "day 1, day 2 delayed, day 2, day 3");
    s.end("mb_wire", BuyEnd::Completed, T0 + 3 * DAY).await.unwrap();
    assert_eq!(s.tick().await.unwrap(), 0, "the data is not closed yet");
    *source.closed.lock().unwrap() = true;
    // Earlier reports must have ended before the final goes.
    let delivered = until(Duration::from_secs(10), async || {
        outbox.stats().await.unwrap().count(adcp_outbox::EventState::Delivered) == 4
    })
    .await;
    assert!(
        delivered,
        "{:?} {:?}",
        outbox.stats().await.unwrap(),
        outbox.list(&Default::default()).await.unwrap()
    );
    clock.advance_ms(11 * 60_000);
    assert_eq!(s.tick().await.unwrap(), 1);
    assert!(until(Duration::from_secs(10), async || sink.hits().len() == 5).await);
    assert_eq!(s.tick().await.unwrap(), 0);
    assert!(s.status("mb_wire").await.unwrap().unwrap().closed);
    running.stop().await;

    let mut hits = sink.hits();
    hits.sort_by_key(|h| h.body["result"]["sequence_number"].as_u64());
    let types: Vec<&str> = hits
        .iter()
        .map(|h| h.body["result"]["notification_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["scheduled", "delayed", "scheduled", "scheduled", "final"]);
    let envelope = schema_validator("core/mcp-webhook-payload.json");
    let result = schema_validator("media-buy/media-buy-delivery-webhook-result.json");
    let mut task_ids = Vec::new();
    for (i, hit) in hits.iter().enumerate() {
        let body = &hit.body;
        if let (Some(envelope), Some(result)) = (&envelope, &result) {
            let errors: Vec<String> = envelope.iter_errors(body).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{body}: {errors:?}");
            let errors: Vec<String> = result.iter_errors(&body["result"]).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{body}: {errors:?}");
        }
        assert_eq!(body["result"]["sequence_number"], i + 1);
        assert_eq!(body["token"], "rpt_tok_0123456789abcdef");
        assert_eq!(body["operation_id"], status.operation_id.as_str());
        assert_eq!(body["task_type"], "media_buy_delivery");
        assert!(body.get("notification_id").is_none());
        assert_eq!(body["result"]["reporting_period"]["timezone"], "UTC");
        task_ids.push(body["task_id"].as_str().unwrap().to_owned());
    }
    task_ids.dedup();
    assert_eq!(task_ids.len(), 5, "one task_id per report");
    // The day-2 period, reported late, and what each report announced.
    let result = |i: usize| &hits[i].body["result"];
    assert_eq!(
        result(1)["reporting_period"]["start"],
        result(2)["reporting_period"]["start"]
    );
    assert_eq!(
        result(0)["next_expected_at"],
        adcp_outbox::rfc3339_ms(T0 + 2 * DAY + HOUR)
    );
    assert_eq!(
        result(1)["next_expected_at"],
        adcp_outbox::rfc3339_ms(T0 + 2 * DAY + 3 * HOUR)
    );
    assert_eq!(
        result(2)["next_expected_at"],
        adcp_outbox::rfc3339_ms(T0 + 3 * DAY + HOUR)
    );
    assert!(
        result(3).get("next_expected_at").is_none(),
        "the next report is the final"
    );
    assert!(result(4).get("next_expected_at").is_none());
    assert_eq!(result(4)["reporting_period"]["start"], adcp_outbox::rfc3339_ms(T0));
    assert_eq!(
        result(4)["reporting_period"]["end"],
        adcp_outbox::rfc3339_ms(T0 + 3 * DAY)
    );
}

#[tokio::test]
async fn the_final_waits_until_every_earlier_report_has_ended() {
    let sink = Sink::start(|_, _| Answer::Status(503)).await;
    let clock = ManualClock::new(T0);
    let outbox = open(&temp_file("reporting-final-waits"), &clock);
    let running = dispatch(&outbox, quick());
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    *source.closed.lock().unwrap() = true;
    let s = scheduler(&outbox, &source);
    let reg = ReportingRegistration::from_products(
        "mb_wait",
        &hook(&sink.url("/r"), "hourly"),
        &products("UTC", 0),
        T0,
        T0 + 2 * HOUR,
    )
    .unwrap();
    s.register(reg).await.unwrap();
    clock.set_ms(T0 + 2 * HOUR);
    assert_eq!(s.tick().await.unwrap(), 2);
    s.end("mb_wait", BuyEnd::Completed, T0 + 2 * HOUR).await.unwrap();
    // The receiver keeps answering 503: both reports stay pending.
    assert!(until(Duration::from_secs(10), async || sink.hits().len() >= 2).await);
    assert_eq!(s.tick().await.unwrap(), 0, "the final waits for the pending reports");
    clock.advance_ms(HOUR);
    assert_eq!(s.tick().await.unwrap(), 0);
    sink.set_script(|_, _| Answer::Status(200));
    let delivered = until(Duration::from_secs(20), async || {
        // The retries are due on the injected clock.
        clock.advance_ms(1_000);
        outbox.stats().await.unwrap().count(adcp_outbox::EventState::Delivered) == 2
    })
    .await;
    assert!(delivered);
    clock.advance_ms(HOUR);
    assert_eq!(s.tick().await.unwrap(), 1);
    running.stop().await;
}

#[tokio::test]
async fn schedulers_killed_restarted_and_racing_around_boundaries_fire_every_period_once() {
    let path = temp_file("reporting-restart");
    let clock = ManualClock::new(T0 + 30 * 60_000);
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    // Hourly in a half-hour zone, 30 hours, a 10-minute delay.
    let flight_end = T0 + 30 * HOUR;
    let reg = || {
        ReportingRegistration::from_products(
            "mb_restart",
            &hook("https://buyer.example/r", "hourly"),
            &products("Asia/Kolkata", 10),
            T0 + 30 * 60_000,
            flight_end,
        )
        .unwrap()
    };
    scheduler(&open(&path, &clock), &source).register(reg()).await.unwrap();
    // Some periods' data is late.
    for h in [3, 4, 11, 20] {
        source
            .ready_at
            .lock()
            .unwrap()
            .insert(T0 + h * HOUR + 30 * 60_000, T0 + (h + 2) * HOUR);
    }
    // Steps straddling the boundaries (at :30 UTC in Kolkata, due at :40):
    // just before, on, just after, and long jumps; a restart (a fresh
    // store and scheduler on the file) at every third step, and two
    // schedulers on two connections racing at every other.
    let mut now = T0 + 30 * 60_000;
    let steps = [
        9 * 60_000 + 59_999,
        1,
        1,
        50 * 60_000,
        3 * HOUR,
        10 * 60_000 - 1,
        2,
        7 * HOUR + 10 * 60_000,
    ];
    let mut step = 0;
    let (mut a, mut b) = (open(&path, &clock), open(&path, &clock));
    while now < flight_end + 2 * HOUR {
        now += steps[step % steps.len()];
        clock.set_ms(now);
        if step % 3 == 0 {
            // Killed: nothing of the old processes survives but the file.
            (a, b) = (open(&path, &clock), open(&path, &clock));
        }
        let (sa, sb) = (scheduler(&a, &source), scheduler(&b, &source));
        if step % 2 == 0 {
            let (x, y) = tokio::join!(sa.tick(), sb.tick());
            x.unwrap();
            y.unwrap();
        } else {
            sa.tick().await.unwrap();
        }
        step += 1;
    }
    let s = scheduler(&a, &source);
    s.end("mb_restart", BuyEnd::Completed, flight_end).await.unwrap();
    *source.closed.lock().unwrap() = true;
    // Nothing delivers here: mark the reports delivered as a relay would
    // have, so that the final may go.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE adcp_outbox_events SET state = 'delivered' WHERE state = 'pending'",
            [],
        )
        .unwrap();
    clock.advance_ms(HOUR);
    assert_eq!(s.tick().await.unwrap(), 1);

    let bodies = enqueued(&path, "mb_restart");
    let results: Vec<&Value> = bodies.iter().map(|b| &b["result"]).collect();
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["sequence_number"], i + 1, "{results:#?}");
    }
    let mut scheduled: Vec<&str> = results
        .iter()
        .filter(|r| r["notification_type"] == "scheduled")
        .map(|r| r["reporting_period"]["start"].as_str().unwrap())
        .collect();
    let n = scheduled.len();
    scheduled.dedup();
    assert_eq!(scheduled.len(), n, "a period reported twice");
    // 00:30 .. 06:00 UTC next day in :30 steps: 30 hourly periods.
    assert_eq!(n, 30);
    let mut expected = T0 + 30 * 60_000;
    for start in &scheduled {
        assert_eq!(*start, adcp_outbox::rfc3339_ms(expected));
        expected += HOUR;
    }
    let delayed = results.iter().filter(|r| r["notification_type"] == "delayed").count();
    assert!((1..=4).contains(&delayed), "{delayed} delayed reports");
    assert_eq!(results.last().unwrap()["notification_type"], "final");
}

#[tokio::test]
async fn a_changed_registration_applies_to_the_next_report_and_a_closed_stream_refuses_more() {
    let clock = ManualClock::new(T0);
    let path = temp_file("reporting-update");
    let outbox = open(&path, &clock);
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    *source.closed.lock().unwrap() = true;
    let s = scheduler(&outbox, &source);
    let register = |token: &str, end: i64| {
        let mut h = hook("https://buyer.example/r", "daily");
        h["token"] = token.into();
        ReportingRegistration::from_products("mb_upd", &h, &products("UTC", 0), T0, end).unwrap()
    };
    s.register(register("first_token_0123456789", T0 + 2 * DAY))
        .await
        .unwrap();
    clock.set_ms(T0 + DAY);
    assert_eq!(s.tick().await.unwrap(), 1);
    // The token rotates and the flight grows by a day.
    s.register(register("second_token_0123456789", T0 + 3 * DAY))
        .await
        .unwrap();
    clock.set_ms(T0 + 3 * DAY);
    assert_eq!(s.tick().await.unwrap(), 2);
    let tokens: Vec<Value> = enqueued(&path, "mb_upd").iter().map(|b| b["token"].clone()).collect();
    assert_eq!(
        tokens,
        [
            "first_token_0123456789",
            "second_token_0123456789",
            "second_token_0123456789"
        ]
    );
    s.end("mb_upd", BuyEnd::Canceled, T0 + 3 * DAY).await.unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE adcp_outbox_events SET state = 'delivered' WHERE state = 'pending'",
            [],
        )
        .unwrap();
    assert_eq!(s.tick().await.unwrap(), 1);
    let again = s.register(register("third_token_0123456789", T0 + 4 * DAY)).await;
    assert_eq!(again.unwrap_err().code(), "stream_closed");
}

#[tokio::test]
async fn the_final_report_closes_a_registered_reporting_channel() {
    use adcp_outbox::channels::{ChannelRegistration, ChannelState, Channels};
    let clock = ManualClock::new(T0);
    let outbox = open(&temp_file("reporting-final-closes"), &clock);
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    *source.closed.lock().unwrap() = true;
    let s = scheduler(&outbox, &source);
    let webhook = hook("https://buyer.example/r", "daily");
    let reg = ReportingRegistration::from_products("mb_f", &webhook, &products("UTC", 0), T0, T0 + DAY).unwrap();
    s.register(reg).await.unwrap();
    let channels = Channels::new(outbox.clone());
    channels
        .put(ChannelRegistration::reporting_webhook("mb_f", &webhook).unwrap())
        .await
        .unwrap();
    s.end("mb_f", BuyEnd::Rejected, T0).await.unwrap();
    assert_eq!(s.tick().await.unwrap(), 1, "only the final");
    let view = channels.get("reporting_webhook:mb_f").await.unwrap().unwrap();
    assert_eq!(view.state, ChannelState::Closed);
    let late = json!({"task_id": "t", "task_type": "media_buy_delivery", "status": "completed",
                      "timestamp": "2026-04-18T12:00:00Z", "operation_id": "op",
                      "result": {"notification_type": "adjusted", "reporting_period": {"start": "2026-04-18T00:00:00Z",
                                 "end": "2026-04-19T00:00:00Z"}, "media_buy_deliveries": []}});
    let refused = outbox
        .enqueue(channels.event("reporting_webhook:mb_f", &late).await.unwrap())
        .await;
    assert_eq!(refused.unwrap_err().code(), "channel_closed");
}

#[tokio::test]
async fn a_paused_reporting_channel_suppresses_its_reports_and_nothing_arrives_later() {
    use adcp_outbox::channels::{ChannelRegistration, Channels};
    let clock = ManualClock::new(T0);
    let path = temp_file("reporting-paused");
    let outbox = open(&path, &clock);
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    let s = scheduler(&outbox, &source);
    let webhook = hook("https://buyer.example/r", "daily");
    let reg = ReportingRegistration::from_products("mb_p", &webhook, &products("UTC", 0), T0, T0 + 4 * DAY).unwrap();
    s.register(reg).await.unwrap();
    let channels = Channels::new(outbox.clone());
    let channel = ChannelRegistration::reporting_webhook("mb_p", &webhook).unwrap();
    channels.put(channel).await.unwrap();
    clock.set_ms(T0 + DAY);
    assert_eq!(s.tick().await.unwrap(), 1);
    channels.pause("reporting_webhook:mb_p").await.unwrap();
    clock.set_ms(T0 + 3 * DAY);
    assert_eq!(s.tick().await.unwrap(), 0, "days 2 and 3 suppressed");
    channels.resume("reporting_webhook:mb_p").await.unwrap();
    clock.set_ms(T0 + 4 * DAY);
    assert_eq!(s.tick().await.unwrap(), 1, "day 4 only");
    let bodies = enqueued(&path, "mb_p");
    let seen: Vec<(u64, &str)> = bodies
        .iter()
        .map(|b| {
            (
                b["result"]["sequence_number"].as_u64().unwrap(),
                b["result"]["reporting_period"]["start"].as_str().unwrap(),
            )
        })
        .collect();
    let (day1, day4) = (adcp_outbox::rfc3339_ms(T0), adcp_outbox::rfc3339_ms(T0 + 3 * DAY));
    assert_eq!(seen, [(1, day1.as_str()), (2, day4.as_str())]);
}

#[tokio::test]
async fn aggregated_buys_share_one_stream_with_one_sequence_and_every_covered_row() {
    let clock = ManualClock::new(T0);
    let path = temp_file("reporting-aggregate");
    let outbox = open(&path, &clock);
    let source = Arc::new(Numbers::default());
    *source.clock.lock().unwrap() = Some(clock.clone());
    // Day 2's data is late (for every buy of the period).
    source
        .ready_at
        .lock()
        .unwrap()
        .insert(T0 + DAY, T0 + 2 * DAY + 2 * HOUR);
    let config = ReportingConfig {
        recheck: Duration::from_secs(600),
        aggregate: true,
        ..ReportingConfig::default()
    };
    let s = ReportingScheduler::new(outbox.clone(), Arc::clone(&source) as Arc<dyn DeliverySource>, config);
    let shared = hook("https://buyer.example/agg", "daily");
    let reg = |buy: &str, hook: &Value, start: i64, end: i64| {
        ReportingRegistration::from_products(buy, hook, &products("UTC", 0), start, end).unwrap()
    };
    let a = s.register(reg("mb_a", &shared, T0, T0 + 3 * DAY)).await.unwrap();
    let b = s.register(reg("mb_b", &shared, T0 + DAY, T0 + 4 * DAY)).await.unwrap();
    assert_eq!(a.operation_id, b.operation_id, "one stream");
    let mut other = shared.clone();
    other["token"] = "another_token_0123456789".into();
    let c = s.register(reg("mb_c", &other, T0, T0 + DAY)).await.unwrap();
    assert_ne!(c.operation_id, a.operation_id, "another token, another stream");

    for day in 1..=4 {
        clock.set_ms(T0 + day * DAY);
        s.tick().await.unwrap();
        if day == 2 {
            clock.set_ms(T0 + 2 * DAY + 2 * HOUR);
            s.tick().await.unwrap();
        }
    }
    s.end("mb_a", BuyEnd::Completed, T0 + 3 * DAY).await.unwrap();
    s.end("mb_c", BuyEnd::Completed, T0 + DAY).await.unwrap();
    *source.closed.lock().unwrap() = true;
    let deliver = || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE adcp_outbox_events SET state = 'delivered' WHERE state = 'pending'",
                [],
            )
            .unwrap()
    };
    deliver();
    clock.advance_ms(HOUR);
    s.tick().await.unwrap();
    assert!(!s.status("mb_a").await.unwrap().unwrap().closed, "mb_b has not ended");
    s.end("mb_b", BuyEnd::Completed, T0 + 4 * DAY).await.unwrap();
    deliver();
    clock.advance_ms(HOUR);
    assert_eq!(s.tick().await.unwrap(), 1, "the aggregated stream's final");
    assert!(s.status("mb_b").await.unwrap().unwrap().closed);

    let bodies = crate::support::stored_bodies(&path);
    let stream: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["operation_id"] == a.operation_id.as_str())
        .collect();
    let seen: Vec<(u64, &str, Vec<&str>)> = stream
        .iter()
        .map(|b| {
            let r = &b["result"];
            let buys = r["media_buy_deliveries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["media_buy_id"].as_str().unwrap())
                .collect();
            (
                r["sequence_number"].as_u64().unwrap(),
                r["notification_type"].as_str().unwrap(),
                buys,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "scheduled", vec!["mb_a"]),
            (2, "delayed", vec![]),
            (3, "scheduled", vec!["mb_a", "mb_b"]),
            (4, "scheduled", vec!["mb_a", "mb_b"]),
            (5, "scheduled", vec!["mb_b"]),
            (6, "final", vec!["mb_a", "mb_b"]),
        ]
    );
    let result = schema_validator("media-buy/media-buy-delivery-webhook-result.json");
    for body in &stream {
        if let Some(v) = &result {
            assert!(v.is_valid(&body["result"]), "{body}");
        }
    }
    // The other token's stream: its own sequence from 1.
    let others: Vec<u64> = bodies
        .iter()
        .filter(|b| b["token"] == "another_token_0123456789")
        .map(|b| b["result"]["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(others, [1, 2]);
}
