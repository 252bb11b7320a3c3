//! Where each replay entry and dedup record is: hash maps in the store's
//! memory from a key to the rowid of its row, instead of unique B-tree
//! indexes in the file.
//!
//! Why: replay nonces and idempotency keys are random, so a unique index on
//! either puts every event's row in a random leaf, and each of those leaves
//! is one more page in the WAL, in the fsync's writeback and in the next
//! checkpoint. With the two indexes the writer spent 112–119 µs of CPU
//! (122 K instructions) per gateway event; with the rows in insertion
//! order (AUTOINCREMENT rowids) and only their expiry indexes, whose writes
//! go to the right edge, 80–83 µs (91 K instructions; docs/performance.md).
//!
//! The maps are right because of three rules:
//! - **Every committed row is in its map.** The store's own inserts are
//!   added as they run. Rows another connection committed (another process
//!   sharing the file) are read when this writer's next batch transaction
//!   starts using the maps, from the rowids above the highest one seen: the
//!   transaction holds the write lock, so nothing commits meanwhile, and
//!   AUTOINCREMENT never hands out a rowid twice, so nothing is missed.
//! - **An entry is a hint, checked against its row.** A hit reads the row
//!   by rowid and compares its key columns; a row that is gone (another
//!   connection deleted it) is no entry, and the entry is dropped.
//! - **Anything undone makes the maps stale.** After a rollback (of a job's
//!   savepoint, a batch or a commit) they are rebuilt from the tables before
//!   their next use, so they never hold what the file does not, nor miss
//!   what a rollback restored.
//!
//! Keys are hashed to 128 bits with SipHash keyed at random per store, so no
//! one can choose keys that collide; two distinct live keys with one hash
//! would need about 2^64 of them.
//!
//! The maps are built when the store opens (reading every row of both
//! tables: about 1.6 s for a million of each) and cost about 24 bytes
//! per entry plus the hash table's slack.

use super::writer::BatchObserver;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A key's 128-bit hash, as two halves: a `u128` would align map entries
/// to 16 bytes (32 per entry with the rowid instead of 24).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeyHash(u64, u64);

/// The map hashes only the low half: it is already uniform.
impl Hash for KeyHash {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.1);
    }
}

/// The two maps and what the writer's batches did to them; shared by the
/// store's operations and the writer's [`BatchObserver`], all on the writer
/// thread.
#[derive(Clone)]
pub(super) struct KeyIndex(Arc<Mutex<Maps>>);

pub(super) struct Maps {
    hasher: KeyHasher,
    /// `adcp_replay_entries`, by `(keyid, scope, nonce)`.
    pub(super) replay: RowMap,
    /// `adcp_idempotency_records`, by `(sender, key)`.
    pub(super) records: RowMap,
    /// Rebuild both maps before their next use.
    stale: bool,
    /// A batch transaction began since the maps last caught up.
    begun: bool,
}

/// One table's map from key hash to rowid.
pub(super) struct RowMap {
    rows: HashMap<KeyHash, i64, BuildHasherDefault<PassThrough>>,
    /// The highest rowid read or inserted.
    seen: i64,
}

/// How one table's rows are read back into its map.
struct Source {
    /// The rows above a rowid, in rowid order: the rowid, then the key
    /// columns.
    since: &'static str,
}

const REPLAY: Source = Source {
    since: "SELECT id, keyid, scoped, scope, nonce FROM adcp_replay_entries WHERE id > ?1 ORDER BY id",
};
const RECORDS: Source = Source {
    since: "SELECT id, sender, key FROM adcp_idempotency_records WHERE id > ?1 ORDER BY id",
};

impl KeyIndex {
    /// Empty maps, stale: built from the tables at their first
    /// [`ready`](Self::ready) (the store's open calls it).
    pub(super) fn new() -> Self {
        Self(Arc::new(Mutex::new(Maps {
            hasher: KeyHasher::new(),
            replay: RowMap::new(),
            records: RowMap::new(),
            stale: true,
            begun: true,
        })))
    }

    /// The writer's observer for these maps.
    pub(super) fn observer(&self) -> Box<dyn BatchObserver> {
        Box::new(self.clone())
    }

    /// The maps, brought up to date with the open transaction: rebuilt if
    /// stale, else caught up with other connections' rows once per batch.
    pub(super) fn ready(&self, conn: &Connection) -> rusqlite::Result<MutexGuard<'_, Maps>> {
        let mut maps = self.lock();
        if maps.stale {
            // Stays stale until the rebuild completed: an error leaves it
            // to the next use.
            maps.replay = RowMap::new();
            maps.records = RowMap::new();
            maps.begun = true;
        }
        if maps.begun {
            let Maps {
                hasher,
                replay,
                records,
                ..
            } = &mut *maps;
            replay.catch_up(conn, hasher, &REPLAY, replay_columns)?;
            records.catch_up(conn, hasher, &RECORDS, record_columns)?;
            maps.stale = false;
            maps.begun = false;
        }
        Ok(maps)
    }

    /// The maps as they are (a panicked job poisons the lock; its rollback
    /// marks them stale anyway).
    fn lock(&self) -> MutexGuard<'_, Maps> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BatchObserver for KeyIndex {
    fn begun(&self) {
        self.lock().begun = true;
    }

    fn rolled_back(&self) {
        self.lock().stale = true;
    }
}

/// The hash of a replay entry's key columns, read from a row.
fn replay_columns(hasher: &KeyHasher, row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyHash> {
    let keyid: String = row.get(1)?;
    let scoped: i64 = row.get(2)?;
    let scope: String = row.get(3)?;
    let nonce: Vec<u8> = row.get(4)?;
    Ok(hasher.replay(&keyid, scoped, &scope, &nonce))
}

/// The hash of a dedup record's key columns, read from a row.
fn record_columns(hasher: &KeyHasher, row: &rusqlite::Row<'_>) -> rusqlite::Result<KeyHash> {
    let sender: String = row.get(1)?;
    let key: String = row.get(2)?;
    Ok(hasher.record(&sender, &key))
}

impl Maps {
    /// The hash of a replay entry's key (the agent is not part of it).
    pub(super) fn replay_hash(&self, keyid: &str, scoped: i64, scope: &str, nonce: &[u8]) -> KeyHash {
        self.hasher.replay(keyid, scoped, scope, nonce)
    }

    /// The hash of a dedup record's key.
    pub(super) fn record_hash(&self, sender: &str, key: &str) -> KeyHash {
        self.hasher.record(sender, key)
    }

    /// Drops the entries of the rows a `DELETE … RETURNING` statement
    /// removed from the replay table (`id, keyid, scoped, scope, nonce`),
    /// returning how many rows it deleted.
    pub(super) fn delete_replay(&mut self, conn: &Connection, sql: &str, now: i64) -> rusqlite::Result<usize> {
        let Self { hasher, replay, .. } = self;
        replay.delete_returning(conn, sql, now, |row| replay_columns(hasher, row))
    }

    /// [`delete_replay`](Self::delete_replay) for the dedup table
    /// (`id, sender, key`).
    pub(super) fn delete_records(&mut self, conn: &Connection, sql: &str, now: i64) -> rusqlite::Result<usize> {
        let Self { hasher, records, .. } = self;
        records.delete_returning(conn, sql, now, |row| record_columns(hasher, row))
    }

    /// Rebuilds the maps at their next use when they hold many more entries
    /// than the tables have rows: other connections deleted rows this one
    /// never looked up again. `replay_rows` and `record_rows` are the
    /// tables' live counts.
    pub(super) fn compact_if_bloated(&mut self, replay_rows: i64, record_rows: i64) {
        let bloated = |map: &RowMap, rows: i64| {
            let rows = usize::try_from(rows).unwrap_or(0);
            map.len() > rows.saturating_mul(2).saturating_add(4_096)
        };
        if bloated(&self.replay, replay_rows) || bloated(&self.records, record_rows) {
            self.stale = true;
        }
    }
}

impl RowMap {
    fn new() -> Self {
        Self {
            rows: HashMap::default(),
            seen: 0,
        }
    }

    /// The rowid the map holds for `hash`, if any: a hint, to be checked
    /// against the row's key columns.
    pub(super) fn get(&self, hash: KeyHash) -> Option<i64> {
        self.rows.get(&hash).copied()
    }

    /// Records the row this connection just inserted.
    pub(super) fn inserted(&mut self, hash: KeyHash, rowid: i64) {
        self.rows.insert(hash, rowid);
        self.seen = self.seen.max(rowid);
    }

    /// Drops `hash`'s entry if it still points at `rowid` (a newer row of
    /// the same key keeps its own).
    pub(super) fn forget(&mut self, hash: KeyHash, rowid: i64) {
        if self.rows.get(&hash) == Some(&rowid) {
            self.rows.remove(&hash);
        }
    }

    /// What the row the map gave for `hash` says, read by rowid as
    /// `(its key is the one looked up, value)`: the value with the rowid; no
    /// entry when the row is gone (another connection deleted it: the entry
    /// goes too); an error when the row holds another key, never expected
    /// (rowids are not reused, a rollback rebuilds the maps), so the
    /// operation fails closed rather than guess.
    pub(super) fn checked<T>(
        &mut self,
        hash: KeyHash,
        rowid: i64,
        found: Option<(bool, T)>,
    ) -> rusqlite::Result<Option<(i64, T)>> {
        match found {
            None => {
                self.forget(hash, rowid);
                Ok(None)
            }
            Some((true, value)) => Ok(Some((rowid, value))),
            Some((false, _)) => Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some("the key index points at a row of another key".to_owned()),
            )),
        }
    }

    /// Live entries.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Reads the rows above [`seen`](Self::seen) into the map; a later row of
    /// a key replaces an earlier one.
    fn catch_up(
        &mut self,
        conn: &Connection,
        hasher: &KeyHasher,
        source: &Source,
        hash: fn(&KeyHasher, &rusqlite::Row<'_>) -> rusqlite::Result<KeyHash>,
    ) -> rusqlite::Result<()> {
        let mut statement = conn.prepare_cached(source.since)?;
        let mut rows = statement.query([self.seen])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            self.inserted(hash(hasher, row)?, rowid);
        }
        Ok(())
    }

    fn delete_returning(
        &mut self,
        conn: &Connection,
        sql: &str,
        now: i64,
        mut hash: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<KeyHash>,
    ) -> rusqlite::Result<usize> {
        let mut statement = conn.prepare_cached(sql)?;
        let mut rows = statement.query([now])?;
        let mut deleted = 0;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            self.forget(hash(row)?, rowid);
            deleted += 1;
        }
        Ok(deleted)
    }
}

/// Reads one row by rowid through the statement cache, `None` when it is
/// gone.
pub(super) fn by_rowid<T>(
    conn: &Connection,
    sql: &str,
    rowid: i64,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Option<T>> {
    conn.prepare_cached(sql)?.query_row(params![rowid], f).optional()
}

/// Two independently keyed SipHash-1-3 instances (std's `RandomState`):
/// 128 bits no one outside the process can aim at.
struct KeyHasher {
    high: std::collections::hash_map::RandomState,
    low: std::collections::hash_map::RandomState,
}

impl KeyHasher {
    fn new() -> Self {
        Self {
            high: std::collections::hash_map::RandomState::new(),
            low: std::collections::hash_map::RandomState::new(),
        }
    }

    fn replay(&self, keyid: &str, scoped: i64, scope: &str, nonce: &[u8]) -> KeyHash {
        self.hash(|h| {
            field(h, keyid.as_bytes());
            h.write_i64(scoped);
            field(h, scope.as_bytes());
            field(h, nonce);
        })
    }

    fn record(&self, sender: &str, key: &str) -> KeyHash {
        self.hash(|h| {
            field(h, sender.as_bytes());
            field(h, key.as_bytes());
        })
    }

    fn hash(&self, feed: impl Fn(&mut dyn Hasher)) -> KeyHash {
        let mut high = self.high.build_hasher();
        feed(&mut high);
        let mut low = self.low.build_hasher();
        feed(&mut low);
        KeyHash(high.finish(), low.finish())
    }
}

/// A length-prefixed field, so that field boundaries are part of the hash
/// (`("ab", "c")` and `("a", "bc")` differ).
fn field(h: &mut dyn Hasher, bytes: &[u8]) {
    h.write_usize(bytes.len());
    h.write(bytes);
}

/// The map's own hasher: its keys are already uniform hashes, so it takes
/// the half [`KeyHash`] gives it as it is.
#[derive(Default)]
pub(super) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used for `KeyHash` keys; fold anything else.
        for chunk in bytes.chunks(8) {
            let mut word = [0_u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn field_boundaries_change_the_hash() {
        let hasher = KeyHasher::new();
        assert_ne!(hasher.record("ab", "c"), hasher.record("a", "bc"));
        assert_ne!(hasher.replay("k", 0, "", b"n"), hasher.replay("k", 1, "", b"n"));
        assert_eq!(hasher.record("a", "b"), hasher.record("a", "b"));
    }

    #[test]
    fn a_forgotten_entry_keeps_a_newer_row_of_its_key() {
        let mut map = RowMap::new();
        let seven = KeyHash(0, 7);
        map.inserted(seven, 1);
        map.inserted(seven, 2);
        map.forget(seven, 1);
        assert_eq!(map.get(seven), Some(2));
        map.forget(seven, 2);
        assert_eq!(map.get(seven), None);
        assert_eq!(map.seen, 2);
    }
}
