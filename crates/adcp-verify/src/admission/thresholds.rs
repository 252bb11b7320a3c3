//! The tunable parameters of the four admission-pressure clauses.

use super::window::SUB_BUCKETS;
use std::fmt;

/// Longest window, horizon or unique-keyid window accepted: 10 years.
pub const MAX_SECS: u64 = 10 * 365 * 86_400;

/// Most baseline windows one clause may keep (`horizon_secs / window_secs`);
/// bounds each ring buffer to `10 × (MAX_BASELINE_WINDOWS + 1)` counters.
pub const MAX_BASELINE_WINDOWS: u64 = 60_000;

/// Clause (a): the new-keyid count in a short rolling window against
/// `ratio ×` the moving average of that count over a short horizon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MovingAverageRatio {
    /// Length of the rolling observation window, in seconds (a positive
    /// multiple of 10: the rolling window advances in tenths).
    pub window_secs: u64,
    /// Baseline horizon, in seconds: the average is taken over the
    /// `horizon_secs / window_secs` whole windows before the rolling one.
    pub horizon_secs: u64,
    /// Trip when the observed count exceeds `ratio × baseline`.
    pub ratio: f64,
    /// Smallest baseline used (new keyids per window): the effective
    /// baseline is `max(moving average, min_baseline)`, so a near-zero or
    /// not-yet-collected history does not alarm on every single new keyid.
    pub min_baseline: f64,
}

/// Clauses (b) and (c): the new-keyid count in a rolling window against
/// `ratio ×` a percentile of that count over a longer horizon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentileRatio {
    /// Length of the rolling observation window, in seconds (a positive
    /// multiple of 10).
    pub window_secs: u64,
    /// Baseline horizon, in seconds: the percentile is taken over the
    /// `horizon_secs / window_secs` whole windows before the rolling one.
    pub horizon_secs: u64,
    /// Percentile of the baseline windows (nearest rank), in `(0, 100]`.
    pub percentile: f64,
    /// Trip when the observed count exceeds `ratio × baseline`.
    pub ratio: f64,
    /// Smallest baseline used: the effective baseline is
    /// `max(percentile, min_baseline)` (the guide's "degrades gracefully to
    /// the clause (d) floor" while the horizon fills).
    pub min_baseline: f64,
}

/// Clause (d): the new-keyid count in a rolling window against
/// `max(floor, fraction × unique keyids over unique_window_secs)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProportionalCeiling {
    /// Length of the rolling observation window, in seconds (a positive
    /// multiple of 10).
    pub window_secs: u64,
    /// Absolute floor: the ceiling is never below this many new keyids.
    pub floor: u64,
    /// Fraction of the unique-keyid count (in `[0, 1]`).
    pub fraction: f64,
    /// Window over which unique keyids are counted, in seconds. It is also
    /// the monitor's memory: a keyid with no admission within this window
    /// is "previously unseen" (new) again.
    pub unique_window_secs: u64,
}

/// Identifies one threshold parameter: its name, its environment variable
/// and the tuning guide's starting value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ThresholdParam {
    /// [`MovingAverageRatio::window_secs`] of clause (a).
    AWindowSecs,
    /// [`MovingAverageRatio::horizon_secs`] of clause (a).
    AHorizonSecs,
    /// [`MovingAverageRatio::ratio`] of clause (a).
    ARatio,
    /// [`MovingAverageRatio::min_baseline`] of clause (a).
    AMinBaseline,
    /// [`PercentileRatio::window_secs`] of clause (b).
    BWindowSecs,
    /// [`PercentileRatio::horizon_secs`] of clause (b).
    BHorizonSecs,
    /// [`PercentileRatio::percentile`] of clause (b).
    BPercentile,
    /// [`PercentileRatio::ratio`] of clause (b).
    BRatio,
    /// [`PercentileRatio::min_baseline`] of clause (b).
    BMinBaseline,
    /// [`PercentileRatio::window_secs`] of clause (c).
    CWindowSecs,
    /// [`PercentileRatio::horizon_secs`] of clause (c).
    CHorizonSecs,
    /// [`PercentileRatio::percentile`] of clause (c).
    CPercentile,
    /// [`PercentileRatio::ratio`] of clause (c).
    CRatio,
    /// [`PercentileRatio::min_baseline`] of clause (c).
    CMinBaseline,
    /// [`ProportionalCeiling::window_secs`] of clause (d).
    DWindowSecs,
    /// [`ProportionalCeiling::floor`] of clause (d).
    DFloor,
    /// [`ProportionalCeiling::fraction`] of clause (d).
    DFraction,
    /// [`ProportionalCeiling::unique_window_secs`] of clause (d).
    DUniqueWindowSecs,
}

impl ThresholdParam {
    /// Every parameter, in clause order.
    pub const ALL: [Self; 18] = [
        Self::AWindowSecs,
        Self::AHorizonSecs,
        Self::ARatio,
        Self::AMinBaseline,
        Self::BWindowSecs,
        Self::BHorizonSecs,
        Self::BPercentile,
        Self::BRatio,
        Self::BMinBaseline,
        Self::CWindowSecs,
        Self::CHorizonSecs,
        Self::CPercentile,
        Self::CRatio,
        Self::CMinBaseline,
        Self::DWindowSecs,
        Self::DFloor,
        Self::DFraction,
        Self::DUniqueWindowSecs,
    ];

    /// The parameter's name, e.g. `"a_ratio"` (used in
    /// `threshold_tuning_overdue` events).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::AWindowSecs => "a_window_secs",
            Self::AHorizonSecs => "a_horizon_secs",
            Self::ARatio => "a_ratio",
            Self::AMinBaseline => "a_min_baseline",
            Self::BWindowSecs => "b_window_secs",
            Self::BHorizonSecs => "b_horizon_secs",
            Self::BPercentile => "b_percentile",
            Self::BRatio => "b_ratio",
            Self::BMinBaseline => "b_min_baseline",
            Self::CWindowSecs => "c_window_secs",
            Self::CHorizonSecs => "c_horizon_secs",
            Self::CPercentile => "c_percentile",
            Self::CRatio => "c_ratio",
            Self::CMinBaseline => "c_min_baseline",
            Self::DWindowSecs => "d_window_secs",
            Self::DFloor => "d_floor",
            Self::DFraction => "d_fraction",
            Self::DUniqueWindowSecs => "d_unique_window_secs",
        }
    }

    /// The environment variable suffix, e.g. `"A_RATIO"`; the variable is
    /// `prefix + suffix` (`ADCP_ADMISSION_A_RATIO` with the prefix
    /// [`AdmissionThresholds::ENV_PREFIX`]).
    #[must_use]
    pub const fn env_suffix(self) -> &'static str {
        match self {
            Self::AWindowSecs => "A_WINDOW_SECS",
            Self::AHorizonSecs => "A_HORIZON_SECS",
            Self::ARatio => "A_RATIO",
            Self::AMinBaseline => "A_MIN_BASELINE",
            Self::BWindowSecs => "B_WINDOW_SECS",
            Self::BHorizonSecs => "B_HORIZON_SECS",
            Self::BPercentile => "B_PERCENTILE",
            Self::BRatio => "B_RATIO",
            Self::BMinBaseline => "B_MIN_BASELINE",
            Self::CWindowSecs => "C_WINDOW_SECS",
            Self::CHorizonSecs => "C_HORIZON_SECS",
            Self::CPercentile => "C_PERCENTILE",
            Self::CRatio => "C_RATIO",
            Self::CMinBaseline => "C_MIN_BASELINE",
            Self::DWindowSecs => "D_WINDOW_SECS",
            Self::DFloor => "D_FLOOR",
            Self::DFraction => "D_FRACTION",
            Self::DUniqueWindowSecs => "D_UNIQUE_WINDOW_SECS",
        }
    }

    /// The starting value from the Webhook Verifier Tuning Guide (a
    /// published, therefore attacker-known, value: tune it within 30 days).
    ///
    /// The guide gives (a) `3× the 24-hour moving average`, (b) `2× the
    /// 30-day P95`, (c) `1.5× the 90-day P99`, (d) `max(20, 10% × 30-day
    /// unique-keyid count) per 5-minute window`, and lets the ratio clauses
    /// degrade to the clause (d) floor on thin or near-zero history. It
    /// names no observation window for (b) and (c) and no floor for (a);
    /// where it is silent these values are this crate's choice, following
    /// the spec's "medium-window" and "long-window" wording: 7 days for (b)
    /// (a multi-week ramp is seen week over week against the previous four
    /// weeks) and 30 days for (c) (a multi-month ramp is seen month over
    /// month against the previous three months), and the (d) floor of 20 as
    /// every ratio clause's `min_baseline` (Scenario 4: a ratio clause must
    /// not alarm on a sparse verifier's near-zero baseline). Operators who
    /// read the guide's percentiles as per-5-minute counts (its baselining
    /// section) set `B_WINDOW_SECS` and `C_WINDOW_SECS` to 300.
    #[must_use]
    pub const fn starting_value(self) -> f64 {
        match self {
            Self::AWindowSecs | Self::DWindowSecs => 300.0,
            Self::AHorizonSecs => 86_400.0,
            Self::ARatio => 3.0,
            Self::AMinBaseline | Self::BMinBaseline | Self::CMinBaseline | Self::DFloor => 20.0,
            Self::BWindowSecs => 604_800.0,
            Self::BHorizonSecs | Self::CWindowSecs | Self::DUniqueWindowSecs => 2_592_000.0,
            Self::BPercentile => 95.0,
            Self::BRatio => 2.0,
            Self::CHorizonSecs => 7_776_000.0,
            Self::CPercentile => 99.0,
            Self::CRatio => 1.5,
            Self::DFraction => 0.10,
        }
    }

    /// Whether the parameter takes whole numbers (seconds, the floor).
    #[must_use]
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            Self::AWindowSecs
                | Self::AHorizonSecs
                | Self::BWindowSecs
                | Self::BHorizonSecs
                | Self::CWindowSecs
                | Self::CHorizonSecs
                | Self::DWindowSecs
                | Self::DFloor
                | Self::DUniqueWindowSecs
        )
    }

    const fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for ThresholdParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a set of thresholds was refused.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ThresholdError {
    /// Required environment variables are absent (strict loading).
    Missing {
        /// The absent variable names.
        vars: Vec<String>,
    },
    /// An environment variable does not parse as a number of the right kind.
    Unparsable {
        /// The variable name.
        var: String,
        /// Its value.
        value: String,
    },
    /// A value is out of range.
    Invalid {
        /// The parameter.
        param: ThresholdParam,
        /// The refused value.
        value: f64,
        /// What the parameter requires.
        reason: &'static str,
    },
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { vars } => write!(f, "admission thresholds: missing {}", vars.join(", ")),
            Self::Unparsable { var, value } => write!(f, "admission thresholds: {var}={value:?} is not a valid number"),
            Self::Invalid { param, value, reason } => {
                write!(f, "admission thresholds: {param}={value} is invalid: {reason}")
            }
        }
    }
}

impl std::error::Error for ThresholdError {}

/// The thresholds of the four new-keyid admission-pressure clauses.
///
/// There is deliberately no `Default`: published values are an attacker
/// oracle, so every value is either given explicitly
/// ([`new`](Self::new), [`set`](Self::set)), read from the environment
/// ([`from_env`](Self::from_env)), or taken from the tuning guide by the
/// explicitly named [`tuning_guide_starting_values`](Self::tuning_guide_starting_values)
/// (also the fallback of
/// [`from_env_or_starting_values`](Self::from_env_or_starting_values)).
/// The thresholds remember which parameters hold a shipped starting value;
/// the [`AdmissionMonitor`](super::AdmissionMonitor) raises
/// `threshold_tuning_overdue` for those 30 days after the first admission.
///
/// ```
/// use adcp_verify::admission::{AdmissionThresholds, ThresholdParam};
///
/// // Environment (here a map) with two tuned values; the rest fall back to
/// // the guide's starting values and stay flagged as such.
/// let env = std::collections::HashMap::from([
///     ("ADCP_ADMISSION_A_RATIO", "4.5"),
///     ("ADCP_ADMISSION_D_FLOOR", "12"),
/// ]);
/// let thresholds = AdmissionThresholds::from_lookup_or_starting_values(
///     AdmissionThresholds::ENV_PREFIX,
///     |name| env.get(name).map(|v| v.to_string()),
/// )?;
/// assert_eq!(thresholds.d().floor, 12);
/// assert!(!thresholds.is_shipped_starting_value(ThresholdParam::ARatio));
/// assert!(thresholds.is_shipped_starting_value(ThresholdParam::BRatio));
///
/// // Strict loading names every missing variable instead.
/// assert!(AdmissionThresholds::from_lookup("ADCP_ADMISSION_", |name| env.get(name).map(|v| v.to_string())).is_err());
/// # Ok::<(), adcp_verify::admission::ThresholdError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionThresholds {
    a: MovingAverageRatio,
    b: PercentileRatio,
    c: PercentileRatio,
    d: ProportionalCeiling,
    /// Bit set of [`ThresholdParam`]s holding a shipped starting value.
    shipped: u32,
}

impl AdmissionThresholds {
    /// The conventional environment-variable prefix, `ADCP_ADMISSION_`.
    pub const ENV_PREFIX: &'static str = "ADCP_ADMISSION_";

    /// Explicit thresholds for the four clauses (none of them counts as a
    /// shipped starting value, even when equal to one).
    ///
    /// # Errors
    ///
    /// [`ThresholdError::Invalid`] when a value is out of range: windows must
    /// be positive multiples of 10 s, horizons at least one window and at most
    /// [`MAX_BASELINE_WINDOWS`] windows, ratios positive, percentiles in
    /// `(0, 100]`, baselines non-negative, the fraction in `[0, 1]`, every
    /// duration at most [`MAX_SECS`].
    pub fn new(
        a: MovingAverageRatio,
        b: PercentileRatio,
        c: PercentileRatio,
        d: ProportionalCeiling,
    ) -> Result<Self, ThresholdError> {
        let thresholds = Self { a, b, c, d, shipped: 0 };
        thresholds.validate()?;
        Ok(thresholds)
    }

    /// The Webhook Verifier Tuning Guide's **starting values** (see
    /// [`ThresholdParam::starting_value`]), every parameter marked as a
    /// shipped starting value.
    ///
    /// These numbers are published and therefore known to attackers. Use
    /// them for a first deployment only, baseline your own traffic and tune
    /// every parameter within 30 days; until then the monitor emits
    /// `threshold_tuning_overdue` daily for each untuned parameter.
    #[must_use]
    pub fn tuning_guide_starting_values() -> Self {
        let v = ThresholdParam::starting_value;
        let secs = |p: ThresholdParam| v(p) as u64;
        Self {
            a: MovingAverageRatio {
                window_secs: secs(ThresholdParam::AWindowSecs),
                horizon_secs: secs(ThresholdParam::AHorizonSecs),
                ratio: v(ThresholdParam::ARatio),
                min_baseline: v(ThresholdParam::AMinBaseline),
            },
            b: PercentileRatio {
                window_secs: secs(ThresholdParam::BWindowSecs),
                horizon_secs: secs(ThresholdParam::BHorizonSecs),
                percentile: v(ThresholdParam::BPercentile),
                ratio: v(ThresholdParam::BRatio),
                min_baseline: v(ThresholdParam::BMinBaseline),
            },
            c: PercentileRatio {
                window_secs: secs(ThresholdParam::CWindowSecs),
                horizon_secs: secs(ThresholdParam::CHorizonSecs),
                percentile: v(ThresholdParam::CPercentile),
                ratio: v(ThresholdParam::CRatio),
                min_baseline: v(ThresholdParam::CMinBaseline),
            },
            d: ProportionalCeiling {
                window_secs: secs(ThresholdParam::DWindowSecs),
                floor: secs(ThresholdParam::DFloor),
                fraction: v(ThresholdParam::DFraction),
                unique_window_secs: secs(ThresholdParam::DUniqueWindowSecs),
            },
            shipped: ThresholdParam::ALL.iter().fold(0, |bits, p| bits | p.bit()),
        }
    }

    /// Reads every parameter from the environment: `prefix` followed by
    /// [`ThresholdParam::env_suffix`], e.g. with [`Self::ENV_PREFIX`]:
    ///
    /// `ADCP_ADMISSION_A_WINDOW_SECS`, `_A_HORIZON_SECS`, `_A_RATIO`,
    /// `_A_MIN_BASELINE`, `_B_WINDOW_SECS`, `_B_HORIZON_SECS`,
    /// `_B_PERCENTILE`, `_B_RATIO`, `_B_MIN_BASELINE`, `_C_WINDOW_SECS`,
    /// `_C_HORIZON_SECS`, `_C_PERCENTILE`, `_C_RATIO`, `_C_MIN_BASELINE`,
    /// `_D_WINDOW_SECS`, `_D_FLOOR`, `_D_FRACTION`, `_D_UNIQUE_WINDOW_SECS`.
    ///
    /// Seconds and the floor are unsigned integers; the rest are decimals.
    ///
    /// # Errors
    ///
    /// [`ThresholdError::Missing`] naming every absent variable,
    /// [`ThresholdError::Unparsable`] or [`ThresholdError::Invalid`].
    pub fn from_env(prefix: &str) -> Result<Self, ThresholdError> {
        Self::from_lookup(prefix, |name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), but an absent variable takes the
    /// tuning guide's starting value and is marked as a shipped starting
    /// value (so `threshold_tuning_overdue` fires for it after 30 days). A
    /// present but invalid variable is still an error, never a fallback.
    ///
    /// # Errors
    ///
    /// [`ThresholdError::Unparsable`] or [`ThresholdError::Invalid`].
    pub fn from_env_or_starting_values(prefix: &str) -> Result<Self, ThresholdError> {
        Self::from_lookup_or_starting_values(prefix, |name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) with a custom variable source (a config
    /// file, or a map in tests).
    ///
    /// # Errors
    ///
    /// As [`from_env`](Self::from_env).
    pub fn from_lookup(prefix: &str, lookup: impl FnMut(&str) -> Option<String>) -> Result<Self, ThresholdError> {
        Self::load(prefix, lookup, false)
    }

    /// [`from_env_or_starting_values`](Self::from_env_or_starting_values)
    /// with a custom variable source.
    ///
    /// # Errors
    ///
    /// As [`from_env_or_starting_values`](Self::from_env_or_starting_values).
    pub fn from_lookup_or_starting_values(
        prefix: &str,
        lookup: impl FnMut(&str) -> Option<String>,
    ) -> Result<Self, ThresholdError> {
        Self::load(prefix, lookup, true)
    }

    fn load(
        prefix: &str,
        mut lookup: impl FnMut(&str) -> Option<String>,
        fallback: bool,
    ) -> Result<Self, ThresholdError> {
        let mut thresholds = Self::tuning_guide_starting_values();
        let mut missing = Vec::new();
        for param in ThresholdParam::ALL {
            let var = format!("{prefix}{}", param.env_suffix());
            match lookup(&var) {
                Some(raw) => {
                    let text = raw.trim();
                    let value = if param.is_integer() {
                        text.parse::<u64>().ok().map(|v| v as f64)
                    } else {
                        text.parse::<f64>().ok()
                    };
                    let Some(value) = value else {
                        return Err(ThresholdError::Unparsable { var, value: raw });
                    };
                    thresholds.put(param, value)?;
                    thresholds.shipped &= !param.bit();
                }
                None if fallback => {}
                None => missing.push(var),
            }
        }
        if !missing.is_empty() {
            return Err(ThresholdError::Missing { vars: missing });
        }
        thresholds.validate()?;
        Ok(thresholds)
    }

    /// Clause (a) parameters.
    #[must_use]
    pub fn a(&self) -> &MovingAverageRatio {
        &self.a
    }

    /// Clause (b) parameters.
    #[must_use]
    pub fn b(&self) -> &PercentileRatio {
        &self.b
    }

    /// Clause (c) parameters.
    #[must_use]
    pub fn c(&self) -> &PercentileRatio {
        &self.c
    }

    /// Clause (d) parameters.
    #[must_use]
    pub fn d(&self) -> &ProportionalCeiling {
        &self.d
    }

    /// The current value of `param` (seconds and the floor as whole numbers).
    #[must_use]
    pub fn get(&self, param: ThresholdParam) -> f64 {
        match param {
            ThresholdParam::AWindowSecs => self.a.window_secs as f64,
            ThresholdParam::AHorizonSecs => self.a.horizon_secs as f64,
            ThresholdParam::ARatio => self.a.ratio,
            ThresholdParam::AMinBaseline => self.a.min_baseline,
            ThresholdParam::BWindowSecs => self.b.window_secs as f64,
            ThresholdParam::BHorizonSecs => self.b.horizon_secs as f64,
            ThresholdParam::BPercentile => self.b.percentile,
            ThresholdParam::BRatio => self.b.ratio,
            ThresholdParam::BMinBaseline => self.b.min_baseline,
            ThresholdParam::CWindowSecs => self.c.window_secs as f64,
            ThresholdParam::CHorizonSecs => self.c.horizon_secs as f64,
            ThresholdParam::CPercentile => self.c.percentile,
            ThresholdParam::CRatio => self.c.ratio,
            ThresholdParam::CMinBaseline => self.c.min_baseline,
            ThresholdParam::DWindowSecs => self.d.window_secs as f64,
            ThresholdParam::DFloor => self.d.floor as f64,
            ThresholdParam::DFraction => self.d.fraction,
            ThresholdParam::DUniqueWindowSecs => self.d.unique_window_secs as f64,
        }
    }

    /// Sets `param` to an operator-chosen value; it no longer counts as a
    /// shipped starting value.
    ///
    /// # Errors
    ///
    /// [`ThresholdError::Invalid`] when the value (or the resulting set of
    /// thresholds) is out of range; `self` is then unchanged.
    pub fn set(&mut self, param: ThresholdParam, value: f64) -> Result<(), ThresholdError> {
        let mut next = self.clone();
        next.put(param, value)?;
        next.shipped &= !param.bit();
        next.validate()?;
        *self = next;
        Ok(())
    }

    /// [`set`](Self::set), by value.
    ///
    /// # Errors
    ///
    /// As [`set`](Self::set).
    pub fn with(mut self, param: ThresholdParam, value: f64) -> Result<Self, ThresholdError> {
        self.set(param, value)?;
        Ok(self)
    }

    /// Whether `param` still holds a shipped starting value (from
    /// [`tuning_guide_starting_values`](Self::tuning_guide_starting_values)
    /// or an absent environment variable).
    #[must_use]
    pub fn is_shipped_starting_value(&self, param: ThresholdParam) -> bool {
        self.shipped & param.bit() != 0
    }

    /// The parameters still holding a shipped starting value.
    pub fn shipped_starting_values(&self) -> impl Iterator<Item = ThresholdParam> + '_ {
        ThresholdParam::ALL
            .into_iter()
            .filter(|&p| self.is_shipped_starting_value(p))
    }

    /// Stores `value` without validation beyond its own kind.
    fn put(&mut self, param: ThresholdParam, value: f64) -> Result<(), ThresholdError> {
        let invalid = |reason| ThresholdError::Invalid { param, value, reason };
        if !value.is_finite() {
            return Err(invalid("must be a finite number"));
        }
        let whole = || -> Result<u64, ThresholdError> {
            if value < 0.0 || value.fract() != 0.0 || value > MAX_SECS as f64 {
                return Err(invalid("must be a whole number between 0 and 315360000"));
            }
            Ok(value as u64)
        };
        match param {
            ThresholdParam::AWindowSecs => self.a.window_secs = whole()?,
            ThresholdParam::AHorizonSecs => self.a.horizon_secs = whole()?,
            ThresholdParam::ARatio => self.a.ratio = value,
            ThresholdParam::AMinBaseline => self.a.min_baseline = value,
            ThresholdParam::BWindowSecs => self.b.window_secs = whole()?,
            ThresholdParam::BHorizonSecs => self.b.horizon_secs = whole()?,
            ThresholdParam::BPercentile => self.b.percentile = value,
            ThresholdParam::BRatio => self.b.ratio = value,
            ThresholdParam::BMinBaseline => self.b.min_baseline = value,
            ThresholdParam::CWindowSecs => self.c.window_secs = whole()?,
            ThresholdParam::CHorizonSecs => self.c.horizon_secs = whole()?,
            ThresholdParam::CPercentile => self.c.percentile = value,
            ThresholdParam::CRatio => self.c.ratio = value,
            ThresholdParam::CMinBaseline => self.c.min_baseline = value,
            ThresholdParam::DWindowSecs => self.d.window_secs = whole()?,
            ThresholdParam::DFloor => self.d.floor = whole()?,
            ThresholdParam::DFraction => self.d.fraction = value,
            ThresholdParam::DUniqueWindowSecs => self.d.unique_window_secs = whole()?,
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ThresholdError> {
        use ThresholdParam as P;
        let check = |param: P, ok: bool, reason: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(ThresholdError::Invalid {
                    param,
                    value: self.get(param),
                    reason,
                })
            }
        };
        let window_ok = |w: u64| w > 0 && w % SUB_BUCKETS == 0 && w <= MAX_SECS;
        let horizon_ok = |h: u64, w: u64| h >= w && h <= MAX_SECS && w > 0 && h / w <= MAX_BASELINE_WINDOWS;
        let ratio_ok = |r: f64| r.is_finite() && r > 0.0;
        let baseline_ok = |b: f64| b.is_finite() && b >= 0.0;
        let percentile_ok = |p: f64| p.is_finite() && p > 0.0 && p <= 100.0;
        const WINDOW: &str = "must be a positive multiple of 10 seconds, at most 10 years";
        const HORIZON: &str = "must be at least one window, at most 10 years and 60000 windows";
        const RATIO: &str = "must be a positive finite number";
        const BASELINE: &str = "must be a non-negative finite number";
        const PERCENTILE: &str = "must be in (0, 100]";

        check(P::AWindowSecs, window_ok(self.a.window_secs), WINDOW)?;
        check(
            P::AHorizonSecs,
            horizon_ok(self.a.horizon_secs, self.a.window_secs),
            HORIZON,
        )?;
        check(P::ARatio, ratio_ok(self.a.ratio), RATIO)?;
        check(P::AMinBaseline, baseline_ok(self.a.min_baseline), BASELINE)?;
        for (p, params) in [
            (
                [
                    P::BWindowSecs,
                    P::BHorizonSecs,
                    P::BPercentile,
                    P::BRatio,
                    P::BMinBaseline,
                ],
                &self.b,
            ),
            (
                [
                    P::CWindowSecs,
                    P::CHorizonSecs,
                    P::CPercentile,
                    P::CRatio,
                    P::CMinBaseline,
                ],
                &self.c,
            ),
        ] {
            let [window, horizon, percentile, ratio, baseline] = p;
            check(window, window_ok(params.window_secs), WINDOW)?;
            check(horizon, horizon_ok(params.horizon_secs, params.window_secs), HORIZON)?;
            check(percentile, percentile_ok(params.percentile), PERCENTILE)?;
            check(ratio, ratio_ok(params.ratio), RATIO)?;
            check(baseline, baseline_ok(params.min_baseline), BASELINE)?;
        }
        check(P::DWindowSecs, window_ok(self.d.window_secs), WINDOW)?;
        check(P::DFloor, self.d.floor <= MAX_SECS, "must be at most 315360000")?;
        check(
            P::DFraction,
            self.d.fraction.is_finite() && (0.0..=1.0).contains(&self.d.fraction),
            "must be in [0, 1]",
        )?;
        check(
            P::DUniqueWindowSecs,
            self.d.unique_window_secs > 0 && self.d.unique_window_secs <= MAX_SECS,
            "must be positive, at most 10 years",
        )?;
        Ok(())
    }
}
