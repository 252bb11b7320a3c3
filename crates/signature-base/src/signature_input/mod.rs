//! `Signature-Input` (RFC 9421 §4.1): a Dictionary of inner lists of
//! component identifiers with signature parameters.
//!
//! Two parsers produce the same members: [`fast`], a single pass over the
//! shape every signer emits (no allocation beyond the result), and the
//! reference, `sfv`'s visitor API ([`visitor`]), which handles every RFC
//! 8941 form and words every error. The fast path gives up (returns `None`)
//! on anything unusual — decimals, byte sequences, bare keys, duplicate
//! labels or parameters, non-ASCII — and the reference parser then decides,
//! so errors and rare forms behave exactly as before; a property test keeps
//! the two equal wherever the fast path answers. The reference uses the
//! visitor API because `sfv`'s plain parser keeps only the last of
//! duplicate dictionary keys and parameters: a second `sig1` (on the same
//! line or on another `Signature-Input` line) must be an error, not a
//! silent replacement of the covered components a verifier looked at.

mod fast;
mod visitor;

use crate::component::ComponentId;
use crate::error::SignatureHeader;
use crate::message::Message;
use crate::sf::{BareValue, Parameters};
use crate::Error;
use smallvec::SmallVec;
use std::borrow::Cow;

/// Largest `Signature-Input` (all lines combined) accepted, in bytes.
pub const MAX_SIGNATURE_INPUT_LEN: usize = 8 * 1024;

/// One signature's metadata: its label, covered components and parameters.
#[derive(Debug, Clone)]
pub struct SignatureParams {
    label: String,
    components: Vec<ComponentId>,
    params: Parameters,
    /// The received member value when it was already in canonical form
    /// (what every signer sends), so the base reuses it instead of
    /// re-serializing; `None` for built or non-canonical input.
    serialized: Option<Box<str>>,
}

impl PartialEq for SignatureParams {
    /// Equal label, components and parameters (the cached serialization
    /// follows from those).
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && self.components == other.components && self.params == other.params
    }
}

impl Eq for SignatureParams {}

impl SignatureParams {
    /// Builds the metadata of a signature about to be created.
    pub fn new(label: &str, components: Vec<ComponentId>, params: Parameters) -> Self {
        Self {
            label: label.to_owned(),
            components,
            params,
            serialized: None,
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

    /// The covered components, taking them out of the metadata.
    pub fn into_components(self) -> Vec<ComponentId> {
        self.components
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
        match &self.serialized {
            Some(received) => out.push_str(received),
            None => self.serialize_computed(out),
        }
    }

    /// The canonical serialization, from the parsed components and params.
    fn serialize_computed(&self, out: &mut String) {
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
    /// Inline for the one signature every signer sends.
    entries: SmallVec<[SignatureParams; 1]>,
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
        let raw = match fast::parse(value) {
            Some(raw) => raw,
            None => visitor::parse(value)?,
        };
        let mut entries = SmallVec::with_capacity(raw.len());
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
                serialized: r.serialized.map(String::into_boxed_str),
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

    /// Takes the signature labelled `label` out of the field, dropping the
    /// others.
    pub fn into_signature(self, label: &str) -> Option<SignatureParams> {
        self.entries.into_iter().find(|e| e.label == label)
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

/// The members as collected during parsing (inline for one).
type RawEntries = SmallVec<[RawEntry; 1]>;

/// A member as collected during parsing, validated afterwards.
#[derive(Debug, PartialEq)]
struct RawEntry {
    label: String,
    components: Vec<(Cow<'static, str>, Parameters)>,
    params: Parameters,
    /// The member value as received, when it is in canonical form.
    serialized: Option<String>,
}
