//! Resource bounds for the lossy normalizer.
//!
//! Every input the normalizer accepts from outside (URLs, rules files,
//! glob patterns) is bounded so that the work done per call is bounded too.
//! In particular, glob matching costs at most
//! `O(len(name) * len(pattern))` steps per (name, pattern) pair, so the
//! total matching work per URL is bounded by
//! `MAX_INPUT_LEN * MAX_PATTERNS_PER_LIST * MAX_GLOB_LEN`.

/// Longest URL, in bytes, that [`Normalizer::normalize`](super::Normalizer::normalize)
/// accepts: the identity canonicalizer's own limit,
/// [`crate::MAX_INPUT_LEN`]. Longer input fails with
/// [`NormalizeError::InputTooLong`](super::NormalizeError::InputTooLong).
pub const MAX_INPUT_LEN: usize = crate::MAX_INPUT_LEN;

/// Largest rules file, in bytes, accepted by the [`SiteRules`](super::SiteRules) loaders.
pub const MAX_RULES_FILE_LEN: usize = 1024 * 1024;

/// Most host patterns a [`SiteRules`](super::SiteRules) set may hold.
pub const MAX_SITES: usize = 10_000;

/// Longest glob pattern, in bytes.
pub const MAX_GLOB_LEN: usize = 64;

/// Most glob patterns in one `keep_params` or `remove_params` list.
pub const MAX_PATTERNS_PER_LIST: usize = 64;

/// Most file names in one `directory_index` list.
pub const MAX_DIRECTORY_INDEX_NAMES: usize = 64;

/// Longest directory index file name, in bytes.
pub const MAX_DIRECTORY_INDEX_NAME_LEN: usize = 255;

/// Most entries in one `default_params` map.
pub const MAX_DEFAULT_PARAMS: usize = 256;

/// Longest parameter name or default value in a `default_params` map, in bytes.
pub const MAX_DEFAULT_PARAM_LEN: usize = 1024;
