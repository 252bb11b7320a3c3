//! Account-level reporting notifications (delivery configs and the
//! reporting ledger).

use super::ident::{nullable_string, opt_string, present, some};
use super::model::{notification_model, NotificationHeader};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `reporting.delivery_ready` (`core/reporting-delivery-ready-webhook.json`):
/// a reporting materialization is available or was delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportingDeliveryReady {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The reporting delivery config.
    pub delivery_config_id: String,
    /// Its version (≥ 1).
    pub delivery_config_version: u64,
    /// `pacing`, `analytics` or `billing`.
    pub feed_purpose: String,
    /// The reporting revision.
    pub reporting_revision_id: String,
    /// The materialization.
    pub reporting_materialization_id: String,
    /// `available` or `delivered`.
    pub readiness: String,
    /// `enums/reporting-finality.json`.
    pub finality: String,
    /// Data complete through this instant, or `null` (required either
    /// way, so it is serialized back as it came).
    #[serde(deserialize_with = "nullable_string")]
    pub data_through: Option<String>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    ReportingDeliveryReady,
    [
        "account_id",
        "delivery_config_id",
        "delivery_config_version",
        "feed_purpose",
        "reporting_revision_id",
        "reporting_materialization_id",
        "readiness",
        "finality"
    ],
    nullable["data_through"]
);

/// `reporting.status_changed` (`core/reporting-status-changed-webhook.json`):
/// a delivery config's health changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportingStatusChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The reporting delivery config.
    pub delivery_config_id: String,
    /// Its version (≥ 1).
    pub delivery_config_version: u64,
    /// `pacing`, `analytics` or `billing`.
    pub feed_purpose: String,
    /// The reporting obligation, when one is concerned.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reporting_obligation_id: Option<String>,
    /// `enums/reporting-health.json`.
    pub health: String,
    /// The health before.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub previous_health: Option<String>,
    /// Open issues (required when `health` is `delayed` or
    /// `action_required`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some")]
    pub issue_ids: Option<Vec<String>>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    ReportingStatusChanged,
    [
        "account_id",
        "delivery_config_id",
        "delivery_config_version",
        "feed_purpose",
        "health"
    ]
);

/// `reporting.ledger_changed` (`core/reporting-ledger-changed-webhook.json`):
/// a revision or an adjustment was published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportingLedgerChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// `revision_published` or `adjustment_published`.
    pub change_kind: String,
    /// The published revision (revision events).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reporting_revision_id: Option<String>,
    /// The revision it supersedes (revision events).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub supersedes_reporting_revision_id: Option<String>,
    /// `enums/reporting-finality.json` (revision events).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub finality: Option<String>,
    /// The published adjustment (adjustment events).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reporting_adjustment_id: Option<String>,
    /// The revision it adjusts (adjustment events).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub adjusts_reporting_revision_id: Option<String>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(ReportingLedgerChanged, ["account_id", "change_kind"]);
