//! [`Transport`]: how one AdCP call is put on the wire, and how its answer
//! is read back.
//!
//! | transport | URL | body | verifier binding |
//! |---|---|---|---|
//! | [`Transport::Mcp`] | the agent URL | JSON-RPC 2.0 `tools/call`, `params.name` = operation, `params.arguments` = the arguments | [`Binding::JsonRpc`] |
//! | [`Transport::A2a`] | the agent URL | JSON-RPC 2.0 `SendMessage`, one DataPart `{"skill": operation, "input": arguments}` | [`Binding::JsonRpc`] |
//! | [`Transport::Raw`] | `<agent URL>/<operation>` | the arguments | [`Binding::OperationPath`] |
//!
//! A JSON-RPC protocol method (`tasks/cancel`, `GetTask`, …) goes out as
//! a JSON-RPC request with that `method` and the given `params`, on the
//! MCP and A2A transports only.

use adcp_verify::request_policy::Binding;
use serde_json::{json, Value};

/// The wire shape of the counterparty's AdCP endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// MCP (streamable HTTP): JSON-RPC `tools/call`. The default. Each
    /// call is one stateless POST (no `initialize` handshake, no
    /// `Mcp-Session-Id`); the answer may be JSON or an event stream.
    #[default]
    Mcp,
    /// A2A JSON-RPC binding: `SendMessage` carrying one DataPart
    /// `{skill, input}`.
    A2a,
    /// One URL per operation: `POST <agent URL>/<operation>` with the
    /// arguments as the body.
    Raw,
}

impl Transport {
    /// `mcp`, `a2a` or `raw`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Transport::Mcp => "mcp",
            Transport::A2a => "a2a",
            Transport::Raw => "raw",
        }
    }

    /// How a verifier at this endpoint reads the operation from a request
    /// (the binding the client resolves its own request with, so that what
    /// it decides to sign is what the verifier will look up).
    #[must_use]
    pub const fn binding(self) -> Binding {
        match self {
            Transport::Mcp | Transport::A2a => Binding::JsonRpc,
            Transport::Raw => Binding::OperationPath,
        }
    }

    /// The URL an operation is posted to: the agent URL, or on the raw
    /// transport the agent URL with the operation appended as the last
    /// path segment (before any query).
    pub(crate) fn url(self, agent_url: &str, operation: &str) -> String {
        match self {
            Transport::Mcp | Transport::A2a => agent_url.to_owned(),
            Transport::Raw => match url::Url::parse(agent_url) {
                Ok(mut url) if !url.cannot_be_a_base() => {
                    if let Ok(mut segments) = url.path_segments_mut() {
                        segments.pop_if_empty().push(operation);
                    }
                    url.into()
                }
                // Refused by the SSRF check anyway.
                _ => format!("{}/{operation}", agent_url.trim_end_matches('/')),
            },
        }
    }

    /// The request body of an operation call. `id` is the JSON-RPC id and
    /// `message_id` the A2A `messageId` (unused by the other transports).
    pub(crate) fn operation_body(self, operation: &str, arguments: Value, id: u64, message_id: &str) -> Value {
        match self {
            Transport::Mcp => json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": "tools/call",
                "params": {"name": operation, "arguments": arguments},
            }),
            Transport::A2a => json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": "SendMessage",
                "params": {"message": {
                    "messageId": message_id,
                    "role": "ROLE_USER",
                    "parts": [{"data": {"skill": operation, "input": arguments}}],
                }},
            }),
            Transport::Raw => arguments,
        }
    }

    /// The request body of a JSON-RPC protocol method (`None` on the raw
    /// transport, which has no envelope).
    pub(crate) fn method_body(self, method: &str, params: Value, id: u64) -> Option<Value> {
        match self {
            Transport::Mcp | Transport::A2a => Some(json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": method,
                "params": params,
            })),
            Transport::Raw => None,
        }
    }

    /// The AdCP result carried by a response body: the MCP tool result's
    /// `structuredContent` (else its first text content parsed as JSON),
    /// the first DataPart of the A2A task's artifacts or message, or the
    /// body itself on the raw transport. `Err` carries a JSON-RPC `error`
    /// or says what is missing.
    pub(crate) fn result(self, body: &Value) -> Result<Value, String> {
        if self == Transport::Raw {
            return Ok(body.clone());
        }
        if let Some(error) = body.get("error") {
            return Err(format!("JSON-RPC error: {error}"));
        }
        let result = body.get("result").ok_or("JSON-RPC response has no result")?;
        match self {
            Transport::Mcp => mcp_result(result),
            Transport::A2a | Transport::Raw => a2a_result(result),
        }
    }
}

fn mcp_result(result: &Value) -> Result<Value, String> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(format!("tool error: {result}"));
    }
    if let Some(structured @ Value::Object(_)) = result.get("structuredContent") {
        return Ok(structured.clone());
    }
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().find_map(|c| c.get("text").and_then(Value::as_str)))
        .ok_or("tool result has neither structuredContent nor text content")?;
    serde_json::from_str(text).map_err(|e| format!("tool text content is not JSON: {e}"))
}

/// The first DataPart `data` of an A2A `SendMessage` result: A2A 1.0
/// wraps the Task or Message (`{"task": …}` / `{"message": …}`), 0.3
/// returns it bare; a Task carries its output in `artifacts[].parts[]`
/// (or, while working, `status.message.parts[]`).
fn a2a_result(result: &Value) -> Result<Value, String> {
    let inner = result.get("task").or_else(|| result.get("message")).unwrap_or(result);
    let artifacts = inner.get("artifacts").and_then(Value::as_array).into_iter().flatten();
    let parts = artifacts
        .filter_map(|a| a.get("parts").and_then(Value::as_array))
        .chain(inner.get("parts").and_then(Value::as_array))
        .chain(inner.pointer("/status/message/parts").and_then(Value::as_array))
        .flatten();
    parts
        .filter_map(|p| p.get("data"))
        .find(|d| d.is_object())
        .cloned()
        .ok_or_else(|| "A2A result carries no DataPart".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_from_each_envelope() {
        let want = json!({"request_signing": {"supported": false}});
        let mcp = json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": want.clone(), "content": []}});
        assert_eq!(Transport::Mcp.result(&mcp), Ok(want.clone()));
        let text =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": want.to_string()}]}});
        assert_eq!(Transport::Mcp.result(&text), Ok(want.clone()));
        let a2a = json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t", "artifacts": [{"parts": [{"text": "x"}, {"data": want.clone()}]}]}}});
        assert_eq!(Transport::A2a.result(&a2a), Ok(want.clone()));
        let a2a_03 = json!({"jsonrpc": "2.0", "id": 1, "result": {"kind": "message", "parts": [{"kind": "data", "data": want.clone()}]}});
        assert_eq!(Transport::A2a.result(&a2a_03), Ok(want.clone()));
        assert_eq!(Transport::Raw.result(&want), Ok(want.clone()));
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
        assert!(Transport::Mcp.result(&error).is_err());
        assert!(Transport::A2a
            .result(&json!({"result": {"parts": [{"text": "x"}]}}))
            .is_err());
        assert!(Transport::Mcp
            .result(&json!({"result": {"isError": true, "content": []}}))
            .is_err());
    }

    #[test]
    fn raw_urls_append_the_operation() {
        assert_eq!(
            Transport::Raw.url("https://s.example/adcp/", "get_products"),
            "https://s.example/adcp/get_products"
        );
        assert_eq!(
            Transport::Mcp.url("https://s.example/mcp", "get_products"),
            "https://s.example/mcp"
        );
    }
}
