//! The webhook-registration downgrade rule.
//!
//! A request that registers a webhook with an `authentication` block
//! (`push_notification_config.authentication`,
//! `accounts[].notification_configs[].authentication`,
//! `sync_agent_notification_configs.notification_configs[].authentication`)
//! selects the legacy HMAC / Bearer webhook mode. An on-path mutator could
//! inject or strip that block in an unsigned request, so a seller that
//! supports request signing must require such a request to be signed
//! (`request_signature_required`), whatever `required_for` says and
//! whatever other credential the caller presents.

use serde_json::Value;

/// Whether a parsed request body registers a webhook with an
/// `authentication` block anywhere in it.
///
/// The scan errs on the side of requiring a signature: it looks at every
/// depth (so the block is found inside MCP `arguments`, an A2A DataPart
/// `input`, or a REST body alike), compares member names ignoring ASCII
/// case, `_` and `-` (so `pushNotificationConfig`, A2A's own push
/// configuration, counts too), accepts any member whose name ends in
/// `notification_config` or `notification_configs` holding an object or
/// an array of objects, and treats any non-`null` `authentication` value
/// as present.
///
/// ```
/// use adcp_verify::request_policy::carries_webhook_authentication;
/// use serde_json::json;
///
/// assert!(carries_webhook_authentication(&json!({
///     "media_buy_id": "mb_1",
///     "push_notification_config": {"url": "https://buyer.example/hook", "authentication": {"schemes": ["HMAC-SHA256"]}}
/// })));
/// assert!(carries_webhook_authentication(&json!({
///     "accounts": [{"notification_configs": [{"url": "https://b.example/h", "authentication": {"schemes": ["Bearer"]}}]}]
/// })));
/// assert!(!carries_webhook_authentication(&json!({
///     "push_notification_config": {"url": "https://buyer.example/hook"}
/// })));
/// ```
pub fn carries_webhook_authentication(body: &Value) -> bool {
    let mut stack = vec![body];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, member) in map {
                    if is_notification_config(key) && has_authentication(member) {
                        return true;
                    }
                    if member.is_object() || member.is_array() {
                        stack.push(member);
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter().filter(|v| v.is_object() || v.is_array())),
            _ => {}
        }
    }
    false
}

/// A member name folded for comparison (ASCII lowercase, `_` and `-`
/// dropped), last character first; no allocation.
fn folded_rev(name: &str) -> impl Iterator<Item = char> + '_ {
    name.chars()
        .rev()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
}

/// Whether `name`, folded, ends with `suffix` (folded already).
fn folded_ends_with(name: &str, suffix: &str) -> bool {
    let mut folded = folded_rev(name);
    suffix.chars().rev().all(|c| folded.next() == Some(c))
}

/// Whether `name`, folded, is `target` (folded already).
fn folded_eq(name: &str, target: &str) -> bool {
    let mut folded = folded_rev(name);
    target.chars().rev().all(|c| folded.next() == Some(c)) && folded.next().is_none()
}

fn is_notification_config(name: &str) -> bool {
    folded_ends_with(name, "notificationconfig") || folded_ends_with(name, "notificationconfigs")
}

/// A notification config (object) or list of them (array) with a non-null
/// `authentication` member.
fn has_authentication(config: &Value) -> bool {
    let object_has = |v: &Value| {
        v.as_object().is_some_and(|m| {
            m.iter()
                .any(|(k, auth)| !auth.is_null() && folded_eq(k, "authentication"))
        })
    };
    match config {
        Value::Array(items) => items.iter().any(object_has),
        other => object_has(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_registration_shape() {
        for body in [
            json!({"push_notification_config": {"authentication": {}}}),
            json!({"sync_agent_notification_configs": {"notification_configs": [{"authentication": {"schemes": ["HMAC-SHA256"]}}]}}),
            json!({"notification_configs": [{"url": "u"}, {"Authentication": "x"}]}),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "update_media_buy", "arguments": {"push_notification_config": {"authentication": {"credentials": "c"}}}}}),
            json!({"params": {"message": {"parts": [{"data": {"skill": "create_media_buy", "input": {"pushNotificationConfig": {"authentication": {}}}}}]}}}),
            json!({"params": {"configuration": {"pushNotificationConfig": {"url": "u", "authentication": {"schemes": ["Bearer"]}}}}}),
            json!([{"x": [{"Push-Notification-Config": {"AUTHENTICATION": 1}}]}]),
        ] {
            assert!(carries_webhook_authentication(&body), "{body}");
        }
    }

    #[test]
    fn folding() {
        assert!(folded_eq("Authen_tication", "authentication"));
        assert!(!folded_eq("xauthentication", "authentication"));
        assert!(!folded_eq("authenticatio", "authentication"));
        assert!(folded_ends_with("task-PushNotificationConfigs", "notificationconfigs"));
        assert!(!folded_ends_with("config", "notificationconfig"));
    }

    #[test]
    fn absent_or_null_authentication() {
        for body in [
            json!(null),
            json!("push_notification_config"),
            json!({"push_notification_config": {"url": "u", "authentication": null}}),
            json!({"push_notification_config": "authentication"}),
            json!({"authentication": {"schemes": ["Bearer"]}}),
            json!({"notification_configs": [{"url": "u"}, "authentication"]}),
            json!({"config": {"authentication": {}}}),
        ] {
            assert!(!carries_webhook_authentication(&body), "{body}");
        }
    }
}
