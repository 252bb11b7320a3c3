//! Governance list-change webhooks (collection and property lists),
//! discriminated by a string `event` rather than `notification_type`.

use super::ident::{opt_string, present};
use super::model::Model;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `collection/collection-list-changed-webhook.json`
/// (`event: collection_list_changed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionListChanged {
    /// Per-delivery dedup key.
    pub idempotency_key: String,
    /// `collection_list_changed`.
    pub event: String,
    /// The list.
    pub list_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub list_name: Option<String>,
    /// Counts of what changed (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub change_summary: Option<Value>,
    /// When the list was resolved.
    pub resolved_at: String,
    /// Until when a cached resolution stays valid.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub cache_valid_until: Option<String>,
    /// A body-level marker required by the schema; never used for
    /// authentication (only the HTTP signature is).
    pub signature: String,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for CollectionListChanged {
    const REQUIRED: &'static [&'static str] = &["event", "list_id", "resolved_at", "signature"];
}

/// `property/property-list-changed-webhook.json`
/// (`event: property_list_changed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PropertyListChanged {
    /// Per-delivery dedup key.
    pub idempotency_key: String,
    /// `property_list_changed`.
    pub event: String,
    /// The list.
    pub list_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub list_name: Option<String>,
    /// Counts of what changed (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub change_summary: Option<Value>,
    /// When the list was resolved.
    pub resolved_at: String,
    /// Until when a cached resolution stays valid.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub cache_valid_until: Option<String>,
    /// The 3.x compatibility marker (`"rfc9421"`; any string accepted,
    /// ignored for authentication, removed in 4.0).
    pub signature: String,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model for PropertyListChanged {
    const REQUIRED: &'static [&'static str] = &["event", "list_id", "resolved_at", "signature"];
}
