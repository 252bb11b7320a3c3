//! Wholesale feed notifications: `product.*`, `signal.*` and
//! `wholesale_feed.bulk_change` (`core/wholesale-feed-webhook.json`).

use super::{common_builder, setters, BuildError, Draft, IdRule, Registered};
use crate::payload::PayloadKind;
use serde_json::Value;

/// The wholesale feed event types (the body's `notification_type` and
/// its `event.event_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WholesaleEventType {
    /// `product.created`.
    ProductCreated,
    /// `product.updated`.
    ProductUpdated,
    /// `product.priced`.
    ProductPriced,
    /// `product.removed`.
    ProductRemoved,
    /// `signal.created`.
    SignalCreated,
    /// `signal.updated`.
    SignalUpdated,
    /// `signal.priced`.
    SignalPriced,
    /// `signal.removed`.
    SignalRemoved,
    /// `wholesale_feed.bulk_change`.
    BulkChange,
}

impl WholesaleEventType {
    /// Every type.
    pub const ALL: [Self; 9] = [
        Self::ProductCreated,
        Self::ProductUpdated,
        Self::ProductPriced,
        Self::ProductRemoved,
        Self::SignalCreated,
        Self::SignalUpdated,
        Self::SignalPriced,
        Self::SignalRemoved,
        Self::BulkChange,
    ];

    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ProductCreated => "product.created",
            Self::ProductUpdated => "product.updated",
            Self::ProductPriced => "product.priced",
            Self::ProductRemoved => "product.removed",
            Self::SignalCreated => "signal.created",
            Self::SignalUpdated => "signal.updated",
            Self::SignalPriced => "signal.priced",
            Self::SignalRemoved => "signal.removed",
            Self::BulkChange => "wholesale_feed.bulk_change",
        }
    }

    /// The event's `entity_type`: `product`, `signal` or `feed`.
    #[must_use]
    pub const fn entity_type(self) -> &'static str {
        match self {
            Self::ProductCreated | Self::ProductUpdated | Self::ProductPriced | Self::ProductRemoved => "product",
            Self::SignalCreated | Self::SignalUpdated | Self::SignalPriced | Self::SignalRemoved => "signal",
            Self::BulkChange => "feed",
        }
    }
}

/// Whether `s` is a UUID in its hyphenated text form.
fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// One wholesale feed notification.
///
/// `notification_id` equals `event.event_id`. `notification_type`,
/// `event.event_type` and `event.entity_type` follow from the
/// [`WholesaleEventType`]; `product_payload_view` is required on
/// `product.*` events (and refused by the schema on the others): the
/// registration's, unless set.
/// `event.event_id` must be a UUID and `cache_scope` must equal
/// `event.payload.applies_to.scope` when the payload has one.
/// `event.payload` is the caller's: its shape depends on the type.
#[derive(Debug, Clone)]
pub struct WholesaleFeedBuilder {
    draft: Draft,
}

impl WholesaleFeedBuilder {
    /// A `event_type` notification for `registration`'s subscriber, fired
    /// at `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, event_type: WholesaleEventType, fired_at: impl Into<String>) -> Self {
        let mut draft = Draft::notification(
            PayloadKind::WholesaleFeed,
            event_type.as_str(),
            registration,
            fired_at.into(),
            &[
                "subscriber_id",
                "account_id",
                "wholesale_feed_version",
                "cache_scope",
                "event.event_id",
                "event.entity_id",
                "event.payload",
                "event.created_at",
            ],
            IdRule::Equals("event.event_id"),
        )
        .with_check(|d| {
            let scope = d.get("cache_scope").and_then(Value::as_str);
            let applies = d.get("event.payload.applies_to.scope").and_then(Value::as_str);
            if let (Some(scope), Some(applies)) = (scope, applies) {
                if scope != applies {
                    return Err(BuildError::Invalid {
                        member: "cache_scope",
                        reason: "must equal event.payload.applies_to.scope",
                    });
                }
            }
            match d.get("event.event_id").and_then(Value::as_str) {
                Some(id) if !is_uuid(id) => Err(BuildError::Invalid {
                    member: "event.event_id",
                    reason: "not a UUID",
                }),
                _ => Ok(()),
            }
        })
        .with_conditional(|d| {
            let product = d
                .get("event.entity_type")
                .and_then(Value::as_str)
                .is_some_and(|t| t == "product");
            if product {
                &["product_payload_view"]
            } else {
                &[]
            }
        });
        if event_type.entity_type() == "product" {
            if let Some(view) = registration.product_payload_view() {
                draft.set("product_payload_view", Value::String(view.to_owned()));
            }
        }
        draft.set("event.event_type", Value::String(event_type.as_str().to_owned()));
        draft.set("event.entity_type", Value::String(event_type.entity_type().to_owned()));
        Self { draft }
    }
}

setters!(WholesaleFeedBuilder {
    /// The account scope.
    account_id("account_id"): text;
    /// The feed version after the change.
    wholesale_feed_version("wholesale_feed_version"): text;
    /// The feed version before the change.
    previous_wholesale_feed_version("previous_wholesale_feed_version"): text;
    /// `public` or `account` (equal to `event.payload.applies_to.scope`).
    cache_scope("cache_scope"): text;
    /// `canonical` or `legacy` (product events only).
    product_payload_view("product_payload_view"): text;
    /// The logical event id (`event.event_id`, a UUID; also the
    /// `notification_id`).
    event_id("event.event_id"): text;
    /// The product or signal id, or the feed's id (`event.entity_id`).
    entity_id("event.entity_id"): text;
    /// When the change happened (`event.created_at`).
    created_at("event.created_at"): time;
    /// The type-specific `event.payload` object.
    payload("event.payload"): json;
});
common_builder!(WholesaleFeedBuilder);
