//! Account-level creative lifecycle notifications.

use super::ident::{opt_string, present};
use super::model::{notification_model, NotificationHeader};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `creative.status_changed` (`creative/creative-status-changed-webhook.json`):
/// a seller- or system-initiated review transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreativeStatusChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The creative.
    pub creative_id: String,
    /// The creative revision the transition applies to, when revisions are
    /// supported.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub revision_id: Option<String>,
    /// The transition.
    pub transition: CreativeTransition,
    /// `enums/creative-event-reason-code.json`.
    pub reason_code: String,
    /// Free text (≤ 500 characters per the schema).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reason_detail: Option<String>,
    /// `seller` or `system`.
    pub initiator: String,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    CreativeStatusChanged,
    ["account_id", "creative_id", "transition", "reason_code", "initiator"]
);

/// The `transition` of a creative status change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreativeTransition {
    /// Prior status (`processing`, `pending_review`, `approved`,
    /// `suspended`).
    pub from: String,
    /// New status (`enums/creative-status.json`).
    pub to: String,
    /// When the seller observed the transition.
    pub observed_at: String,
    /// Members this model does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `creative.assignment_changed`
/// (`creative/creative-assignment-changed-webhook.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreativeAssignmentChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The media buy.
    pub media_buy_id: String,
    /// The package.
    pub package_id: String,
    /// The creative.
    pub creative_id: String,
    /// `assigned`, `unassigned` or `approval_changed`.
    pub change_kind: String,
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
    CreativeAssignmentChanged,
    [
        "account_id",
        "media_buy_id",
        "package_id",
        "creative_id",
        "change_kind",
        "observed_at"
    ]
);

/// `creative.purged` (`creative/creative-purged-webhook.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreativePurged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The creative.
    pub creative_id: String,
    /// `soft` or `hard`.
    pub purge_kind: String,
    /// When the creative was purged.
    pub purged_at: String,
    /// `enums/creative-event-reason-code.json`.
    pub reason_code: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub reason_detail: Option<String>,
    /// `seller` or `system`.
    pub initiator: String,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    CreativePurged,
    [
        "account_id",
        "creative_id",
        "purge_kind",
        "purged_at",
        "reason_code",
        "initiator"
    ]
);
