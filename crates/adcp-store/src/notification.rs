//! Notification records, `(sender, notification_id) → first idempotency_key`:
//! the rules every backend applies, and the in-memory table.
//!
//! Every backend writes a record with the same rule (see [`Origin::merge`]),
//! so the stores agree on which key is "first" whatever the interleaving:
//! a live record keeps its key and only grows its expiry; an absent or
//! expired one is replaced whole.

use crate::idempotency::{IdempotencyError, MAX_NOTIFICATION_ID_LEN};
use std::collections::HashMap;

/// Refuses an id no store may hold, before anything is written.
pub(crate) fn check(notification_id: &str) -> Result<(), IdempotencyError> {
    if notification_id.len() > MAX_NOTIFICATION_ID_LEN {
        return Err(IdempotencyError::NotificationIdTooLong);
    }
    Ok(())
}

/// [`check`] for the optional id of a completion.
pub(crate) fn check_optional(notification_id: Option<&str>) -> Result<(), IdempotencyError> {
    notification_id.map_or(Ok(()), check)
}

/// One stored record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    /// The first `idempotency_key` completed with the notification.
    idempotency_key: String,
    /// Last Unix second at which the record is live (inclusive).
    expires_at: i64,
}

impl Origin {
    /// The record after a completion of `idempotency_key` at `now`
    /// (`expires_at = now + window`) over `held`.
    fn merge(held: Option<Self>, idempotency_key: &str, expires_at: i64, now: i64) -> Self {
        match held {
            Some(held) if held.expires_at >= now => Self {
                expires_at: held.expires_at.max(expires_at),
                idempotency_key: held.idempotency_key,
            },
            _ => Self {
                idempotency_key: idempotency_key.to_owned(),
                expires_at,
            },
        }
    }
}

/// The in-memory notification records, per sender, of
/// [`MemoryIdempotencyStore`](crate::idempotency::MemoryIdempotencyStore).
#[derive(Debug, Default)]
pub(crate) struct MemoryNotifications {
    senders: HashMap<String, HashMap<String, Origin>>,
}

impl MemoryNotifications {
    /// Records a completion of `idempotency_key` carrying `notification_id`.
    pub(crate) fn record(
        &mut self,
        sender: &str,
        notification_id: &str,
        idempotency_key: &str,
        expires_at: i64,
        now: i64,
    ) {
        let records = self.senders.entry(sender.to_owned()).or_default();
        let held = records.remove(notification_id);
        records.insert(
            notification_id.to_owned(),
            Origin::merge(held, idempotency_key, expires_at, now),
        );
    }

    /// The first key of a live record.
    pub(crate) fn origin(&self, sender: &str, notification_id: &str, now: i64) -> Option<String> {
        self.senders
            .get(sender)
            .and_then(|records| records.get(notification_id))
            .filter(|origin| origin.expires_at >= now)
            .map(|origin| origin.idempotency_key.clone())
    }

    /// Drops every record expired at `now`; returns how many.
    pub(crate) fn sweep(&mut self, now: i64) -> usize {
        let mut dropped = 0;
        self.senders.retain(|_, records| {
            let before = records.len();
            records.retain(|_, origin| origin.expires_at >= now);
            dropped += before - records.len();
            !records.is_empty()
        });
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_record_keeps_its_key_and_grows_its_expiry() {
        let mut notes = MemoryNotifications::default();
        notes.record("s", "n", "k1", 100, 0);
        notes.record("s", "n", "k2", 150, 50);
        assert_eq!(notes.origin("s", "n", 150).as_deref(), Some("k1"));
        // A later completion never shortens the record.
        notes.record("s", "n", "k3", 120, 20);
        assert_eq!(notes.origin("s", "n", 150).as_deref(), Some("k1"));
        assert_eq!(notes.origin("s", "n", 151), None);
        // Expired: the next completion starts a new record.
        notes.record("s", "n", "k4", 300, 200);
        assert_eq!(notes.origin("s", "n", 200).as_deref(), Some("k4"));
        notes.sweep(301);
        assert!(notes.senders.is_empty());
    }

    #[test]
    fn ids_are_bounded() {
        assert_eq!(check(&"a".repeat(MAX_NOTIFICATION_ID_LEN)), Ok(()));
        assert_eq!(
            check(&"a".repeat(MAX_NOTIFICATION_ID_LEN + 1)),
            Err(IdempotencyError::NotificationIdTooLong)
        );
        assert_eq!(check_optional(None), Ok(()));
    }
}
