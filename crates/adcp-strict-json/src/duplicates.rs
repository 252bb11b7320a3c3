//! Per-object member-name sets for the objects on the current path.
//!
//! Every member name of the open objects is one 16-byte [`Span`], in
//! document order; an object's names are the tail of the span list that
//! starts where the object was opened, and closing the object truncates the
//! list back to that point. A name written without escapes is a span of the
//! input itself; only names with escapes are unescaped, into a byte arena
//! that is truncated together with the spans. Memory is therefore bounded
//! by the names of the objects on the current path, and a repeated
//! occurrence of a name is not stored a second time.
//!
//! Small objects are searched linearly. Once an object has
//! [`INDEX_THRESHOLD`] names it gets a hash index (keyed SipHash from
//! [`RandomState`], so adversarial names cannot force collisions), which
//! keeps the check linear for objects with many members.
//!
//! Offsets are `u32`: the scanner refuses inputs longer than
//! [`MAX_INPUT_LEN`], and an unescaped name is never longer than its
//! escaped form, so the arena never outgrows the input.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use smallvec::SmallVec;

use crate::error::DuplicateKeys;

/// Hard input length limit that keeps every offset in a `u32`.
pub(crate) const MAX_INPUT_LEN: usize = u32::MAX as usize;

/// Names per object searched linearly before a hash index is built.
const INDEX_THRESHOLD: usize = 16;

/// End of a collision chain.
const NONE: u32 = u32::MAX;

/// Where the bytes of a name live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// `input[start..start + len]`: the name had no escapes.
    Input,
    /// `arena[start..start + len]`: the unescaped name.
    Arena,
}

/// A member name just scanned: its bytes are `input[start..end]`
/// ([`Source::Input`]) or `arena[start..end]` ([`Source::Arena`]); `offset`
/// is the position of its opening quote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Name {
    pub(crate) source: Source,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) offset: usize,
}

/// One stored member name.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
    /// Next span with the same hash (only meaningful once indexed).
    next: u32,
    source: Source,
    /// Whether a repetition of this name has been reported already.
    reported: bool,
}

/// Hashes the `u64` keys of the index as themselves: they already are
/// keyed SipHash values.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Index = HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>;

/// The name set of one open object: where its names start, and its hash
/// index once it has one.
#[derive(Debug, Default)]
pub(crate) struct ObjectScope {
    span_base: usize,
    arena_base: usize,
    index: Option<Index>,
}

/// The member names of every object on the current path.
#[derive(Debug, Default)]
pub(crate) struct NameStore {
    arena: Vec<u8>,
    /// Inline for the first 16 names on the path (a webhook body's usual
    /// count), so typical bodies allocate nothing for them.
    spans: SmallVec<[Span; 16]>,
    state: Option<RandomState>,
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl NameStore {
    /// A scope for an object being opened now.
    pub(crate) fn open(&self) -> ObjectScope {
        ObjectScope {
            span_base: self.spans.len(),
            arena_base: self.arena.len(),
            index: None,
        }
    }

    /// Drops the names of an object being closed (the innermost one).
    pub(crate) fn close(&mut self, scope: &ObjectScope) {
        self.spans.truncate(scope.span_base);
        self.arena.truncate(scope.arena_base);
    }

    /// Where the next unescaped name starts in the arena; the caller then
    /// appends it with [`push_slice`](Self::push_slice) /
    /// [`push_char`](Self::push_char).
    pub(crate) fn arena_len(&self) -> usize {
        self.arena.len()
    }

    pub(crate) fn push_slice(&mut self, bytes: &[u8]) {
        self.arena.extend_from_slice(bytes);
    }

    pub(crate) fn push_char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.arena.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }

    fn bytes<'a>(&'a self, input: &'a [u8], source: Source, start: u32, len: u32) -> &'a [u8] {
        let (start, len) = (start as usize, len as usize);
        let buf = match source {
            Source::Input => input,
            Source::Arena => &self.arena,
        };
        buf.get(start..start.saturating_add(len)).unwrap_or_default()
    }

    /// Adds `name` to the object `scope`. A new name is kept; a repeated
    /// one is discarded (its arena bytes too) and, on its first repetition
    /// in this object, recorded in `dups`.
    pub(crate) fn finish_name(
        &mut self,
        input: &[u8],
        scope: &mut ObjectScope,
        name: Name,
        dups: &mut Option<DuplicateKeys>,
    ) {
        let Name {
            source,
            start,
            end,
            offset,
        } = name;
        let (start, len) = (to_u32(start), to_u32(end.saturating_sub(start)));
        let hash = scope.index.is_some().then(|| {
            let state = self.state.get_or_insert_with(RandomState::new);
            let buf = match source {
                Source::Input => input,
                Source::Arena => &self.arena,
            };
            state.hash_one(
                buf.get(start as usize..(start as usize).saturating_add(len as usize))
                    .unwrap_or_default(),
            )
        });
        let candidate = self.bytes(input, source, start, len);
        let found = match (&scope.index, hash) {
            (Some(index), Some(h)) => self.find_chained(input, index.get(&h).copied().unwrap_or(NONE), candidate),
            _ => self.find_linear(input, scope.span_base, candidate),
        };
        if let Some(i) = found {
            let first_repetition = self.spans.get(i).is_some_and(|s| !s.reported);
            if first_repetition {
                let raw = String::from_utf8_lossy(candidate).into_owned();
                dups.get_or_insert_with(|| DuplicateKeys::new(offset)).record(&raw);
                if let Some(span) = self.spans.get_mut(i) {
                    span.reported = true;
                }
            }
            if source == Source::Arena {
                self.arena.truncate(start as usize);
            }
            return;
        }
        let idx = to_u32(self.spans.len());
        let mut span = Span {
            start,
            len,
            next: NONE,
            source,
            reported: false,
        };
        match (&mut scope.index, hash) {
            (Some(index), Some(h)) => {
                span.next = index.insert(h, idx).unwrap_or(NONE);
                self.spans.push(span);
            }
            _ => {
                self.spans.push(span);
                if self.spans.len() - scope.span_base >= INDEX_THRESHOLD {
                    scope.index = Some(self.build_index(input, scope.span_base));
                }
            }
        }
    }

    fn find_linear(&self, input: &[u8], span_base: usize, candidate: &[u8]) -> Option<usize> {
        let spans = self.spans.get(span_base..).unwrap_or_default();
        spans
            .iter()
            .position(|s| s.len as usize == candidate.len() && self.bytes(input, s.source, s.start, s.len) == candidate)
            .map(|i| span_base + i)
    }

    fn find_chained(&self, input: &[u8], mut at: u32, candidate: &[u8]) -> Option<usize> {
        while let Some(s) = self.spans.get(at as usize) {
            if s.len as usize == candidate.len() && self.bytes(input, s.source, s.start, s.len) == candidate {
                return Some(at as usize);
            }
            at = s.next;
        }
        None
    }

    /// Indexes the spans of an object that has just reached the threshold.
    fn build_index(&mut self, input: &[u8], span_base: usize) -> Index {
        let state = self.state.get_or_insert_with(RandomState::new).clone();
        let mut index = Index::with_capacity_and_hasher(2 * INDEX_THRESHOLD, BuildHasherDefault::default());
        for i in span_base..self.spans.len() {
            let Some(span) = self.spans.get(i).copied() else { break };
            let h = state.hash_one(self.bytes(input, span.source, span.start, span.len));
            let next = index.insert(h, to_u32(i)).unwrap_or(NONE);
            if let Some(s) = self.spans.get_mut(i) {
                s.next = next;
            }
        }
        index
    }
}
