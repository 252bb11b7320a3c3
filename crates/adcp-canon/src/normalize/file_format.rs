//! The serde shape of a rules file, shared by JSON and TOML.
//!
//! These types only describe the syntax; [`SiteRules`](super::SiteRules)
//! validates them (host patterns, globs, limits, duplicates) into typed
//! values. Maps are read as ordered entry lists so that duplicate keys are
//! seen and reported instead of silently keeping the last one.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// Top level of a rules file: `{ "sites": { "<host pattern>": { ... } } }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    #[serde(default)]
    pub(crate) sites: Entries<RawSiteRule>,
}

/// One site's rule as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSiteRule {
    pub(crate) trailing_slash: Option<bool>,
    pub(crate) directory_index: Option<RawDirectoryIndex>,
    pub(crate) case_insensitive_paths: Option<bool>,
    pub(crate) www_alias: Option<bool>,
    pub(crate) sort_query: Option<bool>,
    pub(crate) keep_params: Option<Vec<String>>,
    pub(crate) remove_params: Option<Vec<String>>,
    pub(crate) default_params: Option<Entries<String>>,
    pub(crate) drop_empty_params: Option<bool>,
    pub(crate) drop_empty_query: Option<bool>,
}

/// `directory_index`: a boolean or a list of file names.
#[derive(Debug)]
pub(crate) enum RawDirectoryIndex {
    Flag(bool),
    Names(Vec<String>),
}

impl<'de> Deserialize<'de> for RawDirectoryIndex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDirectoryIndex;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a boolean or a list of file names")
            }

            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(RawDirectoryIndex::Flag(v))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push(name);
                }
                Ok(RawDirectoryIndex::Names(names))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A string-keyed map read in document order, duplicates included.
#[derive(Debug)]
pub(crate) struct Entries<V>(pub(crate) Vec<(String, V)>);

impl<V> Default for Entries<V> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
            type Value = Entries<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table keyed by strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, V>()? {
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor(PhantomData))
    }
}
