//! Owned RFC 8941 bare items and their canonical serialization.
//!
//! Signature parameters and component-identifier parameters are kept as
//! received (order and type) and re-serialized with the RFC 8941 §4 rules to
//! produce the `@signature-params` line and component identifiers.

use std::borrow::Cow;

/// An RFC 8941 bare item, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BareValue {
    /// `sf-integer`.
    Integer(i64),
    /// `sf-decimal`, kept in its canonical serialized form.
    Decimal(String),
    /// `sf-string` (unescaped content).
    String(String),
    /// `sf-token`.
    Token(String),
    /// `sf-binary` (decoded bytes).
    ByteSequence(Vec<u8>),
    /// `sf-boolean`.
    Boolean(bool),
}

impl BareValue {
    /// The RFC 8941 type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            BareValue::Integer(_) => "integer",
            BareValue::Decimal(_) => "decimal",
            BareValue::String(_) => "string",
            BareValue::Token(_) => "token",
            BareValue::ByteSequence(_) => "byte sequence",
            BareValue::Boolean(_) => "boolean",
        }
    }

    /// Appends the canonical serialization (RFC 8941 §4.1.3).
    pub fn serialize_into(&self, out: &mut String) {
        match self {
            BareValue::Integer(v) => push_integer(out, *v),
            BareValue::Decimal(v) => out.push_str(v),
            BareValue::String(v) => {
                out.push('"');
                if v.bytes().any(|b| b == b'"' || b == b'\\') {
                    for c in v.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                } else {
                    out.push_str(v);
                }
                out.push('"');
            }
            BareValue::Token(v) => out.push_str(v),
            BareValue::ByteSequence(v) => {
                use base64::Engine as _;
                out.push(':');
                out.push_str(&base64::engine::general_purpose::STANDARD.encode(v));
                out.push(':');
            }
            BareValue::Boolean(true) => out.push_str("?1"),
            BareValue::Boolean(false) => out.push_str("?0"),
        }
    }
}

/// Appends `v` in decimal without the formatting machinery (this runs for
/// `created` and `expires` on every signature base).
fn push_integer(out: &mut String, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push('-');
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

impl From<sfv::BareItemFromInput<'_>> for BareValue {
    fn from(item: sfv::BareItemFromInput<'_>) -> Self {
        match item {
            sfv::GenericBareItem::Integer(v) => BareValue::Integer(i64::from(v)),
            sfv::GenericBareItem::Decimal(v) => BareValue::Decimal(v.to_string()),
            sfv::GenericBareItem::String(v) => BareValue::String(v.as_str().to_owned()),
            sfv::GenericBareItem::Token(v) => BareValue::Token(v.as_str().to_owned()),
            sfv::GenericBareItem::ByteSequence(v) => BareValue::ByteSequence(v),
            sfv::GenericBareItem::Boolean(v) => BareValue::Boolean(v),
            // The parser runs in RFC 8941 mode, which has no dates or
            // display strings; keep a faithful spelling regardless.
            sfv::GenericBareItem::Date(v) => BareValue::Decimal(format!("@{v}")),
            sfv::GenericBareItem::DisplayString(v) => BareValue::String(v.into_owned()),
        }
    }
}

/// A parameter key: borrowed for the well-known names, owned otherwise.
fn intern(key: &str) -> Cow<'static, str> {
    // A match compiles to a length switch and one comparison.
    Cow::Borrowed(match key {
        "created" => "created",
        "expires" => "expires",
        "nonce" => "nonce",
        "keyid" => "keyid",
        "alg" => "alg",
        "tag" => "tag",
        "sf" => "sf",
        "key" => "key",
        "bs" => "bs",
        "req" => "req",
        "tr" => "tr",
        "name" => "name",
        _ => return Cow::Owned(key.to_owned()),
    })
}

/// Ordered parameters (`;key=value`), as received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parameters(Vec<(Cow<'static, str>, BareValue)>);

impl Parameters {
    /// No parameters.
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    /// No parameters, with room for `n`.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Appends a parameter (the caller has checked for duplicates).
    pub fn push(&mut self, key: impl AsRef<str>, value: BareValue) {
        self.0.push((intern(key.as_ref()), value));
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&BareValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Parameters in received order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &BareValue)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends `;key=value` for each parameter (`;key` for boolean true).
    pub fn serialize_into(&self, out: &mut String) {
        for (key, value) in &self.0 {
            out.push(';');
            out.push_str(key);
            if *value != BareValue::Boolean(true) {
                out.push('=');
                value.serialize_into(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_serialize_like_display() {
        for v in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            1_776_520_800,
            999_999_999_999_999,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = String::new();
            BareValue::Integer(v).serialize_into(&mut out);
            assert_eq!(out, v.to_string());
        }
    }

    #[test]
    fn strings_escape_quotes_and_backslashes_only() {
        let mut out = String::new();
        BareValue::String(r#"a"b\c d"#.to_owned()).serialize_into(&mut out);
        assert_eq!(out, r#""a\"b\\c d""#);
        out.clear();
        BareValue::String("plain".to_owned()).serialize_into(&mut out);
        assert_eq!(out, r#""plain""#);
    }
}
