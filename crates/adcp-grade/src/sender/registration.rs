//! The `push_notification_config` the seller is given: the listener's URL,
//! and the `token` and `operation_id` every task webhook must echo.

use serde::Serialize;

/// What the seller registers: the grader prints it, the operator puts it in
/// a task request (`push_notification_config`), and every MCP task webhook
/// is graded against it. No `authentication` block: the seller signs with
/// the RFC 9421 webhook profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registration {
    /// The URL the seller calls (`--public-url`, else `http://ADDR/webhook`
    /// as listened).
    pub url: String,
    /// The token every task webhook echoes verbatim (`None`: not
    /// registered, the echo is not graded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The operation id every task webhook echoes verbatim (`None`: not
    /// registered, the echo is not graded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

impl Registration {
    /// The `push_notification_config` object: `url`, and `token` and
    /// `operation_id` when registered.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// `{"push_notification_config": {…}}`, ready to merge into a task
    /// request's arguments.
    #[must_use]
    pub fn to_task_argument(&self) -> serde_json::Value {
        serde_json::json!({ "push_notification_config": self.to_json() })
    }
}

/// A fresh token: 128 random bits, unpadded base64url (22 characters,
/// within the schema's 16–4096).
pub(crate) fn fresh_token() -> Result<String, String> {
    crate::prepare::fresh_token()
}

/// A fresh operation id, `op_grade_` and 128 random bits (the schema's
/// `^[A-Za-z0-9_.:-]{1,255}$`: unpadded base64url's `-` and `_` fit).
pub(crate) fn fresh_operation_id() -> Result<String, String> {
    crate::prepare::fresh_token().map(|t| format!("op_grade_{t}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_omits_what_was_not_registered() {
        let r = Registration {
            url: "https://buyer.example/hook".into(),
            token: None,
            operation_id: Some("op_1".into()),
        };
        assert_eq!(
            r.to_task_argument(),
            serde_json::json!({"push_notification_config": {"url": "https://buyer.example/hook", "operation_id": "op_1"}})
        );
    }

    #[test]
    fn fresh_values_fit_the_schema_bounds() {
        let token = fresh_token().unwrap_or_default();
        assert!((16..=4096).contains(&token.len()), "{token}");
        let op = fresh_operation_id().unwrap_or_default();
        assert!(op
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')));
        assert_ne!(fresh_token().unwrap_or_default(), token);
    }
}
