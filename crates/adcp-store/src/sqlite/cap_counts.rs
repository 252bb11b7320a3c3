//! Step 9a's per-keyid cap pre-check, answered from memory.
//!
//! The verifier asks whether a signer's `(agent, keyid)` partition is at
//! its cap before spending an Ed25519 verification on the request, and the
//! insert at step 13 enforces the cap again, atomically. Asking the
//! database costs a trip through the writer thread and a wait for its
//! commit on every request, so the store answers from the partition sizes
//! its own inserts observed: a partition known to be below its cap passes
//! at once; one at its cap (or seen there) is asked of the database, which
//! also refreshes what is known (entries expire, so a full partition
//! empties again).
//!
//! The answer can only be too permissive, never too strict: another
//! process's inserts on a shared file are not seen here, so a partition
//! they filled may pass the pre-check and be refused at step 13 instead
//! (same `rate_abuse` code, after the cryptography the pre-check exists to
//! save).

use adcp_verify::CapKey;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;

/// Partitions remembered at most; past it everything known is forgotten
/// (a forgotten partition costs one database check on its next request).
/// Partitions are signers' keys, trusted before step 9a, so a few
/// thousand is far more than a receiver sees.
const MAX_PARTITIONS: usize = 4_096;

/// The live-entry count of each partition as last observed by this store.
#[derive(Debug, Default)]
pub(super) struct CapCounts {
    /// Keyed by a hash of the partition: a collision merges two
    /// partitions' counts, which can only send a request to the database
    /// check or to step 13, both exact. Seeded per store, so collisions
    /// cannot be aimed.
    hasher: RandomState,
    seen: Mutex<HashMap<u64, u64>>,
}

impl CapCounts {
    /// Whether `cap` is known to hold fewer than `limit` entries.
    pub(super) fn known_below(&self, cap: CapKey<'_>, limit: u64) -> bool {
        let key = self.key(cap);
        self.seen
            .lock()
            .is_ok_and(|seen| seen.get(&key).is_some_and(|&count| count < limit))
    }

    /// Records that `cap` held `count` live entries.
    pub(super) fn observe(&self, cap: CapKey<'_>, count: u64) {
        let key = self.key(cap);
        if let Ok(mut seen) = self.seen.lock() {
            if seen.len() >= MAX_PARTITIONS && !seen.contains_key(&key) {
                seen.clear();
            }
            seen.insert(key, count);
        }
    }

    fn key(&self, cap: CapKey<'_>) -> u64 {
        // The agent's presence is hashed with it: `None` and `Some("")`
        // are different partitions.
        self.hasher.hash_one((cap.agent, cap.keyid))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cap<'a>(agent: Option<&'a str>, keyid: &'a str) -> CapKey<'a> {
        CapKey { agent, keyid }
    }

    #[test]
    fn only_a_partition_seen_below_its_cap_is_known_below_it() {
        let counts = CapCounts::default();
        assert!(
            !counts.known_below(cap(Some("a"), "k"), 3),
            "unknown is not known below"
        );
        counts.observe(cap(Some("a"), "k"), 2);
        assert!(counts.known_below(cap(Some("a"), "k"), 3));
        assert!(!counts.known_below(cap(None, "k"), 3), "no agent is another partition");
        assert!(
            !counts.known_below(cap(Some(""), "k"), 3),
            "the empty agent is another partition"
        );
        counts.observe(cap(Some("a"), "k"), 3);
        assert!(!counts.known_below(cap(Some("a"), "k"), 3), "at the cap");
        counts.observe(cap(Some("a"), "k"), 0);
        assert!(counts.known_below(cap(Some("a"), "k"), 3), "emptied again");
    }

    #[test]
    fn the_map_stays_bounded() {
        let counts = CapCounts::default();
        let keyids: Vec<String> = (0..MAX_PARTITIONS * 2 + 1).map(|i| format!("k{i}")).collect();
        for keyid in &keyids {
            counts.observe(cap(None, keyid), 1);
        }
        assert!(counts.seen.lock().unwrap().len() <= MAX_PARTITIONS);
        assert!(
            counts.known_below(cap(None, keyids.last().unwrap()), 2),
            "the latest is kept"
        );
    }
}
