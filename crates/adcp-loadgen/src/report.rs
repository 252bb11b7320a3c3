//! The result of a run: totals, latency, statuses, rejection codes, the
//! time series, the accounting against the sink, and verdicts. Rendered as
//! text, Markdown or JSON.

use crate::plan::Kind;
use crate::run::{Pace, RunOptions, Stats};
use crate::sink::SinkStats;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The codes a tampered body may be rejected with.
pub const TAMPER_CODES: [&str; 2] = ["webhook_signature_digest_mismatch", "webhook_signature_invalid"];

/// Largest RSS drift (max / min − 1) over the samples after the first.
pub const RSS_DRIFT_LIMIT: f64 = 0.10;

/// One sampling interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// End of the interval, seconds since the timed phase started.
    pub t_secs: f64,
    /// Requests answered (or failed) in the interval.
    pub requests: u64,
    /// `requests` / interval length.
    pub requests_per_sec: f64,
    /// Median latency in the interval.
    pub p50_ms: f64,
    /// 99th percentile latency in the interval.
    pub p99_ms: f64,
    /// Slowest request in the interval.
    pub max_ms: f64,
    /// Transport errors and timeouts in the interval.
    pub errors: u64,
    /// Largest delay between a job's scheduled time and its pickup by a
    /// worker (paced runs).
    pub behind_max_ms: f64,
    /// RSS of each watched process at the end of the interval, KiB.
    pub rss_kib: Vec<Option<u64>>,
}

impl Interval {
    /// One line for a terminal.
    #[must_use]
    pub fn render_line(&self) -> String {
        let rss: Vec<String> = self
            .rss_kib
            .iter()
            .map(|r| r.map_or_else(|| "-".to_owned(), |kb| format!("{:.1} MiB", kb as f64 / 1024.0)))
            .collect();
        format!(
            "t={:>6.1}s  {:>8.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.1} ms  errors {}  behind {:.1} ms{}",
            self.t_secs,
            self.requests_per_sec,
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.errors,
            self.behind_max_ms,
            if rss.is_empty() {
                String::new()
            } else {
                format!("  rss {}", rss.join(" / "))
            }
        )
    }
}

/// Latency over the whole run, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// What one kind of request got back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindReport {
    /// Requests sent.
    pub sent: u64,
    /// Answers by status (`"200"`, `"401"`, …, `"error"`, `"timeout"`).
    pub statuses: BTreeMap<String, u64>,
    /// Rejection codes from `WWW-Authenticate`.
    pub codes: BTreeMap<String, u64>,
}

/// How well a paced run kept its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Schedule {
    /// The rate asked for.
    pub offered_rate: f64,
    /// 99th percentile of (pickup − scheduled time).
    pub behind_p99_ms: f64,
    /// Largest (pickup − scheduled time).
    pub behind_max_ms: f64,
    /// (pickup − scheduled time) of the last request.
    pub behind_at_end_ms: f64,
    /// Requests never sent because the run fell more than the grace period
    /// behind.
    pub not_sent: u64,
}

/// RSS of one watched process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RssReport {
    /// The process.
    pub pid: u32,
    /// Before the timed phase, KiB.
    pub start_kib: Option<u64>,
    /// After it, KiB.
    pub end_kib: Option<u64>,
    /// Smallest sample after the first interval (warm-up), KiB.
    pub min_kib: Option<u64>,
    /// Largest sample after the first interval, KiB.
    pub max_kib: Option<u64>,
    /// `max / min − 1` over those samples.
    pub drift: Option<f64>,
    /// Samples the drift is computed over.
    pub samples: usize,
}

/// Expected against actual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// Distinct valid events sent (first deliveries).
    pub unique_valid_events: u64,
    /// Valid events for which some request was answered `200`.
    pub acknowledged_events: u64,
    /// What the sink saw during the run, when `--sink` was given.
    pub sink: Option<SinkStats>,
}

/// One pass/fail check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// What is checked.
    pub name: String,
    /// Whether it held.
    pub pass: bool,
    /// The figures behind it.
    pub detail: String,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Targets.
    pub urls: Vec<String>,
    /// `rate` or `max`.
    pub mode: String,
    /// Workers (connections per URL).
    pub connections: usize,
    /// Requests signed before the timed phase, and how long that took.
    pub presigned: Option<(u64, f64)>,
    /// Length of the timed phase until the last answer, seconds.
    pub duration_secs: f64,
    /// Requests sent (answered, failed or timed out).
    pub requests: u64,
    /// `requests / duration_secs`.
    pub requests_per_sec: f64,
    /// Requests answered `2xx`.
    pub ok: u64,
    /// Transport errors and timeouts by class.
    pub errors: BTreeMap<String, u64>,
    /// Latency of every request (pickup to answer).
    pub latency: Latency,
    /// Answers by status code.
    pub statuses: BTreeMap<String, u64>,
    /// Rejection codes (`WWW-Authenticate: … error="…"`).
    pub rejection_codes: BTreeMap<String, u64>,
    /// Per kind of request.
    pub kinds: BTreeMap<String, KindReport>,
    /// Paced runs only.
    pub schedule: Option<Schedule>,
    /// The time series.
    pub intervals: Vec<Interval>,
    /// Watched processes.
    pub rss: Vec<RssReport>,
    /// Expected against actual.
    pub accounting: Accounting,
    /// The checks.
    pub verdicts: Vec<Verdict>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build(
        options: &RunOptions,
        stats: &Stats,
        elapsed: Duration,
        presigned: Option<(u64, Duration)>,
        not_sent: u64,
        intervals: Vec<Interval>,
        sink: Option<SinkStats>,
        rss_start: &[Option<u64>],
        rss_end: &[Option<u64>],
    ) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        let secs = elapsed.as_secs_f64().max(1e-9);
        let statuses: BTreeMap<String, u64> = stats.statuses.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let ok = stats
            .statuses
            .iter()
            .filter(|(s, _)| (200..300).contains(*s))
            .map(|(_, n)| n)
            .sum();
        let kinds: BTreeMap<String, KindReport> = Kind::ALL
            .iter()
            .map(|k| {
                let c = &stats.kinds[k.index()];
                (
                    k.as_str().to_owned(),
                    KindReport {
                        sent: c.sent,
                        statuses: c.statuses.clone(),
                        codes: c.codes.clone(),
                    },
                )
            })
            .collect();
        let schedule = match options.pace {
            Pace::Rate(rate) => Some(Schedule {
                offered_rate: rate,
                behind_p99_ms: ms(stats.behind.value_at_quantile(0.99)),
                behind_max_ms: ms(stats.behind.max()),
                behind_at_end_ms: ms(stats.last_behind_us),
                not_sent,
            }),
            Pace::Max => None,
        };
        let rss = options
            .watch_pids
            .iter()
            .enumerate()
            .map(|(i, &pid)| {
                let samples: Vec<u64> = intervals
                    .iter()
                    .skip(1)
                    .filter_map(|iv| iv.rss_kib.get(i).copied().flatten())
                    .collect();
                let min = samples.iter().copied().min();
                let max = samples.iter().copied().max();
                RssReport {
                    pid,
                    start_kib: rss_start.get(i).copied().flatten(),
                    end_kib: rss_end.get(i).copied().flatten(),
                    min_kib: min,
                    max_kib: max,
                    drift: match (min, max) {
                        (Some(min), Some(max)) if min > 0 => Some(max as f64 / min as f64 - 1.0),
                        _ => None,
                    },
                    samples: samples.len(),
                }
            })
            .collect();
        let accounting = Accounting {
            unique_valid_events: stats.unique_sent.len() as u64,
            acknowledged_events: stats.acknowledged.len() as u64,
            sink,
        };
        let mut report = Self {
            urls: options.urls.clone(),
            mode: match options.pace {
                Pace::Rate(rate) => format!("rate {rate}/s"),
                Pace::Max => "max".to_owned(),
            },
            connections: options.connections,
            presigned: presigned.map(|(n, d)| (n, d.as_secs_f64())),
            duration_secs: secs,
            requests: stats.requests,
            requests_per_sec: stats.requests as f64 / secs,
            ok,
            errors: stats.errors.clone(),
            latency: Latency {
                p50_ms: ms(stats.total.value_at_quantile(0.50)),
                p90_ms: ms(stats.total.value_at_quantile(0.90)),
                p99_ms: ms(stats.total.value_at_quantile(0.99)),
                max_ms: ms(stats.total.max()),
                mean_ms: stats.total.mean() / 1000.0,
            },
            statuses,
            rejection_codes: stats.codes.clone(),
            kinds,
            schedule,
            intervals,
            rss,
            accounting,
            verdicts: Vec::new(),
        };
        report.verdicts = report.judge();
        report
    }

    fn judge(&self) -> Vec<Verdict> {
        let mut v = Vec::new();
        let a = &self.accounting;
        if let Some(sink) = &a.sink {
            v.push(Verdict {
                name: "upstream count equals unique valid events".into(),
                pass: sink.distinct_keys == a.unique_valid_events,
                detail: format!(
                    "sink distinct keys {}, unique valid events sent {} (acknowledged {})",
                    sink.distinct_keys, a.unique_valid_events, a.acknowledged_events
                ),
            });
            v.push(Verdict {
                name: "no duplicate delivery".into(),
                pass: sink.duplicates == 0 && sink.requests == sink.distinct_keys,
                detail: format!(
                    "sink requests {}, distinct keys {}, duplicates {}",
                    sink.requests, sink.distinct_keys, sink.duplicates
                ),
            });
        }
        v.push(Verdict {
            name: "every valid event acknowledged".into(),
            pass: a.acknowledged_events == a.unique_valid_events,
            detail: format!(
                "{} of {} events answered 200",
                a.acknowledged_events, a.unique_valid_events
            ),
        });
        if let Some(t) = self.kinds.get(Kind::Tampered.as_str()).filter(|t| t.sent > 0) {
            let rejected: u64 = TAMPER_CODES.iter().filter_map(|c| t.codes.get(*c)).sum();
            let all_401 = t.statuses.get("401").copied().unwrap_or(0);
            v.push(Verdict {
                name: "tampered requests all rejected".into(),
                pass: rejected == t.sent && all_401 == t.sent,
                detail: format!("{rejected} of {} rejected 401 ({:?})", t.sent, t.codes),
            });
        }
        if let Some(d) = self.kinds.get(Kind::Duplicate.as_str()).filter(|d| d.sent > 0) {
            let ok = d.statuses.get("200").copied().unwrap_or(0);
            v.push(Verdict {
                name: "duplicates answered 200".into(),
                pass: ok == d.sent,
                detail: format!("{ok} of {} ({:?})", d.sent, d.statuses),
            });
        }
        let errors: u64 = self.errors.values().sum();
        v.push(Verdict {
            name: "no transport errors".into(),
            pass: errors == 0,
            detail: format!("{errors} ({:?})", self.errors),
        });
        if let Some(s) = &self.schedule {
            v.push(Verdict {
                name: "offered rate kept".into(),
                pass: s.not_sent == 0 && s.behind_at_end_ms < 1000.0,
                detail: format!(
                    "behind schedule: p99 {:.1} ms, max {:.1} ms, at end {:.1} ms; {} not sent",
                    s.behind_p99_ms, s.behind_max_ms, s.behind_at_end_ms, s.not_sent
                ),
            });
        }
        for r in &self.rss {
            if r.samples >= 2 {
                if let Some(drift) = r.drift {
                    v.push(Verdict {
                        name: format!("RSS of pid {} within ±10%", r.pid),
                        pass: drift <= RSS_DRIFT_LIMIT,
                        detail: format!(
                            "min {:.1} MiB, max {:.1} MiB, drift {:+.1}% over {} samples after warm-up",
                            r.min_kib.unwrap_or(0) as f64 / 1024.0,
                            r.max_kib.unwrap_or(0) as f64 / 1024.0,
                            drift * 100.0,
                            r.samples
                        ),
                    });
                }
            }
        }
        v
    }

    /// Every verdict held.
    #[must_use]
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.pass)
    }

    /// The report as JSON.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// A summary for a terminal.
    #[must_use]
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} requests in {:.1} s: {:.0} req/s ({}, {} connections{})",
            self.requests,
            self.duration_secs,
            self.requests_per_sec,
            self.mode,
            self.connections,
            self.presigned
                .map(|(n, s)| format!(", {n} presigned in {s:.1} s"))
                .unwrap_or_default()
        );
        let l = &self.latency;
        let _ = writeln!(
            out,
            "latency: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.1} ms, mean {:.2} ms",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms, l.mean_ms
        );
        let _ = writeln!(out, "statuses: {}", join_counts(&self.statuses));
        if !self.rejection_codes.is_empty() {
            let _ = writeln!(out, "rejection codes: {}", join_counts(&self.rejection_codes));
        }
        if !self.errors.is_empty() {
            let _ = writeln!(out, "errors: {}", join_counts(&self.errors));
        }
        for (name, k) in &self.kinds {
            if k.sent > 0 {
                let _ = writeln!(out, "  {name:<9} {:>8} sent: {}", k.sent, join_counts(&k.statuses));
            }
        }
        if let Some(s) = &self.schedule {
            let _ = writeln!(
                out,
                "schedule ({}/s offered): behind p99 {:.1} ms, max {:.1} ms, at end {:.1} ms, {} not sent",
                s.offered_rate, s.behind_p99_ms, s.behind_max_ms, s.behind_at_end_ms, s.not_sent
            );
        }
        for v in &self.verdicts {
            let _ = writeln!(
                out,
                "[{}] {}: {}",
                if v.pass { "PASS" } else { "FAIL" },
                v.name,
                v.detail
            );
        }
        out
    }

    /// The Markdown report: settings, totals, a table per interval,
    /// verdicts.
    #[must_use]
    pub fn render_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# adcp-loadgen report\n");
        let _ = writeln!(out, "| setting | value |\n|---|---|");
        let _ = writeln!(out, "| targets | {} |", self.urls.join(", "));
        let _ = writeln!(out, "| mode | {} |", self.mode);
        let _ = writeln!(out, "| connections (per target) | {} |", self.connections);
        if let Some((n, s)) = self.presigned {
            let _ = writeln!(out, "| presigned | {n} in {s:.1} s |");
        }
        let _ = writeln!(out, "| duration | {:.1} s |", self.duration_secs);
        let _ = writeln!(out, "\n## Totals\n");
        let _ = writeln!(out, "| figure | value |\n|---|---|");
        let _ = writeln!(out, "| requests | {} |", self.requests);
        let _ = writeln!(out, "| requests/s | {:.0} |", self.requests_per_sec);
        let l = &self.latency;
        let _ = writeln!(
            out,
            "| latency p50 / p90 / p99 / max | {:.2} / {:.2} / {:.2} / {:.1} ms |",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        );
        let _ = writeln!(out, "| statuses | {} |", join_counts(&self.statuses));
        let _ = writeln!(out, "| rejection codes | {} |", join_counts(&self.rejection_codes));
        let _ = writeln!(out, "| transport errors | {} |", join_counts(&self.errors));
        for (name, k) in &self.kinds {
            let _ = writeln!(
                out,
                "| {name} requests | {} sent: {}{} |",
                k.sent,
                join_counts(&k.statuses),
                if k.codes.is_empty() {
                    String::new()
                } else {
                    format!("; codes {}", join_counts(&k.codes))
                }
            );
        }
        let a = &self.accounting;
        let _ = writeln!(out, "| unique valid events sent | {} |", a.unique_valid_events);
        let _ = writeln!(out, "| valid events acknowledged | {} |", a.acknowledged_events);
        if let Some(s) = &a.sink {
            let _ = writeln!(
                out,
                "| upstream (sink) | {} requests, {} distinct keys, {} duplicates |",
                s.requests, s.distinct_keys, s.duplicates
            );
        }
        if let Some(s) = &self.schedule {
            let _ = writeln!(
                out,
                "| behind schedule | p99 {:.1} ms, max {:.1} ms, at end {:.1} ms, {} not sent |",
                s.behind_p99_ms, s.behind_max_ms, s.behind_at_end_ms, s.not_sent
            );
        }
        for r in &self.rss {
            let mib = |k: Option<u64>| k.map_or_else(|| "-".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0));
            let _ = writeln!(
                out,
                "| RSS pid {} (MiB) | start {}, min {}, max {}, end {}, drift {} |",
                r.pid,
                mib(r.start_kib),
                mib(r.min_kib),
                mib(r.max_kib),
                mib(r.end_kib),
                r.drift
                    .map_or_else(|| "-".to_owned(), |d| format!("{:+.1}%", d * 100.0))
            );
        }
        if !self.intervals.is_empty() {
            let _ = writeln!(out, "\n## Time series\n");
            let pids: Vec<String> = self.rss.iter().map(|r| format!(" RSS {} (MiB) |", r.pid)).collect();
            let _ = writeln!(
                out,
                "| t (s) | req/s | p50 (ms) | p99 (ms) | max (ms) | errors | behind (ms) |{}",
                pids.concat()
            );
            let _ = writeln!(
                out,
                "|---:|---:|---:|---:|---:|---:|---:|{}",
                "---:|".repeat(pids.len())
            );
            for iv in &self.intervals {
                let rss: Vec<String> = iv
                    .rss_kib
                    .iter()
                    .map(|r| r.map_or_else(|| " - |".to_owned(), |k| format!(" {:.1} |", k as f64 / 1024.0)))
                    .collect();
                let _ = writeln!(
                    out,
                    "| {:.0} | {:.0} | {:.2} | {:.2} | {:.1} | {} | {:.1} |{}",
                    iv.t_secs,
                    iv.requests_per_sec,
                    iv.p50_ms,
                    iv.p99_ms,
                    iv.max_ms,
                    iv.errors,
                    iv.behind_max_ms,
                    rss.concat()
                );
            }
        }
        let _ = writeln!(out, "\n## Verdicts\n");
        for v in &self.verdicts {
            let _ = writeln!(
                out,
                "- **{}** {}: {}",
                if v.pass { "PASS" } else { "FAIL" },
                v.name,
                v.detail
            );
        }
        out
    }
}

fn join_counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".to_owned();
    }
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
