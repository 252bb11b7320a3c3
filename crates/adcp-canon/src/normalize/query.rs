//! Lossy query rules (10, 11, 12 and 13) applied to an already canonical query.
//!
//! The query is split on `&` into parameters and each parameter on its first
//! `=` into a name and a value. Names and values are compared after
//! percent-decoding (`+` is not treated as a space), but the surviving
//! parameters are written back exactly as they appeared, so the output stays
//! in canonical form. Empty parameters (`a=1&&b=2`) are dropped whenever the
//! query is rewritten.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::options::ParamFilter;

/// The query rules in force for one URL.
pub(crate) struct QueryRules<'a> {
    pub(crate) sort: bool,
    pub(crate) filter: &'a ParamFilter,
    pub(crate) defaults: &'a BTreeMap<String, String>,
    pub(crate) drop_empty_params: bool,
    pub(crate) drop_empty_query: bool,
}

impl QueryRules<'_> {
    fn edits_params(&self) -> bool {
        self.sort || self.filter.is_enabled() || !self.defaults.is_empty() || self.drop_empty_params
    }
}

/// One `name[=value]` parameter, borrowed from the query.
struct Param<'a> {
    raw: &'a str,
    raw_name: &'a str,
    raw_value: Option<&'a str>,
    name: Cow<'a, str>,
    value: Cow<'a, str>,
}

impl<'a> Param<'a> {
    fn parse(raw: &'a str) -> Self {
        let (raw_name, raw_value) = match raw.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (raw, None),
        };
        Param {
            raw,
            raw_name,
            raw_value,
            name: percent_decode(raw_name),
            value: percent_decode(raw_value.unwrap_or("")),
        }
    }

    fn order(&self, other: &Self) -> Ordering {
        self.name
            .cmp(&other.name)
            .then_with(|| self.value.cmp(&other.value))
            .then_with(|| self.raw_name.cmp(other.raw_name))
            .then_with(|| self.raw_value.cmp(&other.raw_value))
    }
}

/// Applies the query rules. `None` means the URL ends up without a query.
///
/// An originally empty query (`?`) is only removed by rule 13. A non-empty
/// query whose every parameter is removed disappears with its `?`.
pub(crate) fn apply<'q>(query: Option<&'q str>, rules: &QueryRules<'_>) -> Option<Cow<'q, str>> {
    let query = query?;
    if query.is_empty() {
        return if rules.drop_empty_query {
            None
        } else {
            Some(Cow::Borrowed(query))
        };
    }
    if !rules.edits_params() {
        return Some(Cow::Borrowed(query));
    }
    let mut params: Vec<Param<'q>> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(Param::parse)
        .filter(|p| rules.filter.keeps(&p.name))
        .filter(|p| rules.defaults.get(p.name.as_ref()).map(String::as_str) != Some(p.value.as_ref()))
        .filter(|p| !(rules.drop_empty_params && p.raw_value == Some("")))
        .collect();
    if params.is_empty() {
        return None;
    }
    if rules.sort {
        params.sort_by(|a, b| a.order(b));
    }
    let mut out = String::with_capacity(query.len());
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(p.raw);
    }
    if out == query {
        Some(Cow::Borrowed(query))
    } else {
        Some(Cow::Owned(out))
    }
}

/// Decodes `%XX` escapes. Input that does not decode to UTF-8, or has a
/// malformed escape, is returned unchanged.
pub(crate) fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = bytes.get(i + 1).and_then(|h| hex_value(*h));
            let lo = bytes.get(i + 2).and_then(|l| hex_value(*l));
            match (hi, lo) {
                (Some(hi), Some(lo)) => {
                    out.push(hi * 16 + lo);
                    i += 3;
                    continue;
                }
                _ => return Cow::Borrowed(s),
            }
        }
        out.push(b);
        i += 1;
    }
    match String::from_utf8(out) {
        Ok(decoded) => Cow::Owned(decoded),
        Err(_) => Cow::Borrowed(s),
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
