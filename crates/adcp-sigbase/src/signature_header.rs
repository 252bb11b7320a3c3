//! `Signature` (RFC 9421 §4.2): a Dictionary of byte sequences.
//!
//! Not parsed with `sfv`: the AdCP webhook v1 profile (and legacy request
//! endpoints) put unpadded base64url between the colons, which is not an
//! RFC 8941 byte sequence, and `sfv` decodes real byte sequences leniently
//! (missing padding, non-zero trailing bits). The crate's own Dictionary
//! parser reads the field one member at a time; this module requires each
//! member to be `key=:token:` (no parameters, no repeated key) and keeps the
//! token, which [`Signatures::decode`] hands to the strict decoder of the
//! encoding the caller selected, so the encoding is a choice, never a
//! fallback.
//!
//! As for `Signature-Input`, one member is processed strictly
//! ([`SignatureInput::PROCESSED_LABEL`](crate::SignatureInput::PROCESSED_LABEL),
//! `sig1`, unless the caller names another) and the others only have to be
//! well-formed: one that is repeated, not a byte sequence or carries
//! parameters is set aside, and [`Signatures::decode`] of its label
//! reports the problem. The processed member is judged as soon as its key
//! is read: a repeated key is [`Error::DuplicateLabel`] and a key not
//! followed by `=:` is [`Error::NotByteSequence`], whatever follows;
//! anything else that is not well-formed is [`Error::HeaderMalformed`].

use crate::encoding::BinaryEncoding;
use crate::error::SignatureHeader;
use crate::message::Message;
use crate::sf_dictionary::{self, DictionaryError, ErrorKind, RawValue, Span};
use crate::{Error, SignatureInput};
use smallvec::SmallVec;

/// Largest `Signature` (all lines combined) accepted, in bytes.
pub const MAX_SIGNATURE_LEN: usize = 8 * 1024;

/// A parsed `Signature` field: label → raw token text between the colons,
/// in received order. Decode a token with [`Signatures::decode`].
///
/// ```
/// use adcp_sigbase::{encoding::BinaryEncoding, Signatures};
/// let sigs = Signatures::parse(b"sig1=:AQID:, sig2=:BAU:")?;
/// assert_eq!(sigs.decode("sig1", BinaryEncoding::Base64Padded)?, vec![1, 2, 3]);
/// assert_eq!(sigs.decode("sig2", BinaryEncoding::Base64UrlUnpadded)?, vec![4, 5]);
/// assert!(sigs.decode("sig2", BinaryEncoding::Base64Padded).is_err());
/// # Ok::<(), adcp_sigbase::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signatures {
    /// The usable members. Inline for the one member every signer sends.
    members: SmallVec<[(String, String); 1]>,
    /// Well-formed members other than the processed one that are not
    /// usable, with the first problem found; empty (no allocation) on the
    /// common path.
    set_aside: Vec<(String, Error)>,
}

impl Signatures {
    /// Parses a `Signature` field value (all lines already combined),
    /// processing
    /// [`SignatureInput::PROCESSED_LABEL`](crate::SignatureInput::PROCESSED_LABEL)
    /// (`sig1`); see [`parse_for`](Self::parse_for).
    pub fn parse(value: &[u8]) -> Result<Self, Error> {
        Self::parse_for(value, SignatureInput::PROCESSED_LABEL)
    }

    /// Parses a `Signature` field value (all lines already combined),
    /// processing the member labelled `processed`: the field must be a
    /// well-formed Dictionary and that member, if present, a single
    /// parameterless byte sequence. Other members with a problem are set
    /// aside; [`decode`](Self::decode) of their label reports it.
    ///
    /// ```
    /// use adcp_sigbase::{encoding::BinaryEncoding, Error, Signatures};
    /// let sigs = Signatures::parse(b"sig1=:AQID:, relay=abc")?;
    /// assert_eq!(sigs.labels().collect::<Vec<_>>(), ["sig1"]);
    /// assert_eq!(sigs.decode("relay", BinaryEncoding::Base64Padded), Err(Error::NotByteSequence { label: "relay".into() }));
    /// assert!(Signatures::parse(b"sig1=abc, relay=:AQID:").is_err());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn parse_for(value: &[u8], processed: &str) -> Result<Self, Error> {
        if value.len() > MAX_SIGNATURE_LEN {
            return Err(Error::HeaderTooLong {
                header: SignatureHeader::Signature,
                max: MAX_SIGNATURE_LEN,
            });
        }
        if let Some(single) = Self::single_member(value) {
            return Ok(single);
        }
        Self::parse_dictionary(value, processed)
    }

    /// The general path of [`parse_for`](Self::parse_for): the whole
    /// Dictionary.
    fn parse_dictionary(value: &[u8], processed: &str) -> Result<Self, Error> {
        let mut out = Signatures::default();
        // No member cap: MAX_SIGNATURE_LEN bounds the work.
        for member in sf_dictionary::members(value, usize::MAX) {
            let member = member.map_err(|e| member_error(value, &out.members, processed, &e))?;
            let label = text(value, member.key);
            let problem = if out.has_label(&label) {
                Error::DuplicateLabel {
                    header: SignatureHeader::Signature,
                    label: label.clone(),
                }
            } else {
                match member.value {
                    RawValue::ByteSequence(token) if member.parameters => malformed(format!(
                        "parameters on Signature members are not supported at byte {}",
                        token.end + 1
                    )),
                    RawValue::ByteSequence(token) => {
                        out.members.push((label, text(value, token)));
                        continue;
                    }
                    RawValue::Other(_) => Error::NotByteSequence { label: label.clone() },
                }
            };
            if label == processed {
                return Err(problem);
            }
            out.set_aside(label, problem);
        }
        if out.members.is_empty() && out.set_aside.is_empty() {
            return Err(malformed(format!("empty dictionary at byte {}", value.len())));
        }
        Ok(out)
    }

    /// Whether `label` was seen, usable or set aside.
    fn has_label(&self, label: &str) -> bool {
        self.members.iter().any(|(l, _)| l == label) || self.set_aside.iter().any(|(l, _)| l == label)
    }

    /// Sets the member `label` aside for `problem`; a label seen before
    /// loses its usable entry and keeps one record.
    fn set_aside(&mut self, label: String, problem: Error) {
        self.members.retain(|(l, _)| *l != label);
        match self.set_aside.iter_mut().find(|(l, _)| *l == label) {
            Some((_, existing)) => *existing = problem,
            None => self.set_aside.push((label, problem)),
        }
    }

    /// Members set aside (well-formed, not the processed one, not a usable
    /// byte sequence): label and the first problem found, in received order.
    pub fn set_aside_members(&self) -> impl Iterator<Item = (&str, &Error)> {
        self.set_aside.iter().map(|(l, e)| (l.as_str(), e))
    }

    /// The form every signer emits, `label=:TOKEN:` and nothing else, read
    /// without the general Dictionary parser. `None` sends anything else
    /// (several members, parameters, whitespace, errors) to the full
    /// parser, whose result this equals whenever it is `Some` (a property
    /// test checks it).
    fn single_member(value: &[u8]) -> Option<Self> {
        // A key has no `=`: the first one ends the label.
        let split = memchr::memchr(b'=', value)?;
        let (label, rest) = value.split_at(split);
        let token = rest.strip_prefix(b"=:")?.strip_suffix(b":")?;
        if !sf_dictionary::is_key(label) || !token.iter().all(|&b| sf_dictionary::is_byte_sequence_char(b)) {
            return None;
        }
        // Both are ASCII (checked above).
        let label = std::str::from_utf8(label).ok()?.to_owned();
        let token = std::str::from_utf8(token).ok()?.to_owned();
        Some(Signatures {
            members: smallvec::smallvec![(label, token)],
            set_aside: Vec::new(),
        })
    }

    /// Parses every `Signature` line of `msg`, combined per RFC 9110,
    /// processing `sig1`. `Ok(None)` when the header is absent.
    pub fn from_message(msg: &Message<'_>) -> Result<Option<Self>, Error> {
        Self::from_message_for(msg, SignatureInput::PROCESSED_LABEL)
    }

    /// [`from_message`](Self::from_message) processing the member labelled
    /// `processed`.
    pub fn from_message_for(msg: &Message<'_>, processed: &str) -> Result<Option<Self>, Error> {
        match msg.combined_field("signature")? {
            Some(v) => Self::parse_for(&v, processed).map(Some),
            None => Ok(None),
        }
    }

    /// The raw token of `label` (between the colons), if it is a usable
    /// member.
    pub fn get(&self, label: &str) -> Option<&str> {
        self.members.iter().find(|(l, _)| l == label).map(|(_, t)| t.as_str())
    }

    /// Labels of the usable members, in received order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(l, _)| l.as_str())
    }

    /// Decodes the signature of `label` with `encoding`, strictly. A
    /// set-aside member's problem, or [`Error::LabelNotFound`], when there
    /// is no usable member of that label.
    pub fn decode(&self, label: &str, encoding: BinaryEncoding) -> Result<Vec<u8>, Error> {
        let token = match self.get(label) {
            Some(token) => token,
            None => {
                return Err(match self.set_aside.iter().find(|(l, _)| l == label) {
                    Some((_, problem)) => problem.clone(),
                    None => Error::LabelNotFound {
                        header: SignatureHeader::Signature,
                        label: label.to_owned(),
                    },
                })
            }
        };
        encoding.decode(token).map_err(|source| Error::SignatureEncoding {
            label: label.to_owned(),
            source,
        })
    }
}

/// The text of `span` in `input` (ASCII, checked by the parser, so exact).
fn text(input: &[u8], span: Span) -> String {
    let bytes = span.of(input);
    // Spans the parser accepted are ASCII; the lossy path is for error text.
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// [`Error::HeaderMalformed`] for `Signature`.
fn malformed(detail: String) -> Error {
    Error::HeaderMalformed {
        header: SignatureHeader::Signature,
        detail,
    }
}

/// The error for a parse failure after `members`: when it lies inside the
/// processed member and its key was read, a repeated key is
/// [`Error::DuplicateLabel`] and a key not followed by `=:` is
/// [`Error::NotByteSequence`], as for a well-formed member; otherwise
/// [`Error::HeaderMalformed`]. (The processed label is never set aside, so
/// `members` holds it if it was seen.)
fn member_error(input: &[u8], members: &[(String, String)], processed: &str, e: &DictionaryError) -> Error {
    if let Some(key) = e.key.filter(|k| k.of(input) == processed.as_bytes()) {
        let label = text(input, key);
        if members.iter().any(|(l, _)| *l == label) {
            return Error::DuplicateLabel {
                header: SignatureHeader::Signature,
                label,
            };
        }
        if !input.get(key.end..).is_some_and(|rest| rest.starts_with(b"=:")) {
            return Error::NotByteSequence { label };
        }
    }
    malformed(match e.kind {
        ErrorKind::Syntax(kind) => format!("{kind} at byte {}", e.offset),
        ErrorKind::TooManyMembers { max } => format!("more than {max} members"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(input: &[u8]) -> String {
        match Signatures::parse(input) {
            Err(Error::HeaderMalformed {
                header: SignatureHeader::Signature,
                detail,
            }) => detail,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn duplicate(label: &str) -> Result<Signatures, Error> {
        Err(Error::DuplicateLabel {
            header: SignatureHeader::Signature,
            label: label.into(),
        })
    }

    fn not_byte_sequence(label: &str) -> Result<Signatures, Error> {
        Err(Error::NotByteSequence { label: label.into() })
    }

    #[test]
    fn grammar() {
        assert!(Signatures::parse(b"sig1=:AA:").is_ok());
        let sigs = Signatures::parse(b"  sig1=:AA: ,\t sig-2.x=::, *s=:-_+/=:\t").unwrap();
        assert_eq!(sigs.labels().collect::<Vec<_>>(), ["sig1", "sig-2.x", "*s"]);
        assert_eq!(sigs.get("sig-2.x"), Some(""));
        assert_eq!(sigs.get("*s"), Some("-_+/="));
        for bad in [
            &b""[..],
            b" ",
            b"sig1=:AA",
            b"Sig1=:AA:",
            b"sig1=:AA:,",
            b"sig1=:AA: x",
            b"sig1=:A A:",
            b"sig1=:AA:;p=1",
            b"1sig=:AA:",
            b"\tsig1=:AA:",
        ] {
            detail(bad);
        }
        assert_eq!(Signatures::parse(b"sig1=:AA:, sig1=:BB:"), duplicate("sig1"));
        for bare in [&b"sig1"[..], b"sig1=AA", b"sig1=1", b"sig1=(:AA:)", b"sig1;p=1"] {
            assert_eq!(Signatures::parse(bare), not_byte_sequence("sig1"));
        }
    }

    #[test]
    fn details() {
        assert_eq!(detail(b""), "empty dictionary at byte 0");
        assert_eq!(detail(b"   "), "empty dictionary at byte 3");
        assert_eq!(
            detail(b"sig1=:AA:;p=1"),
            "parameters on Signature members are not supported at byte 9"
        );
        assert_eq!(detail(b"sig1=:A*:"), "invalid character in byte sequence at byte 7");
        assert_eq!(detail(b"sig1=:AA:,"), "trailing ',' at byte 10");
        assert_eq!(
            Signatures::parse(&vec![b'a'; MAX_SIGNATURE_LEN + 1]),
            Err(Error::HeaderTooLong {
                header: SignatureHeader::Signature,
                max: MAX_SIGNATURE_LEN,
            })
        );
    }

    #[test]
    fn a_member_is_judged_once_its_key_is_read() {
        // The key decides before the rest of the member is checked.
        assert_eq!(Signatures::parse(b"sig1=:AA:, sig1=@"), duplicate("sig1"));
        assert_eq!(Signatures::parse(b"sig1=:AA:, sig1\xe9"), duplicate("sig1"));
        assert_eq!(Signatures::parse(b"sig1=@"), not_byte_sequence("sig1"));
        assert_eq!(Signatures::parse(b"sig1;P"), not_byte_sequence("sig1"));
        assert_eq!(Signatures::parse(b"sig1=(1"), not_byte_sequence("sig1"));
        // An earlier member's problem wins over a later syntax error.
        assert_eq!(Signatures::parse(b"sig1, ="), not_byte_sequence("sig1"));
        detail(b"sig1=:AA:;P");
        detail(b"sig1=:\xe9:");
        detail(b"sig1=:AA:, X");
    }

    #[test]
    fn decoding_is_lazy_and_strict() {
        // Accepted by the parser in either alphabet; the decoder judges.
        let sigs = Signatures::parse(b"a=:AQID:, b=:-_8:, c=:AA=:").unwrap();
        assert_eq!(sigs.decode("a", BinaryEncoding::Base64Padded), Ok(vec![1, 2, 3]));
        assert_eq!(
            sigs.decode("b", BinaryEncoding::Base64UrlUnpadded),
            Ok(vec![0xfb, 0xff])
        );
        assert!(matches!(
            sigs.decode("b", BinaryEncoding::Base64Padded),
            Err(Error::SignatureEncoding { .. })
        ));
        assert!(matches!(
            sigs.decode("c", BinaryEncoding::Base64Padded),
            Err(Error::SignatureEncoding { .. })
        ));
        assert_eq!(
            sigs.decode("d", BinaryEncoding::Base64Padded),
            Err(Error::LabelNotFound {
                header: SignatureHeader::Signature,
                label: "d".into(),
            })
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        /// The single-member fast path never changes a result.
        #[test]
        fn fast_path_agrees_with_the_dictionary_parser(
            label in proptest::sample::select(vec!["sig1", "*s", "Sig1", "1sig", "sig-1.x_*", "", "sig1 ", " sig1"]),
            token in "[A-Za-z0-9+/=_:, ;\\-]{0,100}",
            suffix in proptest::sample::select(vec![":", "", ": ", ":;a=1", ":, sig2=:AA==:", "::"]),
        ) {
            let field = format!("{label}=:{token}{suffix}");
            let full = Signatures::parse_dictionary(field.as_bytes(), "sig1");
            proptest::prop_assert_eq!(Signatures::parse(field.as_bytes()), full.clone());
            if let Some(fast) = Signatures::single_member(field.as_bytes()) {
                proptest::prop_assert_eq!(Ok(fast), full);
            }
        }
    }

    #[test]
    fn the_signer_form_takes_the_fast_path() {
        assert!(Signatures::single_member(b"sig1=:AQID:").is_some());
        assert!(Signatures::single_member(b"sig1=:AQID:, sig2=:AQID:").is_none());
    }
}
