//! The error type of the RFC 9421 core.

use crate::encoding::EncodingError;
use std::fmt;

/// Which signature header an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureHeader {
    /// `Signature-Input`.
    SignatureInput,
    /// `Signature`.
    Signature,
}

impl fmt::Display for SignatureHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignatureHeader::SignatureInput => "Signature-Input",
            SignatureHeader::Signature => "Signature",
        })
    }
}

/// Everything that can go wrong parsing signature headers or building a
/// signature base. Each variant is a distinct, stable failure class; the
/// AdCP verifier maps them to its `*_signature_header_malformed`,
/// `*_signature_components_incomplete`, … codes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The header is not a syntactically valid RFC 8941 Dictionary (or, for
    /// `Signature`, not a dictionary of byte sequences).
    HeaderMalformed {
        /// The header.
        header: SignatureHeader,
        /// What the parser found wrong.
        detail: String,
    },
    /// The header exceeds the accepted size.
    HeaderTooLong {
        /// The header.
        header: SignatureHeader,
        /// The limit in bytes.
        max: usize,
    },
    /// A label appears twice in one header (across all its field lines).
    DuplicateLabel {
        /// The header.
        header: SignatureHeader,
        /// The repeated label.
        label: String,
    },
    /// A parameter appears twice on one signature or component identifier.
    DuplicateParameter {
        /// The signature label.
        label: String,
        /// The repeated parameter.
        parameter: String,
    },
    /// A `Signature-Input` member is not an inner list.
    NotInnerList {
        /// The signature label.
        label: String,
    },
    /// A covered component identifier is not an sf-string.
    ComponentNotString {
        /// The signature label.
        label: String,
    },
    /// A component name is empty, has uppercase letters or invalid characters,
    /// or names an unknown derived component.
    InvalidComponentName {
        /// The signature label.
        label: String,
        /// The offending name.
        name: String,
    },
    /// The same component identifier is covered twice.
    DuplicateComponent {
        /// The signature label.
        label: String,
        /// The repeated identifier.
        component: String,
    },
    /// A component parameter is unknown, of the wrong type, or not allowed
    /// in combination with the others (`sf` with `bs`, `key` with `bs`).
    InvalidComponentParameter {
        /// The component identifier.
        component: String,
        /// The offending parameter.
        parameter: String,
    },
    /// A signature parameter that must be an sf-string (`nonce`, `keyid`,
    /// `alg`, `tag`) was sent as a token or another type.
    UnquotedStringParameter {
        /// The signature label.
        label: String,
        /// The parameter.
        parameter: String,
    },
    /// A signature parameter has the wrong type (`created` and `expires`
    /// must be integers).
    ParameterType {
        /// The signature label.
        label: String,
        /// The parameter.
        parameter: String,
        /// The required type.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// A `Signature` member is not a byte sequence.
    NotByteSequence {
        /// The signature label.
        label: String,
    },
    /// A `Signature` value is not valid in the binary encoding the caller
    /// selected (wrong alphabet, alphabet mixing, padding, trailing bits).
    SignatureEncoding {
        /// The signature label.
        label: String,
        /// Why decoding failed.
        source: EncodingError,
    },
    /// The requested label is not in the header.
    LabelNotFound {
        /// The header.
        header: SignatureHeader,
        /// The label.
        label: String,
    },
    /// A covered component is not present in the message.
    MissingComponent {
        /// The component identifier.
        component: String,
    },
    /// A field that must be single-valued has several values.
    MultiValuedField {
        /// The lowercase field name.
        name: String,
    },
    /// A field value contains CR, LF or NUL.
    InvalidFieldValue {
        /// The lowercase field name.
        name: String,
    },
    /// The target URI cannot be split into the parts a derived component needs.
    InvalidTargetUri {
        /// What is wrong.
        detail: String,
    },
    /// A field covered with `sf` or `key` does not parse as the structured
    /// type it must have, or is not a known structured field.
    StructuredField {
        /// The lowercase field name.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// `@query-param` names a parameter that occurs more than once in the
    /// query (RFC 9421 §2.2.8 forbids covering it; cover `@query`).
    RepeatedQueryParam {
        /// The (re-encoded) parameter name.
        name: String,
    },
    /// A component cannot be derived for this message (e.g. `@status` on a
    /// request, `req` without a related request).
    UnsupportedComponent {
        /// The component identifier.
        component: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::HeaderMalformed { header, detail } => write!(f, "{header} is malformed: {detail}"),
            Error::HeaderTooLong { header, max } => write!(f, "{header} is longer than {max} bytes"),
            Error::DuplicateLabel { header, label } => write!(f, "{header} declares label `{label}` more than once"),
            Error::DuplicateParameter { label, parameter } => {
                write!(f, "signature `{label}` repeats parameter `{parameter}`")
            }
            Error::NotInnerList { label } => write!(f, "Signature-Input member `{label}` is not an inner list"),
            Error::ComponentNotString { label } => {
                write!(
                    f,
                    "signature `{label}` lists a component identifier that is not a string"
                )
            }
            Error::InvalidComponentName { label, name } => {
                write!(f, "signature `{label}` covers invalid component name {name:?}")
            }
            Error::DuplicateComponent { label, component } => {
                write!(f, "signature `{label}` covers {component} more than once")
            }
            Error::InvalidComponentParameter { component, parameter } => {
                write!(f, "component {component} has invalid parameter `{parameter}`")
            }
            Error::UnquotedStringParameter { label, parameter } => {
                write!(f, "signature `{label}` parameter `{parameter}` must be a quoted string")
            }
            Error::ParameterType {
                label,
                parameter,
                expected,
                found,
            } => {
                write!(
                    f,
                    "signature `{label}` parameter `{parameter}` must be an {expected}, found {found}"
                )
            }
            Error::NotByteSequence { label } => write!(f, "Signature member `{label}` is not a byte sequence"),
            Error::SignatureEncoding { label, source } => write!(f, "Signature member `{label}`: {source}"),
            Error::LabelNotFound { header, label } => write!(f, "{header} has no label `{label}`"),
            Error::MissingComponent { component } => write!(f, "covered component {component} is not in the message"),
            Error::MultiValuedField { name } => write!(f, "field `{name}` must have a single value"),
            Error::InvalidFieldValue { name } => write!(f, "field `{name}` contains CR, LF or NUL"),
            Error::InvalidTargetUri { detail } => write!(f, "target URI: {detail}"),
            Error::StructuredField { name, detail } => write!(f, "structured field `{name}`: {detail}"),
            Error::RepeatedQueryParam { name } => {
                write!(
                    f,
                    "query parameter `{name}` occurs more than once and cannot be covered by @query-param"
                )
            }
            Error::UnsupportedComponent { component } => {
                write!(f, "component {component} cannot be derived for this message")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::SignatureEncoding { source, .. } => Some(source),
            _ => None,
        }
    }
}
