//! The payload model (`adcp_webhook::payload`): every 3.2 webhook kind's
//! schema examples and project fixtures classify to their kind and
//! serialize back unchanged; fixtures are valid against the AdCP JSON
//! Schemas (read from `adcp_vectors::schemas_dir()`, never copied); the
//! detection order, the refusals and the challenge-response validator;
//! and arbitrary JSON never panics the classifier.

use adcp_webhook::payload::{
    AcceptKinds, Challenge, ChallengeResponse, ChallengeResponseError, Channel, PayloadError, PayloadKind,
    WebhookPayload,
};
use adcp_webhook::TaskStatus;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

use crate::common::{fixture, suite_file};

/// Every kind with its project fixture and the channel that delivers it.
const KINDS: [(PayloadKind, Channel); 21] = [
    (PayloadKind::McpTask, Channel::McpTask),
    (PayloadKind::A2aTask, Channel::A2aTask),
    (PayloadKind::CreativeStatusChanged, Channel::AccountNotifications),
    (PayloadKind::CreativeAssignmentChanged, Channel::AccountNotifications),
    (PayloadKind::CreativePurged, Channel::AccountNotifications),
    (PayloadKind::IndicatorsChanged, Channel::AccountNotifications),
    (PayloadKind::AccountStatusChanged, Channel::AccountNotifications),
    (PayloadKind::AccountChangeRecorded, Channel::AccountNotifications),
    (PayloadKind::WholesaleFeed, Channel::AccountNotifications),
    (PayloadKind::ReportingDeliveryReady, Channel::AccountNotifications),
    (PayloadKind::ReportingStatusChanged, Channel::AccountNotifications),
    (PayloadKind::ReportingLedgerChanged, Channel::AccountNotifications),
    (PayloadKind::CapabilitiesChanged, Channel::AgentNotifications),
    (PayloadKind::PrincipalChanged, Channel::AgentNotifications),
    (PayloadKind::CollectionListChanged, Channel::CollectionList),
    (PayloadKind::PropertyListChanged, Channel::PropertyList),
    (PayloadKind::ArtifactBatch, Channel::Artifacts),
    (PayloadKind::RightsRevocation, Channel::RightsRevocation),
    (PayloadKind::AccountChallenge, Channel::AccountNotifications),
    (PayloadKind::AgentChallenge, Channel::AgentNotifications),
    (PayloadKind::Generic, Channel::AccountNotifications),
];

pub(crate) fn schemas() -> Option<PathBuf> {
    adcp_vectors::require_schemas_dir().unwrap_or_else(|e| panic!("{e}"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn classify(value: &Value, channel: Option<Channel>) -> Result<WebhookPayload, PayloadError> {
    WebhookPayload::classify(value, channel, AcceptKinds::All)
}

fn code(value: &Value, channel: Option<Channel>) -> &'static str {
    classify(value, channel)
        .map(|p| p.kind().as_str())
        .unwrap_or_else(PayloadError::code)
}

/// Classifies with and without the channel; both must give `kind` and
/// serialize back to `value`.
fn assert_kind(value: &Value, kind: PayloadKind, channel: Channel, what: &str) -> WebhookPayload {
    let mut last = None;
    for ch in [None, Some(channel)] {
        let payload = classify(value, ch).unwrap_or_else(|e| panic!("{what} ({ch:?}): {}", e.code()));
        assert_eq!(payload.kind(), kind, "{what} ({ch:?})");
        assert_eq!(
            &serde_json::to_value(&payload).unwrap(),
            value,
            "{what} round trip ({ch:?})"
        );
        last = Some(payload);
    }
    last.unwrap()
}

// ---------------------------------------------------------------- schemas

/// Resolves `https://adcontextprotocol.org/schemas/<version>/<path>` (and
/// the unversioned `/schemas/<path>`) to the local schema directory; never
/// the network.
struct LocalSchemas(PathBuf);

impl jsonschema::Retrieve for LocalSchemas {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let rest = uri
            .as_str()
            .strip_prefix("https://adcontextprotocol.org/schemas/")
            .ok_or_else(|| format!("not an AdCP schema: {}", uri.as_str()))?;
        let rest = match rest.split_once('/') {
            Some((version, path)) if version.starts_with(|c: char| c.is_ascii_digit() || c == 'v') => path,
            _ => rest,
        };
        let path = self.0.join(rest);
        // The snapshot's `$ref` closure lacks this one file (an `anyOf`
        // branch of `core/async-response-data.json`). `false` matches
        // nothing, so the other branches still decide: validation is as
        // strict as with the file, except for get_signals results.
        if rest == "signals/get-signals-response.json" && !path.exists() {
            return Ok(Value::Bool(false));
        }
        let text = std::fs::read_to_string(path)?;
        Ok(serde_json::from_str(&text)?)
    }
}

pub(crate) fn validator(dir: &Path, relative: &str) -> jsonschema::Validator {
    let mut schema = read_json(&dir.join(relative));
    // The published files carry no `$id`; give the root the address its
    // relative references are written against.
    schema["$id"] = Value::String(format!("https://adcontextprotocol.org/schemas/3.2.4/{relative}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .should_validate_formats(true)
        .with_retriever(LocalSchemas(dir.to_path_buf()))
        .build(&schema)
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

pub(crate) fn schema_errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn every_kind_has_a_fixture_and_a_channel() {
    for kind in PayloadKind::ALL {
        let (_, channel) = KINDS
            .iter()
            .find(|(k, _)| *k == kind)
            .unwrap_or_else(|| panic!("{kind}"));
        assert!(channel.carries(kind), "{kind} on {}", channel.as_str());
        let _ = fixture(kind);
    }
    let names: std::collections::BTreeSet<_> = PayloadKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names.len(), PayloadKind::ALL.len(), "stable names are distinct");
}

#[test]
fn fixtures_are_valid_against_their_schemas() {
    let Some(dir) = schemas() else { return };
    for (kind, _) in KINDS {
        let Some(schema) = kind.schema() else { continue };
        let v = validator(&dir, schema);
        let value = fixture(kind);
        assert_eq!(schema_errors(&v, &value), Vec::<String>::new(), "{kind}");
    }
}

/// The schema check is not vacuous: each fixture without one of its
/// schema-required members is invalid.
#[test]
fn schema_validation_rejects_fixtures_missing_a_required_member() {
    let Some(dir) = schemas() else { return };
    for (kind, _) in KINDS {
        let Some(schema) = kind.schema() else { continue };
        let v = validator(&dir, schema);
        let required = read_json(&dir.join(schema))["required"].clone();
        for member in required.as_array().unwrap() {
            let mut value = fixture(kind);
            value.as_object_mut().unwrap().remove(member.as_str().unwrap());
            assert!(!v.is_valid(&value), "{kind} without {member}");
        }
    }
}

#[test]
fn fixtures_classify_to_their_kind_and_round_trip() {
    for (kind, channel) in KINDS {
        let value = fixture(kind);
        let payload = assert_kind(&value, kind, channel, kind.as_str());
        // The accessors read the fixture's own members.
        let member = |name: &str| value.get(name).and_then(Value::as_str);
        if kind.is_challenge() {
            assert_eq!(payload.idempotency_key(), None, "{kind}");
            assert_eq!(payload.subscriber_id(), member("subscriber_id"), "{kind}");
        } else if kind != PayloadKind::A2aTask {
            assert_eq!(payload.idempotency_key(), member("idempotency_key"), "{kind}");
        }
        if value.get("notification_type").is_some() {
            assert_eq!(payload.notification_type(), member("notification_type"), "{kind}");
            assert_eq!(payload.notification_id(), member("notification_id"), "{kind}");
            assert_eq!(payload.fired_at(), member("fired_at"), "{kind}");
            assert_eq!(payload.subscriber_id(), member("subscriber_id"), "{kind}");
            assert_eq!(payload.account_id(), member("account_id"), "{kind}");
        }
    }
}

/// Every schema's own `examples[].data` classifies (with and without the
/// channel) and serializes back unchanged.
#[test]
fn schema_examples_classify_and_round_trip() {
    let Some(dir) = schemas() else { return };
    let mut seen = 0;
    for (kind, channel) in KINDS {
        let Some(schema) = kind.schema() else { continue };
        let examples = read_json(&dir.join(schema))["examples"].clone();
        for (i, example) in examples.as_array().into_iter().flatten().enumerate() {
            let data = example.get("data").unwrap_or(example);
            assert_kind(data, kind, channel, &format!("{schema} example {i}"));
            seen += 1;
        }
    }
    assert!(seen >= 15, "{seen} examples");
}

#[test]
fn challenge_response_schema_examples_pass_the_validator() {
    let Some(dir) = schemas() else { return };
    let examples = read_json(&dir.join("core/webhook-challenge-response.json"))["examples"].clone();
    let examples = examples.as_array().unwrap();
    assert_eq!(examples.len(), 2);
    for example in examples {
        let response = ChallengeResponse::from_value(&example["data"]).unwrap();
        assert_eq!(response.to_value(), example["data"]);
        assert_eq!(serde_json::to_value(&response).unwrap(), example["data"]);
    }
}

// ---------------------------------------------------------- conformance

#[test]
fn receiver_envelope_vectors_agree() {
    let Some(file) = suite_file("webhooks/webhook-receiver-envelope.json") else {
        return;
    };
    for v in file["positive"].as_array().unwrap() {
        let payload = assert_kind(
            &v["payload"],
            PayloadKind::McpTask,
            Channel::Reporting,
            v["id"].as_str().unwrap(),
        );
        assert_eq!(payload.notification_type(), Some("scheduled"));
        let WebhookPayload::McpTask(task) = payload else {
            unreachable!()
        };
        let report = task.delivery_report().unwrap().unwrap();
        assert_eq!(report.sequence_number, Some(31));
    }
    for v in file["negative"].as_array().unwrap() {
        let expected = v["expected_error"].as_str().unwrap();
        for ch in [None, Some(Channel::McpTask), Some(Channel::Reporting)] {
            assert_eq!(code(&v["payload"], ch), expected, "{} ({ch:?})", v["id"]);
        }
    }
}

#[test]
fn payload_extraction_vectors_detect_the_same_format() {
    let Some(file) = suite_file("webhooks/webhook-payload-extraction.json") else {
        return;
    };
    for v in file["vectors"].as_array().unwrap() {
        let id = v["id"].as_str().unwrap();
        let payload = &v["payload"];
        match v["expected_format"].as_str().unwrap() {
            "a2a" => {
                let p = assert_kind(payload, PayloadKind::A2aTask, Channel::A2aTask, id);
                let state = payload["status"]["state"].as_str().unwrap();
                assert_eq!(p.task_status().map(TaskStatus::as_str), Some(state), "{id}");
            }
            // Task envelopes; those the vectors write without a key are
            // refused for that reason, not as another kind.
            _ if payload.get("idempotency_key").is_some() => {
                assert_kind(payload, PayloadKind::McpTask, Channel::McpTask, id);
            }
            _ => assert_eq!(code(payload, None), "missing_idempotency_key", "{id}"),
        }
    }
}

// ------------------------------------------------------ detection order

fn merged(base: PayloadKind, extra: Value) -> Value {
    let mut value = fixture(base);
    for (k, v) in extra.as_object().unwrap() {
        value[k] = v.clone();
    }
    value
}

#[test]
fn detection_order_is_fixed() {
    // 1. A challenge wins over a notification_type.
    let v = merged(
        PayloadKind::AccountChallenge,
        json!({"notification_type": "creative.purged"}),
    );
    assert_eq!(code(&v, None), "account_challenge");
    // 2. notification_type wins over a list `event`.
    let v = merged(PayloadKind::CreativePurged, json!({"event": "property_list_changed"}));
    assert_eq!(code(&v, None), "creative_purged");
    // 3. A list `event` wins over the task envelope's members.
    let v = merged(
        PayloadKind::PropertyListChanged,
        json!({"task_id": "t_1", "status": "completed"}),
    );
    assert_eq!(code(&v, None), "property_list_changed");
    // 4. The task envelope wins over a revocation's or a batch's members.
    let v = merged(
        PayloadKind::McpTask,
        json!({"rights_id": "rg_1", "batch_id": "b_1", "artifacts": []}),
    );
    assert_eq!(code(&v, None), "mcp_task");
    // 5. A2A wins over a revocation's members.
    let v = merged(
        PayloadKind::A2aTask,
        json!({"rights_id": "rg_1", "brand_id": "b", "reason": "r", "effective_at": "2027-01-01T00:00:00Z"}),
    );
    assert_eq!(code(&v, None), "a2a_task");
    // 6. A revocation wins over an artifact batch's members.
    let v = merged(
        PayloadKind::RightsRevocation,
        json!({"batch_id": "b_1", "artifacts": [], "media_buy_id": "mb", "timestamp": "2027-01-01T00:00:00Z"}),
    );
    assert_eq!(code(&v, None), "rights_revocation");
    // 7. An artifact batch wins over a generic reading.
    assert_eq!(code(&fixture(PayloadKind::ArtifactBatch), None), "artifact_batch");
}

#[test]
fn a_known_channel_decides_over_the_shape() {
    // The same ambiguous body is read as each channel's kind.
    let v = merged(PayloadKind::McpTask, json!({"event": "property_list_changed"}));
    assert_eq!(
        code(&v, None),
        "missing_envelope_fields",
        "by shape: a list event without its members"
    );
    assert_eq!(code(&v, Some(Channel::McpTask)), "mcp_task");
    assert_eq!(code(&v, Some(Channel::PropertyList)), "missing_envelope_fields");
    let task = fixture(PayloadKind::McpTask);
    assert_eq!(code(&task, Some(Channel::A2aTask)), "missing_envelope_fields");
    assert_eq!(
        code(&task, Some(Channel::AccountNotifications)),
        "missing_envelope_fields"
    );
    assert_eq!(
        code(&fixture(PayloadKind::A2aTask), Some(Channel::McpTask)),
        "missing_envelope_fields"
    );
}

#[test]
fn kinds_a_channel_never_carries_are_unexpected() {
    let cases = [
        (PayloadKind::CapabilitiesChanged, Channel::AccountNotifications),
        (PayloadKind::PrincipalChanged, Channel::AccountNotifications),
        (PayloadKind::AgentChallenge, Channel::AccountNotifications),
        (PayloadKind::AccountChallenge, Channel::AgentNotifications),
        (PayloadKind::PropertyListChanged, Channel::CollectionList),
        (PayloadKind::CollectionListChanged, Channel::PropertyList),
    ];
    for (kind, channel) in cases {
        assert_eq!(
            code(&fixture(kind), Some(channel)),
            "unexpected_payload_kind",
            "{kind} on {}",
            channel.as_str()
        );
    }
    // Account-anchored kinds may also reach agent-level subscribers.
    assert_eq!(
        code(&fixture(PayloadKind::CreativePurged), Some(Channel::AgentNotifications)),
        "creative_purged"
    );
}

// ------------------------------------------------------------- refusals

#[test]
fn a_delivery_report_result_posted_bare_is_refused() {
    let key = "2c5e8a1f-4b7d-4e9a-8c3f-6b1d9e2a5c7f";
    for t in [
        "scheduled",
        "final",
        "delayed",
        "adjusted",
        "window_update",
        "impairment",
    ] {
        let bare = json!({"notification_type": t, "reporting_period": {"start": "2027-01-01T00:00:00Z", "end": "2027-01-02T00:00:00Z"}, "media_buy_deliveries": []});
        let keyed = merged(PayloadKind::CreativePurged, json!({"notification_type": t}));
        for body in [&bare, &keyed] {
            for ch in [
                None,
                Some(Channel::McpTask),
                Some(Channel::AccountNotifications),
                Some(Channel::AgentNotifications),
            ] {
                assert_eq!(code(body, ch), "missing_envelope_fields", "{t} {ch:?}");
            }
        }
        let mut with_key = bare.clone();
        with_key["idempotency_key"] = json!(key);
        assert_eq!(code(&with_key, None), "missing_envelope_fields", "{t} with a key");
    }
    // Impairment-only and report-only shapes, without notification_type.
    for body in [
        json!({"idempotency_key": key, "impairment": {"impairment_id": "imp_1"}, "health": "impaired"}),
        json!({"idempotency_key": key, "media_buy_deliveries": [], "currency": "USD"}),
    ] {
        assert_eq!(code(&body, None), "missing_envelope_fields", "{body}");
    }
}

#[test]
fn delivery_reports_and_impairments_inside_the_envelope_are_typed() {
    let WebhookPayload::McpTask(task) = classify(&fixture(PayloadKind::McpTask), None).unwrap() else {
        panic!()
    };
    let report = task.delivery_report().unwrap().unwrap();
    assert_eq!(
        (report.notification_type.as_str(), report.sequence_number),
        ("final", Some(14))
    );
    assert_eq!(report.currency.as_deref(), Some("EUR"));
    assert!(task.impairment().is_none());

    let impairment = merged(
        PayloadKind::McpTask,
        json!({"notification_id": "imp_77", "status": "working", "result": {"notification_type": "impairment", "impairment": {"impairment_id": "imp_77"}}}),
    );
    let payload = assert_kind(&impairment, PayloadKind::McpTask, Channel::McpTask, "impairment");
    assert_eq!(payload.notification_type(), Some("impairment"));
    assert_eq!(payload.notification_id(), Some("imp_77"));
    assert!(!payload.is_terminal_task());
    let WebhookPayload::McpTask(task) = payload else {
        panic!()
    };
    assert_eq!(task.impairment(), Some(&json!({"impairment_id": "imp_77"})));
    assert!(task.delivery_report().is_none());

    // A result claiming to be a report but missing its members.
    let broken = merged(
        PayloadKind::McpTask,
        json!({"result": {"notification_type": "scheduled"}}),
    );
    let WebhookPayload::McpTask(task) = classify(&broken, None).unwrap() else {
        panic!()
    };
    assert_eq!(
        task.delivery_report().unwrap().unwrap_err().code(),
        "missing_envelope_fields"
    );
}

#[test]
fn task_status_and_terminal_states() {
    for status in TaskStatus::ALL {
        let v = merged(PayloadKind::McpTask, json!({"status": status.as_str()}));
        let p = classify(&v, None).unwrap();
        assert_eq!(p.task_status(), Some(status));
        let terminal = matches!(status.as_str(), "completed" | "failed" | "canceled" | "rejected");
        assert_eq!(p.is_terminal_task(), terminal, "{}", status.as_str());
    }
    let a2a = classify(&fixture(PayloadKind::A2aTask), None).unwrap();
    assert_eq!(a2a.task_status(), Some(TaskStatus::Completed));
    assert!(a2a.is_terminal_task());
    assert!(!classify(&fixture(PayloadKind::CreativePurged), None)
        .unwrap()
        .is_terminal_task());
    let media_buy_status = merged(PayloadKind::McpTask, json!({"status": "active"}));
    assert_eq!(code(&media_buy_status, None), "invalid_envelope_status");
}

#[test]
fn unknown_kinds_are_generic_only_with_a_valid_key() {
    let generic = fixture(PayloadKind::Generic);
    let p = assert_kind(&generic, PayloadKind::Generic, Channel::AccountNotifications, "generic");
    assert_eq!(p.notification_type(), Some("audience.refreshed"));
    assert_eq!(p.account_id(), Some("acct_nordlicht_media"));
    assert_eq!(p.subscriber_id(), Some("audience-sync"));
    assert_eq!(p.notification_id(), Some("audience.seg_42.refresh.9"));
    assert_eq!(p.fired_at(), Some("2027-08-01T00:00:00Z"));
    assert_eq!(p.task_status(), None);

    for ch in [None, Some(Channel::AccountNotifications)] {
        let named_only = WebhookPayload::classify(&generic, ch, AcceptKinds::NamedOnly).unwrap_err();
        assert_eq!(named_only.code(), "unknown_payload_kind");
    }
    // Channels with a closed set of kinds never accept a generic payload.
    for ch in [
        Channel::McpTask,
        Channel::CollectionList,
        Channel::Artifacts,
        Channel::RightsRevocation,
    ] {
        assert_ne!(code(&generic, Some(ch)), "generic", "{}", ch.as_str());
    }
    let list_event = json!({"idempotency_key": "9f1c3e5a7b9d1f3a5c7e", "event": "segment_list_changed"});
    assert_eq!(code(&list_event, None), "generic");
    assert_eq!(code(&list_event, Some(Channel::PropertyList)), "unknown_payload_kind");

    for key in [
        None,
        Some(json!("short")),
        Some(json!("aaaaaaaaaaaaaaaaaaaa")),
        Some(json!("has space in the key")),
        Some(json!(12)),
    ] {
        let mut v = generic.clone();
        match key {
            Some(k) => v["idempotency_key"] = k,
            None => {
                v.as_object_mut().unwrap().remove("idempotency_key");
            }
        }
        assert_eq!(code(&v, None), "unknown_payload_kind", "{v}");
    }
    for body in [json!({}), json!({"hello": "world"})] {
        assert_eq!(code(&body, None), "unknown_payload_kind");
    }
    for body in [json!(null), json!([]), json!("x"), json!(1)] {
        assert_eq!(code(&body, None), "missing_envelope_fields");
    }
}

/// Each schema-required member of a notification (or list, batch,
/// revocation, challenge) is enforced with a stable code; optional ones
/// are not.
#[test]
fn missing_or_malformed_identity_members_are_refused() {
    let Some(dir) = schemas() else { return };
    for (kind, channel) in KINDS {
        let Some(schema) = kind.schema() else { continue };
        let required = read_json(&dir.join(schema))["required"].clone();
        let required = |m: &str| required.as_array().unwrap().iter().any(|r| r == m);
        let value = fixture(kind);
        for member in value.as_object().unwrap().keys() {
            let mut v = value.clone();
            v.as_object_mut().unwrap().remove(member);
            let got = code(&v, Some(channel));
            let expected = match member.as_str() {
                "idempotency_key" => "missing_idempotency_key",
                // Required by the envelope schema, absent from the
                // official webhook-signing vectors: tolerated, as by
                // `check_mcp_envelope`.
                "operation_id" | "task_type" | "timestamp" if kind == PayloadKind::McpTask => kind.as_str(),
                m if required(m) => "missing_envelope_fields",
                _ => kind.as_str(),
            };
            assert_eq!(got, expected, "{kind} without {member}");
        }
        if !kind.is_challenge() {
            for bad in [
                json!("too-short"),
                json!("x".repeat(256)),
                json!("bad key with spaces!"),
                json!(42),
            ] {
                let v = merged(kind, json!({"idempotency_key": bad}));
                assert_eq!(code(&v, Some(channel)), "missing_idempotency_key", "{kind} key {bad}");
            }
        }
    }
}

#[test]
fn members_of_the_wrong_type_are_refused() {
    // Wrong JSON types and identifier patterns.
    let v = merged(PayloadKind::CreativeStatusChanged, json!({"fired_at": 1_700_000_000}));
    assert_eq!(code(&v, None), "invalid_payload_member");
    let v = merged(
        PayloadKind::CreativeStatusChanged,
        json!({"subscriber_id": "x".repeat(65)}),
    );
    assert_eq!(code(&v, None), "invalid_payload_member");
    let v = merged(
        PayloadKind::CreativeStatusChanged,
        json!({"notification_id": "has space"}),
    );
    assert_eq!(code(&v, None), "invalid_payload_member");
    let v = merged(
        PayloadKind::ReportingDeliveryReady,
        json!({"delivery_config_version": "3"}),
    );
    assert_eq!(code(&v, None), "invalid_payload_member");
    let v = merged(PayloadKind::McpTask, json!({"message": null}));
    assert_eq!(code(&v, None), "invalid_payload_member");
    let v = merged(PayloadKind::CreativeStatusChanged, json!({"notification_type": 7}));
    assert_eq!(code(&v, None), "invalid_payload_member");
    // `data_through` is required but nullable.
    let v = merged(PayloadKind::ReportingDeliveryReady, json!({"data_through": null}));
    assert_kind(
        &v,
        PayloadKind::ReportingDeliveryReady,
        Channel::AccountNotifications,
        "null data_through",
    );
    let mut v = fixture(PayloadKind::ReportingDeliveryReady);
    v.as_object_mut().unwrap().remove("data_through");
    assert_eq!(code(&v, None), "missing_envelope_fields");
}

#[test]
fn unknown_members_are_kept() {
    for (kind, channel) in KINDS {
        let v = merged(
            kind,
            json!({"x_vendor_trace": {"a": [1, 2.5, null]}, "z_later_member": "kept"}),
        );
        assert_kind(&v, kind, channel, kind.as_str());
    }
    // Nested: a creative transition's unknown member survives too.
    let v = merged(
        PayloadKind::CreativeStatusChanged,
        json!({"transition": {"from": "approved", "to": "suspended", "observed_at": "2027-03-02T14:04:58Z", "note": "n"}}),
    );
    assert_kind(
        &v,
        PayloadKind::CreativeStatusChanged,
        Channel::AccountNotifications,
        "nested",
    );
}

#[test]
fn error_codes_and_messages_are_stable_and_fixed() {
    let codes: std::collections::BTreeSet<_> = PayloadError::ALL.iter().map(|e| e.code()).collect();
    assert_eq!(codes.len(), PayloadError::ALL.len());
    for e in PayloadError::ALL {
        assert!(!e.message().is_empty());
        assert!(
            e.code().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{}",
            e.code()
        );
    }
    // The message never echoes the body.
    let marker = "MARKER_9f1c3e5a7b9d1f3a";
    let err = classify(
        &json!({"idempotency_key": marker, "notification_type": "scheduled"}),
        None,
    )
    .unwrap_err();
    assert!(!err.message().contains(marker) && !err.to_string().contains(marker));
}

// ------------------------------------------------------------ challenge

fn challenge_value(len: usize) -> String {
    "Ab0_.:-z9".chars().cycle().take(len).collect()
}

/// The challenges the seller side builds (`adcp_webhook::Activation`)
/// are valid against their schemas for every delivery auth mode, classify
/// back as the right kind, and bind the credential by its SHA-256 hex.
#[test]
fn built_activation_challenges_validate_against_the_schemas() {
    use adcp_webhook::payload::DeliveryAuth;
    use adcp_webhook::Activation;
    let Some(dir) = schemas() else { return };
    let account_schema = validator(&dir, "core/webhook-challenge.json");
    let agent_schema = validator(&dir, "core/agent-webhook-challenge.json");
    let credential = "legacy-credential-0123456789abcdef-xyz";
    let auths = [
        DeliveryAuth::rfc9421(),
        DeliveryAuth::bearer(credential),
        DeliveryAuth::hmac_sha256(credential),
    ];
    for auth in auths {
        let account = Activation::account(
            "https://buyer.example/hook",
            "acct_123",
            "buyer-primary",
            "https://seller.example/adcp",
            ["creative.purged", "account.status_changed", "creative.purged"],
        )
        .unwrap()
        .with_delivery_auth(auth.clone())
        .unwrap();
        let agent = Activation::agent(
            "https://buyer.example/hook",
            "registry-cache",
            "https://seller.example/adcp",
            ["capabilities.changed"],
        )
        .unwrap()
        .with_delivery_auth(auth.clone())
        .unwrap();
        for (activation, schema, kind) in [
            (account, &account_schema, PayloadKind::AccountChallenge),
            (agent, &agent_schema, PayloadKind::AgentChallenge),
        ] {
            let challenge = activation.challenge(&adcp_sign::OsRandom).unwrap();
            let value = serde_json::to_value(&challenge).unwrap();
            assert_eq!(schema_errors(schema, &value), Vec::<String>::new(), "{value}");
            assert_eq!(classify(&value, None).unwrap().kind(), kind);
            if auth.mode == "rfc9421" {
                assert!(value["delivery_auth"].get("credential_fingerprint").is_none());
            } else {
                // The lowercase SHA-256 hex of the exact credential string.
                let expected: String = sha2::Digest::finalize(sha2::Digest::chain_update(
                    <sha2::Sha256 as sha2::Digest>::new(),
                    credential.as_bytes(),
                ))
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
                assert_eq!(value["delivery_auth"]["credential_fingerprint"], expected);
                assert!(!value.to_string().contains(credential));
            }
        }
    }
}

#[test]
fn challenge_response_validator() {
    let v32 = challenge_value(32);
    for len in [32, 33, 254, 255] {
        for member in ["challenge", "token"] {
            let value = challenge_value(len);
            let body = json!({ member: value });
            let response =
                ChallengeResponse::from_value(&body).unwrap_or_else(|e| panic!("{len} {member}: {}", e.code()));
            assert_eq!(response.value(), value);
            assert_eq!(response.to_value(), body);
            response.verify(&value).unwrap();
        }
    }
    let refused = |body: Value| ChallengeResponse::from_value(&body).unwrap_err().code();
    for len in [0, 31, 256, 1000] {
        assert_eq!(
            refused(json!({"challenge": challenge_value(len)})),
            "challenge_response_invalid_value",
            "{len}"
        );
    }
    let mut bad_chars = Vec::new();
    for c in [' ', '/', '+', '=', '"', 'é', '\n', '#'] {
        let mut s = v32.clone();
        s.replace_range(5..6, &c.to_string());
        bad_chars.push(s);
    }
    for s in bad_chars {
        assert_eq!(
            refused(json!({"token": s})),
            "challenge_response_invalid_value",
            "{s:?}"
        );
    }
    assert_eq!(refused(json!({"challenge": 12345})), "challenge_response_invalid_value");
    assert_eq!(refused(json!({"challenge": null})), "challenge_response_invalid_value");
    assert_eq!(refused(json!({})), "challenge_response_missing");
    assert_eq!(
        refused(json!({"challenge": v32, "token": v32})),
        "challenge_response_ambiguous"
    );
    assert_eq!(
        refused(json!({"challenge": v32, "status": "ok"})),
        "challenge_response_unknown_member"
    );
    assert_eq!(refused(json!({"Challenge": v32})), "challenge_response_unknown_member");
    assert_eq!(refused(json!([v32])), "challenge_response_not_object");
    assert_eq!(refused(json!(v32)), "challenge_response_not_object");
    let other = challenge_value(33);
    let response = ChallengeResponse::from_value(&json!({"challenge": v32})).unwrap();
    assert_eq!(response.verify(&other).unwrap_err(), ChallengeResponseError::Mismatch);
    assert_eq!(
        response.verify(&v32[..31]).unwrap_err().code(),
        "challenge_response_mismatch"
    );
}

#[test]
fn incoming_challenges_are_validated_and_answered() {
    for kind in [PayloadKind::AccountChallenge, PayloadKind::AgentChallenge] {
        let value = fixture(kind);
        let WebhookPayload::Challenge(challenge) = classify(&value, None).unwrap() else {
            panic!()
        };
        let response = challenge.response();
        assert_eq!(response.to_value(), json!({"challenge": value["challenge"]}));
        response.verify(value["challenge"].as_str().unwrap()).unwrap();
        assert_eq!(challenge.seller_agent_url(), value["seller_agent_url"]);
        assert_eq!(
            matches!(*challenge, Challenge::Account(_)),
            kind == PayloadKind::AccountChallenge
        );
        for (len, ok) in [(31, false), (32, true), (255, true), (256, false)] {
            let v = merged(kind, json!({"challenge": challenge_value(len)}));
            let expected = if ok { kind.as_str() } else { "invalid_challenge" };
            assert_eq!(code(&v, None), expected, "{kind} {len}");
        }
        let v = merged(kind, json!({"challenge": format!("{}/", challenge_value(40))}));
        assert_eq!(code(&v, None), "invalid_challenge");
    }
    let v = merged(PayloadKind::AgentChallenge, json!({"scope": "account"}));
    assert_eq!(code(&v, None), "invalid_challenge");
}

// ------------------------------------------------------------- hostile

fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("idempotency_key".to_owned()),
        Just("notification_type".to_owned()),
        Just("event".to_owned()),
        Just("type".to_owned()),
        Just("scope".to_owned()),
        Just("task_id".to_owned()),
        Just("status".to_owned()),
        Just("state".to_owned()),
        Just("task".to_owned()),
        Just("rights_id".to_owned()),
        Just("batch_id".to_owned()),
        Just("artifacts".to_owned()),
        Just("result".to_owned()),
        Just("challenge".to_owned()),
        "[a-z_]{1,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("webhook.challenge".to_owned()),
            Just("agent".to_owned()),
            Just("completed".to_owned()),
            Just("scheduled".to_owned()),
            Just("creative.status_changed".to_owned()),
            Just("property_list_changed".to_owned()),
            Just("whk_0123456789abcdefgh".to_owned()),
            ".{0,40}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const CHANNELS: [Option<Channel>; 10] = [
    None,
    Some(Channel::McpTask),
    Some(Channel::Reporting),
    Some(Channel::A2aTask),
    Some(Channel::AccountNotifications),
    Some(Channel::AgentNotifications),
    Some(Channel::CollectionList),
    Some(Channel::PropertyList),
    Some(Channel::Artifacts),
    Some(Channel::RightsRevocation),
];

fn check_any(value: &Value) {
    for ch in CHANNELS {
        for accept in [AcceptKinds::All, AcceptKinds::NamedOnly] {
            let first = WebhookPayload::classify(value, ch, accept);
            let second = WebhookPayload::classify(value, ch, accept);
            assert_eq!(first, second, "deterministic");
            // The consuming entry point decides exactly the same.
            assert_eq!(
                WebhookPayload::classify_owned(value.clone(), ch, accept),
                first,
                "owned"
            );
            if let Ok(p) = first {
                assert_eq!(&serde_json::to_value(&p).unwrap(), value, "round trip");
                if let Some(ch) = ch {
                    assert!(ch.carries(p.kind()));
                }
                if accept == AcceptKinds::NamedOnly {
                    assert_ne!(p.kind(), PayloadKind::Generic);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_json_never_panics_and_is_deterministic(value in arb_json()) {
        check_any(&value);
    }

    /// Fixtures with one member replaced by arbitrary JSON: deep in each
    /// kind's parser rather than at the front door.
    #[test]
    fn mutated_fixtures_never_panic(index in 0usize..KINDS.len(), member in 0usize..16, replacement in arb_json()) {
        let mut value = fixture(KINDS[index].0);
        let obj = value.as_object_mut().unwrap();
        let name = obj.keys().nth(member % obj.len()).cloned().unwrap();
        obj.insert(name, replacement);
        check_any(&value);
    }
}

/// A body already in memory is classified in time linear in its size: a
/// wide object of unrelated members is refused without quadratic work.
#[test]
fn wide_bodies_are_handled() {
    let mut obj: Map<String, Value> = (0..50_000).map(|i| (format!("m{i}"), json!(i))).collect();
    obj.insert("idempotency_key".into(), json!("3f6a9c2e-5b8d-4e1f-a7c0-d9b2e5f8a1c4"));
    let value = Value::Object(obj);
    assert_eq!(code(&value, None), "generic");
    assert_eq!(code(&value, Some(Channel::McpTask)), "missing_envelope_fields");
}
