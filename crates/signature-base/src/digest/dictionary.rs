//! A strict RFC 8941 §4.2.2 Dictionary scanner that keeps raw spans.
//!
//! `sfv` cannot be used for `Content-Digest`: the legacy AdCP profiles put
//! Base64URL between the colons, which `sfv` rejects, and it decodes real
//! byte sequences leniently and keeps only the last of duplicate keys. This
//! scanner follows the RFC 8941 parsing algorithms step by step (keys,
//! parameters, inner lists and every bare-item type), with one extension:
//! a byte sequence may contain the URL-safe characters `-` and `_` as well
//! as the standard ones. It does not decode; it returns each member's key
//! and, for byte sequences, the span of the raw text between the colons, so
//! that the strict decoder the caller selected judges it. Parameters are
//! parsed (they must be well-formed) and dropped, except for the spans of
//! byte sequences among their values, which must decode too.

use super::{DigestError, SyntaxErrorKind};

/// A member's value, as far as `Content-Digest` cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RawValue {
    /// `:…:`; the span of the text between the colons.
    ByteSequence { start: usize, end: usize },
    /// Anything else, by RFC 8941 type name.
    Other(&'static str),
}

/// One dictionary member, by span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawMember {
    pub(super) key_start: usize,
    pub(super) key_end: usize,
    pub(super) value: RawValue,
    /// Spans of the byte sequences among the member's parameter values (and
    /// its inner list's), between the colons.
    pub(super) parameter_binaries: Vec<(usize, usize)>,
}

/// Parses `input` as a Dictionary (RFC 8941 §4.2 with `header_type`
/// dictionary), in order, duplicates included. Fails with
/// [`DigestError::TooManyMembers`] as soon as a member beyond `max_members`
/// starts.
pub(super) fn parse(input: &[u8], max_members: usize) -> Result<Vec<RawMember>, DigestError> {
    if let Some(offset) = input.iter().position(|b| !b.is_ascii()) {
        return Err(syntax(offset, SyntaxErrorKind::NonAscii));
    }
    let mut cursor = Cursor {
        input,
        pos: 0,
        binaries: Vec::new(),
    };
    cursor.skip_sp();
    let members = cursor.dictionary(max_members)?;
    cursor.skip_sp();
    if cursor.peek().is_some() {
        return Err(cursor.error(SyntaxErrorKind::ExpectedComma));
    }
    Ok(members)
}

fn syntax(offset: usize, kind: SyntaxErrorKind) -> DigestError {
    DigestError::Syntax { offset, kind }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
        )
}

struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
    /// Byte sequences seen in parameters since the current member started.
    binaries: Vec<(usize, usize)>,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn error(&self, kind: SyntaxErrorKind) -> DigestError {
        syntax(self.pos, kind)
    }

    fn skip_sp(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// RFC 8941 §4.2.2.
    fn dictionary(&mut self, max_members: usize) -> Result<Vec<RawMember>, DigestError> {
        let mut members = Vec::new();
        while self.peek().is_some() {
            if members.len() == max_members {
                return Err(DigestError::TooManyMembers { max: max_members });
            }
            let (key_start, key_end) = self.key()?;
            let value = if self.peek() == Some(b'=') {
                self.pos += 1;
                self.item_or_inner_list()?
            } else {
                self.parameters()?;
                RawValue::Other("boolean")
            };
            members.push(RawMember {
                key_start,
                key_end,
                value,
                parameter_binaries: std::mem::take(&mut self.binaries),
            });
            self.skip_ows();
            match self.peek() {
                None => break,
                Some(b',') => self.pos += 1,
                Some(_) => return Err(self.error(SyntaxErrorKind::ExpectedComma)),
            }
            self.skip_ows();
            if self.peek().is_none() {
                return Err(self.error(SyntaxErrorKind::TrailingComma));
            }
        }
        Ok(members)
    }

    /// RFC 8941 §4.2.3.3. Returns the key's span.
    fn key(&mut self) -> Result<(usize, usize), DigestError> {
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
        Ok((start, self.pos))
    }

    /// RFC 8941 §4.2.1.1.
    fn item_or_inner_list(&mut self) -> Result<RawValue, DigestError> {
        if self.peek() == Some(b'(') {
            self.inner_list()?;
            Ok(RawValue::Other("inner list"))
        } else {
            self.item()
        }
    }

    /// RFC 8941 §4.2.1.2.
    fn inner_list(&mut self) -> Result<(), DigestError> {
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

    /// RFC 8941 §4.2.3: bare item, then parameters.
    fn item(&mut self) -> Result<RawValue, DigestError> {
        let value = self.bare_item()?;
        self.parameters()?;
        Ok(value)
    }

    /// RFC 8941 §4.2.3.2, parsed and dropped.
    fn parameters(&mut self) -> Result<(), DigestError> {
        while self.peek() == Some(b';') {
            self.pos += 1;
            self.skip_sp();
            self.key()?;
            if self.peek() == Some(b'=') {
                self.pos += 1;
                if let RawValue::ByteSequence { start, end } = self.bare_item()? {
                    self.binaries.push((start, end));
                }
            }
        }
        Ok(())
    }

    /// RFC 8941 §4.2.3.1.
    fn bare_item(&mut self) -> Result<RawValue, DigestError> {
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
    fn number(&mut self) -> Result<RawValue, DigestError> {
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
    fn string(&mut self) -> Result<(), DigestError> {
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
    fn byte_sequence(&mut self) -> Result<RawValue, DigestError> {
        let open = self.pos;
        self.pos += 1; // ':'
        let start = self.pos;
        let Some(len) = self.input.iter().skip(start).position(|&b| b == b':') else {
            return Err(syntax(open, SyntaxErrorKind::UnterminatedByteSequence));
        };
        let end = start + len;
        while self.pos < end {
            if !self
                .peek()
                .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
            {
                return Err(self.error(SyntaxErrorKind::InvalidByteSequence));
            }
            self.pos += 1;
        }
        self.pos = end + 1;
        Ok(RawValue::ByteSequence { start, end })
    }

    /// RFC 8941 §4.2.8.
    fn boolean(&mut self) -> Result<(), DigestError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(input: &str) -> Vec<RawMember> {
        parse(input.as_bytes(), 64).unwrap_or_else(|e| panic!("{input:?}: {e}"))
    }

    fn err(input: &str) -> SyntaxErrorKind {
        match parse(input.as_bytes(), 64) {
            Err(DigestError::Syntax { kind, .. }) => kind,
            other => panic!("{input:?}: {other:?}"),
        }
    }

    #[test]
    fn spans_of_byte_sequences() {
        let m = ok("  a=:AQ==:, b-c=:--_:;p=1 ,\t*d=?0");
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].key_start, m[0].key_end), (2, 3));
        assert_eq!(m[0].value, RawValue::ByteSequence { start: 5, end: 9 });
        assert_eq!(m[1].value, RawValue::ByteSequence { start: 17, end: 20 });
        assert_eq!(m[2].value, RawValue::Other("boolean"));
        assert!(m[0].parameter_binaries.is_empty());
        let m = ok("a=:AA==:;p=:AQ==:;q=1;r=:-_:");
        assert_eq!(m[0].parameter_binaries, [(12, 16), (25, 27)]);
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
        assert_eq!(parse(b"a, b, c", 2), Err(DigestError::TooManyMembers { max: 2 }));
        assert_eq!(parse(b"a, b", 2).map(|m| m.len()), Ok(2));
    }
}
