//! Error types of the lossy normalizer.

use std::fmt;
use std::path::PathBuf;

use super::glob::GlobError;
use super::host_pattern::HostPatternError;
use crate::CanonError;

/// Why [`Normalizer::normalize`](super::Normalizer::normalize) failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NormalizeError {
    /// The input is longer than [`MAX_INPUT_LEN`](super::limits::MAX_INPUT_LEN) bytes.
    InputTooLong {
        /// Length of the input in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The input is not a URL the identity canonicalizer accepts.
    Canonicalize(CanonError),
    /// Applying the lossy rules produced a URL the canonicalizer rejects.
    /// This indicates a bug in the rules; the input itself was valid.
    InvalidOutput {
        /// The URL the rules produced.
        output: String,
        /// The canonicalizer's reason for rejecting it.
        source: CanonError,
    },
}

impl fmt::Display for NormalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InputTooLong { len, max } => {
                write!(f, "URL is {len} bytes long, the limit is {max}")
            }
            Self::Canonicalize(e) => write!(f, "URL canonicalization failed: {e}"),
            Self::InvalidOutput { output, source } => {
                write!(f, "normalization produced an invalid URL {output:?}: {source}")
            }
        }
    }
}

impl std::error::Error for NormalizeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InputTooLong { .. } => None,
            Self::Canonicalize(e) | Self::InvalidOutput { source: e, .. } => Some(e),
        }
    }
}

impl From<CanonError> for NormalizeError {
    fn from(e: CanonError) -> Self {
        Self::Canonicalize(e)
    }
}

/// Why a site rules file (or a programmatic [`SiteRules::insert`](super::SiteRules::insert))
/// was rejected.
#[derive(Debug)]
#[non_exhaustive]
pub enum SiteRulesError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file name ends in neither `.json` nor `.toml`.
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The input is larger than [`MAX_RULES_FILE_LEN`](super::limits::MAX_RULES_FILE_LEN) bytes.
    TooLarge {
        /// Size of the input in bytes (at least `max + 1` when read from a file).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The JSON is malformed or does not have the expected shape (this
    /// includes unknown fields).
    Json(serde_json::Error),
    /// The TOML is malformed or does not have the expected shape (this
    /// includes unknown fields and keys TOML itself considers duplicate).
    Toml(toml::de::Error),
    /// A host pattern is invalid.
    InvalidHostPattern {
        /// The pattern as written.
        pattern: String,
        /// Why it is invalid.
        source: HostPatternError,
    },
    /// Two keys denote the same host pattern (after canonicalization, so
    /// `Example.COM` and `example.com` collide).
    DuplicateHost {
        /// The second key as written.
        pattern: String,
        /// The canonical pattern both keys denote.
        canonical: String,
    },
    /// A glob in `keep_params` or `remove_params` is invalid.
    InvalidGlob {
        /// The site's host pattern.
        site: String,
        /// `keep_params` or `remove_params`.
        field: &'static str,
        /// The pattern as written.
        pattern: String,
        /// Why it is invalid.
        source: GlobError,
    },
    /// A site sets both `keep_params` and `remove_params`.
    ConflictingParamFilters {
        /// The site's host pattern.
        site: String,
    },
    /// A `directory_index` name is empty, `.`/`..`, too long, or contains
    /// `/`, `?`, `#`, `%`, whitespace or a control character.
    InvalidDirectoryIndex {
        /// The site's host pattern.
        site: String,
        /// The name as written.
        name: String,
    },
    /// A `default_params` name is empty or too long, or a value is too long.
    InvalidDefaultParam {
        /// The site's host pattern.
        site: String,
        /// The parameter name as written.
        name: String,
    },
    /// A `default_params` map names the same parameter twice.
    DuplicateDefaultParam {
        /// The site's host pattern.
        site: String,
        /// The parameter name.
        name: String,
    },
    /// A list or map holds more entries than its limit.
    TooMany {
        /// What overflowed: `sites`, `keep_params`, `remove_params`,
        /// `directory_index` or `default_params`.
        what: &'static str,
        /// How many entries were given.
        count: usize,
        /// The limit.
        max: usize,
    },
}

impl fmt::Display for SiteRulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => {
                write!(f, "cannot read site rules {}: {source}", path.display())
            }
            Self::UnknownFormat { path } => write!(
                f,
                "cannot tell the format of {}: expected a .json or .toml extension",
                path.display()
            ),
            Self::TooLarge { len, max } => {
                write!(f, "site rules are {len} bytes, the limit is {max}")
            }
            Self::Json(e) => write!(f, "invalid JSON site rules: {e}"),
            Self::Toml(e) => write!(f, "invalid TOML site rules: {e}"),
            Self::InvalidHostPattern { pattern, source } => {
                write!(f, "invalid host pattern {pattern:?}: {source}")
            }
            Self::DuplicateHost { pattern, canonical } => write!(
                f,
                "host pattern {pattern:?} duplicates an earlier key (both are {canonical:?})"
            ),
            Self::InvalidGlob {
                site,
                field,
                pattern,
                source,
            } => write!(f, "site {site:?}: invalid {field} glob {pattern:?}: {source}"),
            Self::ConflictingParamFilters { site } => {
                write!(f, "site {site:?} sets both keep_params and remove_params; use one")
            }
            Self::InvalidDirectoryIndex { site, name } => {
                write!(f, "site {site:?}: invalid directory_index name {name:?}")
            }
            Self::InvalidDefaultParam { site, name } => {
                write!(f, "site {site:?}: invalid default_params entry {name:?}")
            }
            Self::DuplicateDefaultParam { site, name } => {
                write!(f, "site {site:?}: default_params names {name:?} twice")
            }
            Self::TooMany { what, count, max } => {
                write!(f, "{count} entries in {what}, the limit is {max}")
            }
        }
    }
}

impl std::error::Error for SiteRulesError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Json(e) => Some(e),
            Self::Toml(e) => Some(e),
            Self::InvalidHostPattern { source, .. } => Some(source),
            Self::InvalidGlob { source, .. } => Some(source),
            _ => None,
        }
    }
}
