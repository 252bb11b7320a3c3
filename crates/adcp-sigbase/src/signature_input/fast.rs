//! The fast path: one pass over `Signature-Input` in the forms signers
//! actually emit, following the RFC 8941 §4.2 algorithms step by step.
//!
//! It answers only when it is sure: for decimals, byte sequences, bare keys
//! (boolean members), non-string inner-list items, duplicate labels or
//! parameters, and every syntax error it returns `None`, and the reference
//! parser ([`super::visitor`]) decides and words the error. Whatever it
//! accepts, it must parse exactly as the reference does (property test
//! below).

use super::{RawEntries, RawEntry};
use crate::component::intern_name;
use crate::sf::{BareValue, Parameters};
use std::borrow::Cow;

/// Parses `value`, or `None` when the reference parser must decide.
pub(super) fn parse(value: &[u8]) -> Option<RawEntries> {
    // Validate once; every position the cursor stops at is then a char
    // boundary (it only ever steps over ASCII bytes).
    let text = std::str::from_utf8(value).ok()?;
    let mut p = Cursor {
        text,
        input: value,
        pos: 0,
        canonical: true,
    };
    p.skip(|b| b == b' ');
    if p.at_end() {
        return None;
    }
    let mut entries = RawEntries::new();
    loop {
        let label = p.key()?;
        if entries.iter().any(|e| e.label == label) || !p.eat(b'=') {
            return None;
        }
        let value_start = p.pos;
        if !p.eat(b'(') {
            return None;
        }
        p.canonical = true;
        let mut entry = RawEntry {
            label: label.to_owned(),
            components: Vec::with_capacity(8),
            params: Parameters::with_capacity(6),
            serialized: None,
            problem: None,
        };
        loop {
            let spaces = p.skip(|b| b == b' ');
            if p.eat(b')') {
                // Canonical: no space before `)`.
                p.canonical &= spaces == 0;
                break;
            }
            // Canonical: no space after `(`, exactly one between items.
            p.canonical &= spaces == usize::from(!entry.components.is_empty());
            let Item::String(name) = p.bare_item()? else {
                return None;
            };
            let mut params = Parameters::new();
            p.parameters(&mut params)?;
            entry.components.push((intern_name(&name), params));
            if !matches!(p.peek(), Some(b' ' | b')')) {
                return None;
            }
        }
        p.parameters(&mut entry.params)?;
        if p.canonical {
            entry.serialized = Some(p.text.get(value_start..p.pos)?.to_owned());
        }
        entries.push(entry);
        p.skip(|b| b == b' ' || b == b'\t');
        if p.at_end() {
            return Some(entries);
        }
        if !p.eat(b',') {
            return None;
        }
        p.skip(|b| b == b' ' || b == b'\t');
        if p.at_end() {
            return None;
        }
    }
}

/// A bare item as read, strings borrowed from the input when unescaped.
enum Item<'a> {
    Integer(i64),
    String(Cow<'a, str>),
    Token(&'a str),
    Boolean(bool),
}

impl From<Item<'_>> for BareValue {
    fn from(item: Item<'_>) -> Self {
        match item {
            Item::Integer(v) => BareValue::Integer(v),
            Item::String(v) => BareValue::String(v.into_owned()),
            Item::Token(v) => BareValue::Token(v.to_owned()),
            Item::Boolean(v) => BareValue::Boolean(v),
        }
    }
}

struct Cursor<'a> {
    text: &'a str,
    input: &'a [u8],
    pos: usize,
    /// Whether the current member's value is spelled exactly as RFC 8941
    /// serializes it (so its text can stand in for the serialization).
    canonical: bool,
}

impl<'a> Cursor<'a> {
    fn at_end(&self) -> bool {
        self.pos >= self.input.len()
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips the bytes `what` accepts; how many.
    fn skip(&mut self, what: impl Fn(u8) -> bool) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(&what) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// RFC 8941 §4.2.3.3.
    fn key(&mut self) -> Option<&'a str> {
        let start = self.pos;
        if !self.peek().is_some_and(|b| b.is_ascii_lowercase() || b == b'*') {
            return None;
        }
        self.skip(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.' | b'*'));
        self.text.get(start..self.pos)
    }

    /// RFC 8941 §4.2.3.2; a repeated key gives up.
    fn parameters(&mut self, params: &mut Parameters) -> Option<()> {
        while self.eat(b';') {
            // Canonical: no space after `;`, and `true` as a bare key.
            self.canonical &= self.skip(|b| b == b' ') == 0;
            let key = self.key()?;
            let value = if self.eat(b'=') {
                let value = self.bare_item()?;
                self.canonical &= !matches!(value, Item::Boolean(true));
                value.into()
            } else {
                BareValue::Boolean(true)
            };
            if params.contains(key) {
                return None;
            }
            params.push(key, value);
        }
        Some(())
    }

    /// RFC 8941 §4.2.3.1, without decimals and byte sequences.
    fn bare_item(&mut self) -> Option<Item<'a>> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.integer(),
            b'"' => self.string(),
            b'?' => {
                self.pos += 1;
                let value = match self.peek()? {
                    b'0' => false,
                    b'1' => true,
                    _ => return None,
                };
                self.pos += 1;
                Some(Item::Boolean(value))
            }
            b if b.is_ascii_alphabetic() || b == b'*' => {
                let start = self.pos;
                self.pos += 1;
                self.skip(|b| is_tchar(b) || b == b':' || b == b'/');
                let token = self.text.get(start..self.pos)?;
                Some(Item::Token(token))
            }
            _ => None,
        }
    }

    /// RFC 8941 §4.2.4 for integers; a decimal gives up.
    fn integer(&mut self) -> Option<Item<'a>> {
        let negative = self.eat(b'-');
        let start = self.pos;
        self.skip(|b| b.is_ascii_digit());
        let digits = self.pos - start;
        if digits == 0 || digits > 15 || self.peek() == Some(b'.') {
            return None;
        }
        // Canonical: no leading zeros, no `-0`.
        self.canonical &= self.input[start] != b'0' || (digits == 1 && !negative);
        // At most 15 digits: no overflow.
        let magnitude = self.input[start..self.pos]
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
        Some(Item::Integer(if negative { -magnitude } else { magnitude }))
    }

    /// RFC 8941 §4.2.5.
    fn string(&mut self) -> Option<Item<'a>> {
        self.pos += 1; // the opening quote
        let start = self.pos;
        // Common case: no escapes, one copy; one table lookup per byte.
        let run = self
            .input
            .get(start..)?
            .iter()
            .position(|&b| STRING_STOP[usize::from(b)])?;
        self.pos = start + run;
        if self.peek() == Some(b'"') {
            let s = self.text.get(start..self.pos)?;
            self.pos += 1;
            return Some(Item::String(Cow::Borrowed(s)));
        }
        let mut out = String::from(self.text.get(start..self.pos)?);
        loop {
            match self.peek()? {
                b'\\' => {
                    self.pos += 1;
                    let escaped = self.peek()?;
                    if escaped != b'"' && escaped != b'\\' {
                        return None;
                    }
                    out.push(char::from(escaped));
                    self.pos += 1;
                }
                b'"' => {
                    self.pos += 1;
                    return Some(Item::String(Cow::Owned(out)));
                }
                b @ 0x20..=0x7e => {
                    out.push(char::from(b));
                    self.pos += 1;
                }
                _ => return None,
            }
        }
    }
}

/// Bytes that end an unescaped run inside a String: `"`, `\\` and
/// everything outside `%x20-7E`.
const STRING_STOP: [bool; 256] = {
    let mut table = [true; 256];
    let mut b = 0x20;
    while b < 0x7f {
        table[b] = b == b'"' as usize || b == b'\\' as usize;
        b += 1;
    }
    table
};

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same_as_reference(input: &[u8]) -> Result<(), TestCaseError> {
        if let Some(mut fast) = parse(input) {
            for entry in &mut fast {
                if let Some(received) = entry.serialized.take() {
                    let mut computed = String::new();
                    let components = entry
                        .components
                        .iter()
                        .map(|(name, params)| crate::ComponentId::unchecked(name.clone(), params.clone()))
                        .collect();
                    crate::SignatureParams::new(&entry.label, components, entry.params.clone())
                        .serialize_into(&mut computed);
                    prop_assert_eq!(received, computed, "input {:?}", String::from_utf8_lossy(input));
                }
            }
            match super::super::visitor::parse(input) {
                Ok(reference) => prop_assert_eq!(fast, reference, "input {:?}", String::from_utf8_lossy(input)),
                Err(e) => prop_assert!(
                    false,
                    "fast path accepted {:?}; reference: {e}",
                    String::from_utf8_lossy(input)
                ),
            }
        }
        Ok(())
    }

    #[test]
    fn answers_for_the_forms_signers_emit() {
        let typical = br#"sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;expires=1776521100;nonce="KXYnfEfJ0PBRZXQyVXfVQA";keyid="test-ed25519-webhook-2026";alg="ed25519";tag="adcp/webhook-signing/v1""#;
        let parsed = parse(typical).expect("the fast path answers");
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].components.len(), 5);
        same_as_reference(typical).unwrap();
        let with_params = br#"sig1=("@query-param";name="a" "x-y";sf "@method");created=-1;tag="a\"b\\c";flag;t=tok/en:1, sig2=();k=?0"#;
        assert!(parse(with_params).is_some());
        same_as_reference(with_params).unwrap();
    }

    #[test]
    fn keeps_the_received_text_only_when_it_is_canonical() {
        let serialized = |input: &str| parse(input.as_bytes()).expect("answers")[0].serialized.clone();
        assert_eq!(
            serialized(r#"sig1=("@method" "x";sf);created=7;k;n="a\"b";t=tok"#).as_deref(),
            Some(r#"("@method" "x";sf);created=7;k;n="a\"b";t=tok"#)
        );
        for odd in [
            r#"sig1=( "@method");created=7"#,
            r#"sig1=("@method" );created=7"#,
            r#"sig1=("@method"  "x");created=7"#,
            r#"sig1=("@method");  created=7"#,
            r#"sig1=("@method");created=07"#,
            r#"sig1=("@method");created=-0"#,
            r#"sig1=("@method");k=?1"#,
        ] {
            assert_eq!(serialized(odd), None, "{odd}");
        }
        assert!(serialized(r#"sig1=("@method");created=0;k=?0"#).is_some());
    }

    #[test]
    fn gives_up_on_what_the_reference_must_word() {
        for input in [
            &br#"sig1=("@method"), sig1=("@method")"#[..],
            br#"sig1=("@method");created=1;created=2"#,
            br#"sig1=("@method");d=1.5"#,
            br#"sig1=("@method");b=:AAAA:"#,
            br#"sig1"#,
            br#"sig1=("@method" tok)"#,
            br#"sig1="item""#,
            br#"sig1=("@method""#,
            br#"sig1=("@method"),"#,
            b"",
            "sig1=(\"caf\u{e9}\")".as_bytes(),
        ] {
            assert!(parse(input).is_none(), "{:?}", String::from_utf8_lossy(input));
        }
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("sig1".to_owned()),
            Just("sig2".to_owned()),
            Just("=".to_owned()),
            Just("(".to_owned()),
            Just(")".to_owned()),
            Just(" ".to_owned()),
            Just("\t".to_owned()),
            Just(",".to_owned()),
            Just(", ".to_owned()),
            Just(";".to_owned()),
            Just("\"@method\"".to_owned()),
            Just("\"content-type\"".to_owned()),
            Just("\"a\\\"b\"".to_owned()),
            Just("\"\\\\\"".to_owned()),
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("created=1776520800".to_owned()),
            Just("expires=-0".to_owned()),
            Just("nonce=\"abc\"".to_owned()),
            Just("keyid=tok:en/1".to_owned()),
            Just("req".to_owned()),
            Just("sf".to_owned()),
            Just("?1".to_owned()),
            Just("?0".to_owned()),
            Just("?".to_owned()),
            Just("1.5".to_owned()),
            Just(":AAAA:".to_owned()),
            Just("*".to_owned()),
            Just("A".to_owned()),
            Just("-".to_owned()),
            Just("0123456789012345".to_owned()),
            Just("999999999999999".to_owned()),
            "[a-z0-9_.*-]{1,6}",
            "[ -~]{1,4}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        #[test]
        fn agrees_with_the_reference_on_fragments(parts in proptest::collection::vec(fragment(), 0..24)) {
            same_as_reference(parts.concat().as_bytes())?;
        }

        #[test]
        fn agrees_with_the_reference_on_well_formed_inputs(
            labels in proptest::collection::vec("[a-z*][a-z0-9_.*-]{0,4}", 1..3),
            names in proptest::collection::vec("@?[a-z-]{1,10}", 0..7),
            created in any::<i64>(),
            text in "[ -~]{0,12}",
        ) {
            let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
            let list = names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(" ");
            let members = labels
                .iter()
                .map(|l| format!("{l}=({list});created={};nonce=\"{escaped}\";alg=tok", created % 1_000_000_000_000_000))
                .collect::<Vec<_>>()
                .join(", ");
            let unique = labels.iter().enumerate().all(|(i, l)| !labels[..i].contains(l));
            // Well-formed input with distinct labels is the fast path's to
            // answer, and this generator spells it canonically.
            let parsed = parse(members.as_bytes());
            prop_assert_eq!(parsed.is_some(), unique);
            prop_assert!(parsed.iter().flatten().all(|e| e.serialized.is_some()));
            same_as_reference(members.as_bytes())?;
        }

        #[test]
        fn agrees_with_the_reference_on_arbitrary_bytes(input in proptest::collection::vec(any::<u8>(), 0..64)) {
            same_as_reference(&input)?;
        }
    }
}
