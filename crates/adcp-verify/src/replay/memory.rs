//! In-memory replay store for a single process ([`MemoryReplayStore`]).

use super::{CapKey, InsertOutcome, ReplayKey, ReplayStore, StoreError};
use async_trait::async_trait;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
// Per-map random seeds; entries are admitted only after a signature
// verified, and foldhash's quality variant is several times cheaper than
// SipHash on these short keys.
use foldhash::quality::RandomState;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Entry caps for a replay cache.
///
/// Both caps count live entries only (expired entries never count). The
/// spec's recommended values are [`ReplayLimits::webhook`] and
/// [`ReplayLimits::request`]; the aggregate cap is
/// `min(aggregate_memory_budget, 10,000,000)`, so lower it with
/// [`ReplayLimits::new`] when memory is tighter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplayLimits {
    /// Most live entries one `(agent, keyid)` partition ([`CapKey`]) may
    /// hold; at the cap new signatures counted there are refused
    /// (`*_signature_rate_abuse`). With `agent: None` everywhere this is a
    /// plain per-keyid cap.
    pub per_keyid_cap: usize,
    /// Most live entries across every keyid; at the cap every new signature
    /// is refused (`*_signature_rate_abuse`).
    pub aggregate_cap: usize,
}

impl ReplayLimits {
    /// Webhook profile per-keyid cap recommended by the spec
    /// ("Webhook replay dedup sizing").
    pub const WEBHOOK_PER_KEYID_CAP: usize = 100_000;
    /// Request profile per-keyid cap recommended by the spec
    /// ("Transport replay dedup").
    pub const REQUEST_PER_KEYID_CAP: usize = 1_000_000;
    /// Aggregate cap recommended by the spec (upper bound of
    /// `min(aggregate_memory_budget, 10,000,000)`).
    pub const AGGREGATE_CAP: usize = 10_000_000;

    /// Custom caps (for example an aggregate cap derived from a memory
    /// budget, or small caps in tests). A cap of 0 refuses every insert.
    #[must_use]
    pub const fn new(per_keyid_cap: usize, aggregate_cap: usize) -> Self {
        Self {
            per_keyid_cap,
            aggregate_cap,
        }
    }

    /// Webhook caps: 100,000 entries per keyid, 10,000,000 in aggregate.
    #[must_use]
    pub const fn webhook() -> Self {
        Self::new(Self::WEBHOOK_PER_KEYID_CAP, Self::AGGREGATE_CAP)
    }

    /// Request caps: 1,000,000 entries per keyid, 10,000,000 in aggregate.
    #[must_use]
    pub const fn request() -> Self {
        Self::new(Self::REQUEST_PER_KEYID_CAP, Self::AGGREGATE_CAP)
    }
}

/// A [`ReplayStore`] held in process memory.
///
/// Suitable for a single-process verifier; a fleet with more than one
/// endpoint must share one cache (Redis, PostgreSQL) or scope keys by
/// destination URL (see [`ReplayKey::scope`]). Every operation takes one
/// `std::sync::Mutex` and never holds it across an `.await`, so the store
/// works with any executor. The insert is atomic with the replay and cap
/// checks.
///
/// The store keeps one hash table per `keyid` (nonce bytes and optional
/// scope packed into one compact key), so replay uniqueness is per
/// `(scope, keyid, nonce)` whatever the agent; each entry also records the
/// `(agent, keyid)` partition ([`CapKey`]) it counts toward, and the
/// per-keyid cap is checked against that partition's count. A keyid's
/// partitions are kept in a short list scanned linearly (agents are the
/// verifier's configured sellers, a handful per shared kid) and live as
/// long as the keyid holds any entry. One min-heap of expiry records is
/// shared by every keyid. Expired entries are removed lazily: every call
/// pops at most [`SWEEP_BUDGET`](Self::SWEEP_BUDGET) expired records, and a call that finds a
/// cap reached first sweeps *every* expired entry before refusing, so
/// expired entries never count toward a cap. Each entry is pushed and
/// popped once, so the amortized cost of an insert is `O(log n)`.
///
/// Nothing is ever evicted early: at the per-keyid or aggregate cap,
/// [`ReplayStore::insert`] returns [`InsertOutcome::KeyidCapReached`] or
/// [`InsertOutcome::AggregateCapReached`] and the verifier rejects with
/// `*_signature_rate_abuse`.
///
/// An entry is live while `now <= expires_at`: the verifier passes
/// `expires_at = expires + 60` and its window check still accepts a
/// signature at `now == expires + 60` (it rejects only `expires < now − 60`),
/// so the entry must still reject a replay at that second. An insert whose
/// `expires_at` is already past returns [`InsertOutcome::Inserted`] and
/// stores nothing.
///
/// Memory: about 120 bytes per entry (a heap record, a hash-table slot of
/// a 16-byte fingerprint, the expiry and the partition index), whatever the
/// nonce and scope length, and up to twice that while tables grow.
/// At the recommended aggregate cap of 10,000,000 entries that is 1–2 GB;
/// size the aggregate cap to the memory budget, or use a shared tier.
///
/// ```
/// use adcp_verify::{InsertOutcome, MemoryReplayStore, ReplayKey, ReplayStore};
///
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// # block_on(async {
/// let store = MemoryReplayStore::webhook();
/// let key = ReplayKey { agent: None, keyid: "seller-2026", nonce: b"0123456789abcdef", scope: None };
/// let now = 1_776_520_800;
/// let expires_at = now + 300 + 60; // signature `expires` + 60 s skew
/// assert_eq!(store.insert(key, expires_at, now).await?, InsertOutcome::Inserted);
/// assert_eq!(store.insert(key, expires_at, expires_at).await?, InsertOutcome::Replayed);
/// // Once expired, the same (keyid, nonce) is a first sighting again.
/// assert_eq!(store.insert(key, expires_at + 400, expires_at + 1).await?, InsertOutcome::Inserted);
/// assert_eq!(store.len(), 1); // live entries as of the latest `now` seen
/// # Ok::<(), adcp_verify::StoreError>(())
/// # }).unwrap();
/// ```
pub struct MemoryReplayStore {
    limits: ReplayLimits,
    inner: Mutex<Inner>,
}

impl fmt::Debug for MemoryReplayStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryReplayStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl MemoryReplayStore {
    /// Expired records popped, at most, by an ordinary call before it does
    /// its own work (a call that finds a cap reached sweeps everything).
    pub const SWEEP_BUDGET: usize = 64;

    /// An empty store with the given caps.
    #[must_use]
    pub fn new(limits: ReplayLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// An empty store with the webhook caps ([`ReplayLimits::webhook`]).
    #[must_use]
    pub fn webhook() -> Self {
        Self::new(ReplayLimits::webhook())
    }

    /// An empty store with the request caps ([`ReplayLimits::request`]).
    #[must_use]
    pub fn request() -> Self {
        Self::new(ReplayLimits::request())
    }

    /// The caps this store enforces.
    #[must_use]
    pub fn limits(&self) -> ReplayLimits {
        self.limits
    }

    /// Live entries across every keyid (synthetic occupancy from
    /// [`fill_keyid_to_cap`](Self::fill_keyid_to_cap) included), as of the
    /// latest `now` the store has been given (by any [`ReplayStore`] call or
    /// [`purge_expired`](Self::purge_expired)). Sweeps every entry expired
    /// by then first, so the count is exact.
    #[must_use]
    pub fn len(&self) -> usize {
        let mut inner = self.lock_recovering();
        inner.sweep_to_latest();
        inner.total
    }

    /// Whether no entry is live (as [`len`](Self::len)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live entries held by `keyid` across every agent, synthetic
    /// occupancy included (as of the latest `now`, like [`len`](Self::len)).
    #[must_use]
    pub fn keyid_len(&self, keyid: &str) -> usize {
        let mut inner = self.lock_recovering();
        inner.sweep_to_latest();
        inner.keyid_total(keyid)
    }

    /// Live entries counted toward the `(agent, keyid)` partition `cap`
    /// (what the per-keyid cap is compared with), synthetic occupancy
    /// included, as of the latest `now` (like [`len`](Self::len)).
    #[must_use]
    pub fn cap_len(&self, cap: CapKey<'_>) -> usize {
        let mut inner = self.lock_recovering();
        inner.sweep_to_latest();
        inner.cap_count(cap)
    }

    /// Removes every entry expired at `now` and returns how many were
    /// removed; `now` also becomes the store's latest time if it is later.
    /// Optional (calls sweep lazily anyway): an idle verifier can call it
    /// from a timer to give memory back.
    pub fn purge_expired(&self, now: i64) -> usize {
        let mut inner = self.lock_recovering();
        inner.sweep(now, usize::MAX)
    }

    /// **Test and conformance-harness utility**, not for production use.
    ///
    /// Fills `keyid`'s `agent: None` partition to the per-keyid cap with
    /// synthetic occupancy that is live until `expires_at` (inclusive), as
    /// the conformance vectors' `per_keyid_cap_filled_for` /
    /// `replay_cache_per_keyid_cap_hit` harness state asks; see
    /// [`fill_to_cap`](Self::fill_to_cap) for any partition. No real entries are allocated: the store keeps one
    /// counter per keyid, which counts toward the per-keyid and the
    /// aggregate caps exactly like real entries and expires the same way,
    /// so a 100,000-entry fill costs no more than one insert. Calling it
    /// again replaces the previous synthetic occupancy.
    ///
    /// Returns the number of synthetic entries added: `per_keyid_cap` minus
    /// the keyid's live real entries, limited by the room left under the
    /// aggregate cap (so the keyid may stay below its cap when the aggregate
    /// cap is nearly reached). Liveness is judged at the latest `now` the
    /// store has been given (see [`len`](Self::len)); nothing is added when
    /// `expires_at` is already past it.
    pub fn fill_keyid_to_cap(&self, keyid: &str, expires_at: i64) -> usize {
        self.fill_to_cap(CapKey { agent: None, keyid }, expires_at)
    }

    /// **Test and conformance-harness utility**, not for production use.
    ///
    /// [`fill_keyid_to_cap`](Self::fill_keyid_to_cap) for the `(agent,
    /// keyid)` partition `cap`: only that partition reaches its cap, other
    /// agents sharing the keyid keep theirs (the aggregate cap still counts
    /// the occupancy). Returns the number of synthetic entries added.
    pub fn fill_to_cap(&self, cap: CapKey<'_>, expires_at: i64) -> usize {
        let mut inner = self.lock_recovering();
        inner.sweep_to_latest();
        let now = inner.latest;
        inner.fill_synthetic(cap, expires_at, now, self.limits)
    }

    fn cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        inner.sweep(now, MemoryReplayStore::SWEEP_BUDGET);
        if inner.cap_count(cap) < self.limits.per_keyid_cap {
            return Ok(false);
        }
        inner.sweep(now, usize::MAX);
        Ok(inner.cap_count(cap) >= self.limits.per_keyid_cap)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        // Fail closed: a poisoned lock means an earlier call panicked while
        // mutating the cache, so its contents cannot be trusted.
        self.inner
            .lock()
            .map_err(|_| StoreError("in-memory replay store lock poisoned".to_owned()))
    }

    fn lock_recovering(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ReplayStore for MemoryReplayStore {
    async fn keyid_cap_reached(&self, cap: CapKey<'_>, now: i64) -> Result<bool, StoreError> {
        self.cap_reached(cap, now)
    }

    fn keyid_cap_reached_now(&self, cap: CapKey<'_>, now: i64) -> Option<Result<bool, StoreError>> {
        Some(self.cap_reached(cap, now))
    }

    fn insert_now(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Option<Result<InsertOutcome, StoreError>> {
        Some(
            self.lock()
                .and_then(|mut inner| inner.insert(key, expires_at, now, self.limits)),
        )
    }

    async fn contains(&self, key: ReplayKey<'_>, now: i64) -> Result<bool, StoreError> {
        let mut inner = self.lock()?;
        inner.sweep(now, MemoryReplayStore::SWEEP_BUDGET);
        Ok(inner.lookup(key).is_some_and(|held| now <= held.expires_at))
    }

    async fn insert(&self, key: ReplayKey<'_>, expires_at: i64, now: i64) -> Result<InsertOutcome, StoreError> {
        let mut inner = self.lock()?;
        inner.insert(key, expires_at, now, self.limits)
    }
}

/// One expiry record in the shared min-heap, ordered by `at` only. A
/// record is stale (skipped when popped) when its slot was reused
/// (`generation` differs) or its entry or occupancy was replaced.
#[derive(Debug)]
struct Expiry {
    at: i64,
    slot: u32,
    generation: u32,
    target: Target,
}

/// What an [`Expiry`] record expires.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// One real entry of the keyid's table.
    Entry(Fingerprint),
    /// The synthetic occupancy of the keyid's partition with this index.
    Synthetic(u32),
}

/// A replay key as stored: 128 bits of two independently seeded hashes of
/// the encoded `(nonce, scope)` (see [`encode_key`]), so every entry has
/// the same small fixed size whatever the nonce length (the spec's memory
/// budget is per entry). Tables are per keyid and only signed nonces of
/// that keyid enter one, so a crafted collision could only make its own
/// signer's request look replayed; an accidental one has probability
/// about n² / 2¹²⁹ for n live entries of one keyid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint([u64; 2]);

impl Hash for Fingerprint {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Already a keyed hash: the table uses the first word as is.
        state.write_u64(self.0[0]);
    }
}

/// Passes a [`Fingerprint`]'s first word through as the table hash.
#[derive(Default)]
struct FirstWord(u64);

impl Hasher for FirstWord {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (by `Fingerprint`); fold anything else.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One live entry: its expiry and the index of the partition (in
/// [`KeyidState::parts`]) it counts toward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    expires_at: i64,
    part: u32,
}

type Entries = HashMap<Fingerprint, Held, BuildHasherDefault<FirstWord>>;

impl PartialEq for Expiry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Expiry {}

impl PartialOrd for Expiry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Expiry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

/// The cap count of one `(agent, keyid)` partition.
#[derive(Debug)]
struct Part {
    agent: Option<Box<str>>,
    /// Real entries of the keyid's table that count here.
    live: usize,
    synthetic: usize,
    synthetic_expires_at: i64,
}

impl Part {
    fn count(&self) -> usize {
        self.live.saturating_add(self.synthetic)
    }
}

#[derive(Debug)]
struct KeyidState {
    keyid: Box<str>,
    /// Compact key (see [`encode_key`]) → expiry and partition. One table
    /// per keyid whatever the agent: replay uniqueness ignores the agent.
    entries: Entries,
    /// The partitions entries count toward; indices are stable while the
    /// keyid holds anything (entries and heap records name them), and the
    /// list is dropped with the keyid's state once it holds nothing.
    parts: Vec<Part>,
    /// Synthetic occupancy summed over `parts`.
    synthetic: usize,
}

impl KeyidState {
    /// Every entry of the keyid, real and synthetic, whatever the agent.
    fn count(&self) -> usize {
        self.entries.len().saturating_add(self.synthetic)
    }

    /// The index of `agent`'s partition (a linear scan: see the store docs).
    fn part(&self, agent: Option<&str>) -> Option<u32> {
        let index = self.parts.iter().position(|p| p.agent.as_deref() == agent)?;
        u32::try_from(index).ok()
    }

    fn part_count(&self, agent: Option<&str>) -> usize {
        self.parts
            .iter()
            .find(|p| p.agent.as_deref() == agent)
            .map_or(0, Part::count)
    }

    /// The index of `agent`'s partition, appending one when absent.
    fn part_for(&mut self, agent: Option<&str>) -> Result<u32, StoreError> {
        if let Some(index) = self.part(agent) {
            return Ok(index);
        }
        let index = u32::try_from(self.parts.len())
            .map_err(|_| StoreError("in-memory replay store: too many agents for one keyid".to_owned()))?;
        self.parts.push(Part {
            agent: agent.map(Into::into),
            live: 0,
            synthetic: 0,
            synthetic_expires_at: 0,
        });
        Ok(index)
    }

    /// Removes the entry `fingerprint` (held as `held`) and its count.
    fn remove_entry(&mut self, fingerprint: &Fingerprint, held: Held) {
        self.entries.remove(fingerprint);
        if let Some(part) = self.parts.get_mut(held.part as usize) {
            part.live = part.live.saturating_sub(1);
        }
    }
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    state: Option<KeyidState>,
}

#[derive(Debug)]
struct Inner {
    index: HashMap<Box<str>, u32, RandomState>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    expiry: BinaryHeap<Reverse<Expiry>>,
    /// Entries held (real and synthetic), live or expired-but-unswept.
    total: usize,
    /// Reused buffer for encoding lookup keys.
    scratch: Vec<u8>,
    /// The two seeds of [`Fingerprint`]s.
    seeds: [RandomState; 2],
    /// The latest `now` any call has passed (`i64::MIN` before the first).
    latest: i64,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            index: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            expiry: BinaryHeap::new(),
            total: 0,
            scratch: Vec::new(),
            seeds: [RandomState::default(), RandomState::default()],
            latest: i64::MIN,
        }
    }
}

impl Inner {
    fn sweep_to_latest(&mut self) -> usize {
        self.sweep(self.latest, usize::MAX)
    }

    fn state(&self, slot: u32) -> Option<&KeyidState> {
        self.slots.get(slot as usize).and_then(|s| s.state.as_ref())
    }

    fn state_mut(&mut self, slot: u32) -> Option<&mut KeyidState> {
        self.slots.get_mut(slot as usize).and_then(|s| s.state.as_mut())
    }

    /// Every entry of `keyid`, whatever the agent.
    fn keyid_total(&self, keyid: &str) -> usize {
        self.index
            .get(keyid)
            .and_then(|&slot| self.state(slot))
            .map_or(0, KeyidState::count)
    }

    /// The entries counted toward the per-keyid cap of `cap`.
    fn cap_count(&self, cap: CapKey<'_>) -> usize {
        self.index
            .get(cap.keyid)
            .and_then(|&slot| self.state(slot))
            .map_or(0, |state| state.part_count(cap.agent))
    }

    /// The stored form of `key`.
    fn fingerprint(&mut self, key: ReplayKey<'_>) -> Fingerprint {
        encode_key(&mut self.scratch, key);
        let bytes = self.scratch.as_slice();
        Fingerprint([self.seeds[0].hash_one(bytes), self.seeds[1].hash_one(bytes)])
    }

    /// `key`'s entry (whatever agent inserted it), live or not yet swept.
    fn lookup(&mut self, key: ReplayKey<'_>) -> Option<Held> {
        let slot = *self.index.get(key.keyid)?;
        let fingerprint = self.fingerprint(key);
        let state = self.slots.get(slot as usize)?.state.as_ref()?;
        state.entries.get(&fingerprint).copied()
    }

    fn insert(
        &mut self,
        key: ReplayKey<'_>,
        expires_at: i64,
        now: i64,
        limits: ReplayLimits,
    ) -> Result<InsertOutcome, StoreError> {
        self.sweep(now, MemoryReplayStore::SWEEP_BUDGET);
        let fingerprint = self.fingerprint(key);

        // Replay check, on the keyid's one table whatever the agent (and
        // removal of an expired entry not yet swept, from the partition it
        // counted toward; its heap record goes stale and is skipped).
        if let Some(&slot) = self.index.get(key.keyid) {
            let mut removed = false;
            if let Some(state) = self.slots.get_mut(slot as usize).and_then(|s| s.state.as_mut()) {
                if let Some(&held) = state.entries.get(&fingerprint) {
                    if now <= held.expires_at {
                        return Ok(InsertOutcome::Replayed);
                    }
                    state.remove_entry(&fingerprint, held);
                    removed = true;
                }
            }
            if removed {
                self.total = self.total.saturating_sub(1);
                self.release_if_empty(slot);
            }
        }

        // Already expired: nothing to remember, nothing to protect.
        if expires_at < now {
            return Ok(InsertOutcome::Inserted);
        }

        let cap = key.cap_key();
        if self.cap_count(cap) >= limits.per_keyid_cap {
            self.sweep(now, usize::MAX);
            if self.cap_count(cap) >= limits.per_keyid_cap {
                return Ok(InsertOutcome::KeyidCapReached);
            }
        }
        if self.total >= limits.aggregate_cap {
            self.sweep(now, usize::MAX);
            if self.total >= limits.aggregate_cap {
                return Ok(InsertOutcome::AggregateCapReached);
            }
        }

        let slot = self.slot_for(key.keyid)?;
        let generation = self.slots.get(slot as usize).map_or(0, |s| s.generation);
        let state = self
            .state_mut(slot)
            .ok_or_else(|| StoreError("in-memory replay store slot missing".to_owned()))?;
        let part = match state.part_for(key.agent) {
            Ok(part) => part,
            Err(e) => {
                // `slot_for` may have just allocated an empty state.
                self.release_if_empty(slot);
                return Err(e);
            }
        };
        state.entries.insert(fingerprint, Held { expires_at, part });
        if let Some(p) = state.parts.get_mut(part as usize) {
            p.live = p.live.saturating_add(1);
        }
        self.total = self.total.saturating_add(1);
        self.expiry.push(Reverse(Expiry {
            at: expires_at,
            slot,
            generation,
            target: Target::Entry(fingerprint),
        }));
        Ok(InsertOutcome::Inserted)
    }

    fn fill_synthetic(&mut self, cap: CapKey<'_>, expires_at: i64, now: i64, limits: ReplayLimits) -> usize {
        // Drop the partition's previous synthetic occupancy (its heap
        // record goes stale).
        if let Some(&slot) = self.index.get(cap.keyid) {
            let mut dropped = 0;
            if let Some(state) = self.state_mut(slot) {
                if let Some(part) = state.part(cap.agent).and_then(|i| state.parts.get_mut(i as usize)) {
                    dropped = std::mem::take(&mut part.synthetic);
                }
                state.synthetic = state.synthetic.saturating_sub(dropped);
            }
            self.total = self.total.saturating_sub(dropped);
            self.release_if_empty(slot);
        }
        if expires_at < now {
            return 0;
        }
        let wanted = limits.per_keyid_cap.saturating_sub(self.cap_count(cap));
        let room = limits.aggregate_cap.saturating_sub(self.total);
        let added = wanted.min(room);
        if added == 0 {
            return 0;
        }
        let Ok(slot) = self.slot_for(cap.keyid) else {
            return 0;
        };
        let generation = self.slots.get(slot as usize).map_or(0, |s| s.generation);
        let Some(state) = self.state_mut(slot) else {
            return 0;
        };
        let Some(index) = state.part_for(cap.agent).ok() else {
            self.release_if_empty(slot);
            return 0;
        };
        let Some(part) = state.parts.get_mut(index as usize) else {
            return 0;
        };
        part.synthetic = added;
        part.synthetic_expires_at = expires_at;
        state.synthetic = state.synthetic.saturating_add(added);
        self.total = self.total.saturating_add(added);
        self.expiry.push(Reverse(Expiry {
            at: expires_at,
            slot,
            generation,
            target: Target::Synthetic(index),
        }));
        added
    }

    /// The slot of `keyid`, allocating one when the keyid holds nothing.
    fn slot_for(&mut self, keyid: &str) -> Result<u32, StoreError> {
        if let Some(&slot) = self.index.get(keyid) {
            return Ok(slot);
        }
        let state = KeyidState {
            keyid: keyid.into(),
            entries: HashMap::default(),
            parts: Vec::new(),
            synthetic: 0,
        };
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len())
                    .map_err(|_| StoreError("in-memory replay store: too many keyids".to_owned()))?;
                self.slots.push(Slot::default());
                slot
            }
        };
        if let Some(s) = self.slots.get_mut(slot as usize) {
            s.state = Some(state);
        }
        self.index.insert(keyid.into(), slot);
        Ok(slot)
    }

    /// Frees `slot` when its keyid holds nothing; stale heap records that
    /// still name it are recognised by the bumped generation.
    fn release_if_empty(&mut self, slot: u32) {
        let Some(s) = self.slots.get_mut(slot as usize) else {
            return;
        };
        if s.state.as_ref().is_some_and(|st| st.count() == 0) {
            if let Some(state) = s.state.take() {
                self.index.remove(&state.keyid);
            }
            s.generation = s.generation.wrapping_add(1);
            self.free.push(slot);
        }
    }

    /// Pops up to `budget` expired records (`at < now`) and removes the
    /// entries they still describe. Returns the number of entries removed.
    fn sweep(&mut self, now: i64, budget: usize) -> usize {
        self.latest = self.latest.max(now);
        let mut removed = 0;
        let mut popped = 0;
        while popped < budget {
            match self.expiry.peek() {
                Some(Reverse(record)) if record.at < now => {}
                _ => break,
            }
            let Some(Reverse(record)) = self.expiry.pop() else {
                break;
            };
            popped += 1;
            removed += self.expire(&record);
        }
        if removed > 0 {
            self.total = self.total.saturating_sub(removed);
            self.shrink_if_sparse();
        }
        removed
    }

    /// Applies one popped expiry record; returns the entries it removed.
    fn expire(&mut self, record: &Expiry) -> usize {
        let Some(slot) = self.slots.get_mut(record.slot as usize) else {
            return 0;
        };
        if slot.generation != record.generation {
            return 0;
        }
        let Some(state) = slot.state.as_mut() else {
            return 0;
        };
        let removed = match record.target {
            // The record describes the entry only while the entry still
            // carries its expiry (a re-insert after expiry gets its own).
            Target::Entry(key) => match state.entries.get(&key) {
                Some(&held) if held.expires_at == record.at => {
                    state.remove_entry(&key, held);
                    if state.entries.capacity() > 64 && state.entries.len() < state.entries.capacity() / 8 {
                        state.entries.shrink_to(state.entries.len().saturating_mul(2));
                    }
                    1
                }
                _ => 0,
            },
            Target::Synthetic(index) => match state.parts.get_mut(index as usize) {
                Some(part) if part.synthetic > 0 && part.synthetic_expires_at == record.at => {
                    let dropped = std::mem::take(&mut part.synthetic);
                    state.synthetic = state.synthetic.saturating_sub(dropped);
                    dropped
                }
                _ => 0,
            },
        };
        if removed > 0 {
            self.release_if_empty(record.slot);
        }
        removed
    }

    fn shrink_if_sparse(&mut self) {
        if self.expiry.capacity() > 1024 && self.expiry.len() < self.expiry.capacity() / 8 {
            self.expiry.shrink_to(self.expiry.len().saturating_mul(2));
        }
    }
}

/// Packs `(nonce, scope)` into one byte string, unambiguously:
/// `0x00 ‖ nonce` when unscoped, `0x01 ‖ LEB128(len(nonce)) ‖ nonce ‖ scope`
/// when scoped. The keyid is not repeated: each keyid has its own table.
fn encode_key(out: &mut Vec<u8>, key: ReplayKey<'_>) {
    out.clear();
    match key.scope {
        None => {
            out.push(0);
            out.extend_from_slice(key.nonce);
        }
        Some(scope) => {
            out.push(1);
            let mut len = key.nonce.len();
            loop {
                let low = (len & 0x7f) as u8;
                len >>= 7;
                if len == 0 {
                    out.push(low);
                    break;
                }
                out.push(low | 0x80);
            }
            out.extend_from_slice(key.nonce);
            out.extend_from_slice(scope.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_encoding_separates_scope_from_nonce() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        encode_key(
            &mut a,
            ReplayKey {
                agent: None,
                keyid: "k",
                nonce: b"ab",
                scope: Some("c"),
            },
        );
        encode_key(
            &mut b,
            ReplayKey {
                agent: None,
                keyid: "k",
                nonce: b"a",
                scope: Some("bc"),
            },
        );
        assert_ne!(a, b);
        encode_key(
            &mut a,
            ReplayKey {
                agent: None,
                keyid: "k",
                nonce: b"ab",
                scope: None,
            },
        );
        encode_key(
            &mut b,
            ReplayKey {
                agent: None,
                keyid: "k",
                nonce: b"ab",
                scope: Some(""),
            },
        );
        assert_ne!(a, b);
    }

    #[test]
    fn stale_records_do_not_remove_reinserted_entries() {
        let mut inner = Inner::default();
        let limits = ReplayLimits::new(1_000, 1_000);
        // More expired records than one budgeted sweep pops, so the record
        // for `key` is still in the heap when `key` is inserted again.
        for i in 0..=MemoryReplayStore::SWEEP_BUDGET {
            let nonce = i.to_le_bytes();
            let other = ReplayKey {
                agent: None,
                keyid: "other",
                nonce: &nonce,
                scope: None,
            };
            assert_eq!(inner.insert(other, 5, 0, limits), Ok(InsertOutcome::Inserted));
        }
        let key = ReplayKey {
            agent: None,
            keyid: "k",
            nonce: b"n",
            scope: None,
        };
        assert_eq!(inner.insert(key, 10, 0, limits), Ok(InsertOutcome::Inserted));
        assert_eq!(inner.insert(key, 30, 11, limits), Ok(InsertOutcome::Inserted));
        assert_eq!(inner.sweep(20, usize::MAX), 1);
        assert_eq!(inner.lookup(key).map(|held| held.expires_at), Some(30));
        assert_eq!(inner.total, 1);
        assert!(inner.expiry.len() == 1);
    }
}
