//! Errors: [`StrictJsonError`] and the sanitized duplicate-key report
//! [`DuplicateKeys`].

use std::fmt;

/// The normative signer-side error identifier for duplicate-key input
/// (AdCP `security.mdx`, "Duplicate object keys"): exactly this string,
/// case-sensitive, no prefix or suffix.
pub const DUPLICATE_KEY_INPUT: &str = "duplicate_key_input";

/// Number of sanitized duplicate key names kept per rejection (step 14b
/// (c)); further duplicates are only counted.
pub const MAX_REPORTED_KEYS: usize = 4;

/// Why [`check`](crate::check) or [`parse_value`](crate::parse_value)
/// rejected a document.
///
/// When a document has several problems, the first one found wins, in this
/// order: [`TooLong`](Self::TooLong) (before scanning), invalid UTF-8
/// anywhere ([`Syntax`](Self::Syntax)), then the first syntax or limit
/// error in document order. [`DuplicateKeys`](Self::DuplicateKeys) is only
/// returned for a document that is otherwise well-formed and within limits:
/// scanning continues after the first duplicate so that the report covers
/// the whole document.
///
/// Mapping to protocol error codes: a signer surfaces
/// [`DuplicateKeys`](Self::DuplicateKeys) as `duplicate_key_input` (see
/// [`error_code`](Self::error_code)); a verifier maps *every* variant to
/// its own malformed-body code — `webhook_body_malformed` (webhook profile
/// and legacy HMAC, checklist step 14) or `request_body_malformed` (request
/// profile and A2A operation resolution) — never to a signature error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrictJsonError {
    /// The input is not exactly one RFC 8259 JSON value.
    Syntax {
        /// Byte offset of the offending byte (or of the end of input).
        offset: usize,
        /// Human-readable reason; for diagnostics, not a stable interface.
        reason: &'static str,
    },
    /// More than `max` arrays and objects are open at the same time.
    TooDeep {
        /// The depth limit in force.
        max: usize,
    },
    /// The input is longer than `max` bytes.
    TooLong {
        /// The length limit in force (`Limits::max_len`, at most `u32::MAX`).
        max: usize,
    },
    /// A string token is longer than `max` raw bytes.
    StringTooLong {
        /// Byte offset of the string's opening quote.
        offset: usize,
        /// The string length limit in force.
        max: usize,
    },
    /// At least one object repeats a member name (compared after
    /// unescaping, case-sensitively).
    DuplicateKeys(DuplicateKeys),
}

impl StrictJsonError {
    /// A stable identifier for the failure class.
    ///
    /// [`DuplicateKeys`](Self::DuplicateKeys) is `"duplicate_key_input"`,
    /// the normative AdCP signer-side identifier ([`DUPLICATE_KEY_INPUT`]).
    /// The others are this crate's own: `"invalid_json"`, `"json_too_deep"`,
    /// `"json_too_long"`, `"json_string_too_long"`. Verifiers do not emit
    /// these: they map every variant to `webhook_body_malformed` or
    /// `request_body_malformed`.
    ///
    /// ```
    /// use adcp_strict_json::{check, Limits};
    ///
    /// let err = check(br#"{"status":"approved","status":"rejected"}"#, &Limits::default()).unwrap_err();
    /// assert_eq!(err.error_code(), "duplicate_key_input");
    /// ```
    #[must_use]
    pub fn error_code(&self) -> &'static str {
        match self {
            Self::Syntax { .. } => "invalid_json",
            Self::TooDeep { .. } => "json_too_deep",
            Self::TooLong { .. } => "json_too_long",
            Self::StringTooLong { .. } => "json_string_too_long",
            Self::DuplicateKeys(_) => DUPLICATE_KEY_INPUT,
        }
    }

    /// The duplicate-key report, if this is a duplicate-key rejection.
    #[must_use]
    pub fn duplicate_keys(&self) -> Option<&DuplicateKeys> {
        match self {
            Self::DuplicateKeys(d) => Some(d),
            _ => None,
        }
    }
}

impl fmt::Display for StrictJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax { offset, reason } => write!(f, "invalid JSON at byte {offset}: {reason}"),
            Self::TooDeep { max } => write!(f, "JSON nesting deeper than {max}"),
            Self::TooLong { max } => write!(f, "JSON input longer than {max} bytes"),
            Self::StringTooLong { offset, max } => {
                write!(f, "JSON string at byte {offset} longer than {max} bytes")
            }
            Self::DuplicateKeys(d) => d.fmt(f),
        }
    }
}

impl std::error::Error for StrictJsonError {}

/// The duplicate member names of a rejected document, sanitized for logs
/// per AdCP webhook verifier checklist step 14b.
///
/// One *duplicate* is one (object, member name) pair where the name occurs
/// more than once in that object: `{"a":1,"a":2,"a":3}` is one duplicate,
/// `[{"a":1,"a":2},{"a":1,"a":2}]` two. Duplicates are recorded in the
/// order in which their second occurrence appears in the document. The
/// first [`MAX_REPORTED_KEYS`] (4) are kept, each passed through
/// [`sanitize_key_name`](crate::sanitize_key_name); the rest are counted,
/// and [`overflow_marker`](Self::overflow_marker) renders that count as
/// `<...N more>`.
///
/// Nothing here is attacker-controlled beyond the sanitized names: the
/// offset and counts are numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKeys {
    names: Vec<String>,
    total: usize,
    first_offset: usize,
}

impl DuplicateKeys {
    pub(crate) fn new(first_offset: usize) -> Self {
        Self {
            names: Vec::new(),
            total: 0,
            first_offset,
        }
    }

    /// Records one duplicate; `raw` is sanitized only if it is kept.
    pub(crate) fn record(&mut self, raw: &str) {
        if self.names.len() < MAX_REPORTED_KEYS {
            self.names.push(crate::sanitize_key_name(raw));
        }
        self.total = self.total.saturating_add(1);
    }

    /// The sanitized names of the first (at most 4) duplicates, in
    /// document order. The same name appears again if it is duplicated in
    /// another object.
    #[must_use]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The number of duplicates in the whole document (≥ 1).
    #[must_use]
    pub fn total(&self) -> usize {
        self.total
    }

    /// The number of duplicates found but not listed in
    /// [`names`](Self::names).
    #[must_use]
    pub fn omitted(&self) -> usize {
        self.total.saturating_sub(self.names.len())
    }

    /// `<...N more>` with `N` = [`omitted`](Self::omitted), when duplicates
    /// were omitted (step 14b (c)).
    #[must_use]
    pub fn overflow_marker(&self) -> Option<String> {
        match self.omitted() {
            0 => None,
            n => Some(format!("<...{n} more>")),
        }
    }

    /// Byte offset of the first repeated member name (its opening quote).
    #[must_use]
    pub fn first_offset(&self) -> usize {
        self.first_offset
    }
}

impl fmt::Display for DuplicateKeys {
    /// `duplicate object keys: "status", "media_buy_id", <...3 more>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("duplicate object keys: ")?;
        for (i, name) in self.names.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{name:?}")?;
        }
        if let Some(marker) = self.overflow_marker() {
            write!(f, ", {marker}")?;
        }
        Ok(())
    }
}
