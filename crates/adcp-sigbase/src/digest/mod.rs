//! RFC 9530 `Content-Digest`: computing, parsing and verifying.
//!
//! # Emitting
//!
//! [`ContentDigest::compute`] returns a field value such as
//! `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`. The value
//! encoding is a parameter: [`BinaryEncoding::Base64Padded`] is RFC 8941
//! `sf-binary` and is what every AdCP 3.2 request vector and every webhook
//! vector carries; [`BinaryEncoding::Base64UrlUnpadded`] is the legacy
//! request 3.0–3.1 form.
//!
//! # Parsing
//!
//! [`ContentDigest::parse`] takes the field value (several field lines
//! already combined with `", "`, RFC 9110 §5.3) and the
//! [`BinaryDecoding`] the profile prescribes. It runs, in this order, so the
//! error for a given field is deterministic:
//!
//! 1. the length cap ([`MAX_FIELD_LEN`]);
//! 2. a strict RFC 8941 §4.2.2 Dictionary parse of the whole field (keys are
//!    lowercase: `SHA-256=…` is a syntax error, not a synonym), with the
//!    member cap ([`MAX_MEMBERS`]); byte sequences may contain either Base64
//!    alphabet at this stage;
//! 3. duplicate keys, which RFC 8941 would silently resolve to the last one,
//!    are rejected ([`DigestError::DuplicateAlgorithm`]), for any key;
//! 4. every member's value must be a Byte Sequence
//!    ([`DigestError::NotByteSequence`]), unrecognised keys included;
//! 5. every byte sequence (values and parameters) is decoded strictly with
//!    the caller's [`BinaryDecoding`] ([`DigestError::InvalidEncoding`]);
//! 6. a recognised algorithm's value must have its digest length
//!    ([`DigestError::InvalidDigestLength`]).
//!
//! Parameters on members are parsed and ignored, except that a byte
//! sequence among their values must decode like the members' (an invalid
//! `sf-binary` anywhere makes an RFC 8941 field invalid). Unrecognised algorithms
//! (`md5`, `sha`, `id-sha-256`, …) are kept, visible through
//! [`ContentDigest::members`], and never verified. An empty field parses to
//! no members and fails verification.
//!
//! Which decoding each AdCP profile needs, from the conformance vectors:
//!
//! | profile | decoding |
//! |---|---|
//! | request signing 3.2 | `BinaryEncoding::Base64Padded` |
//! | request signing 3.1 | `BinaryDecoding::EitherCanonical`: the 3.1 vectors carry Base64URL (positive 002, 014) *and* padded Base64 (negative 010 expects a digest mismatch, 018 must pass step 1) |
//! | webhook v1 | `BinaryDecoding::EitherCanonical`: the vectors carry padded Base64, the profile text says Base64URL; `BinaryEncoding::Base64Padded` accepts exactly the vectors |
//!
//! # Verifying
//!
//! [`verify`] (or [`ContentDigest::verify`]) applies a [`DigestPolicy`]: at
//! least one accepted algorithm must be present and every recognised one
//! must match; comparison is constant-time.
//!
//! ```
//! use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm, DigestError, DigestPolicy};
//! use adcp_sigbase::encoding::BinaryEncoding;
//!
//! let body = br#"{"hello": "world"}"#;
//! let field = ContentDigest::compute(body, &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
//! assert_eq!(field, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:");
//!
//! let parsed = ContentDigest::parse(&field, BinaryEncoding::Base64Padded)?;
//! parsed.verify(body, &DigestPolicy::default())?;
//!
//! let twice = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:";
//! assert_eq!(
//!     ContentDigest::parse(twice, BinaryEncoding::Base64Padded),
//!     Err(DigestError::DuplicateAlgorithm { key: "sha-256".into() }),
//! );
//! # Ok::<(), DigestError>(())
//! ```

mod algorithm;
mod error;
mod fast;
mod policy;

pub use crate::sf_dictionary::SyntaxErrorKind;
pub use algorithm::DigestAlgorithm;
pub use error::{DigestError, DigestErrorKind};
pub use policy::{verify, DigestPolicy, VerifiedDigest};

use crate::encoding::{BinaryDecoding, BinaryEncoding};
use crate::sf_dictionary::{self, RawMember, RawValue};
use smallvec::SmallVec;
use std::borrow::Cow;

/// Longest `Content-Digest` field value accepted, in bytes.
pub const MAX_FIELD_LEN: usize = 8 * 1024;

/// Most members accepted in one `Content-Digest` field.
pub const MAX_MEMBERS: usize = 16;

/// One member of a `Content-Digest` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestMember {
    /// Borrowed for the algorithms this crate knows (no allocation on the
    /// hot path), owned for the others.
    key: Cow<'static, str>,
    algorithm: Option<DigestAlgorithm>,
    value: Vec<u8>,
}

impl DigestMember {
    /// The Dictionary key, as received (`sha-256`, `md5`, …).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The algorithm, when this crate implements it.
    pub fn algorithm(&self) -> Option<DigestAlgorithm> {
        self.algorithm
    }

    /// The decoded digest.
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

/// A `Content-Digest` field: its members in field order, keys unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentDigest {
    /// Inline for the one member every signer sends.
    members: SmallVec<[DigestMember; 1]>,
}

impl ContentDigest {
    /// Parses a received field value; see the [module docs](self) for the
    /// checks and their order, and for which `decoding` each profile needs.
    pub fn parse(
        value: &(impl AsRef<[u8]> + ?Sized),
        decoding: impl Into<BinaryDecoding>,
    ) -> Result<Self, DigestError> {
        let input = value.as_ref();
        if input.len() > MAX_FIELD_LEN {
            return Err(DigestError::FieldTooLong {
                len: input.len(),
                max: MAX_FIELD_LEN,
            });
        }
        let decoding = decoding.into();
        if let Some(parsed) = fast::single_member(input, decoding) {
            return Ok(parsed);
        }
        Self::parse_dictionary(input, decoding)
    }

    /// The general path of [`parse`](Self::parse): the whole RFC 8941
    /// Dictionary, then the checks in their documented order.
    fn parse_dictionary(input: &[u8], decoding: BinaryDecoding) -> Result<Self, DigestError> {
        let raw = sf_dictionary::parse(input, MAX_MEMBERS)?;
        let key_bytes = |m: &RawMember| m.key.of(input);
        // Keys are ASCII (checked by the parser), so this is exact.
        let key_of = |m: &RawMember| match std::str::from_utf8(key_bytes(m)) {
            Ok(key) => key.to_owned(),
            Err(_) => String::from_utf8_lossy(key_bytes(m)).into_owned(),
        };

        for (i, member) in raw.iter().enumerate() {
            if raw
                .iter()
                .take(i)
                .any(|earlier| key_bytes(earlier) == key_bytes(member))
            {
                return Err(DigestError::DuplicateAlgorithm { key: key_of(member) });
            }
        }
        for member in &raw {
            if let RawValue::Other(found) = member.value {
                return Err(DigestError::NotByteSequence {
                    key: key_of(member),
                    found,
                });
            }
        }
        let mut members: SmallVec<[DigestMember; 1]> = SmallVec::with_capacity(raw.len());
        for member in &raw {
            // Every value is a byte sequence (checked above).
            let RawValue::ByteSequence(span) = member.value else {
                continue;
            };
            let key = key_of(member);
            let value = decoding
                .decode(span.of(input))
                .map_err(|source| DigestError::InvalidEncoding {
                    key: key.clone(),
                    offset: span.start,
                    source,
                })?;
            for binary in &member.parameter_binaries {
                if let Err(source) = decoding.decode(binary.of(input)) {
                    return Err(DigestError::InvalidEncoding {
                        key,
                        offset: binary.start,
                        source,
                    });
                }
            }
            let algorithm = DigestAlgorithm::from_key(&key);
            members.push(DigestMember {
                key: Cow::Owned(key),
                algorithm,
                value,
            });
        }
        for member in &members {
            if let Some(algorithm) = member.algorithm {
                if member.value.len() != algorithm.output_len() {
                    return Err(DigestError::InvalidDigestLength {
                        algorithm,
                        expected: algorithm.output_len(),
                        actual: member.value.len(),
                    });
                }
            }
        }
        Ok(ContentDigest { members })
    }

    /// The digests of `body` under `algorithms`, in that order; a repeated
    /// algorithm is included once.
    pub fn of_body(body: &[u8], algorithms: &[DigestAlgorithm]) -> Self {
        let mut members: SmallVec<[DigestMember; 1]> = SmallVec::with_capacity(algorithms.len());
        for &algorithm in algorithms {
            if members.iter().all(|m| m.algorithm != Some(algorithm)) {
                members.push(DigestMember {
                    key: Cow::Borrowed(algorithm.key()),
                    algorithm: Some(algorithm),
                    value: algorithm.compute(body),
                });
            }
        }
        ContentDigest { members }
    }

    /// The field value to send for `body`: [`of_body`](Self::of_body) then
    /// [`serialize`](Self::serialize). An empty `algorithms` gives an empty
    /// string, which no verifier accepts.
    pub fn compute(body: &[u8], algorithms: &[DigestAlgorithm], encoding: BinaryEncoding) -> String {
        Self::of_body(body, algorithms).serialize(encoding)
    }

    /// The field value: `key=:value:` members joined by `", "`, values in
    /// `encoding`.
    pub fn serialize(&self, encoding: BinaryEncoding) -> String {
        let mut out = String::new();
        for (i, member) in self.members.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&member.key);
            out.push_str("=:");
            encoding.encode_into(&member.value, &mut out);
            out.push(':');
        }
        out
    }

    /// Every member, in field order, unrecognised ones included.
    pub fn members(&self) -> &[DigestMember] {
        &self.members
    }

    /// The decoded digest for `algorithm`, if present.
    pub fn get(&self, algorithm: DigestAlgorithm) -> Option<&[u8]> {
        self.members
            .iter()
            .find(|m| m.algorithm == Some(algorithm))
            .map(DigestMember::value)
    }

    /// The members whose key this crate does not implement.
    pub fn unrecognized(&self) -> impl Iterator<Item = &DigestMember> {
        self.members.iter().filter(|m| m.algorithm.is_none())
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the field had no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// [`verify`]`(self, body, policy)`.
    pub fn verify(&self, body: &[u8], policy: &DigestPolicy) -> Result<VerifiedDigest, DigestError> {
        verify(self, body, policy)
    }
}
