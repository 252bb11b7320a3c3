//! Resource limits applied by [`check`](crate::check) and
//! [`parse_value`](crate::parse_value).

/// Resource limits for one check.
///
/// Every limit is enforced while scanning, before any work proportional to
/// the offending construct is done: the input length is compared first, the
/// nesting depth is compared before a container is opened, and a string is
/// rejected as soon as its raw length passes the limit.
///
/// The struct is `#[non_exhaustive]`: build it from [`Limits::default`] or
/// [`Limits::new`] and adjust it with the `with_*` methods or by assigning
/// the public fields.
///
/// ```
/// use adcp_strict_json::Limits;
///
/// let limits = Limits::new(64 * 1024).with_max_depth(16);
/// assert_eq!(limits.max_len, 64 * 1024);
/// assert_eq!(limits.max_depth, 16);
/// assert_eq!(limits.max_string_len, usize::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Limits {
    /// Maximum nesting depth: the number of arrays and objects open at the
    /// same time. `[]` and `{}` have depth 1, a scalar document depth 0.
    /// Exceeding it is [`StrictJsonError::TooDeep`](crate::StrictJsonError::TooDeep).
    ///
    /// The scanner keeps its container stack on the heap, so any value is
    /// safe for the checker itself; [`parse_value`](crate::parse_value)
    /// additionally caps the depth at [`SERDE_JSON_MAX_DEPTH`].
    pub max_depth: usize,
    /// Maximum input length in bytes, whitespace included. Exceeding it is
    /// [`StrictJsonError::TooLong`](crate::StrictJsonError::TooLong) and is
    /// detected before a single byte is scanned. Values above
    /// `u32::MAX` (4 GiB − 1) act as `u32::MAX`: offsets are kept in 32
    /// bits.
    pub max_len: usize,
    /// Maximum raw length in bytes of one string token (member name or
    /// value), measured between the quotes *before* unescaping. Exceeding
    /// it is [`StrictJsonError::StringTooLong`](crate::StrictJsonError::StringTooLong).
    /// `usize::MAX` (the default) leaves strings bounded by
    /// [`max_len`](Limits::max_len) only.
    pub max_string_len: usize,
}

/// The deepest nesting `serde_json` deserializes with its default recursion
/// limit (it refuses the 128th nested container).
/// [`parse_value`](crate::parse_value) checks with
/// `min(limits.max_depth, SERDE_JSON_MAX_DEPTH)` so that a document accepted
/// by the check is never refused by `serde_json` for depth.
pub const SERDE_JSON_MAX_DEPTH: usize = 127;

/// [`Limits::default`]'s nesting depth.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// [`Limits::default`]'s input length: 1 MiB.
pub const DEFAULT_MAX_LEN: usize = 1024 * 1024;

impl Limits {
    /// The default limits with an input length limit of `max_len` bytes:
    /// depth [`DEFAULT_MAX_DEPTH`], no per-string limit beyond `max_len`.
    #[must_use]
    pub const fn new(max_len: usize) -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            max_len,
            max_string_len: usize::MAX,
        }
    }

    /// These limits with [`max_depth`](Limits::max_depth) replaced.
    #[must_use]
    pub const fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// These limits with [`max_len`](Limits::max_len) replaced.
    #[must_use]
    pub const fn with_max_len(mut self, max_len: usize) -> Self {
        self.max_len = max_len;
        self
    }

    /// These limits with [`max_string_len`](Limits::max_string_len) replaced.
    #[must_use]
    pub const fn with_max_string_len(mut self, max_string_len: usize) -> Self {
        self.max_string_len = max_string_len;
        self
    }
}

impl Default for Limits {
    /// Depth [`DEFAULT_MAX_DEPTH`] (64), length [`DEFAULT_MAX_LEN`] (1 MiB),
    /// no per-string limit beyond the length limit.
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LEN)
    }
}
