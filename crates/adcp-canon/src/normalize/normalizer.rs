//! The [`Normalizer`]: canonicalize, then apply the enabled lossy rules.

use std::borrow::Cow;

use super::error::NormalizeError;
use super::limits::MAX_INPUT_LEN;
use super::options::{DirectoryIndex, NormalizeOptions, ParamFilter};
use super::query::{self, QueryRules};
use super::site_rules::{SiteMatch, SiteRule, SiteRules};
use super::{path, www};
use crate::{canonicalize, CanonicalUrl, HostKind};

/// A lossy URL normalizer for deduplication.
///
/// **Never use its output for identity, signing or access control**: it
/// deliberately maps URLs that may name different resources to the same
/// string. Use [`canonicalize`](crate::canonicalize) for that.
///
/// Normalization runs in this order, each step on the previous one's output:
///
/// 1. the identity canonicalizer (rules 1, 2 for the empty path, 5, 6, 7, 8);
/// 2. rule 9, `www.` removal, repeated while it applies (so
///    `www.www.example.com` is handled in one pass);
/// 3. the [`SiteRule`] for the resulting host is looked up and overlaid on
///    the [`NormalizeOptions`];
/// 4. path: rule 4 (lowercase), then rule 3 (directory index), then rule 2
///    (directory trailing slash);
/// 5. query: rules 11 and 12 (removal), then rule 10 (sort), then rule 13;
/// 6. the result is canonicalized again, so the output is always a
///    canonical URL and normalizing it again returns it unchanged.
///
/// Whether `www.<host>` is an alias of `<host>` is read from the most
/// specific of the rules matching `www.<host>` and `<host>` that sets
/// `www_alias` (on a tie, the one for `www.<host>`), else from the options.
/// So `"example.com": { "www_alias": true }` covers `www.example.com`.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    options: NormalizeOptions,
    site_rules: SiteRules,
}

/// The options in force for one host: site rule fields over global options.
struct Effective<'a> {
    trailing_slash: bool,
    directory_index: &'a DirectoryIndex,
    case_insensitive_paths: bool,
    query: QueryRules<'a>,
}

impl<'a> Effective<'a> {
    fn new(options: &'a NormalizeOptions, site: Option<&'a SiteRule>) -> Self {
        let flag = |get: fn(&SiteRule) -> Option<bool>, global: bool| site.and_then(get).unwrap_or(global);
        let param_filter: &'a ParamFilter = site
            .and_then(|s| s.param_filter.as_ref())
            .unwrap_or(&options.param_filter);
        Effective {
            trailing_slash: flag(|s| s.trailing_slash, options.trailing_slash),
            directory_index: site
                .and_then(|s| s.directory_index.as_ref())
                .unwrap_or(&options.directory_index),
            case_insensitive_paths: flag(|s| s.case_insensitive_paths, options.case_insensitive_paths),
            query: QueryRules {
                sort: flag(|s| s.sort_query, options.sort_query),
                filter: param_filter,
                defaults: site
                    .and_then(|s| s.default_params.as_ref())
                    .unwrap_or(&options.default_params),
                drop_empty_params: flag(|s| s.drop_empty_params, options.drop_empty_params),
                drop_empty_query: flag(|s| s.drop_empty_query, options.drop_empty_query),
            },
        }
    }
}

impl Normalizer {
    /// A normalizer applying `options` to every host, without site rules.
    pub fn new(options: NormalizeOptions) -> Self {
        Self::with_site_rules(options, SiteRules::new())
    }

    /// A normalizer applying `options`, overridden per host by `site_rules`.
    pub fn with_site_rules(options: NormalizeOptions, site_rules: SiteRules) -> Self {
        Self { options, site_rules }
    }

    /// The global options.
    pub fn options(&self) -> &NormalizeOptions {
        &self.options
    }

    /// The site rules.
    pub fn site_rules(&self) -> &SiteRules {
        &self.site_rules
    }

    /// Normalizes `url` for deduplication.
    ///
    /// Fails if `url` is longer than [`MAX_INPUT_LEN`] bytes or the
    /// identity canonicalizer rejects it. The result is idempotent:
    /// normalizing it again returns it unchanged.
    pub fn normalize(&self, url: &str) -> Result<String, NormalizeError> {
        if url.len() > MAX_INPUT_LEN {
            return Err(NormalizeError::InputTooLong {
                len: url.len(),
                max: MAX_INPUT_LEN,
            });
        }
        let canonical = canonicalize(url)?;
        self.normalize_canonical(&canonical)
    }

    /// Normalizes an already canonicalized URL.
    pub fn normalize_canonical(&self, url: &CanonicalUrl) -> Result<String, NormalizeError> {
        let host = self.resolve_host(url);
        let site = self.site_rules.lookup(host).map(|m| m.rule());
        let eff = Effective::new(&self.options, site);

        let lowered = if eff.case_insensitive_paths {
            path::lowercase(url.path())
        } else {
            Cow::Borrowed(url.path())
        };
        let without_index = if eff.directory_index.is_enabled() {
            path::remove_directory_index(&lowered, eff.directory_index, eff.case_insensitive_paths)
        } else {
            &lowered
        };
        let new_path = if eff.trailing_slash {
            path::add_directory_slash(without_index)
        } else {
            Cow::Borrowed(without_index)
        };
        let new_query = query::apply(url.query(), &eff.query);

        if host == url.host() && new_path == url.path() && new_query.as_deref() == url.query() {
            return Ok(url.as_str().to_owned());
        }

        let mut out = String::with_capacity(url.as_str().len());
        out.push_str(url.scheme());
        out.push_str("://");
        out.push_str(host);
        if let Some(port) = url.port() {
            out.push(':');
            out.push_str(&port.to_string());
        }
        out.push_str(&new_path);
        if let Some(q) = new_query {
            out.push('?');
            out.push_str(&q);
        }
        match canonicalize(&out) {
            Ok(c) => Ok(c.as_str().to_owned()),
            Err(source) => Err(NormalizeError::InvalidOutput { output: out, source }),
        }
    }

    /// Rule 9: strips `www.` labels while the site says they are aliases.
    fn resolve_host<'u>(&self, url: &'u CanonicalUrl) -> &'u str {
        let mut host = url.host();
        if url.host_kind() != HostKind::Domain {
            return host;
        }
        while let Some(bare) = www::strip_candidate(host) {
            if !self.is_www_alias(host, bare) {
                break;
            }
            host = bare;
        }
        host
    }

    fn is_www_alias(&self, www_host: &str, bare: &str) -> bool {
        let mut found: Vec<SiteMatch<'_>> = [self.site_rules.lookup(www_host), self.site_rules.lookup(bare)]
            .into_iter()
            .flatten()
            .collect();
        // Stable: on equal specificity the `www.` host's rule stays first.
        found.sort_by_key(|m| std::cmp::Reverse(m.specificity()));
        found
            .iter()
            .find_map(|m| m.rule().www_alias)
            .unwrap_or(self.options.www_alias)
    }
}
