//! A typed model of every AdCP 3.2 webhook payload kind, and the
//! classifier that tells them apart.
//!
//! The receiver parses a verified body once into a [`serde_json::Value`]
//! and calls [`WebhookPayload::classify`] with the registration's
//! [`Channel`] when it knows it. The result is one [`WebhookPayload`]
//! variant per kind ([`PayloadKind`] names them), with the identity
//! members every receiver needs behind common accessors, or a
//! [`PayloadError`] whose [`code`](PayloadError::code) and
//! [`message`](PayloadError::message) go into the 400 body.
//!
//! Every model keeps the members it does not name (`extra`), so a parsed
//! payload serializes back to the same JSON value. Members whose schema
//! is large and which the SDK never reads inside (task results, wholesale
//! events, artifacts) stay [`serde_json::Value`].
//!
//! | Channel ([`Channel`]) | Kinds delivered |
//! |---|---|
//! | `McpTask` (`push_notification_config`), `Reporting` (`reporting_webhook`) | `mcp_task` (delivery reports and impairments under `result`) |
//! | `A2aTask` (A2A `TaskPushNotificationConfig`) | `a2a_task` |
//! | `AccountNotifications` (`notification_configs[]`) | `account_challenge`, creative, indicator, account, wholesale and reporting notifications, `generic` |
//! | `AgentNotifications` (`sync_agent_notification_configs` / `sync_principal`) | `agent_challenge`, `capabilities_changed`, `principal_changed`, the account-level notifications, `generic` |
//! | `CollectionList` / `PropertyList` | `collection_list_changed` / `property_list_changed` |
//! | `Artifacts` | `artifact_batch` |
//! | `RightsRevocation` | `rights_revocation` |
//!
//! Without a channel, the shape decides, in this order: challenge
//! (`type: "webhook.challenge"`), `notification_type`, string `event`,
//! MCP (`task_id` and string `status`), A2A (`status.state`), rights
//! revocation (`rights_id`), artifact batch (`batch_id` and `artifacts`),
//! then generic. A delivery report's `result` posted bare is always
//! `missing_envelope_fields`.
//!
//! ```
//! use adcp_webhook::payload::{AcceptKinds, Channel, PayloadKind, WebhookPayload};
//! use serde_json::json;
//!
//! let body = json!({
//!     "idempotency_key": "whk_7c1f0e9a4b2d4e6f8a0b",
//!     "task_id": "task_1",
//!     "operation_id": "op_1",
//!     "task_type": "create_media_buy",
//!     "status": "completed",
//!     "timestamp": "2026-04-18T12:00:00Z",
//!     "result": {"media_buy_id": "mb_1"}
//! });
//! let payload = WebhookPayload::classify(&body, Some(Channel::McpTask), AcceptKinds::All)?;
//! assert_eq!(payload.kind(), PayloadKind::McpTask);
//! assert_eq!(payload.idempotency_key(), Some("whk_7c1f0e9a4b2d4e6f8a0b"));
//! assert!(payload.is_terminal_task());
//! assert_eq!(serde_json::to_value(&payload)?, body);
//!
//! let bare = json!({"notification_type": "scheduled", "reporting_period": {}, "media_buy_deliveries": []});
//! let err = WebhookPayload::classify(&bare, None, AcceptKinds::All).unwrap_err();
//! assert_eq!(err.code(), "missing_envelope_fields");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod a2a;
mod account;
mod agent;
mod artifact;
mod challenge;
mod channel;
mod classify;
mod creative;
mod error;
mod generic;
mod ident;
mod kind;
mod list;
pub(crate) mod model;
mod reporting;
mod revocation;
mod task;
mod wholesale;

pub use a2a::A2aTaskPayload;
pub use account::{AccountChangeRecorded, AccountStatusChanged, IndicatorsChanged};
pub use agent::{CapabilitiesChanged, PrincipalChanged};
pub use artifact::ArtifactBatch;
pub use challenge::{
    credential_fingerprint, AgentWebhookChallenge, Challenge, ChallengeResponse, ChallengeResponseError, DeliveryAuth,
    WebhookChallenge, CHALLENGE_TYPE,
};
pub use channel::{AcceptKinds, Channel};
pub use creative::{CreativeAssignmentChanged, CreativePurged, CreativeStatusChanged, CreativeTransition};
pub use error::PayloadError;
pub use generic::GenericPayload;
pub use ident::{is_valid_idempotency_key, is_valid_notification_id};
pub use kind::{is_delivery_report_type, PayloadKind};
pub use list::{CollectionListChanged, PropertyListChanged};
pub use model::NotificationHeader;
pub use reporting::{ReportingDeliveryReady, ReportingLedgerChanged, ReportingStatusChanged};
pub use revocation::RightsRevocation;
pub use task::{DeliveryReport, EchoedToken, McpTaskPayload};
pub use wholesale::WholesaleFeed;

use crate::envelope::TaskStatus;
use serde::Serialize;

/// One classified webhook body. Serializes back to the JSON value it was
/// read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum WebhookPayload {
    /// The MCP task envelope.
    McpTask(Box<McpTaskPayload>),
    /// An A2A task notification.
    A2aTask(A2aTaskPayload),
    /// `creative.status_changed`.
    CreativeStatusChanged(Box<CreativeStatusChanged>),
    /// `creative.assignment_changed`.
    CreativeAssignmentChanged(Box<CreativeAssignmentChanged>),
    /// `creative.purged`.
    CreativePurged(Box<CreativePurged>),
    /// `indicators.changed`.
    IndicatorsChanged(Box<IndicatorsChanged>),
    /// `account.status_changed`.
    AccountStatusChanged(Box<AccountStatusChanged>),
    /// `account.change_recorded`.
    AccountChangeRecorded(Box<AccountChangeRecorded>),
    /// A wholesale feed event.
    WholesaleFeed(Box<WholesaleFeed>),
    /// `reporting.delivery_ready`.
    ReportingDeliveryReady(Box<ReportingDeliveryReady>),
    /// `reporting.status_changed`.
    ReportingStatusChanged(Box<ReportingStatusChanged>),
    /// `reporting.ledger_changed`.
    ReportingLedgerChanged(Box<ReportingLedgerChanged>),
    /// `capabilities.changed`.
    CapabilitiesChanged(Box<CapabilitiesChanged>),
    /// `principal.changed`.
    PrincipalChanged(Box<PrincipalChanged>),
    /// `collection_list_changed`.
    CollectionListChanged(Box<CollectionListChanged>),
    /// `property_list_changed`.
    PropertyListChanged(Box<PropertyListChanged>),
    /// A content artifact batch.
    ArtifactBatch(Box<ArtifactBatch>),
    /// A rights revocation.
    RightsRevocation(Box<RightsRevocation>),
    /// An activation challenge (answer with [`Challenge::response`]).
    Challenge(Box<Challenge>),
    /// An unknown kind with a valid `idempotency_key`.
    Generic(GenericPayload),
}

impl WebhookPayload {
    /// Classifies a parsed body. `channel`: the registration's channel,
    /// when the receiver knows it (preferred: it decides the expected
    /// kinds, so an ambiguous body cannot route itself elsewhere); else the
    /// shape decides (see the module docs for the order). Never panics;
    /// work is linear in the size of `value`.
    ///
    /// # Errors
    ///
    /// [`PayloadError`].
    pub fn classify(
        value: &serde_json::Value,
        channel: Option<Channel>,
        accept: AcceptKinds,
    ) -> Result<Self, PayloadError> {
        classify::classify(value, channel, accept)
    }

    /// [`Self::classify`] consuming the value, with the same decision for
    /// every input: the members move into the model instead of being
    /// copied where that matters (the task envelope, the receiver's hot
    /// path).
    ///
    /// # Errors
    ///
    /// [`PayloadError`].
    pub fn classify_owned(
        value: serde_json::Value,
        channel: Option<Channel>,
        accept: AcceptKinds,
    ) -> Result<Self, PayloadError> {
        classify::classify_owned(value, channel, accept)
    }

    /// The kind.
    #[must_use]
    pub fn kind(&self) -> PayloadKind {
        match self {
            Self::McpTask(_) => PayloadKind::McpTask,
            Self::A2aTask(_) => PayloadKind::A2aTask,
            Self::CreativeStatusChanged(_) => PayloadKind::CreativeStatusChanged,
            Self::CreativeAssignmentChanged(_) => PayloadKind::CreativeAssignmentChanged,
            Self::CreativePurged(_) => PayloadKind::CreativePurged,
            Self::IndicatorsChanged(_) => PayloadKind::IndicatorsChanged,
            Self::AccountStatusChanged(_) => PayloadKind::AccountStatusChanged,
            Self::AccountChangeRecorded(_) => PayloadKind::AccountChangeRecorded,
            Self::WholesaleFeed(_) => PayloadKind::WholesaleFeed,
            Self::ReportingDeliveryReady(_) => PayloadKind::ReportingDeliveryReady,
            Self::ReportingStatusChanged(_) => PayloadKind::ReportingStatusChanged,
            Self::ReportingLedgerChanged(_) => PayloadKind::ReportingLedgerChanged,
            Self::CapabilitiesChanged(_) => PayloadKind::CapabilitiesChanged,
            Self::PrincipalChanged(_) => PayloadKind::PrincipalChanged,
            Self::CollectionListChanged(_) => PayloadKind::CollectionListChanged,
            Self::PropertyListChanged(_) => PayloadKind::PropertyListChanged,
            Self::ArtifactBatch(_) => PayloadKind::ArtifactBatch,
            Self::RightsRevocation(_) => PayloadKind::RightsRevocation,
            Self::Challenge(c) => match **c {
                Challenge::Account(_) => PayloadKind::AccountChallenge,
                Challenge::Agent(_) => PayloadKind::AgentChallenge,
            },
            Self::Generic(_) => PayloadKind::Generic,
        }
    }

    /// The common header of a `notification_type` notification.
    fn header(&self) -> Option<&NotificationHeader> {
        Some(match self {
            Self::CreativeStatusChanged(p) => &p.header,
            Self::CreativeAssignmentChanged(p) => &p.header,
            Self::CreativePurged(p) => &p.header,
            Self::IndicatorsChanged(p) => &p.header,
            Self::AccountStatusChanged(p) => &p.header,
            Self::AccountChangeRecorded(p) => &p.header,
            Self::WholesaleFeed(p) => &p.header,
            Self::ReportingDeliveryReady(p) => &p.header,
            Self::ReportingStatusChanged(p) => &p.header,
            Self::ReportingLedgerChanged(p) => &p.header,
            Self::CapabilitiesChanged(p) => &p.header,
            Self::PrincipalChanged(p) => &p.header,
            _ => return None,
        })
    }

    /// The dedup key (validated). `None` for A2A notifications and
    /// challenges, which carry none.
    #[must_use]
    pub fn idempotency_key(&self) -> Option<&str> {
        if let Some(h) = self.header() {
            return Some(&h.idempotency_key);
        }
        match self {
            Self::McpTask(p) => Some(&p.idempotency_key),
            Self::CollectionListChanged(p) => Some(&p.idempotency_key),
            Self::PropertyListChanged(p) => Some(&p.idempotency_key),
            Self::ArtifactBatch(p) => Some(&p.idempotency_key),
            Self::RightsRevocation(p) => Some(&p.idempotency_key),
            Self::Generic(p) => p.str_member("idempotency_key"),
            _ => None,
        }
    }

    /// The logical notification identity, stable across re-emissions under
    /// different keys: every `notification_type` notification, and task
    /// envelopes that carry one (terminal fires, impairments).
    #[must_use]
    pub fn notification_id(&self) -> Option<&str> {
        if let Some(h) = self.header() {
            return Some(&h.notification_id);
        }
        match self {
            Self::McpTask(p) => p.notification_id.as_deref(),
            Self::Generic(p) => p.str_member("notification_id"),
            _ => None,
        }
    }

    /// The notification type: the top-level `notification_type`; for a
    /// task envelope, its `result.notification_type` (`scheduled`, …,
    /// `impairment`); for list-change webhooks, their string `event`.
    #[must_use]
    pub fn notification_type(&self) -> Option<&str> {
        if let Some(h) = self.header() {
            return Some(&h.notification_type);
        }
        match self {
            Self::McpTask(p) => p.result_notification_type(),
            Self::CollectionListChanged(p) => Some(&p.event),
            Self::PropertyListChanged(p) => Some(&p.event),
            Self::Generic(p) => p.str_member("notification_type").or_else(|| p.str_member("event")),
            _ => None,
        }
    }

    /// The subscriber registration (notifications and challenges).
    #[must_use]
    pub fn subscriber_id(&self) -> Option<&str> {
        if let Some(h) = self.header() {
            return Some(&h.subscriber_id);
        }
        match self {
            Self::Challenge(c) => Some(c.subscriber_id()),
            Self::Generic(p) => p.str_member("subscriber_id"),
            _ => None,
        }
    }

    /// The account an account-anchored notification or an account-level
    /// challenge concerns.
    #[must_use]
    pub fn account_id(&self) -> Option<&str> {
        match self {
            Self::CreativeStatusChanged(p) => Some(&p.account_id),
            Self::CreativeAssignmentChanged(p) => Some(&p.account_id),
            Self::CreativePurged(p) => Some(&p.account_id),
            Self::IndicatorsChanged(p) => Some(&p.account_id),
            Self::AccountStatusChanged(p) => Some(&p.account_id),
            Self::AccountChangeRecorded(p) => Some(&p.account_id),
            Self::WholesaleFeed(p) => Some(&p.account_id),
            Self::ReportingDeliveryReady(p) => Some(&p.account_id),
            Self::ReportingStatusChanged(p) => Some(&p.account_id),
            Self::ReportingLedgerChanged(p) => Some(&p.account_id),
            Self::Challenge(c) => c.account_id(),
            Self::Generic(p) => p.str_member("account_id"),
            _ => None,
        }
    }

    /// When the sender generated the event: `fired_at` of notifications,
    /// `timestamp` of task envelopes and artifact batches.
    #[must_use]
    pub fn fired_at(&self) -> Option<&str> {
        if let Some(h) = self.header() {
            return Some(&h.fired_at);
        }
        match self {
            Self::McpTask(p) => p.timestamp.as_deref(),
            Self::ArtifactBatch(p) => Some(&p.timestamp),
            Self::Generic(p) => p.str_member("fired_at").or_else(|| p.str_member("timestamp")),
            _ => None,
        }
    }

    /// The task status of a task notification (MCP envelope, or A2A with
    /// a task state).
    #[must_use]
    pub fn task_status(&self) -> Option<TaskStatus> {
        match self {
            Self::McpTask(p) => Some(p.status),
            Self::A2aTask(p) => p.task_status(),
            _ => None,
        }
    }

    /// Whether this is a task notification in a terminal status
    /// (`completed`, `failed`, `canceled`, `rejected`).
    #[must_use]
    pub fn is_terminal_task(&self) -> bool {
        self.task_status().is_some_and(TaskStatus::is_terminal)
    }
}
