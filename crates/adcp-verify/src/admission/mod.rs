//! New-keyid admission-pressure monitoring ("Webhook replay dedup sizing").
//!
//! Verifiers MUST track the rate at which previously-unseen `keyid`s admit
//! replay-cache entries and SHOULD alert when it exceeds any of four
//! thresholds: an attacker holding many compromised keys can keep every key
//! under its per-keyid cap while collectively filling the aggregate cache,
//! and the new-keyid admission rate is where that shape shows. Alarms go to
//! incident response, never to automatic revocation.
//!
//! The verifier calls [`AdmissionMonitor::record_admission`] after every
//! successful replay-cache insert (checklist step 13) with the `keyid` and
//! its injected `now` (Unix seconds; the monitor never reads the clock).
//!
//! # What is counted
//!
//! A keyid is **new** when it had no admission within the unique-keyid
//! window (`d.unique_window_secs`, 30 days in the starting values): the
//! spec's "previously-unseen keyid", with a bounded memory. (Counting a
//! keyid as new whenever it has no unexpired replay entry would count every
//! intermittent legitimate signer again every six minutes and drown the
//! key-population signal.) Each clause keeps a ring buffer of new-keyid
//! counts in tenths of its observation window `W`, so `observed` is a
//! rolling count over the last `W` seconds (in steps of `W / 10`), and its
//! baseline samples are the `N = floor(H / W)` whole windows of length `W`
//! immediately before the rolling window (`H` the clause's horizon).
//! Windows reaching back before the monitor's first admission are left out
//! (thin history), so the baselines warm up instead of reading as zero.
//!
//! # The four clauses
//!
//! Each clause trips when `observed > threshold`:
//!
//! | Clause | `observed` | `threshold` |
//! |---|---|---|
//! | (a) short-window ratio | new keyids in the last `a.window_secs` | `a.ratio × max(mean of the N_a previous windows, a.min_baseline)` |
//! | (b) medium-window ratio | new keyids in the last `b.window_secs` | `b.ratio × max(P(b.percentile) of the N_b previous windows, b.min_baseline)` |
//! | (c) long-window ratio | new keyids in the last `c.window_secs` | `c.ratio × max(P(c.percentile) of the N_c previous windows, c.min_baseline)` |
//! | (d) proportional ceiling | new keyids in the last `d.window_secs` | `max(d.floor, d.fraction × U)` |
//!
//! Percentiles are nearest-rank. `U` is the number of distinct keyids with
//! an admission within `d.unique_window_secs`, not counting keyids first
//! admitted inside the current (d) window (an attack does not raise its own
//! ceiling); the set is pruned hourly and bounded by
//! [`AdmissionMonitor::with_max_tracked_keyids`]. The `min_baseline` terms
//! are the guide's "degrade to the clause (d) floor": without them a ratio
//! against a near-zero baseline trips on any single new keyid.
//!
//! With the starting values, (b) compares the last 7 days with the previous
//! four weeks and (c) the last 30 days with the previous three months; with
//! that few baseline windows a nearest-rank P95 or P99 is their maximum.
//! A percentile baseline follows a ramp that stays inside its horizon, so a
//! ratio clause catches a ramp only when it grows faster than its ratio per
//! window relative to that baseline (the guide's Scenario 9, a slow steady
//! drip, is a known limitation of the rule shape, not of this code).
//!
//! Clauses are evaluated on each new-keyid admission; each clause alarms at
//! most once per its observation window. An [`AdmissionAlarm`] names its
//! [`Clause`] and is both returned and logged with `tracing::warn!`
//! (target `adcp_verify::admission`, fields `kind =
//! "new_keyid_admission_pressure"`, `clause`, `observed`, `baseline`,
//! `threshold`, `window_secs`, `at`).
//!
//! # Restarts and fleets
//!
//! The monitor keeps its state in memory. A fresh monitor sees every active
//! signer as new; seed it with [`AdmissionMonitor::with_known_keyids`]
//! (from [`AdmissionMonitor::known_keyids`] saved at shutdown) and restore
//! [`AdmissionMonitor::with_first_admission_at`]. Baseline history is not
//! persisted: after a restart the ratio clauses run on their
//! `min_baseline` floors until their horizons refill (the guide's
//! Scenario 11). In a fleet each process sees only its own admissions, so
//! per-process counts understate fleet-wide pressure: feed one monitor from
//! every endpoint, or tune the thresholds to the per-process share.
//!
//! # Thresholds are not defaults
//!
//! Published thresholds are an attacker oracle, so [`AdmissionThresholds`]
//! has no `Default`. Give explicit values ([`AdmissionThresholds::new`]),
//! read them from the environment ([`AdmissionThresholds::from_env`], names
//! listed there), or start from the tuning guide with the explicitly named
//! [`AdmissionThresholds::tuning_guide_starting_values`]. Parameters that
//! hold a shipped starting value raise a [`TuningOverdue`]
//! (`threshold_tuning_overdue`) event more than 30 days after the first
//! admission, once per parameter and then at most daily, until tuned.
//!
//! # Example
//!
//! ```
//! use adcp_verify::admission::{
//!     AdmissionMonitor, AdmissionThresholds, Clause, MovingAverageRatio, PercentileRatio,
//!     ProportionalCeiling,
//! };
//!
//! // Operator-tuned values (illustrative; never publish your own).
//! let thresholds = AdmissionThresholds::new(
//!     MovingAverageRatio { window_secs: 300, horizon_secs: 86_400, ratio: 4.0, min_baseline: 12.0 },
//!     PercentileRatio { window_secs: 7 * 86_400, horizon_secs: 35 * 86_400, percentile: 95.0, ratio: 2.5, min_baseline: 15.0 },
//!     PercentileRatio { window_secs: 30 * 86_400, horizon_secs: 120 * 86_400, percentile: 99.0, ratio: 1.75, min_baseline: 25.0 },
//!     ProportionalCeiling { window_secs: 300, floor: 15, fraction: 0.08, unique_window_secs: 30 * 86_400 },
//! )?;
//! let monitor = AdmissionMonitor::new(thresholds);
//!
//! let now = 1_776_520_800;
//! // 16 previously unseen keyids within one 5-minute window: more than the
//! // (d) floor of 15 on a verifier with no history.
//! let mut alarms = Vec::new();
//! for i in 0..16 {
//!     let keyid = format!("seller-{i}");
//!     alarms.extend(monitor.record_admission(&keyid, now + i).into_iter().filter_map(|e| e.as_alarm().copied()));
//! }
//! assert_eq!(alarms.len(), 1);
//! assert_eq!(alarms[0].clause, Clause::D);
//! assert_eq!(alarms[0].observed, 16);
//! # Ok::<(), adcp_verify::admission::ThresholdError>(())
//! ```

mod event;
mod monitor;
mod thresholds;
mod window;

pub use event::{AdmissionAlarm, AdmissionEvent, Clause, TuningOverdue};
pub use monitor::{AdmissionMonitor, ClauseStatus};
pub use thresholds::{
    AdmissionThresholds, MovingAverageRatio, PercentileRatio, ProportionalCeiling, ThresholdError, ThresholdParam,
    MAX_BASELINE_WINDOWS, MAX_SECS,
};
