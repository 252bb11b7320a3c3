//! Scenarios the vectors do not cover, and properties of the gate.

use adcp_sigbase::Message;
use adcp_verify::request_policy::{
    decide, resolve, Action, AuthSource, Binding, CapabilityError, Decision, FallbackCredential, Mode, Rejection,
    Verdict, VerifierCapability,
};
use adcp_verify::DigestCoverage;
use adcp_verify::{CodePrefix, ErrorCode, Step, VerifyError};
use proptest::prelude::*;
use serde_json::json;

const INPUT: &str = r#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1;expires=2;nonce="n";keyid="k";alg="ed25519";tag="adcp/request-signing/v1""#;
const SIGNATURE: &str = "sig1=:AAAA:";

fn capability(value: serde_json::Value) -> VerifierCapability {
    VerifierCapability::from_json(&value).unwrap()
}

fn standard() -> VerifierCapability {
    capability(json!({
        "supported": true,
        "covers_content_digest": "required",
        "required_for": ["create_media_buy"],
        "warn_for": ["update_media_buy"],
        "supported_for": ["get_products"],
        "protocol_methods_required_for": ["tasks/cancel"],
        "protocol_methods_warn_for": ["SendMessage"]
    }))
}

fn post<'a>(url: &'a str, body: &'a str) -> Message<'a> {
    Message::request("POST", url)
        .with_header("Content-Type", "application/json")
        .with_body(body.as_bytes())
}

fn signed(msg: Message<'_>) -> Message<'_> {
    msg.with_header("Signature-Input", INPUT)
        .with_header("Signature", SIGNATURE)
}

fn tool_call(name: &str, arguments: serde_json::Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        .to_string()
}

fn code(decision: &Decision) -> Option<&'static str> {
    decision.error().map(VerifyError::code_str)
}

fn failure(code: ErrorCode, step: u8) -> VerifyError {
    VerifyError::new(code, CodePrefix::Request, Step::new(step), "simulated")
}

#[test]
fn operation_path_is_read_from_the_canonical_path() {
    let cap = standard();
    for url in [
        "https://seller.example.com/adcp/create%5Fmedia%5Fbuy",
        "https://seller.example.com/adcp/create_media_buy/",
        "https://seller.example.com/adcp/other/../create_media_buy",
        "https://seller.example.com/adcp/%2E/create_media_buy?x=1#f",
        "/adcp/create_media_buy",
    ] {
        let msg = post(url, "{}");
        assert_eq!(
            resolve(Binding::OperationPath, &msg).unwrap().operation(),
            Some("create_media_buy"),
            "{url}"
        );
        let decision = decide(&cap, Binding::OperationPath, &msg, FallbackCredential::Absent);
        assert_eq!(code(&decision), Some("request_signature_required"), "{url}");
    }
    // Case is not folded: the dispatcher must reject the unknown name.
    let msg = post("https://seller.example.com/adcp/Create_Media_Buy", "{}");
    assert!(matches!(
        decide(&cap, Binding::OperationPath, &msg, FallbackCredential::Absent),
        Decision::Accept { .. }
    ));
    // A path that cannot be canonicalized cannot be resolved.
    let msg = post("https://seller.example.com/adcp/create_media_buy%zz", "{}");
    let err = resolve(Binding::OperationPath, &msg).unwrap_err();
    assert_eq!(
        (err.code_str(), err.step()),
        ("request_target_uri_malformed", Step::new(0))
    );
    // Nothing after the prefix.
    assert_eq!(
        resolve(Binding::OperationPath, &post("https://h/", ""))
            .unwrap()
            .operation(),
        None
    );
}

#[test]
fn malformed_bodies_are_rejected_before_the_headers() {
    let cap = standard();
    for (binding, body) in [
        (Binding::OperationPath, r#"{"a":1,"a":2}"#),
        (Binding::OperationPath, "not json"),
        (Binding::JsonRpc, ""),
        (Binding::JsonRpc, "[]"),
        (Binding::JsonRpc, r#""tools/call""#),
        (Binding::JsonRpc, r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
        (
            Binding::JsonRpc,
            r#"{"jsonrpc":"2.0","id":1,"Method":"tasks/get","method":"tools/call"}"#,
        ),
        (
            Binding::JsonRpc,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}"#,
        ),
        (
            Binding::JsonRpc,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"x","name":"y"}}"#,
        ),
        (
            Binding::JsonRpc,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
        ),
        (Binding::JsonRpc, r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage"}"#),
        (Binding::A2aHttpJson, r#"[{"message":{}}]"#),
        (
            Binding::A2aHttpJson,
            r#"{"message":{"parts":[{"data":{"skill":"a"}},{"data":{"skill":"b"}}]}}"#,
        ),
    ] {
        let msg = signed(post("https://seller.example.com/adcp/x", body));
        let decision = decide(&cap, binding, &msg, FallbackCredential::Valid);
        let err = decision.error().unwrap_or_else(|| panic!("{body}: {decision:?}"));
        assert_eq!(
            (err.code_str(), err.step()),
            ("request_body_malformed", Step::new(0)),
            "{body}"
        );
    }
}

#[test]
fn json_rpc_traffic_without_an_operation() {
    let cap = standard();
    // A client's JSON-RPC response (MCP sampling reply) dispatches nothing.
    let msg = post(
        "https://seller.example.com/mcp",
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
    );
    let request = resolve(Binding::JsonRpc, &msg).unwrap();
    assert_eq!((request.operation(), request.protocol_method()), (None, None));
    // GET (an MCP SSE stream) carries no operation on message bindings.
    for binding in [Binding::JsonRpc, Binding::A2aHttpJson] {
        let msg = Message::request("GET", "https://seller.example.com/mcp");
        assert_eq!(
            resolve(binding, &msg).unwrap(),
            resolve(binding, &Message::request("DELETE", "/")).unwrap()
        );
        assert!(matches!(
            decide(&cap, binding, &msg, FallbackCredential::Absent),
            Decision::Accept { .. }
        ));
    }
    // A lowercase `post` is treated as POST (fail closed).
    let body = tool_call("create_media_buy", json!({}));
    let msg = Message::request("post", "https://seller.example.com/mcp").with_body(body.as_bytes());
    assert_eq!(
        code(&decide(&cap, Binding::JsonRpc, &msg, FallbackCredential::Absent)),
        Some("request_signature_required")
    );
}

#[test]
fn namespaces_never_cross_match() {
    let cap = standard();
    // A tool named like a listed protocol method is not that method.
    let body = tool_call("tasks/cancel", json!({}));
    let request = resolve(Binding::JsonRpc, &post("https://h/mcp", &body)).unwrap();
    assert_eq!(
        (request.operation(), request.protocol_method()),
        (Some("tasks/cancel"), None)
    );
    assert_eq!(cap.mode_for(&request), Mode::Unlisted);
    // A protocol method named like a listed operation is not that operation.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"create_media_buy","params":{}}"#;
    let request = resolve(Binding::JsonRpc, &post("https://h/mcp", body)).unwrap();
    assert_eq!(cap.mode_for(&request), Mode::Unlisted);
    // Both namespaces apply to an A2A message; the stronger wins.
    let message = |skill: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"parts": [{"data": {"skill": skill}}]}}})
            .to_string()
    };
    for (skill, mode) in [
        ("get_products", Mode::Warn),
        ("create_media_buy", Mode::Required),
        ("other", Mode::Warn),
    ] {
        let body = message(skill);
        let request = resolve(Binding::JsonRpc, &post("https://h/a2a", &body)).unwrap();
        assert_eq!(cap.mode_for(&request), mode, "{skill}");
    }
}

#[test]
fn header_pair_and_unsupported_signing() {
    let cap = standard();
    let body = tool_call("get_products", json!({}));
    let input_only = post("https://h/mcp", &body).with_header("Signature-Input", INPUT);
    let decision = decide(&cap, Binding::JsonRpc, &input_only, FallbackCredential::Valid);
    assert_eq!(code(&decision), Some("request_signature_header_malformed"));
    assert_eq!(decision.error().unwrap().step(), Step::new(1));

    // Signing unsupported: headers are ignored, nothing is gated.
    let unsupported = VerifierCapability::unsupported();
    assert_eq!(unsupported, capability(json!({})));
    let on_record = capability(json!({"supported": false, "covers_content_digest": "either"}));
    assert_eq!(
        (on_record.supported(), on_record.covers_content_digest()),
        (false, Some(DigestCoverage::Either))
    );
    for fallback in [FallbackCredential::Absent, FallbackCredential::Valid] {
        for msg in [input_only.clone(), signed(post("https://h/mcp", &body))] {
            assert!(matches!(
                decide(&unsupported, Binding::JsonRpc, &msg, fallback),
                Decision::Accept { .. }
            ));
        }
    }
    // ...but ambiguous bodies are still rejected.
    let msg = post("https://h/mcp", r#"{"method":"a","method":"b"}"#);
    assert_eq!(
        code(&decide(&unsupported, Binding::JsonRpc, &msg, FallbackCredential::Valid)),
        Some("request_body_malformed")
    );
}

#[test]
fn shadow_mode() {
    let cap = standard();
    let body = tool_call("update_media_buy", json!({"media_buy_id": "mb_1"}));
    let unsigned = post("https://h/mcp", &body);

    // Unsigned: recorded; carried only by a fallback credential.
    let decision = decide(&cap, Binding::JsonRpc, &unsigned, FallbackCredential::Absent);
    let Decision::Reject(Rejection::Unauthenticated { warning }) = &decision else {
        panic!("{decision:?}")
    };
    assert_eq!(warning.code_str(), "request_signature_required");
    let verdict = decide(&cap, Binding::JsonRpc, &unsigned, FallbackCredential::Valid)
        .verdict::<()>()
        .unwrap();
    assert_eq!(verdict.action(), Action::AcceptWithWarning);
    assert_eq!(verdict.authentication_source(), Some(AuthSource::Fallback));

    // Signed: failures are shadowed except a malformed pair or body; success establishes the signer.
    let msg = signed(post("https://h/mcp", &body));
    let plan = |fallback| match decide(&cap, Binding::JsonRpc, &msg, fallback) {
        Decision::Verify(plan) => plan,
        other => panic!("{other:?}"),
    };
    assert!(plan(FallbackCredential::Absent).is_shadow());
    for (code, step) in [
        (ErrorCode::SignatureInvalid, 10),
        (ErrorCode::ComponentsIncomplete, 6),
        (ErrorCode::Replayed, 12),
        (ErrorCode::JwksUnavailable, 7),
    ] {
        let with = plan(FallbackCredential::Valid).conclude::<()>(Err(failure(code, step)));
        assert_eq!(with.action(), Action::AcceptWithWarning, "{code:?}");
        assert!(with.verified_signer().is_none());
        let without = plan(FallbackCredential::Absent).conclude::<()>(Err(failure(code, step)));
        assert_eq!(without.action(), Action::RejectUnauthenticated, "{code:?}");
        assert_eq!(without.warning().unwrap().code(), code);
    }
    for (code, step) in [(ErrorCode::HeaderMalformed, 1), (ErrorCode::BodyMalformed, 14)] {
        let verdict = plan(FallbackCredential::Valid).conclude::<()>(Err(failure(code, step)));
        assert_eq!(verdict.error().map(VerifyError::code), Some(code));
    }
    let verdict = plan(FallbackCredential::Absent).conclude(Ok("agent"));
    assert_eq!(
        (verdict.action(), verdict.verified_signer()),
        (Action::Accept, Some(&"agent"))
    );
}

#[test]
fn failures_reject_outside_shadow_mode_even_with_a_fallback_credential() {
    let cap = standard();
    for name in ["create_media_buy", "get_products", "not_listed"] {
        let body = tool_call(name, json!({}));
        let msg = signed(post("https://h/mcp", &body));
        let Decision::Verify(plan) = decide(&cap, Binding::JsonRpc, &msg, FallbackCredential::Valid) else {
            panic!("{name}")
        };
        assert!(!plan.is_shadow());
        let verdict = plan.conclude::<()>(Err(failure(ErrorCode::DigestMismatch, 11)));
        assert_eq!(
            verdict.error().map(VerifyError::code_str),
            Some("request_signature_digest_mismatch")
        );
    }
}

#[test]
fn webhook_registration_demands_a_signature() {
    let cap = standard();
    let arguments = json!({
        "media_buy_id": "mb_1",
        "push_notification_config": {"url": "https://buyer.example/hook", "authentication": {"schemes": ["Bearer"], "credentials": "x"}}
    });
    for name in ["update_media_buy", "get_products", "not_listed"] {
        let body = tool_call(name, arguments.clone());
        let unsigned = post("https://h/mcp", &body);
        assert!(resolve(Binding::JsonRpc, &unsigned)
            .unwrap()
            .registers_webhook_authentication());
        for fallback in [FallbackCredential::Absent, FallbackCredential::Valid] {
            let decision = decide(&cap, Binding::JsonRpc, &unsigned, fallback);
            assert_eq!(code(&decision), Some("request_signature_required"), "{name}");
        }
        // Signed: no shadowing, even for a warn_for operation.
        let Decision::Verify(plan) = decide(&cap, Binding::JsonRpc, &signed(unsigned), FallbackCredential::Valid)
        else {
            panic!("{name}")
        };
        assert!(!plan.is_shadow());
        let verdict = plan.conclude::<()>(Err(failure(ErrorCode::SignatureInvalid, 10)));
        assert_eq!(verdict.action(), Action::Reject);
    }
    // Without the block, or on a seller that does not sign, nothing is demanded.
    let body = tool_call("get_products", json!({"push_notification_config": {"url": "u"}}));
    assert!(matches!(
        decide(
            &cap,
            Binding::JsonRpc,
            &post("https://h/mcp", &body),
            FallbackCredential::Absent
        ),
        Decision::Accept { .. }
    ));
    let body = tool_call("get_products", arguments);
    let msg = post("https://h/mcp", &body);
    assert!(matches!(
        decide(
            &VerifierCapability::unsupported(),
            Binding::JsonRpc,
            &msg,
            FallbackCredential::Absent
        ),
        Decision::Accept { .. }
    ));
}

#[test]
fn capability_configuration_errors() {
    let base = |extra: serde_json::Value| {
        let mut v = json!({"supported": true, "covers_content_digest": "required"});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        VerifierCapability::from_json(&v)
    };
    assert_eq!(
        VerifierCapability::from_json(&json!([])),
        Err(CapabilityError::NotAnObject)
    );
    assert_eq!(
        VerifierCapability::from_json(&json!({"supported": true})),
        Err(CapabilityError::MissingCoverage)
    );
    assert!(matches!(
        base(json!({"supported": "yes"})),
        Err(CapabilityError::WrongType { field: "supported", .. })
    ));
    assert!(matches!(
        base(json!({"covers_content_digest": "maybe"})),
        Err(CapabilityError::UnknownCoverage(_))
    ));
    assert!(matches!(
        base(json!({"covers_content_digest": 1})),
        Err(CapabilityError::WrongType { .. })
    ));
    assert!(matches!(
        base(json!({"required_for": "create_media_buy"})),
        Err(CapabilityError::WrongType { .. })
    ));
    assert!(matches!(
        base(json!({"required_for": [1]})),
        Err(CapabilityError::WrongType { .. })
    ));
    assert!(matches!(
        base(json!({"required_for": ["tasks/cancel"]})),
        Err(CapabilityError::NamespaceViolation { .. })
    ));
    assert!(matches!(
        base(json!({"warn_for": ["Create_Media_Buy"]})),
        Err(CapabilityError::InvalidName { .. })
    ));
    assert!(matches!(
        base(json!({"protocol_methods_warn_for": ["get_products"]})),
        Err(CapabilityError::NamespaceViolation { .. })
    ));
    assert!(matches!(
        base(json!({"extra": 1})),
        Err(CapabilityError::UnknownField(_))
    ));
    assert_eq!(
        VerifierCapability::from_json(&json!({"supported": false, "warn_for": ["get_products"]})),
        Err(CapabilityError::ListsWithoutSupport { field: "warn_for" })
    );
    let dup = br#"{"supported":true,"covers_content_digest":"required","required_for":[],"required_for":["create_media_buy"]}"#;
    assert!(matches!(
        VerifierCapability::from_slice(dup),
        Err(CapabilityError::Json(_))
    ));
    let ok =
        br#"{"supported":true,"covers_content_digest":"required","protocol_methods_required_for":["tasks/cancel"]}"#;
    let cap = VerifierCapability::from_slice(ok).unwrap();
    assert_eq!(VerifierCapability::from_json(&cap.to_json()).unwrap(), cap);
    assert_eq!(cap.to_json()["protocol_methods_required_for"], json!(["tasks/cancel"]));
    assert!(cap.to_json().get("protocol_methods_warn_for").is_none());
    let full = standard();
    assert_eq!(VerifierCapability::from_json(&full.to_json()).unwrap(), full);
    for err in [
        CapabilityError::MissingCoverage,
        CapabilityError::UnknownField("x".into()),
    ] {
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn verdict_accessors() {
    let d = decide(
        &standard(),
        Binding::JsonRpc,
        &signed(post("https://h/mcp", &tool_call("x", json!({})))),
        FallbackCredential::Absent,
    );
    assert!(d.verdict::<()>().is_none());
    assert!(d.error().is_none());
    let Decision::Verify(plan) = d else { panic!() };
    let verdict: Verdict<u8> = plan.conclude(Err(failure(ErrorCode::KeyRevoked, 9)));
    assert_eq!(verdict.request(), None);
    assert_eq!(verdict.authentication_source(), None);
    assert_eq!(verdict.warning(), None);
    assert_eq!(
        verdict.error().unwrap().www_authenticate().as_deref(),
        Some(r#"Signature error="request_signature_key_revoked""#)
    );
}

/// A generated A2A Part: which kind of member it carries.
#[derive(Debug, Clone)]
enum Part {
    Text,
    Data(Option<&'static str>),
    File,
    KindMismatch,
    TextAndData,
}

impl Part {
    fn json(&self) -> serde_json::Value {
        match self {
            Part::Text => json!({"text": "create_media_buy please"}),
            Part::Data(Some(skill)) => json!({"kind": "data", "data": {"skill": skill, "input": {}}}),
            Part::Data(None) => json!({"data": {"input": {}}}),
            Part::File => json!({"url": "https://cdn.example/x.mp4"}),
            Part::KindMismatch => json!({"kind": "text", "data": {"skill": "create_media_buy"}}),
            Part::TextAndData => json!({"text": "x", "data": {"skill": "get_products"}}),
        }
    }
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        Just(Part::Text),
        prop::sample::select(vec![Some("create_media_buy"), Some("get_products"), Some(""), None]).prop_map(Part::Data),
        Just(Part::File),
        Just(Part::KindMismatch),
        Just(Part::TextAndData),
    ]
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_requests(
        method in "[A-Za-z]{0,7}",
        url in "\\PC{0,40}",
        body in prop::collection::vec(any::<u8>(), 0..200),
        sig in any::<(bool, bool)>(),
    ) {
        let mut msg = Message::request(method.as_str(), url.as_str()).with_body(&body[..]);
        if sig.0 { msg = msg.with_header("Signature-Input", INPUT); }
        if sig.1 { msg = msg.with_header("Signature", SIGNATURE); }
        for binding in [Binding::JsonRpc, Binding::A2aHttpJson, Binding::OperationPath, Binding::infer(&url)] {
            let _ = decide(&standard(), binding, &msg, FallbackCredential::Absent);
        }
    }

    /// The resolved skill is the one of the only Part that is a DataPart,
    /// and only when every other Part is a plain TextPart.
    #[test]
    fn a2a_resolution_matches_the_model(parts in prop::collection::vec(part(), 0..5), stream in any::<bool>()) {
        let method = if stream { "message/stream" } else { "SendMessage" };
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": method,
            "params": {"message": {"parts": parts.iter().map(Part::json).collect::<Vec<_>>()}}
        }).to_string();
        let msg = post("https://h/a2a", &body);
        let data: Vec<_> = parts.iter().filter(|p| matches!(p, Part::Data(_))).collect();
        let clean = parts.iter().all(|p| matches!(p, Part::Text | Part::Data(_)));
        let expected = match (clean, data.as_slice()) {
            (true, [Part::Data(Some(skill))]) if !skill.is_empty() => Some(*skill),
            _ => None,
        };
        let resolved = resolve(Binding::JsonRpc, &msg);
        prop_assert_eq!(resolved.as_ref().ok().and_then(|r| r.operation()), expected);
        if expected.is_none() {
            prop_assert_eq!(resolved.unwrap_err().code_str(), "request_body_malformed");
        }
    }

    /// A valid fallback credential never turns an acceptance into a rejection.
    #[test]
    fn fallback_is_monotonic(name in prop::sample::select(vec!["create_media_buy", "update_media_buy", "get_products", "x"]),
                             auth in any::<bool>()) {
        let arguments = if auth { json!({"push_notification_config": {"authentication": {}}}) } else { json!({}) };
        let body = tool_call(name, arguments);
        let msg = post("https://h/mcp", &body);
        let absent = decide(&standard(), Binding::JsonRpc, &msg, FallbackCredential::Absent);
        let valid = decide(&standard(), Binding::JsonRpc, &msg, FallbackCredential::Valid);
        if matches!(absent, Decision::Accept { .. }) {
            let accepted = matches!(valid, Decision::Accept { .. });
            prop_assert!(accepted);
        }
        if auth {
            prop_assert_eq!(code(&valid), Some("request_signature_required"));
        }
    }
}
