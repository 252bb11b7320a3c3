//! Wholesale feed events (products and signals).

use super::ident::{opt_string, present};
use super::model::{notification_model, NotificationHeader};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A wholesale feed event (`core/wholesale-feed-webhook.json`):
/// `notification_type` is one of `product.created`, `product.updated`,
/// `product.priced`, `product.removed`, `signal.created`,
/// `signal.updated`, `signal.priced`, `signal.removed`,
/// `wholesale_feed.bulk_change`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholesaleFeed {
    /// Common notification members (`notification_id` is a UUID here,
    /// aliasing `event.event_id`).
    #[serde(flatten)]
    pub header: NotificationHeader,
    /// The account.
    pub account_id: String,
    /// The feed version this event produced.
    pub wholesale_feed_version: String,
    /// The version it replaces.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub previous_wholesale_feed_version: Option<String>,
    /// `canonical` or `legacy`, on product events only.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_string")]
    pub product_payload_view: Option<String>,
    /// `public` or `account`.
    pub cache_scope: String,
    /// The event (`core/wholesale-feed-event.json`: `event_id`,
    /// `event_type`, `entity_type`, `entity_id`, `payload`, `created_at`).
    /// Kept as JSON: its `payload` is a whole product or signal, which the
    /// SDK never reads.
    pub event: Value,
    /// Extension object (opaque to the SDK).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub ext: Option<Value>,
    /// Members this model does not name, kept for re-serialization.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
notification_model!(
    WholesaleFeed,
    ["account_id", "wholesale_feed_version", "cache_scope", "event"]
);

impl WholesaleFeed {
    /// `event.event_id`, which `notification_id` aliases.
    #[must_use]
    pub fn event_id(&self) -> Option<&str> {
        self.event.get("event_id").and_then(Value::as_str)
    }
}
