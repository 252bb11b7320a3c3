//! `Signature-Input` (RFC 9421 §4.1): a Dictionary of inner lists of
//! component identifiers with signature parameters.
//!
//! Parsed with `sfv`'s visitor API, because its plain parser keeps only the
//! last of duplicate dictionary keys and parameters: a second `sig1` (on the
//! same line or on another `Signature-Input` line) must be an error, not a
//! silent replacement of the covered components a verifier looked at.

use crate::component::ComponentId;
use crate::error::SignatureHeader;
use crate::message::Message;
use crate::sf::{BareValue, Parameters};
use crate::Error;
use sfv::visitor::{DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ParameterVisitor};
use sfv::{BareItemFromInput, KeyRef};
use std::borrow::Cow;

/// Largest `Signature-Input` (all lines combined) accepted, in bytes.
pub const MAX_SIGNATURE_INPUT_LEN: usize = 8 * 1024;

/// One signature's metadata: its label, covered components and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureParams {
    label: String,
    components: Vec<ComponentId>,
    params: Parameters,
}

impl SignatureParams {
    /// Builds the metadata of a signature about to be created.
    pub fn new(label: &str, components: Vec<ComponentId>, params: Parameters) -> Self {
        Self {
            label: label.to_owned(),
            components,
            params,
        }
    }

    /// The label (dictionary key), e.g. `sig1`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Covered components, in order.
    pub fn components(&self) -> &[ComponentId] {
        &self.components
    }

    /// Signature parameters, in received order.
    pub fn params(&self) -> &Parameters {
        &self.params
    }

    /// Whether a component with this name (any parameters) is covered.
    pub fn covers(&self, name: &str) -> bool {
        self.components.iter().any(|c| c.name() == name)
    }

    /// `created` (integer seconds), if present.
    pub fn created(&self) -> Option<i64> {
        self.integer("created")
    }

    /// `expires` (integer seconds), if present.
    pub fn expires(&self) -> Option<i64> {
        self.integer("expires")
    }

    /// `nonce`, if present.
    pub fn nonce(&self) -> Option<&str> {
        self.string("nonce")
    }

    /// `keyid`, if present.
    pub fn keyid(&self) -> Option<&str> {
        self.string("keyid")
    }

    /// `alg`, if present.
    pub fn alg(&self) -> Option<&str> {
        self.string("alg")
    }

    /// `tag`, if present.
    pub fn tag(&self) -> Option<&str> {
        self.string("tag")
    }

    fn integer(&self, key: &str) -> Option<i64> {
        match self.params.get(key) {
            Some(BareValue::Integer(v)) => Some(*v),
            _ => None,
        }
    }

    fn string(&self, key: &str) -> Option<&str> {
        match self.params.get(key) {
            Some(BareValue::String(v)) => Some(v),
            _ => None,
        }
    }

    /// The `@signature-params` value: the inner list and parameters in
    /// canonical RFC 8941 serialization, parameter order as received.
    pub fn serialize(&self) -> String {
        let mut out = String::with_capacity(64 + self.components.len() * 20);
        self.serialize_into(&mut out);
        out
    }

    /// Appends the `@signature-params` value to `out`.
    pub fn serialize_into(&self, out: &mut String) {
        out.push('(');
        for (i, c) in self.components.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            c.serialize_into(out);
        }
        out.push(')');
        self.params.serialize_into(out);
    }

    /// The `Signature-Input` member for this signature (`label=(…);…`).
    pub fn to_header_member(&self) -> String {
        let mut out = String::with_capacity(self.label.len() + 96);
        out.push_str(&self.label);
        out.push('=');
        self.serialize_into(&mut out);
        out
    }

    fn validate(&self) -> Result<(), Error> {
        for (i, c) in self.components.iter().enumerate() {
            if self.components[..i].iter().any(|prev| prev.same_as(c)) {
                return Err(Error::DuplicateComponent {
                    label: self.label.clone(),
                    component: c.to_string(),
                });
            }
        }
        for (key, value) in self.params.iter() {
            let expected = match key {
                "created" | "expires" => "integer",
                "nonce" | "keyid" | "alg" | "tag" => "string",
                _ => continue,
            };
            let found = value.type_name();
            if found == expected {
                continue;
            }
            if expected == "string" && matches!(value, BareValue::Token(_)) {
                return Err(Error::UnquotedStringParameter {
                    label: self.label.clone(),
                    parameter: key.to_owned(),
                });
            }
            return Err(Error::ParameterType {
                label: self.label.clone(),
                parameter: key.to_owned(),
                expected,
                found,
            });
        }
        Ok(())
    }
}

/// A parsed `Signature-Input` field: every signature's metadata, labels
/// in received order.
///
/// ```
/// use adcp_sigbase::SignatureInput;
/// let input = SignatureInput::parse(br#"sig1=("@method" "@authority");created=1;keyid="k";alg="ed25519""#)?;
/// let sig1 = input.get("sig1").ok_or("no sig1")?;
/// assert_eq!(sig1.keyid(), Some("k"));
/// assert_eq!(sig1.serialize(), r#"("@method" "@authority");created=1;keyid="k";alg="ed25519""#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignatureInput {
    entries: Vec<SignatureParams>,
}

impl SignatureInput {
    /// Parses a `Signature-Input` field value (all lines already combined).
    ///
    /// Rejects duplicate labels, duplicate parameters, members that are not
    /// inner lists, component identifiers that are not strings or are
    /// invalid, duplicate components, `created`/`expires` that are not
    /// integers and `nonce`/`keyid`/`alg`/`tag` that are not quoted strings.
    pub fn parse(value: &[u8]) -> Result<Self, Error> {
        if value.len() > MAX_SIGNATURE_INPUT_LEN {
            return Err(Error::HeaderTooLong {
                header: SignatureHeader::SignatureInput,
                max: MAX_SIGNATURE_INPUT_LEN,
            });
        }
        let mut raw = Vec::new();
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
        let mut entries = Vec::with_capacity(raw.len());
        for r in raw {
            let components = r
                .components
                .into_iter()
                .map(|(name, params)| ComponentId::parsed(name, params, &r.label))
                .collect::<Result<Vec<_>, _>>()?;
            let entry = SignatureParams {
                label: r.label,
                components,
                params: r.params,
            };
            entry.validate()?;
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// Parses every `Signature-Input` line of `msg`, combined per RFC 9110
    /// (so a label repeated on another line is a duplicate). `Ok(None)` when
    /// the header is absent.
    pub fn from_message(msg: &Message<'_>) -> Result<Option<Self>, Error> {
        match msg.combined_field("signature-input")? {
            Some(v) => Self::parse(&v).map(Some),
            None => Ok(None),
        }
    }

    /// The signature labelled `label`.
    pub fn get(&self, label: &str) -> Option<&SignatureParams> {
        self.entries.iter().find(|e| e.label == label)
    }

    /// The signature labelled `label`, or [`Error::LabelNotFound`].
    pub fn require(&self, label: &str) -> Result<&SignatureParams, Error> {
        self.get(label).ok_or_else(|| Error::LabelNotFound {
            header: SignatureHeader::SignatureInput,
            label: label.to_owned(),
        })
    }

    /// All signatures in received order.
    pub fn iter(&self) -> impl Iterator<Item = &SignatureParams> {
        self.entries.iter()
    }

    /// Number of signatures.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the header had no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Serializes the whole field value (members joined with `", "`).
    pub fn serialize(&self) -> String {
        self.entries
            .iter()
            .map(SignatureParams::to_header_member)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A member as collected during parsing, validated afterwards.
struct RawEntry {
    label: String,
    components: Vec<(Cow<'static, str>, Parameters)>,
    params: Parameters,
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
    entries: &'s mut Vec<RawEntry>,
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
