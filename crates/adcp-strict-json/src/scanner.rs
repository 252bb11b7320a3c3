//! The RFC 8259 scanner: one pass over the bytes, no recursion.
//!
//! The container path is an explicit bit stack (one bit per open array or
//! object) plus one [`ObjectScope`] per open object, so arbitrarily deep
//! input cannot overflow the call stack, and the depth limit is checked
//! before a container is entered. Value strings are validated in place;
//! only member names are unescaped, into the [`NameStore`].

use crate::duplicates::{Name, NameStore, ObjectScope, Source, MAX_INPUT_LEN};
use crate::error::{DuplicateKeys, StrictJsonError};
use crate::limits::Limits;
use smallvec::SmallVec;

/// Largest accepted number magnitude: `f64::MAX` (1.7976931348623157e308)
/// less a relative margin of about 1e-14; see [`Scanner::number`].
const MAX_MAGNITUDE: f64 = 1.797_693_134_862_3e308;

/// A number without exponent and with at most this many integer digits is
/// below [`MAX_MAGNITUDE`] without parsing it.
const SAFE_INT_DIGITS: usize = 308;

/// Bytes that end a run of plain string content: `"`, `\\` and the
/// control characters U+0000–U+001F.
const STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Container kinds of the open path, one bit per level (1 = object). The
/// first 128 levels live inline: typical documents allocate nothing here.
#[derive(Debug, Default)]
struct Path {
    bits: SmallVec<[u64; 2]>,
    depth: usize,
}

impl Path {
    fn push(&mut self, object: bool) {
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if word == self.bits.len() {
            self.bits.push(0);
        }
        if let Some(w) = self.bits.get_mut(word) {
            if object {
                *w |= 1 << bit;
            } else {
                *w &= !(1 << bit);
            }
        }
        self.depth += 1;
    }

    /// The innermost container: `Some(true)` for an object.
    fn top(&self) -> Option<bool> {
        let d = self.depth.checked_sub(1)?;
        self.bits.get(d / 64).map(|w| w & (1 << (d % 64)) != 0)
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

pub(crate) struct Scanner<'a> {
    input: &'a [u8],
    pos: usize,
    limits: &'a Limits,
    path: Path,
    /// Inline for four nested objects: a webhook body's usual depth.
    objects: SmallVec<[ObjectScope; 4]>,
    names: NameStore,
    dups: Option<DuplicateKeys>,
}

type Result<T> = std::result::Result<T, StrictJsonError>;

/// Checks `json` against `limits`; see [`crate::check`].
pub(crate) fn scan(json: &[u8], limits: &Limits) -> Result<()> {
    let max_len = limits.max_len.min(MAX_INPUT_LEN);
    if json.len() > max_len {
        return Err(StrictJsonError::TooLong { max: max_len });
    }
    if let Err(e) = std::str::from_utf8(json) {
        return Err(StrictJsonError::Syntax {
            offset: e.valid_up_to(),
            reason: "invalid UTF-8",
        });
    }
    let mut scanner = Scanner {
        input: json,
        pos: 0,
        limits,
        path: Path::default(),
        objects: SmallVec::new(),
        names: NameStore::default(),
        dups: None,
    };
    scanner.document()?;
    match scanner.dups {
        Some(d) => Err(StrictJsonError::DuplicateKeys(d)),
        None => Ok(()),
    }
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn syntax_at(offset: usize, reason: &'static str) -> StrictJsonError {
        StrictJsonError::Syntax { offset, reason }
    }

    fn syntax(&self, reason: &'static str) -> StrictJsonError {
        Self::syntax_at(self.pos, reason)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The whole input: optional whitespace, one value, optional whitespace.
    fn document(&mut self) -> Result<()> {
        if self.input.starts_with(b"\xEF\xBB\xBF") {
            return Err(self.syntax("byte-order mark before the JSON value"));
        }
        self.skip_ws();
        'value: loop {
            // One value starts at `self.pos` (whitespace already skipped).
            match self.peek() {
                Some(b'{') => {
                    self.open(true)?;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.close();
                    } else {
                        self.member_name()?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open(false)?;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.close();
                    } else {
                        continue 'value;
                    }
                }
                Some(b'"') => {
                    self.string(false)?;
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(_) => return Err(self.syntax("expected a JSON value")),
                None => return Err(self.syntax("unexpected end of input, expected a JSON value")),
            }
            // A value is complete: close containers until one continues.
            loop {
                self.skip_ws();
                let Some(in_object) = self.path.top() else {
                    return match self.peek() {
                        None => Ok(()),
                        Some(_) => Err(self.syntax("trailing characters after the JSON value")),
                    };
                };
                match (self.peek(), in_object) {
                    (Some(b','), false) => {
                        self.pos += 1;
                        self.skip_ws();
                        continue 'value;
                    }
                    (Some(b','), true) => {
                        self.pos += 1;
                        self.skip_ws();
                        self.member_name()?;
                        continue 'value;
                    }
                    (Some(b']'), false) | (Some(b'}'), true) => self.close(),
                    (None, _) => return Err(self.syntax("unexpected end of input in a container")),
                    (Some(_), false) => return Err(self.syntax("expected ',' or ']'")),
                    (Some(_), true) => return Err(self.syntax("expected ',' or '}'")),
                }
            }
        }
    }

    /// Enters the container whose opening bracket is at `self.pos`.
    fn open(&mut self, object: bool) -> Result<()> {
        if self.path.depth >= self.limits.max_depth {
            return Err(StrictJsonError::TooDeep {
                max: self.limits.max_depth,
            });
        }
        self.path.push(object);
        if object {
            self.objects.push(self.names.open());
        }
        self.pos += 1;
        Ok(())
    }

    /// Leaves the innermost container; its closing bracket is at `self.pos`.
    fn close(&mut self) {
        if self.path.top() == Some(true) {
            if let Some(scope) = self.objects.pop() {
                self.names.close(&scope);
            }
        }
        self.path.pop();
        self.pos += 1;
    }

    /// A member name, the name separator and the whitespace after it.
    fn member_name(&mut self) -> Result<()> {
        if self.peek() != Some(b'"') {
            return Err(self.syntax("expected a member name string"));
        }
        let offset = self.pos;
        let (source, start, end) = self.string(true)?;
        let name = Name {
            source,
            start,
            end,
            offset,
        };
        if let Some(scope) = self.objects.last_mut() {
            self.names.finish_name(self.input, scope, name, &mut self.dups);
        }
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.syntax("expected ':' after a member name"));
        }
        self.pos += 1;
        self.skip_ws();
        Ok(())
    }

    /// A string whose opening quote is at `self.pos`. For a member name
    /// (`key`), returns where its unescaped bytes are: the input itself if
    /// it has no escapes, else the name store's arena, which the name is
    /// unescaped into as it is scanned. (Value strings are only validated;
    /// their return value is meaningless.)
    fn string(&mut self, key: bool) -> Result<(Source, usize, usize)> {
        let open = self.pos;
        let first = open + 1;
        // Bytes past the longest allowed string are never looked at.
        let window_end = first
            .saturating_add(self.limits.max_string_len)
            .saturating_add(1)
            .min(self.input.len());
        let arena_start = self.names.arena_len();
        let mut escaped = false;
        self.pos = first;
        let mut run = first;
        loop {
            let window = self.input.get(self.pos..window_end).unwrap_or_default();
            let Some(n) = window.iter().position(|&b| STRING_STOP[usize::from(b)]) else {
                if window_end < self.input.len() {
                    return Err(StrictJsonError::StringTooLong {
                        offset: open,
                        max: self.limits.max_string_len,
                    });
                }
                self.pos = window_end;
                return Err(self.syntax("unterminated string"));
            };
            self.pos += n;
            match self.peek() {
                Some(b'"') => {
                    let end = self.pos;
                    if end - first > self.limits.max_string_len {
                        return Err(StrictJsonError::StringTooLong {
                            offset: open,
                            max: self.limits.max_string_len,
                        });
                    }
                    self.pos += 1;
                    if !escaped {
                        return Ok((Source::Input, first, end));
                    }
                    self.names.push_slice(self.input.get(run..end).unwrap_or_default());
                    return Ok((Source::Arena, arena_start, self.names.arena_len()));
                }
                Some(b'\\') => {
                    if key {
                        self.names.push_slice(self.input.get(run..self.pos).unwrap_or_default());
                        escaped = true;
                    }
                    let c = self.escape()?;
                    if key {
                        self.names.push_char(c);
                    }
                    run = self.pos;
                }
                _ => return Err(self.syntax("unescaped control character in string")),
            }
        }
    }

    /// The escape sequence whose backslash is at `self.pos`; returns the
    /// character it denotes. A `\u` high surrogate must be followed
    /// immediately by a `\u` low surrogate; lone surrogates are rejected.
    fn escape(&mut self) -> Result<char> {
        let at = self.pos;
        self.pos += 1;
        let Some(e) = self.peek() else {
            return Err(self.syntax("unterminated escape sequence"));
        };
        self.pos += 1;
        let c = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{08}',
            b'f' => '\u{0C}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                let scalar = match unit {
                    0xD800..=0xDBFF => {
                        if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(Self::syntax_at(at, "lone high surrogate escape"));
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Self::syntax_at(
                                at,
                                "high surrogate escape not followed by a low surrogate",
                            ));
                        }
                        0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(Self::syntax_at(at, "lone low surrogate escape")),
                    _ => unit,
                };
                match char::from_u32(scalar) {
                    Some(c) => c,
                    None => return Err(Self::syntax_at(at, "invalid unicode escape")),
                }
            }
            _ => return Err(Self::syntax_at(at + 1, "invalid escape character")),
        };
        Ok(c)
    }

    /// Four hex digits at `self.pos`.
    fn hex4(&mut self) -> Result<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                Some(_) => return Err(self.syntax("expected a hex digit in \\u escape")),
                None => return Err(self.syntax("unterminated \\u escape")),
            };
            v = (v << 4) | u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        let end = self.pos.saturating_add(word.len());
        if self.input.get(self.pos..end) != Some(word) {
            return Err(self.syntax("invalid literal (expected true, false or null)"));
        }
        self.pos = end;
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    ///
    /// The grammar alone admits numbers no IEEE-754 double holds; parsers
    /// then disagree (infinity, error, big number), a parser differential
    /// like duplicate keys. Numbers whose magnitude, correctly rounded to a
    /// double, exceeds [`MAX_MAGNITUDE`] are therefore rejected. The bound
    /// sits about 70 ulps below `f64::MAX` because parsers that do not
    /// round correctly overflow a few ulps early: `serde_json`'s default
    /// float parser refuses `179769313486231570000000000000000e276`, which
    /// is `f64::MAX` exactly (its error is at most ~1.5 ulp, far inside
    /// the margin). Tiny magnitudes are fine: they underflow to zero
    /// everywhere.
    fn number(&mut self) -> Result<()> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.syntax("leading zero in number"));
                }
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.syntax("expected a digit")),
        };
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit after the decimal point"));
            }
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = self.peek() {
            exponent = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("expected a digit in the exponent"));
            }
        }
        if exponent || int_digits > SAFE_INT_DIGITS {
            let text = self.input.get(start..self.pos).unwrap_or_default();
            let value = std::str::from_utf8(text).ok().and_then(|t| t.parse::<f64>().ok());
            match value {
                Some(v) if v.abs() <= MAX_MAGNITUDE => {}
                _ => {
                    return Err(Self::syntax_at(
                        start,
                        "number out of range (magnitude above 1.7976931348623e308)",
                    ))
                }
            }
        }
        Ok(())
    }
}
