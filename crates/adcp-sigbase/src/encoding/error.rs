//! [`EncodingError`]: why a binary value was rejected by a strict decoder.

use std::fmt;

use super::BinaryEncoding;

/// What is wrong with the `=` padding of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PaddingErrorKind {
    /// Padded Base64: the value ends before the padding its length requires.
    Missing,
    /// Padded Base64: more `=` than the length requires (including any `=`
    /// after a complete final quantum).
    Excess,
    /// Padded Base64: an `=` is followed by a non-`=` character.
    Misplaced,
    /// Unpadded Base64URL: the value contains an `=`.
    Unexpected,
}

impl fmt::Display for PaddingErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PaddingErrorKind::Missing => "missing padding",
            PaddingErrorKind::Excess => "excess padding",
            PaddingErrorKind::Misplaced => "padding before the end of the value",
            PaddingErrorKind::Unexpected => "padding in an unpadded encoding",
        })
    }
}

/// Why a strict decoder rejected a value. Offsets are byte offsets into the
/// text handed to the decoder.
///
/// Checks run in this order, so a value with several faults reports the
/// first that applies: [`InvalidCharacter`](Self::InvalidCharacter),
/// [`AlphabetMixing`](Self::AlphabetMixing),
/// [`WrongAlphabet`](Self::WrongAlphabet), misplaced or unexpected
/// [`Padding`](Self::Padding), [`InvalidLength`](Self::InvalidLength),
/// missing or excess [`Padding`](Self::Padding),
/// [`NonCanonical`](Self::NonCanonical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodingError {
    /// A byte that belongs to neither Base64 alphabet (nor is `=`).
    InvalidCharacter {
        /// Offset of the byte.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// The value uses characters that exist only in the standard alphabet
    /// (`+`, `/`) *and* characters that exist only in the URL-safe alphabet
    /// (`-`, `_`). Rejected by every encoding.
    AlphabetMixing {
        /// Offset of the first `+` or `/`.
        standard_offset: usize,
        /// Offset of the first `-` or `_`.
        url_safe_offset: usize,
    },
    /// A character of the other alphabet: `-`/`_` for
    /// [`BinaryEncoding::Base64Padded`], `+`/`/` for
    /// [`BinaryEncoding::Base64UrlUnpadded`].
    WrongAlphabet {
        /// Offset of the first such character.
        offset: usize,
        /// The character.
        byte: u8,
        /// The encoding that was required.
        expected: BinaryEncoding,
    },
    /// The `=` padding is missing, excessive, misplaced or not allowed.
    Padding {
        /// Offset of the first offending `=`, or the end of the value for
        /// [`PaddingErrorKind::Missing`].
        offset: usize,
        /// What is wrong.
        kind: PaddingErrorKind,
    },
    /// The number of Base64 symbols (excluding padding) is `1 (mod 4)`,
    /// which no byte string encodes to.
    InvalidLength {
        /// Number of symbols, excluding padding.
        symbols: usize,
    },
    /// The last symbol carries non-zero bits that decoding would discard:
    /// another spelling of the same bytes exists, so this one is rejected.
    NonCanonical {
        /// Offset of the last symbol.
        offset: usize,
    },
    /// [`decode_sf_binary_token`](super::decode_sf_binary_token): the token is
    /// not delimited by `:` on both sides.
    MissingColons,
}

impl EncodingError {
    /// The same error with every offset moved by `by` bytes, for reporting
    /// positions in an enclosing text.
    #[must_use]
    pub fn shifted(self, by: usize) -> Self {
        match self {
            EncodingError::InvalidCharacter { offset, byte } => EncodingError::InvalidCharacter {
                offset: offset.saturating_add(by),
                byte,
            },
            EncodingError::AlphabetMixing {
                standard_offset,
                url_safe_offset,
            } => EncodingError::AlphabetMixing {
                standard_offset: standard_offset.saturating_add(by),
                url_safe_offset: url_safe_offset.saturating_add(by),
            },
            EncodingError::WrongAlphabet { offset, byte, expected } => EncodingError::WrongAlphabet {
                offset: offset.saturating_add(by),
                byte,
                expected,
            },
            EncodingError::Padding { offset, kind } => EncodingError::Padding {
                offset: offset.saturating_add(by),
                kind,
            },
            EncodingError::NonCanonical { offset } => EncodingError::NonCanonical {
                offset: offset.saturating_add(by),
            },
            other @ (EncodingError::InvalidLength { .. } | EncodingError::MissingColons) => other,
        }
    }
}

/// A byte for an error message: the character if printable ASCII, else hex.
pub(crate) struct ShowByte(pub(crate) u8);

impl fmt::Display for ShowByte {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_ascii_graphic() {
            write!(f, "'{}'", char::from(self.0))
        } else {
            write!(f, "byte 0x{:02x}", self.0)
        }
    }
}

impl fmt::Display for EncodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodingError::InvalidCharacter { offset, byte } => {
                write!(f, "{} at offset {offset} is not a Base64 character", ShowByte(*byte))
            }
            EncodingError::AlphabetMixing {
                standard_offset,
                url_safe_offset,
            } => write!(
                f,
                "value mixes the standard Base64 alphabet (offset {standard_offset}) \
                 and the URL-safe alphabet (offset {url_safe_offset})"
            ),
            EncodingError::WrongAlphabet { offset, byte, expected } => write!(
                f,
                "{} at offset {offset} is not in the alphabet of {}",
                ShowByte(*byte),
                expected.name()
            ),
            EncodingError::Padding { offset, kind } => write!(f, "{kind} at offset {offset}"),
            EncodingError::InvalidLength { symbols } => {
                write!(f, "{symbols} Base64 symbols is not a possible length (1 mod 4)")
            }
            EncodingError::NonCanonical { offset } => write!(
                f,
                "non-canonical Base64: the symbol at offset {offset} has non-zero trailing bits"
            ),
            EncodingError::MissingColons => f.write_str("sf-binary token is not delimited by ':'"),
        }
    }
}

impl std::error::Error for EncodingError {}
