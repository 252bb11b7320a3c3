//! `indicators.changed`, the account-anchored indicator invalidation.

use super::{common_builder, notification_id_setter, setters, Draft, IdRule, Registered};
use crate::payload::PayloadKind;

/// `indicators.changed` (`core/indicators-changed-webhook.json`).
///
/// `notification_id`: stable per logical snapshot change, so derived from
/// (`account_id`, `relationship_kind`, `media_buy_id`, `package_id`,
/// `creative_id`, `change_kind`, `observed_at`) unless set.
///
/// `package_id` is required when `relationship_kind` is `package`;
/// `package_id` and `creative_id` when it is `creative_assignment`.
#[derive(Debug, Clone)]
pub struct IndicatorsChangedBuilder {
    draft: Draft,
}

impl IndicatorsChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::IndicatorsChanged,
                "indicators.changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "relationship_kind",
                    "media_buy_id",
                    "change_kind",
                    "changed_indicator_types",
                    "observed_at",
                ],
                IdRule::Derived(
                    "ind",
                    &[
                        "account_id",
                        "relationship_kind",
                        "media_buy_id",
                        "package_id",
                        "creative_id",
                        "change_kind",
                        "observed_at",
                    ],
                ),
            )
            .with_conditional(scoped)
            .non_empty(&["changed_indicator_types"]),
        }
    }
}

/// The members `relationship_kind` adds.
fn scoped(draft: &Draft) -> &'static [&'static str] {
    match draft.get("relationship_kind").and_then(serde_json::Value::as_str) {
        Some("package") => &["package_id"],
        Some("creative_assignment") => &["package_id", "creative_id"],
        _ => &[],
    }
}

setters!(IndicatorsChangedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// `media_buy`, `package` or `creative_assignment`.
    relationship_kind("relationship_kind"): text;
    /// The media buy.
    media_buy_id("media_buy_id"): text;
    /// The package (for `package` and `creative_assignment`).
    package_id("package_id"): text;
    /// The creative (for `creative_assignment`).
    creative_id("creative_id"): text;
    /// The coarse invalidation reason.
    change_kind("change_kind"): text;
    /// The affected indicator types (at least one).
    changed_indicator_types("changed_indicator_types"): texts;
    /// When the seller observed the change.
    observed_at("observed_at"): time;
});
common_builder!(IndicatorsChangedBuilder);
notification_id_setter!(IndicatorsChangedBuilder);
