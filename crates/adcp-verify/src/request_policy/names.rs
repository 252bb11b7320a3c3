//! The two name grammars of `request_signing`: AdCP operation names
//! (`required_for` / `warn_for` / `supported_for`) and JSON-RPC protocol
//! method names (`protocol_methods_*`).
//!
//! The namespaces are disjoint by construction: an operation name never
//! contains `/` and never starts with an uppercase letter, while a protocol
//! method name is either a slash path (`tasks/cancel`, A2A 0.3) or a
//! PascalCase name (`CancelTask`, A2A 1.0). `tools/call` is the MCP envelope
//! that *carries* an operation, so it is never a protocol method name.

/// Whether `name` has the shape of an AdCP operation name: lowercase
/// snake case, `[a-z][a-z0-9_]*` (`create_media_buy`, `get_products`).
///
/// ```
/// use adcp_verify::request_policy::is_operation_name;
/// assert!(is_operation_name("create_media_buy"));
/// assert!(!is_operation_name("tasks/cancel"));
/// assert!(!is_operation_name("CreateMediaBuy"));
/// ```
pub fn is_operation_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `name` is a valid `protocol_methods_*` declaration: an A2A 0.3
/// style slash path of two or more non-empty segments, each
/// `[a-z][A-Za-z0-9]*` (`tasks/pushNotificationConfig/set`), or an A2A 1.0
/// style PascalCase name `[A-Z][A-Za-z0-9]*` (`SendStreamingMessage`).
/// `tools/call` is excluded: it carries an AdCP operation, which the
/// operation lists match.
///
/// ```
/// use adcp_verify::request_policy::is_protocol_method_name;
/// assert!(is_protocol_method_name("tasks/cancel"));
/// assert!(is_protocol_method_name("CancelTask"));
/// for bad in ["tools/call", "sendMessage", "tasks", "/tasks/cancel", "tasks//cancel", "create_media_buy"] {
///     assert!(!is_protocol_method_name(bad), "{bad}");
/// }
/// ```
pub fn is_protocol_method_name(name: &str) -> bool {
    if name == "tools/call" {
        return false;
    }
    if name.contains('/') {
        return name
            .split('/')
            .all(|segment| starts_then_alnum(segment, u8::is_ascii_lowercase));
    }
    starts_then_alnum(name, u8::is_ascii_uppercase)
}

/// `first(byte 0)` and every later byte ASCII alphanumeric; non-empty.
fn starts_then_alnum(s: &str, first: fn(&u8) -> bool) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| first(&b)) && bytes.all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_grammar() {
        for ok in ["a", "create_media_buy", "acquire_rights", "get_products2"] {
            assert!(is_operation_name(ok), "{ok}");
        }
        for bad in [
            "",
            "_x",
            "1x",
            "Create_media_buy",
            "create-media-buy",
            "tasks/get",
            "x y",
            "é",
        ] {
            assert!(!is_operation_name(bad), "{bad}");
        }
    }

    #[test]
    fn protocol_method_grammar() {
        for ok in ["message/send", "agent/getAuthenticatedExtendedCard", "GetTask", "A"] {
            assert!(is_protocol_method_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "tasks/",
            "Tasks/get",
            "tasks/get_x",
            "Send_Message",
            "send message",
            "tools/call",
        ] {
            assert!(!is_protocol_method_name(bad), "{bad}");
        }
    }
}
