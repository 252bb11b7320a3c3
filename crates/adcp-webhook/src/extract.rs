//! Payload extraction: which envelope a webhook uses (MCP or A2A), and
//! where its AdCP data sits.
//!
//! - **MCP** (`push_notification_config` registrations): the flat envelope;
//!   the data is the `result` member (`null` when absent).
//! - **A2A** (`TaskPushNotificationConfig` registrations): a native `Task`
//!   or `TaskStatusUpdateEvent`, possibly wrapped as `{"task": …}` or
//!   `{"statusUpdate": …}`. Final states (`completed`, `failed`,
//!   `rejected`, `canceled`) take the **last** DataPart of
//!   `artifacts[0].parts`, falling back to `status.message.parts` when
//!   there are no artifacts; interim states (`working`, `input-required`,
//!   `submitted`, `auth-required`) take the **first** DataPart of
//!   `status.message.parts`. A DataPart is `{"kind": "data", "data": {…}}`
//!   or, in A2A 1.0, a part with a `data` member and no `kind`; its data
//!   must be an object (others are skipped). States are normalized from
//!   the A2A 1.0 spelling (`TASK_STATE_INPUT_REQUIRED` → `input-required`).
//!
//! The receiver knows the format from its registration and should say so
//! ([`extract`] with `Some(format)`); detection ([`detect_format`]) is the
//! spec's defensive fallback: a string `status` plus `task_id` is MCP, an
//! object `status` with a `state` is A2A.
//!
//! ```
//! use adcp_webhook::{detect_format, extract, PayloadFormat};
//! use serde_json::json;
//!
//! let mcp = json!({"task_id": "t1", "status": "completed", "result": {"media_buy_id": "mb_1"}});
//! assert_eq!(detect_format(&mcp), Some(PayloadFormat::Mcp));
//! assert_eq!(extract(&mcp, Some(PayloadFormat::Mcp))?, Some(&json!({"media_buy_id": "mb_1"})));
//!
//! let a2a = json!({"id": "t2", "status": {"state": "TASK_STATE_WORKING", "message": {
//!     "parts": [{"text": "…"}, {"data": {"percentage": 45}}]}}});
//! assert_eq!(extract(&a2a, None)?, Some(&json!({"percentage": 45})));
//! # Ok::<(), adcp_webhook::ExtractError>(())
//! ```

use serde_json::{Map, Value};

/// A webhook envelope format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadFormat {
    /// The AdCP MCP webhook envelope (`mcp-webhook-payload.json`).
    Mcp,
    /// A native A2A `Task` / `TaskStatusUpdateEvent`.
    A2a,
}

impl PayloadFormat {
    /// `mcp` or `a2a`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::A2a => "a2a",
        }
    }
}

/// Why extraction refused a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The format is neither given nor detectable.
    #[error("webhook payload format not recognized")]
    UnknownFormat,
    /// The DataPart wraps the response as `{"response": {…}}` instead of
    /// carrying it directly (`wrapper_detected` in the vectors).
    #[error("AdCP data is wrapped in a `response` object")]
    WrapperDetected,
}

impl ExtractError {
    /// A stable code: `unknown_format`, `wrapper_detected`.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::UnknownFormat => "unknown_format",
            Self::WrapperDetected => "wrapper_detected",
        }
    }
}

/// The spec's format detection: `status` an object with `state` → A2A
/// (also under a `task` / `statusUpdate` wrapper); `status` a string and
/// `task_id` present → MCP; otherwise `None`.
#[must_use]
pub fn detect_format(payload: &Value) -> Option<PayloadFormat> {
    let obj = payload.as_object()?;
    let inner = unwrap_a2a(obj).unwrap_or(obj);
    match inner.get("status") {
        Some(Value::Object(status)) if status.get("state").is_some_and(|s| !s.is_null()) => Some(PayloadFormat::A2a),
        Some(Value::String(_)) if obj.contains_key("task_id") => Some(PayloadFormat::Mcp),
        _ => None,
    }
}

/// The AdCP data of a webhook `payload`, in `known_format` when given
/// (preferred: it comes from the registration), else in the detected one.
/// `Ok(None)` when the payload carries no data (a `canceled` task, a
/// text-only A2A message, an `artifactUpdate` event).
///
/// # Errors
///
/// [`ExtractError::UnknownFormat`] when no format is given and none is
/// detected; [`ExtractError::WrapperDetected`] for an A2A DataPart that
/// wraps its data as `{"response": …}`.
pub fn extract(payload: &Value, known_format: Option<PayloadFormat>) -> Result<Option<&Value>, ExtractError> {
    match known_format.or_else(|| detect_format(payload)) {
        Some(PayloadFormat::Mcp) => Ok(payload.get("result").filter(|r| !r.is_null())),
        Some(PayloadFormat::A2a) => extract_a2a(payload),
        None => Err(ExtractError::UnknownFormat),
    }
}

/// The task state of an A2A payload, normalized to the AdCP spelling
/// (`completed`, `input-required`, …).
#[must_use]
pub fn a2a_state(payload: &Value) -> Option<String> {
    let obj = payload.as_object()?;
    let inner = unwrap_a2a(obj).unwrap_or(obj);
    let state = inner.get("status")?.get("state")?.as_str()?;
    Some(normalize_state(state))
}

fn normalize_state(state: &str) -> String {
    let s = state.strip_prefix("TASK_STATE_").unwrap_or(state);
    s.to_ascii_lowercase().replace('_', "-")
}

/// `{"task": X}` / `{"statusUpdate": X}` → `X`.
fn unwrap_a2a(obj: &Map<String, Value>) -> Option<&Map<String, Value>> {
    if obj.contains_key("status") {
        return None;
    }
    obj.get("task")
        .or_else(|| obj.get("statusUpdate"))
        .and_then(Value::as_object)
}

fn extract_a2a(payload: &Value) -> Result<Option<&Value>, ExtractError> {
    let Some(obj) = payload.as_object() else {
        return Ok(None);
    };
    let inner = unwrap_a2a(obj).unwrap_or(obj);
    let Some(state) = inner.get("status").and_then(|s| s.get("state")).and_then(Value::as_str) else {
        // An `artifactUpdate` (or anything else without a task state)
        // carries no status to interpret.
        return Ok(None);
    };
    let message_parts = inner
        .get("status")
        .and_then(|s| s.get("message"))
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array);
    let found = match normalize_state(state).as_str() {
        "completed" | "failed" | "rejected" | "canceled" => {
            let artifact_parts = inner
                .get("artifacts")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|a| a.get("parts"))
                .and_then(Value::as_array);
            match artifact_parts {
                Some(parts) => data_parts(parts).last(),
                None => message_parts.and_then(|p| data_parts(p).next()),
            }
        }
        _ => message_parts.and_then(|p| data_parts(p).next()),
    };
    match found {
        Some(data) if is_wrapper(data) => Err(ExtractError::WrapperDetected),
        other => Ok(other),
    }
}

/// The object data of every DataPart, in order.
fn data_parts(parts: &[Value]) -> impl DoubleEndedIterator<Item = &Value> {
    parts.iter().filter_map(|part| {
        let part = part.as_object()?;
        match part.get("kind") {
            Some(Value::String(kind)) if kind != "data" => return None,
            Some(Value::String(_)) | None => {}
            Some(_) => return None,
        }
        part.get("data").filter(|d| d.is_object())
    })
}

/// A DataPart whose only member is `response` holding an object.
fn is_wrapper(data: &Value) -> bool {
    data.as_object()
        .is_some_and(|m| m.len() == 1 && m.get("response").is_some_and(Value::is_object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_format_wins_over_detection() {
        // Looks like MCP, but the registration says A2A: no A2A status, no data.
        let p = json!({"task_id": "t", "status": "completed", "result": {"x": 1}});
        assert_eq!(extract(&p, Some(PayloadFormat::A2a)).unwrap(), None);
        assert_eq!(extract(&p, None).unwrap(), Some(&json!({"x": 1})));
    }

    #[test]
    fn hostile_shapes_do_not_panic() {
        for p in [
            json!(null),
            json!([]),
            json!("x"),
            json!({"status": {"state": 5}}),
            json!({"status": {"state": "completed"}, "artifacts": "x"}),
            json!({"task": 1}),
            json!({"status": {"state": "working", "message": {"parts": [1, null, {"kind": 3, "data": {}}]}}}),
        ] {
            let _ = extract(&p, Some(PayloadFormat::A2a));
            let _ = extract(&p, Some(PayloadFormat::Mcp));
            let _ = extract(&p, None);
        }
        assert_eq!(extract(&json!([]), None), Err(ExtractError::UnknownFormat));
    }
}
