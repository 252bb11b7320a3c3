//! Account-anchored account notifications: `account.status_changed` and
//! `account.change_recorded` (on account `notification_configs[]`).

use super::{common_builder, notification_id_setter, setters, Draft, IdRule, Registered};
use crate::payload::PayloadKind;

/// `account.status_changed` (`core/account-status-changed-webhook.json`).
///
/// `notification_id`: derived from (`account_id`, `previous_status`,
/// `status`, `observed_at`), the kind's stability key, unless set.
#[derive(Debug, Clone)]
pub struct AccountStatusChangedBuilder {
    draft: Draft,
}

impl AccountStatusChangedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::AccountStatusChanged,
                "account.status_changed",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "previous_status",
                    "status",
                    "observed_at",
                    "reason_code",
                ],
                IdRule::Derived("asc", &["account_id", "previous_status", "status", "observed_at"]),
            ),
        }
    }
}

setters!(AccountStatusChangedBuilder {
    /// The account whose status changed.
    account_id("account_id"): text;
    /// The status before the transition (`enums/account-status.json`).
    previous_status("previous_status"): text;
    /// The status after the transition.
    status("status"): text;
    /// When the seller observed the transition.
    observed_at("observed_at"): time;
    /// The categorical reason.
    reason_code("reason_code"): text;
    /// A human-readable reason.
    reason_detail("reason_detail"): text;
    /// The `setup` object (for `pending_approval` and similar states).
    setup("setup"): json;
});
common_builder!(AccountStatusChangedBuilder);
notification_id_setter!(AccountStatusChangedBuilder);

/// `account.change_recorded` (`core/account-change-recorded-webhook.json`).
///
/// `notification_id` equals `change_id`.
#[derive(Debug, Clone)]
pub struct AccountChangeRecordedBuilder {
    draft: Draft,
}

impl AccountChangeRecordedBuilder {
    /// A notification for `registration`'s subscriber, fired at
    /// `fired_at` (fixed once; see the [module docs](super)).
    #[must_use]
    pub fn new(registration: &Registered, fired_at: impl Into<String>) -> Self {
        Self {
            draft: Draft::notification(
                PayloadKind::AccountChangeRecorded,
                "account.change_recorded",
                registration,
                fired_at.into(),
                &[
                    "subscriber_id",
                    "account_id",
                    "change_id",
                    "recorded_at",
                    "resource.type",
                    "resource.resource_id",
                    "action",
                ],
                IdRule::Equals("change_id"),
            ),
        }
    }
}

setters!(AccountChangeRecordedBuilder {
    /// The account.
    account_id("account_id"): text;
    /// The change record's id (also the `notification_id`).
    change_id("change_id"): text;
    /// When the change was committed.
    recorded_at("recorded_at"): time;
    /// The changed resource's type (`resource.type`).
    resource_type("resource.type"): text;
    /// The changed resource's id (`resource.resource_id`).
    resource_id("resource.resource_id"): text;
    /// The changed resource's parent ids (`resource.parent_ids`, an object).
    resource_parent_ids("resource.parent_ids"): json;
    /// What happened to the resource.
    action("action"): text;
    /// The feed cursor through which this change is visible.
    through_cursor("through_cursor"): text;
});
common_builder!(AccountChangeRecordedBuilder);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::BuildError;

    #[test]
    fn change_recorded_id_is_the_change_id() {
        let reg = Registered::new().with_subscriber_id("s1");
        let b = AccountChangeRecordedBuilder::new(&reg, "2026-04-18T12:00:00Z")
            .account_id("a")
            .change_id("chg_1")
            .recorded_at("2026-04-18T11:00:00Z")
            .resource_type("creative")
            .resource_id("cr_1")
            .action("updated");
        assert_eq!(b.clone().build().unwrap().notification_id(), Some("chg_1"));
        // A raw member cannot override the rule.
        assert_eq!(
            b.clone().member("notification_id", "other".into()).build().unwrap_err(),
            BuildError::Invalid {
                member: "notification_id",
                reason: "set by the builder from its rules; not through member()"
            }
        );
        // Replacing an object a required member lives in is checked too.
        assert_eq!(
            b.clone().member("resource", serde_json::json!({})).build().unwrap_err(),
            BuildError::Missing {
                member: "resource.type"
            }
        );
        assert_eq!(
            b.change_id("bad id").build().unwrap_err(),
            BuildError::Invalid {
                member: "notification_id",
                reason: "does not match ^[A-Za-z0-9_.:-]{1,255}$"
            }
        );
    }
}
