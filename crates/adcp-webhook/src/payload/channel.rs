//! Registration channels and the kinds each one delivers.
//!
//! The envelope shape is decided by how the buyer registered the webhook
//! (webhooks.mdx, "Registration channel determines envelope shape"), so a
//! receiver that knows the registration should say so: a body is then
//! read only as one of that channel's kinds, which an ambiguous payload
//! crafted to route elsewhere cannot change.

use super::PayloadKind;

/// How the webhook was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Channel {
    /// AdCP task-argument `push_notification_config` (MCP, A2A or REST
    /// sync transport alike): the MCP task envelope.
    McpTask,
    /// A media buy's `reporting_webhook`: delivery reports, inside the MCP
    /// task envelope.
    Reporting,
    /// A2A `TaskPushNotificationConfig`: native A2A `Task` /
    /// `TaskStatusUpdateEvent`.
    A2aTask,
    /// Account-level `sync_accounts.accounts[].notification_configs[]`:
    /// account-anchored notifications and the account-level challenge.
    AccountNotifications,
    /// Agent-level `sync_agent_notification_configs` / `sync_principal`:
    /// caller-anchored notifications (`capabilities.changed`,
    /// `principal.changed`), account-anchored ones subscribed with the
    /// all-authorized-accounts acknowledgment, and the agent-level
    /// challenge.
    AgentNotifications,
    /// A collection list's change webhook.
    CollectionList,
    /// A property list's change webhook.
    PropertyList,
    /// Content-standards artifact push.
    Artifacts,
    /// Rights-grant revocation notifications.
    RightsRevocation,
}

impl Channel {
    /// Every channel, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::McpTask,
        Self::Reporting,
        Self::A2aTask,
        Self::AccountNotifications,
        Self::AgentNotifications,
        Self::CollectionList,
        Self::PropertyList,
        Self::Artifacts,
        Self::RightsRevocation,
    ];

    /// A stable snake-case name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::McpTask => "mcp_task",
            Self::Reporting => "reporting",
            Self::A2aTask => "a2a_task",
            Self::AccountNotifications => "account_notifications",
            Self::AgentNotifications => "agent_notifications",
            Self::CollectionList => "collection_list",
            Self::PropertyList => "property_list",
            Self::Artifacts => "artifacts",
            Self::RightsRevocation => "rights_revocation",
        }
    }

    /// Whether the channel delivers `kind`. [`PayloadKind::Generic`] is
    /// accepted where the channel's kinds are an open family
    /// (notification channels, whose `notification_type` list grows), and
    /// only when [`AcceptKinds::All`] is in force.
    #[must_use]
    pub fn carries(self, kind: PayloadKind) -> bool {
        use PayloadKind as K;
        match self {
            Self::McpTask | Self::Reporting => kind == K::McpTask,
            Self::A2aTask => kind == K::A2aTask,
            Self::AccountNotifications => is_account_anchored(kind) || matches!(kind, K::AccountChallenge | K::Generic),
            Self::AgentNotifications => {
                is_account_anchored(kind)
                    || matches!(
                        kind,
                        K::CapabilitiesChanged | K::PrincipalChanged | K::AgentChallenge | K::Generic
                    )
            }
            Self::CollectionList => kind == K::CollectionListChanged,
            Self::PropertyList => kind == K::PropertyListChanged,
            Self::Artifacts => kind == K::ArtifactBatch,
            Self::RightsRevocation => kind == K::RightsRevocation,
        }
    }
}

/// The account-anchored notification kinds (valid in account-level
/// `notification_configs[].event_types`).
fn is_account_anchored(kind: PayloadKind) -> bool {
    use PayloadKind as K;
    matches!(
        kind,
        K::CreativeStatusChanged
            | K::CreativeAssignmentChanged
            | K::CreativePurged
            | K::IndicatorsChanged
            | K::AccountStatusChanged
            | K::AccountChangeRecorded
            | K::WholesaleFeed
            | K::ReportingDeliveryReady
            | K::ReportingStatusChanged
            | K::ReportingLedgerChanged
    )
}

/// Whether a payload of an unknown kind is accepted as
/// [`PayloadKind::Generic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum AcceptKinds {
    /// Named kinds, and unknown kinds carrying a valid `idempotency_key`
    /// (forward compatible: a seller on a newer 3.x minor can add event
    /// types; the receiver still dedupes them).
    #[default]
    All,
    /// Named kinds only; anything else is `unknown_payload_kind`.
    NamedOnly,
}
