//! The admission monitor: state, clause evaluation, tuning-overdue hook.

use super::event::{AdmissionAlarm, AdmissionEvent, Clause, TuningOverdue};
use super::thresholds::{AdmissionThresholds, ThresholdParam};
use super::window::{Statistic, WindowCounter};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

const DAY: i64 = 86_400;

/// How often, at most, the unique-keyid set is pruned of keyids whose last
/// admission fell out of the unique-keyid window.
const PRUNE_INTERVAL_SECS: i64 = 3_600;

/// While the keyid set is full, how often, at most, an early prune is tried.
const FULL_PRUNE_INTERVAL_SECS: i64 = 60;

/// One clause's current numbers, for metrics and dashboards (the spec's
/// "MUST track" half; alarms are the "SHOULD alert" half).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClauseStatus {
    /// The clause.
    pub clause: Clause,
    /// New keyids admitted in the clause's rolling window.
    pub observed: u64,
    /// The effective baseline (see [`AdmissionAlarm::baseline`]).
    pub baseline: f64,
    /// The threshold (`observed > threshold` trips the clause).
    pub threshold: f64,
    /// The clause's observation window, in seconds.
    pub window: u64,
    /// Whether `observed > threshold`.
    pub tripped: bool,
}

/// Tracks new-keyid admission pressure and raises the four clauses' alarms.
///
/// Call [`record_admission`](Self::record_admission) after every successful
/// replay-cache insert (step 13) with the signature's `keyid` and the
/// verifier's `now`. Synchronous and cheap (one mutex, one hash lookup, a
/// few counter updates); shareable behind an `Arc`. See the
/// [module docs](super) for the clause definitions.
pub struct AdmissionMonitor {
    state: Mutex<State>,
}

impl fmt::Debug for AdmissionMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("AdmissionMonitor")
            .field("thresholds", &state.thresholds)
            .field("tracked_keyids", &state.seen.len())
            .field("first_admission_at", &state.first_admission_at)
            .finish_non_exhaustive()
    }
}

impl AdmissionMonitor {
    /// Default bound on remembered keyids (see
    /// [`with_max_tracked_keyids`](Self::with_max_tracked_keyids)).
    pub const DEFAULT_MAX_TRACKED_KEYIDS: usize = 1_000_000;

    /// `threshold_tuning_overdue` fires when a shipped starting value is
    /// still in use more than this long after the first admission (30 days).
    pub const TUNING_OVERDUE_AFTER_SECS: i64 = 30 * DAY;

    /// After its first `threshold_tuning_overdue`, a parameter is reported
    /// again at most this often (1 day).
    pub const TUNING_OVERDUE_REPEAT_SECS: i64 = DAY;

    /// A monitor with the given thresholds and no history.
    #[must_use]
    pub fn new(thresholds: AdmissionThresholds) -> Self {
        let a = thresholds.a();
        let b = thresholds.b();
        let c = thresholds.c();
        let d = thresholds.d();
        let samples = |horizon: u64, window: u64| usize::try_from(horizon / window.max(1)).unwrap_or(0);
        let counters = [
            WindowCounter::new(a.window_secs, samples(a.horizon_secs, a.window_secs)),
            WindowCounter::new(b.window_secs, samples(b.horizon_secs, b.window_secs)),
            WindowCounter::new(c.window_secs, samples(c.horizon_secs, c.window_secs)),
            WindowCounter::new(d.window_secs, 0),
        ];
        Self {
            state: Mutex::new(State {
                thresholds,
                max_tracked: Self::DEFAULT_MAX_TRACKED_KEYIDS,
                counters,
                seen: HashMap::new(),
                next_prune: i64::MIN,
                next_full_prune: i64::MIN,
                overflow_warned_at: None,
                latest: None,
                first_admission_at: None,
                last_alarm: [None; 4],
                last_overdue: [None; ThresholdParam::ALL.len()],
            }),
        }
    }

    /// Bounds the set of remembered keyids (default
    /// [`DEFAULT_MAX_TRACKED_KEYIDS`](Self::DEFAULT_MAX_TRACKED_KEYIDS),
    /// about 100 MB at worst). When full, a keyid that does not fit is not
    /// remembered and counts as new on each of its admissions, and the
    /// unique-keyid count stops growing: both err toward alarming, never
    /// toward silence; a warning is logged at most once a day.
    #[must_use]
    pub fn with_max_tracked_keyids(self, max: usize) -> Self {
        let mut state = self.state.into_inner().unwrap_or_else(PoisonError::into_inner);
        state.max_tracked = max;
        Self {
            state: Mutex::new(state),
        }
    }

    /// Restores the verifier's first admission time (persist it: a monitor
    /// that restarts with a fresh first admission would postpone
    /// `threshold_tuning_overdue` forever).
    #[must_use]
    pub fn with_first_admission_at(self, at: i64) -> Self {
        let mut state = self.state.into_inner().unwrap_or_else(PoisonError::into_inner);
        state.first_admission_at = Some(at);
        Self {
            state: Mutex::new(state),
        }
    }

    /// Seeds the remembered keyids with `(keyid, last admission)` pairs,
    /// e.g. from [`known_keyids`](Self::known_keyids) saved before a
    /// restart, or the verifier's configured signers at first start.
    ///
    /// A monitor with no memory sees every active signer as new: a restart
    /// of a verifier with more than `d.floor` signers active within five
    /// minutes would otherwise trip (d) (and skew the baselines). Seeds
    /// beyond [`with_max_tracked_keyids`](Self::with_max_tracked_keyids)
    /// are ignored.
    #[must_use]
    pub fn with_known_keyids<I, K>(self, keyids: I) -> Self
    where
        I: IntoIterator<Item = (K, i64)>,
        K: AsRef<str>,
    {
        let mut state = self.state.into_inner().unwrap_or_else(PoisonError::into_inner);
        for (keyid, last) in keyids {
            let keyid = keyid.as_ref();
            if let Some(held) = state.seen.get_mut(keyid) {
                *held = (*held).max(last);
            } else if state.seen.len() < state.max_tracked {
                state.seen.insert(keyid.into(), last);
            }
        }
        Self {
            state: Mutex::new(state),
        }
    }

    /// The remembered keyids with their last admission, for persistence
    /// across restarts (see [`with_known_keyids`](Self::with_known_keyids)).
    #[must_use]
    pub fn known_keyids(&self) -> Vec<(String, i64)> {
        self.lock()
            .seen
            .iter()
            .map(|(keyid, &last)| (keyid.to_string(), last))
            .collect()
    }

    /// The thresholds in force.
    #[must_use]
    pub fn thresholds(&self) -> AdmissionThresholds {
        self.lock().thresholds.clone()
    }

    /// The first admission seen (or restored), in Unix seconds.
    #[must_use]
    pub fn first_admission_at(&self) -> Option<i64> {
        self.lock().first_admission_at
    }

    /// Keyids currently remembered (admitted within the unique-keyid window,
    /// pruned hourly).
    #[must_use]
    pub fn tracked_keyids(&self) -> usize {
        self.lock().seen.len()
    }

    /// Records one successful replay-cache insert by `keyid` at `now` (Unix
    /// seconds) and returns the alarms and `threshold_tuning_overdue` events
    /// it raised; each is also logged with `tracing::warn!`.
    ///
    /// `keyid` is new when it had no admission within the unique-keyid
    /// window ([`ProportionalCeiling::unique_window_secs`](super::ProportionalCeiling::unique_window_secs)).
    /// Clauses are evaluated on new-keyid admissions only; a clause alarms
    /// at most once per its observation window. `now` earlier than a
    /// previous call is treated as that previous time.
    pub fn record_admission(&self, keyid: &str, now: i64) -> Vec<AdmissionEvent> {
        let events = self.lock().record(keyid, now);
        for event in &events {
            event.emit();
        }
        events
    }

    /// Every clause's current numbers at `now`, without recording anything.
    #[must_use]
    pub fn status(&self, now: i64) -> [ClauseStatus; 4] {
        let mut state = self.lock();
        let now = state.clamp(now);
        state.advance(now);
        Clause::ALL.map(|clause| state.evaluate(clause))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Monitoring must never fail verification: recover from poisoning.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct State {
    thresholds: AdmissionThresholds,
    max_tracked: usize,
    /// Clauses (a), (b), (c), (d), in that order.
    counters: [WindowCounter; 4],
    /// Keyid → last admission.
    seen: HashMap<Box<str>, i64>,
    next_prune: i64,
    next_full_prune: i64,
    overflow_warned_at: Option<i64>,
    latest: Option<i64>,
    first_admission_at: Option<i64>,
    last_alarm: [Option<i64>; 4],
    last_overdue: [Option<i64>; ThresholdParam::ALL.len()],
}

impl State {
    fn clamp(&mut self, now: i64) -> i64 {
        let now = self.latest.map_or(now, |latest| latest.max(now));
        self.latest = Some(now);
        now
    }

    fn advance(&mut self, now: i64) {
        for counter in &mut self.counters {
            counter.advance(now);
        }
    }

    fn record(&mut self, keyid: &str, now: i64) -> Vec<AdmissionEvent> {
        let now = self.clamp(now);
        let first = *self.first_admission_at.get_or_insert(now);
        if now >= self.next_prune {
            self.prune(now);
        }
        let new = self.observe(keyid, now);
        self.advance(now);
        let mut events = Vec::new();
        if new {
            for counter in &mut self.counters {
                counter.increment();
            }
            for clause in Clause::ALL {
                let status = self.evaluate(clause);
                if !status.tripped {
                    continue;
                }
                let last = &mut self.last_alarm[clause.index()];
                let window = i64::try_from(status.window).unwrap_or(i64::MAX);
                if last.is_some_and(|at| now.saturating_sub(at) < window) {
                    continue;
                }
                *last = Some(now);
                events.push(AdmissionEvent::Alarm(AdmissionAlarm {
                    clause,
                    observed: status.observed,
                    baseline: status.baseline,
                    threshold: status.threshold,
                    window: status.window,
                    at: now,
                }));
            }
        }
        self.check_overdue(first, now, &mut events);
        events
    }

    fn unique_window(&self) -> i64 {
        i64::try_from(self.thresholds.d().unique_window_secs).unwrap_or(i64::MAX)
    }

    fn prune(&mut self, now: i64) {
        let window = self.unique_window();
        self.seen.retain(|_, last| now.saturating_sub(*last) <= window);
        self.next_prune = now.saturating_add(PRUNE_INTERVAL_SECS);
    }

    /// Notes an admission by `keyid`; returns whether it is new.
    fn observe(&mut self, keyid: &str, now: i64) -> bool {
        let window = self.unique_window();
        if let Some(last) = self.seen.get_mut(keyid) {
            let known = now.saturating_sub(*last) <= window;
            *last = now;
            return !known;
        }
        if self.seen.len() >= self.max_tracked && now >= self.next_full_prune {
            self.prune(now);
            self.next_full_prune = now.saturating_add(FULL_PRUNE_INTERVAL_SECS);
        }
        if self.seen.len() < self.max_tracked {
            self.seen.insert(keyid.into(), now);
        } else if self.overflow_warned_at.is_none_or(|at| now.saturating_sub(at) >= DAY) {
            self.overflow_warned_at = Some(now);
            tracing::warn!(
                target: "adcp_verify::admission",
                kind = "admission_keyid_capacity_reached",
                max_tracked_keyids = self.max_tracked,
                "admission monitor keyid capacity reached: untracked keyids count as new on every admission"
            );
        }
        true
    }

    fn evaluate(&mut self, clause: Clause) -> ClauseStatus {
        let thresholds = &self.thresholds;
        let (window, ratio, min_baseline, statistic) = match clause {
            Clause::A => {
                let a = thresholds.a();
                (a.window_secs, a.ratio, a.min_baseline, Some(Statistic::Mean))
            }
            Clause::B => {
                let b = thresholds.b();
                (
                    b.window_secs,
                    b.ratio,
                    b.min_baseline,
                    Some(Statistic::Percentile(b.percentile)),
                )
            }
            Clause::C => {
                let c = thresholds.c();
                (
                    c.window_secs,
                    c.ratio,
                    c.min_baseline,
                    Some(Statistic::Percentile(c.percentile)),
                )
            }
            Clause::D => (thresholds.d().window_secs, 0.0, 0.0, None),
        };
        let d = *thresholds.d();
        let Some(counter) = self.counters.get_mut(clause.index()) else {
            return ClauseStatus {
                clause,
                observed: 0,
                baseline: 0.0,
                threshold: f64::INFINITY,
                window,
                tripped: false,
            };
        };
        let observed = counter.observed();
        let (baseline, threshold) = match statistic {
            Some(statistic) => {
                let baseline = counter.baseline(statistic).max(min_baseline);
                (baseline, ratio * baseline)
            }
            None => {
                // Keyids first admitted inside the current window are left
                // out, so an attack does not raise its own ceiling.
                let unique = self
                    .seen
                    .len()
                    .saturating_sub(usize::try_from(observed).unwrap_or(usize::MAX));
                let unique = unique as f64;
                (unique, (d.floor as f64).max(d.fraction * unique))
            }
        };
        ClauseStatus {
            clause,
            observed,
            baseline,
            threshold,
            window,
            tripped: observed as f64 > threshold,
        }
    }

    fn check_overdue(&mut self, first: i64, now: i64, events: &mut Vec<AdmissionEvent>) {
        if now.saturating_sub(first) <= AdmissionMonitor::TUNING_OVERDUE_AFTER_SECS {
            return;
        }
        for (i, param) in ThresholdParam::ALL.into_iter().enumerate() {
            if !self.thresholds.is_shipped_starting_value(param) {
                continue;
            }
            let Some(last) = self.last_overdue.get_mut(i) else {
                continue;
            };
            if last.is_some_and(|at| now.saturating_sub(at) < AdmissionMonitor::TUNING_OVERDUE_REPEAT_SECS) {
                continue;
            }
            *last = Some(now);
            events.push(AdmissionEvent::TuningOverdue(TuningOverdue {
                threshold_name: param.name(),
                first_admission_at: first,
                shipped_value: self.thresholds.get(param),
                at: now,
            }));
        }
    }
}
