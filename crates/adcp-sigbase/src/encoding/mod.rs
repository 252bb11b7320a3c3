//! Binary value encodings: Base64 as a choice the caller makes, never a
//! fallback.
//!
//! AdCP carries binary values (`Signature`, `Content-Digest`) in two
//! spellings, and which one is valid depends on the profile, never on what
//! happens to parse:
//!
//! - [`BinaryEncoding::Base64Padded`]: RFC 8941 `sf-binary`, the standard
//!   alphabet (`+`, `/`) with canonical `=` padding. AdCP 3.2 request
//!   signing, and the `Content-Digest` of every webhook conformance vector.
//! - [`BinaryEncoding::Base64UrlUnpadded`]: the URL-safe alphabet (`-`, `_`)
//!   without padding. The legacy AdCP webhook v1 and request 3.0–3.1 form.
//!
//! Decoding is strict in both: characters of the other alphabet, missing,
//! excess or misplaced padding, impossible lengths and non-canonical
//! encodings (non-zero trailing bits) are rejected with a distinct
//! [`EncodingError`]. A value that mixes the two alphabets
//! ([`EncodingError::AlphabetMixing`]) is rejected by every decoder. As a
//! consequence every accepted value is the *only* spelling of its bytes:
//! `encode(decode(s)?) == s`. The one explicit exception is
//! [`BinaryEncoding::decode_ignoring_trailing_bits`], for values whose
//! spelling is authenticated anyway (the signature `nonce`).
//!
//! [`BinaryDecoding`] is what decoders of received fields take: either one
//! encoding ([`BinaryDecoding::Only`]; a plain [`BinaryEncoding`] converts
//! into it), or [`BinaryDecoding::EitherCanonical`] for legacy profiles
//! whose corpus carries both spellings. The latter is a deterministic
//! grammar, not a retry: the characters of the value select the one encoding
//! it is checked against, and no value decodes to different bytes under the
//! two.
//!
//! ```
//! use adcp_sigbase::encoding::{BinaryDecoding, BinaryEncoding, EncodingError, PaddingErrorKind};
//!
//! let bytes = [0xfb, 0xef, 0xff];
//! assert_eq!(BinaryEncoding::Base64Padded.encode(&bytes), "++//");
//! assert_eq!(BinaryEncoding::Base64UrlUnpadded.encode(&bytes), "--__");
//! assert_eq!(BinaryEncoding::Base64UrlUnpadded.decode("--__")?, bytes);
//!
//! // Strict: the other alphabet, padding and trailing bits are errors.
//! assert!(matches!(
//!     BinaryEncoding::Base64Padded.decode("--__"),
//!     Err(EncodingError::WrongAlphabet { offset: 0, .. })
//! ));
//! assert_eq!(
//!     BinaryEncoding::Base64Padded.decode("AQ"),
//!     Err(EncodingError::Padding { offset: 2, kind: PaddingErrorKind::Missing })
//! );
//! assert_eq!(BinaryEncoding::Base64UrlUnpadded.decode("AR"), Err(EncodingError::NonCanonical { offset: 1 }));
//! assert!(matches!(
//!     BinaryEncoding::Base64UrlUnpadded.decode("A+B-"),
//!     Err(EncodingError::AlphabetMixing { standard_offset: 1, url_safe_offset: 3 })
//! ));
//!
//! // A legacy profile that accepts both spellings, each strictly.
//! assert_eq!(BinaryDecoding::EitherCanonical.decode("AQ==")?, [1]);
//! assert_eq!(BinaryDecoding::EitherCanonical.decode("AQ")?, [1]);
//! assert!(BinaryDecoding::EitherCanonical.decode("AQ=").is_err());
//! # Ok::<(), EncodingError>(())
//! ```

mod error;
mod scan;
mod sf_binary;

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

pub use error::{EncodingError, PaddingErrorKind};
pub use sf_binary::{decode_sf_binary_token, encode_sf_binary};

use scan::{scan, Scan};

/// Standard alphabet, canonical padding required, trailing bits rejected.
const STANDARD_STRICT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(false),
);

/// URL-safe alphabet, padding forbidden, trailing bits rejected.
const URL_SAFE_STRICT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// Standard alphabet, canonical padding required, trailing bits ignored.
const STANDARD_LAX_BITS: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// URL-safe alphabet, padding forbidden, trailing bits ignored.
const URL_SAFE_LAX_BITS: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Whether the last symbol's unused low bits must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrailingBits {
    /// Non-zero trailing bits are [`EncodingError::NonCanonical`].
    Reject,
    /// Non-zero trailing bits are ignored.
    Ignore,
}

/// How a binary value is spelled in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryEncoding {
    /// RFC 8941 `sf-binary`: standard alphabet (`+`, `/`) with canonical `=`
    /// padding (RFC 4648 §4).
    Base64Padded,
    /// URL-safe alphabet (`-`, `_`) without padding (RFC 4648 §5): legacy
    /// AdCP webhook v1 and request signing 3.0–3.1.
    Base64UrlUnpadded,
}

impl BinaryEncoding {
    /// A short human-readable name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            BinaryEncoding::Base64Padded => "padded standard Base64",
            BinaryEncoding::Base64UrlUnpadded => "unpadded Base64URL",
        }
    }

    /// Length of the encoding of `byte_len` bytes (saturating).
    pub const fn encoded_len(self, byte_len: usize) -> usize {
        let full = (byte_len / 3).saturating_mul(4);
        match (self, byte_len % 3) {
            (_, 0) => full,
            (BinaryEncoding::Base64Padded, _) => full.saturating_add(4),
            (BinaryEncoding::Base64UrlUnpadded, rem) => full.saturating_add(rem + 1),
        }
    }

    /// Encodes `bytes`.
    pub fn encode(&self, bytes: &[u8]) -> String {
        let mut out = String::with_capacity(self.encoded_len(bytes.len()));
        self.encode_into(bytes, &mut out);
        out
    }

    /// Appends the encoding of `bytes` to `out`.
    pub fn encode_into(&self, bytes: &[u8], out: &mut String) {
        self.engine().encode_string(bytes, out);
    }

    /// Decodes `text` strictly (see the [module docs](self)).
    pub fn decode(&self, text: &(impl AsRef<[u8]> + ?Sized)) -> Result<Vec<u8>, EncodingError> {
        let mut out = Vec::new();
        self.decode_into(text, &mut out)?;
        Ok(out)
    }

    /// Decodes `text` strictly, appending the bytes to `out` (no allocation
    /// when `out` has the capacity). On error `out` is left as it was.
    pub fn decode_into(&self, text: &(impl AsRef<[u8]> + ?Sized), out: &mut Vec<u8>) -> Result<(), EncodingError> {
        let text = text.as_ref();
        let found = scan(text)?;
        self.decode_scanned(text, &found, out)
    }

    /// Decodes `text` strictly except that non-zero trailing bits in the
    /// last symbol are ignored (so `AR` decodes like `AQ`). Alphabet,
    /// padding and length rules are those of [`decode`](Self::decode).
    ///
    /// Only for values whose *spelling* is itself authenticated, such as
    /// the `nonce` signature parameter (covered by `@signature-params`),
    /// where official SDKs accept such spellings; several spellings then
    /// decode to the same bytes, so a caller keying on the bytes treats
    /// them as one value. Never for signatures or digests, whose encodings
    /// must be canonical.
    ///
    /// ```
    /// use adcp_sigbase::encoding::{BinaryEncoding, EncodingError};
    /// let url = BinaryEncoding::Base64UrlUnpadded;
    /// assert_eq!(url.decode_ignoring_trailing_bits("AR")?, [1]);
    /// assert_eq!(url.decode("AR"), Err(EncodingError::NonCanonical { offset: 1 }));
    /// assert!(url.decode_ignoring_trailing_bits("AQ==").is_err());
    /// # Ok::<(), EncodingError>(())
    /// ```
    pub fn decode_ignoring_trailing_bits(&self, text: &(impl AsRef<[u8]> + ?Sized)) -> Result<Vec<u8>, EncodingError> {
        let text = text.as_ref();
        let found = scan(text)?;
        let mut out = Vec::new();
        self.decode_scanned_with(text, &found, TrailingBits::Ignore, &mut out)?;
        Ok(out)
    }

    fn engine(self) -> &'static GeneralPurpose {
        self.engine_for(TrailingBits::Reject)
    }

    fn engine_for(self, trailing: TrailingBits) -> &'static GeneralPurpose {
        match (self, trailing) {
            (BinaryEncoding::Base64Padded, TrailingBits::Reject) => &STANDARD_STRICT,
            (BinaryEncoding::Base64UrlUnpadded, TrailingBits::Reject) => &URL_SAFE_STRICT,
            (BinaryEncoding::Base64Padded, TrailingBits::Ignore) => &STANDARD_LAX_BITS,
            (BinaryEncoding::Base64UrlUnpadded, TrailingBits::Ignore) => &URL_SAFE_LAX_BITS,
        }
    }

    /// Checks alphabet, padding and length of an already-scanned value, then
    /// decodes it with the strict engine (which catches non-zero trailing
    /// bits).
    fn decode_scanned(self, text: &[u8], found: &Scan, out: &mut Vec<u8>) -> Result<(), EncodingError> {
        self.decode_scanned_with(text, found, TrailingBits::Reject, out)
    }

    /// [`decode_scanned`](Self::decode_scanned) with a choice about the
    /// last symbol's unused bits.
    fn decode_scanned_with(
        self,
        text: &[u8],
        found: &Scan,
        trailing: TrailingBits,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodingError> {
        let wrong = match self {
            BinaryEncoding::Base64Padded => found.url_safe,
            BinaryEncoding::Base64UrlUnpadded => found.standard,
        };
        if let Some((offset, byte)) = wrong {
            return Err(EncodingError::WrongAlphabet {
                offset,
                byte,
                expected: self,
            });
        }
        let symbols = match (self, found.first_pad) {
            (BinaryEncoding::Base64UrlUnpadded, Some(offset)) => {
                return Err(EncodingError::Padding {
                    offset,
                    kind: PaddingErrorKind::Unexpected,
                })
            }
            (BinaryEncoding::Base64Padded, Some(first)) => {
                if text.iter().skip(first).any(|&b| b != b'=') {
                    return Err(EncodingError::Padding {
                        offset: first,
                        kind: PaddingErrorKind::Misplaced,
                    });
                }
                first
            }
            (_, None) => text.len(),
        };
        if symbols % 4 == 1 {
            return Err(EncodingError::InvalidLength { symbols });
        }
        if self == BinaryEncoding::Base64Padded {
            let needed = (4 - symbols % 4) % 4;
            let present = text.len() - symbols;
            if present < needed {
                return Err(EncodingError::Padding {
                    offset: text.len(),
                    kind: PaddingErrorKind::Missing,
                });
            }
            if present > needed {
                return Err(EncodingError::Padding {
                    offset: symbols + needed,
                    kind: PaddingErrorKind::Excess,
                });
            }
        }
        // One exact allocation (`decode_vec` reserves an estimate, then
        // grows): room for the engine's conservative estimate, trimmed after.
        let before = out.len();
        let estimate = text.len().div_ceil(4) * 3;
        out.resize(before + estimate, 0);
        let written = self.engine_for(trailing).decode_slice(text, &mut out[before..]);
        match written {
            Ok(n) => {
                out.truncate(before + n);
                Ok(())
            }
            Err(base64::DecodeSliceError::OutputSliceTooSmall) => {
                // Unreachable with the estimate above; decode the slow way.
                out.truncate(before);
                self.decode_vec_mapped(text, symbols, trailing, out)
            }
            Err(base64::DecodeSliceError::DecodeError(e)) => {
                out.truncate(before);
                Err(map_decode_error(e, symbols))
            }
        }
    }

    fn decode_vec_mapped(
        self,
        text: &[u8],
        symbols: usize,
        trailing: TrailingBits,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodingError> {
        let before = out.len();
        self.engine_for(trailing).decode_vec(text, out).map_err(|e| {
            out.truncate(before);
            map_decode_error(e, symbols)
        })
    }
}

/// The engine's error in this crate's terms. The checks before decoding
/// leave only trailing bits to the engine; the other arms keep a faithful
/// mapping regardless.
fn map_decode_error(e: base64::DecodeError, symbols: usize) -> EncodingError {
    match e {
        base64::DecodeError::InvalidLastSymbol(offset, _) => EncodingError::NonCanonical { offset },
        base64::DecodeError::InvalidByte(offset, byte) => EncodingError::InvalidCharacter { offset, byte },
        base64::DecodeError::InvalidLength(found) => EncodingError::InvalidLength { symbols: found },
        base64::DecodeError::InvalidPadding => EncodingError::Padding {
            offset: symbols,
            kind: PaddingErrorKind::Excess,
        },
    }
}

/// Which spellings a decoder of received values accepts.
///
/// Built from a [`BinaryEncoding`] with `From`, so APIs taking
/// `impl Into<BinaryDecoding>` accept `BinaryEncoding::Base64Padded` directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BinaryDecoding {
    /// Exactly this encoding, strictly.
    Only(BinaryEncoding),
    /// Each value strictly in *one* of the two encodings, selected by its own
    /// characters: a value containing `-` or `_` must be
    /// [`BinaryEncoding::Base64UrlUnpadded`]; one containing `+`, `/` or
    /// `=`, or whose length is a multiple of 4, must be
    /// [`BinaryEncoding::Base64Padded`]; any other (alphanumeric, length not
    /// a multiple of 4) must be [`BinaryEncoding::Base64UrlUnpadded`].
    /// Mixed alphabets are rejected. The only values valid in both encodings
    /// (alphanumeric, length a multiple of 4) decode to the same bytes in
    /// both, so no value is ambiguous.
    ///
    /// For legacy profiles whose conformance corpus uses both spellings
    /// (AdCP request signing 3.1 `Content-Digest`). Never use it as a retry
    /// after a strict decoder failed.
    EitherCanonical,
}

impl From<BinaryEncoding> for BinaryDecoding {
    fn from(encoding: BinaryEncoding) -> Self {
        BinaryDecoding::Only(encoding)
    }
}

impl BinaryDecoding {
    /// Decodes `text`.
    pub fn decode(&self, text: &(impl AsRef<[u8]> + ?Sized)) -> Result<Vec<u8>, EncodingError> {
        let mut out = Vec::new();
        self.decode_into(text, &mut out)?;
        Ok(out)
    }

    /// Decodes `text`, appending the bytes to `out`. On error `out` is left
    /// as it was.
    pub fn decode_into(&self, text: &(impl AsRef<[u8]> + ?Sized), out: &mut Vec<u8>) -> Result<(), EncodingError> {
        let text = text.as_ref();
        let found = scan(text)?;
        let encoding = match self {
            BinaryDecoding::Only(encoding) => *encoding,
            BinaryDecoding::EitherCanonical => {
                if found.url_safe.is_some() {
                    BinaryEncoding::Base64UrlUnpadded
                } else if found.standard.is_some() || found.first_pad.is_some() || text.len() % 4 == 0 {
                    BinaryEncoding::Base64Padded
                } else {
                    BinaryEncoding::Base64UrlUnpadded
                }
            }
        };
        encoding.decode_scanned(text, &found, out)
    }
}
