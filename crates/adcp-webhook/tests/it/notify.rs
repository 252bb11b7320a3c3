//! The sending side (`adcp_webhook::notify`): a body of every 3.2
//! notification kind, built by its builder, is valid against its schema
//! (task envelopes against `core/mcp-webhook-payload.json` and their
//! `result` against the report or impairment schema), classifies on the
//! receiving side as its kind and round-trips; each required member the
//! builder takes, left out, is refused with an error naming it; the
//! registration's members are echoed verbatim and the key is kept or
//! generated. Schemas are read from the shared spec folder at run time
//! (the `payloads` helpers), never copied.

use adcp_sign::IdempotencyKey;
use adcp_webhook::notify::{
    AccountChangeRecordedBuilder, AccountStatusChangedBuilder, ArtifactBatchBuilder, BuildError,
    CapabilitiesChangedBuilder, CreativeAssignmentChangedBuilder, CreativePurgedBuilder, CreativeStatusChangedBuilder,
    DeliveryReportBuilder, ImpairmentBuilder, IndicatorsChangedBuilder, ListChangedBuilder, ListKind, Notification,
    PrincipalChangedBuilder, Registered, ReportType, ReportingDeliveryReadyBuilder, ReportingLedgerChangedBuilder,
    ReportingStatusChangedBuilder, RightsRevocationBuilder, WholesaleEventType, WholesaleFeedBuilder,
};
use adcp_webhook::payload::{AcceptKinds, Channel, PayloadKind, WebhookPayload};
use serde_json::{json, Value};

use crate::payloads::{schema_errors, schemas, validator};

const FIRED_AT: &str = "2026-04-18T12:00:00Z";

/// A registration whose members need verbatim echo (padding, case).
fn registration() -> Registered {
    Registered::from_value(&json!({
        "url": "https://buyer.example/hooks",
        "subscriber_id": "Ops-Bus_1",
        "token": "tok en/With Spaces ",
        "operation_id": "op_Spring:2027 "
    }))
}

/// One setter of a case: the required member it supplies (`None` for an
/// optional one) and the setter.
type Step<B> = (Option<&'static str>, fn(B) -> B);

/// What a case checks its body against.
struct Expect {
    name: String,
    kind: PayloadKind,
    channel: Channel,
    /// The inner schema and where in the body the value it validates is.
    inner: Option<(&'static str, &'static str)>,
}

/// Builds the full body, validates and classifies it, then leaves out each
/// required step in turn and expects that member named.
fn check<B: Clone>(
    expect: &Expect,
    new: impl Fn() -> B,
    steps: &[Step<B>],
    build: fn(B) -> Result<Notification, BuildError>,
) -> Notification {
    let full = steps.iter().fold(new(), |b, (_, step)| step(b));
    let notification = build(full).unwrap_or_else(|e| panic!("{}: {e}", expect.name));
    let body = notification.to_value();
    assert_eq!(notification.kind(), expect.kind, "{}", expect.name);

    // The event's bytes are the body.
    let event = notification.clone().into_event().unwrap();
    let bytes: Value = serde_json::from_slice(event.body().as_bytes()).unwrap();
    assert_eq!(bytes, body, "{}", expect.name);
    assert_eq!(event.idempotency_key(), notification.idempotency_key());
    assert!(
        event.body().as_str().starts_with("{\"idempotency_key\":"),
        "{}",
        expect.name
    );

    // The receiving side reads it as its kind, with the same identity.
    for channel in [Some(expect.channel), None] {
        let payload = WebhookPayload::classify(&body, channel, AcceptKinds::All)
            .unwrap_or_else(|e| panic!("{} ({channel:?}): {}", expect.name, e.code()));
        assert_eq!(payload.kind(), expect.kind, "{} ({channel:?})", expect.name);
        assert_eq!(serde_json::to_value(&payload).unwrap(), body, "{}", expect.name);
        assert_eq!(payload.idempotency_key(), Some(notification.idempotency_key().as_str()));
        assert_eq!(
            payload.notification_id(),
            notification.notification_id(),
            "{}",
            expect.name
        );
        assert_eq!(
            payload.notification_type(),
            notification.notification_type(),
            "{}",
            expect.name
        );
    }

    // Valid against the kind's schema, and the inner value against its own.
    if let Some(dir) = schemas() {
        let schema = expect.kind.schema().unwrap();
        let errors = schema_errors(&validator(&dir, schema), &body);
        assert_eq!(errors, Vec::<String>::new(), "{} against {schema}", expect.name);
        if let Some((inner, pointer)) = expect.inner {
            let value = body
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{}: {pointer}", expect.name));
            let errors = schema_errors(&validator(&dir, inner), value);
            assert_eq!(
                errors,
                Vec::<String>::new(),
                "{} {pointer} against {inner}",
                expect.name
            );
        }
    }

    // Each required member left out is refused, naming it.
    for (i, (member, _)) in steps.iter().enumerate() {
        let Some(member) = *member else { continue };
        let partial = steps
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .fold(new(), |b, (_, (_, step))| step(b));
        assert_eq!(
            build(partial).map(|n| n.to_value()),
            Err(BuildError::Missing { member }),
            "{} without {member}",
            expect.name
        );
    }
    notification
}

fn expect(name: &str, kind: PayloadKind, channel: Channel) -> Expect {
    Expect {
        name: name.to_owned(),
        kind,
        channel,
        inner: None,
    }
}

/// The registration's `subscriber_id` is echoed verbatim; without one the
/// notification is refused.
fn assert_subscriber(n: &Notification, without: Result<Notification, BuildError>) {
    assert_eq!(n.to_value()["subscriber_id"], "Ops-Bus_1");
    assert!(
        n.to_value().get("token").is_none(),
        "no token member on notification kinds"
    );
    assert_eq!(
        without.unwrap_err(),
        BuildError::Missing {
            member: "subscriber_id"
        }
    );
}

#[test]
fn account_status_changed() {
    type B = AccountStatusChangedBuilder;
    let steps: &[Step<B>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("previous_status"), |b| b.previous_status("pending_approval")),
        (Some("status"), |b| b.status("active")),
        (Some("observed_at"), |b| b.observed_at("2026-04-18T11:59:30Z")),
        (Some("reason_code"), |b| b.reason_code("seller_approved")),
        (None, |b| b.reason_detail("credit check passed")),
    ];
    let e = expect(
        "account.status_changed",
        PayloadKind::AccountStatusChanged,
        Channel::AccountNotifications,
    );
    let n = check(&e, || B::new(&registration(), FIRED_AT), steps, B::build);
    // Derived from the stability key: the same transition, the same id,
    // under a new key; another observation, another id.
    let again = check(&e, || B::new(&registration(), "2026-04-18T12:05:00Z"), steps, B::build);
    assert_eq!(again.notification_id(), n.notification_id());
    assert_ne!(again.idempotency_key(), n.idempotency_key());
    let other = steps
        .iter()
        .fold(B::new(&registration(), FIRED_AT), |b, (_, s)| s(b))
        .observed_at("2026-04-18T11:59:31Z")
        .build()
        .unwrap();
    assert_ne!(other.notification_id(), n.notification_id());
    let without = steps
        .iter()
        .fold(B::new(&Registered::new(), FIRED_AT), |b, (_, s)| s(b))
        .build();
    assert_subscriber(&n, without);
}

#[test]
fn account_change_recorded() {
    type B = AccountChangeRecordedBuilder;
    let steps: &[Step<B>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("change_id"), |b| b.change_id("chg_0001")),
        (Some("recorded_at"), |b| b.recorded_at("2026-04-18T11:00:00Z")),
        (Some("resource.type"), |b| b.resource_type("creative")),
        (Some("resource.resource_id"), |b| b.resource_id("cr_1")),
        (Some("action"), |b| b.action("updated")),
        (None, |b| b.through_cursor("cur_17")),
    ];
    let e = expect(
        "account.change_recorded",
        PayloadKind::AccountChangeRecorded,
        Channel::AccountNotifications,
    );
    let n = check(&e, || B::new(&registration(), FIRED_AT), steps, B::build);
    assert_eq!(n.notification_id(), Some("chg_0001"));
}

#[test]
fn agent_notifications() {
    type C = CapabilitiesChangedBuilder;
    let steps: &[Step<C>] = &[
        (Some("agent_url"), |b| b.agent_url("https://seller.example/mcp")),
        (Some("changed_at"), |b| b.changed_at("2026-04-18T11:00:00Z")),
        (Some("reason"), |b| b.reason("capability_enabled")),
        (Some("capabilities_version"), |b| b.capabilities_version("v42")),
        (None, |b| b.changed_paths(["/media_buy/features"])),
    ];
    let e = expect(
        "capabilities.changed",
        PayloadKind::CapabilitiesChanged,
        Channel::AgentNotifications,
    );
    let n = check(&e, || C::new(&registration(), FIRED_AT), steps, C::build);
    let without = steps
        .iter()
        .fold(C::new(&Registered::new(), FIRED_AT), |b, (_, s)| s(b))
        .build();
    assert_subscriber(&n, without);

    type P = PrincipalChangedBuilder;
    let steps: &[Step<P>] = &[
        (Some("agent_url"), |b| b.agent_url("https://seller.example/mcp")),
        (Some("changed_at"), |b| b.changed_at("2026-04-18T11:00:00Z")),
        (Some("reason"), |b| b.reason("destination_state_changed")),
        (None, |b| b.destination_id("dst_1")),
    ];
    let e = expect(
        "principal.changed",
        PayloadKind::PrincipalChanged,
        Channel::AgentNotifications,
    );
    let n = check(&e, || P::new(&registration(), FIRED_AT), steps, P::build);
    // A given id replaces the derived one.
    let given = steps
        .iter()
        .fold(P::new(&registration(), FIRED_AT), |b, (_, s)| s(b))
        .notification_id("prc_given_1")
        .build()
        .unwrap();
    assert_eq!(given.notification_id(), Some("prc_given_1"));
    assert_ne!(n.notification_id(), given.notification_id());
}

#[test]
fn creative_notifications() {
    type S = CreativeStatusChangedBuilder;
    let steps: &[Step<S>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("creative_id"), |b| b.creative_id("cr_1")),
        (Some("transition.from"), |b| b.from("approved")),
        (Some("transition.to"), |b| b.to("suspended")),
        (Some("transition.observed_at"), |b| {
            b.observed_at("2026-04-18T11:00:00Z")
        }),
        (Some("reason_code"), |b| b.reason_code("identity_authorization_revoked")),
        (Some("initiator"), |b| b.initiator("system")),
    ];
    let e = expect(
        "creative.status_changed",
        PayloadKind::CreativeStatusChanged,
        Channel::AccountNotifications,
    );
    check(&e, || S::new(&registration(), FIRED_AT), steps, S::build);

    type A = CreativeAssignmentChangedBuilder;
    let steps: &[Step<A>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("media_buy_id"), |b| b.media_buy_id("mb_1")),
        (Some("package_id"), |b| b.package_id("pkg_1")),
        (Some("creative_id"), |b| b.creative_id("cr_1")),
        (Some("change_kind"), |b| b.change_kind("assigned")),
        (Some("observed_at"), |b| b.observed_at("2026-04-18T11:00:00Z")),
    ];
    let e = expect(
        "creative.assignment_changed",
        PayloadKind::CreativeAssignmentChanged,
        Channel::AccountNotifications,
    );
    check(&e, || A::new(&registration(), FIRED_AT), steps, A::build);

    type G = CreativePurgedBuilder;
    let steps: &[Step<G>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("creative_id"), |b| b.creative_id("cr_1")),
        (Some("purge_kind"), |b| b.purge_kind("soft")),
        (Some("purged_at"), |b| b.purged_at("2026-04-18T11:00:00Z")),
        (Some("reason_code"), |b| b.reason_code("retention_expired")),
        (Some("initiator"), |b| b.initiator("system")),
    ];
    let e = expect(
        "creative.purged",
        PayloadKind::CreativePurged,
        Channel::AccountNotifications,
    );
    check(&e, || G::new(&registration(), FIRED_AT), steps, G::build);
}

#[test]
fn indicators_changed() {
    type B = IndicatorsChangedBuilder;
    let common: [Step<B>; 6] = [
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("media_buy_id"), |b| b.media_buy_id("mb_1")),
        (Some("change_kind"), |b| b.change_kind("asserted")),
        (Some("changed_indicator_types"), |b| {
            b.changed_indicator_types(["pacing_risk"])
        }),
        (Some("observed_at"), |b| b.observed_at("2026-04-18T11:00:00Z")),
        (None, |b| b),
    ];
    let e = expect(
        "indicators.changed",
        PayloadKind::IndicatorsChanged,
        Channel::AccountNotifications,
    );
    let mut steps = common.to_vec();
    steps.push((Some("relationship_kind"), |b| b.relationship_kind("media_buy")));
    check(&e, || B::new(&registration(), FIRED_AT), &steps, B::build);
    let mut steps = common.to_vec();
    steps.push((None, |b| b.relationship_kind("creative_assignment")));
    steps.push((Some("package_id"), |b| b.package_id("pkg_1")));
    steps.push((Some("creative_id"), |b| b.creative_id("cr_1")));
    check(&e, || B::new(&registration(), FIRED_AT), &steps, B::build);
}

#[test]
fn impairment() {
    type B = ImpairmentBuilder;
    let steps: &[Step<B>] = &[
        (Some("task_id"), |b| b.task_id("task_mb_1")),
        (Some("result.media_buy_id"), |b| b.media_buy_id("mb_1")),
        (Some("result.health"), |b| b.health("impaired")),
        (Some("result.impairment.impairment_id"), |b| b.impairment_id("imp_1")),
        (Some("result.impairment.resource_type"), |b| b.resource_type("creative")),
        (Some("result.impairment.resource_id"), |b| b.resource_id("cr_1")),
        (Some("result.impairment.package_ids"), |b| b.package_ids(["pkg_1"])),
        (None, |b| b.transition_from("approved")),
        (Some("result.impairment.transition.to"), |b| {
            b.transition_to("suspended")
        }),
        (Some("result.impairment.reason_code"), |b| {
            b.reason_code("content_rejected")
        }),
        (Some("result.impairment.observed_at"), |b| {
            b.observed_at("2026-04-18T11:00:00Z")
        }),
    ];
    let mut e = expect("impairment", PayloadKind::McpTask, Channel::McpTask);
    e.inner = Some(("core/impairment.json", "/result/impairment"));
    let n = check(&e, || B::new(&registration(), FIRED_AT), steps, B::build);
    assert_eq!(n.notification_id(), Some("imp_1"));
    assert_eq!(n.notification_type(), Some("impairment"));
    assert_envelope_echo(&n);
    let without = steps
        .iter()
        .fold(B::new(&Registered::new(), FIRED_AT), |b, (_, s)| s(b))
        .build();
    assert_eq!(without.unwrap_err(), BuildError::Missing { member: "operation_id" });
}

/// Task envelopes echo `operation_id`, `token` and `subscriber_id`
/// exactly as registered.
fn assert_envelope_echo(n: &Notification) {
    let body = n.to_value();
    assert_eq!(body["operation_id"], "op_Spring:2027 ");
    assert_eq!(body["token"], "tok en/With Spaces ");
    assert_eq!(body["subscriber_id"], "Ops-Bus_1");
    assert_eq!(body["timestamp"], FIRED_AT);
}

#[test]
fn wholesale_feed() {
    use WholesaleEventType as T;
    let applies_to = json!({"scope": "public"});
    let signal = json!({
        "signal_agent_segment_id": "seg_1",
        "name": "Auto intenders",
        "description": "In-market for a car",
        "signal_type": "marketplace",
        "signal_id": {"source": "agent", "agent_url": "https://signals.example", "id": "seg_1"},
        "deployments": [{"type": "agent", "agent_url": "https://dsp.example", "is_live": true}]
    });
    for t in T::ALL {
        let payload = match t.entity_type() {
            "product" => {
                json!({"product_id": "prod_1", "canonical_product": {"product_id": "prod_1", "name": "Premium CTV"}, "applies_to": applies_to})
            }
            "signal" => json!({"signal_agent_segment_id": "seg_1", "signal": signal, "applies_to": applies_to}),
            _ => {
                json!({"summary": "rate card refresh", "affected_entity_type": "product", "affected_count": 120, "applies_to": applies_to})
            }
        };
        let payload = match t {
            T::ProductPriced => {
                let mut p = payload;
                p["pricing_options"] = json!([{"pricing_option_id": "po_1", "pricing_model": "cpm", "fixed_price": 2.5, "currency": "USD"}]);
                p
            }
            T::SignalPriced => json!({
                "signal_agent_segment_id": "seg_1",
                "pricing_options": [{"pricing_option_id": "po_1", "model": "cpm", "cpm": 1.5, "currency": "USD"}],
                "applies_to": applies_to
            }),
            _ => payload,
        };
        type B = WholesaleFeedBuilder;
        let mut steps: Vec<Step<B>> = vec![
            (Some("account_id"), |b| b.account_id("acc_1")),
            (Some("wholesale_feed_version"), |b| {
                b.wholesale_feed_version("v2026-04-18-rev2")
            }),
            (None, |b| b.previous_wholesale_feed_version("v2026-04-18-rev1")),
            (Some("cache_scope"), |b| b.cache_scope("public")),
            (Some("event.event_id"), |b| {
                b.event_id("019539a0-0000-7000-8000-000000000001")
            }),
            (Some("event.entity_id"), |b| b.entity_id("prod_1")),
            (Some("event.created_at"), |b| b.created_at("2026-04-18T11:00:00Z")),
        ];
        if t.entity_type() == "product" {
            steps.push((Some("product_payload_view"), |b| b.product_payload_view("canonical")));
        }
        let e = expect(t.as_str(), PayloadKind::WholesaleFeed, Channel::AccountNotifications);
        let new = || B::new(&registration(), t, FIRED_AT).payload(payload.clone());
        let n = check(&e, new, &steps, B::build);
        assert_eq!(n.notification_id(), Some("019539a0-0000-7000-8000-000000000001"));
        assert_eq!(n.to_value()["event"]["event_type"], t.as_str());
        if t.entity_type() == "product" {
            // The registration's view is echoed when the builder is not told one.
            let reg = registration().with_product_payload_view("canonical");
            let echoed = steps
                .iter()
                .filter(|(m, _)| *m != Some("product_payload_view"))
                .fold(B::new(&reg, t, FIRED_AT).payload(payload.clone()), |b, (_, s)| s(b))
                .build()
                .unwrap();
            assert_eq!(echoed.to_value()["product_payload_view"], "canonical");
        }
        let no_payload = steps
            .iter()
            .fold(B::new(&registration(), t, FIRED_AT), |b, (_, s)| s(b));
        assert_eq!(
            no_payload.build().unwrap_err(),
            BuildError::Missing {
                member: "event.payload"
            }
        );
    }
}

#[test]
fn reporting_notifications() {
    type R = ReportingDeliveryReadyBuilder;
    let steps: &[Step<R>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("delivery_config_id"), |b| b.delivery_config_id("rdc_1")),
        (Some("delivery_config_version"), |b| b.delivery_config_version(3)),
        (Some("feed_purpose"), |b| b.feed_purpose("billing")),
        (Some("reporting_revision_id"), |b| b.reporting_revision_id("rev_1")),
        (Some("reporting_materialization_id"), |b| {
            b.reporting_materialization_id("mat_1")
        }),
        (Some("readiness"), |b| b.readiness("available")),
        (Some("finality"), |b| b.finality("snapshot")),
    ];
    let e = expect(
        "reporting.delivery_ready",
        PayloadKind::ReportingDeliveryReady,
        Channel::AccountNotifications,
    );
    let n = check(&e, || R::new(&registration(), FIRED_AT), steps, R::build);
    assert_eq!(n.to_value()["data_through"], Value::Null);
    let through = || R::new(&registration(), FIRED_AT).data_through("2026-04-18T00:00:00Z");
    check(&e, through, steps, R::build);

    type S = ReportingStatusChangedBuilder;
    let steps: &[Step<S>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("delivery_config_id"), |b| b.delivery_config_id("rdc_1")),
        (Some("delivery_config_version"), |b| b.delivery_config_version(3)),
        (Some("feed_purpose"), |b| b.feed_purpose("billing")),
        (Some("health"), |b| b.health("delayed")),
        (None, |b| b.previous_health("healthy")),
        (Some("issue_ids"), |b| b.issue_ids(["iss_1"])),
        (Some("notification_id"), |b| b.notification_id("rdc_1.health.12")),
    ];
    let e = expect(
        "reporting.status_changed",
        PayloadKind::ReportingStatusChanged,
        Channel::AccountNotifications,
    );
    check(&e, || S::new(&registration(), FIRED_AT), steps, S::build);

    type L = ReportingLedgerChangedBuilder;
    let e = expect(
        "reporting.ledger_changed",
        PayloadKind::ReportingLedgerChanged,
        Channel::AccountNotifications,
    );
    let revision: &[Step<L>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("change_kind"), |b| b.change_kind("revision_published")),
        (Some("reporting_revision_id"), |b| b.reporting_revision_id("rev_2")),
        (None, |b| b.supersedes_reporting_revision_id("rev_1")),
        (Some("finality"), |b| b.finality("official")),
    ];
    let rev = check(&e, || L::new(&registration(), FIRED_AT), revision, L::build);
    let adjustment: &[Step<L>] = &[
        (Some("account_id"), |b| b.account_id("acc_1")),
        (Some("change_kind"), |b| b.change_kind("adjustment_published")),
        (Some("reporting_adjustment_id"), |b| b.reporting_adjustment_id("adj_1")),
        (Some("adjusts_reporting_revision_id"), |b| {
            b.adjusts_reporting_revision_id("rev_2")
        }),
    ];
    let adj = check(&e, || L::new(&registration(), FIRED_AT), adjustment, L::build);
    assert_ne!(rev.notification_id(), adj.notification_id());
}

#[test]
fn list_changes() {
    for kind in [ListKind::Property, ListKind::Collection] {
        let channel = match kind {
            ListKind::Property => Channel::PropertyList,
            ListKind::Collection => Channel::CollectionList,
        };
        type B = ListChangedBuilder;
        let steps: &[Step<B>] = &[
            (Some("list_id"), |b| b.list_id("pl_1")),
            (None, |b| b.list_name("Premium news")),
            (None, |b| b.cache_valid_until("2026-04-19T12:00:00Z")),
        ];
        let e = expect(kind.event(), kind.payload_kind(), channel);
        let n = check(&e, || B::new(kind, FIRED_AT), steps, B::build);
        assert_eq!(n.notification_id(), None);
        assert_eq!(n.to_value()["signature"], "rfc9421");
    }
}

#[test]
fn artifact_batch() {
    type B = ArtifactBatchBuilder;
    let steps: &[Step<B>] = &[
        (Some("media_buy_id"), |b| b.media_buy_id("mb_1")),
        (Some("batch_id"), |b| b.batch_id("batch_1")),
        (Some("artifacts"), |b| {
            b.artifacts(json!([{
                "artifact": {"property_rid": "01JQ0000000000000000000000", "artifact_id": "article_1", "assets": []},
                "delivered_at": "2026-04-18T11:00:00Z"
            }]))
        }),
    ];
    let e = expect("artifact batch", PayloadKind::ArtifactBatch, Channel::Artifacts);
    let n = check(&e, || B::new(FIRED_AT), steps, B::build);
    assert_eq!(n.notification_id(), None);
}

#[test]
fn rights_revocation() {
    type B = RightsRevocationBuilder;
    let steps: &[Step<B>] = &[
        (Some("rights_id"), |b| b.rights_id("rt_1")),
        (Some("brand_id"), |b| b.brand_id("brand_1")),
        (Some("reason"), |b| b.reason("talent contract ended")),
    ];
    let e = expect(
        "rights revocation",
        PayloadKind::RightsRevocation,
        Channel::RightsRevocation,
    );
    check(&e, || B::new(FIRED_AT), steps, B::build);
}

#[test]
fn delivery_reports() {
    for t in ReportType::ALL {
        type B = DeliveryReportBuilder;
        let steps: &[Step<B>] = &[
            (Some("task_id"), |b| b.task_id("tsk_dlv_1")),
            (Some("result.reporting_period.start"), |b| {
                b.period_start("2026-04-17T00:00:00Z")
            }),
            (Some("result.reporting_period.end"), |b| {
                b.period_end("2026-04-18T00:00:00Z")
            }),
            (None, |b| b.timezone("UTC")),
            (Some("result.media_buy_deliveries"), |b| {
                b.media_buy_deliveries(json!([]))
            }),
            (None, |b| b.sequence_number(3)),
            (None, |b| b.currency("EUR")),
        ];
        let mut e = expect(t.as_str(), PayloadKind::McpTask, Channel::Reporting);
        e.inner = Some(("media-buy/media-buy-delivery-webhook-result.json", "/result"));
        let n = check(&e, || B::new(&registration(), t, FIRED_AT), steps, B::build);
        assert_eq!(n.notification_id(), None);
        assert!(n.to_value().get("notification_id").is_none());
        assert_eq!(n.to_value()["task_type"], "media_buy_delivery");
        assert_envelope_echo(&n);
        let next = || B::new(&registration(), t, FIRED_AT).next_expected_at("2026-04-19T06:00:00Z");
        if t == ReportType::Final {
            let full = steps.iter().fold(next(), |b, (_, s)| s(b));
            assert!(matches!(
                full.build(),
                Err(BuildError::Invalid {
                    member: "result.next_expected_at",
                    ..
                })
            ));
        } else {
            check(&e, next, steps, B::build);
        }
    }
}

#[test]
fn keys_are_generated_or_kept_and_fired_at_is_fixed() {
    let build = |key: Option<&str>| {
        let b = DeliveryReportBuilder::new(&registration(), ReportType::Scheduled, FIRED_AT)
            .task_id("t_1")
            .period_start("2026-04-17T00:00:00Z")
            .period_end("2026-04-18T00:00:00Z")
            .media_buy_deliveries(json!([]));
        match key {
            Some(k) => b.idempotency_key(IdempotencyKey::new(k).unwrap()).build().unwrap(),
            None => b.build().unwrap(),
        }
    };
    let (a, b) = (build(None), build(None));
    assert_ne!(a.idempotency_key(), b.idempotency_key());
    assert_eq!(&a.idempotency_key().as_str()[14..15], "4", "UUID v4");
    // A kept key rebuilds the same bytes (same fired_at, no clock read).
    let k = "whk_01HW9D3H8FZP2N6R8T0V4X6Z9B";
    let first = build(Some(k)).into_event().unwrap();
    let again = build(Some(k)).into_event().unwrap();
    assert_eq!(first.body().as_bytes(), again.body().as_bytes());

    // fired_at must be an RFC 3339 date-time.
    let err = AccountStatusChangedBuilder::new(&registration(), "yesterday")
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        BuildError::Invalid {
            member: "fired_at",
            reason: "not an RFC 3339 date-time"
        }
    );
}

#[test]
fn ids_fixed_by_a_member_cannot_be_overridden() {
    let err = AccountChangeRecordedBuilder::new(&registration(), FIRED_AT)
        .account_id("a")
        .change_id("chg_1")
        .recorded_at(FIRED_AT)
        .resource_type("creative")
        .resource_id("cr_1")
        .action("updated")
        .change_id("not an id")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "notification_id",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_subscriber_id_the_schema_refuses_is_refused() {
    let reg = Registered::new().with_subscriber_id("has space");
    let err = CapabilitiesChangedBuilder::new(&reg, FIRED_AT)
        .agent_url("https://seller.example/mcp")
        .changed_at(FIRED_AT)
        .reason("other")
        .capabilities_version("v1")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "subscriber_id",
                ..
            }
        ),
        "{err:?}"
    );
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[A-Za-z0-9_.:-]{1,70}",
            any::<String>(),
            Just(String::new()),
            Just("2026-04-18T12:00:00Z".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary registrations and member values never panic a
        /// builder, and whatever it builds the receiving side accepts as
        /// its kind.
        #[test]
        fn builders_never_panic_and_what_they_build_classifies(
            registration in proptest::collection::btree_map("[a-z_]{1,16}", text(), 0..4),
            values in proptest::collection::vec(text(), 8),
        ) {
            let mut reg_json = serde_json::Map::new();
            for (k, v) in registration {
                reg_json.insert(k, Value::String(v));
            }
            for (name, v) in ["subscriber_id", "token", "operation_id"].iter().zip(&values) {
                reg_json.insert((*name).to_owned(), Value::String(v.clone()));
            }
            let reg = Registered::from_value(&Value::Object(reg_json));
            let v = |i: usize| values[i].clone();
            let built = [
                (
                    AccountStatusChangedBuilder::new(&reg, v(3))
                        .account_id(v(4))
                        .previous_status(v(5))
                        .status(v(6))
                        .observed_at(v(7))
                        .reason_code(v(4))
                        .build(),
                    Channel::AccountNotifications,
                ),
                (
                    AccountChangeRecordedBuilder::new(&reg, v(3))
                        .account_id(v(4))
                        .change_id(v(5))
                        .recorded_at(v(7))
                        .resource_type(v(6))
                        .resource_id(v(6))
                        .action(v(4))
                        .build(),
                    Channel::AccountNotifications,
                ),
                (
                    ImpairmentBuilder::new(&reg, v(3))
                        .task_id(v(4))
                        .media_buy_id(v(5))
                        .health(v(6))
                        .impairment_id(v(5))
                        .resource_type(v(6))
                        .resource_id(v(4))
                        .package_ids([v(4)])
                        .transition_to(v(6))
                        .reason_code(v(4))
                        .observed_at(v(7))
                        .build(),
                    Channel::McpTask,
                ),
                (
                    DeliveryReportBuilder::new(&reg, ReportType::Scheduled, v(3))
                        .task_id(v(4))
                        .period_start(v(7))
                        .period_end(v(7))
                        .media_buy_deliveries(json!([]))
                        .build(),
                    Channel::Reporting,
                ),
                (
                    ListChangedBuilder::new(ListKind::Property, v(3)).list_id(v(4)).build(),
                    Channel::PropertyList,
                ),
                (
                    RightsRevocationBuilder::new(v(3)).rights_id(v(4)).brand_id(v(5)).reason(v(6)).build(),
                    Channel::RightsRevocation,
                ),
            ];
            for (result, channel) in built {
                let Ok(n) = result else { continue };
                let body = n.to_value();
                let payload = WebhookPayload::classify(&body, Some(channel), AcceptKinds::All);
                let payload = payload.map_err(|e| TestCaseError::fail(format!("{body}: {}", e.code())))?;
                prop_assert_eq!(payload.kind(), n.kind());
                prop_assert_eq!(payload.notification_id(), n.notification_id());
            }
        }
    }
}

#[test]
fn members_the_builder_owns_cannot_be_set_through_member() {
    let base = || {
        DeliveryReportBuilder::new(&registration(), ReportType::Scheduled, FIRED_AT)
            .task_id("t_1")
            .period_start("2026-04-17T00:00:00Z")
            .period_end("2026-04-18T00:00:00Z")
            .media_buy_deliveries(json!([]))
    };
    for (path, owned) in [
        ("idempotency_key", "idempotency_key"),
        ("token", "token"),
        ("operation_id", "operation_id"),
        ("timestamp", "timestamp"),
        ("result.notification_type", "result.notification_type"),
        ("result", "result.notification_type"),
    ] {
        let err = base().member(path, json!("x")).build().unwrap_err();
        assert!(
            matches!(err, BuildError::Invalid { member, .. } if member == owned),
            "{path}: {err:?}"
        );
    }
    // Other members pass through.
    let n = base()
        .member("result.ext", json!({"seller": {"k": 1}}))
        .build()
        .unwrap();
    assert_eq!(n.to_value()["result"]["ext"]["seller"]["k"], 1);
}

#[test]
fn wholesale_scope_and_event_id_are_checked() {
    let base = || {
        WholesaleFeedBuilder::new(&registration(), WholesaleEventType::ProductRemoved, FIRED_AT)
            .account_id("acc_1")
            .wholesale_feed_version("v2")
            .product_payload_view("canonical")
            .entity_id("prod_1")
            .created_at(FIRED_AT)
            .payload(json!({"product_id": "prod_1", "applies_to": {"scope": "account"}}))
    };
    let err = base()
        .cache_scope("public")
        .event_id("019539a0-0000-7000-8000-000000000001")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "cache_scope",
                ..
            }
        ),
        "{err:?}"
    );
    let err = base().cache_scope("account").event_id("evt_1").build().unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "event.event_id",
                ..
            }
        ),
        "{err:?}"
    );
    let n = base()
        .cache_scope("account")
        .event_id("019539a0-0000-7000-8000-000000000001")
        .build()
        .unwrap();
    assert_eq!(n.notification_id(), Some("019539a0-0000-7000-8000-000000000001"));
}

#[test]
fn members_that_need_an_item_refuse_an_empty_array() {
    let err = ImpairmentBuilder::new(&registration(), FIRED_AT)
        .task_id("t_1")
        .media_buy_id("mb_1")
        .health("impaired")
        .impairment_id("imp_1")
        .resource_type("creative")
        .resource_id("cr_1")
        .package_ids(Vec::<String>::new())
        .transition_to("suspended")
        .reason_code("content_rejected")
        .observed_at(FIRED_AT)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "result.impairment.package_ids",
                ..
            }
        ),
        "{err:?}"
    );
    let err = ReportingStatusChangedBuilder::new(&registration(), FIRED_AT)
        .account_id("acc_1")
        .delivery_config_id("rdc_1")
        .delivery_config_version(1)
        .feed_purpose("billing")
        .health("delayed")
        .issue_ids(Vec::<String>::new())
        .notification_id("rdc_1.health.1")
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "issue_ids",
                ..
            }
        ),
        "{err:?}"
    );
    let err = IndicatorsChangedBuilder::new(&registration(), FIRED_AT)
        .account_id("acc_1")
        .relationship_kind("media_buy")
        .media_buy_id("mb_1")
        .change_kind("asserted")
        .changed_indicator_types(Vec::<String>::new())
        .observed_at(FIRED_AT)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::Invalid {
                member: "changed_indicator_types",
                ..
            }
        ),
        "{err:?}"
    );
}
