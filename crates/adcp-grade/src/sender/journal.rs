//! What arrived at the listener: every delivery as received (bounded),
//! with the answer it was given. The answer policy lives here: `503` to
//! the first delivery of each `idempotency_key`, `200` to the later ones.

use std::collections::HashSet;
use std::time::Duration;

/// The largest body read (the spec's receiver limit, 1 MiB); a larger one
/// is answered `413` and kept without its bytes.
pub const MAX_BODY_BYTES: usize = adcp_webhook::DEFAULT_MAX_BODY_BYTES;

/// The most deliveries kept in one run; later ones are answered `429` and
/// only counted.
pub const MAX_DELIVERIES: usize = 1000;

/// The most header bytes (names and values) kept per delivery; a delivery
/// with more is answered `431` and kept without its headers and body.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// The most body and header bytes kept over a run; a delivery that would
/// pass it is answered `429` and only counted.
pub const MAX_KEPT_BYTES: usize = 64 * 1024 * 1024;

/// The most deliveries read at once; more wait for their turn.
pub const MAX_CONCURRENT_DELIVERIES: usize = 32;

/// The body of a delivery, or why it was not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// The bytes as received.
    Read(Vec<u8>),
    /// Over [`MAX_BODY_BYTES`] (answered `413`).
    TooLarge,
    /// The headers were over [`MAX_HEADER_BYTES`] (answered `431`).
    HeadersTooLarge,
    /// The connection failed while the body was read.
    Unreadable,
}

/// One request that arrived at the listener.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// 1-based arrival number.
    pub(crate) seq: usize,
    /// Arrival, from the start of the window.
    pub(crate) offset: Duration,
    /// Arrival, Unix seconds (the verifier's clock for this delivery).
    pub(crate) unix: i64,
    pub(crate) method: String,
    /// Path and query as received.
    pub(crate) path: String,
    /// Header field lines as received (lower-case names).
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Body,
    /// The body's `idempotency_key` (a string member), if any.
    pub(crate) key: Option<String>,
    /// What the listener answered.
    pub(crate) status: u16,
}

impl Delivery {
    /// Every line of header `name` (lower case).
    pub(crate) fn header_lines<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The body bytes, if they were read.
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Read(b) => Some(b),
            _ => None,
        }
    }

    /// `#3 (key whk_…)`, for reasons.
    pub(crate) fn label(&self) -> String {
        match &self.key {
            Some(key) => format!("#{} (key {})", self.seq, shorten(key)),
            None => format!("#{}", self.seq),
        }
    }
}

/// At most 48 characters of untrusted text, for a report line.
pub(crate) fn shorten(text: &str) -> String {
    shorten_to(text, 48)
}

/// At most `max` characters of `text`, control characters replaced.
pub(crate) fn shorten_to(text: &str, max: usize) -> String {
    let clean: String = text.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    match clean.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &clean[..i]),
        None => clean,
    }
}

/// A delivery as read, before the answer is chosen.
#[derive(Debug)]
pub(crate) struct Arrival {
    pub(crate) offset: Duration,
    pub(crate) unix: i64,
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Body,
}

/// Every delivery of the run, and the keys already answered.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub(crate) deliveries: Vec<Delivery>,
    /// Deliveries over [`MAX_DELIVERIES`] or [`MAX_KEPT_BYTES`], answered
    /// `429` and not kept.
    pub(crate) dropped: usize,
    /// Body and header bytes kept.
    kept: usize,
    seen: HashSet<String>,
    closed: bool,
}

impl Journal {
    /// Records `arrival` and returns the status to answer: `503` for the
    /// first delivery of an `idempotency_key`, `200` for the later ones,
    /// `400` for a body without one, `413` / `431` for what was not read,
    /// `429` over the cap, `503` once the window is closed (not kept).
    pub(crate) fn record(&mut self, arrival: Arrival) -> u16 {
        if self.closed {
            return 503;
        }
        let size = arrival
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.len())
            .sum::<usize>()
            .saturating_add(match &arrival.body {
                Body::Read(b) => b.len(),
                _ => 0,
            });
        if self.deliveries.len() >= MAX_DELIVERIES || self.kept.saturating_add(size) > MAX_KEPT_BYTES {
            self.dropped = self.dropped.saturating_add(1);
            return 429;
        }
        self.kept += size;
        let key = match &arrival.body {
            Body::Read(bytes) => idempotency_key(bytes),
            _ => None,
        };
        let status = match (&arrival.body, &key) {
            (Body::TooLarge, _) => 413,
            (Body::HeadersTooLarge, _) => 431,
            (Body::Unreadable, _) => 400,
            (Body::Read(_), None) => 400,
            (Body::Read(_), Some(key)) => {
                if self.seen.insert(key.clone()) {
                    503
                } else {
                    200
                }
            }
        };
        self.deliveries.push(Delivery {
            seq: self.deliveries.len() + 1,
            offset: arrival.offset,
            unix: arrival.unix,
            method: arrival.method,
            path: arrival.path,
            headers: arrival.headers,
            body: arrival.body,
            key,
            status,
        });
        status
    }

    /// Ends the run: later deliveries are answered `503` and not kept.
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }
}

/// The `idempotency_key` string member of a JSON object body.
fn idempotency_key(bytes: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    value.get("idempotency_key")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(body: &str) -> Arrival {
        Arrival {
            offset: Duration::ZERO,
            unix: 0,
            method: "POST".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: Body::Read(body.as_bytes().to_vec()),
        }
    }

    #[test]
    fn the_first_delivery_of_a_key_is_answered_503_the_later_ones_200() {
        let mut j = Journal::default();
        assert_eq!(j.record(arrival(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaab"}"#)), 503);
        assert_eq!(j.record(arrival(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaab"}"#)), 200);
        assert_eq!(j.record(arrival(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaac"}"#)), 503);
        assert_eq!(j.record(arrival(r#"{"idempotency_key":7}"#)), 400);
        assert_eq!(j.record(arrival("not json")), 400);
        assert_eq!(j.deliveries.len(), 5);
        assert_eq!(j.deliveries[1].key.as_deref(), Some("aaaaaaaaaaaaaaaaaaab"));
        j.close();
        assert_eq!(j.record(arrival(r#"{"idempotency_key":"aaaaaaaaaaaaaaaaaaad"}"#)), 503);
        assert_eq!(j.deliveries.len(), 5);
    }

    #[test]
    fn deliveries_over_the_cap_are_counted_not_kept() {
        let mut j = Journal::default();
        for _ in 0..MAX_DELIVERIES {
            j.record(arrival("{}"));
        }
        assert_eq!(j.record(arrival("{}")), 429);
        assert_eq!((j.deliveries.len(), j.dropped), (MAX_DELIVERIES, 1));
    }

    #[test]
    fn bytes_over_the_run_cap_are_counted_not_kept() {
        let mut j = Journal::default();
        let big = Arrival {
            body: Body::Read(vec![b' '; MAX_BODY_BYTES]),
            ..arrival("{}")
        };
        let fit = MAX_KEPT_BYTES / MAX_BODY_BYTES;
        for _ in 0..fit {
            assert_eq!(j.record(big_copy(&big)), 400);
        }
        assert_eq!(j.record(big), 429);
        assert_eq!((j.deliveries.len(), j.dropped), (fit, 1));
    }

    fn big_copy(a: &Arrival) -> Arrival {
        Arrival {
            offset: a.offset,
            unix: a.unix,
            method: a.method.clone(),
            path: a.path.clone(),
            headers: a.headers.clone(),
            body: a.body.clone(),
        }
    }

    #[test]
    fn reasons_show_at_most_48_printable_characters() {
        assert_eq!(shorten("a\nb"), "a?b");
        assert_eq!(shorten(&"x".repeat(60)).chars().count(), 49);
    }
}
