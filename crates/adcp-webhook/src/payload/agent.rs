//! Caller-anchored notifications, delivered to agent-level subscribers.

use super::ident::{opt_string, present, some};
use super::model::{notification_model, NotificationHeader};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `capabilities.changed` (`core/capabilities-changed-webhook.json`): the
/// seller's `get_adcp_capabilities` snapshot changed; re-read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapabilitiesChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The seller agent whose capabilities changed.
    pub agent_url: String,
    /// When they changed.
    pub changed_at: String,
    /// `configuration_changed`, `deployment_changed`, … or `other`.
    pub reason: String,
    /// The new snapshot's version, observable on read.
    pub capabilities_version: String,
    /// JSON Pointers into the capability document that changed.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some")]
    pub changed_paths: Option<Vec<String>>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    CapabilitiesChanged,
    ["agent_url", "changed_at", "reason", "capabilities_version"]
);

/// `principal.changed` (`core/principal-changed-webhook.json`): the seller
/// changed the caller's principal state (destinations, setup, proofs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrincipalChanged {
    /// Common notification members.
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The seller agent.
    pub agent_url: String,
    /// When the state changed.
    pub changed_at: String,
    /// `destination_state_changed`, `setup_expiring`, … or `other`.
    pub reason: String,
    /// The reporting destination concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub destination_id: Option<String>,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(PrincipalChanged, ["agent_url", "changed_at", "reason"]);
