//! New-keyid admission pressure: each clause trips on its attack shape and
//! stays quiet on steady traffic; thresholds come only from explicit
//! values, the environment or the named starting values; tuning-overdue.
//!
//! A binary of its own, not a module of `tests/it`:
//! `from_env_reads_the_process_environment` sets and removes process
//! environment variables, which are global to the process; another test's
//! thread reading the environment meanwhile (`std::env`, or libc's `getenv`
//! inside a dependency) would race with it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use adcp_verify::admission::{
    AdmissionAlarm, AdmissionEvent, AdmissionMonitor, AdmissionThresholds, Clause, MovingAverageRatio, PercentileRatio,
    ProportionalCeiling, ThresholdError, ThresholdParam, TuningOverdue,
};
use std::collections::HashMap;
use std::sync::Arc;

const T0: i64 = 1_776_520_800;
const MIN: i64 = 60;
const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

/// Feeds admissions to a monitor and collects what it raises.
struct Sim {
    monitor: AdmissionMonitor,
    alarms: Vec<AdmissionAlarm>,
    overdue: Vec<TuningOverdue>,
    next_id: u64,
}

impl Sim {
    fn new(monitor: AdmissionMonitor) -> Self {
        Self {
            monitor,
            alarms: Vec::new(),
            overdue: Vec::new(),
            next_id: 0,
        }
    }

    fn admit(&mut self, keyid: &str, now: i64) -> Vec<AdmissionEvent> {
        let events = self.monitor.record_admission(keyid, now);
        for event in &events {
            match event {
                AdmissionEvent::Alarm(alarm) => self.alarms.push(*alarm),
                AdmissionEvent::TuningOverdue(overdue) => self.overdue.push(*overdue),
                _ => unreachable!("no other events"),
            }
        }
        events
    }

    /// A keyid never seen before.
    fn admit_new(&mut self, prefix: &str, now: i64) {
        self.next_id += 1;
        let keyid = format!("{prefix}-{}", self.next_id);
        self.admit(&keyid, now);
    }

    /// `per_day(t)` previously unseen keyids per day, evenly spread over
    /// `[from, to)` in 10-minute steps, with a fractional carry so
    /// non-integer rates work.
    fn steady_new(&mut self, from: i64, to: i64, per_day: impl Fn(i64) -> f64) {
        let step = 10 * MIN;
        let mut owed = 0.0;
        let mut t = from;
        while t < to {
            owed += per_day(t) * step as f64 / DAY as f64;
            while owed >= 1.0 {
                owed -= 1.0;
                self.admit_new("steady", t);
            }
            t += step;
        }
    }

    fn clauses(&self) -> Vec<Clause> {
        self.alarms.iter().map(|a| a.clause).collect()
    }

    fn clauses_since(&self, at: i64) -> Vec<Clause> {
        self.alarms.iter().filter(|a| a.at >= at).map(|a| a.clause).collect()
    }
}

fn starting() -> AdmissionThresholds {
    AdmissionThresholds::tuning_guide_starting_values()
}

/// Operator-tuned thresholds (values are illustrative).
fn tuned() -> AdmissionThresholds {
    AdmissionThresholds::new(
        MovingAverageRatio {
            window_secs: 300,
            horizon_secs: DAY as u64,
            ratio: 3.0,
            min_baseline: 2.0,
        },
        PercentileRatio {
            window_secs: 7 * DAY as u64,
            horizon_secs: 28 * DAY as u64,
            percentile: 95.0,
            ratio: 2.2,
            min_baseline: 30.0,
        },
        PercentileRatio {
            window_secs: 30 * DAY as u64,
            horizon_secs: 90 * DAY as u64,
            percentile: 99.0,
            ratio: 1.6,
            min_baseline: 40.0,
        },
        ProportionalCeiling {
            window_secs: 300,
            floor: 1_000,
            fraction: 0.1,
            unique_window_secs: 30 * DAY as u64,
        },
    )
    .unwrap()
}

/// The starting values with every clause but `keep` switched off (floors
/// out of reach), to watch one clause at a time.
fn only(keep: Clause) -> AdmissionThresholds {
    let mut t = starting();
    for (clause, param) in [
        (Clause::A, ThresholdParam::AMinBaseline),
        (Clause::B, ThresholdParam::BMinBaseline),
        (Clause::C, ThresholdParam::CMinBaseline),
        (Clause::D, ThresholdParam::DFloor),
    ] {
        if clause != keep {
            t.set(param, 1e6).unwrap();
        }
    }
    t
}

/// Known signers, seen just before `T0`.
fn known(n: usize) -> Vec<(String, i64)> {
    (0..n).map(|i| (format!("known-{i}"), T0 - HOUR)).collect()
}

// ---------------------------------------------------------------- thresholds

#[test]
fn starting_values_are_the_guides_and_marked_shipped() {
    let t = starting();
    assert_eq!(t.a().window_secs, 300);
    assert_eq!(t.a().horizon_secs, 86_400);
    assert!((t.a().ratio - 3.0).abs() < f64::EPSILON);
    assert_eq!(t.b().horizon_secs, 30 * 86_400);
    assert!((t.b().percentile - 95.0).abs() < f64::EPSILON);
    assert!((t.b().ratio - 2.0).abs() < f64::EPSILON);
    assert_eq!(t.c().horizon_secs, 90 * 86_400);
    assert!((t.c().percentile - 99.0).abs() < f64::EPSILON);
    assert!((t.c().ratio - 1.5).abs() < f64::EPSILON);
    assert_eq!(t.d().window_secs, 300);
    assert_eq!(t.d().floor, 20);
    assert!((t.d().fraction - 0.10).abs() < f64::EPSILON);
    assert_eq!(t.d().unique_window_secs, 30 * 86_400);
    assert_eq!(t.shipped_starting_values().count(), ThresholdParam::ALL.len());
    for param in ThresholdParam::ALL {
        assert!(t.is_shipped_starting_value(param), "{param}");
        assert!((t.get(param) - param.starting_value()).abs() < f64::EPSILON, "{param}");
    }
}

#[test]
fn explicit_thresholds_are_never_shipped_values() {
    let s = starting();
    let explicit = AdmissionThresholds::new(*s.a(), *s.b(), *s.c(), *s.d()).unwrap();
    assert_eq!(
        explicit.shipped_starting_values().count(),
        0,
        "explicit, even when equal to the guide's"
    );
    assert_eq!(tuned().shipped_starting_values().count(), 0);
}

#[test]
fn invalid_thresholds_are_refused() {
    let s = starting();
    let a = *s.a();
    let b = *s.b();
    let c = *s.c();
    let d = *s.d();
    let check = |result: Result<AdmissionThresholds, ThresholdError>, want: ThresholdParam| match result {
        Err(ThresholdError::Invalid { param, .. }) => assert_eq!(param, want),
        other => panic!("{want}: {other:?}"),
    };
    check(
        AdmissionThresholds::new(MovingAverageRatio { window_secs: 305, ..a }, b, c, d),
        ThresholdParam::AWindowSecs,
    );
    check(
        AdmissionThresholds::new(MovingAverageRatio { window_secs: 0, ..a }, b, c, d),
        ThresholdParam::AWindowSecs,
    );
    check(
        AdmissionThresholds::new(MovingAverageRatio { horizon_secs: 200, ..a }, b, c, d),
        ThresholdParam::AHorizonSecs,
    );
    check(
        AdmissionThresholds::new(MovingAverageRatio { ratio: 0.0, ..a }, b, c, d),
        ThresholdParam::ARatio,
    );
    check(
        AdmissionThresholds::new(
            MovingAverageRatio {
                min_baseline: f64::NAN,
                ..a
            },
            b,
            c,
            d,
        ),
        ThresholdParam::AMinBaseline,
    );
    check(
        AdmissionThresholds::new(a, PercentileRatio { percentile: 0.0, ..b }, c, d),
        ThresholdParam::BPercentile,
    );
    check(
        AdmissionThresholds::new(a, b, PercentileRatio { percentile: 100.5, ..c }, d),
        ThresholdParam::CPercentile,
    );
    check(
        AdmissionThresholds::new(
            a,
            b,
            PercentileRatio {
                ratio: f64::INFINITY,
                ..c
            },
            d,
        ),
        ThresholdParam::CRatio,
    );
    check(
        AdmissionThresholds::new(a, b, c, ProportionalCeiling { fraction: 1.5, ..d }),
        ThresholdParam::DFraction,
    );
    check(
        AdmissionThresholds::new(
            a,
            b,
            c,
            ProportionalCeiling {
                unique_window_secs: 0,
                ..d
            },
        ),
        ThresholdParam::DUniqueWindowSecs,
    );
    // Too many baseline windows (memory bound).
    check(
        AdmissionThresholds::new(
            MovingAverageRatio {
                window_secs: 10,
                horizon_secs: 10 * 200_000,
                ..a
            },
            b,
            c,
            d,
        ),
        ThresholdParam::AHorizonSecs,
    );
}

#[test]
fn set_marks_a_parameter_tuned_and_refuses_bad_values() {
    let mut t = starting();
    t.set(ThresholdParam::ARatio, 4.5).unwrap();
    assert!(!t.is_shipped_starting_value(ThresholdParam::ARatio));
    assert!(t.is_shipped_starting_value(ThresholdParam::BRatio));
    assert!((t.a().ratio - 4.5).abs() < f64::EPSILON);

    let before = t.clone();
    assert!(matches!(
        t.set(ThresholdParam::DFloor, 2.5),
        Err(ThresholdError::Invalid { .. })
    ));
    assert!(matches!(
        t.set(ThresholdParam::BHorizonSecs, 60.0),
        Err(ThresholdError::Invalid { .. })
    ));
    assert_eq!(t, before, "unchanged after a refused set");

    let t = t.with(ThresholdParam::DFloor, 12.0).unwrap();
    assert_eq!(t.d().floor, 12);
    assert!(!t.is_shipped_starting_value(ThresholdParam::DFloor));
}

fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn full_env(prefix: &str) -> HashMap<String, String> {
    ThresholdParam::ALL
        .iter()
        .map(|p| {
            // Tuned: every value differs from the guide's.
            let value = match p {
                ThresholdParam::AWindowSecs | ThresholdParam::DWindowSecs => "600".to_owned(),
                ThresholdParam::BPercentile => "90".to_owned(),
                ThresholdParam::CPercentile => "98".to_owned(),
                ThresholdParam::DFraction => "0.07".to_owned(),
                ThresholdParam::DFloor => "13".to_owned(),
                p if p.is_integer() => format!("{}", p.starting_value() as u64 + 3_600),
                p => format!("{}", p.starting_value() * 1.3),
            };
            (format!("{prefix}{}", p.env_suffix()), value)
        })
        .collect()
}

#[test]
fn env_variable_names() {
    let names: Vec<String> = ThresholdParam::ALL
        .iter()
        .map(|p| format!("{}{}", AdmissionThresholds::ENV_PREFIX, p.env_suffix()))
        .collect();
    assert_eq!(
        names,
        [
            "ADCP_ADMISSION_A_WINDOW_SECS",
            "ADCP_ADMISSION_A_HORIZON_SECS",
            "ADCP_ADMISSION_A_RATIO",
            "ADCP_ADMISSION_A_MIN_BASELINE",
            "ADCP_ADMISSION_B_WINDOW_SECS",
            "ADCP_ADMISSION_B_HORIZON_SECS",
            "ADCP_ADMISSION_B_PERCENTILE",
            "ADCP_ADMISSION_B_RATIO",
            "ADCP_ADMISSION_B_MIN_BASELINE",
            "ADCP_ADMISSION_C_WINDOW_SECS",
            "ADCP_ADMISSION_C_HORIZON_SECS",
            "ADCP_ADMISSION_C_PERCENTILE",
            "ADCP_ADMISSION_C_RATIO",
            "ADCP_ADMISSION_C_MIN_BASELINE",
            "ADCP_ADMISSION_D_WINDOW_SECS",
            "ADCP_ADMISSION_D_FLOOR",
            "ADCP_ADMISSION_D_FRACTION",
            "ADCP_ADMISSION_D_UNIQUE_WINDOW_SECS",
        ]
    );
}

#[test]
fn strict_lookup_requires_every_variable() {
    let prefix = AdmissionThresholds::ENV_PREFIX;
    let env = env_of(&[("ADCP_ADMISSION_A_RATIO", "4")]);
    match AdmissionThresholds::from_lookup(prefix, |name| env.get(name).cloned()) {
        Err(ThresholdError::Missing { vars }) => {
            assert_eq!(vars.len(), ThresholdParam::ALL.len() - 1);
            assert!(vars.contains(&"ADCP_ADMISSION_D_FLOOR".to_owned()));
            assert!(!vars.contains(&"ADCP_ADMISSION_A_RATIO".to_owned()));
        }
        other => panic!("{other:?}"),
    }

    let env = full_env(prefix);
    let t = AdmissionThresholds::from_lookup(prefix, |name| env.get(name).cloned()).unwrap();
    assert_eq!(t.shipped_starting_values().count(), 0);
    assert_eq!(t.a().window_secs, 600);
    assert_eq!(t.d().floor, 13);
    assert!((t.d().fraction - 0.07).abs() < 1e-12);
    assert!((t.a().ratio - 3.9).abs() < 1e-9);
}

#[test]
fn lookup_refuses_unparsable_and_invalid_values() {
    let prefix = AdmissionThresholds::ENV_PREFIX;
    let mut env = full_env(prefix);
    env.insert("ADCP_ADMISSION_D_FLOOR".into(), "twenty".into());
    match AdmissionThresholds::from_lookup(prefix, |name| env.get(name).cloned()) {
        Err(ThresholdError::Unparsable { var, value }) => {
            assert_eq!(var, "ADCP_ADMISSION_D_FLOOR");
            assert_eq!(value, "twenty");
        }
        other => panic!("{other:?}"),
    }
    // A window must be whole seconds: "300.5" does not parse as one.
    let env = env_of(&[("ADCP_ADMISSION_A_WINDOW_SECS", "300.5")]);
    assert!(matches!(
        AdmissionThresholds::from_lookup_or_starting_values(prefix, |name| env.get(name).cloned()),
        Err(ThresholdError::Unparsable { .. })
    ));
    // Present but invalid is an error even with the fallback, never a default.
    let env = env_of(&[("ADCP_ADMISSION_B_RATIO", "-2")]);
    assert!(matches!(
        AdmissionThresholds::from_lookup_or_starting_values(prefix, |name| env.get(name).cloned()),
        Err(ThresholdError::Invalid {
            param: ThresholdParam::BRatio,
            ..
        })
    ));
}

#[test]
fn lookup_with_fallback_marks_absent_variables_as_shipped() {
    let env = env_of(&[("X_A_RATIO", " 4.25 "), ("X_D_FLOOR", "12")]);
    let t = AdmissionThresholds::from_lookup_or_starting_values("X_", |name| env.get(name).cloned()).unwrap();
    assert!((t.a().ratio - 4.25).abs() < f64::EPSILON);
    assert_eq!(t.d().floor, 12);
    let shipped: Vec<_> = t.shipped_starting_values().collect();
    assert_eq!(shipped.len(), ThresholdParam::ALL.len() - 2);
    assert!(!shipped.contains(&ThresholdParam::ARatio));
    assert!(!shipped.contains(&ThresholdParam::DFloor));
    assert!(shipped.contains(&ThresholdParam::BRatio));
}

#[test]
#[expect(
    unsafe_code,
    reason = "changing the process environment is unsafe from edition 2024 on"
)]
fn from_env_reads_the_process_environment() {
    let prefix = "ADCP_ADMISSION_TEST_FROM_ENV_";
    for (name, value) in full_env(prefix) {
        // SAFETY: no other test of this binary touches the process
        // environment, and no thread of this test reads it meanwhile.
        unsafe { std::env::set_var(name, value) };
    }
    let strict = AdmissionThresholds::from_env(prefix).unwrap();
    assert_eq!(strict.d().floor, 13);
    assert_eq!(strict.shipped_starting_values().count(), 0);
    // SAFETY: as above.
    unsafe { std::env::remove_var(format!("{prefix}C_RATIO")) };
    assert!(matches!(
        AdmissionThresholds::from_env(prefix),
        Err(ThresholdError::Missing { .. })
    ));
    let fallback = AdmissionThresholds::from_env_or_starting_values(prefix).unwrap();
    assert_eq!(
        fallback.shipped_starting_values().collect::<Vec<_>>(),
        [ThresholdParam::CRatio]
    );
    for param in ThresholdParam::ALL {
        // SAFETY: as above.
        unsafe { std::env::remove_var(format!("{prefix}{}", param.env_suffix())) };
    }
}

// ---------------------------------------------------------------- clauses

#[test]
fn monitor_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AdmissionMonitor>();
    let monitor = Arc::new(AdmissionMonitor::new(only(Clause::D)));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let monitor = Arc::clone(&monitor);
            std::thread::spawn(move || {
                (0..10)
                    .flat_map(|i| monitor.record_admission(&format!("t{t}-{i}"), T0 + i))
                    .filter_map(|e| e.as_alarm().map(|a| a.clause))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let alarms: Vec<Clause> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(alarms, [Clause::D], "40 new keyids, one alarm at the 21st");
    assert_eq!(monitor.tracked_keyids(), 40);
}

#[test]
fn clause_names() {
    assert_eq!(Clause::ALL.map(Clause::letter), ["a", "b", "c", "d"]);
    assert_eq!(Clause::B.to_string(), "(b) medium-window ratio");
    assert_eq!(Clause::C.category(), "long-window ratio");
}

#[test]
fn fresh_monitor_status_shows_the_floors() {
    let monitor = AdmissionMonitor::new(starting());
    let status = monitor.status(T0);
    assert_eq!(status.map(|s| s.clause), Clause::ALL);
    let thresholds = status.map(|s| s.threshold);
    assert!((thresholds[0] - 60.0).abs() < 1e-9, "(a) 3 × max(0, 20)");
    assert!((thresholds[1] - 40.0).abs() < 1e-9, "(b) 2 × max(0, 20)");
    assert!((thresholds[2] - 30.0).abs() < 1e-9, "(c) 1.5 × max(0, 20)");
    assert!((thresholds[3] - 20.0).abs() < 1e-9, "(d) max(20, 0.1 × 0)");
    assert!(status.iter().all(|s| s.observed == 0 && !s.tripped));
}

#[test]
fn steady_traffic_trips_nothing() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(known(30)));
    let end = T0 + 100 * DAY;
    let mut t = T0;
    let mut next_new = T0;
    while t < end {
        // Each known signer posts every hour (staggered).
        for i in 0..30 {
            sim.admit(&format!("known-{i}"), t + i * MIN);
        }
        // A new seller is onboarded every two days.
        if t >= next_new {
            sim.admit_new("onboarded", t);
            next_new += 2 * DAY;
        }
        t += HOUR;
    }
    assert!(sim.alarms.is_empty(), "{:?}", sim.alarms);
    assert_eq!(
        sim.monitor.tracked_keyids(),
        30 + 15,
        "known signers + the last 30 days of onboarding"
    );
    let status = sim.monitor.status(end);
    assert!(status.iter().all(|s| !s.tripped));
}

#[test]
fn sudden_spike_trips_a() {
    // A busy verifier with about two new keyids every five minutes; (a)'s
    // floor tuned down to 2 so its moving average is what counts.
    let thresholds = only(Clause::A).with(ThresholdParam::AMinBaseline, 2.0).unwrap();
    let mut sim = Sim::new(AdmissionMonitor::new(thresholds));
    let spike_at = T0 + 2 * DAY;
    let mut t = T0;
    while t < spike_at {
        sim.admit_new("churn", t);
        t += 150;
    }
    assert!(sim.alarms.is_empty(), "steady churn: {:?}", sim.alarms);
    let a = sim.monitor.status(spike_at)[0];
    assert!(
        (a.baseline - 2.0).abs() < 1e-9,
        "moving average = 2 per window, got {}",
        a.baseline
    );
    assert!((a.threshold - 6.0).abs() < 1e-9);
    assert_eq!(a.observed, 1, "one churn admission in the rolling window");

    // 40 previously unseen keyids within one minute.
    for i in 0..40 {
        sim.admit_new("compromised", spike_at + i);
    }
    assert_eq!(sim.clauses(), [Clause::A]);
    let alarm = sim.alarms[0];
    assert_eq!(alarm.observed, 7, "first count above 3 × 2");
    assert!((alarm.threshold - 6.0).abs() < 1e-9);
    assert_eq!(alarm.window, 300);
    assert_eq!(alarm.at, spike_at + 5);
}

#[test]
fn mass_compromise_on_a_stable_verifier_names_every_clause_in_order() {
    // Guide Scenario 1 with the starting values: 100 keys fire at once on a
    // stable verifier whose new-keyid baselines are all near zero, so each
    // clause trips at its floor: (d) above 20, (c) above 1.5 × 20, (b)
    // above 2 × 20, (a) above 3 × 20.
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(known(20)));
    for h in 0..48 {
        for i in 0..20 {
            sim.admit(&format!("known-{i}"), T0 + h * HOUR + i * MIN);
        }
    }
    assert!(sim.alarms.is_empty());
    let attack = T0 + 2 * DAY;
    for i in 0..100 {
        sim.admit_new("compromised", attack + i);
    }
    assert_eq!(sim.clauses(), [Clause::D, Clause::C, Clause::B, Clause::A]);
    let observed: Vec<u64> = sim.alarms.iter().map(|a| a.observed).collect();
    assert_eq!(observed, [21, 31, 41, 61]);
    let thresholds: Vec<f64> = sim.alarms.iter().map(|a| a.threshold).collect();
    assert_eq!(thresholds, [20.0, 30.0, 40.0, 60.0]);
    assert_eq!(sim.alarms[0].window, 300);
    assert_eq!(sim.alarms[1].window, 30 * DAY as u64);
    assert_eq!(sim.alarms[2].window, 7 * DAY as u64);
}

#[test]
fn multi_week_ramp_trips_b_but_not_a() {
    // A verifier onboarding ten new keyids a day, observed long enough for
    // every horizon to fill (30-day window + 3 × 30-day baseline for (c)).
    let mut sim = Sim::new(AdmissionMonitor::new(starting()));
    let warm = T0 + 125 * DAY;
    sim.steady_new(T0, warm, |_| 10.0);
    assert!(
        sim.clauses_since(T0 + 100 * DAY).is_empty(),
        "steady after warm-up: {:?}",
        sim.alarms
    );

    // A multi-week ramp tripling weekly (15, 45, 135, 405 a day), spread
    // thin: never more than two new keyids in any five minutes.
    let end = warm + 28 * DAY;
    sim.steady_new(warm, end, |t| {
        10.0 + 15.0 * 3f64.powi(i32::try_from((t - warm) / (7 * DAY)).unwrap())
    });
    let during = sim.clauses_since(warm);
    assert_eq!(during.first(), Some(&Clause::B), "{during:?}");
    assert!(!during.contains(&Clause::A), "{during:?}");
    assert!(!during.contains(&Clause::D), "{during:?}");
    let b = sim
        .alarms
        .iter()
        .find(|a| a.clause == Clause::B && a.at >= warm)
        .unwrap();
    assert_eq!(b.window, 7 * DAY as u64);
    assert!(b.at < warm + 7 * DAY, "caught in the first week");
    assert!(b.observed as f64 > 2.0 * 70.0);
}

#[test]
fn multi_month_ramp_trips_c_but_not_b() {
    // About two new keyids a day, then an attack that starts at one every
    // other day and grows 1.8× a month: no week is twice any of the previous four
    // (the medium anchor drifts with it), but a month outgrows 1.5× the
    // previous three.
    let mut sim = Sim::new(AdmissionMonitor::new(starting()));
    let warm = T0 + 125 * DAY;
    sim.steady_new(T0, warm, |_| 2.0);
    assert!(
        sim.clauses_since(T0 + 100 * DAY).is_empty(),
        "steady after warm-up: {:?}",
        sim.alarms
    );

    let end = warm + 180 * DAY;
    sim.steady_new(warm, end, |t| {
        2.0 + 0.5 * 1.8f64.powf((t - warm) as f64 / (30 * DAY) as f64)
    });
    let during = sim.clauses_since(warm);
    assert!(during.contains(&Clause::C), "{during:?}");
    assert!(!during.contains(&Clause::B), "{during:?}");
    assert!(!during.contains(&Clause::A), "{during:?}");
    assert!(!during.contains(&Clause::D), "{during:?}");
    let c = sim
        .alarms
        .iter()
        .find(|a| a.clause == Clause::C && a.at >= warm)
        .unwrap();
    assert_eq!(c.window, 30 * DAY as u64);
    // The ramp outgrows the legitimate rate only after months.
    assert!(c.at > warm + 90 * DAY, "{} days", (c.at - warm) / DAY);
    assert!(c.observed as f64 > c.threshold && c.threshold > 1.5 * 60.0);
}

#[test]
fn sparse_verifier_burst_trips_d_only() {
    // 20 signers active every day, one new keyid every three weeks.
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(known(20)));
    let scenario_4 = 100;
    let attack = scenario_4 + 31;
    for day in 0..=attack {
        let midnight = T0 + day * DAY;
        for i in 0..20 {
            sim.admit(&format!("known-{i}"), midnight + i * MIN);
        }
        if day % 21 == 0 {
            sim.admit_new("onboarded", midnight + HOUR);
        }
        if day == scenario_4 {
            // Guide Scenario 4: 15 new keyids in five minutes is under
            // every floor.
            assert!(sim.alarms.is_empty(), "{:?}", sim.alarms);
            for i in 0..15 {
                sim.admit_new("burst", midnight + 2 * HOUR + i * 10);
            }
            assert!(sim.alarms.is_empty(), "{:?}", sim.alarms);
        }
        if day == attack {
            // A month later, 25 new keyids in five minutes: only (d)
            // trips; the ratio clauses' floors keep them quiet on the
            // near-zero baseline.
            for i in 0..25 {
                sim.admit_new("compromised", midnight + 2 * HOUR + i * 10);
            }
        }
    }
    assert_eq!(sim.clauses(), [Clause::D]);
    let alarm = sim.alarms[0];
    assert_eq!(alarm.observed, 21);
    assert!((alarm.threshold - 20.0).abs() < 1e-9);
    assert!(
        (alarm.baseline - 22.0).abs() < 1e-9,
        "20 signers + 2 onboarded in the last 30 days: {}",
        alarm.baseline
    );
}

#[test]
fn d_ceiling_scales_with_unique_keyids() {
    // Guide Scenario 5: 500 new keyids in five minutes.
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(known(10_000)));
    for i in 0..500 {
        sim.admit_new("new", T0 + i / 2);
    }
    let status = sim.monitor.status(T0 + 250);
    assert!((status[3].threshold - 1_000.0).abs() < 1e-9, "10% of 10,000");
    assert!(!sim.clauses().contains(&Clause::D), "{:?}", sim.alarms);
    assert!(sim.clauses().contains(&Clause::A), "far above 3 × the floor of (a)");

    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(known(100)));
    for i in 0..500 {
        sim.admit_new("new", T0 + i / 2);
    }
    assert_eq!(sim.clauses()[0], Clause::D);
    assert_eq!(sim.alarms[0].observed, 21, "max(20, 10% × 100) = 20");
}

#[test]
fn keyids_first_admitted_in_the_window_do_not_raise_the_ceiling() {
    let mut sim = Sim::new(AdmissionMonitor::new(only(Clause::D)).with_known_keyids(known(150)));
    for i in 0..40 {
        sim.admit_new("new", T0 + i);
    }
    // The ceiling stays max(20, 10% × 150) = 20, not 10% × 190 = 19 → 20
    // nor anything the attack's own keyids could lift.
    assert_eq!(sim.clauses(), [Clause::D]);
    assert_eq!(sim.alarms[0].observed, 21);
    assert!((sim.alarms[0].baseline - 150.0).abs() < 1e-9);

    let mut sim = Sim::new(AdmissionMonitor::new(only(Clause::D)).with_known_keyids(known(300)));
    for i in 0..60 {
        sim.admit_new("new", T0 + i);
    }
    // 10% × 300 = 30 (not 10% × 360 = 36).
    assert_eq!(sim.alarms[0].observed, 31);
    assert!((sim.alarms[0].threshold - 30.0).abs() < 1e-9);
}

#[test]
fn each_clause_alarms_once_per_window() {
    let mut sim = Sim::new(AdmissionMonitor::new(only(Clause::D)));
    for i in 0..50 {
        sim.admit_new("first", T0 + i);
    }
    assert_eq!(sim.clauses(), [Clause::D]);
    // Still inside the window: no repeat.
    for i in 0..30 {
        sim.admit_new("more", T0 + 200 + i);
    }
    assert_eq!(sim.clauses(), [Clause::D]);
    // A later burst, one window after the alarm, alarms again.
    for i in 0..30 {
        sim.admit_new("later", T0 + 2 * HOUR + i);
    }
    assert_eq!(sim.clauses(), [Clause::D, Clause::D]);
}

#[test]
fn known_keyids_are_not_new_until_they_fall_out_of_the_window() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()));
    sim.admit("seller", T0);
    assert_eq!(sim.monitor.status(T0)[3].observed, 1);
    sim.admit("seller", T0 + 1);
    assert_eq!(sim.monitor.status(T0 + 1)[3].observed, 1, "same keyid again is not new");
    // Idle for more than 30 days: previously unseen again.
    let back = T0 + 31 * DAY;
    sim.admit("seller", back);
    assert_eq!(sim.monitor.status(back)[3].observed, 1);
    assert_eq!(sim.monitor.tracked_keyids(), 1);
    let saved = sim.monitor.known_keyids();
    assert_eq!(saved, [("seller".to_owned(), back)]);
}

#[test]
fn cold_start_sees_every_signer_as_new_unless_seeded() {
    let signers: Vec<String> = (0..30).map(|i| format!("signer-{i}")).collect();
    let mut cold = Sim::new(AdmissionMonitor::new(starting()));
    for (i, keyid) in signers.iter().enumerate() {
        cold.admit(keyid, T0 + i64::try_from(i).unwrap());
    }
    assert_eq!(cold.clauses(), [Clause::D]);

    // Restored from the previous process's known keyids: quiet.
    let saved = cold.monitor.known_keyids();
    let mut warm = Sim::new(AdmissionMonitor::new(starting()).with_known_keyids(saved));
    for (i, keyid) in signers.iter().enumerate() {
        warm.admit(keyid, T0 + HOUR + i64::try_from(i).unwrap());
    }
    assert!(warm.alarms.is_empty());
}

#[test]
fn full_keyid_memory_errs_toward_alarming() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_max_tracked_keyids(2));
    sim.admit("a", T0);
    sim.admit("b", T0);
    for i in 0..5 {
        sim.admit("c", T0 + i);
    }
    assert_eq!(sim.monitor.tracked_keyids(), 2);
    // "c" is not remembered, so each of its admissions counted as new.
    assert_eq!(sim.monitor.status(T0 + 5)[3].observed, 2 + 5);
}

#[test]
fn time_going_backwards_is_clamped() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()));
    sim.admit("a", T0);
    sim.admit("b", T0 - 10 * DAY);
    sim.admit("c", i64::MIN);
    sim.admit("d", i64::MAX);
    sim.admit("e", 0);
    let status = sim.monitor.status(T0);
    assert!(status.iter().all(|s| s.observed <= 5));
}

// ---------------------------------------------------------------- tuning overdue

#[test]
fn tuning_overdue_after_30_days_with_starting_values() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()));
    sim.admit("seller", T0);
    assert_eq!(sim.monitor.first_admission_at(), Some(T0));
    sim.admit("seller", T0 + 30 * DAY);
    assert!(sim.overdue.is_empty(), "not yet: exactly 30 days");

    sim.admit("seller", T0 + 30 * DAY + 1);
    assert_eq!(sim.overdue.len(), ThresholdParam::ALL.len(), "one per threshold");
    let names: Vec<&str> = sim.overdue.iter().map(|o| o.threshold_name).collect();
    assert!(names.contains(&"a_ratio") && names.contains(&"d_floor") && names.contains(&"c_percentile"));
    for overdue in &sim.overdue {
        assert_eq!(overdue.first_admission_at, T0);
        assert_eq!(overdue.at, T0 + 30 * DAY + 1);
        let param = ThresholdParam::ALL
            .iter()
            .find(|p| p.name() == overdue.threshold_name)
            .unwrap();
        assert!((overdue.shipped_value - param.starting_value()).abs() < f64::EPSILON);
    }

    // At most once a day afterwards.
    sim.admit("seller", T0 + 30 * DAY + 2 * HOUR);
    sim.admit("seller", T0 + 31 * DAY);
    assert_eq!(sim.overdue.len(), ThresholdParam::ALL.len());
    sim.admit("seller", T0 + 31 * DAY + 1);
    assert_eq!(sim.overdue.len(), 2 * ThresholdParam::ALL.len());
}

#[test]
fn tuning_overdue_only_for_untuned_parameters() {
    let env = env_of(&[("P_A_RATIO", "3.7"), ("P_D_FLOOR", "14")]);
    let mut thresholds = AdmissionThresholds::from_lookup_or_starting_values("P_", |n| env.get(n).cloned()).unwrap();
    for param in ThresholdParam::ALL {
        if !matches!(
            param,
            ThresholdParam::ARatio | ThresholdParam::DFloor | ThresholdParam::BRatio
        ) {
            thresholds.set(param, thresholds.get(param)).unwrap();
        }
    }
    let mut sim = Sim::new(AdmissionMonitor::new(thresholds));
    sim.admit("seller", T0);
    sim.admit("seller", T0 + 45 * DAY);
    assert_eq!(
        sim.overdue.iter().map(|o| o.threshold_name).collect::<Vec<_>>(),
        ["b_ratio"]
    );
}

#[test]
fn no_tuning_overdue_with_tuned_values() {
    let mut sim = Sim::new(AdmissionMonitor::new(tuned()));
    for day in 0..120 {
        sim.admit("seller", T0 + day * DAY);
    }
    assert!(sim.overdue.is_empty());
}

#[test]
fn first_admission_time_can_be_restored() {
    let mut sim = Sim::new(AdmissionMonitor::new(starting()).with_first_admission_at(T0 - 40 * DAY));
    sim.admit("seller", T0);
    assert_eq!(sim.monitor.first_admission_at(), Some(T0 - 40 * DAY));
    assert_eq!(sim.overdue.len(), ThresholdParam::ALL.len());
    assert!(sim.overdue.iter().all(|o| o.first_admission_at == T0 - 40 * DAY));
}
