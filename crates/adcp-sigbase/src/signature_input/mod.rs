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
//!
//! Only one member is *processed*: [`SignatureInput::PROCESSED_LABEL`] (`sig1`) unless the
//! caller names another ([`SignatureInput::parse_for`]). The whole field
//! must be a well-formed RFC 8941 Dictionary, and the processed member must
//! be valid signature metadata, else the parse fails. Any other member that
//! is well-formed but not valid metadata (a duplicated or unknown
//! component, a token `keyid`, a repeated label, not an inner list) is set
//! aside rather than failing the field: RFC 9421 lets a verifier pick the
//! signature it checks, and the AdCP profiles say verifiers must process
//! exactly one label and ignore the others, so a relay's extra signature
//! cannot get a valid `sig1` refused. The single-`sig1` path is unchanged
//! (no allocation for the set-aside list while it is empty).

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
#[derive(Debug, Clone, Default)]
pub struct SignatureInput {
    /// The usable members, in received order. Inline for the one signature
    /// every signer sends.
    entries: SmallVec<[SignatureParams; 1]>,
    /// Well-formed members other than the processed one that are not
    /// usable signature metadata, with the first problem found; empty (no
    /// allocation) on the common path.
    set_aside: Vec<(String, Error)>,
}

impl PartialEq for SignatureInput {
    /// Equal usable signatures. Set-aside members count as absent, as they
    /// do for [`get`](Self::get), [`iter`](Self::iter) and
    /// [`serialize`](Self::serialize), so a value equals the parse of its
    /// own serialization.
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Eq for SignatureInput {}

impl SignatureInput {
    /// The label [`parse`](Self::parse) and
    /// [`Signatures::parse`](crate::Signatures::parse) process strictly:
    /// `sig1`, the label of RFC 9421's examples and the one every AdCP
    /// signer sends and verifier checks. Problems in other members are set
    /// aside, not fatal.
    pub const PROCESSED_LABEL: &'static str = "sig1";

    /// Parses a `Signature-Input` field value (all lines already combined),
    /// processing [`PROCESSED_LABEL`](Self::PROCESSED_LABEL) (`sig1`); see [`parse_for`](Self::parse_for).
    pub fn parse(value: &[u8]) -> Result<Self, Error> {
        Self::parse_for(value, Self::PROCESSED_LABEL)
    }

    /// Parses a `Signature-Input` field value (all lines already combined),
    /// processing the member labelled `processed`.
    ///
    /// Fails when the field is longer than [`MAX_SIGNATURE_INPUT_LEN`], is
    /// not a well-formed RFC 8941 Dictionary, or when the processed member
    /// is repeated, is not an inner list, lists a component identifier
    /// that is not a string or is invalid, repeats a component or a
    /// parameter, has a `created`/`expires` that is not an integer or a
    /// `nonce`/`keyid`/`alg`/`tag` that is not a quoted string. Another
    /// member with such a problem is set aside: [`get`](Self::get) and
    /// [`iter`](Self::iter) skip it and [`require`](Self::require) reports
    /// the problem. A header without the processed member parses; asking
    /// for it is the caller's check.
    ///
    /// ```
    /// use adcp_sigbase::{Error, SignatureInput};
    /// let input = SignatureInput::parse(br#"sig1=("@method");created=1, relay=("@method" "@method");keyid=abc"#)?;
    /// assert_eq!(input.len(), 1);
    /// assert!(matches!(input.require("relay"), Err(Error::DuplicateComponent { .. })));
    /// assert!(SignatureInput::parse(br#"sig1=("@method" "@method")"#).is_err());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn parse_for(value: &[u8], processed: &str) -> Result<Self, Error> {
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
        let mut out = Self {
            entries: SmallVec::with_capacity(raw.len()),
            set_aside: Vec::new(),
        };
        for r in raw {
            let processing = r.label == processed;
            if out.has_label(&r.label) {
                let duplicate = Error::DuplicateLabel {
                    header: SignatureHeader::SignatureInput,
                    label: r.label.clone(),
                };
                if processing {
                    return Err(duplicate);
                }
                out.set_aside(r.label, duplicate);
                continue;
            }
            match r.into_params() {
                Ok(entry) => out.entries.push(entry),
                Err((_, e)) if processing => return Err(e),
                Err((label, e)) => out.set_aside(label, e),
            }
        }
        Ok(out)
    }

    /// Parses every `Signature-Input` line of `msg`, combined per RFC 9110
    /// (so a label repeated on another line is a duplicate), processing
    /// [`PROCESSED_LABEL`](Self::PROCESSED_LABEL). `Ok(None)` when the header is absent.
    pub fn from_message(msg: &Message<'_>) -> Result<Option<Self>, Error> {
        Self::from_message_for(msg, Self::PROCESSED_LABEL)
    }

    /// [`from_message`](Self::from_message) processing the member labelled
    /// `processed`.
    pub fn from_message_for(msg: &Message<'_>, processed: &str) -> Result<Option<Self>, Error> {
        match msg.combined_field("signature-input")? {
            Some(v) => Self::parse_for(&v, processed).map(Some),
            None => Ok(None),
        }
    }

    /// Whether `label` was seen, usable or set aside.
    fn has_label(&self, label: &str) -> bool {
        self.entries.iter().any(|e| e.label == label) || self.set_aside.iter().any(|(l, _)| l == label)
    }

    /// Sets the member `label` aside for `problem`; a label seen before
    /// (usable or not) loses its usable entry and keeps one record.
    fn set_aside(&mut self, label: String, problem: Error) {
        self.entries.retain(|e| e.label != label);
        match self.set_aside.iter_mut().find(|(l, _)| *l == label) {
            Some((_, existing)) => *existing = problem,
            None => self.set_aside.push((label, problem)),
        }
    }

    /// Members set aside (well-formed, not the processed one, not usable
    /// signature metadata): label and the first problem found, in received
    /// order.
    pub fn set_aside_members(&self) -> impl Iterator<Item = (&str, &Error)> {
        self.set_aside.iter().map(|(l, e)| (l.as_str(), e))
    }

    /// The signature labelled `label`.
    pub fn get(&self, label: &str) -> Option<&SignatureParams> {
        self.entries.iter().find(|e| e.label == label)
    }

    /// The signature labelled `label`, or why not: the problem of a
    /// set-aside member, else [`Error::LabelNotFound`].
    pub fn require(&self, label: &str) -> Result<&SignatureParams, Error> {
        if let Some(entry) = self.get(label) {
            return Ok(entry);
        }
        match self.set_aside.iter().find(|(l, _)| l == label) {
            Some((_, problem)) => Err(problem.clone()),
            None => Err(Error::LabelNotFound {
                header: SignatureHeader::SignatureInput,
                label: label.to_owned(),
            }),
        }
    }

    /// Takes the signature labelled `label` out of the field, dropping the
    /// others (`None` when absent or set aside).
    pub fn into_signature(self, label: &str) -> Option<SignatureParams> {
        self.entries.into_iter().find(|e| e.label == label)
    }

    /// All usable signatures in received order.
    pub fn iter(&self) -> impl Iterator<Item = &SignatureParams> {
        self.entries.iter()
    }

    /// Number of usable signatures.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the header has no usable signature.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Serializes the usable members (joined with `", "`).
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
    /// The first problem that makes this well-formed member unusable as
    /// signature metadata, found while parsing (the fast path never sets
    /// it: it gives up on such members).
    problem: Option<Error>,
}

impl RawEntry {
    /// The validated metadata, or the member's label and first problem.
    fn into_params(self) -> Result<SignatureParams, (String, Error)> {
        if let Some(problem) = self.problem {
            return Err((self.label, problem));
        }
        let components = self
            .components
            .into_iter()
            .map(|(name, params)| ComponentId::parsed(name, params, &self.label))
            .collect::<Result<Vec<_>, _>>();
        let components = match components {
            Ok(components) => components,
            Err(e) => return Err((self.label, e)),
        };
        let entry = SignatureParams {
            label: self.label,
            components,
            params: self.params,
            serialized: self.serialized.map(String::into_boxed_str),
        };
        match entry.validate() {
            Ok(()) => Ok(entry),
            Err(e) => Err((entry.label, e)),
        }
    }
}
