//! [`CallResponse`]: the counterparty's answer and the signing decision.

use super::decision::SigningDecision;
use super::transport::Transport;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

/// The largest response body read, in bytes (16 MiB).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The answer to one call: status, headers and body of the last attempt,
/// with how the call was signed and how many attempts it took (2 after a
/// `request_signature_required` challenge).
#[derive(Debug, Clone)]
pub struct CallResponse {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) decision: SigningDecision,
    pub(crate) attempts: u32,
    pub(crate) transport: Transport,
}

impl CallResponse {
    /// The HTTP status.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Whether the status is `2xx`.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// The response headers.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The raw response body.
    #[must_use]
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// Whether and why the call was signed.
    #[must_use]
    pub fn decision(&self) -> SigningDecision {
        self.decision
    }

    /// The number of HTTP attempts (1, or 2 after a challenge).
    #[must_use]
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The body as JSON. A `text/event-stream` answer (MCP streamable
    /// HTTP) yields the last `data:` event that is a JSON object.
    #[must_use]
    pub fn json(&self) -> Option<Value> {
        json_body(&self.headers, &self.body)
    }

    /// The AdCP result the body carries, unwrapped from the transport's
    /// envelope (MCP `structuredContent`, the A2A DataPart, or the raw
    /// body).
    ///
    /// # Errors
    ///
    /// A description when the body is not JSON, is a JSON-RPC error, or
    /// carries no result.
    pub fn result(&self) -> Result<Value, String> {
        let value = self.json().ok_or("response body is not JSON")?;
        self.transport.result(&value)
    }

    /// The code of a `WWW-Authenticate: Signature error="…"` challenge,
    /// when the answer carries one (`request_signature_required`,
    /// `request_signature_invalid`, …).
    #[must_use]
    pub fn signature_error(&self) -> Option<String> {
        signature_error(&self.headers)
    }
}

pub(crate) fn json_body(headers: &HeaderMap, body: &[u8]) -> Option<Value> {
    let event_stream = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    if !event_stream {
        return serde_json::from_slice(body).ok();
    }
    let text = std::str::from_utf8(body).ok()?;
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            serde_json::from_str::<Value>(&data.join("\n")).ok()
        })
        .filter(Value::is_object)
        .last()
}

/// The `error` parameter of the first `Signature` challenge in
/// `WWW-Authenticate`. Other parameters are tolerated, as the spec asks
/// ("Transport error taxonomy").
pub(crate) fn signature_error(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|challenge| {
            let rest = challenge.trim_start().strip_prefix("Signature")?;
            if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
                return None;
            }
            let start = rest.find("error=\"")? + "error=\"".len();
            let tail = rest.get(start..)?;
            Some(tail[..tail.find('"')?].to_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        let mut h = HeaderMap::new();
        assert_eq!(signature_error(&h), None);
        h.insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static(r#"Signature error="request_signature_required", extra="x""#),
        );
        assert_eq!(signature_error(&h).as_deref(), Some("request_signature_required"));
        h.insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static(r#"Signatures error="x""#),
        );
        assert_eq!(signature_error(&h), None);
        h.insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static(r#"Bearer error="x""#),
        );
        assert_eq!(signature_error(&h), None);
    }

    #[test]
    fn event_streams_yield_the_last_json_event() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        let body = b"event: message\ndata: {\"a\":1}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{}}\n\n: ping\n\n";
        assert_eq!(
            json_body(&h, body),
            Some(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
        );
        assert_eq!(
            json_body(&HeaderMap::new(), b"{\"b\":2}"),
            Some(serde_json::json!({"b": 2}))
        );
    }
}
