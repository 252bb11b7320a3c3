//! List-change webhooks: `property_list_changed` and
//! `collection_list_changed`.

use super::{common_builder, setters, Draft, IdRule};
use crate::payload::PayloadKind;
use serde_json::Value;

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `property_list_changed` (`property/property-list-changed-webhook.json`).
    Property,
    /// `collection_list_changed` (`collection/collection-list-changed-webhook.json`).
    Collection,
}

impl ListKind {
    /// The body's `event`.
    #[must_use]
    pub const fn event(self) -> &'static str {
        match self {
            Self::Property => "property_list_changed",
            Self::Collection => "collection_list_changed",
        }
    }

    /// The receiving side's kind.
    #[must_use]
    pub const fn payload_kind(self) -> PayloadKind {
        match self {
            Self::Property => PayloadKind::PropertyListChanged,
            Self::Collection => PayloadKind::CollectionListChanged,
        }
    }
}

/// A list-change webhook. These bodies carry no `notification_id`,
/// `fired_at` or subscriber; `resolved_at` is when the list was resolved
/// (fixed once, like `fired_at`). The deprecated `signature` member is
/// required through 3.x and set to `rfc9421`, the value the schema asks
/// 3.2 senders for (the RFC 9421 headers carry the real signature).
#[derive(Debug, Clone)]
pub struct ListChangedBuilder {
    draft: Draft,
}

impl ListChangedBuilder {
    /// A change of `kind`'s list, resolved at `resolved_at`.
    #[must_use]
    pub fn new(kind: ListKind, resolved_at: impl Into<String>) -> Self {
        let mut draft = Draft::plain(kind.payload_kind(), &["list_id"], IdRule::Absent).with_type(kind.event());
        draft.set("event", Value::String(kind.event().to_owned()));
        draft.set_time("resolved_at", resolved_at.into());
        draft.set("signature", Value::String("rfc9421".to_owned()));
        Self { draft }
    }
}

setters!(ListChangedBuilder {
    /// The list.
    list_id("list_id"): text;
    /// The list's name.
    list_name("list_name"): text;
    /// The `change_summary` object (counts added, removed, total).
    change_summary("change_summary"): json;
    /// Until when the resolved list may be cached.
    cache_valid_until("cache_valid_until"): time;
});
common_builder!(ListChangedBuilder);
