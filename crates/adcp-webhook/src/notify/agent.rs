//! Caller-anchored agent notifications: `capabilities.changed` and
//! `principal.changed` (on the agent-level `notification_configs[]`).

use super::{common_builder, notification_id_setter, setters, Draft, IdRule, Registered};
use crate::payload::PayloadKind;

/// `capabilities.changed` (`core/capabilities-changed-webhook.json`).
///
/// `notification_id`: stable per material capability revision, so derived
/// from (`agent_url`, `capabilities_version`) unless set.
#[derive(Debug, Clone)]
pub struct CapabilitiesChangedBuilder {
    draft: Draft,
}

impl CapabilitiesChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::CapabilitiesChanged,
                "capabilities.changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "agent_url",
                    "changed_at",
                    "reason",
                    "capabilities_version",
                ],
                IdRule::Derived("cap", &["agent_url", "capabilities_version"]),
            ),
        }
    }
}

setters!(CapabilitiesChangedBuilder {
    /// The seller agent whose capabilities changed.
    agent_url("agent_url"): text;
    /// When the capability document changed.
    changed_at("changed_at"): time;
    /// Why (the schema's reason enumeration).
    reason("reason"): text;
    /// The new `capabilities_version`.
    capabilities_version("capabilities_version"): text;
    /// The JSON pointers of the changed parts.
    changed_paths("changed_paths"): texts;
});
common_builder!(CapabilitiesChangedBuilder);
notification_id_setter!(CapabilitiesChangedBuilder);

/// `principal.changed` (`core/principal-changed-webhook.json`).
///
/// `notification_id`: stable per logical principal-state transition, so
/// derived from (`agent_url`, `reason`, `destination_id`, `changed_at`)
/// unless set.
#[derive(Debug, Clone)]
pub struct PrincipalChangedBuilder {
    draft: Draft,
}

impl PrincipalChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::PrincipalChanged,
                "principal.changed",
                registration,
                fired_at.into(),
                &["subscriber_id", "agent_url", "changed_at", "reason"],
                IdRule::Derived("prc", &["agent_url", "reason", "destination_id", "changed_at"]),
            ),
        }
    }
}

setters!(PrincipalChangedBuilder {
    /// The seller agent.
    agent_url("agent_url"): text;
    /// When the principal's standing configuration changed.
    changed_at("changed_at"): time;
    /// Why (the schema's reason enumeration).
    reason("reason"): text;
    /// The reporting destination concerned, when there is one.
    destination_id("destination_id"): text;
});
common_builder!(PrincipalChangedBuilder);
notification_id_setter!(PrincipalChangedBuilder);
