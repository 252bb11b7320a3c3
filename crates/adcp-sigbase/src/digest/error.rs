//! [`DigestError`]: why a `Content-Digest` field was rejected.

use std::fmt;

use super::DigestAlgorithm;
use crate::encoding::EncodingError;
use crate::sf_dictionary::{DictionaryError, ErrorKind, SyntaxErrorKind};

/// The class of a [`DigestError`], for mapping to a profile's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DigestErrorKind {
    /// The field is not a valid `Content-Digest` (AdCP:
    /// `*_signature_header_malformed`).
    Malformed,
    /// The field is valid but carries no algorithm the policy accepts.
    Unsupported,
    /// A digest does not match the body (AdCP: `*_signature_digest_mismatch`).
    Mismatch,
}

/// Why a `Content-Digest` field was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DigestError {
    /// The field value is longer than [`MAX_FIELD_LEN`](super::MAX_FIELD_LEN).
    FieldTooLong {
        /// Its length, in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The field has more than [`MAX_MEMBERS`](super::MAX_MEMBERS) members.
    TooManyMembers {
        /// The limit.
        max: usize,
    },
    /// The field is not an RFC 8941 Dictionary.
    Syntax {
        /// Byte offset in the field value.
        offset: usize,
        /// What is wrong there.
        kind: SyntaxErrorKind,
    },
    /// The same key appears twice (e.g. two `sha-256` members): which value a
    /// party uses would depend on its parser, so the field is rejected even
    /// when the values agree.
    DuplicateAlgorithm {
        /// The repeated key.
        key: String,
    },
    /// A member's value is not a Byte Sequence (RFC 9530 §2).
    NotByteSequence {
        /// The member's key.
        key: String,
        /// The RFC 8941 type it has instead (`"integer"`, `"token"`, …).
        found: &'static str,
    },
    /// A byte sequence (a member's value, or one of its parameters' values)
    /// is not valid in the selected encoding.
    InvalidEncoding {
        /// The member's key.
        key: String,
        /// Byte offset in the field value of the text between the colons;
        /// `source`'s offsets are relative to it.
        offset: usize,
        /// Why the strict decoder rejected it.
        source: EncodingError,
    },
    /// A recognised algorithm's value has the wrong length for it.
    InvalidDigestLength {
        /// The algorithm.
        algorithm: DigestAlgorithm,
        /// Its output length, in bytes.
        expected: usize,
        /// The decoded length.
        actual: usize,
    },
    /// No member uses an algorithm the [`DigestPolicy`](super::DigestPolicy)
    /// accepts.
    NoAcceptableAlgorithm {
        /// The keys present, in order.
        present: Vec<String>,
    },
    /// The digest of the body under `algorithm` differs from the field's.
    Mismatch {
        /// The algorithm whose value does not match.
        algorithm: DigestAlgorithm,
    },
}

impl DigestError {
    /// The class of this error.
    pub fn kind(&self) -> DigestErrorKind {
        match self {
            DigestError::NoAcceptableAlgorithm { .. } => DigestErrorKind::Unsupported,
            DigestError::Mismatch { .. } => DigestErrorKind::Mismatch,
            DigestError::FieldTooLong { .. }
            | DigestError::TooManyMembers { .. }
            | DigestError::Syntax { .. }
            | DigestError::DuplicateAlgorithm { .. }
            | DigestError::NotByteSequence { .. }
            | DigestError::InvalidEncoding { .. }
            | DigestError::InvalidDigestLength { .. } => DigestErrorKind::Malformed,
        }
    }
}

impl fmt::Display for DigestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DigestError::FieldTooLong { len, max } => {
                write!(f, "Content-Digest is {len} bytes long, more than the {max} accepted")
            }
            DigestError::TooManyMembers { max } => write!(f, "Content-Digest has more than {max} members"),
            DigestError::Syntax { offset, kind } => {
                write!(
                    f,
                    "Content-Digest is not an RFC 8941 dictionary: {kind} at byte {offset}"
                )
            }
            DigestError::DuplicateAlgorithm { key } => write!(f, "Content-Digest lists `{key}` more than once"),
            DigestError::NotByteSequence { key, found } => {
                write!(f, "Content-Digest member `{key}` is a {found}, not a byte sequence")
            }
            DigestError::InvalidEncoding { key, offset, source } => {
                write!(f, "Content-Digest member `{key}` (value at byte {offset}): {source}")
            }
            DigestError::InvalidDigestLength {
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "Content-Digest member `{algorithm}` is {actual} bytes long, not the {expected} of a {algorithm} digest"
            ),
            DigestError::NoAcceptableAlgorithm { present } => {
                if present.is_empty() {
                    f.write_str("Content-Digest has no members")
                } else {
                    write!(
                        f,
                        "Content-Digest has no acceptable algorithm (present: {})",
                        present.join(", ")
                    )
                }
            }
            DigestError::Mismatch { algorithm } => {
                write!(f, "Content-Digest `{algorithm}` does not match the body")
            }
        }
    }
}

impl From<DictionaryError> for DigestError {
    /// A Dictionary parse failure of the field: [`DigestError::Syntax`] or
    /// [`DigestError::TooManyMembers`].
    fn from(e: DictionaryError) -> Self {
        match e.kind {
            ErrorKind::Syntax(kind) => DigestError::Syntax { offset: e.offset, kind },
            ErrorKind::TooManyMembers { max } => DigestError::TooManyMembers { max },
        }
    }
}

impl std::error::Error for DigestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DigestError::InvalidEncoding { source, .. } => Some(source),
            _ => None,
        }
    }
}
