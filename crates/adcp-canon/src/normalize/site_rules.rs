//! Per-site rules, keyed by host pattern and loaded from JSON or TOML.
//!
//! A rules file has one top-level table, `sites`, mapping a host pattern
//! (see [`HostPattern`]) to a [`SiteRule`]:
//!
//! ```
//! use adcp_canon::normalize::SiteRules;
//!
//! let rules = SiteRules::from_toml_str(r#"
//! [sites."example.com"]
//! www_alias = true
//! directory_index = true
//! keep_params = ["id", "page"]
//!
//! [sites."*.example.com"]
//! remove_params = ["utm_*"]
//! "#)?;
//! assert_eq!(rules.len(), 2);
//! # Ok::<(), adcp_canon::normalize::SiteRulesError>(())
//! ```
//!
//! # Precedence
//!
//! Exactly one rule applies to a host, the most specific one that matches:
//! an exact pattern beats any `*.` pattern, a `*.` pattern with more labels
//! beats one with fewer (`*.a.example.com` beats `*.example.com` for
//! `x.a.example.com`), and `*` applies only when nothing else matches.
//! Rules are not merged: a field the winning rule leaves out falls back to
//! the [`NormalizeOptions`](super::NormalizeOptions), not to a less specific
//! rule. (`www_alias` is the one field looked up on two hosts; see
//! [`Normalizer`](super::Normalizer).)

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use super::error::SiteRulesError;
use super::file_format::{RawDirectoryIndex, RawFile, RawSiteRule};
use super::glob::Glob;
use super::host_pattern::{is_ip_literal, label_count, HostPattern};
use super::limits::{
    MAX_DEFAULT_PARAMS, MAX_DEFAULT_PARAM_LEN, MAX_DIRECTORY_INDEX_NAMES, MAX_DIRECTORY_INDEX_NAME_LEN,
    MAX_PATTERNS_PER_LIST, MAX_RULES_FILE_LEN, MAX_SITES,
};
use super::options::{DirectoryIndex, ParamFilter};

/// The rules for one host pattern. Every field is optional: `None` means
/// "use the value from [`NormalizeOptions`](super::NormalizeOptions)".
///
/// The fields and their rules-file keys share names, except `param_filter`,
/// which is written as either `keep_params` or `remove_params` (a list of
/// globs; setting both is an error).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SiteRule {
    /// Rule 2: add `/` to directory-like paths.
    pub trailing_slash: Option<bool>,
    /// Rule 3: directory index names to remove (`true`, `false` or a list in a file).
    pub directory_index: Option<DirectoryIndex>,
    /// Rule 4: the site's paths are case-insensitive; lowercase them.
    pub case_insensitive_paths: Option<bool>,
    /// Rule 9: `www.<host>` is an alias of `<host>`.
    pub www_alias: Option<bool>,
    /// Rule 10: sort query parameters.
    pub sort_query: Option<bool>,
    /// Rule 11: `keep_params` (allow-list) or `remove_params` (block-list).
    pub param_filter: Option<ParamFilter>,
    /// Rule 12: parameter name to default value; parameters carrying their
    /// default are removed.
    pub default_params: Option<BTreeMap<String, String>>,
    /// Rule 12: remove parameters with an explicitly empty value (`id=`).
    pub drop_empty_params: Option<bool>,
    /// Rule 13: remove a lone `?`.
    pub drop_empty_query: Option<bool>,
}

/// Format of a rules file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RulesFormat {
    /// JSON.
    Json,
    /// TOML.
    Toml,
}

impl RulesFormat {
    /// The format named by a file's extension (`.json` or `.toml`, any case).
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("json") {
            Some(Self::Json)
        } else if ext.eq_ignore_ascii_case("toml") {
            Some(Self::Toml)
        } else {
            None
        }
    }
}

/// A set of [`SiteRule`]s keyed by [`HostPattern`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SiteRules {
    exact: BTreeMap<String, SiteRule>,
    subdomains: BTreeMap<String, SiteRule>,
    any: Option<SiteRule>,
}

/// The rule that applies to a host, and the pattern that selected it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteMatch<'a> {
    kind: MatchKind,
    key: &'a str,
    rule: &'a SiteRule,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchKind {
    Any,
    Subdomains,
    Exact,
}

impl<'a> SiteMatch<'a> {
    /// The matching rule.
    pub fn rule(&self) -> &'a SiteRule {
        self.rule
    }

    /// The pattern that matched.
    pub fn pattern(&self) -> HostPattern {
        match self.kind {
            MatchKind::Any => HostPattern::Any,
            MatchKind::Subdomains => HostPattern::Subdomains(self.key.to_owned()),
            MatchKind::Exact => HostPattern::Exact(self.key.to_owned()),
        }
    }

    /// Sort key: greater is more specific (see [`HostPattern::cmp_specificity`]).
    pub(crate) fn specificity(&self) -> (u8, usize) {
        match self.kind {
            MatchKind::Any => (0, 0),
            MatchKind::Subdomains => (1, label_count(self.key)),
            MatchKind::Exact => (2, label_count(self.key)),
        }
    }
}

impl SiteRules {
    /// An empty set: no host has site rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of host patterns.
    pub fn len(&self) -> usize {
        self.exact.len() + self.subdomains.len() + usize::from(self.any.is_some())
    }

    /// Whether there are no host patterns.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parses a JSON rules document.
    pub fn from_json_str(input: &str) -> Result<Self, SiteRulesError> {
        Self::parse(input, RulesFormat::Json)
    }

    /// Parses a TOML rules document.
    pub fn from_toml_str(input: &str) -> Result<Self, SiteRulesError> {
        Self::parse(input, RulesFormat::Toml)
    }

    /// Parses a rules document in the given format.
    pub fn parse(input: &str, format: RulesFormat) -> Result<Self, SiteRulesError> {
        if input.len() > MAX_RULES_FILE_LEN {
            return Err(SiteRulesError::TooLarge {
                len: input.len(),
                max: MAX_RULES_FILE_LEN,
            });
        }
        let raw: RawFile = match format {
            RulesFormat::Json => serde_json::from_str(input).map_err(SiteRulesError::Json)?,
            RulesFormat::Toml => toml::from_str(input).map_err(SiteRulesError::Toml)?,
        };
        let count = raw.sites.0.len();
        if count > MAX_SITES {
            return Err(SiteRulesError::TooMany {
                what: "sites",
                count,
                max: MAX_SITES,
            });
        }
        let mut rules = Self::new();
        for (key, raw_rule) in raw.sites.0 {
            let rule = compile_rule(&key, raw_rule)?;
            rules.insert(&key, rule)?;
        }
        Ok(rules)
    }

    /// Reads and parses a rules file, choosing JSON or TOML by its extension.
    /// At most [`MAX_RULES_FILE_LEN`] bytes are read.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SiteRulesError> {
        let path = path.as_ref();
        let format = RulesFormat::from_path(path).ok_or_else(|| SiteRulesError::UnknownFormat {
            path: path.to_path_buf(),
        })?;
        let io_err = |source| SiteRulesError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io_err)?;
        let limit = u64::try_from(MAX_RULES_FILE_LEN).unwrap_or(u64::MAX).saturating_add(1);
        let mut text = String::new();
        file.take(limit).read_to_string(&mut text).map_err(io_err)?;
        Self::parse(&text, format)
    }

    /// Adds a rule for `pattern` (see [`HostPattern::parse`]).
    ///
    /// Fails if the pattern is invalid, already present (compared after
    /// canonicalization), the rule's lists exceed their limits or hold
    /// invalid entries, or the set is full.
    pub fn insert(&mut self, pattern: &str, rule: SiteRule) -> Result<(), SiteRulesError> {
        let parsed = HostPattern::parse(pattern).map_err(|source| SiteRulesError::InvalidHostPattern {
            pattern: pattern.to_owned(),
            source,
        })?;
        validate_rule(pattern, &rule)?;
        if self.get(&parsed).is_some() {
            return Err(SiteRulesError::DuplicateHost {
                pattern: pattern.to_owned(),
                canonical: parsed.to_string(),
            });
        }
        if self.len() >= MAX_SITES {
            return Err(SiteRulesError::TooMany {
                what: "sites",
                count: self.len().saturating_add(1),
                max: MAX_SITES,
            });
        }
        match parsed {
            HostPattern::Any => self.any = Some(rule),
            HostPattern::Subdomains(s) => {
                self.subdomains.insert(s, rule);
            }
            HostPattern::Exact(h) => {
                self.exact.insert(h, rule);
            }
        }
        Ok(())
    }

    /// The rule stored under exactly this pattern.
    pub fn get(&self, pattern: &HostPattern) -> Option<&SiteRule> {
        match pattern {
            HostPattern::Any => self.any.as_ref(),
            HostPattern::Subdomains(s) => self.subdomains.get(s),
            HostPattern::Exact(h) => self.exact.get(h),
        }
    }

    /// The most specific rule matching `host`, a canonical host as returned
    /// by [`CanonicalUrl::host`](crate::CanonicalUrl::host).
    pub fn lookup(&self, host: &str) -> Option<SiteMatch<'_>> {
        if let Some((key, rule)) = self.exact.get_key_value(host) {
            return Some(SiteMatch {
                kind: MatchKind::Exact,
                key,
                rule,
            });
        }
        // Walk parent domains from the longest to the shortest, so the
        // first `*.` hit is the most specific one. IP addresses have no
        // parent domains.
        let mut rest = if is_ip_literal(host) { "" } else { host };
        while let Some((_, parent)) = rest.split_once('.') {
            if let Some((key, rule)) = self.subdomains.get_key_value(parent) {
                return Some(SiteMatch {
                    kind: MatchKind::Subdomains,
                    key,
                    rule,
                });
            }
            rest = parent;
        }
        self.any.as_ref().map(|rule| SiteMatch {
            kind: MatchKind::Any,
            key: "",
            rule,
        })
    }

    /// All patterns and their rules: exact hosts, then `*.` patterns, then `*`.
    pub fn iter(&self) -> impl Iterator<Item = (HostPattern, &SiteRule)> + '_ {
        let exact = self.exact.iter().map(|(h, r)| (HostPattern::Exact(h.clone()), r));
        let subdomains = self
            .subdomains
            .iter()
            .map(|(s, r)| (HostPattern::Subdomains(s.clone()), r));
        let any = self.any.iter().map(|r| (HostPattern::Any, r));
        exact.chain(subdomains).chain(any)
    }
}

/// Turns a rule as written into a typed rule.
fn compile_rule(site: &str, raw: RawSiteRule) -> Result<SiteRule, SiteRulesError> {
    let param_filter = match (raw.keep_params, raw.remove_params) {
        (Some(_), Some(_)) => return Err(SiteRulesError::ConflictingParamFilters { site: site.to_owned() }),
        (Some(keep), None) => Some(ParamFilter::Keep(compile_globs(site, "keep_params", &keep)?)),
        (None, Some(remove)) => Some(ParamFilter::Remove(compile_globs(site, "remove_params", &remove)?)),
        (None, None) => None,
    };
    let directory_index = raw.directory_index.map(|d| match d {
        RawDirectoryIndex::Flag(false) => DirectoryIndex::Off,
        RawDirectoryIndex::Flag(true) => DirectoryIndex::Default,
        RawDirectoryIndex::Names(names) => DirectoryIndex::Names(names),
    });
    let default_params = match raw.default_params {
        None => None,
        Some(entries) => {
            check_count("default_params", entries.0.len(), MAX_DEFAULT_PARAMS)?;
            let mut map = BTreeMap::new();
            for (name, value) in entries.0 {
                if map.contains_key(&name) {
                    return Err(SiteRulesError::DuplicateDefaultParam {
                        site: site.to_owned(),
                        name,
                    });
                }
                map.insert(name, value);
            }
            Some(map)
        }
    };
    Ok(SiteRule {
        trailing_slash: raw.trailing_slash,
        directory_index,
        case_insensitive_paths: raw.case_insensitive_paths,
        www_alias: raw.www_alias,
        sort_query: raw.sort_query,
        param_filter,
        default_params,
        drop_empty_params: raw.drop_empty_params,
        drop_empty_query: raw.drop_empty_query,
    })
}

fn compile_globs(site: &str, field: &'static str, patterns: &[String]) -> Result<Vec<Glob>, SiteRulesError> {
    check_count(field, patterns.len(), MAX_PATTERNS_PER_LIST)?;
    patterns
        .iter()
        .map(|p| {
            Glob::new(p).map_err(|source| SiteRulesError::InvalidGlob {
                site: site.to_owned(),
                field,
                pattern: p.clone(),
                source,
            })
        })
        .collect()
}

fn check_count(what: &'static str, count: usize, max: usize) -> Result<(), SiteRulesError> {
    if count > max {
        Err(SiteRulesError::TooMany { what, count, max })
    } else {
        Ok(())
    }
}

/// Limits and well-formedness checks shared by files and [`SiteRules::insert`].
fn validate_rule(site: &str, rule: &SiteRule) -> Result<(), SiteRulesError> {
    match &rule.param_filter {
        Some(ParamFilter::Keep(globs)) => {
            check_count("keep_params", globs.len(), MAX_PATTERNS_PER_LIST)?;
        }
        Some(ParamFilter::Remove(globs)) => {
            check_count("remove_params", globs.len(), MAX_PATTERNS_PER_LIST)?;
        }
        Some(ParamFilter::KeepAll) | None => {}
    }
    if let Some(DirectoryIndex::Names(names)) = &rule.directory_index {
        check_count("directory_index", names.len(), MAX_DIRECTORY_INDEX_NAMES)?;
        if let Some(bad) = names.iter().find(|n| !is_valid_index_name(n)) {
            return Err(SiteRulesError::InvalidDirectoryIndex {
                site: site.to_owned(),
                name: bad.clone(),
            });
        }
    }
    if let Some(defaults) = &rule.default_params {
        check_count("default_params", defaults.len(), MAX_DEFAULT_PARAMS)?;
        if let Some((bad, _)) = defaults.iter().find(|(name, value)| {
            name.is_empty() || name.len() > MAX_DEFAULT_PARAM_LEN || value.len() > MAX_DEFAULT_PARAM_LEN
        }) {
            return Err(SiteRulesError::InvalidDefaultParam {
                site: site.to_owned(),
                name: bad.clone(),
            });
        }
    }
    Ok(())
}

/// A directory index name is a single, literal path segment.
fn is_valid_index_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_DIRECTORY_INDEX_NAME_LEN
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| matches!(c, '/' | '?' | '#' | '%') || c.is_whitespace() || c.is_control())
}
