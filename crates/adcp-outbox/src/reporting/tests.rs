//! Property tests of the stream's state machine over random flights,
//! frequencies, timezones, data-readiness delays, buy ends and delivery
//! lags, driven the way the scheduler drives it (woken at each due time,
//! and at random other times).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::period::{Frequency, Period};
use super::plan::{self, BuyEnd, Next, StreamState};
use super::registration::ReportingRegistration;
use super::source::{Closing, PeriodDelivery};
use adcp_webhook::notify::ReportType;
use proptest::prelude::*;
use serde_json::json;
use std::time::Duration;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const RECHECK: i64 = 5 * 60_000;
const ZONES: [&str; 6] = [
    "UTC",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "Europe/London",
    "Pacific/Chatham",
];

#[derive(Debug, Clone)]
struct Case {
    frequency: Frequency,
    zone: &'static str,
    start: i64,
    length: i64,
    delay_ms: i64,
    /// Per period (by index, cycled): how long after its due time the data
    /// is ready, and whether the source says when.
    lateness: Vec<(i64, bool)>,
    /// Where in the flight the buy ends (per mille; 1000 = the flight's
    /// end), and how long after that the application says so.
    end_at_permille: i64,
    end_told_after: i64,
    closed_after: i64,
    /// How long each report takes to be delivered (cycled).
    delivery_lag: Vec<i64>,
    /// Extra wake-ups, as offsets from the start.
    wakeups: Vec<i64>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(Frequency::ALL.to_vec()),
        prop::sample::select(ZONES.to_vec()),
        // 2026-01-01 .. 2028-01-01
        1_767_225_600_000_i64..1_830_297_600_000_i64,
        1_u32..1000,
        0_i64..(26 * 60),
        prop::collection::vec(
            (prop_oneof![3 => Just(0_i64), 2 => 1_i64..(3 * DAY)], any::<bool>()),
            1..8,
        ),
        prop_oneof![2 => Just(1000_i64), 1 => 0_i64..1000],
        0_i64..(2 * DAY),
        prop_oneof![Just(0_i64), 1_i64..(10 * DAY)],
        prop::collection::vec(prop_oneof![Just(0_i64), 1_i64..(3 * DAY)], 1..5),
        prop::collection::vec(0_i64..(400 * DAY), 0..20),
    )
        .prop_map(
            |(
                frequency,
                zone,
                start,
                len,
                delay_min,
                lateness,
                end_at_permille,
                end_told_after,
                closed_after,
                delivery_lag,
                wakeups,
            )| {
                let unit = match frequency {
                    Frequency::Hourly => HOUR / 4,
                    Frequency::Daily => DAY / 4,
                    Frequency::Monthly => 4 * DAY,
                };
                Case {
                    frequency,
                    zone,
                    start,
                    length: i64::from(len % 160 + 1) * unit,
                    delay_ms: delay_min * 60_000,
                    lateness,
                    end_at_permille,
                    end_told_after,
                    closed_after,
                    delivery_lag,
                    wakeups,
                }
            },
        )
}

#[derive(Debug, Clone)]
struct Fired {
    kind: ReportType,
    period: Period,
    sequence: u64,
    next_expected: Option<i64>,
    at: i64,
    delivered_at: i64,
}

struct Outcome {
    reg: ReportingRegistration,
    fired: Vec<Fired>,
    end_at: i64,
    end_told: i64,
    closed_at: i64,
    /// When each period's data became ready (by period start).
    ready: Vec<(Period, i64, bool)>,
}

fn registration(c: &Case) -> ReportingRegistration {
    let hook = json!({"url": "https://buyer.example/r", "reporting_frequency": c.frequency.as_str()});
    ReportingRegistration::new(
        "mb_1",
        &hook,
        c.zone,
        Duration::from_millis(u64::try_from(c.delay_ms).unwrap()),
        c.start,
        c.start + c.length,
    )
    .unwrap()
}

fn simulate(c: &Case) -> Outcome {
    let reg = registration(c);
    let end_at = c.start + c.length * c.end_at_permille / 1000;
    let end_told = end_at + c.end_told_after;
    let closed_at = end_told + c.closed_after;
    let mut state = StreamState::start(&reg, "op".to_owned()).unwrap();
    let mut fired: Vec<Fired> = Vec::new();
    let mut ready: Vec<(Period, i64, bool)> = Vec::new();
    let mut wakeups: Vec<i64> = c.wakeups.iter().map(|w| c.start + w).collect();
    wakeups.push(end_told);
    wakeups.sort_unstable();
    let mut now = c.start;
    for _ in 0..20_000 {
        if state.ended.is_none() && now >= end_told {
            state.ended = Some((BuyEnd::Canceled, end_at));
        }
        // Everything due now, as one scheduler pass.
        for _ in 0..64 {
            let next = plan::next(&reg, &state).unwrap();
            let (after, report) = match next {
                Next::Period { period, due_ms } if due_ms <= now => {
                    let index = ready.iter().position(|(p, _, _)| *p == period).unwrap_or_else(|| {
                        let (late, tells) = c.lateness[ready.len() % c.lateness.len()];
                        ready.push((period, period.end_ms + c.delay_ms + late, tells));
                        ready.len() - 1
                    });
                    let (_, ready_at, tells) = ready[index];
                    let answer = if now >= ready_at {
                        PeriodDelivery::Ready(json!([]))
                    } else {
                        PeriodDelivery::NotReady {
                            expected_at_ms: tells.then_some(ready_at),
                        }
                    };
                    plan::on_period(&reg, &state, period, answer, now, RECHECK).unwrap()
                }
                Next::Final { flight, due_ms } if due_ms <= now => {
                    let busy = fired.iter().any(|f| f.delivered_at > now);
                    if busy {
                        (plan::wait_for_earlier(&state, now, RECHECK), None)
                    } else {
                        let answer = if now >= closed_at {
                            Closing::Closed(json!([]))
                        } else {
                            Closing::Open
                        };
                        plan::on_closing(&state, flight, answer, now, RECHECK)
                    }
                }
                _ => break,
            };
            state = after;
            if let Some(r) = report {
                let lag = c.delivery_lag[fired.len() % c.delivery_lag.len()];
                fired.push(Fired {
                    kind: r.kind,
                    period: r.period,
                    sequence: r.sequence,
                    next_expected: r.next_expected_ms,
                    at: r.fired_ms,
                    delivered_at: r.fired_ms + lag,
                });
            }
        }
        let due = plan::next(&reg, &state).unwrap().due_ms();
        if matches!(plan::next(&reg, &state).unwrap(), Next::Closed) {
            break;
        }
        // Woken at the next due time, an extra wake-up, or the end being
        // told, whichever comes first.
        let extra = wakeups.iter().copied().find(|w| *w > now);
        now = match (due, extra) {
            (Some(d), Some(e)) => d.max(now + 1).min(e),
            (Some(d), None) => d.max(now + 1),
            (None, Some(e)) => e,
            (None, None) => panic!("the stream waits for nothing: {state:?}"),
        };
    }
    Outcome {
        reg,
        fired,
        end_at,
        end_told,
        closed_at,
        ready,
    }
}

/// The periods a flight `[start, end)` is reported over.
fn expected_periods(reg: &ReportingRegistration, end: i64) -> Vec<Period> {
    let mut p = reg.calendar().period_containing(reg.flight_ms().0).unwrap();
    let mut out = vec![];
    // Bounded, so a calendar that stops moving fails the test instead of
    // hanging it (no flight here spans more than a few thousand periods).
    for _ in 0..100_000 {
        if p.start_ms >= end {
            return out;
        }
        out.push(p);
        p = reg.calendar().next(p).unwrap();
    }
    panic!("the calendar never reached {end}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_period_gets_one_scheduled_report_and_the_final_comes_last(c in case()) {
        let o = simulate(&c);
        let end = o.end_at.min(o.reg.flight_ms().1);
        let periods = expected_periods(&o.reg, end);

        // Sequence numbers from 1, one more each time.
        for (i, f) in o.fired.iter().enumerate() {
            prop_assert_eq!(f.sequence, i as u64 + 1);
        }
        // Exactly one final, last, after the end was told, the data closed
        // and every earlier report delivered; without next_expected_at.
        let finals: Vec<_> = o.fired.iter().filter(|f| f.kind == ReportType::Final).collect();
        prop_assert_eq!(finals.len(), 1);
        let last = o.fired.last().unwrap();
        prop_assert_eq!(last.kind, ReportType::Final);
        prop_assert!(last.at >= o.end_told && last.at >= o.closed_at);
        prop_assert!(o.fired[..o.fired.len() - 1].iter().all(|f| f.delivered_at <= last.at));
        prop_assert_eq!(last.next_expected, None);
        prop_assert_eq!(last.period.start_ms, periods.first().map_or(last.period.start_ms, |p| p.start_ms));

        // One scheduled report per period, in order, none before its due time.
        // Periods after the buy's end are reported only when their first
        // report went out before the application told the end.
        let scheduled: Vec<_> = o.fired.iter().filter(|f| f.kind == ReportType::Scheduled).collect();
        let reported: Vec<Period> = scheduled.iter().map(|f| f.period).collect();
        let all = expected_periods(&o.reg, o.reg.flight_ms().1);
        prop_assert!(reported.len() >= periods.len());
        prop_assert_eq!(&reported[..], &all[..reported.len()]);
        for p in &reported[periods.len()..] {
            let first = o.fired.iter().find(|f| f.period == *p).unwrap();
            prop_assert!(first.at < o.end_told, "{:?} first reported at {} after the end was told", p, first.at);
        }
        let periods = reported;
        for f in &scheduled {
            prop_assert!(f.at >= f.period.end_ms + c.delay_ms);
        }
        // At most one delayed per period, before its scheduled report,
        // and only when its data was not ready at the time.
        for p in &periods {
            let delayed: Vec<_> = o.fired.iter().filter(|f| f.kind == ReportType::Delayed && f.period == *p).collect();
            prop_assert!(delayed.len() <= 1);
            if let Some(d) = delayed.first() {
                let s = scheduled.iter().find(|f| f.period == *p).unwrap();
                prop_assert!(d.sequence < s.sequence);
                let (_, ready_at, _) = o.ready.iter().find(|(q, _, _)| q == p).unwrap();
                prop_assert!(d.at < *ready_at);
            }
        }
        // next_expected_at is the next report's due time: the next report
        // never comes earlier, and comes exactly then when its data was
        // ready by then.
        for pair in o.fired.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            // A buy that ends before the promised time changes the plan:
            // the final may come earlier.
            let plan_changed = b.kind == ReportType::Final && a.at < o.end_told;
            if let (Some(t), false) = (a.next_expected, plan_changed) {
                prop_assert!(b.at >= t, "{:?} expected at {} came at {}", b.kind, t, b.at);
                if b.kind == ReportType::Scheduled {
                    let (_, ready_at, _) = o.ready.iter().find(|(q, _, _)| *q == b.period).unwrap();
                    if *ready_at <= t && a.kind == ReportType::Scheduled {
                        prop_assert_eq!(b.at, t);
                    }
                }
            } else if a.next_expected.is_none() {
                // Only the report before the final leaves it out.
                prop_assert_eq!(b.kind, ReportType::Final);
            }
        }
    }
}

#[test]
fn a_buy_rejected_before_its_flight_gets_only_the_final() {
    let c = Case {
        frequency: Frequency::Daily,
        zone: "UTC",
        start: 1_767_225_600_000,
        length: 3 * DAY,
        delay_ms: HOUR,
        lateness: vec![(0, false)],
        end_at_permille: 0,
        end_told_after: 0,
        closed_after: 0,
        delivery_lag: vec![0],
        wakeups: vec![],
    };
    let o = simulate(&c);
    assert_eq!(o.fired.len(), 1);
    assert_eq!(o.fired[0].kind, ReportType::Final);
    assert_eq!(o.fired[0].period.end_ms - o.fired[0].period.start_ms, DAY);
}

#[test]
fn an_hourly_stream_across_a_half_hour_fall_back_reports_each_period_once() {
    // Lord Howe falls back from +11:00 to +10:30 at 2026-04-04T15:00Z.
    let c = Case {
        frequency: Frequency::Hourly,
        zone: "Australia/Lord_Howe",
        start: 1_775_304_000_000, // 2026-04-04T12:00Z
        length: 8 * HOUR,
        delay_ms: 0,
        lateness: vec![(0, false)],
        end_at_permille: 1000,
        end_told_after: 0,
        closed_after: 0,
        delivery_lag: vec![0],
        wakeups: vec![],
    };
    let o = simulate(&c);
    let scheduled: Vec<Period> = o
        .fired
        .iter()
        .filter(|f| f.kind == ReportType::Scheduled)
        .map(|f| f.period)
        .collect();
    assert_eq!(scheduled.len(), 9, "{scheduled:?}");
    for pair in scheduled.windows(2) {
        assert_eq!(pair[1].start_ms, pair[0].end_ms);
    }
    assert_eq!(o.fired.last().unwrap().kind, ReportType::Final);
}
