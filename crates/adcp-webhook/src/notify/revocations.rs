//! Rights revocations (`brand/revocation-notification.json`).

use super::{common_builder, setters, Draft, IdRule};
use crate::payload::PayloadKind;

/// A rights revocation. No `notification_id` (the schema has none).
#[derive(Debug, Clone)]
pub struct RightsRevocationBuilder {
    draft: Draft,
}

impl RightsRevocationBuilder {
    /// A revocation taking effect at `effective_at` (fixed once).
    #[must_use]
    pub fn new(effective_at: impl Into<String>) -> Self {
        let mut draft = Draft::plain(
            PayloadKind::RightsRevocation,
            &["rights_id", "brand_id", "reason"],
            IdRule::Absent,
        );
        draft.set_time("effective_at", effective_at.into());
        Self { draft }
    }
}

setters!(RightsRevocationBuilder {
    /// The revoked rights grant.
    rights_id("rights_id"): text;
    /// The brand.
    brand_id("brand_id"): text;
    /// Why.
    reason("reason"): text;
    /// The uses revoked (an array; all uses when absent).
    revoked_uses("revoked_uses"): json;
    /// The originating request's `context`, echoed verbatim.
    context("context"): json;
});
common_builder!(RightsRevocationBuilder);
