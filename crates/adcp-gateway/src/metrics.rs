//! Prometheus text exposition of the gateway's counters.
//!
//! The receiver's per-outcome counters (`accepted`, `duplicate`, every
//! verifier code, store and handler outcomes) become
//! `adcp_gateway_webhooks_total{outcome="…"}`; the gateway adds upstream
//! failures by reason, forwarded events, a request latency histogram and,
//! for discovered sellers, how often their brand.json named a `jwks_uri`
//! other than the pinned or first-learned one
//! (`adcp_gateway_jwks_uri_changes_total{agent="…"}`: the spec's "alarm on
//! changes"; each one is refused unless adoption was switched on), and the
//! periodic purge of the store's expired rows (rows deleted, purges
//! failed).

use adcp_webhook::{outcome, Metrics};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Reads a counter kept elsewhere (a seller's key resolver).
pub(crate) type CounterSource = Arc<dyn Fn() -> u64 + Send + Sync>;

/// `jwks_uri` change counters, one per discovered seller agent URL.
#[derive(Clone, Default)]
pub(crate) struct JwksUriChanges(pub(crate) Vec<(String, CounterSource)>);

impl std::fmt::Debug for JwksUriChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(agent, _)| agent)).finish()
    }
}

/// Upper bounds (seconds) of the latency histogram buckets.
const LATENCY_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Why forwarding an event upstream failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum UpstreamFailure {
    /// The upstream answered a non-`2xx` status.
    Status,
    /// The upstream did not answer within the timeout.
    Timeout,
    /// The upstream could not be reached (connection refused, DNS, …).
    Connect,
}

impl UpstreamFailure {
    /// The `reason` label.
    fn label(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Timeout => "timeout",
            Self::Connect => "connect",
        }
    }
}

/// How the relay of one upstream answer's body to the client ended
/// (request mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RelayEnd {
    /// The upstream's body ended and was passed on whole.
    Complete,
    /// The client went away (connection closed, stream reset); the
    /// upstream request was dropped with it.
    ClientGone,
    /// A streamed body was quiet longer than the idle timeout.
    IdleTimeout,
    /// A body of known length was not done within the upstream timeout.
    Timeout,
    /// The upstream's body failed (connection reset, malformed framing).
    UpstreamError,
    /// The server shut down under an open stream.
    Shutdown,
}

impl RelayEnd {
    /// Every end, in the exposition's order.
    const ALL: [Self; 6] = [
        Self::Complete,
        Self::ClientGone,
        Self::IdleTimeout,
        Self::Timeout,
        Self::UpstreamError,
        Self::Shutdown,
    ];

    /// The `end` label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::ClientGone => "client_gone",
            Self::IdleTimeout => "idle_timeout",
            Self::Timeout => "timeout",
            Self::UpstreamError => "upstream_error",
            Self::Shutdown => "shutdown",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Complete => 0,
            Self::ClientGone => 1,
            Self::IdleTimeout => 2,
            Self::Timeout => 3,
            Self::UpstreamError => 4,
            Self::Shutdown => 5,
        }
    }
}

/// Request mode's relays of upstream answers: the streams open now and how
/// the finished relays ended. Shared with the proxy's relay tasks.
#[derive(Debug, Default)]
pub(crate) struct RelayCounters {
    open_streams: AtomicU64,
    ended: [AtomicU64; RelayEnd::ALL.len()],
}

impl RelayCounters {
    /// One streamed answer starts being relayed; the guard counts it
    /// closed when dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> OpenStream {
        self.open_streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(Arc::clone(self))
    }

    /// One relay ended so.
    pub(crate) fn ended(&self, end: RelayEnd) {
        self.ended[end.index()].fetch_add(1, Ordering::Relaxed);
    }
}

/// A streamed answer being relayed ([`RelayCounters::stream_opened`]).
pub(crate) struct OpenStream(Arc<RelayCounters>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The gateway's own counters (the receiver keeps the per-outcome ones:
/// [`Gateway::receiver`](crate::Gateway::receiver)), and the Prometheus
/// exposition of both that `GET /metrics` serves.
#[derive(Debug, Default)]
pub struct GatewayMetrics {
    forwarded: AtomicU64,
    shed: AtomicU64,
    purged: AtomicU64,
    purge_failures: AtomicU64,
    upstream_failures: Mutex<BTreeMap<UpstreamFailure, u64>>,
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    jwks_uri_changes: JwksUriChanges,
    relays: Arc<RelayCounters>,
}

impl GatewayMetrics {
    /// Counters that also report each seller's `jwks_uri` changes.
    pub(crate) fn with_jwks_uri_changes(jwks_uri_changes: JwksUriChanges) -> Self {
        Self {
            jwks_uri_changes,
            ..Self::default()
        }
    }

    /// Request mode's relay counters, for the proxy.
    pub(crate) fn relays(&self) -> Arc<RelayCounters> {
        Arc::clone(&self.relays)
    }

    /// Request mode: streamed upstream answers (`text/event-stream`, or
    /// bodies without `Content-Length`) being relayed now
    /// (`adcp_gateway_streams_open`).
    #[must_use]
    pub fn streams_open(&self) -> u64 {
        self.relays.open_streams.load(Ordering::Relaxed)
    }

    /// Request mode: upstream answer bodies relayed so far, by how the
    /// relay ended (`adcp_gateway_relays_total{end}`): `complete`,
    /// `client_gone`, `idle_timeout`, `timeout`, `upstream_error`,
    /// `shutdown`.
    #[must_use]
    pub fn relays_ended(&self) -> BTreeMap<&'static str, u64> {
        RelayEnd::ALL
            .iter()
            .map(|end| (end.label(), self.relays.ended[end.index()].load(Ordering::Relaxed)))
            .collect()
    }

    /// One event forwarded and acknowledged `2xx` by the upstream.
    pub(crate) fn forwarded(&self) {
        self.forwarded.fetch_add(1, Ordering::Relaxed);
    }

    /// Events forwarded and acknowledged so far.
    #[must_use]
    pub fn forwarded_count(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }

    /// One webhook request shed (`503`) because the concurrency limit
    /// was reached.
    pub(crate) fn shed(&self) {
        self.shed.fetch_add(1, Ordering::Relaxed);
    }

    /// Webhook requests shed so far.
    #[must_use]
    pub fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// `rows` expired rows deleted by one purge of the store.
    pub(crate) fn purged(&self, rows: u64) {
        self.purged.fetch_add(rows, Ordering::Relaxed);
    }

    /// Expired store rows (replay entries, dedup and notification records)
    /// the periodic purge deleted so far.
    #[must_use]
    pub fn purged_count(&self) -> u64 {
        self.purged.load(Ordering::Relaxed)
    }

    /// One purge of the store that failed.
    pub(crate) fn purge_failed(&self) {
        self.purge_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Purges of the store that failed so far.
    #[must_use]
    pub fn purge_failure_count(&self) -> u64 {
        self.purge_failures.load(Ordering::Relaxed)
    }

    /// One reload of the key and policy material (and the TLS
    /// certificate, on `SIGHUP`): applied, or failed and nothing changed.
    pub(crate) fn reloaded(&self, ok: bool) {
        let counter = if ok { &self.reloads_ok } else { &self.reloads_failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Reloads applied so far (`adcp_gateway_reloads_total{result="ok"}`).
    #[must_use]
    pub fn reload_count(&self) -> u64 {
        self.reloads_ok.load(Ordering::Relaxed)
    }

    /// Reloads that failed so far, the material in force kept
    /// (`adcp_gateway_reloads_total{result="failed"}`).
    #[must_use]
    pub fn reload_failure_count(&self) -> u64 {
        self.reloads_failed.load(Ordering::Relaxed)
    }

    /// One failed forward.
    pub(crate) fn upstream_failed(&self, reason: UpstreamFailure) {
        if let Ok(mut failures) = self.upstream_failures.lock() {
            *failures.entry(reason).or_insert(0) += 1;
        }
    }

    /// Failed forwards, all reasons together.
    #[must_use]
    pub fn upstream_failure_count(&self) -> u64 {
        self.upstream_failures.lock().map(|f| f.values().sum()).unwrap_or(0)
    }

    /// Records the time one webhook request took, answer included.
    pub(crate) fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.latency_sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// The Prometheus text exposition (format 0.0.4) of these counters and
    /// the receiver's.
    #[must_use]
    pub fn render(&self, receiver: &Metrics) -> String {
        self.render_receivers([receiver])
    }

    /// [`Self::render`] with the outcome counters summed over several
    /// receivers (the gateway keeps one per verification mode).
    pub(crate) fn render_receivers<'m>(&self, receivers: impl IntoIterator<Item = &'m Metrics>) -> String {
        let mut out = String::new();
        // Summed over the gateway's receivers (one per verification mode).
        let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
        for receiver in receivers {
            for (label, count) in receiver.snapshot() {
                *outcomes.entry(label).or_insert(0) += count;
            }
        }
        // Always present, so that dashboards and alerts see a zero.
        for label in [outcome::ACCEPTED, outcome::DUPLICATE] {
            outcomes.entry(label).or_insert(0);
        }
        out.push_str("# HELP adcp_gateway_webhooks_total Webhook requests by outcome: accepted, duplicate, or the rejection code.\n");
        out.push_str("# TYPE adcp_gateway_webhooks_total counter\n");
        for (label, count) in &outcomes {
            let _ = writeln!(
                out,
                "adcp_gateway_webhooks_total{{outcome=\"{}\"}} {count}",
                escape(label)
            );
        }
        self.render_common(&mut out, "Events forwarded and acknowledged 2xx by the upstream.");
        out
    }

    /// The exposition of a request-mode gateway: `adcp_gateway_requests_total{outcome}`
    /// (`verified`, `unsigned`, `failed` for forwarded requests, else the
    /// refusal code) from `outcomes`, then the counters both modes share.
    pub(crate) fn render_requests(&self, outcomes: &Metrics) -> String {
        let mut out = String::new();
        let mut counts = outcomes.snapshot();
        for label in ["verified", "unsigned", "failed"] {
            counts.entry(label).or_insert(0);
        }
        out.push_str("# HELP adcp_gateway_requests_total Signed-request mode: requests by outcome: verified, unsigned or failed (forwarded), unsigned_get or unsigned_delete (forwarded without verification), or the refusal code.\n");
        out.push_str("# TYPE adcp_gateway_requests_total counter\n");
        for (label, count) in &counts {
            let _ = writeln!(
                out,
                "adcp_gateway_requests_total{{outcome=\"{}\"}} {count}",
                escape(label)
            );
        }
        out.push_str("# HELP adcp_gateway_streams_open Signed-request mode: streamed upstream answers (text/event-stream, or no Content-Length) being relayed now.\n");
        out.push_str("# TYPE adcp_gateway_streams_open gauge\n");
        let _ = writeln!(out, "adcp_gateway_streams_open {}", self.streams_open());
        out.push_str("# HELP adcp_gateway_relays_total Signed-request mode: upstream answer bodies relayed, by how the relay ended.\n");
        out.push_str("# TYPE adcp_gateway_relays_total counter\n");
        for (end, count) in self.relays_ended() {
            let _ = writeln!(out, "adcp_gateway_relays_total{{end=\"{end}\"}} {count}");
        }
        self.render_common(&mut out, "Requests forwarded upstream and answered (any status).");
        out
    }

    /// The counters of both modes: forwarded, shed, upstream failures, the
    /// latency histogram, the store purge, `jwks_uri` changes.
    fn render_common(&self, out: &mut String, forwarded_help: &str) {
        let _ = writeln!(out, "# HELP adcp_gateway_forwarded_total {forwarded_help}");
        out.push_str("# TYPE adcp_gateway_forwarded_total counter\n");
        let _ = writeln!(out, "adcp_gateway_forwarded_total {}", self.forwarded_count());
        out.push_str(
            "# HELP adcp_gateway_shed_total Webhook requests answered 503 at once because the concurrency limit was reached.\n",
        );
        out.push_str("# TYPE adcp_gateway_shed_total counter\n");
        let _ = writeln!(out, "adcp_gateway_shed_total {}", self.shed_count());
        out.push_str(
            "# HELP adcp_gateway_upstream_failures_total Forwards that failed (claim released, 503 to the sender).\n",
        );
        out.push_str("# TYPE adcp_gateway_upstream_failures_total counter\n");
        let failures = self.upstream_failures.lock().map(|f| f.clone()).unwrap_or_default();
        for reason in [
            UpstreamFailure::Status,
            UpstreamFailure::Timeout,
            UpstreamFailure::Connect,
        ] {
            let count = failures.get(&reason).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "adcp_gateway_upstream_failures_total{{reason=\"{}\"}} {count}",
                reason.label()
            );
        }
        out.push_str(
            "# HELP adcp_gateway_request_duration_seconds Time to answer a webhook request, forwarding included.\n",
        );
        out.push_str("# TYPE adcp_gateway_request_duration_seconds histogram\n");
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            let _ = writeln!(
                out,
                "adcp_gateway_request_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "adcp_gateway_request_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        #[allow(clippy::cast_precision_loss)] // a sum of microseconds, exposed as float seconds
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "adcp_gateway_request_duration_seconds_sum {sum}");
        let _ = writeln!(out, "adcp_gateway_request_duration_seconds_count {count}");
        out.push_str(
            "# HELP adcp_gateway_store_purged_total Expired store rows (replay entries, dedup and notification records) deleted by the periodic purge.\n",
        );
        out.push_str("# TYPE adcp_gateway_store_purged_total counter\n");
        let _ = writeln!(out, "adcp_gateway_store_purged_total {}", self.purged_count());
        out.push_str("# HELP adcp_gateway_store_purge_failures_total Periodic purges of the store that failed (retried at the next interval).\n");
        out.push_str("# TYPE adcp_gateway_store_purge_failures_total counter\n");
        let _ = writeln!(
            out,
            "adcp_gateway_store_purge_failures_total {}",
            self.purge_failure_count()
        );
        out.push_str(
            "# HELP adcp_gateway_reloads_total Reloads of the key and policy material (SIGHUP, Gateway::reload) by result: ok, or failed (the material in force kept).\n",
        );
        out.push_str("# TYPE adcp_gateway_reloads_total counter\n");
        let _ = writeln!(
            out,
            "adcp_gateway_reloads_total{{result=\"ok\"}} {}",
            self.reload_count()
        );
        let _ = writeln!(
            out,
            "adcp_gateway_reloads_total{{result=\"failed\"}} {}",
            self.reload_failure_count()
        );
        if !self.jwks_uri_changes.0.is_empty() {
            out.push_str(
                "# HELP adcp_gateway_jwks_uri_changes_total Discoveries of a seller whose brand.json named a jwks_uri other than the pinned or first-learned one (alarmed; refused unless adoption is on).\n",
            );
            out.push_str("# TYPE adcp_gateway_jwks_uri_changes_total counter\n");
            for (agent, count) in &self.jwks_uri_changes.0 {
                let _ = writeln!(
                    out,
                    "adcp_gateway_jwks_uri_changes_total{{agent=\"{}\"}} {}",
                    escape(agent),
                    count()
                );
            }
        }
    }
}

/// Label values are code strings, but escape anyway (`\`, `"`, newline).
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The signature batcher's counters (`batch_verify`), appended to the
/// exposition.
pub(crate) fn render_batcher(out: &mut String, stats: &adcp_verify::BatcherStats) {
    for (name, help, value) in [
        (
            "adcp_gateway_signature_groups_total",
            "Groups of Ed25519 signatures the batcher took from its queue at once (a lone signature is a group of one).",
            stats.groups,
        ),
        (
            "adcp_gateway_batched_signatures_total",
            "Ed25519 signatures checked by the batcher; divided by the groups, the mean batch size.",
            stats.signatures,
        ),
        (
            "adcp_gateway_failed_signature_batches_total",
            "Batches that failed and were checked again one signature at a time.",
            stats.failed_batches,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        let _ = writeln!(out, "{name} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_outcomes_failures_and_histogram() {
        let metrics = GatewayMetrics::default();
        let receiver = Metrics::default();
        receiver.incr("webhook_signature_invalid");
        receiver.incr(outcome::ACCEPTED);
        metrics.forwarded();
        metrics.upstream_failed(UpstreamFailure::Timeout);
        metrics.observe(Duration::from_millis(3));
        metrics.purged(5);
        metrics.purged(2);
        metrics.purge_failed();
        let text = metrics.render(&receiver);
        assert!(
            text.contains("adcp_gateway_webhooks_total{outcome=\"accepted\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("adcp_gateway_webhooks_total{outcome=\"duplicate\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("adcp_gateway_webhooks_total{outcome=\"webhook_signature_invalid\"} 1\n"));
        assert!(text.contains("adcp_gateway_forwarded_total 1\n"));
        assert!(text.contains("adcp_gateway_upstream_failures_total{reason=\"timeout\"} 1\n"));
        assert!(
            text.contains("adcp_gateway_request_duration_seconds_bucket{le=\"0.0025\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("adcp_gateway_request_duration_seconds_bucket{le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("adcp_gateway_request_duration_seconds_count 1\n"));
        assert!(text.contains("adcp_gateway_store_purged_total 7\n"), "{text}");
        assert!(text.contains("adcp_gateway_store_purge_failures_total 1\n"), "{text}");
        assert!(!text.contains("jwks_uri_changes"), "no discovered sellers, no series");
        assert!(text.contains("adcp_gateway_reloads_total{result=\"ok\"} 0\n"), "{text}");
        metrics.reloaded(false);
        let text = metrics.render(&receiver);
        assert!(
            text.contains("adcp_gateway_reloads_total{result=\"failed\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn renders_each_sellers_jwks_uri_changes() {
        let seen = Arc::new(AtomicU64::new(0));
        let source = Arc::clone(&seen);
        let metrics = GatewayMetrics::with_jwks_uri_changes(JwksUriChanges(vec![
            (
                "https://seller.example/mcp".to_owned(),
                Arc::new(move || source.load(Ordering::Relaxed)),
            ),
            ("https://x.example/\"q\"".to_owned(), Arc::new(|| 0)),
        ]));
        seen.store(3, Ordering::Relaxed);
        let text = metrics.render(&Metrics::default());
        assert!(
            text.contains("adcp_gateway_jwks_uri_changes_total{agent=\"https://seller.example/mcp\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("adcp_gateway_jwks_uri_changes_total{agent=\"https://x.example/\\\"q\\\"\"} 0\n"),
            "{text}"
        );
    }
}
