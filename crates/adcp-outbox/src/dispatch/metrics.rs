//! Counters of the dispatcher, in the Prometheus text format.

use crate::activity::ActivityStatus;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (seconds) of the enqueue-to-delivery latency histogram.
const LATENCY_BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0, 3600.0, 86_400.0,
];

/// What the dispatcher counted since it started.
#[derive(Debug, Default)]
pub struct DispatchMetrics {
    attempts: [AtomicU64; 4],
    delivered: AtomicU64,
    refused: AtomicU64,
    expired: AtomicU64,
    fenced: AtomicU64,
    store_errors: AtomicU64,
    latency_buckets: [AtomicU64; 12],
    latency_count: AtomicU64,
    latency_sum_ms: AtomicU64,
    in_flight: AtomicU64,
}

fn status_index(status: ActivityStatus) -> Option<usize> {
    Some(match status {
        ActivityStatus::Success => 0,
        ActivityStatus::Failed => 1,
        ActivityStatus::Timeout => 2,
        ActivityStatus::ConnectionError => 3,
        ActivityStatus::Pending => return None,
    })
}

const STATUSES: [&str; 4] = ["success", "failed", "timeout", "connection_error"];

impl DispatchMetrics {
    pub(crate) fn attempt(&self, status: ActivityStatus) {
        if let Some(i) = status_index(status) {
            self.attempts[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn delivered(&self, latency_ms: i64) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
        let secs = latency_ms.max(0) as f64 / 1000.0;
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            if secs <= *bound {
                self.latency_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_ms
            .fetch_add(u64::try_from(latency_ms.max(0)).unwrap_or(0), Ordering::Relaxed);
    }

    pub(crate) fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn expired(&self) {
        self.expired.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fenced(&self) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn store_error(&self) {
        self.store_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn set_in_flight(&self, n: usize) {
        self.in_flight.store(n as u64, Ordering::Relaxed);
    }

    /// Attempts made with this status.
    #[must_use]
    pub fn attempts(&self, status: ActivityStatus) -> u64 {
        status_index(status).map_or(0, |i| self.attempts[i].load(Ordering::Relaxed))
    }

    /// Events delivered.
    #[must_use]
    pub fn delivered_count(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Finishes refused because the lease had moved on.
    #[must_use]
    pub fn fenced_count(&self) -> u64 {
        self.fenced.load(Ordering::Relaxed)
    }

    /// Store calls that failed.
    #[must_use]
    pub fn store_errors(&self) -> u64 {
        self.store_errors.load(Ordering::Relaxed)
    }

    /// The counters in the Prometheus text format (`adcp_outbox_*`).
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# HELP adcp_outbox_attempts_total Delivery attempts by outcome.");
        let _ = writeln!(out, "# TYPE adcp_outbox_attempts_total counter");
        for (i, s) in STATUSES.iter().enumerate() {
            let _ = writeln!(
                out,
                "adcp_outbox_attempts_total{{status=\"{s}\"}} {}",
                self.attempts[i].load(Ordering::Relaxed)
            );
        }
        for (name, help, v) in [
            ("delivered", "Events delivered.", &self.delivered),
            ("refused", "Events refused for good.", &self.refused),
            (
                "expired",
                "Events whose horizon passed after an attempt.",
                &self.expired,
            ),
            (
                "fenced",
                "Outcomes dropped because the lease had moved on.",
                &self.fenced,
            ),
            ("store_errors", "Store calls that failed.", &self.store_errors),
        ] {
            let _ = writeln!(out, "# HELP adcp_outbox_{name}_total {help}");
            let _ = writeln!(out, "# TYPE adcp_outbox_{name}_total counter");
            let _ = writeln!(out, "adcp_outbox_{name}_total {}", v.load(Ordering::Relaxed));
        }
        let _ = writeln!(out, "# HELP adcp_outbox_in_flight Attempts in flight in this process.");
        let _ = writeln!(out, "# TYPE adcp_outbox_in_flight gauge");
        let _ = writeln!(out, "adcp_outbox_in_flight {}", self.in_flight.load(Ordering::Relaxed));
        let _ = writeln!(out, "# HELP adcp_outbox_delivery_latency_seconds Enqueue to delivery.");
        let _ = writeln!(out, "# TYPE adcp_outbox_delivery_latency_seconds histogram");
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "adcp_outbox_delivery_latency_seconds_bucket{{le=\"{bound}\"}} {}",
                self.latency_buckets[i].load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "adcp_outbox_delivery_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "adcp_outbox_delivery_latency_seconds_sum {}",
            self.latency_sum_ms.load(Ordering::Relaxed) as f64 / 1000.0
        );
        let _ = writeln!(out, "adcp_outbox_delivery_latency_seconds_count {count}");
        out
    }
}
