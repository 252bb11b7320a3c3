//! Account-anchored reporting notifications: `reporting.delivery_ready`,
//! `reporting.status_changed` and `reporting.ledger_changed`.

use super::{common_builder, notification_id_setter, setters, Draft, IdRule, Registered};
use crate::payload::PayloadKind;
use serde_json::Value;

/// `reporting.delivery_ready` (`core/reporting-delivery-ready-webhook.json`).
///
/// `notification_id`: stable per `reporting_materialization_id` reaching
/// its ready state, so derived from (`account_id`,
/// `reporting_materialization_id`, `readiness`) unless set.
#[derive(Debug, Clone)]
pub struct ReportingDeliveryReadyBuilder {
    draft: Draft,
}

impl ReportingDeliveryReadyBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        let mut draft = Draft::notification(
            PayloadKind::ReportingDeliveryReady,
            "reporting.delivery_ready",
            registration,
            fired_at.into(),
            &[
                "subscriber_id",
                "account_id",
                "delivery_config_id",
                "delivery_config_version",
                "feed_purpose",
                "reporting_revision_id",
                "reporting_materialization_id",
                "readiness",
                "finality",
            ],
            IdRule::Derived("rdr", &["account_id", "reporting_materialization_id", "readiness"]),
        );
        // `data_through` is required and may be null: null until set.
        draft.set("data_through", Value::Null);
        Self { draft }
    }

    /// The instant the materialization covers data through (RFC 3339);
    /// `null` when not given.
    #[must_use]
    pub fn data_through(mut self, value: impl Into<String>) -> Self {
        self.draft.set_time("data_through", value.into());
        self
    }
}

setters!(ReportingDeliveryReadyBuilder {
    /// The account.
    account_id("account_id"): text;
    /// The delivery configuration.
    delivery_config_id("delivery_config_id"): text;
    /// The delivery configuration's version.
    delivery_config_version("delivery_config_version"): int;
    /// The feed purpose.
    feed_purpose("feed_purpose"): text;
    /// The reporting revision.
    reporting_revision_id("reporting_revision_id"): text;
    /// The materialization now ready.
    reporting_materialization_id("reporting_materialization_id"): text;
    /// `available` or `delivered`.
    readiness("readiness"): text;
    /// `enums/reporting-finality.json`.
    finality("finality"): text;
});
common_builder!(ReportingDeliveryReadyBuilder);
notification_id_setter!(ReportingDeliveryReadyBuilder);

/// `reporting.status_changed` (`core/reporting-status-changed-webhook.json`).
///
/// `notification_id` is given by the caller
/// ([`notification_id`](Self::notification_id)): it is stable per
/// (obligation or configuration, health transition), and no member tells
/// two occurrences of the same transition apart. `issue_ids` is required
/// when `health` is `delayed` or `action_required`.
#[derive(Debug, Clone)]
pub struct ReportingStatusChangedBuilder {
    draft: Draft,
}

impl ReportingStatusChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::ReportingStatusChanged,
                "reporting.status_changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "delivery_config_id",
                    "delivery_config_version",
                    "feed_purpose",
                    "health",
                ],
                IdRule::Given,
            )
            .non_empty(&["issue_ids"])
            .with_conditional(|d| match d.get("health").and_then(Value::as_str) {
                Some("delayed" | "action_required") => &["issue_ids"],
                _ => &[],
            }),
        }
    }
}

setters!(ReportingStatusChangedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// The delivery configuration.
    delivery_config_id("delivery_config_id"): text;
    /// The delivery configuration's version.
    delivery_config_version("delivery_config_version"): int;
    /// The feed purpose.
    feed_purpose("feed_purpose"): text;
    /// The reporting obligation, when the transition is an obligation's.
    reporting_obligation_id("reporting_obligation_id"): text;
    /// The new health (`enums/reporting-health.json`).
    health("health"): text;
    /// The health before the transition.
    previous_health("previous_health"): text;
    /// The stable ids of the open issues.
    issue_ids("issue_ids"): texts;
});
common_builder!(ReportingStatusChangedBuilder);
notification_id_setter!(ReportingStatusChangedBuilder);

/// `reporting.ledger_changed` (`core/reporting-ledger-changed-webhook.json`).
///
/// `notification_id`: stable per `reporting_revision_id` or
/// `reporting_adjustment_id`, so derived from (`account_id`,
/// `change_kind`, `reporting_revision_id`, `reporting_adjustment_id`)
/// unless set. `revision_published` requires `reporting_revision_id` and
/// `finality`; `adjustment_published` requires `reporting_adjustment_id`
/// and `adjusts_reporting_revision_id`.
#[derive(Debug, Clone)]
pub struct ReportingLedgerChangedBuilder {
    draft: Draft,
}

impl ReportingLedgerChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::ReportingLedgerChanged,
                "reporting.ledger_changed",
                registration,
                fired_at.into(),
                &["subscriber_id", "account_id", "change_kind"],
                IdRule::Derived(
                    "rlc",
                    &[
                        "account_id",
                        "change_kind",
                        "reporting_revision_id",
                        "reporting_adjustment_id",
                    ],
                ),
            )
            .with_conditional(|d| match d.get("change_kind").and_then(Value::as_str) {
                Some("revision_published") => &["reporting_revision_id", "finality"],
                Some(_) => &["reporting_adjustment_id", "adjusts_reporting_revision_id"],
                None => &[],
            }),
        }
    }
}

setters!(ReportingLedgerChangedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// `revision_published` or `adjustment_published`.
    change_kind("change_kind"): text;
    /// The published revision.
    reporting_revision_id("reporting_revision_id"): text;
    /// The revision it supersedes.
    supersedes_reporting_revision_id("supersedes_reporting_revision_id"): text;
    /// `enums/reporting-finality.json` (revisions only).
    finality("finality"): text;
    /// The published adjustment.
    reporting_adjustment_id("reporting_adjustment_id"): text;
    /// The revision the adjustment adjusts.
    adjusts_reporting_revision_id("adjusts_reporting_revision_id"): text;
});
common_builder!(ReportingLedgerChangedBuilder);
notification_id_setter!(ReportingLedgerChangedBuilder);
