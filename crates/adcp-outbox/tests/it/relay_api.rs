use crate::support::*;
use adcp_outbox::relay::{openapi_document, RelayApi};
use adcp_outbox::{EventState, ListFilter, Outbox};
use adcp_webhook::DestinationPolicy;
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

fn api(outbox: &Outbox) -> axum::Router {
    RelayApi::new(outbox.clone(), DestinationPolicy::default(), ["default".to_owned()]).router()
}

async fn call(
    router: &axum::Router,
    method: &str,
    uri: &str,
    ctype: Option<&str>,
    body: Vec<u8>,
    auth: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(c) = ctype {
        req = req.header("content-type", c);
    }
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let res = router
        .clone()
        .oneshot(req.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 22).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn post(router: &axum::Router, body: &Value) -> (StatusCode, Value) {
    call(
        router,
        "POST",
        "/v1/events",
        Some("application/json"),
        serde_json::to_vec(body).unwrap(),
        None,
    )
    .await
}

fn task(op: &str) -> Value {
    json!({"task_id": "task_1", "task_type": "create_media_buy", "status": "completed",
           "timestamp": "2026-04-18T12:00:00Z", "operation_id": op, "result": {"media_buy_id": "mb_1"}})
}

fn account_event() -> Value {
    json!({"notification_type": "account.status_changed", "notification_id": "acct_1.status.7", "subscriber_id": "sub_1",
           "fired_at": "2026-04-18T12:00:00Z", "account_id": "acc_1", "status": "active",
           "previous_status": "pending_approval", "observed_at": "2026-04-18T11:59:00Z", "reason_code": "seller_approved"})
}

async fn count(outbox: &Outbox) -> usize {
    outbox
        .list(&ListFilter {
            limit: 1000,
            ..ListFilter::default()
        })
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn a_task_envelope_is_enqueued_with_the_registration_echoed_and_a_key_generated() {
    let (outbox, _) = outbox("api-ok", fast_retry(), None);
    let router = api(&outbox);
    let mut payload = task("op_1");
    payload.as_object_mut().unwrap().remove("operation_id");
    let request = json!({"destination": {"url": "https://buyer.example/hooks/op_1", "operation_id": "op_1", "token": "tok_123456789"},
                         "payload": payload, "principal": "buyer-1", "resources": ["media_buy:mb_1"]});
    let (status, body) = post(&router, &request).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let key = body["idempotency_key"].as_str().unwrap().to_owned();
    let (status, view) = call(&router, "GET", &format!("/v1/events/{id}"), None, vec![], None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view["state"], "pending");
    assert_eq!(view["idempotency_key"], key.as_str());
    // A client retrying its POST sends its own key: same id.
    let mut keyed = request.clone();
    keyed["payload"]["idempotency_key"] = json!("whk_client_key_0001");
    let (s1, b1) = post(&router, &keyed).await;
    let (s2, b2) = post(&router, &keyed).await;
    assert_eq!((s1, s2), (StatusCode::ACCEPTED, StatusCode::ACCEPTED));
    assert_eq!(b1["id"], b2["id"]);
    let mut changed = keyed.clone();
    changed["payload"]["result"]["media_buy_id"] = json!("mb_2");
    let (s3, b3) = post(&router, &changed).await;
    assert_eq!(s3, StatusCode::CONFLICT, "{b3}");
    assert_eq!(b3["error"], "idempotency_key_conflict");
    let notification = json!({"destination": {"url": "https://buyer.example/n"}, "notification_type": "account.status_changed", "payload": account_event()});
    let (s4, b4) = post(&router, &notification).await;
    assert_eq!(s4, StatusCode::ACCEPTED, "{b4}");
    // A window above the type's default only with the buyer's opt-in.
    let mut held = json!({"destination": {"url": "https://buyer.example/imp", "coalescing_opt_in_seconds": 900},
        "notification_type": "impairment", "coalescing_key": "imp_1", "coalescing_window_seconds": 600,
        "payload": {"task_id": "mb_1", "task_type": "create_media_buy", "status": "working", "timestamp": "2026-04-18T12:00:00Z",
                    "operation_id": "op_1", "result": {"notification_type": "impairment", "impairment_id": "imp_1"}}});
    let (s5, b5) = post(&router, &held).await;
    assert_eq!(s5, StatusCode::ACCEPTED, "{b5}");
    held["destination"]
        .as_object_mut()
        .unwrap()
        .remove("coalescing_opt_in_seconds");
    held["payload"]["result"]["impairment_id"] = json!("imp_2");
    held["coalescing_key"] = json!("imp_2");
    let (s6, b6) = post(&router, &held).await;
    assert_eq!(
        (s6, b6["error"].as_str().unwrap()),
        (StatusCode::BAD_REQUEST, "coalescing_window_too_long")
    );
    assert_eq!(count(&outbox).await, 4);
}

#[tokio::test]
async fn every_bad_request_is_refused_and_enqueues_nothing() {
    let (outbox, _) = outbox("api-bad", fast_retry(), None);
    let router = api(&outbox);
    let ok_dest = json!({"url": "https://buyer.example/hooks/op_1", "operation_id": "op_1"});
    let cases: Vec<(&str, Value, StatusCode, &str)> = vec![
        (
            "no destination",
            json!({"payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "invalid_destination",
        ),
        (
            "destination without url",
            json!({"destination": {"operation_id": "x"}, "payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "invalid_destination",
        ),
        (
            "ssrf",
            json!({"destination": {"url": "https://127.0.0.1/x"}, "payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "destination_refused",
        ),
        (
            "plain http",
            json!({"destination": {"url": "http://buyer.example/x"}, "payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "destination_refused",
        ),
        (
            "bad legacy auth",
            json!({"destination": {"url": "https://buyer.example/x", "authentication": {"schemes": ["Basic"], "credentials": "x"}}, "payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "invalid_destination",
        ),
        (
            "unknown member",
            json!({"destination": ok_dest, "payload": task("op_1"), "priority": 1}),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "payload not object",
            json!({"destination": ok_dest, "payload": [1]}),
            StatusCode::BAD_REQUEST,
            "invalid_payload",
        ),
        (
            "type mismatch",
            json!({"destination": {"url": "https://buyer.example/n"}, "notification_type": "account.change_recorded", "payload": account_event()}),
            StatusCode::BAD_REQUEST,
            "notification_type_mismatch",
        ),
        (
            "type missing",
            json!({"destination": {"url": "https://buyer.example/n"}, "payload": account_event()}),
            StatusCode::BAD_REQUEST,
            "notification_type_missing",
        ),
        (
            "type for a task",
            json!({"destination": ok_dest, "notification_type": "impairment", "payload": task("op_1")}),
            StatusCode::BAD_REQUEST,
            "notification_type_mismatch",
        ),
        (
            "unknown type",
            json!({"destination": {"url": "https://buyer.example/n"}, "notification_type": "made.up", "payload": {"notification_type": "made.up", "x": 1}}),
            StatusCode::BAD_REQUEST,
            "unknown_notification_type",
        ),
        (
            "invalid for its kind",
            json!({"destination": ok_dest, "payload": {"task_id": "t", "status": "completed"}}),
            StatusCode::BAD_REQUEST,
            "invalid_payload",
        ),
        (
            "operation_id mismatch",
            json!({"destination": ok_dest, "payload": task("op_2")}),
            StatusCode::BAD_REQUEST,
            "operation_id_mismatch",
        ),
        (
            "token mismatch",
            json!({"destination": {"url": "https://buyer.example/x", "token": "tok_a"}, "payload": {"token": "tok_b", "task_id": "t", "task_type": "create_media_buy", "status": "completed", "timestamp": "2026-04-18T12:00:00Z", "operation_id": "o"}}),
            StatusCode::BAD_REQUEST,
            "token_mismatch",
        ),
        (
            "unknown scope",
            json!({"destination": ok_dest, "payload": task("op_1"), "signing_scope": "tenant-9"}),
            StatusCode::BAD_REQUEST,
            "unknown_signing_scope",
        ),
        (
            "bad resources",
            json!({"destination": ok_dest, "payload": task("op_1"), "resources": [1]}),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "bad window",
            json!({"destination": ok_dest, "payload": task("op_1"), "coalescing_window_seconds": -1}),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "bad opt-in",
            json!({"destination": {"url": "https://buyer.example/n", "coalescing_opt_in_seconds": "x"}, "notification_type": "account.status_changed", "payload": account_event()}),
            StatusCode::BAD_REQUEST,
            "invalid_destination",
        ),
        (
            "window too long",
            json!({"destination": {"url": "https://buyer.example/n"}, "notification_type": "account.status_changed", "payload": account_event(), "coalescing_key": "acc_1", "coalescing_window_seconds": 60}),
            StatusCode::BAD_REQUEST,
            "coalescing_window_too_long",
        ),
    ];
    for (what, body, status, code) in cases {
        let (s, b) = post(&router, &body).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or_default()),
            (status, code),
            "{what}: {b}"
        );
        assert!(b["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}");
    }
    let (s, b) = call(
        &router,
        "POST",
        "/v1/events",
        Some("application/json"),
        b"{\"destination\": ".to_vec(),
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let dup = br#"{"destination": {"url": "https://buyer.example/x"}, "destination": {"url": "https://evil.example/x"}, "payload": {}}"#;
    let (s, b) = call(
        &router,
        "POST",
        "/v1/events",
        Some("application/json"),
        dup.to_vec(),
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (StatusCode::BAD_REQUEST, "invalid_json")
    );
    let (s, b) = call(&router, "POST", "/v1/events", Some("text/plain"), b"{}".to_vec(), None).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );
    let big = vec![b' '; adcp_outbox::relay::DEFAULT_MAX_REQUEST_BYTES + 1];
    let (s, b) = call(&router, "POST", "/v1/events", Some("application/json"), big, None).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
    );
    for q in [
        "",
        "?limit=201&url=https://x.example",
        "?url=https://x.example&principal=p",
        "?principal=p&limit=0",
        "?principal=p&x=1",
    ] {
        let (s, b) = call(&router, "GET", &format!("/v1/activity{q}"), None, vec![], None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {b}");
    }
    let (s, _) = call(&router, "GET", "/v1/events/evt_nope", None, vec![], None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(count(&outbox).await, 0);
}

#[tokio::test]
async fn a_token_guards_every_route_but_healthz() {
    let (outbox, _) = outbox("api-auth", fast_retry(), None);
    let router = RelayApi::new(outbox.clone(), DestinationPolicy::default(), ["default".to_owned()])
        .with_token("s3cret-token-0123456789")
        .router();
    let body = serde_json::to_vec(&json!({"destination": {"url": "https://buyer.example/hooks/op_1", "operation_id": "op_1"}, "payload": task("op_1")})).unwrap();
    for auth in [None, Some("Bearer wrong"), Some("s3cret-token-0123456789")] {
        let (s, b) = call(
            &router,
            "POST",
            "/v1/events",
            Some("application/json"),
            body.clone(),
            auth,
        )
        .await;
        assert_eq!(
            (s, b["error"].as_str().unwrap()),
            (StatusCode::UNAUTHORIZED, "unauthorized")
        );
    }
    assert_eq!(count(&outbox).await, 0);
    let (s, _) = call(
        &router,
        "POST",
        "/v1/events",
        Some("application/json"),
        body,
        Some("Bearer s3cret-token-0123456789"),
    )
    .await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (s, _) = call(&router, "GET", "/metrics", None, vec![], None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = call(&router, "GET", "/healthz", None, vec![], None).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn the_openapi_document_matches_the_routes() {
    let (outbox, _) = outbox("api-doc", fast_retry(), None);
    let router = api(&outbox);
    let e = outbox
        .enqueue(event(
            json!({"notification_type": "account.status_changed"}),
            "https://b.example/x",
        ))
        .await
        .unwrap();
    let doc = openapi_document();
    let (s, served) = call(&router, "GET", "/openapi.json", None, vec![], None).await;
    assert_eq!((s, &served), (StatusCode::OK, &doc));
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 15);
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            let uri = path.replace("{id}", e.id.as_str()).replace("{media_buy_id}", "mb_none");
            let uri = if uri == "/v1/activity" {
                format!("{uri}?principal=p")
            } else {
                uri
            };
            let (s, b) = call(
                &router,
                &method.to_uppercase(),
                &uri,
                Some("application/json"),
                b"{}".to_vec(),
                None,
            )
            .await;
            assert!(
                s != StatusCode::NOT_FOUND || !b.is_null(),
                "{method} {path}: route missing"
            );
            assert_ne!(s, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            let documented: Vec<&String> = ops[method]["responses"].as_object().unwrap().keys().collect();
            assert!(
                documented.iter().any(|c| c.as_str() == s.as_str()),
                "{method} {path} answered {s}, documented {documented:?}"
            );
        }
    }
    let (s, _) = call(&router, "GET", "/v1/nothing", None, vec![], None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(outbox.get(&e.id).await.unwrap().unwrap().state, EventState::Pending);
}

#[tokio::test]
async fn channels_through_the_api_register_take_events_pause_activate_and_close() {
    let sink = Sink::start(|hit, _| match hit.body.get("challenge") {
        Some(c) => Answer::With(
            200,
            vec![("content-type", "application/json".to_owned())],
            json!({"challenge": c}).to_string(),
        ),
        None => Answer::Status(200),
    })
    .await;
    let (outbox, _) = outbox("api-channels", fast_retry(), None);
    let key = adcp_sign::SoftwareSigner::generate(adcp_sign::Algorithm::Ed25519, "seller-test-1").unwrap();
    let sender =
        adcp_webhook::WebhookSender::builder(adcp_sign::HttpSigner::webhook(adcp_sign::BoxSigner::new(key)).unwrap())
            .destination_policy(DestinationPolicy::default().dangerously_allow_plain_http_loopback())
            .build()
            .unwrap();
    let router = RelayApi::new(
        outbox.clone(),
        DestinationPolicy::default().dangerously_allow_plain_http_loopback(),
        ["default".to_owned()],
    )
    .with_activator(std::sync::Arc::new(sender), "https://seller.example/adcp")
    .router();
    let put = async |body: Value| {
        call(
            &router,
            "PUT",
            "/v1/channels",
            Some("application/json"),
            serde_json::to_vec(&body).unwrap(),
            None,
        )
        .await
    };
    let send = async |body: Value| post(&router, &body).await;

    // A buy's push_notification_config, with legacy credentials kept write-only.
    let config = json!({"url": sink.url("/buy"), "token": "token_one_0123456789", "operation_id": "op_1",
                        "authentication": {"schemes": ["Bearer"], "credentials": "b".repeat(32)}});
    let (s, view) =
        put(json!({"kind": "push_notification_config", "media_buy_id": "mb_1", "registration": config})).await;
    assert_eq!((s, view["state"].as_str()), (StatusCode::OK, Some("active")), "{view}");
    assert!(view["registration"]["authentication"].get("credentials").is_none());
    let id = view["id"].as_str().unwrap().to_owned();
    let (s, done) = send(json!({"channel": id, "payload": task("op_1")})).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{done}");
    let first = outbox
        .get(&adcp_outbox::EventId::parse(done["id"].as_str().unwrap()).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.url, sink.url("/buy"));
    let (s, b) = send(json!({"channel": id, "destination": {"url": sink.url("/x")}, "payload": task("op_1")})).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let (s, _) = call(&router, "POST", &format!("/v1/channels/{id}/pause"), None, vec![], None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(outbox.get(&first.id).await.unwrap().unwrap().state, EventState::Refused);
    let (s, b) = send(json!({"channel": id, "payload": task("op_1")})).await;
    assert_eq!((s, b["error"].as_str()), (StatusCode::CONFLICT, Some("channel_paused")));
    let (s, _) = call(
        &router,
        "POST",
        &format!("/v1/channels/{id}/resume"),
        None,
        vec![],
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);

    // An account subscriber: refused until its challenge, through the relay, succeeded.
    let entry = json!({"subscriber_id": "sub-1", "url": sink.url("/acct"), "event_types": ["account.status_changed"]});
    let (_, sub) = put(json!({"kind": "account", "account_id": "acc_1", "registration": entry})).await;
    assert_eq!(sub["state"], "pending_activation");
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    let note = account_event();
    let (s, b) = send(json!({"channel": sub_id, "notification_type": "account.status_changed", "payload": note})).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::CONFLICT, Some("channel_not_activated")),
        "{b}"
    );
    let (s, b) = call(
        &router,
        "POST",
        &format!("/v1/channels/{sub_id}/activate"),
        None,
        vec![],
        None,
    )
    .await;
    assert_eq!(
        (s, b["state"].as_str(), b["activation"]["activated"].as_bool()),
        (StatusCode::OK, Some("active"), Some(true)),
        "{b}"
    );
    let (s, _) = send(json!({"channel": sub_id, "notification_type": "account.status_changed", "payload": note})).await;
    assert_eq!(s, StatusCode::ACCEPTED);

    // Terminating the buy closes its channel for good.
    let (s, b) = call(&router, "POST", "/v1/buys/mb_1/terminate", None, vec![], None).await;
    assert_eq!(
        (s, b["closed"][0]["state"].as_str()),
        (StatusCode::OK, Some("closed")),
        "{b}"
    );
    let (s, b) = send(json!({"channel": id, "payload": task("op_1")})).await;
    assert_eq!((s, b["error"].as_str()), (StatusCode::CONFLICT, Some("channel_closed")));
    let (s, b) = call(&router, "GET", "/v1/channels/nope:1", None, vec![], None).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_channel"))
    );
}
