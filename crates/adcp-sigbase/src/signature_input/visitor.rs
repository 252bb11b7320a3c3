//! The reference `Signature-Input` parser: `sfv`'s visitor API, which
//! accepts every RFC 8941 form and reports every syntax error. Its plain
//! parser keeps only the last of duplicate keys and parameters; the visitor
//! sees them all, so each member keeps its own entry (duplicate labels are
//! judged by the caller) and a repeated parameter is an error of its
//! member. A member that is well-formed RFC 8941 but not signature metadata
//! (not an inner list, a component that is not a string, a repeated
//! parameter) does not stop the parse: the problem is recorded on its entry
//! and the rest of the member is read for syntax only, because only the
//! caller knows whether that member is the one it processes.

use super::{RawEntries, RawEntry};
use crate::error::SignatureHeader;
use crate::sf::{BareValue, Parameters};
use crate::Error;
use sfv::visitor::{DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ParameterVisitor};
use sfv::{BareItemFromInput, KeyRef};

/// Parses `value` into raw members (each with its first problem, if any),
/// or the syntax error.
pub(super) fn parse(value: &[u8]) -> Result<RawEntries, Error> {
    let mut raw = RawEntries::new();
    sfv::Parser::new(value)
        .with_version(sfv::Version::Rfc8941)
        .parse_dictionary_with_visitor(DictV { entries: &mut raw })
        .map_err(|e| Error::HeaderMalformed {
            header: SignatureHeader::SignatureInput,
            detail: e.to_string(),
        })?;
    Ok(raw)
}

/// The visitors' error type. They record problems instead of stopping, so
/// it only stands for an impossible state (an entry just pushed is gone).
#[derive(Debug)]
struct Abort;

impl std::fmt::Display for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rejected by the Signature-Input visitor")
    }
}

impl std::error::Error for Abort {}

/// Records `e` as the member's problem unless it already has one (the
/// first problem is the one reported).
fn record(slot: &mut Option<Error>, e: Error) {
    if slot.is_none() {
        *slot = Some(e);
    }
}

struct DictV<'s> {
    entries: &'s mut RawEntries,
}

impl<'de> DictionaryVisitor<'de> for DictV<'_> {
    type Out = ();
    type Error = Abort;

    fn entry(&mut self, key: &'de KeyRef) -> Result<impl EntryVisitor<'de>, Abort> {
        self.entries.push(RawEntry {
            label: key.as_str().to_owned(),
            components: Vec::new(),
            params: Parameters::new(),
            serialized: None,
            problem: None,
        });
        match self.entries.last_mut() {
            Some(entry) => Ok(EntryV { entry }),
            None => Err(Abort),
        }
    }

    fn finish(self) -> Result<(), Abort> {
        Ok(())
    }
}

struct EntryV<'s> {
    entry: &'s mut RawEntry,
}

impl<'de> EntryVisitor<'de> for EntryV<'_> {
    type Error = Abort;

    fn item(self) -> Result<impl ItemVisitor<'de>, Abort> {
        let label = self.entry.label.clone();
        record(&mut self.entry.problem, Error::NotInnerList { label });
        Ok(Ignored)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Abort> {
        Ok(ListV { entry: self.entry })
    }
}

struct ListV<'s> {
    entry: &'s mut RawEntry,
}

impl<'de> InnerListVisitor<'de> for ListV<'_> {
    type Error = Abort;

    fn item(&mut self) -> Result<impl ItemVisitor<'de>, Abort> {
        Ok(ItemV {
            entry: &mut *self.entry,
        })
    }

    fn finish(self) -> Result<impl ParameterVisitor<'de>, Abort> {
        let RawEntry {
            label, params, problem, ..
        } = self.entry;
        Ok(ParamV {
            label,
            params: Some(params),
            problem,
        })
    }
}

struct ItemV<'s> {
    entry: &'s mut RawEntry,
}

impl<'de> ItemVisitor<'de> for ItemV<'_> {
    type Out = ();
    type Error = Abort;

    fn bare_item(self, bare_item: BareItemFromInput<'de>) -> Result<impl ParameterVisitor<'de, Out = ()>, Abort> {
        let RawEntry {
            label,
            components,
            problem,
            ..
        } = self.entry;
        let sfv::GenericBareItem::String(name) = bare_item else {
            record(problem, Error::ComponentNotString { label: label.clone() });
            // The item's parameters are read for syntax and dropped.
            return Ok(ParamV {
                label,
                params: None,
                problem,
            });
        };
        components.push((crate::component::intern_name(name.as_str()), Parameters::new()));
        match components.last_mut() {
            Some((_, params)) => Ok(ParamV {
                label,
                params: Some(params),
                problem,
            }),
            None => Err(Abort),
        }
    }
}

struct ParamV<'s> {
    label: &'s str,
    /// Where the parameters go; `None` drops them.
    params: Option<&'s mut Parameters>,
    problem: &'s mut Option<Error>,
}

impl<'de> ParameterVisitor<'de> for ParamV<'_> {
    type Out = ();
    type Error = Abort;

    fn parameter(&mut self, key: &'de KeyRef, value: BareItemFromInput<'de>) -> Result<(), Abort> {
        let Some(params) = self.params.as_deref_mut() else {
            return Ok(());
        };
        if params.contains(key.as_str()) {
            record(
                self.problem,
                Error::DuplicateParameter {
                    label: self.label.to_owned(),
                    parameter: key.as_str().to_owned(),
                },
            );
            return Ok(());
        }
        params.push(key.as_str(), BareValue::from(value));
        Ok(())
    }

    fn finish(self) -> Result<(), Abort> {
        Ok(())
    }
}
