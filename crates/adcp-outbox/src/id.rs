//! Event ids: typed, prefixed and time-sortable, so a listing ordered by
//! id is ordered by enqueue time and an id read in a log says what it is.

use adcp_sign::{RandomSource, RandomnessUnavailable};
use std::fmt;

/// Crockford's base32 alphabet (no I, L, O, U): sorts like the numbers it
/// encodes.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The id of one outbox row (one event to one destination):
/// `evt_` + 10 characters of enqueue time (Unix milliseconds) + 16 of
/// randomness, Crockford base32 (a ULID with a prefix).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(String);

impl EventId {
    /// The prefix of every id.
    pub const PREFIX: &'static str = "evt_";

    /// A fresh id for an event enqueued at `now_ms`.
    ///
    /// # Errors
    ///
    /// The random source failed.
    pub fn generate<R: RandomSource + ?Sized>(now_ms: i64, random: &R) -> Result<Self, RandomnessUnavailable> {
        let mut bytes = [0_u8; 10];
        random.fill(&mut bytes)?;
        let mut out = Self::time_floor(now_ms);
        out.reserve(16);
        let mut acc: u128 = 0;
        for b in bytes {
            acc = (acc << 8) | u128::from(b);
        }
        for i in (0..16).rev() {
            out.push(char::from(ALPHABET[((acc >> (i * 5)) & 31) as usize]));
        }
        Ok(Self(out))
    }

    /// The text every id generated before `time_ms` sorts below (and
    /// every id generated at or after it sorts above).
    pub(crate) fn time_floor(time_ms: i64) -> String {
        let mut out = String::with_capacity(14);
        out.push_str(Self::PREFIX);
        let time = u64::try_from(time_ms.max(0)).unwrap_or(0);
        for i in (0..10).rev() {
            out.push(char::from(ALPHABET[((time >> (i * 5)) & 31) as usize]));
        }
        out
    }

    /// Reads an id; `None` unless it has the shape [`generate`](Self::generate) gives.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        let rest = s.strip_prefix(Self::PREFIX)?;
        (rest.len() == 26 && rest.bytes().all(|b| ALPHABET.contains(&b))).then(|| Self(s.to_owned()))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Wraps a value read back from the store (trusted: the store only
    /// holds ids this crate generated).
    pub(crate) fn from_stored(s: String) -> Self {
        Self(s)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adcp_sign::OsRandom;

    #[test]
    fn ids_sort_by_time_and_parse_back() {
        let a = EventId::generate(1_000, &OsRandom).unwrap();
        let b = EventId::generate(1_001, &OsRandom).unwrap();
        assert!(a < b);
        assert_eq!(EventId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(a.as_str().len(), 30);
        assert_eq!(EventId::parse("evt_short"), None);
        assert_eq!(EventId::parse(&a.as_str().replace("evt_", "msg_")), None);
        assert_eq!(EventId::parse(&format!("{}", a).to_lowercase()), None);
    }

    #[test]
    fn the_time_floor_splits_ids_by_enqueue_time() {
        let floor = EventId::time_floor(1_000);
        let before = EventId::generate(999, &OsRandom).unwrap();
        let at = EventId::generate(1_000, &OsRandom).unwrap();
        assert!(before.as_str() < floor.as_str());
        assert!(at.as_str() > floor.as_str());
        assert!(at.as_str().starts_with(&floor));
    }
}
