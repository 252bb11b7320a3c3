//! The reference `Signature-Input` parser: `sfv`'s visitor API, which
//! accepts every RFC 8941 form and reports every error, and lets us reject
//! duplicate labels and parameters (its plain parser keeps the last).

use super::{RawEntries, RawEntry};
use crate::error::SignatureHeader;
use crate::sf::{BareValue, Parameters};
use crate::Error;
use sfv::visitor::{DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ParameterVisitor};
use sfv::{BareItemFromInput, KeyRef};

/// Parses `value` into raw members, or the precise error.
pub(super) fn parse(value: &[u8]) -> Result<RawEntries, Error> {
    let mut raw = RawEntries::new();
    let mut fail = None;
    let parsed = sfv::Parser::new(value)
        .with_version(sfv::Version::Rfc8941)
        .parse_dictionary_with_visitor(DictV {
            entries: &mut raw,
            fail: &mut fail,
        });
    if let Some(e) = fail {
        return Err(e);
    }
    if let Err(e) = parsed {
        return Err(Error::HeaderMalformed {
            header: SignatureHeader::SignatureInput,
            detail: e.to_string(),
        });
    }
    Ok(raw)
}

/// Stops the sfv parser; the real error is in the visitor's `fail` slot.
#[derive(Debug)]
struct Abort;

impl std::fmt::Display for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rejected by the Signature-Input visitor")
    }
}

impl std::error::Error for Abort {}

struct DictV<'s> {
    entries: &'s mut RawEntries,
    fail: &'s mut Option<Error>,
}

impl<'de> DictionaryVisitor<'de> for DictV<'_> {
    type Out = ();
    type Error = Abort;

    fn entry(&mut self, key: &'de KeyRef) -> Result<impl EntryVisitor<'de>, Abort> {
        let label = key.as_str();
        if self.entries.iter().any(|e| e.label == label) {
            *self.fail = Some(Error::DuplicateLabel {
                header: SignatureHeader::SignatureInput,
                label: label.to_owned(),
            });
            return Err(Abort);
        }
        self.entries.push(RawEntry {
            label: label.to_owned(),
            components: Vec::new(),
            params: Parameters::new(),
            serialized: None,
        });
        match self.entries.last_mut() {
            Some(entry) => Ok(EntryV {
                entry,
                fail: &mut *self.fail,
            }),
            None => Err(Abort),
        }
    }

    fn finish(self) -> Result<(), Abort> {
        Ok(())
    }
}

struct EntryV<'s> {
    entry: &'s mut RawEntry,
    fail: &'s mut Option<Error>,
}

impl<'de> EntryVisitor<'de> for EntryV<'_> {
    type Error = Abort;

    fn item(self) -> Result<impl ItemVisitor<'de>, Abort> {
        *self.fail = Some(Error::NotInnerList {
            label: self.entry.label.clone(),
        });
        Err::<Ignored, _>(Abort)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Abort> {
        Ok(ListV {
            entry: self.entry,
            fail: self.fail,
        })
    }
}

struct ListV<'s> {
    entry: &'s mut RawEntry,
    fail: &'s mut Option<Error>,
}

impl<'de> InnerListVisitor<'de> for ListV<'_> {
    type Error = Abort;

    fn item(&mut self) -> Result<impl ItemVisitor<'de>, Abort> {
        Ok(ItemV {
            entry: &mut *self.entry,
            fail: &mut *self.fail,
        })
    }

    fn finish(self) -> Result<impl ParameterVisitor<'de>, Abort> {
        let RawEntry { label, params, .. } = self.entry;
        Ok(ParamV {
            label,
            params,
            fail: self.fail,
        })
    }
}

struct ItemV<'s> {
    entry: &'s mut RawEntry,
    fail: &'s mut Option<Error>,
}

impl<'de> ItemVisitor<'de> for ItemV<'_> {
    type Out = ();
    type Error = Abort;

    fn bare_item(self, bare_item: BareItemFromInput<'de>) -> Result<impl ParameterVisitor<'de, Out = ()>, Abort> {
        let sfv::GenericBareItem::String(name) = bare_item else {
            *self.fail = Some(Error::ComponentNotString {
                label: self.entry.label.clone(),
            });
            return Err(Abort);
        };
        let RawEntry { label, components, .. } = self.entry;
        components.push((crate::component::intern_name(name.as_str()), Parameters::new()));
        match components.last_mut() {
            Some((_, params)) => Ok(ParamV {
                label,
                params,
                fail: self.fail,
            }),
            None => Err(Abort),
        }
    }
}

struct ParamV<'s> {
    label: &'s str,
    params: &'s mut Parameters,
    fail: &'s mut Option<Error>,
}

impl<'de> ParameterVisitor<'de> for ParamV<'_> {
    type Out = ();
    type Error = Abort;

    fn parameter(&mut self, key: &'de KeyRef, value: BareItemFromInput<'de>) -> Result<(), Abort> {
        if self.params.contains(key.as_str()) {
            *self.fail = Some(Error::DuplicateParameter {
                label: self.label.to_owned(),
                parameter: key.as_str().to_owned(),
            });
            return Err(Abort);
        }
        self.params.push(key.as_str(), BareValue::from(value));
        Ok(())
    }

    fn finish(self) -> Result<(), Abort> {
        Ok(())
    }
}
