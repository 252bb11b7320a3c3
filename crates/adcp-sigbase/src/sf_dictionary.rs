//! A strict RFC 8941 §4.2.2 Dictionary parser that keeps raw spans.
//!
//! `sfv` cannot be used for `Signature` or `Content-Digest`: the AdCP webhook
//! v1 and legacy request profiles put Base64URL between the colons, which
//! `sfv` rejects, and it decodes real byte sequences leniently and keeps only
//! the last of duplicate keys. This parser follows the RFC 8941 parsing
//! algorithms step by step (keys, parameters, inner lists and every
//! bare-item type), with one extension: a byte sequence may contain the
//! URL-safe characters `-` and `_` as well as the standard ones. It does not
//! decode; it returns each member's key and, for byte sequences, the span of
//! the raw text between the colons, so that the strict decoder the caller
//! selected judges it. Parameters are parsed (they must be well-formed) and
//! dropped, except that their presence is reported and the spans of byte
//! sequences among their values are kept, so a caller can reject them or
//! decode them too. Duplicate keys are kept; what they mean is the caller's
//! decision.
//!
//! [`members`] parses lazily, one member per step, so a caller can reject a
//! member before the rest of the field is read; [`parse`] reads the whole
//! field and checks first that it is ASCII.

use std::fmt;

/// Where an RFC 8941 Dictionary parse failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyntaxErrorKind {
    /// A byte outside ASCII (RFC 8941 §4.2 step 1).
    NonAscii,
    /// A key does not start with a lowercase letter or `*` (so `SHA-256` is
    /// not a key at all), or a `;` is not followed by a key.
    InvalidKey,
    /// Something other than `,` after a member.
    ExpectedComma,
    /// The field ends with a `,`.
    TrailingComma,
    /// A character that starts no bare item.
    InvalidItem,
    /// An Integer or Decimal breaks the RFC 8941 §4.2.4 rules (length,
    /// missing digits, fraction).
    InvalidNumber,
    /// A String contains a control or non-ASCII byte or a bad escape.
    InvalidString,
    /// A String has no closing `"`.
    UnterminatedString,
    /// A Byte Sequence contains a character of neither Base64 alphabet.
    InvalidByteSequence,
    /// A Byte Sequence has no closing `:`.
    UnterminatedByteSequence,
    /// `?` not followed by `0` or `1`.
    InvalidBoolean,
    /// An Inner List item not followed by a space or `)`.
    InvalidInnerList,
    /// An Inner List has no closing `)`.
    UnterminatedInnerList,
}

impl fmt::Display for SyntaxErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyntaxErrorKind::NonAscii => "non-ASCII byte",
            SyntaxErrorKind::InvalidKey => "key must start with a lowercase letter or '*'",
            SyntaxErrorKind::ExpectedComma => "expected ',' after a member",
            SyntaxErrorKind::TrailingComma => "trailing ','",
            SyntaxErrorKind::InvalidItem => "no item starts with this character",
            SyntaxErrorKind::InvalidNumber => "invalid integer or decimal",
            SyntaxErrorKind::InvalidString => "invalid character or escape in string",
            SyntaxErrorKind::UnterminatedString => "unterminated string",
            SyntaxErrorKind::InvalidByteSequence => "invalid character in byte sequence",
            SyntaxErrorKind::UnterminatedByteSequence => "unterminated byte sequence",
            SyntaxErrorKind::InvalidBoolean => "'?' must be followed by 0 or 1",
            SyntaxErrorKind::InvalidInnerList => "inner list items must be separated by spaces",
            SyntaxErrorKind::UnterminatedInnerList => "unterminated inner list",
        })
    }
}

/// What stopped a Dictionary parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The input is not an RFC 8941 Dictionary (Base64URL allowed in byte
    /// sequences).
    Syntax(SyntaxErrorKind),
    /// A member beyond the caller's cap starts.
    TooManyMembers {
        /// The cap.
        max: usize,
    },
}

/// Why and where a Dictionary parse stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DictionaryError {
    /// Byte offset in the input.
    pub(crate) offset: usize,
    /// What is wrong there.
    pub(crate) kind: ErrorKind,
    /// The key of the member whose value or parameters failed, when the
    /// error lies after a successfully read key.
    pub(crate) key: Option<Span>,
}

/// A half-open byte range of the parsed input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// First byte.
    pub(crate) start: usize,
    /// One past the last byte.
    pub(crate) end: usize,
}

impl Span {
    /// The bytes of `input` this span covers (empty if out of range, which
    /// cannot happen for spans of the same input).
    pub(crate) fn of(self, input: &[u8]) -> &[u8] {
        input.get(self.start..self.end).unwrap_or_default()
    }
}

/// A member's value, as far as the binary-valued fields care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawValue {
    /// `:…:`; the span of the text between the colons.
    ByteSequence(Span),
    /// Anything else, by RFC 8941 type name.
    Other(&'static str),
}

/// One dictionary member, by span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawMember {
    /// The key.
    pub(crate) key: Span,
    /// The value (`boolean` for a bare key).
    pub(crate) value: RawValue,
    /// Whether the member's value (item, inner list or bare key) carries
    /// parameters; those of inner-list items do not count.
    pub(crate) parameters: bool,
    /// Spans of the byte sequences among the member's parameter values (and
    /// its inner list's), between the colons.
    pub(crate) parameter_binaries: Vec<Span>,
}

/// Parses `input` as a Dictionary (RFC 8941 §4.2 with `header_type`
/// dictionary), in order, duplicates included. A non-ASCII byte anywhere is
/// reported first; then the first error in field order, where
/// [`ErrorKind::TooManyMembers`] fires as soon as a member beyond
/// `max_members` starts.
pub(crate) fn parse(input: &[u8], max_members: usize) -> Result<Vec<RawMember>, DictionaryError> {
    if let Some(offset) = input.iter().position(|b| !b.is_ascii()) {
        return Err(syntax(offset, SyntaxErrorKind::NonAscii));
    }
    members(input, max_members).collect()
}

/// The members of `input` parsed as a Dictionary, one per step, in order,
/// duplicates included. Each step reads one member (and the separator before
/// it), so a caller that stops early never reads the rest. The first error
/// ends the iteration. There is no up-front ASCII check: a non-ASCII byte
/// fails as the syntax error of wherever it appears.
pub(crate) fn members(input: &[u8], max_members: usize) -> Members<'_> {
    Members {
        cursor: Cursor {
            input,
            pos: 0,
            binaries: Vec::new(),
        },
        max_members,
        count: 0,
        done: false,
    }
}

/// Iterator over the members of a Dictionary; see [`members`].
#[derive(Debug)]
pub(crate) struct Members<'a> {
    /// The parse position.
    cursor: Cursor<'a>,
    /// Most members accepted.
    max_members: usize,
    /// Members read so far.
    count: usize,
    /// Set at the end of the input or after an error.
    done: bool,
}

impl Iterator for Members<'_> {
    type Item = Result<RawMember, DictionaryError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl Members<'_> {
    /// RFC 8941 §4.2.2, one iteration of the loop: the separator after the
    /// previous member (or the leading spaces), then the next member.
    fn step(&mut self) -> Option<Result<RawMember, DictionaryError>> {
        let cursor = &mut self.cursor;
        if self.count == 0 {
            cursor.skip_sp();
            cursor.peek()?;
        } else {
            cursor.skip_ows();
            match cursor.peek()? {
                b',' => cursor.pos += 1,
                _ => return Some(Err(cursor.error(SyntaxErrorKind::ExpectedComma))),
            }
            cursor.skip_ows();
            if cursor.peek().is_none() {
                return Some(Err(cursor.error(SyntaxErrorKind::TrailingComma)));
            }
        }
        if self.count == self.max_members {
            return Some(Err(DictionaryError {
                offset: cursor.pos,
                kind: ErrorKind::TooManyMembers { max: self.max_members },
                key: None,
            }));
        }
        let member = cursor.member();
        if member.is_ok() {
            self.count += 1;
        }
        Some(member)
    }
}

/// A syntax error at `offset`, outside any member's value.
fn syntax(offset: usize, kind: SyntaxErrorKind) -> DictionaryError {
    DictionaryError {
        offset,
        kind: ErrorKind::Syntax(kind),
        key: None,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
        )
}

/// The parse state: the input and a position in it.
#[derive(Debug)]
struct Cursor<'a> {
    /// The whole field value.
    input: &'a [u8],
    /// The next byte to read.
    pos: usize,
    /// Byte sequences seen in parameters since the current member started.
    binaries: Vec<Span>,
}

impl Cursor<'_> {
    /// The byte at the position, if any.
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    /// A syntax error at the position.
    fn error(&self, kind: SyntaxErrorKind) -> DictionaryError {
        syntax(self.pos, kind)
    }

    /// Skips spaces.
    fn skip_sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    /// Skips optional whitespace (spaces and tabs).
    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// One dictionary member (RFC 8941 §4.2.2 steps 1–5): a key and either
    /// `=` with an item or inner list, or parameters (a bare key).
    fn member(&mut self) -> Result<RawMember, DictionaryError> {
        let key = self.key()?;
        let (value, parameters) = self
            .member_value()
            .map_err(|e| DictionaryError { key: Some(key), ..e })?;
        Ok(RawMember {
            key,
            value,
            parameters,
            parameter_binaries: std::mem::take(&mut self.binaries),
        })
    }

    /// What follows a member's key; also returns whether there were
    /// parameters.
    fn member_value(&mut self) -> Result<(RawValue, bool), DictionaryError> {
        if self.peek() == Some(b'=') {
            self.pos += 1;
            self.item_or_inner_list()
        } else {
            let parameters = self.parameters()?;
            Ok((RawValue::Other("boolean"), parameters))
        }
    }

    /// RFC 8941 §4.2.3.3. Returns the key's span.
    fn key(&mut self) -> Result<Span, DictionaryError> {
        let start = self.pos;
        match self.peek() {
            Some(b) if b.is_ascii_lowercase() || b == b'*' => self.pos += 1,
            _ => return Err(self.error(SyntaxErrorKind::InvalidKey)),
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.' | b'*'))
        {
            self.pos += 1;
        }
        Ok(Span { start, end: self.pos })
    }

    /// RFC 8941 §4.2.1.1; also returns whether there were parameters.
    fn item_or_inner_list(&mut self) -> Result<(RawValue, bool), DictionaryError> {
        if self.peek() == Some(b'(') {
            let parameters = self.inner_list()?;
            Ok((RawValue::Other("inner list"), parameters))
        } else {
            self.item()
        }
    }

    /// RFC 8941 §4.2.1.2; returns whether the list itself has parameters.
    fn inner_list(&mut self) -> Result<bool, DictionaryError> {
        self.pos += 1; // '('
        loop {
            self.skip_sp();
            match self.peek() {
                None => return Err(self.error(SyntaxErrorKind::UnterminatedInnerList)),
                Some(b')') => {
                    self.pos += 1;
                    return self.parameters();
                }
                Some(_) => {
                    self.item()?;
                    match self.peek() {
                        Some(b' ' | b')') => {}
                        None => return Err(self.error(SyntaxErrorKind::UnterminatedInnerList)),
                        Some(_) => return Err(self.error(SyntaxErrorKind::InvalidInnerList)),
                    }
                }
            }
        }
    }

    /// RFC 8941 §4.2.3: bare item, then parameters; also returns whether
    /// there were parameters.
    fn item(&mut self) -> Result<(RawValue, bool), DictionaryError> {
        let value = self.bare_item()?;
        let parameters = self.parameters()?;
        Ok((value, parameters))
    }

    /// RFC 8941 §4.2.3.2, parsed and dropped (byte sequences among the values
    /// are recorded); returns whether there was at least one.
    fn parameters(&mut self) -> Result<bool, DictionaryError> {
        let mut any = false;
        while self.peek() == Some(b';') {
            any = true;
            self.pos += 1;
            self.skip_sp();
            self.key()?;
            if self.peek() == Some(b'=') {
                self.pos += 1;
                if let RawValue::ByteSequence(span) = self.bare_item()? {
                    self.binaries.push(span);
                }
            }
        }
        Ok(any)
    }

    /// RFC 8941 §4.2.3.1.
    fn bare_item(&mut self) -> Result<RawValue, DictionaryError> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'"') => self.string().map(|()| RawValue::Other("string")),
            Some(b':') => self.byte_sequence(),
            Some(b'?') => self.boolean().map(|()| RawValue::Other("boolean")),
            Some(b) if b.is_ascii_alphabetic() || b == b'*' => {
                self.token();
                Ok(RawValue::Other("token"))
            }
            _ => Err(self.error(SyntaxErrorKind::InvalidItem)),
        }
    }

    /// RFC 8941 §4.2.4.
    fn number(&mut self) -> Result<RawValue, DictionaryError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.error(SyntaxErrorKind::InvalidNumber));
        }
        let digits_start = self.pos;
        let mut dot: Option<usize> = None;
        while let Some(b) = self.peek() {
            let len = self.pos - digits_start;
            if b.is_ascii_digit() {
                self.pos += 1;
            } else if b == b'.' && dot.is_none() {
                if len > 12 {
                    return Err(syntax(start, SyntaxErrorKind::InvalidNumber));
                }
                dot = Some(self.pos);
                self.pos += 1;
            } else {
                break;
            }
            let len = self.pos - digits_start;
            if (dot.is_none() && len > 15) || len > 16 {
                return Err(syntax(start, SyntaxErrorKind::InvalidNumber));
            }
        }
        match dot {
            None => Ok(RawValue::Other("integer")),
            Some(dot) => {
                let fraction = self.pos - dot - 1;
                if fraction == 0 || fraction > 3 {
                    return Err(syntax(start, SyntaxErrorKind::InvalidNumber));
                }
                Ok(RawValue::Other("decimal"))
            }
        }
    }

    /// RFC 8941 §4.2.5.
    fn string(&mut self) -> Result<(), DictionaryError> {
        let start = self.pos;
        self.pos += 1; // '"'
        loop {
            let Some(b) = self.peek() else {
                return Err(syntax(start, SyntaxErrorKind::UnterminatedString));
            };
            match b {
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\') => self.pos += 1,
                        None => return Err(syntax(start, SyntaxErrorKind::UnterminatedString)),
                        Some(_) => return Err(self.error(SyntaxErrorKind::InvalidString)),
                    }
                }
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                0x00..=0x1f | 0x7f..=0xff => return Err(self.error(SyntaxErrorKind::InvalidString)),
                _ => self.pos += 1,
            }
        }
    }

    /// RFC 8941 §4.2.6.
    fn token(&mut self) {
        self.pos += 1; // ALPHA or '*', checked by the caller
        while self.peek().is_some_and(|b| is_tchar(b) || b == b':' || b == b'/') {
            self.pos += 1;
        }
    }

    /// RFC 8941 §4.2.7, extended to the URL-safe alphabet; not decoded.
    /// (Signatures and digests are long: one table lookup per byte.)
    fn byte_sequence(&mut self) -> Result<RawValue, DictionaryError> {
        let open = self.pos;
        self.pos += 1; // ':'
        let start = self.pos;
        let Some(len) = self.input.get(start..).and_then(|rest| memchr::memchr(b':', rest)) else {
            return Err(syntax(open, SyntaxErrorKind::UnterminatedByteSequence));
        };
        let end = start + len;
        if let Some(bad) = self.input[start..end]
            .iter()
            .position(|&b| !BYTE_SEQUENCE_CHARS[usize::from(b)])
        {
            self.pos = start + bad;
            return Err(self.error(SyntaxErrorKind::InvalidByteSequence));
        }
        self.pos = end + 1;
        Ok(RawValue::ByteSequence(Span { start, end }))
    }

    /// RFC 8941 §4.2.8.
    fn boolean(&mut self) -> Result<(), DictionaryError> {
        self.pos += 1; // '?'
        match self.peek() {
            Some(b'0' | b'1') => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.error(SyntaxErrorKind::InvalidBoolean)),
        }
    }
}

/// Whether `b` may appear in a byte sequence here (either Base64 alphabet
/// or `=`).
pub(crate) fn is_byte_sequence_char(b: u8) -> bool {
    BYTE_SEQUENCE_CHARS[usize::from(b)]
}

/// Whether `key` is an RFC 8941 §3.2 Dictionary key.
pub(crate) fn is_key(key: &[u8]) -> bool {
    match key.split_first() {
        Some((&first, rest)) => {
            (first.is_ascii_lowercase() || first == b'*')
                && rest
                    .iter()
                    .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.' | b'*'))
        }
        None => false,
    }
}

/// The characters of both Base64 alphabets and `=`.
const BYTE_SEQUENCE_CHARS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'-' | b'_');
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    fn ok(input: &str) -> Vec<RawMember> {
        parse(input.as_bytes(), 64).unwrap_or_else(|e| panic!("{input:?}: {e:?}"))
    }

    fn err(input: &str) -> SyntaxErrorKind {
        match parse(input.as_bytes(), 64) {
            Err(DictionaryError {
                kind: ErrorKind::Syntax(kind),
                ..
            }) => kind,
            other => panic!("{input:?}: {other:?}"),
        }
    }

    #[test]
    fn spans_of_byte_sequences() {
        let m = ok("  a=:AQ==:, b-c=:--_:;p=1 ,\t*d=?0");
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].key, span(2, 3));
        assert_eq!(m[0].value, RawValue::ByteSequence(span(5, 9)));
        assert_eq!(m[1].value, RawValue::ByteSequence(span(17, 20)));
        assert_eq!(m[2].value, RawValue::Other("boolean"));
        assert!(m[0].parameter_binaries.is_empty());
        let m = ok("a=:AA==:;p=:AQ==:;q=1;r=:-_:");
        assert_eq!(m[0].parameter_binaries, [span(12, 16), span(25, 27)]);
    }

    #[test]
    fn every_bare_item_type() {
        let m = ok(r#"a=1, b=-1.5, c="x\"y", d=tok/en:1, e=?1, f=(1 "s" :AA==:);q, g;h=*x"#);
        let types: Vec<_> = m.iter().map(|m| m.value).collect();
        assert_eq!(
            types,
            [
                RawValue::Other("integer"),
                RawValue::Other("decimal"),
                RawValue::Other("string"),
                RawValue::Other("token"),
                RawValue::Other("boolean"),
                RawValue::Other("inner list"),
                RawValue::Other("boolean"),
            ]
        );
    }

    #[test]
    fn presence_of_parameters() {
        let has: Vec<bool> = ok("a=:AA==:;p, b=:AA==:, c;x=1, d, e=(1;p), f=(1);p")
            .iter()
            .map(|m| m.parameters)
            .collect();
        assert_eq!(has, [true, false, true, false, false, true]);
        assert_eq!(err("g=1 ;p=2"), SyntaxErrorKind::ExpectedComma);
    }

    #[test]
    fn numbers_follow_rfc_8941_limits() {
        ok("a=999999999999999");
        assert_eq!(err("a=9999999999999999"), SyntaxErrorKind::InvalidNumber);
        ok("a=999999999999.999");
        assert_eq!(err("a=9999999999999.9"), SyntaxErrorKind::InvalidNumber);
        assert_eq!(err("a=1.2345"), SyntaxErrorKind::InvalidNumber);
        assert_eq!(err("a=1."), SyntaxErrorKind::InvalidNumber);
        assert_eq!(err("a=-"), SyntaxErrorKind::InvalidNumber);
        assert_eq!(err("a=1.2.3"), SyntaxErrorKind::ExpectedComma);
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(err("SHA-256=:AA==:"), SyntaxErrorKind::InvalidKey);
        assert_eq!(err("a=:AA==:,"), SyntaxErrorKind::TrailingComma);
        assert_eq!(err("a=:AA==: b=1"), SyntaxErrorKind::ExpectedComma);
        assert_eq!(err("a=:AA=="), SyntaxErrorKind::UnterminatedByteSequence);
        assert_eq!(err("a=:A A:"), SyntaxErrorKind::InvalidByteSequence);
        assert_eq!(err("a=\"x"), SyntaxErrorKind::UnterminatedString);
        assert_eq!(err("a=\"\\x\""), SyntaxErrorKind::InvalidString);
        assert_eq!(err("a=?2"), SyntaxErrorKind::InvalidBoolean);
        assert_eq!(err("a=(1"), SyntaxErrorKind::UnterminatedInnerList);
        assert_eq!(err("a=(1,2)"), SyntaxErrorKind::InvalidInnerList);
        assert_eq!(err("a=@1"), SyntaxErrorKind::InvalidItem);
        assert_eq!(err("a=\"é\""), SyntaxErrorKind::NonAscii);
        assert_eq!(err("a=1;"), SyntaxErrorKind::InvalidKey);
    }

    #[test]
    fn empty_and_space_only_are_empty_dictionaries() {
        assert!(ok("").is_empty());
        assert!(ok("   ").is_empty());
        assert_eq!(err("\ta=1"), SyntaxErrorKind::InvalidKey);
    }

    #[test]
    fn member_cap() {
        assert_eq!(
            parse(b"a, b, c", 2),
            Err(DictionaryError {
                offset: 6,
                kind: ErrorKind::TooManyMembers { max: 2 },
                key: None,
            })
        );
        assert_eq!(parse(b"a, b", 2).map(|m| m.len()), Ok(2));
        // A separator error comes before the cap, as in field order.
        assert_eq!(
            err_at_cap(b"a, b x", 2),
            ErrorKind::Syntax(SyntaxErrorKind::ExpectedComma)
        );
    }

    fn err_at_cap(input: &[u8], max: usize) -> ErrorKind {
        match parse(input, max) {
            Err(e) => e.kind,
            Ok(m) => panic!("{m:?}"),
        }
    }

    #[test]
    fn lazy_members_stop_at_the_first_error_and_name_its_key() {
        let input = b"a=:AA:, bc=@, d=1";
        let mut it = members(input, 64);
        assert!(matches!(it.next(), Some(Ok(m)) if m.key == span(0, 1)));
        assert_eq!(
            it.next(),
            Some(Err(DictionaryError {
                offset: 11,
                kind: ErrorKind::Syntax(SyntaxErrorKind::InvalidItem),
                key: Some(span(8, 10)),
            }))
        );
        assert_eq!(it.next(), None);
        // Key and separator errors are not inside a member.
        assert!(matches!(
            members(b"A", 64).next(),
            Some(Err(DictionaryError { key: None, .. }))
        ));
        let mut it = members(b"a x", 64);
        assert!(matches!(it.next(), Some(Ok(_))));
        assert!(matches!(it.next(), Some(Err(DictionaryError { key: None, .. }))));
    }

    #[test]
    fn lazy_members_have_no_up_front_ascii_check() {
        let mut it = members("a, b\u{e9}".as_bytes(), 64);
        assert!(matches!(it.next(), Some(Ok(_))));
        assert!(matches!(it.next(), Some(Ok(_))));
        assert!(matches!(
            it.next(),
            Some(Err(DictionaryError {
                offset: 4,
                kind: ErrorKind::Syntax(SyntaxErrorKind::ExpectedComma),
                ..
            }))
        ));
        assert_eq!(err("a, b\u{e9}"), SyntaxErrorKind::NonAscii);
    }
}
