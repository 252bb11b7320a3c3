//! Strict JSON well-formedness and duplicate-key checking for AdCP bodies.
//!
//! AdCP forbids duplicate object keys on every signed surface: verifiers
//! reject them after signature verification (webhook checklist step 14,
//! `webhook_body_malformed`; request profile and A2A operation resolution,
//! `request_body_malformed`), and signers reject duplicate-key input from
//! upstream callers before signing (`duplicate_key_input`). Step 14a
//! requires "a parser that exposes duplicate keys"; `serde_json` (like most
//! parsers) silently keeps the last value. [`check`] is that parser: one
//! pass, no recursion, no allocation beyond the member names of the objects
//! on the current path.
//!
//! ```
//! use adcp_strict_json::{check, parse_value, Limits, StrictJsonError};
//!
//! let limits = Limits::default();
//! check(br#"{"event":"creative.status_changed","status":"approved"}"#, &limits)?;
//!
//! // `"sk\u0069ll"` is `"skill"`: names are compared after unescaping.
//! let body = br#"{"data":{"skill":"get_products","sk\u0069ll":"create_media_buy"}}"#;
//! let err = check(body, &limits).unwrap_err();
//! assert_eq!(err.error_code(), "duplicate_key_input");
//! let dups = err.duplicate_keys().unwrap();
//! assert_eq!(dups.names(), ["skill"]);
//! assert_eq!(err.to_string(), r#"duplicate object keys: "skill""#);
//!
//! // Not JSON at all: trailing comma.
//! assert!(matches!(check(b"[1,2,]", &limits), Err(StrictJsonError::Syntax { offset: 5, .. })));
//!
//! // Check, then deserialize with serde_json.
//! let value = parse_value(br#"{"status":"approved"}"#, &limits)?;
//! assert_eq!(value["status"], "approved");
//! # Ok::<(), StrictJsonError>(())
//! ```
//!
//! # What is accepted
//!
//! Exactly one RFC 8259 JSON text: optional whitespace (space, tab, LF,
//! CR), one value, optional whitespace. Strictly:
//!
//! - the input is valid UTF-8; a leading byte-order mark is rejected (RFC
//!   8259 §8.1 lets parsers ignore it; a strict checker does not, so the
//!   checked bytes and the parsed bytes cannot differ);
//! - no comments, no trailing commas, no single quotes, no unquoted names,
//!   no `NaN` / `Infinity`, no leading `+`, no leading zeros (`01`, `-01`),
//!   no bare `.5` / `1.`;
//! - strings contain no unescaped control characters (U+0000–U+001F, so a
//!   raw NUL or newline is rejected while `\u0000` and `\n` are fine); only
//!   the RFC 8259 escapes are allowed; a `\u` high surrogate must be
//!   immediately followed by a `\u` low surrogate, and lone surrogates
//!   (high or low) are rejected, because they cannot be represented in
//!   UTF-8 and parsers disagree on them (replacement character, error, or
//!   WTF-8);
//! - numbers follow the RFC 8259 grammar and their magnitude, rounded to
//!   a double, is at most `1.7976931348623e308`: every accepted number is
//!   a finite IEEE-754 double in every parser (RFC 8259 §6 / I-JSON
//!   interoperability; beyond the double range parsers disagree —
//!   infinity, error or big number). The bound sits about 70 ulps below
//!   `f64::MAX` because parsers that do not round correctly
//!   (`serde_json`'s default float parser among them) overflow a few ulps
//!   early; `f64::MAX` written out in full is rejected;
//! - no object repeats a member name, at any depth, inside arrays included.
//!   Names are compared after unescaping, code point by code point: `"a"`
//!   and `"\u0061"` are the same name, `"Skill"` and `"skill"` are not
//!   (case variants of a recognized name are the A2A operation resolver's
//!   concern, vector `a2a/negative/020`, not a JSON well-formedness rule),
//!   and no Unicode normalization is applied (`"é"` and `"e\u0301"`
//!   differ, as they do for every mainstream JSON parser).
//!
//! # Duplicate reporting
//!
//! Scanning continues after the first duplicate, so the
//! [`DuplicateKeys`] report covers the whole document: every (object, name)
//! pair that repeats counts once, the first four are kept as sanitized
//! names ([`sanitize_key_name`], step 14b (a) and (b)) and the rest are
//! counted and rendered as `<...N more>` (step 14b (c)). A syntax or limit
//! error anywhere in the document takes precedence over duplicates.
//!
//! # Limits and memory
//!
//! [`Limits`] bounds the input length (checked first; inputs of 4 GiB or
//! more are always refused), the nesting depth (checked before each
//! container is entered; the container path is a heap bit stack, so even
//! 100 000 nested brackets never touch the call stack) and optionally the
//! raw length of one string. The scanner allocates only for objects: one
//! small record per open object and one 16-byte span per distinct member
//! name of the open objects, plus the unescaped bytes of names written
//! with escapes (names without escapes are compared in place in the
//! input). Objects with 16 or more members get a hash index (keyed
//! SipHash, so the check stays linear even for adversarial names). Closing
//! an object frees its names, so sibling objects never accumulate. Strings
//! and numbers allocate nothing, an open array one bit. Worst case, an
//! object made only
//! of short distinct names: about 45 bytes per member (≈ 5.5× its size);
//! a typical webhook body: a few hundred bytes.
//!
//! # Error codes
//!
//! [`StrictJsonError::error_code`] returns `duplicate_key_input` for
//! duplicates — the normative signer-side identifier. Verifiers never send
//! that string: they map every [`StrictJsonError`] to their malformed-body
//! code (`webhook_body_malformed` / `request_body_malformed`), which is
//! distinct from the signature error codes because the signature is valid.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod duplicates;
mod error;
pub mod jcs;
mod limits;
mod sanitize;
mod scanner;

pub use error::{DuplicateKeys, StrictJsonError, DUPLICATE_KEY_INPUT, MAX_REPORTED_KEYS};
pub use limits::{Limits, DEFAULT_MAX_DEPTH, DEFAULT_MAX_LEN, SERDE_JSON_MAX_DEPTH};
pub use sanitize::{is_non_printable, sanitize_key_name, MAX_KEY_NAME_BYTES};

/// Checks that `json` is exactly one strict RFC 8259 JSON value within
/// `limits`, with no object repeating a member name.
///
/// See the [crate documentation](crate) for the exact rules and the order
/// in which errors are reported.
///
/// # Errors
///
/// [`StrictJsonError::TooLong`], [`StrictJsonError::Syntax`] (including
/// invalid UTF-8 and out-of-range numbers), [`StrictJsonError::TooDeep`],
/// [`StrictJsonError::StringTooLong`], or — for an otherwise valid
/// document — [`StrictJsonError::DuplicateKeys`].
///
/// ```
/// use adcp_strict_json::{check, Limits};
///
/// let limits = Limits::default();
/// assert!(check(br#"{"packages":[{"package_id":"pkg_1"},{"package_id":"pkg_2"}]}"#, &limits).is_ok());
///
/// let err = check(br#"{"packages":[{"package_id":"pkg_1","package_id":"pkg_evil"}]}"#, &limits).unwrap_err();
/// assert_eq!(err.duplicate_keys().unwrap().names(), ["package_id"]);
/// ```
pub fn check(json: &[u8], limits: &Limits) -> Result<(), StrictJsonError> {
    scanner::scan(json, limits)
}

/// [`check`]s `json`, then deserializes it with `serde_json`.
///
/// Because the check has already rejected duplicate keys, the value is the
/// one every parser agrees on. The depth limit used is
/// `min(limits.max_depth, SERDE_JSON_MAX_DEPTH)`, so that `serde_json`'s
/// own recursion limit is never the one that trips.
///
/// # Errors
///
/// Every error of [`check`]. Should `serde_json` still refuse a checked
/// document (not expected: the check is stricter than `serde_json` in every
/// respect it knows of), the refusal is reported as
/// [`StrictJsonError::Syntax`] at the position `serde_json` names.
///
/// ```
/// use adcp_strict_json::{parse_value, Limits};
///
/// let value = parse_value(br#"{"jsonrpc":"2.0","method":"SendMessage"}"#, &Limits::default())?;
/// assert_eq!(value["method"], "SendMessage");
///
/// let err = parse_value(br#"{"method":"tasks/get","method":"SendMessage"}"#, &Limits::default()).unwrap_err();
/// assert_eq!(err.error_code(), "duplicate_key_input");
/// # Ok::<(), adcp_strict_json::StrictJsonError>(())
/// ```
pub fn parse_value(json: &[u8], limits: &Limits) -> Result<serde_json::Value, StrictJsonError> {
    let mut effective = *limits;
    effective.max_depth = effective.max_depth.min(SERDE_JSON_MAX_DEPTH);
    check(json, &effective)?;
    serde_json::from_slice(json).map_err(|e| StrictJsonError::Syntax {
        offset: offset_of(json, e.line(), e.column()),
        reason: "rejected by serde_json",
    })
}

/// Byte offset of a 1-based `line` / `column` position as `serde_json`
/// reports it (column counted in bytes), clamped to the input.
fn offset_of(json: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    let mut remaining = line.saturating_sub(1);
    for (i, &b) in json.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        if b == b'\n' {
            remaining -= 1;
            line_start = i + 1;
        }
    }
    line_start.saturating_add(column.saturating_sub(1)).min(json.len())
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
