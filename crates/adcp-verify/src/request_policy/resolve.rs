//! Operation resolution: which AdCP operation and which JSON-RPC method a
//! request carries, read once, strictly, before the signature gate.

use super::a2a::{message_skill, MESSAGE_METHODS};
use super::binding::{path_and_query, Binding};
use super::members::{non_empty_string, object, reject_case_variants, Object, Reason};
use super::webhook_registration::carries_webhook_authentication;
use crate::error::{CodePrefix, ErrorCode, Step, VerifyError};
use adcp_sigbase::Message;
use serde_json::Value;

/// What a request asks for, as the signature gate sees it. The dispatcher
/// must dispatch exactly [`ResolvedRequest::operation`] (or reject it as
/// unsupported) and must not re-derive the operation from anything else
/// (TextParts, metadata, a case-insensitive alias, a percent-decoded path).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedRequest {
    operation: Option<String>,
    protocol_method: Option<String>,
    webhook_authentication: bool,
}

impl ResolvedRequest {
    /// A request resolved by the caller's own means (a binding this module
    /// does not know): its AdCP operation, if any, and its JSON-RPC method,
    /// if any. Pass it to [`decide_resolved`](super::decide_resolved).
    pub fn new(operation: Option<String>, protocol_method: Option<String>) -> Self {
        Self {
            operation,
            protocol_method,
            webhook_authentication: false,
        }
    }

    /// Marks the request as registering a webhook with an `authentication`
    /// block (see [`carries_webhook_authentication`]).
    #[must_use]
    pub fn with_webhook_authentication(mut self, registers: bool) -> Self {
        self.webhook_authentication = registers;
        self
    }

    /// The AdCP operation: the `tools/call` tool name, the A2A DataPart
    /// skill, or the path's operation segment, verbatim. `None` for
    /// protocol-method traffic (`tasks/cancel`, `GetTask`, …), for a
    /// JSON-RPC response, and for non-POST requests on message bindings.
    pub fn operation(&self) -> Option<&str> {
        self.operation.as_deref()
    }

    /// The JSON-RPC envelope `method`, decoded, verbatim; `None` for
    /// `tools/call` (whose operation is matched instead) and for bindings
    /// without a JSON-RPC envelope.
    pub fn protocol_method(&self) -> Option<&str> {
        self.protocol_method.as_deref()
    }

    /// Whether the body registers a webhook with an `authentication` block.
    pub fn registers_webhook_authentication(&self) -> bool {
        self.webhook_authentication
    }
}

/// Resolves the AdCP operation and JSON-RPC method of `msg` under
/// `binding`. Runs on every request, signed or not, before the header
/// checks: an unresolvable body is rejected even when validly signed.
///
/// A non-empty body is always parsed with the strict JSON parser
/// (duplicate member names, compared after unescaping, are an error), so
/// the gate and every later reader see one value; the parsed body is also
/// scanned for webhook `authentication` blocks.
///
/// # Errors
///
/// `request_body_malformed` at step 0 when the body is not strict JSON or
/// does not resolve to exactly one operation (a batch, no or non-string
/// `method`, an A2A message without exactly one DataPart with a non-empty
/// string `skill`, a FilePart, a Part with two content members, a
/// mismatched `kind`, a case variant of a member read, …);
/// `request_target_uri_malformed` at step 0 when an
/// [`Binding::OperationPath`] path cannot be canonicalized.
///
/// ```
/// use adcp_sigbase::Message;
/// use adcp_verify::request_policy::{resolve, Binding};
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_media_buy","arguments":{}}}"#;
/// let msg = Message::request("POST", "https://seller.example.com/mcp").with_body(&body[..]);
/// let request = resolve(Binding::JsonRpc, &msg)?;
/// assert_eq!(request.operation(), Some("create_media_buy"));
/// assert_eq!(request.protocol_method(), None);
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_products","name":"create_media_buy"}}"#;
/// let err = resolve(Binding::JsonRpc, &Message::request("POST", "https://seller.example.com/mcp").with_body(&body[..])).unwrap_err();
/// assert_eq!(err.code_str(), "request_body_malformed");
/// # Ok::<(), adcp_verify::VerifyError>(())
/// ```
pub fn resolve(binding: Binding, msg: &Message<'_>) -> Result<ResolvedRequest, VerifyError> {
    resolve_with_limit(binding, msg, adcp_strict_json::DEFAULT_MAX_LEN)
}

/// [`resolve`] for an endpoint whose body limit is `max_body_bytes` (the
/// limit its [`Verifier`](crate::verifier::Verifier) is configured with):
/// a longer body is `request_body_malformed` here, before any signature
/// work, and a body up to the limit is parsed.
///
/// # Errors
///
/// As [`resolve`].
pub fn resolve_with_limit(
    binding: Binding,
    msg: &Message<'_>,
    max_body_bytes: usize,
) -> Result<ResolvedRequest, VerifyError> {
    let body = parse_body(msg, max_body_bytes)?;
    let webhook_authentication = body.as_ref().is_some_and(carries_webhook_authentication);
    let post = msg.method().eq_ignore_ascii_case("POST");
    let (operation, protocol_method) = match binding {
        Binding::OperationPath => (operation_from_path(msg.target_uri())?, None),
        Binding::JsonRpc if post => json_rpc(body.as_ref()).map_err(malformed)?,
        Binding::A2aHttpJson if post => {
            let skill = as_object(body.as_ref(), "HTTP+JSON send request")
                .and_then(message_skill)
                .map_err(malformed)?;
            (Some(skill), None)
        }
        Binding::JsonRpc | Binding::A2aHttpJson => (None, None),
    };
    Ok(ResolvedRequest {
        operation,
        protocol_method,
        webhook_authentication,
    })
}

fn malformed(reason: Reason) -> VerifyError {
    VerifyError::new(ErrorCode::BodyMalformed, CodePrefix::Request, Step::new(0), reason)
}

/// The strictly parsed body; `None` when absent or empty.
fn parse_body(msg: &Message<'_>, max_body_bytes: usize) -> Result<Option<Value>, VerifyError> {
    match msg.body() {
        None | Some([]) => Ok(None),
        Some(bytes) => adcp_strict_json::parse_value(bytes, &adcp_strict_json::Limits::new(max_body_bytes))
            .map(Some)
            .map_err(|e| malformed(format!("{e} ({} body bytes)", bytes.len()))),
    }
}

fn as_object<'v>(body: Option<&'v Value>, what: &str) -> Result<&'v Object, Reason> {
    match body {
        Some(Value::Object(map)) => Ok(map),
        Some(Value::Array(_)) => Err(format!("{what} is a batch (JSON array); batches are not supported")),
        Some(_) => Err(format!("{what} is not a JSON object")),
        None => Err(format!("{what} has no body")),
    }
}

/// `(operation, protocol method)` of one JSON-RPC request object.
fn json_rpc(body: Option<&Value>) -> Result<(Option<String>, Option<String>), Reason> {
    let envelope = as_object(body, "JSON-RPC request")?;
    reject_case_variants(envelope, &["method", "params"], "JSON-RPC request")?;
    let method = match envelope.get("method") {
        Some(Value::String(method)) => method,
        None if is_response(envelope) => return Ok((None, None)),
        Some(_) => return Err("JSON-RPC method is not a string".into()),
        None => return Err("JSON-RPC request has no method".into()),
    };
    if method == "tools/call" {
        let params = object(envelope, "params", "tools/call")?;
        reject_case_variants(params, &["name"], "tools/call params")?;
        let name = non_empty_string(params, "name", "tools/call params")?;
        return Ok((Some(name.to_owned()), None));
    }
    let operation = if MESSAGE_METHODS.contains(&method.as_str()) {
        Some(message_skill(object(envelope, "params", method)?)?)
    } else {
        None
    };
    Ok((operation, Some(method.clone())))
}

/// A JSON-RPC response (a client's reply to a server-initiated request,
/// such as MCP sampling): `result` or `error`, no `params`. It dispatches
/// nothing.
fn is_response(envelope: &Object) -> bool {
    (envelope.contains_key("result") || envelope.contains_key("error")) && !envelope.contains_key("params")
}

/// The last non-empty segment of the canonical path of `target_uri`.
fn operation_from_path(target_uri: &str) -> Result<Option<String>, VerifyError> {
    let raw = path_and_query(target_uri);
    let canonical = adcp_canon::canonicalize_received(format!("https://operation-path.invalid{raw}")).map_err(|e| {
        VerifyError::new(
            ErrorCode::TargetUriMalformed,
            CodePrefix::Request,
            Step::new(0),
            format!("request path cannot be canonicalized: {e}"),
        )
    })?;
    Ok(canonical
        .path()
        .rsplit('/')
        .find(|segment| !segment.is_empty())
        .map(str::to_owned))
}
