//! Each transport's wire shape resolves, at the verifier, to the operation
//! the client meant; and the SSRF rules hold before anything is sent.

use crate::client_seller::{buyer_key, capabilities, start, TestClock};
use adcp_jwks::{ReservedRange, SsrfError};
use adcp_request::{ClientError, Counterparty, SigningClient, SigningReason, TargetPolicy, Transport};
use adcp_sigbase::Message;
use adcp_verify::request_policy::{resolve, Binding};
use adcp_verify::Profile;
use serde_json::json;

fn required() -> serde_json::Value {
    json!({"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"],
        "protocol_methods_required_for": ["tasks/cancel"]})
}

async fn call_through(transport: Transport, binding: Binding, path: &str) {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        binding,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .build()
        .unwrap();
    let to = Counterparty::new(format!("{}{path}", seller.base), transport);
    let args = json!({"plan_id": "p1", "budget": {"total": 1000, "currency": "USD"}});
    let response = client.call(&to, "create_media_buy", &args).await.unwrap();
    assert_eq!(response.status(), 200, "{transport:?}: {:?}", seller.seen());
    assert_eq!(response.decision().reason, SigningReason::RequiredFor);
    assert_eq!(response.result().unwrap()["operation"], "create_media_buy");
    let seen = seller.seen();
    assert_eq!(seen[0].operation.as_deref(), Some("create_media_buy"), "{transport:?}");
    assert!(seen[0].signed());

    // The body shape, and what the verifier's resolver reads from it.
    let bytes = serde_json::to_vec(&seen[0].body).unwrap();
    let url = format!("https://seller.example{}", seen[0].path);
    let resolved = resolve(binding, &Message::request("POST", url.as_str()).with_body(&bytes[..])).unwrap();
    assert_eq!(resolved.operation(), Some("create_media_buy"));
    match transport {
        Transport::Mcp => {
            assert_eq!(seen[0].body["method"], "tools/call");
            assert_eq!(seen[0].body["params"]["name"], "create_media_buy");
            assert_eq!(seen[0].body["params"]["arguments"], args);
            assert_eq!(resolved.protocol_method(), None);
        }
        Transport::A2a => {
            assert_eq!(seen[0].body["method"], "SendMessage");
            let parts = seen[0].body["params"]["message"]["parts"].as_array().unwrap();
            assert_eq!(parts.len(), 1);
            assert_eq!(parts[0]["data"], json!({"skill": "create_media_buy", "input": args}));
            assert_eq!(resolved.protocol_method(), Some("SendMessage"));
        }
        Transport::Raw => {
            assert_eq!(seen[0].path, "/adcp/create_media_buy");
            assert_eq!(seen[0].body, args);
        }
    }
    // Priming went over the same transport and resolved too.
    assert_eq!(seller.primings(), 1, "{transport:?}");
}

#[tokio::test]
async fn mcp_tools_call_resolves_to_the_operation() {
    call_through(Transport::Mcp, Binding::JsonRpc, "/mcp").await;
}

#[tokio::test]
async fn a2a_send_message_resolves_to_the_skill() {
    call_through(Transport::A2a, Binding::JsonRpc, "/a2a").await;
}

#[tokio::test]
async fn raw_posts_to_the_operation_path() {
    call_through(Transport::Raw, Binding::OperationPath, "/adcp/").await;
}

#[tokio::test]
async fn protocol_methods_match_on_the_json_rpc_method() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock.clone(),
    )
    .await;
    let client = SigningClient::builder(key)
        .target_policy(TargetPolicy::default().dangerously_allow_plain_http())
        .clock(clock)
        .sign_unlisted(false)
        .build()
        .unwrap();
    let mcp = Counterparty::mcp(&seller.base);
    let response = client
        .call_method(&mcp, "tasks/cancel", &json!({"id": "t1"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        (response.decision().signed, response.decision().reason),
        (true, SigningReason::RequiredFor)
    );
    let response = client
        .call_method(&mcp, "tasks/get", &json!({"id": "t1"}))
        .await
        .unwrap();
    assert_eq!(
        (response.decision().signed, response.decision().reason),
        (false, SigningReason::UnlistedNotSigned)
    );
    let seen = seller.seen();
    assert_eq!(seen[0].protocol_method.as_deref(), Some("tasks/cancel"));
    assert!(seen[0].signed() && !seen[1].signed());

    let raw = Counterparty::raw(&seller.base);
    assert!(matches!(
        client.call_method(&raw, "tasks/cancel", &json!({})).await,
        Err(ClientError::InvalidCall { .. })
    ));
    assert!(matches!(
        client.call(&mcp, "../create_media_buy", &json!({})).await,
        Err(ClientError::InvalidCall { .. })
    ));
}

#[tokio::test]
async fn plain_http_and_loopback_are_refused_without_the_development_switch() {
    let key = buyer_key();
    let jwks = key.jwks().unwrap().to_public_json();
    let clock = TestClock::default();
    let seller = start(
        Binding::JsonRpc,
        Profile::request_v3_2(),
        required(),
        vec![capabilities(required())],
        &jwks,
        clock,
    )
    .await;
    let client = SigningClient::builder(key).build().unwrap();
    let port = seller.base.rsplit(':').next().unwrap().to_owned();
    let loopback = SsrfError::ReservedAddress(ReservedRange::Loopback);
    for (url, want) in [
        (seller.base.clone(), SsrfError::SchemeNotAllowed),
        (format!("https://127.0.0.1:{port}/mcp"), loopback.clone()),
        (format!("https://[::1]:{port}/mcp"), loopback.clone()),
        // A name is resolved once and its addresses checked at connect time.
        (format!("https://localhost:{port}/mcp"), loopback.clone()),
    ] {
        let err = client
            .call(&Counterparty::mcp(&url), "create_media_buy", &json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ClientError::Untrusted(e) if *e == want),
            "{url}: {err:?}"
        );
        assert_eq!(err.code(), "target_untrusted");
    }
    assert_eq!(seller.primings(), 0);
    assert!(seller.seen().is_empty());
}
