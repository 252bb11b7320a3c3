//! `webhook_activity[]` records: one per delivery attempt, in the shape of
//! `core/webhook-activity-record.json`.

use crate::clock::rfc3339_ms;
use serde_json::{Map, Value};

/// Most characters of an `error_message` (the schema's `maxLength`).
pub const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// The `status` of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActivityStatus {
    /// Sent or about to be sent; no answer yet.
    Pending,
    /// A `2xx` answer.
    Success,
    /// Any other answer.
    Failed,
    /// No answer within the attempt deadline.
    Timeout,
    /// DNS, TCP or TLS failure before any answer, or an attempt abandoned
    /// by a worker that stopped.
    ConnectionError,
}

impl ActivityStatus {
    /// The schema's spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Success => "success",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::ConnectionError => "connection_error",
        }
    }

    /// Reads the schema's spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "success" => Self::Success,
            "failed" => Self::Failed,
            "timeout" => Self::Timeout,
            "connection_error" => Self::ConnectionError,
            _ => return None,
        })
    }
}

/// One attempt of one event, as `get_media_buys … include_webhook_activity`
/// returns it. Only events with a notification type have records (the
/// schema requires `notification_type`; task envelopes keep their attempts
/// on the event only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityRecord {
    /// The payload's `idempotency_key`, the same for every attempt.
    pub idempotency_key: String,
    /// The payload's `notification_id`, when it has one.
    pub notification_id: Option<String>,
    /// The registration's `subscriber_id`, when it has one.
    pub subscriber_id: Option<String>,
    /// When the request was started (Unix milliseconds).
    pub fired_at_ms: i64,
    /// When the answer (or the timeout, or the error) was seen; `None`
    /// while pending.
    pub completed_at_ms: Option<i64>,
    /// The payload's notification type (`result.notification_type` for
    /// delivery reports and impairments).
    pub notification_type: String,
    /// The payload's `sequence_number`, when it has one.
    pub sequence_number: Option<i64>,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The outcome.
    pub status: ActivityStatus,
    /// The URL, already redacted ([`redact_url`]).
    pub url: String,
    /// The answer's status, when there was one.
    pub http_status_code: Option<u16>,
    /// Request to answer, in milliseconds, when there was an answer.
    pub response_time_ms: Option<i64>,
    /// The body's size in bytes.
    pub payload_size_bytes: u64,
    /// Why the attempt did not succeed (never headers or bodies; at most
    /// [`MAX_ERROR_MESSAGE_CHARS`]).
    pub error_message: Option<String>,
}

impl ActivityRecord {
    /// The record as the schema's JSON object: explicit `null`s for
    /// `completed_at`, `http_status_code`, `response_time_ms` and
    /// `error_message` when unset, optional members omitted when unknown.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("idempotency_key".into(), self.idempotency_key.clone().into());
        if let Some(id) = &self.notification_id {
            o.insert("notification_id".into(), id.clone().into());
        }
        if let Some(id) = &self.subscriber_id {
            o.insert("subscriber_id".into(), id.clone().into());
        }
        o.insert("fired_at".into(), rfc3339_ms(self.fired_at_ms).into());
        o.insert(
            "completed_at".into(),
            self.completed_at_ms.map_or(Value::Null, |t| rfc3339_ms(t).into()),
        );
        o.insert("notification_type".into(), self.notification_type.clone().into());
        if let Some(n) = self.sequence_number.filter(|n| *n >= 0) {
            o.insert("sequence_number".into(), n.into());
        }
        o.insert("attempt".into(), self.attempt.max(1).into());
        o.insert("status".into(), self.status.as_str().into());
        o.insert("url".into(), self.url.clone().into());
        o.insert(
            "http_status_code".into(),
            self.http_status_code
                .filter(|s| (100..=599).contains(s))
                .map_or(Value::Null, Value::from),
        );
        o.insert(
            "response_time_ms".into(),
            self.response_time_ms.map_or(Value::Null, |t| t.max(0).into()),
        );
        o.insert("payload_size_bytes".into(), self.payload_size_bytes.into());
        o.insert(
            "error_message".into(),
            self.error_message
                .as_deref()
                .map_or(Value::Null, |m| clip_message(m).into()),
        );
        Value::Object(o)
    }
}

/// Cuts a message to [`MAX_ERROR_MESSAGE_CHARS`] characters.
#[must_use]
pub fn clip_message(message: &str) -> String {
    match message.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((at, _)) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The URL as an activity record shows it: query and fragment stripped
/// (buyers put bearer tokens there), userinfo dropped, and every path
/// segment that looks like a secret replaced by `[redacted]`: a UUID, or a
/// long run of token characters mixing letters and digits.
///
/// ```
/// use adcp_outbox::redact_url;
/// assert_eq!(
///     redact_url("https://buyer.example/hooks/2f1c6a0e-8a5b-4bd3-9f61-1d1e2c3b4a59/adcp?token=s3cret#x"),
///     "https://buyer.example/hooks/[redacted]/adcp"
/// );
/// assert_eq!(redact_url("https://buyer.example/webhooks/adcp/op_1"), "https://buyer.example/webhooks/adcp/op_1");
/// ```
#[must_use]
pub fn redact_url(url: &str) -> String {
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..cut];
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    out.push_str(authority);
    for segment in path.split('/').skip(1) {
        out.push('/');
        if looks_secret(segment) {
            out.push_str("[redacted]");
        } else {
            out.push_str(segment);
        }
    }
    out
}

/// A UUID, or 20+ token characters with both letters and digits (or 32+
/// hex digits): high-entropy material, not a word or an operation id.
fn looks_secret(segment: &str) -> bool {
    let b = segment.as_bytes();
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if uuid {
        return true;
    }
    let token_chars = b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'%'));
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let hex = b.len() >= 32 && b.iter().all(u8::is_ascii_hexdigit);
    token_chars && (hex || (b.len() >= 20 && digits >= 3 && letters >= 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_query_fragment_userinfo_and_secret_segments() {
        assert_eq!(
            redact_url("https://u:p@buyer.example:8443/a/B7xk29QpLm44ZtY0vW8s/b?x=1"),
            "https://buyer.example:8443/a/[redacted]/b"
        );
        assert_eq!(
            redact_url("https://buyer.example/h/0123456789abcdef0123456789abcdef"),
            "https://buyer.example/h/[redacted]"
        );
        assert_eq!(redact_url("https://buyer.example"), "https://buyer.example");
        assert_eq!(
            redact_url("https://buyer.example/webhooks/media_buy/mb_2026_04_18"),
            "https://buyer.example/webhooks/media_buy/mb_2026_04_18"
        );
    }

    #[test]
    fn messages_are_clipped_to_500_characters() {
        let long = "é".repeat(600);
        assert_eq!(clip_message(&long).chars().count(), 500);
        assert_eq!(clip_message("short"), "short");
    }

    #[test]
    fn pending_records_carry_explicit_nulls() {
        let r = ActivityRecord {
            idempotency_key: "whk_1".into(),
            notification_id: None,
            subscriber_id: None,
            fired_at_ms: 0,
            completed_at_ms: None,
            notification_type: "impairment".into(),
            sequence_number: None,
            attempt: 1,
            status: ActivityStatus::Pending,
            url: "https://b.example/x".into(),
            http_status_code: None,
            response_time_ms: None,
            payload_size_bytes: 10,
            error_message: None,
        };
        let j = r.to_json();
        for k in ["completed_at", "http_status_code", "response_time_ms", "error_message"] {
            assert_eq!(j[k], Value::Null, "{k}");
        }
        assert!(j.get("notification_id").is_none());
    }
}
