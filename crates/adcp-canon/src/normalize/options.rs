//! Global options of a [`Normalizer`](super::Normalizer).
//!
//! [`NormalizeOptions::default()`] enables no lossy rule: the normalizer then
//! only performs what the identity canonicalizer performs (rules 1, 2 for
//! the empty path, 5, 6, 7 and 8). Every other rule is switched on here for
//! all hosts, or per host by a [`SiteRule`](super::SiteRule), which overrides
//! these options field by field.

use std::collections::BTreeMap;

use super::glob::Glob;

/// File names removed by [`DirectoryIndex::Default`].
///
/// Compared case-sensitively unless the site has case-insensitive paths.
pub const DEFAULT_DIRECTORY_INDEX: &[&str] = &[
    "index.html",
    "index.htm",
    "index.shtml",
    "index.php",
    "index.asp",
    "index.aspx",
    "index.jsp",
    "default.asp",
    "default.aspx",
    "default.htm",
    "default.html",
];

/// Rule 3: which last path segments count as a directory index and are removed.
///
/// In a rules file: `false` is [`Off`](Self::Off), `true` is
/// [`Default`](Self::Default), and a list of file names is [`Names`](Self::Names).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DirectoryIndex {
    /// Keep index file names (the default).
    #[default]
    Off,
    /// Remove the names in [`DEFAULT_DIRECTORY_INDEX`].
    Default,
    /// Remove exactly these names.
    Names(Vec<String>),
}

impl DirectoryIndex {
    /// Whether any name is removed.
    pub fn is_enabled(&self) -> bool {
        match self {
            Self::Off => false,
            Self::Default => true,
            Self::Names(names) => !names.is_empty(),
        }
    }

    /// Whether `segment` (a last path segment) is one of the index names.
    /// With `ignore_ascii_case`, ASCII letters compare case-insensitively.
    pub fn is_index(&self, segment: &str, ignore_ascii_case: bool) -> bool {
        let eq = |name: &str| {
            if ignore_ascii_case {
                name.eq_ignore_ascii_case(segment)
            } else {
                name == segment
            }
        };
        match self {
            Self::Off => false,
            Self::Default => DEFAULT_DIRECTORY_INDEX.iter().any(|n| eq(n)),
            Self::Names(names) => names.iter().any(|n| eq(n)),
        }
    }
}

/// Rule 11: which query parameters survive, by name.
///
/// Names are matched after percent-decoding (`utm%5Fsource` is `utm_source`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ParamFilter {
    /// Keep every parameter (the default).
    #[default]
    KeepAll,
    /// Allow-list: keep only parameters whose name matches one of the globs
    /// (an empty list drops every parameter).
    Keep(Vec<Glob>),
    /// Block-list: drop parameters whose name matches one of the globs.
    Remove(Vec<Glob>),
}

impl ParamFilter {
    /// Whether the filter can remove anything.
    pub fn is_enabled(&self) -> bool {
        match self {
            Self::KeepAll => false,
            Self::Keep(_) => true,
            Self::Remove(globs) => !globs.is_empty(),
        }
    }

    /// Whether a parameter with (decoded) name `name` is kept.
    pub fn keeps(&self, name: &str) -> bool {
        match self {
            Self::KeepAll => true,
            Self::Keep(globs) => super::glob::any_matches(globs, name),
            Self::Remove(globs) => !super::glob::any_matches(globs, name),
        }
    }
}

/// Options applied to every host; a matching [`SiteRule`](super::SiteRule)
/// overrides each field it sets.
///
/// The default enables only semantics-preserving behaviour. Fields marked
/// *lossy* may make two different resources compare equal.
///
/// ```
/// use adcp_canon::normalize::{Glob, NormalizeOptions, ParamFilter};
///
/// let options = NormalizeOptions {
///     sort_query: true,
///     param_filter: ParamFilter::Remove(vec![Glob::new("utm_*")?]),
///     ..NormalizeOptions::default()
/// };
/// assert!(options.sort_query);
/// # Ok::<(), adcp_canon::normalize::GlobError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NormalizeOptions {
    /// Rule 2 (lossy): append `/` to a path whose last segment is non-empty
    /// and contains no `.` (`/a/b` becomes `/a/b/`). The empty path always
    /// becomes `/`, independently of this option.
    pub trailing_slash: bool,
    /// Rule 3 (lossy): remove a directory index file name from the end of the path.
    pub directory_index: DirectoryIndex,
    /// Rule 4 (lossy): the server treats paths case-insensitively, so ASCII
    /// letters in the path are lowercased (percent-escapes keep their
    /// uppercase hex digits).
    pub case_insensitive_paths: bool,
    /// Rule 9 (lossy): `www.<host>` is an alias of `<host>`; the leading
    /// `www.` label is removed.
    pub www_alias: bool,
    /// Rule 10 (lossy): sort query parameters by name, then value (stable;
    /// duplicates are kept).
    pub sort_query: bool,
    /// Rule 11 (lossy): remove unwanted query parameters.
    pub param_filter: ParamFilter,
    /// Rule 12 (lossy): parameters whose (decoded) value equals the default
    /// given here are removed. A parameter without `=` has the empty value.
    pub default_params: BTreeMap<String, String>,
    /// Rule 12 (lossy): remove parameters written with an explicitly empty
    /// value (`id=`). A bare flag without `=` (`?edit`) is kept.
    pub drop_empty_params: bool,
    /// Rule 13 (lossy): remove a `?` that is followed by nothing.
    pub drop_empty_query: bool,
}
