//! Reporting periods: the boundaries of `hourly`, `daily` and `monthly`
//! periods in a buy's reporting timezone.
//!
//! The schemas put a period's `start` and `end` on the reporting
//! timezone's boundaries (`reporting_period.timezone`, the products'
//! `reporting_capabilities.timezone`), so a `daily` period in
//! `America/New_York` runs from local midnight to local midnight: 23 or
//! 25 hours across a DST change. An `hourly` period runs from one local
//! hour boundary to the next; where a zone's offset moves by a fraction
//! of an hour, the period that straddles the change is shortened to the
//! next boundary rather than skipped.

use super::error::ReportingError;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// How often a stream reports (`reporting_webhook.reporting_frequency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Frequency {
    /// One period per local hour.
    Hourly,
    /// One period per local day.
    Daily,
    /// One period per calendar month.
    Monthly,
}

impl Frequency {
    /// Every frequency.
    pub const ALL: [Self; 3] = [Self::Hourly, Self::Daily, Self::Monthly];

    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Hourly => "hourly",
            Self::Daily => "daily",
            Self::Monthly => "monthly",
        }
    }

    /// Reads the wire spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// One reporting period, `[start, end)` in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Period {
    /// Its first instant.
    pub start_ms: i64,
    /// The first instant after it (the next period's start).
    pub end_ms: i64,
}

/// The period boundaries of one frequency in one timezone.
#[derive(Debug, Clone)]
pub struct Calendar {
    zone: TimeZone,
    zone_name: String,
    frequency: Frequency,
}

impl PartialEq for Calendar {
    fn eq(&self, other: &Self) -> bool {
        self.zone_name == other.zone_name && self.frequency == other.frequency
    }
}

impl Calendar {
    /// Periods of `frequency` in `timezone` (`UTC` or an IANA name, read
    /// from the bundled time zone database).
    ///
    /// # Errors
    ///
    /// `unknown_timezone`.
    pub fn new(timezone: &str, frequency: Frequency) -> Result<Self, ReportingError> {
        let zone = if timezone == "UTC" {
            TimeZone::UTC
        } else {
            TimeZone::get(timezone).map_err(|_| ReportingError::UnknownTimezone(timezone.to_owned()))?
        };
        Ok(Self {
            zone,
            zone_name: timezone.to_owned(),
            frequency,
        })
    }

    /// The timezone's name as given.
    #[must_use]
    pub fn timezone(&self) -> &str {
        &self.zone_name
    }

    /// The frequency.
    #[must_use]
    pub const fn frequency(&self) -> Frequency {
        self.frequency
    }

    /// The period holding the instant `at_ms`.
    ///
    /// # Errors
    ///
    /// `invalid_registration` for an instant outside the years the
    /// calendar covers (-9999 to 9999).
    pub fn period_containing(&self, at_ms: i64) -> Result<Period, ReportingError> {
        let start = self.boundary_at_or_before(at_ms)?;
        let end = self.boundary_after(start)?;
        Ok(Period {
            start_ms: start,
            end_ms: end,
        })
    }

    /// The period after `period`.
    ///
    /// # Errors
    ///
    /// As [`period_containing`](Self::period_containing).
    pub fn next(&self, period: Period) -> Result<Period, ReportingError> {
        self.period_containing(period.end_ms)
    }

    fn zoned(&self, at_ms: i64) -> Result<Zoned, ReportingError> {
        Timestamp::from_millisecond(at_ms)
            .map(|t| t.to_zoned(self.zone.clone()))
            .map_err(|_| out_of_range(at_ms))
    }

    /// The latest boundary at or before `at_ms`.
    fn boundary_at_or_before(&self, at_ms: i64) -> Result<i64, ReportingError> {
        let z = self.zoned(at_ms)?;
        let start = match self.frequency {
            // The builder keeps the instant's offset when the local time
            // is ambiguous, so the second 01:xx of a fall-back night
            // truncates to its own 01:00.
            Frequency::Hourly => z.with().minute(0).second(0).subsec_nanosecond(0).build(),
            Frequency::Daily => z.start_of_day(),
            Frequency::Monthly => z.first_of_month().and_then(|m| m.start_of_day()),
        }
        .map_err(|_| out_of_range(at_ms))?;
        Ok(start.timestamp().as_millisecond())
    }

    /// The first boundary after the boundary `start_ms`.
    fn boundary_after(&self, start_ms: i64) -> Result<i64, ReportingError> {
        const HOUR_MS: i64 = 3_600_000;
        let end = match self.frequency {
            Frequency::Hourly => {
                let next = self.boundary_at_or_before(start_ms.saturating_add(HOUR_MS))?;
                // An offset that moved back by a fraction of an hour can
                // put the truncation at or before the start.
                return Ok(if next > start_ms {
                    next
                } else {
                    start_ms.saturating_add(HOUR_MS)
                });
            }
            Frequency::Daily => {
                let z = self.zoned(start_ms)?;
                z.date()
                    .tomorrow()
                    .and_then(|d| d.to_zoned(self.zone.clone()))
                    .and_then(|d| d.start_of_day())
            }
            Frequency::Monthly => {
                let z = self.zoned(start_ms)?;
                z.date()
                    .last_of_month()
                    .tomorrow()
                    .and_then(|d| d.to_zoned(self.zone.clone()))
                    .and_then(|d| d.start_of_day())
            }
        }
        .map_err(|_| out_of_range(start_ms))?;
        Ok(end.timestamp().as_millisecond())
    }
}

fn out_of_range(at_ms: i64) -> ReportingError {
    ReportingError::InvalidRegistration(format!("instant {at_ms} ms is outside the calendar's range"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ms(rfc3339: &str) -> i64 {
        rfc3339.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn a_daily_period_runs_from_local_midnight_to_local_midnight() {
        let c = Calendar::new("America/New_York", Frequency::Daily).unwrap();
        let p = c.period_containing(ms("2026-03-08T12:00:00Z")).unwrap();
        // The spring-forward day is 23 hours long.
        assert_eq!(p.start_ms, ms("2026-03-08T05:00:00Z"));
        assert_eq!(p.end_ms, ms("2026-03-09T04:00:00Z"));
        let fall = c.period_containing(ms("2026-11-01T12:00:00Z")).unwrap();
        assert_eq!(fall.end_ms - fall.start_ms, 25 * 3_600_000);
    }

    #[test]
    fn hourly_periods_follow_local_hours_including_half_hour_zones_and_fall_back() {
        let india = Calendar::new("Asia/Kolkata", Frequency::Hourly).unwrap();
        let p = india.period_containing(ms("2026-01-01T00:10:00Z")).unwrap();
        assert_eq!(p.start_ms, ms("2025-12-31T23:30:00Z"));
        assert_eq!(p.end_ms, ms("2026-01-01T00:30:00Z"));
        let ny = Calendar::new("America/New_York", Frequency::Hourly).unwrap();
        // 2026-11-01 01:30 occurs twice in New York: both hours are periods.
        let first = ny.period_containing(ms("2026-11-01T05:30:00Z")).unwrap();
        let second = ny.next(first).unwrap();
        assert_eq!(first.start_ms, ms("2026-11-01T05:00:00Z"));
        assert_eq!(second.start_ms, ms("2026-11-01T06:00:00Z"));
        assert_eq!(second.end_ms, ms("2026-11-01T07:00:00Z"));
    }

    #[test]
    fn monthly_periods_follow_the_calendar() {
        let c = Calendar::new("UTC", Frequency::Monthly).unwrap();
        let feb = c.period_containing(ms("2028-02-15T00:00:00Z")).unwrap();
        assert_eq!(feb.start_ms, ms("2028-02-01T00:00:00Z"));
        assert_eq!(feb.end_ms, ms("2028-03-01T00:00:00Z"));
    }

    #[test]
    fn an_unknown_timezone_is_refused() {
        assert!(matches!(
            Calendar::new("Mars/Olympus", Frequency::Daily),
            Err(ReportingError::UnknownTimezone(_))
        ));
        assert!(Calendar::new("UTC", Frequency::Daily)
            .unwrap()
            .period_containing(i64::MAX)
            .is_err());
    }
}
