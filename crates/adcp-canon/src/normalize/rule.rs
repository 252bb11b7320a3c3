//! The thirteen classic URL normalization rules and where each is configured.

use std::fmt;

/// One of the thirteen classic URL normalization rules, numbered as in the
/// usual list (lowercase scheme and host, trailing slash, ... empty query).
///
/// Rules 1, 5, 6, 7 and 8 (and rule 2 for an empty path) are performed by
/// the identity canonicalizer, which always runs first; they preserve
/// meaning and cannot be switched off. The others are lossy and configured
/// by the option named by [`Rule::option_names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// 1. Lowercase the scheme and the host.
    LowercaseSchemeAndHost,
    /// 2. Add a trailing `/` (always to an empty path; optionally to directory-like paths).
    TrailingSlash,
    /// 3. Remove a directory index file name (`index.html`, `default.asp`, ...).
    RemoveDirectoryIndex,
    /// 4. Lowercase the path on servers with case-insensitive paths.
    LowercasePath,
    /// 5. Uppercase the hex digits of percent-escapes.
    UppercasePercentEncoding,
    /// 6. Remove the fragment.
    RemoveFragment,
    /// 7. Remove the scheme's default port.
    RemoveDefaultPort,
    /// 8. Remove `.` and `..` path segments.
    RemoveDotSegments,
    /// 9. Remove a leading `www.` label where it is an alias.
    RemoveWww,
    /// 10. Sort query parameters.
    SortQuery,
    /// 11. Remove unwanted query parameters.
    RemoveUnwantedParams,
    /// 12. Remove query parameters that carry their default value.
    RemoveDefaultParams,
    /// 13. Remove an empty query (a lone `?`).
    RemoveEmptyQuery,
}

impl Rule {
    /// All rules, in their conventional order.
    pub const ALL: [Rule; 13] = [
        Rule::LowercaseSchemeAndHost,
        Rule::TrailingSlash,
        Rule::RemoveDirectoryIndex,
        Rule::LowercasePath,
        Rule::UppercasePercentEncoding,
        Rule::RemoveFragment,
        Rule::RemoveDefaultPort,
        Rule::RemoveDotSegments,
        Rule::RemoveWww,
        Rule::SortQuery,
        Rule::RemoveUnwantedParams,
        Rule::RemoveDefaultParams,
        Rule::RemoveEmptyQuery,
    ];

    /// The rule's conventional number, 1 to 13.
    pub fn number(self) -> u8 {
        match self {
            Rule::LowercaseSchemeAndHost => 1,
            Rule::TrailingSlash => 2,
            Rule::RemoveDirectoryIndex => 3,
            Rule::LowercasePath => 4,
            Rule::UppercasePercentEncoding => 5,
            Rule::RemoveFragment => 6,
            Rule::RemoveDefaultPort => 7,
            Rule::RemoveDotSegments => 8,
            Rule::RemoveWww => 9,
            Rule::SortQuery => 10,
            Rule::RemoveUnwantedParams => 11,
            Rule::RemoveDefaultParams => 12,
            Rule::RemoveEmptyQuery => 13,
        }
    }

    /// Whether the rule is always applied, because the identity
    /// canonicalizer performs it. For [`Rule::TrailingSlash`] this is the
    /// empty-path half; the directory half is the `trailing_slash` option.
    pub fn is_always_applied(self) -> bool {
        matches!(
            self,
            Rule::LowercaseSchemeAndHost
                | Rule::UppercasePercentEncoding
                | Rule::RemoveFragment
                | Rule::RemoveDefaultPort
                | Rule::RemoveDotSegments
        )
    }

    /// Whether the configurable part of the rule can make two URLs that name
    /// different resources normalize to the same string. Lossy rules are
    /// off unless an option or a site rule enables them.
    pub fn is_lossy(self) -> bool {
        !self.is_always_applied()
    }

    /// Names of the [`NormalizeOptions`](super::NormalizeOptions) fields
    /// (equally, rules file keys) that configure the rule; empty for rules
    /// that are always applied.
    pub fn option_names(self) -> &'static [&'static str] {
        match self {
            Rule::TrailingSlash => &["trailing_slash"],
            Rule::RemoveDirectoryIndex => &["directory_index"],
            Rule::LowercasePath => &["case_insensitive_paths"],
            Rule::RemoveWww => &["www_alias"],
            Rule::SortQuery => &["sort_query"],
            Rule::RemoveUnwantedParams => &["keep_params", "remove_params"],
            Rule::RemoveDefaultParams => &["default_params", "drop_empty_params"],
            Rule::RemoveEmptyQuery => &["drop_empty_query"],
            Rule::LowercaseSchemeAndHost
            | Rule::UppercasePercentEncoding
            | Rule::RemoveFragment
            | Rule::RemoveDefaultPort
            | Rule::RemoveDotSegments => &[],
        }
    }

    /// A one-line description.
    pub fn description(self) -> &'static str {
        match self {
            Rule::LowercaseSchemeAndHost => "lowercase the scheme and the host",
            Rule::TrailingSlash => "add a trailing slash to empty and directory-like paths",
            Rule::RemoveDirectoryIndex => "remove a directory index file name",
            Rule::LowercasePath => "lowercase the path on case-insensitive servers",
            Rule::UppercasePercentEncoding => "uppercase percent-escape hex digits",
            Rule::RemoveFragment => "remove the fragment",
            Rule::RemoveDefaultPort => "remove the default port",
            Rule::RemoveDotSegments => "remove dot segments",
            Rule::RemoveWww => "remove a leading www label where it is an alias",
            Rule::SortQuery => "sort query parameters",
            Rule::RemoveUnwantedParams => "remove unwanted query parameters",
            Rule::RemoveDefaultParams => "remove query parameters with default values",
            Rule::RemoveEmptyQuery => "remove an empty query",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {}: {}", self.number(), self.description())
    }
}
