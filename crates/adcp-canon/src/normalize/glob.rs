//! Glob patterns for query-parameter names.
//!
//! The syntax is deliberately tiny:
//!
//! | token | matches |
//! | --- | --- |
//! | `*` | any sequence of characters, including the empty one |
//! | `?` | exactly one character (a Unicode scalar value) |
//! | anything else | itself, case-sensitively |
//!
//! Character classes (`[...]`), alternation (`{a,b}`) and escapes (`\`) are
//! rejected rather than silently treated as literals, so a pattern written
//! for another glob dialect fails loudly. Characters that can never occur in
//! a parameter name after query splitting (`&`, `=`, `#`), whitespace and
//! control characters are rejected as well.
//!
//! Matching uses the iterative two-pointer algorithm: it remembers only the
//! most recent `*` and never backtracks further, so it runs in
//! `O(len(text) * len(pattern))` time in the worst case (linear for patterns
//! with at most one `*`) and constant extra space. There is no exponential
//! blow-up on patterns such as `*a*a*a*a*b`.

use std::fmt;

use super::limits::MAX_GLOB_LEN;

/// A compiled glob pattern matched against query-parameter names.
///
/// ```
/// use adcp_canon::normalize::Glob;
///
/// let utm = Glob::new("utm_*")?;
/// assert!(utm.matches("utm_source"));
/// assert!(!utm.matches("xutm_source"));
///
/// let one = Glob::new("p?")?;
/// assert!(one.matches("p1") && !one.matches("p10"));
/// # Ok::<(), adcp_canon::normalize::GlobError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Token {
    Literal(char),
    AnyChar,
    AnySeq,
}

/// Why a glob pattern was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GlobError {
    /// The pattern is the empty string.
    Empty,
    /// The pattern is longer than [`MAX_GLOB_LEN`] bytes.
    TooLong {
        /// Length of the pattern in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The pattern uses glob syntax this matcher does not support
    /// (`[`, `]`, `{`, `}` or `\`).
    UnsupportedSyntax {
        /// The offending character.
        ch: char,
        /// Its byte offset in the pattern.
        offset: usize,
    },
    /// The pattern contains a character that cannot appear in a parameter
    /// name (`&`, `=`, `#`, whitespace or a control character).
    InvalidChar {
        /// The offending character.
        ch: char,
        /// Its byte offset in the pattern.
        offset: usize,
    },
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty glob pattern"),
            Self::TooLong { len, max } => {
                write!(f, "glob pattern is {len} bytes long, the limit is {max}")
            }
            Self::UnsupportedSyntax { ch, offset } => write!(
                f,
                "unsupported glob syntax {ch:?} at byte {offset} (only `*` and `?` are special)"
            ),
            Self::InvalidChar { ch, offset } => write!(
                f,
                "character {ch:?} at byte {offset} cannot appear in a query parameter name"
            ),
        }
    }
}

impl std::error::Error for GlobError {}

impl Glob {
    /// Compiles `pattern`.
    ///
    /// Consecutive `*` are collapsed into one (they match the same set).
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        if pattern.len() > MAX_GLOB_LEN {
            return Err(GlobError::TooLong {
                len: pattern.len(),
                max: MAX_GLOB_LEN,
            });
        }
        let mut tokens = Vec::with_capacity(pattern.len());
        for (offset, ch) in pattern.char_indices() {
            let token = match ch {
                '*' => Token::AnySeq,
                '?' => Token::AnyChar,
                '[' | ']' | '{' | '}' | '\\' => return Err(GlobError::UnsupportedSyntax { ch, offset }),
                '&' | '=' | '#' => return Err(GlobError::InvalidChar { ch, offset }),
                c if c.is_whitespace() || c.is_control() => return Err(GlobError::InvalidChar { ch, offset }),
                c => Token::Literal(c),
            };
            if token == Token::AnySeq && tokens.last() == Some(&Token::AnySeq) {
                continue;
            }
            tokens.push(token);
        }
        Ok(Self {
            source: pattern.to_owned(),
            tokens,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `text` matches the pattern.
    pub fn matches(&self, text: &str) -> bool {
        let tokens = self.tokens.as_slice();
        // Byte offset into `text`, index into `tokens`.
        let mut ti = 0usize;
        let mut pi = 0usize;
        // After the most recent `*`: (token index just past it, byte offset
        // in `text` where the `*` currently stops).
        let mut star: Option<(usize, usize)> = None;
        loop {
            let rest = text.get(ti..).unwrap_or("");
            let Some(ch) = rest.chars().next() else { break };
            match tokens.get(pi) {
                Some(Token::AnySeq) => {
                    pi += 1;
                    star = Some((pi, ti));
                    continue;
                }
                Some(Token::AnyChar) => {
                    pi += 1;
                    ti += ch.len_utf8();
                    continue;
                }
                Some(Token::Literal(lit)) if *lit == ch => {
                    pi += 1;
                    ti += ch.len_utf8();
                    continue;
                }
                _ => {}
            }
            // Mismatch (or pattern exhausted): let the last `*` swallow one
            // more character and retry from just after it.
            let Some((star_pi, star_ti)) = star else {
                return false;
            };
            let swallowed = text
                .get(star_ti..)
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
            let next_ti = star_ti + swallowed;
            star = Some((star_pi, next_ti));
            pi = star_pi;
            ti = next_ti;
        }
        tokens.get(pi..).unwrap_or(&[]).iter().all(|t| *t == Token::AnySeq)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Glob {
    type Err = GlobError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// Whether any pattern in `globs` matches `text`.
pub(crate) fn any_matches(globs: &[Glob], text: &str) -> bool {
    globs.iter().any(|g| g.matches(text))
}
