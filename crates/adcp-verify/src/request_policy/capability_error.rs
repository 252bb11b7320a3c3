//! Configuration-time errors for a `request_signing` capability block.

use crate::profile::DigestCoverage;
use std::fmt;

/// Why a `request_signing` capability block was refused.
///
/// These are configuration errors, raised when the verifier loads its own
/// capability, never per request: the spec requires a verifier to reject a
/// block that mixes the operation and protocol-method namespaces "with a
/// configuration-time error rather than silently coercing strings".
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CapabilityError {
    /// The capability JSON is not strict JSON (duplicate keys included).
    Json(String),
    /// The capability is not a JSON object.
    NotAnObject,
    /// A member this verifier does not know (typos must not fail open).
    UnknownField(String),
    /// A member has the wrong JSON type.
    WrongType {
        /// The member.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// `covers_content_digest` is not `required`, `either` or `forbidden`.
    UnknownCoverage(String),
    /// `supported` is true but `covers_content_digest` is absent.
    MissingCoverage,
    /// A list is populated while `supported` is false or absent.
    ListsWithoutSupport {
        /// The populated list.
        field: &'static str,
    },
    /// A name sits in the wrong namespace: a JSON-RPC method (or
    /// `tools/call`) in an operation list, or an AdCP operation name in a
    /// `protocol_methods_*` list.
    NamespaceViolation {
        /// The list.
        field: &'static str,
        /// The offending entry.
        name: String,
    },
    /// An entry fits neither grammar.
    InvalidName {
        /// The list.
        field: &'static str,
        /// The offending entry.
        name: String,
    },
    /// The capability's digest policy differs from the endpoint profile's
    /// (a 3.2 endpoint must advertise `required`).
    ProfileMismatch {
        /// The profile's name.
        profile: &'static str,
        /// The profile's policy.
        expected: DigestCoverage,
        /// The advertised policy (`None` when signing is unsupported).
        advertised: Option<DigestCoverage>,
    },
}

impl fmt::Display for CapabilityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(e) => write!(f, "request_signing capability is not strict JSON: {e}"),
            Self::NotAnObject => f.write_str("request_signing capability must be a JSON object"),
            Self::UnknownField(name) => write!(f, "request_signing has unknown member {name:?}"),
            Self::WrongType { field, expected } => write!(f, "request_signing.{field} must be {expected}"),
            Self::UnknownCoverage(v) => write!(
                f,
                "request_signing.covers_content_digest {v:?} is not \"required\", \"either\" or \"forbidden\""
            ),
            Self::MissingCoverage => f.write_str("request_signing.covers_content_digest is required when supported"),
            Self::ListsWithoutSupport { field } => {
                write!(
                    f,
                    "request_signing.{field} is populated but request signing is not supported"
                )
            }
            Self::NamespaceViolation { field, name } => {
                write!(
                    f,
                    "request_signing.{field} entry {name:?} belongs to the other namespace"
                )
            }
            Self::InvalidName { field, name } => {
                write!(f, "request_signing.{field} entry {name:?} is not a valid name")
            }
            Self::ProfileMismatch {
                profile,
                expected,
                advertised,
            } => write!(
                f,
                "profile {profile} requires covers_content_digest {expected:?}, capability advertises {advertised:?}"
            ),
        }
    }
}

impl std::error::Error for CapabilityError {}
