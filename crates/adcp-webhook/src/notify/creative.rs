//! Account-anchored creative notifications: `creative.status_changed`,
//! `creative.assignment_changed` and `creative.purged`.

use super::{common_builder, notification_id_setter, setters, Draft, IdRule, Registered};
use crate::payload::PayloadKind;

/// `creative.status_changed` (`creative/creative-status-changed-webhook.json`).
///
/// `notification_id`: stable per (`creative_id`, transition), so derived
/// from (`account_id`, `creative_id`, `transition.from`, `transition.to`,
/// `transition.observed_at`) unless set; a fresh transition (a later
/// `observed_at`) gets a new id.
#[derive(Debug, Clone)]
pub struct CreativeStatusChangedBuilder {
    draft: Draft,
}

impl CreativeStatusChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::CreativeStatusChanged,
                "creative.status_changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "creative_id",
                    "transition.from",
                    "transition.to",
                    "transition.observed_at",
                    "reason_code",
                    "initiator",
                ],
                IdRule::Derived(
                    "csc",
                    &[
                        "account_id",
                        "creative_id",
                        "transition.from",
                        "transition.to",
                        "transition.observed_at",
                    ],
                ),
            ),
        }
    }
}

setters!(CreativeStatusChangedBuilder {
    /// The account whose library holds the creative.
    account_id("account_id"): text;
    /// The creative.
    creative_id("creative_id"): text;
    /// The creative revision the transition applies to (`revision_id`).
    revision_id("revision_id"): text;
    /// The prior status (`transition.from`).
    from("transition.from"): text;
    /// The new status (`transition.to`).
    to("transition.to"): text;
    /// When the seller observed the transition (`transition.observed_at`).
    observed_at("transition.observed_at"): time;
    /// The categorical reason (`enums/creative-event-reason-code.json`).
    reason_code("reason_code"): text;
    /// A human-readable reason.
    reason_detail("reason_detail"): text;
    /// `seller` or `system`.
    initiator("initiator"): text;
});
common_builder!(CreativeStatusChangedBuilder);
notification_id_setter!(CreativeStatusChangedBuilder);

/// `creative.assignment_changed`
/// (`creative/creative-assignment-changed-webhook.json`).
///
/// `notification_id`: stable per logical assignment change, so derived
/// from (`account_id`, `media_buy_id`, `package_id`, `creative_id`,
/// `change_kind`, `observed_at`) unless set.
#[derive(Debug, Clone)]
pub struct CreativeAssignmentChangedBuilder {
    draft: Draft,
}

impl CreativeAssignmentChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::CreativeAssignmentChanged,
                "creative.assignment_changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "media_buy_id",
                    "package_id",
                    "creative_id",
                    "change_kind",
                    "observed_at",
                ],
                IdRule::Derived(
                    "cac",
                    &[
                        "account_id",
                        "media_buy_id",
                        "package_id",
                        "creative_id",
                        "change_kind",
                        "observed_at",
                    ],
                ),
            ),
        }
    }
}

setters!(CreativeAssignmentChangedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// The media buy.
    media_buy_id("media_buy_id"): text;
    /// The package.
    package_id("package_id"): text;
    /// The creative.
    creative_id("creative_id"): text;
    /// `assigned`, `unassigned` or `approval_changed`.
    change_kind("change_kind"): text;
    /// When the seller observed the change.
    observed_at("observed_at"): time;
});
common_builder!(CreativeAssignmentChangedBuilder);
notification_id_setter!(CreativeAssignmentChangedBuilder);

/// `creative.purged` (`creative/creative-purged-webhook.json`).
///
/// `notification_id`: stable per (`creative_id`, purge event), so derived
/// from (`account_id`, `creative_id`, `purged_at`) unless set.
#[derive(Debug, Clone)]
pub struct CreativePurgedBuilder {
    draft: Draft,
}

impl CreativePurgedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::CreativePurged,
                "creative.purged",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "creative_id",
                    "purge_kind",
                    "purged_at",
                    "reason_code",
                    "initiator",
                ],
                IdRule::Derived("cpg", &["account_id", "creative_id", "purged_at"]),
            ),
        }
    }
}

setters!(CreativePurgedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// The purged creative.
    creative_id("creative_id"): text;
    /// `soft` or `hard`.
    purge_kind("purge_kind"): text;
    /// When the creative was destroyed.
    purged_at("purged_at"): time;
    /// The categorical reason (`enums/creative-event-reason-code.json`).
    reason_code("reason_code"): text;
    /// A human-readable reason.
    reason_detail("reason_detail"): text;
    /// `seller` or `system`.
    initiator("initiator"): text;
});
common_builder!(CreativePurgedBuilder);
notification_id_setter!(CreativePurgedBuilder);
