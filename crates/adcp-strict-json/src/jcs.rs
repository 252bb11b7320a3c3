//! RFC 8785 JSON Canonicalization Scheme (JCS), for the payload
//! fingerprint an AdCP receiver's idempotency store binds to each key.
//!
//! The spec makes a retry "the same event" when its complete payload is
//! JCS-equivalent to the first one: member order, whitespace and number
//! spelling may differ on the wire, the canonical form may not. A
//! receiver therefore fingerprints `SHA-256(JCS(payload))` ([`fingerprint`]),
//! never the raw bytes.
//!
//! JCS in brief: object members sorted by the UTF-16 code units of their
//! names, no whitespace, strings with the minimal JSON escapes
//! (`\b \t \n \f \r \" \\` and `\u00XX` for other controls), numbers as
//! ECMAScript `Number.prototype.toString` prints the IEEE-754 double.
//!
//! That double must be the one the sender meant: parse the payload with
//! correctly rounded floats (`serde_json`'s `float_roundtrip` feature, as
//! `adcp-webhook` enables; the default parser is off by an ulp on some
//! inputs, so two spellings of one number could canonicalize apart).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The RFC 8785 canonical form of `value`.
///
/// ```
/// let v: serde_json::Value = serde_json::from_str(r#"{"b": 1.0, "a": [1e21, 0.000001, "\u00e9"]}"#).unwrap();
/// assert_eq!(adcp_strict_json::jcs::canonicalize(&v), r#"{"a":[1e+21,0.000001,"é"],"b":1}"#);
/// ```
#[must_use]
pub fn canonicalize(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// `SHA-256` over the canonical form: the fingerprint an AdCP receiver
/// binds to an idempotency key with the first claim.
///
/// ```
/// use adcp_strict_json::jcs::fingerprint;
///
/// let first = serde_json::json!({"a": 1, "b": [1, "x"]});
/// let retry: serde_json::Value = serde_json::from_str(r#"{ "b": [1e0, "x"], "a": 1.00 }"#).unwrap();
/// assert_eq!(fingerprint(&first), fingerprint(&retry));
/// ```
#[must_use]
pub fn fingerprint(value: &Value) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(canonicalize(value).as_bytes());
    hasher.finalize().into()
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, name);
                out.push(':');
                write_value(out, member);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    // Copy runs of bytes that need no escape in one go; every byte that
    // needs one is ASCII, so the runs split at character boundaries.
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0C => "\\f",
            b'\r' => "\\r",
            b if b < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// ECMAScript `Number::toString(x)` for a finite double (JSON has no
/// other kind; a non-finite value cannot come out of a JSON parser and is
/// written as `null`).
fn write_number(out: &mut String, x: f64) {
    if !x.is_finite() {
        out.push_str("null");
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, as
    // ECMAScript requires: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    // ECMAScript's n: the position of the decimal point after digit 1.
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        for _ in 0..(n - k) {
            out.push('0');
        }
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        for _ in 0..(-n) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(x: f64) -> String {
        let mut s = String::new();
        write_number(&mut s, x);
        s
    }

    #[test]
    fn numbers_follow_ecmascript() {
        // RFC 8785 appendix B samples.
        let table = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740992.0, "9007199254740992"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (333333333.3333333, "333333333.3333333"),
            (4.5, "4.5"),
            (0.1, "0.1"),
            (123e-20, "1.23e-18"),
            (295147905179352830000.0, "295147905179352830000"),
        ];
        for (x, want) in table {
            assert_eq!(num(x), want, "{x:e}");
        }
    }

    #[test]
    fn members_sort_by_utf16_and_strings_escape_minimally() {
        let v: Value = serde_json::from_str(
            r#"{"\u20ac":"Euro","\r":"CR","\ud83d\ude00":"smiley","1":"one","\u0080":"ctl","\u00f6":"o"}"#,
        )
        .unwrap();
        assert_eq!(
            canonicalize(&v),
            "{\"\\r\":\"CR\",\"1\":\"one\",\"\u{80}\":\"ctl\",\"ö\":\"o\",\"€\":\"Euro\",\"😀\":\"smiley\"}"
        );
        let v = serde_json::json!({"s": "a\u{1}b\"\\/"});
        assert_eq!(canonicalize(&v), r#"{"s":"a\u0001b\"\\/"}"#);
    }

    #[test]
    fn equivalent_payloads_share_a_fingerprint() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":[1.0,"x"]}"#).unwrap();
        let b: Value = serde_json::from_str("{ \"b\" : [ 1e0 , \"x\" ] , \"a\" : 1.00 }").unwrap();
        let c: Value = serde_json::from_str(r#"{"a":1,"b":[2,"x"]}"#).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
