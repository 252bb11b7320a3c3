//! Account-level notifications about a buy's indicators and the account
//! itself.

use super::ident::{opt_string, present};
use super::model::{notification_model, NotificationHeader};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `indicators.changed` (`core/indicators-changed-webhook.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndicatorsChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// `media_buy`, `package` or `creative_assignment` (which decides
    /// whether `package_id` / `creative_id` are required).
    pub relationship_kind: String,
    /// The media buy.
    pub media_buy_id: String,
    /// The package, for package and creative-assignment relationships.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub package_id: Option<String>,
    /// The creative, for creative-assignment relationships.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub creative_id: Option<String>,
    /// `asserted`, `cleared`, `updated`, `invalidated`,
    /// `coverage_changed` or `assignment_removed`.
    pub change_kind: String,
    /// The indicator types that changed (`enums/indicator-type.json`).
    pub changed_indicator_types: Vec<String>,
    /// When the seller observed the change.
    pub observed_at: String,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    IndicatorsChanged,
    [
        "account_id",
        "relationship_kind",
        "media_buy_id",
        "change_kind",
        "changed_indicator_types",
        "observed_at"
    ]
);

/// `account.status_changed` (`core/account-status-changed-webhook.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountStatusChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// Status before (`enums/account-status.json`).
    pub previous_status: String,
    /// Status now (`enums/account-status.json`).
    pub status: String,
    /// When the seller observed the change.
    pub observed_at: String,
    /// Why (`seller_approved`, `payment_required`, …).
    pub reason_code: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reason_detail: Option<String>,
    /// Setup action the buyer must take (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub setup: Option<Value>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    AccountStatusChanged,
    ["account_id", "previous_status", "status", "observed_at", "reason_code"]
);

/// `account.change_recorded` (`core/account-change-recorded-webhook.json`):
/// an entry appended to the account's change log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountChangeRecorded {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The change-log entry (`[A-Za-z0-9_.:-]{1,255}`).
    pub change_id: String,
    /// When it was recorded.
    pub recorded_at: String,
    /// The changed resource (`type`, `resource_id`, `parent_ids`; opaque
    /// beyond that to the SDK).
    pub resource: Value,
    /// What happened to it.
    pub action: String,
    /// Read cursor covering this change.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub through_cursor: Option<String>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    AccountChangeRecorded,
    ["account_id", "change_id", "recorded_at", "resource", "action"]
);
