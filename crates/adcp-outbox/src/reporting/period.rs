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
        let monthly = match self.frequency {
            Frequency::Hourly => return self.hour_containing(at_ms),
            Frequency::Daily => false,
            Frequency::Monthly => true,
        };
        let start = self.day_or_month_start(at_ms, monthly)?;
        let end = self.day_or_month_after(start, monthly)?;
        Ok(Period {
            start_ms: start,
            end_ms: end,
        })
    }

    /// The period after `period`: it starts where `period` ends.
    ///
    /// # Errors
    ///
    /// As [`period_containing`](Self::period_containing), and
    /// `invalid_registration` should the calendar ever fail to move
    /// forward (a stream must never report one period twice).
    pub fn next(&self, period: Period) -> Result<Period, ReportingError> {
        let next = self.period_containing(period.end_ms)?;
        if next.start_ms != period.end_ms || next.end_ms <= next.start_ms {
            return Err(ReportingError::InvalidRegistration(format!(
                "the {} calendar in {} does not move past {} ms",
                self.frequency.as_str(),
                self.zone_name,
                period.end_ms
            )));
        }
        Ok(next)
    }

    fn zoned(&self, at_ms: i64) -> Result<Zoned, ReportingError> {
        Timestamp::from_millisecond(at_ms)
            .map(|t| t.to_zoned(self.zone.clone()))
            .map_err(|_| out_of_range(at_ms))
    }

    fn offset_ms(&self, at_ms: i64) -> Result<i64, ReportingError> {
        let at = Timestamp::from_millisecond(at_ms).map_err(|_| out_of_range(at_ms))?;
        Ok(i64::from(self.zone.to_offset(at).seconds()) * 1000)
    }

    /// The local hour holding `at_ms`, cut at the zone's offset changes.
    ///
    /// Truncating the local time to its hour is arithmetic on the
    /// instant's own offset. Where the offset changes inside that hour
    /// (by a fraction of an hour in Lord Howe, or at a fall-back), the
    /// change itself is a boundary: the truncation alone would give two
    /// instants of one offset region the same "hour" on different sides
    /// of the change, and the next period would start before the last
    /// one ended.
    fn hour_containing(&self, at_ms: i64) -> Result<Period, ReportingError> {
        const HOUR_MS: i64 = 3_600_000;
        let offset = self.offset_ms(at_ms)?;
        let into_hour = at_ms
            .checked_add(offset)
            .ok_or_else(|| out_of_range(at_ms))?
            .rem_euclid(HOUR_MS);
        let hour_start = at_ms - into_hour;
        let hour_end = hour_start.checked_add(HOUR_MS).ok_or_else(|| out_of_range(at_ms))?;
        let at = Timestamp::from_millisecond(at_ms).map_err(|_| out_of_range(at_ms))?;
        let start_ms = if self.offset_ms(hour_start)? == offset {
            hour_start
        } else {
            // The offset changed between the hour's start and `at_ms`: the
            // latest change at or before `at_ms` starts the period.
            self.zone
                .preceding(
                    at.checked_add(jiff::SignedDuration::from_millis(1))
                        .map_err(|_| out_of_range(at_ms))?,
                )
                .next()
                .map_or(hour_start, |t| t.timestamp().as_millisecond().max(hour_start))
        };
        let end_ms = if self.offset_ms(hour_end)? == offset {
            hour_end
        } else {
            self.zone
                .following(at)
                .next()
                .map_or(hour_end, |t| t.timestamp().as_millisecond().min(hour_end))
        };
        Ok(Period { start_ms, end_ms })
    }

    /// The start of the local day (or, `monthly`, month) holding `at_ms`.
    fn day_or_month_start(&self, at_ms: i64, monthly: bool) -> Result<i64, ReportingError> {
        let z = self.zoned(at_ms)?;
        let start = if monthly {
            z.first_of_month().and_then(|m| m.start_of_day())
        } else {
            z.start_of_day()
        }
        .map_err(|_| out_of_range(at_ms))?;
        Ok(start.timestamp().as_millisecond())
    }

    /// The start of the local day (or, `monthly`, month) after the one
    /// starting at `start_ms`.
    fn day_or_month_after(&self, start_ms: i64, monthly: bool) -> Result<i64, ReportingError> {
        let date = self.zoned(start_ms)?.date();
        let last = if monthly { date.last_of_month() } else { date };
        let end = last
            .tomorrow()
            .and_then(|d| d.to_zoned(self.zone.clone()))
            .and_then(|d| d.start_of_day())
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
    fn half_hour_offset_changes_cut_the_hour_and_the_periods_stay_contiguous() {
        let c = Calendar::new("Australia/Lord_Howe", Frequency::Hourly).unwrap();
        // 2026-04-05 02:00 +11:00 falls back to 01:30 +10:30 (15:00Z).
        let p = c.period_containing(ms("2026-04-04T14:45:00Z")).unwrap();
        assert_eq!(
            (p.start_ms, p.end_ms),
            (ms("2026-04-04T14:00:00Z"), ms("2026-04-04T15:00:00Z"))
        );
        let q = c.next(p).unwrap();
        assert_eq!(
            (q.start_ms, q.end_ms),
            (ms("2026-04-04T15:00:00Z"), ms("2026-04-04T15:30:00Z"))
        );
        assert_eq!(c.period_containing(ms("2026-04-04T15:10:00Z")).unwrap(), q);
        let r = c.next(q).unwrap();
        assert_eq!(
            (r.start_ms, r.end_ms),
            (ms("2026-04-04T15:30:00Z"), ms("2026-04-04T16:30:00Z"))
        );
        // 2026-10-04 02:00 +10:30 springs forward to 02:30 +11:00 (15:30Z).
        let s = c.period_containing(ms("2026-10-03T15:10:00Z")).unwrap();
        assert_eq!(
            (s.start_ms, s.end_ms),
            (ms("2026-10-03T14:30:00Z"), ms("2026-10-03T15:30:00Z"))
        );
        let t = c.next(s).unwrap();
        assert_eq!(
            (t.start_ms, t.end_ms),
            (ms("2026-10-03T15:30:00Z"), ms("2026-10-03T16:00:00Z"))
        );
    }

    proptest::proptest! {
        #[test]
        fn every_instant_is_in_exactly_one_period_and_next_starts_where_the_last_ended(
            zone in proptest::sample::select(vec![
                "UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
                "Europe/London", "Pacific/Chatham", "America/St_Johns", "Asia/Kathmandu",
            ]),
            frequency in proptest::sample::select(Frequency::ALL.to_vec()),
            // 2000-01-01 .. 2040-01-01
            at in 946_684_800_000_i64..2_208_988_800_000_i64,
        ) {
            let c = Calendar::new(zone, frequency).unwrap();
            let p = c.period_containing(at).unwrap();
            proptest::prop_assert!(p.start_ms <= at && at < p.end_ms, "{p:?} misses {at}");
            proptest::prop_assert_eq!(c.period_containing(p.start_ms).unwrap(), p);
            proptest::prop_assert_eq!(c.period_containing(p.end_ms - 1).unwrap(), p);
            let q = c.next(p).unwrap();
            proptest::prop_assert_eq!(q.start_ms, p.end_ms);
            let longest = match frequency {
                Frequency::Hourly => 3_600_000,
                Frequency::Daily => 26 * 3_600_000,
                Frequency::Monthly => 32 * 24 * 3_600_000,
            };
            proptest::prop_assert!(q.end_ms > q.start_ms && q.end_ms - q.start_ms <= longest);
        }
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
