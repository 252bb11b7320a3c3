//! Where an endpoint's requests carry their AdCP operation.

/// How the endpoint binds requests to AdCP operations. Part of the
/// endpoint's trusted configuration, like its profile: a request never
/// chooses how its own operation is read, so a body cannot make the gate
/// and the dispatcher disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// A JSON-RPC 2.0 endpoint (MCP, A2A JSON-RPC, or both on one URL).
    /// The operation is `params.name` of a `tools/call`, or the `skill` of
    /// the sole DataPart of an A2A `SendMessage`, `SendStreamingMessage`,
    /// `message/send` or `message/stream`; every other method carries no
    /// operation and is matched against `protocol_methods_*` only.
    JsonRpc,
    /// The A2A HTTP+JSON binding (`POST …/message:send`,
    /// `POST …/message:stream`): the body is the send request itself, the
    /// operation is the Message's DataPart `skill`, and there is no JSON-RPC
    /// method.
    A2aHttpJson,
    /// One operation per URL: the operation is the last non-empty segment
    /// of the canonical request path (`/adcp/create_media_buy`), with dot
    /// segments removed and unreserved percent-encodings decoded exactly as
    /// `@target-uri` canonicalization does.
    OperationPath,
}

impl Binding {
    /// Infers the binding from a request's target URI, by the layout the
    /// conformance vectors use: a path ending in `/message:send` or
    /// `/message:stream` is [`Binding::A2aHttpJson`], a path whose first
    /// segment is `adcp` is [`Binding::OperationPath`], anything else is
    /// [`Binding::JsonRpc`].
    ///
    /// A convenience for harnesses and for servers that route exactly this
    /// way; a server with another layout passes its own binding per route.
    /// Only the path is read, never the body: its canonical form, dot
    /// segments removed and percent-encoded unreserved characters decoded
    /// as `@target-uri` canonicalization does (so `/mcp/../adcp/<op>` and
    /// `/mcp/%2e%2e/adcp/<op>` are `/adcp/<op>`, the path a proxy or a
    /// server normalizing it routes to).
    ///
    /// ```
    /// use adcp_verify::request_policy::Binding;
    /// assert_eq!(Binding::infer("https://seller.example.com/mcp"), Binding::JsonRpc);
    /// assert_eq!(Binding::infer("https://seller.example.com/a2a/jsonrpc"), Binding::JsonRpc);
    /// assert_eq!(Binding::infer("https://seller.example.com/a2a/v1/message:send"), Binding::A2aHttpJson);
    /// assert_eq!(Binding::infer("https://seller.example.com/adcp/create_media_buy?x=1"), Binding::OperationPath);
    /// assert_eq!(Binding::infer("/adcp/sync_creatives"), Binding::OperationPath);
    /// assert_eq!(Binding::infer("/mcp/../adcp/create_media_buy"), Binding::OperationPath);
    /// ```
    pub fn infer(target_uri: &str) -> Self {
        let raw = path_only(target_uri);
        // A path that does not canonicalize is classified as received; the
        // verifier refuses its target anyway.
        let canonical = adcp_canon::canonicalize_received(format!("https://binding.invalid{raw}")).ok();
        let path = canonical.as_ref().map_or(raw, |url| url.path());
        let last = path.rsplit('/').next().unwrap_or_default();
        if last == "message:send" || last == "message:stream" {
            Binding::A2aHttpJson
        } else if path.starts_with("/adcp/") {
            Binding::OperationPath
        } else {
            Binding::JsonRpc
        }
    }
}

/// The raw path-and-query of a target URI in absolute form
/// (`scheme://authority/path?query`) or origin form (`/path?query`),
/// without any fragment. Empty when there is no path.
pub(crate) fn path_and_query(target_uri: &str) -> &str {
    let without_fragment = target_uri.split('#').next().unwrap_or_default();
    if without_fragment.starts_with('/') {
        return without_fragment;
    }
    match without_fragment.find("://") {
        Some(i) => {
            let rest = &without_fragment[i + 3..];
            rest.find(['/', '?']).map_or("", |j| &rest[j..])
        }
        None => "",
    }
}

/// The raw path of a target URI (no query, no fragment).
fn path_only(target_uri: &str) -> &str {
    let pq = path_and_query(target_uri);
    pq.split('?').next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_extraction() {
        assert_eq!(path_and_query("https://h/a/b?c#d"), "/a/b?c");
        assert_eq!(path_and_query("https://h?q"), "?q");
        assert_eq!(path_and_query("https://h"), "");
        assert_eq!(path_and_query("/p?q#f"), "/p?q");
        assert_eq!(path_and_query("h/p"), "");
        assert_eq!(path_only("https://[::1]:8443/adcp/x?y"), "/adcp/x");
    }

    #[test]
    fn inference_reads_the_path_only() {
        assert_eq!(Binding::infer("https://h/adcp"), Binding::JsonRpc);
        assert_eq!(Binding::infer("https://h/x/adcp/op"), Binding::JsonRpc);
        assert_eq!(Binding::infer("https://h/message:send?adcp/"), Binding::A2aHttpJson);
        assert_eq!(Binding::infer("https://h/a2a/message:stream"), Binding::A2aHttpJson);
        assert_eq!(Binding::infer("https://h/a2a/message:sendx"), Binding::JsonRpc);
    }

    #[test]
    fn inference_reads_the_canonical_path() {
        for (target, binding) in [
            ("https://h/mcp/../adcp/create_media_buy", Binding::OperationPath),
            ("/x/./../adcp/create_media_buy", Binding::OperationPath),
            ("/x/%2e%2e/adcp/create_media_buy", Binding::OperationPath),
            ("/x/%2E%2E/adcp/create_media_buy", Binding::OperationPath),
            ("/%61dcp/create_media_buy", Binding::OperationPath),
            ("/adcp/../mcp", Binding::JsonRpc),
            ("/a2a/x/../message:send", Binding::A2aHttpJson),
            ("/a2a/message%3Asend", Binding::JsonRpc),
        ] {
            assert_eq!(Binding::infer(target), binding, "{target}");
        }
    }
}
