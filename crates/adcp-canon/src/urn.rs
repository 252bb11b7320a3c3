//! Parsing and equivalence of Uniform Resource Names (URNs) following
//! RFC 8141.
//!
//! # Syntax accepted
//!
//! [`Urn::parse`] accepts the RFC 8141 §2 `namestring` form:
//!
//! ```text
//! "urn:" NID ":" NSS [ "?+" r-component ] [ "?=" q-component ] [ "#" f-component ]
//! ```
//!
//! * The `urn` scheme is matched without regard to ASCII case.
//! * The NID is 2 to 32 ASCII letters, digits or hyphens and neither starts
//!   nor ends with a hyphen.
//! * The NSS is a non-empty run of `pchar` (RFC 3986 unreserved characters,
//!   sub-delims, `:`, `@` and `%XX` escapes) and `/`, and must not start
//!   with `/`.
//! * The r-component and q-component are non-empty runs of `pchar`, `/` and
//!   `?` that start with a `pchar`. The r-component stops at the first `?=`
//!   or `#`; the q-component stops at the first `#`.
//! * The f-component (possibly empty) is a run of `pchar`, `/` and `?`.
//! * A `?` right after the NSS that is not followed by `+` or `=` is an
//!   error, as is any `%` not followed by two hexadecimal digits, any
//!   non-ASCII byte and any ASCII control byte.
//! * Inputs longer than [`MAX_URN_LEN`] bytes are rejected before any other
//!   work is done, so parsing never allocates more than that bound.
//!
//! # Equivalence
//!
//! Two URNs are *URN-equivalent* (RFC 8141 §3) when their assigned names
//! (`"urn:" NID ":" NSS`) are byte-for-byte identical after three
//! normalizations and nothing else:
//!
//! 1. the scheme is lowercased,
//! 2. the NID is lowercased,
//! 3. within the NSS, the two hexadecimal digits of every `%XX` escape are
//!    uppercased.
//!
//! Escapes are never decoded (`%2C` and `,` stay different), every other
//! character of the NSS is compared case-sensitively, and the r-, q- and
//! f-components are ignored entirely. Namespace-specific rules (which RFC
//! 8141 allows a namespace to add) are out of scope: this module applies
//! only the generic procedure, which yields no false positives.
//!
//! [`Urn::equivalence_key`] returns that normalized assigned name as a
//! [`UrnKey`], suitable for use as a map or cache key; [`equivalent`] parses
//! two strings and compares them.
//!
//! `==` on [`Urn`] is *structural*: it compares the exact input text. Use
//! [`Urn::is_equivalent`], [`Urn::equivalence_key`] or [`equivalent`] for
//! URN-equivalence.
//!
//! # Example
//!
//! ```
//! use adcp_canon::urn::{equivalent, Urn, UrnError};
//!
//! # fn main() -> Result<(), UrnError> {
//! let urn = Urn::parse("URN:Example:a%2cb/c?+res?=query#frag")?;
//! assert_eq!(urn.nid(), "Example");
//! assert_eq!(urn.nss(), "a%2cb/c");
//! assert_eq!(urn.r_component(), Some("res"));
//! assert_eq!(urn.q_component(), Some("query"));
//! assert_eq!(urn.f_component(), Some("frag"));
//! assert_eq!(urn.equivalence_key().as_str(), "urn:example:a%2Cb/c");
//!
//! // Scheme and NID case, escape-digit case and the r/q/f components
//! // do not matter ...
//! assert!(equivalent("urn:example:a%2Cb", "URN:EXAMPLE:a%2cb?=x#y")?);
//! // ... but escapes are not decoded and the rest of the NSS is
//! // case-sensitive.
//! assert!(!equivalent("urn:example:a%2Cb", "urn:example:a,b")?);
//! assert!(!equivalent("urn:example:abc", "urn:example:ABC")?);
//!
//! // Malformed input is a typed error, never a panic.
//! assert!(matches!(
//!     Urn::parse("urn:x:abc"),
//!     Err(UrnError::NidLength { .. })
//! ));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::str::FromStr;

/// Maximum accepted length of a URN, in bytes (8 KiB).
///
/// Longer inputs are rejected with [`UrnError::TooLong`] before any
/// allocation takes place.
pub const MAX_URN_LEN: usize = 8 * 1024;

/// Minimum length of a NID, in characters.
const NID_MIN: usize = 2;
/// Maximum length of a NID, in characters.
const NID_MAX: usize = 32;
/// Longest prefix of an offending NID echoed back in error messages.
const NID_DISPLAY_MAX: usize = 40;

/// The syntactic parts of a URN, used to locate parse errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UrnPart {
    /// The leading `urn:` scheme.
    Scheme,
    /// The namespace identifier between the first and second colon.
    Nid,
    /// The namespace-specific string following the NID.
    Nss,
    /// The resolution component introduced by `?+`.
    RComponent,
    /// The query component introduced by `?=`.
    QComponent,
    /// The fragment component introduced by `#`.
    FComponent,
}

impl fmt::Display for UrnPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrnPart::Scheme => "scheme",
            UrnPart::Nid => "NID",
            UrnPart::Nss => "NSS",
            UrnPart::RComponent => "r-component",
            UrnPart::QComponent => "q-component",
            UrnPart::FComponent => "f-component",
        })
    }
}

/// Why a string is not a syntactically valid URN.
///
/// All offsets are zero-based byte offsets into the original input.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrnError {
    /// The input is longer than [`MAX_URN_LEN`] bytes.
    TooLong {
        /// Length of the rejected input, in bytes.
        len: usize,
        /// The maximum accepted length ([`MAX_URN_LEN`]).
        max: usize,
    },
    /// The input contains a non-ASCII byte or an ASCII control byte.
    InvalidByte {
        /// Offset of the offending byte.
        offset: usize,
        /// The offending byte.
        byte: u8,
    },
    /// The input does not begin with `urn:` (in any ASCII case).
    NotUrn,
    /// The NID contains a character other than an ASCII letter, digit or
    /// hyphen.
    InvalidNidChar {
        /// Offset of the offending character.
        offset: usize,
        /// The offending character.
        ch: char,
    },
    /// The NID is shorter than 2 or longer than 32 characters.
    NidLength {
        /// The NID as written.
        nid: String,
        /// Offset at which the NID starts.
        offset: usize,
    },
    /// The NID begins or ends with a hyphen.
    NidHyphen {
        /// The NID as written.
        nid: String,
        /// Offset of the offending hyphen.
        offset: usize,
    },
    /// The NID is not followed by the `:` that introduces the NSS.
    MissingNssSeparator {
        /// Offset at which the `:` was expected (the end of the input).
        offset: usize,
    },
    /// The NSS is empty.
    EmptyNss {
        /// Offset at which the NSS should start.
        offset: usize,
    },
    /// The r-component or q-component is empty (the f-component may be
    /// empty).
    EmptyComponent {
        /// Which component is empty.
        part: UrnPart,
        /// Offset at which the component should start.
        offset: usize,
    },
    /// A part starts with a character that is allowed inside it but not at
    /// its start (`/` for the NSS; `/` or `?` for the r- and q-components).
    InvalidLeadingChar {
        /// The part concerned.
        part: UrnPart,
        /// Offset of the offending character.
        offset: usize,
        /// The offending character.
        ch: char,
    },
    /// A part contains a character that is not allowed in it.
    InvalidChar {
        /// The part concerned.
        part: UrnPart,
        /// Offset of the offending character.
        offset: usize,
        /// The offending character.
        ch: char,
    },
    /// A `%` is not followed by two hexadecimal digits.
    InvalidPercentEncoding {
        /// The part concerned.
        part: UrnPart,
        /// Offset of the `%`.
        offset: usize,
    },
    /// A `?` after the NSS is not followed by `+` or `=`.
    BareQuestionMark {
        /// Offset of the `?`.
        offset: usize,
    },
}

impl UrnError {
    /// Byte offset of the error in the input, when it has one.
    #[must_use]
    pub fn offset(&self) -> Option<usize> {
        match self {
            UrnError::TooLong { .. } | UrnError::NotUrn => None,
            UrnError::InvalidByte { offset, .. }
            | UrnError::InvalidNidChar { offset, .. }
            | UrnError::NidLength { offset, .. }
            | UrnError::NidHyphen { offset, .. }
            | UrnError::MissingNssSeparator { offset }
            | UrnError::EmptyNss { offset }
            | UrnError::EmptyComponent { offset, .. }
            | UrnError::InvalidLeadingChar { offset, .. }
            | UrnError::InvalidChar { offset, .. }
            | UrnError::InvalidPercentEncoding { offset, .. }
            | UrnError::BareQuestionMark { offset } => Some(*offset),
        }
    }

    /// The part of the URN the error is located in, when known.
    #[must_use]
    pub fn part(&self) -> Option<UrnPart> {
        match self {
            UrnError::TooLong { .. } | UrnError::InvalidByte { .. } => None,
            UrnError::NotUrn => Some(UrnPart::Scheme),
            UrnError::InvalidNidChar { .. }
            | UrnError::NidLength { .. }
            | UrnError::NidHyphen { .. }
            | UrnError::MissingNssSeparator { .. } => Some(UrnPart::Nid),
            UrnError::EmptyNss { .. } | UrnError::BareQuestionMark { .. } => Some(UrnPart::Nss),
            UrnError::EmptyComponent { part, .. }
            | UrnError::InvalidLeadingChar { part, .. }
            | UrnError::InvalidChar { part, .. }
            | UrnError::InvalidPercentEncoding { part, .. } => Some(*part),
        }
    }
}

/// Writes `nid` between backticks, shortened if it is very long.
fn write_nid(f: &mut fmt::Formatter<'_>, nid: &str) -> fmt::Result {
    match nid.get(..NID_DISPLAY_MAX) {
        Some(head) if nid.len() > NID_DISPLAY_MAX => write!(f, "`{head}...`"),
        _ => write!(f, "`{nid}`"),
    }
}

impl fmt::Display for UrnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrnError::TooLong { len, max } => {
                write!(f, "URN is {len} bytes long, the maximum is {max}")
            }
            UrnError::InvalidByte { offset, byte } => {
                let kind = if byte.is_ascii() { "control" } else { "non-ASCII" };
                write!(f, "{kind} byte 0x{byte:02X} at byte {offset} in URN")
            }
            UrnError::NotUrn => f.write_str("input does not start with the `urn:` scheme"),
            UrnError::InvalidNidChar { offset, ch } => write!(
                f,
                "invalid character `{}` at byte {offset} in URN NID \
                 (only ASCII letters, digits and `-` are allowed)",
                ch.escape_default()
            ),
            UrnError::NidLength { nid, offset } => {
                f.write_str("URN NID ")?;
                write_nid(f, nid)?;
                write!(f, " at byte {offset} must be {NID_MIN} to {NID_MAX} characters")
            }
            UrnError::NidHyphen { nid, offset } => {
                f.write_str("URN NID ")?;
                write_nid(f, nid)?;
                write!(f, " must not begin or end with `-` (hyphen at byte {offset})")
            }
            UrnError::MissingNssSeparator { offset } => {
                write!(f, "missing `:` between NID and NSS (expected at byte {offset})")
            }
            UrnError::EmptyNss { offset } => write!(f, "empty NSS at byte {offset}"),
            UrnError::EmptyComponent { part, offset } => {
                write!(f, "empty {part} at byte {offset}")
            }
            UrnError::InvalidLeadingChar { part, offset, ch } => write!(
                f,
                "{part} must not begin with `{}` (byte {offset})",
                ch.escape_default()
            ),
            UrnError::InvalidChar { part, offset, ch } => write!(
                f,
                "invalid character `{}` at byte {offset} in {part}",
                ch.escape_default()
            ),
            UrnError::InvalidPercentEncoding { part, offset } => {
                write!(f, "invalid percent-encoding at byte {offset} in {part}")
            }
            UrnError::BareQuestionMark { offset } => {
                write!(f, "`?` at byte {offset} after NSS must be followed by `+` or `=`")
            }
        }
    }
}

impl std::error::Error for UrnError {}

/// A syntactically valid URN, as defined by RFC 8141 §2.
///
/// The original text is kept verbatim; accessors return slices of it.
///
/// Equality (`==`), ordering and hashing are *structural*: they compare the
/// exact input text, so `urn:example:a` and `URN:example:a` are different
/// values. URN-equivalence (RFC 8141 §3) is provided by
/// [`Urn::is_equivalent`] and [`Urn::equivalence_key`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Urn {
    /// The full input text.
    raw: String,
    /// End of the NID (exclusive); the NID starts at byte 4.
    nid_end: usize,
    /// End of the NSS (exclusive); the NSS starts at `nid_end + 1`.
    nss_end: usize,
    /// Byte range of the r-component (without `?+`).
    r: Option<(usize, usize)>,
    /// Byte range of the q-component (without `?=`).
    q: Option<(usize, usize)>,
    /// Byte range of the f-component (without `#`).
    f: Option<(usize, usize)>,
}

/// Byte offset where the NID starts (right after `urn:`).
const NID_START: usize = 4;

/// Returns whether `b` is a `pchar` other than a percent-encoding, i.e. an
/// RFC 3986 unreserved or sub-delims character, `:` or `@`.
fn is_pchar_literal(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

/// Checks that the `%` at `pos` is followed by two hexadecimal digits.
fn check_pct(bytes: &[u8], pos: usize, part: UrnPart) -> Result<(), UrnError> {
    match (bytes.get(pos + 1), bytes.get(pos + 2)) {
        (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => Ok(()),
        _ => Err(UrnError::InvalidPercentEncoding { part, offset: pos }),
    }
}

/// Scans a run of `pchar` / `/` (and `?` when `allow_qmark`) starting at
/// `start`, stopping at the end of input or at a byte for which `stop`
/// returns true. The first character must be a `pchar`. Returns the end of
/// the run (exclusive); an empty run is returned as `start` without error so
/// that the caller can report emptiness in its own terms.
fn scan_component(
    bytes: &[u8],
    start: usize,
    part: UrnPart,
    allow_qmark: bool,
    stop: impl Fn(&[u8], usize) -> bool,
) -> Result<usize, UrnError> {
    let mut pos = start;
    while let Some(&b) = bytes.get(pos) {
        if stop(bytes, pos) {
            break;
        }
        if b == b'%' {
            check_pct(bytes, pos, part)?;
            pos += 3;
            continue;
        }
        let allowed_inner = b == b'/' || (allow_qmark && b == b'?');
        if allowed_inner && pos == start {
            return Err(UrnError::InvalidLeadingChar {
                part,
                offset: pos,
                ch: char::from(b),
            });
        }
        if !(allowed_inner || is_pchar_literal(b)) {
            return Err(UrnError::InvalidChar {
                part,
                offset: pos,
                ch: char::from(b),
            });
        }
        pos += 1;
    }
    Ok(pos)
}

impl Urn {
    /// Parses `input` as an RFC 8141 URN.
    ///
    /// See the [module documentation](self) for the accepted syntax.
    ///
    /// # Errors
    ///
    /// Returns a [`UrnError`] describing the first problem found, with the
    /// byte offset at which it occurs.
    pub fn parse(input: &str) -> Result<Urn, UrnError> {
        if input.len() > MAX_URN_LEN {
            return Err(UrnError::TooLong {
                len: input.len(),
                max: MAX_URN_LEN,
            });
        }
        let bytes = input.as_bytes();
        // After this check every byte is printable ASCII, so every byte
        // offset is a char boundary.
        if let Some(offset) = bytes.iter().position(|&b| !b.is_ascii() || b.is_ascii_control()) {
            let byte = bytes.get(offset).copied().unwrap_or_default();
            return Err(UrnError::InvalidByte { offset, byte });
        }
        match bytes.get(..NID_START) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"urn:") => {}
            _ => return Err(UrnError::NotUrn),
        }

        // NID.
        let mut pos = NID_START;
        while let Some(&b) = bytes.get(pos) {
            if b.is_ascii_alphanumeric() || b == b'-' {
                pos += 1;
            } else {
                break;
            }
        }
        let nid_end = pos;
        let nid = input.get(NID_START..nid_end).unwrap_or_default();
        match bytes.get(nid_end) {
            Some(b':') => {}
            Some(&b) => {
                return Err(UrnError::InvalidNidChar {
                    offset: nid_end,
                    ch: char::from(b),
                })
            }
            None if nid.is_empty() => {
                return Err(UrnError::NidLength {
                    nid: String::new(),
                    offset: NID_START,
                })
            }
            None => return Err(UrnError::MissingNssSeparator { offset: nid_end }),
        }
        if !(NID_MIN..=NID_MAX).contains(&nid.len()) {
            return Err(UrnError::NidLength {
                nid: nid.to_owned(),
                offset: NID_START,
            });
        }
        if nid.starts_with('-') {
            return Err(UrnError::NidHyphen {
                nid: nid.to_owned(),
                offset: NID_START,
            });
        }
        if nid.ends_with('-') {
            return Err(UrnError::NidHyphen {
                nid: nid.to_owned(),
                offset: nid_end - 1,
            });
        }

        // NSS.
        let nss_start = nid_end + 1;
        let nss_end = scan_component(bytes, nss_start, UrnPart::Nss, false, |s, i| {
            matches!(s.get(i), Some(b'?' | b'#'))
        })?;
        if nss_end == nss_start {
            return Err(UrnError::EmptyNss { offset: nss_start });
        }
        let mut pos = nss_end;

        // Optional "?+" r-component, ending at the first "?=" or "#".
        let mut r = None;
        if bytes.get(pos) == Some(&b'?') {
            match bytes.get(pos + 1) {
                Some(b'+') => {
                    let start = pos + 2;
                    let end = scan_component(bytes, start, UrnPart::RComponent, true, |s, i| match s.get(i) {
                        Some(b'#') => true,
                        Some(b'?') => s.get(i + 1) == Some(&b'='),
                        _ => false,
                    })?;
                    if end == start {
                        return Err(UrnError::EmptyComponent {
                            part: UrnPart::RComponent,
                            offset: start,
                        });
                    }
                    r = Some((start, end));
                    pos = end;
                }
                Some(b'=') => {}
                _ => return Err(UrnError::BareQuestionMark { offset: pos }),
            }
        }

        // Optional "?=" q-component, ending at the first "#".
        let mut q = None;
        if bytes.get(pos) == Some(&b'?') {
            if bytes.get(pos + 1) != Some(&b'=') {
                return Err(UrnError::BareQuestionMark { offset: pos });
            }
            let start = pos + 2;
            let end = scan_component(bytes, start, UrnPart::QComponent, true, |s, i| s.get(i) == Some(&b'#'))?;
            if end == start {
                return Err(UrnError::EmptyComponent {
                    part: UrnPart::QComponent,
                    offset: start,
                });
            }
            q = Some((start, end));
            pos = end;
        }

        // Optional "#" f-component, which may be empty and runs to the end.
        let mut f = None;
        if bytes.get(pos) == Some(&b'#') {
            let start = pos + 1;
            let mut i = start;
            while let Some(&b) = bytes.get(i) {
                if b == b'%' {
                    check_pct(bytes, i, UrnPart::FComponent)?;
                    i += 3;
                } else if is_pchar_literal(b) || b == b'/' || b == b'?' {
                    i += 1;
                } else {
                    return Err(UrnError::InvalidChar {
                        part: UrnPart::FComponent,
                        offset: i,
                        ch: char::from(b),
                    });
                }
            }
            f = Some((start, i));
            pos = i;
        }

        if pos != bytes.len() {
            // Defensive: every branch above consumes through the end of the
            // input or stops only before a delimiter that a later branch
            // handles, so this is not expected to be reached.
            let ch = bytes.get(pos).map_or('?', |&b| char::from(b));
            return Err(UrnError::InvalidChar {
                part: UrnPart::Nss,
                offset: pos,
                ch,
            });
        }

        Ok(Urn {
            raw: input.to_owned(),
            nid_end,
            nss_end,
            r,
            q,
            f,
        })
    }

    /// Returns the slice of the input between `start` and `end`.
    fn slice(&self, start: usize, end: usize) -> &str {
        self.raw.get(start..end).unwrap_or_default()
    }

    /// Returns the slice for an optional component range.
    fn component(&self, range: Option<(usize, usize)>) -> Option<&str> {
        range.map(|(s, e)| self.slice(s, e))
    }

    /// The namespace identifier, exactly as written (not case-folded).
    #[must_use]
    pub fn nid(&self) -> &str {
        self.slice(NID_START, self.nid_end)
    }

    /// The namespace-specific string, exactly as written (escapes are not
    /// decoded nor normalized).
    #[must_use]
    pub fn nss(&self) -> &str {
        self.slice(self.nid_end + 1, self.nss_end)
    }

    /// The r-component (without its `?+` prefix), if present.
    #[must_use]
    pub fn r_component(&self) -> Option<&str> {
        self.component(self.r)
    }

    /// The q-component (without its `?=` prefix), if present.
    #[must_use]
    pub fn q_component(&self) -> Option<&str> {
        self.component(self.q)
    }

    /// The f-component (without its `#` prefix), if present. It may be the
    /// empty string, for a URN that ends with `#`.
    #[must_use]
    pub fn f_component(&self) -> Option<&str> {
        self.component(self.f)
    }

    /// The full URN, exactly as parsed.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The assigned name (`urn:` NID `:` NSS) exactly as written, without
    /// the r-, q- and f-components.
    #[must_use]
    pub fn assigned_name(&self) -> &str {
        self.slice(0, self.nss_end)
    }

    /// The NSS with the hex digits of each percent-encoded triplet
    /// uppercased, byte by byte.
    fn normalized_nss(&self) -> impl Iterator<Item = u8> + '_ {
        let mut hex_left = 0u8;
        self.nss().bytes().map(move |b| {
            if hex_left > 0 {
                hex_left -= 1;
                b.to_ascii_uppercase()
            } else {
                if b == b'%' {
                    hex_left = 2;
                }
                b
            }
        })
    }

    /// The RFC 8141 §3 equivalence key: `urn:`, the lowercased NID, `:`,
    /// and the NSS with the hexadecimal digits of percent-encodings
    /// uppercased (never decoded). The r-, q- and f-components are dropped.
    ///
    /// Two URNs are URN-equivalent exactly when their keys are equal. The
    /// key is itself a valid URN whose key is itself.
    #[must_use]
    pub fn equivalence_key(&self) -> UrnKey {
        let nid = self.nid();
        let mut key = String::with_capacity(self.nss_end);
        key.push_str("urn:");
        key.extend(nid.chars().map(|c| c.to_ascii_lowercase()));
        key.push(':');
        key.extend(self.normalized_nss().map(char::from));
        UrnKey(key)
    }

    /// Whether `self` and `other` are URN-equivalent (RFC 8141 §3).
    ///
    /// Equivalent to comparing [`Urn::equivalence_key`]s, without
    /// allocating.
    #[must_use]
    pub fn is_equivalent(&self, other: &Urn) -> bool {
        self.nid().eq_ignore_ascii_case(other.nid())
            && self.nss().len() == other.nss().len()
            && self.normalized_nss().eq(other.normalized_nss())
    }
}

impl FromStr for Urn {
    type Err = UrnError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Urn::parse(s)
    }
}

impl TryFrom<&str> for Urn {
    type Error = UrnError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Urn::parse(s)
    }
}

impl fmt::Display for Urn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl AsRef<str> for Urn {
    fn as_ref(&self) -> &str {
        &self.raw
    }
}

/// The normalized assigned name of a URN, as produced by
/// [`Urn::equivalence_key`].
///
/// Two URNs are URN-equivalent exactly when their keys compare equal, which
/// makes this type suitable as a key in hash maps and caches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UrnKey(String);

impl UrnKey {
    /// The key as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the key and returns the underlying string.
    #[must_use]
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for UrnKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for UrnKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<UrnKey> for String {
    fn from(key: UrnKey) -> String {
        key.0
    }
}

/// Parses `a` and `b` and reports whether they are URN-equivalent
/// (RFC 8141 §3).
///
/// # Errors
///
/// Returns the [`UrnError`] of the first argument that fails to parse
/// (`a` is checked before `b`).
pub fn equivalent(a: &str, b: &str) -> Result<bool, UrnError> {
    let a = Urn::parse(a)?;
    let b = Urn::parse(b)?;
    Ok(a.is_equivalent(&b))
}
