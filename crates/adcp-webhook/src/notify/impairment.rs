//! Impairments: a media buy's dependency-state fires, delivered as task
//! envelopes on the buy's `push_notification_config`.

use super::{common_builder, setters, Draft, IdRule, Registered};
use crate::envelope::TaskStatus;
use serde_json::Value;

/// An `impairment` fire: the MCP task envelope
/// (`core/mcp-webhook-payload.json`) whose `result` carries
/// `notification_type: "impairment"`, the `media_buy_id`, the
/// `impairment` object (`core/impairment.json`) and the buy's updated
/// `health`.
///
/// `notification_id` equals `result.impairment.impairment_id` (stable
/// across re-emissions of the same open impairment and its closing fire).
/// The envelope echoes the registration's `operation_id` (required),
/// `token` and `subscriber_id`. The envelope's `task_type` defaults to
/// `create_media_buy` (the task that registered the channel) and its
/// `status` to `completed`; both can be set.
#[derive(Debug, Clone)]
pub struct ImpairmentBuilder {
    draft: Draft,
}

impl ImpairmentBuilder {
    /// An impairment fire for `registration` (the buy's
    /// `push_notification_config`), with the envelope `timestamp`
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::envelope(
                "impairment",
                registration,
                "create_media_buy",
                fired_at.into(),
                &[
                    "task_id",
                    "operation_id",
                    "result.media_buy_id",
                    "result.health",
                    "result.impairment.impairment_id",
                    "result.impairment.resource_type",
                    "result.impairment.resource_id",
                    "result.impairment.package_ids",
                    "result.impairment.transition.to",
                    "result.impairment.reason_code",
                    "result.impairment.observed_at",
                ],
                IdRule::Equals("result.impairment.impairment_id"),
            )
            .non_empty(&["result.impairment.package_ids"]),
        }
    }

    /// The envelope `status` (default `completed`).
    #[must_use]
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.draft.set("status", Value::String(status.as_str().to_owned()));
        self
    }
}

setters!(ImpairmentBuilder {
    /// The envelope's `task_id`.
    task_id("task_id"): text;
    /// The envelope's `operation_id`, instead of the registration's.
    operation_id("operation_id"): text;
    /// The envelope's `task_type` (default `create_media_buy`).
    task_type("task_type"): text;
    /// The originating request's `context`, echoed verbatim.
    context("context"): json;
    /// The media buy (`result.media_buy_id`).
    media_buy_id("result.media_buy_id"): text;
    /// The buy's health after this fire, `ok` or `impaired` (`result.health`).
    health("result.health"): text;
    /// The impairment's id (`result.impairment.impairment_id`; also the
    /// `notification_id`).
    impairment_id("result.impairment.impairment_id"): text;
    /// `audience`, `creative`, `catalog_item`, `event_source` or `property`.
    resource_type("result.impairment.resource_type"): text;
    /// The impaired resource.
    resource_id("result.impairment.resource_id"): text;
    /// The packages whose delivery is degraded (at least one).
    package_ids("result.impairment.package_ids"): texts;
    /// The resource's prior status (`result.impairment.transition.from`).
    transition_from("result.impairment.transition.from"): text;
    /// The resource's new status (`result.impairment.transition.to`).
    transition_to("result.impairment.transition.to"): text;
    /// `enums/impairment-reason-code.json`.
    reason_code("result.impairment.reason_code"): text;
    /// A human-readable reason.
    reason("result.impairment.reason"): text;
    /// When the seller observed the impairment.
    observed_at("result.impairment.observed_at"): time;
    /// Seller-specific remediation text.
    remediation("result.impairment.remediation"): text;
});
common_builder!(ImpairmentBuilder);
