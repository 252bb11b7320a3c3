//! The closed list of 3.2 webhook payload kinds, their stable names and
//! the schema each one follows.

/// The kind of a classified webhook payload.
///
/// [`PayloadKind::as_str`] names are stable (metrics labels, logs):
///
/// | Kind | `as_str()` | Schema (under the 3.2 schema directory) |
/// |---|---|---|
/// | MCP task envelope | `mcp_task` | `core/mcp-webhook-payload.json` |
/// | A2A `Task` / `TaskStatusUpdateEvent` | `a2a_task` | (A2A 1.0, not an AdCP schema) |
/// | `creative.status_changed` | `creative_status_changed` | `creative/creative-status-changed-webhook.json` |
/// | `creative.assignment_changed` | `creative_assignment_changed` | `creative/creative-assignment-changed-webhook.json` |
/// | `creative.purged` | `creative_purged` | `creative/creative-purged-webhook.json` |
/// | `indicators.changed` | `indicators_changed` | `core/indicators-changed-webhook.json` |
/// | `account.status_changed` | `account_status_changed` | `core/account-status-changed-webhook.json` |
/// | `account.change_recorded` | `account_change_recorded` | `core/account-change-recorded-webhook.json` |
/// | `product.*`, `signal.*`, `wholesale_feed.bulk_change` | `wholesale_feed` | `core/wholesale-feed-webhook.json` |
/// | `reporting.delivery_ready` | `reporting_delivery_ready` | `core/reporting-delivery-ready-webhook.json` |
/// | `reporting.status_changed` | `reporting_status_changed` | `core/reporting-status-changed-webhook.json` |
/// | `reporting.ledger_changed` | `reporting_ledger_changed` | `core/reporting-ledger-changed-webhook.json` |
/// | `capabilities.changed` | `capabilities_changed` | `core/capabilities-changed-webhook.json` |
/// | `principal.changed` | `principal_changed` | `core/principal-changed-webhook.json` |
/// | `collection_list_changed` | `collection_list_changed` | `collection/collection-list-changed-webhook.json` |
/// | `property_list_changed` | `property_list_changed` | `property/property-list-changed-webhook.json` |
/// | artifact batch | `artifact_batch` | `content-standards/artifact-webhook-payload.json` |
/// | rights revocation | `rights_revocation` | `brand/revocation-notification.json` |
/// | account-level challenge | `account_challenge` | `core/webhook-challenge.json` |
/// | agent-level challenge | `agent_challenge` | `core/agent-webhook-challenge.json` |
/// | unknown kind with a valid key | `generic` | — |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PayloadKind {
    /// The MCP task envelope (task status, delivery reports, impairments).
    McpTask,
    /// An A2A native task notification.
    A2aTask,
    /// `creative.status_changed`.
    CreativeStatusChanged,
    /// `creative.assignment_changed`.
    CreativeAssignmentChanged,
    /// `creative.purged`.
    CreativePurged,
    /// `indicators.changed`.
    IndicatorsChanged,
    /// `account.status_changed`.
    AccountStatusChanged,
    /// `account.change_recorded`.
    AccountChangeRecorded,
    /// A wholesale feed event (`product.*`, `signal.*`,
    /// `wholesale_feed.bulk_change`).
    WholesaleFeed,
    /// `reporting.delivery_ready`.
    ReportingDeliveryReady,
    /// `reporting.status_changed`.
    ReportingStatusChanged,
    /// `reporting.ledger_changed`.
    ReportingLedgerChanged,
    /// `capabilities.changed` (agent-level subscribers).
    CapabilitiesChanged,
    /// `principal.changed` (caller-anchored).
    PrincipalChanged,
    /// A collection list changed (`event: collection_list_changed`).
    CollectionListChanged,
    /// A property list changed (`event: property_list_changed`).
    PropertyListChanged,
    /// A batch of content artifacts for a media buy.
    ArtifactBatch,
    /// A rights grant revoked.
    RightsRevocation,
    /// The account-level activation challenge.
    AccountChallenge,
    /// The agent-level activation challenge.
    AgentChallenge,
    /// A payload of a kind this SDK does not know, with a valid
    /// `idempotency_key`.
    Generic,
}

impl PayloadKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 21] = [
        Self::McpTask,
        Self::A2aTask,
        Self::CreativeStatusChanged,
        Self::CreativeAssignmentChanged,
        Self::CreativePurged,
        Self::IndicatorsChanged,
        Self::AccountStatusChanged,
        Self::AccountChangeRecorded,
        Self::WholesaleFeed,
        Self::ReportingDeliveryReady,
        Self::ReportingStatusChanged,
        Self::ReportingLedgerChanged,
        Self::CapabilitiesChanged,
        Self::PrincipalChanged,
        Self::CollectionListChanged,
        Self::PropertyListChanged,
        Self::ArtifactBatch,
        Self::RightsRevocation,
        Self::AccountChallenge,
        Self::AgentChallenge,
        Self::Generic,
    ];

    /// The stable snake-case name (see the table above).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::McpTask => "mcp_task",
            Self::A2aTask => "a2a_task",
            Self::CreativeStatusChanged => "creative_status_changed",
            Self::CreativeAssignmentChanged => "creative_assignment_changed",
            Self::CreativePurged => "creative_purged",
            Self::IndicatorsChanged => "indicators_changed",
            Self::AccountStatusChanged => "account_status_changed",
            Self::AccountChangeRecorded => "account_change_recorded",
            Self::WholesaleFeed => "wholesale_feed",
            Self::ReportingDeliveryReady => "reporting_delivery_ready",
            Self::ReportingStatusChanged => "reporting_status_changed",
            Self::ReportingLedgerChanged => "reporting_ledger_changed",
            Self::CapabilitiesChanged => "capabilities_changed",
            Self::PrincipalChanged => "principal_changed",
            Self::CollectionListChanged => "collection_list_changed",
            Self::PropertyListChanged => "property_list_changed",
            Self::ArtifactBatch => "artifact_batch",
            Self::RightsRevocation => "rights_revocation",
            Self::AccountChallenge => "account_challenge",
            Self::AgentChallenge => "agent_challenge",
            Self::Generic => "generic",
        }
    }

    /// The JSON Schema the kind follows, relative to the 3.2 schema
    /// directory (`None` for A2A and generic payloads).
    #[must_use]
    pub const fn schema(self) -> Option<&'static str> {
        Some(match self {
            Self::McpTask => "core/mcp-webhook-payload.json",
            Self::CreativeStatusChanged => "creative/creative-status-changed-webhook.json",
            Self::CreativeAssignmentChanged => "creative/creative-assignment-changed-webhook.json",
            Self::CreativePurged => "creative/creative-purged-webhook.json",
            Self::IndicatorsChanged => "core/indicators-changed-webhook.json",
            Self::AccountStatusChanged => "core/account-status-changed-webhook.json",
            Self::AccountChangeRecorded => "core/account-change-recorded-webhook.json",
            Self::WholesaleFeed => "core/wholesale-feed-webhook.json",
            Self::ReportingDeliveryReady => "core/reporting-delivery-ready-webhook.json",
            Self::ReportingStatusChanged => "core/reporting-status-changed-webhook.json",
            Self::ReportingLedgerChanged => "core/reporting-ledger-changed-webhook.json",
            Self::CapabilitiesChanged => "core/capabilities-changed-webhook.json",
            Self::PrincipalChanged => "core/principal-changed-webhook.json",
            Self::CollectionListChanged => "collection/collection-list-changed-webhook.json",
            Self::PropertyListChanged => "property/property-list-changed-webhook.json",
            Self::ArtifactBatch => "content-standards/artifact-webhook-payload.json",
            Self::RightsRevocation => "brand/revocation-notification.json",
            Self::AccountChallenge => "core/webhook-challenge.json",
            Self::AgentChallenge => "core/agent-webhook-challenge.json",
            Self::A2aTask | Self::Generic => return None,
        })
    }

    /// The kind a top-level `notification_type` names (the notification
    /// kinds of `enums/notification-type.json` that travel as their own
    /// body). Delivery-report types (`scheduled`, …, `impairment`) are
    /// `None`: they only travel inside a task envelope's `result`.
    #[must_use]
    pub fn from_notification_type(notification_type: &str) -> Option<Self> {
        Some(match notification_type {
            "creative.status_changed" => Self::CreativeStatusChanged,
            "creative.assignment_changed" => Self::CreativeAssignmentChanged,
            "creative.purged" => Self::CreativePurged,
            "indicators.changed" => Self::IndicatorsChanged,
            "account.status_changed" => Self::AccountStatusChanged,
            "account.change_recorded" => Self::AccountChangeRecorded,
            "product.created"
            | "product.updated"
            | "product.priced"
            | "product.removed"
            | "signal.created"
            | "signal.updated"
            | "signal.priced"
            | "signal.removed"
            | "wholesale_feed.bulk_change" => Self::WholesaleFeed,
            "reporting.delivery_ready" => Self::ReportingDeliveryReady,
            "reporting.status_changed" => Self::ReportingStatusChanged,
            "reporting.ledger_changed" => Self::ReportingLedgerChanged,
            "capabilities.changed" => Self::CapabilitiesChanged,
            "principal.changed" => Self::PrincipalChanged,
            _ => return None,
        })
    }

    /// The kind a list-change webhook's string `event` names.
    #[must_use]
    pub fn from_list_event(event: &str) -> Option<Self> {
        match event {
            "collection_list_changed" => Some(Self::CollectionListChanged),
            "property_list_changed" => Some(Self::PropertyListChanged),
            _ => None,
        }
    }

    /// Whether the kind is an activation challenge.
    #[must_use]
    pub const fn is_challenge(self) -> bool {
        matches!(self, Self::AccountChallenge | Self::AgentChallenge)
    }
}

impl std::fmt::Display for PayloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a `notification_type` is one of the media-buy-anchored
/// delivery-report types (`scheduled`, `final`, `delayed`, `adjusted`,
/// `window_update`, `impairment`): content of a task envelope's `result`,
/// never a body of its own.
#[must_use]
pub fn is_delivery_report_type(notification_type: &str) -> bool {
    matches!(
        notification_type,
        "scheduled" | "final" | "delayed" | "adjusted" | "window_update" | "impairment"
    )
}
