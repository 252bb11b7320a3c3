//! `Signature` (RFC 9421 §4.2): a Dictionary of byte sequences.
//!
//! Not parsed with `sfv`: the AdCP webhook v1 profile (and legacy request
//! endpoints) put unpadded base64url between the colons, which is not an
//! RFC 8941 byte sequence, and `sfv` decodes real byte sequences leniently
//! (missing padding, non-zero trailing bits). This scanner implements the
//! Dictionary grammar for members of the form `key=:token:` and hands each
//! token to the strict decoder of the encoding the caller selected, so the
//! encoding is a choice, never a fallback.

use crate::encoding::BinaryEncoding;
use crate::error::SignatureHeader;
use crate::message::Message;
use crate::Error;

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
    members: Vec<(String, String)>,
}

impl Signatures {
    /// Parses a `Signature` field value (all lines already combined).
    pub fn parse(value: &[u8]) -> Result<Self, Error> {
        if value.len() > MAX_SIGNATURE_LEN {
            return Err(Error::HeaderTooLong {
                header: SignatureHeader::Signature,
                max: MAX_SIGNATURE_LEN,
            });
        }
        Scanner { input: value, pos: 0 }.dictionary()
    }

    /// Parses every `Signature` line of `msg`, combined per RFC 9110.
    /// `Ok(None)` when the header is absent.
    pub fn from_message(msg: &Message<'_>) -> Result<Option<Self>, Error> {
        match msg.combined_field("signature")? {
            Some(v) => Self::parse(&v).map(Some),
            None => Ok(None),
        }
    }

    /// The raw token of `label` (between the colons), if present.
    pub fn get(&self, label: &str) -> Option<&str> {
        self.members.iter().find(|(l, _)| l == label).map(|(_, t)| t.as_str())
    }

    /// Labels in received order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(l, _)| l.as_str())
    }

    /// Decodes the signature of `label` with `encoding`, strictly.
    pub fn decode(&self, label: &str, encoding: BinaryEncoding) -> Result<Vec<u8>, Error> {
        let token = self.get(label).ok_or_else(|| Error::LabelNotFound {
            header: SignatureHeader::Signature,
            label: label.to_owned(),
        })?;
        encoding.decode(token).map_err(|source| Error::SignatureEncoding {
            label: label.to_owned(),
            source,
        })
    }
}

struct Scanner<'a> {
    input: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn malformed(&self, what: &str) -> Error {
        Error::HeaderMalformed {
            header: SignatureHeader::Signature,
            detail: format!("{what} at byte {}", self.pos),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip(&mut self, set: &[u8]) {
        while self.peek().is_some_and(|b| set.contains(&b)) {
            self.pos += 1;
        }
    }

    /// RFC 8941 §4.2.2, restricted to byte-sequence members.
    fn dictionary(mut self) -> Result<Signatures, Error> {
        let mut members: Vec<(String, String)> = Vec::new();
        self.skip(b" ");
        if self.peek().is_none() {
            return Err(self.malformed("empty dictionary"));
        }
        loop {
            let key = self.key()?;
            if members.iter().any(|(l, _)| *l == key) {
                return Err(Error::DuplicateLabel {
                    header: SignatureHeader::Signature,
                    label: key,
                });
            }
            if self.peek() != Some(b'=') {
                return Err(Error::NotByteSequence { label: key });
            }
            self.pos += 1;
            if self.peek() != Some(b':') {
                return Err(Error::NotByteSequence { label: key });
            }
            self.pos += 1;
            let start = self.pos;
            while self.peek().is_some_and(|b| b != b':') {
                let b = self.input[self.pos];
                // Any base64 / base64url character; the strict decoder of
                // the selected encoding decides what is valid.
                if !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')) {
                    return Err(self.malformed("invalid character in byte sequence"));
                }
                self.pos += 1;
            }
            if self.peek() != Some(b':') {
                return Err(self.malformed("unterminated byte sequence"));
            }
            let token = String::from_utf8_lossy(&self.input[start..self.pos]).into_owned();
            self.pos += 1;
            if self.peek() == Some(b';') {
                return Err(self.malformed("parameters on Signature members are not supported"));
            }
            members.push((key, token));
            self.skip(b" \t");
            match self.peek() {
                None => break,
                Some(b',') => {
                    self.pos += 1;
                    self.skip(b" \t");
                    if self.peek().is_none() {
                        return Err(self.malformed("trailing comma"));
                    }
                }
                Some(_) => return Err(self.malformed("expected `,` between members")),
            }
        }
        Ok(Signatures { members })
    }

    /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`.
    fn key(&mut self) -> Result<String, Error> {
        let start = self.pos;
        match self.peek() {
            Some(b) if b.is_ascii_lowercase() || b == b'*' => self.pos += 1,
            _ => return Err(self.malformed("expected a key")),
        }
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.*".contains(&b))
        {
            self.pos += 1;
        }
        Ok(String::from_utf8_lossy(&self.input[start..self.pos]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        assert!(Signatures::parse(b"sig1=:AA:").is_ok());
        assert!(Signatures::parse(b"  sig1=:AA: ,  sig-2.x=::").is_ok());
        for bad in [
            &b""[..],
            b" ",
            b"sig1",
            b"sig1=AA",
            b"sig1=:AA",
            b"Sig1=:AA:",
            b"sig1=:AA:,",
            b"sig1=:AA: x",
            b"sig1=:A A:",
            b"sig1=:AA:;p=1",
            b"1sig=:AA:",
        ] {
            assert!(Signatures::parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            Signatures::parse(b"sig1=:AA:, sig1=:BB:"),
            Err(Error::DuplicateLabel {
                header: SignatureHeader::Signature,
                label: "sig1".into()
            })
        );
        assert_eq!(
            Signatures::parse(b"sig1"),
            Err(Error::NotByteSequence { label: "sig1".into() })
        );
    }
}
