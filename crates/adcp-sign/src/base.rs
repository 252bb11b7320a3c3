//! The AdCP signature base, written in one pass for the profile's fixed
//! shape.
//!
//! `adcp_sigbase::signature_base` builds the base of any RFC 9421
//! signature from owned component identifiers and parameters (a dozen
//! small allocations). The AdCP signer only ever signs one shape, so it
//! writes those exact bytes into one buffer instead, which keeps signing
//! within 1.15× of the bare cryptography (see `docs/performance.md`).
//! `adcp_sigbase::signature_base` stays the reference: the tests rebuild
//! the base of every signature they make with it (and `adcp-verify`
//! verifies them with it) and require identical bytes.

/// The inputs of one AdCP signature base. Every value has been checked by
/// the caller: printable ASCII, no CR/LF, a canonical URL and authority.
pub(crate) struct BaseFields<'a> {
    pub(crate) method: &'a str,
    pub(crate) target_uri: &'a str,
    pub(crate) authority: &'a str,
    /// `Some` for a message with a body.
    pub(crate) content_type: Option<&'a str>,
    /// `Some` when the profile covers the digest of the body.
    pub(crate) content_digest: Option<&'a str>,
    pub(crate) created: i64,
    pub(crate) expires: i64,
    pub(crate) nonce: &'a str,
    pub(crate) keyid: &'a str,
    pub(crate) alg: &'a str,
    pub(crate) tag: &'a str,
}

/// A written base and where its `@signature-params` value starts.
pub(crate) struct WrittenBase {
    pub(crate) bytes: Vec<u8>,
    pub(crate) params_at: usize,
}

impl WrittenBase {
    /// The `@signature-params` value (the inner list and parameters), which
    /// is also the `Signature-Input` member after `sig1=`.
    pub(crate) fn params(&self) -> &[u8] {
        self.bytes.get(self.params_at..).unwrap_or_default()
    }
}

impl BaseFields<'_> {
    /// The RFC 9421 §2.5 base: one `"name": value` line per covered
    /// component, then `"@signature-params": (…);created=…;…;tag="…"`.
    pub(crate) fn write(&self) -> WrittenBase {
        let capacity = 320
            + self.target_uri.len() * 2
            + self.content_type.map_or(0, str::len)
            + self.content_digest.map_or(0, str::len)
            + self.keyid.len();
        let mut out = Vec::with_capacity(capacity);
        line(&mut out, "@method", self.method);
        line(&mut out, "@target-uri", self.target_uri);
        line(&mut out, "@authority", self.authority);
        if let Some(content_type) = self.content_type {
            line(&mut out, "content-type", content_type);
        }
        if let Some(digest) = self.content_digest {
            line(&mut out, "content-digest", digest);
        }
        out.extend_from_slice(b"\"@signature-params\": ");
        let params_at = out.len();
        out.extend_from_slice(b"(\"@method\" \"@target-uri\" \"@authority\"");
        if self.content_type.is_some() {
            out.extend_from_slice(b" \"content-type\"");
        }
        if self.content_digest.is_some() {
            out.extend_from_slice(b" \"content-digest\"");
        }
        out.extend_from_slice(b");created=");
        integer(&mut out, self.created);
        out.extend_from_slice(b";expires=");
        integer(&mut out, self.expires);
        out.extend_from_slice(b";nonce=");
        string(&mut out, self.nonce);
        out.extend_from_slice(b";keyid=");
        string(&mut out, self.keyid);
        out.extend_from_slice(b";alg=");
        string(&mut out, self.alg);
        out.extend_from_slice(b";tag=");
        string(&mut out, self.tag);
        WrittenBase { bytes: out, params_at }
    }
}

/// `"name": value\n`.
fn line(out: &mut Vec<u8>, name: &str, value: &str) {
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\": ");
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

/// An RFC 8941 integer (`created` / `expires`, checked non-negative).
fn integer(out: &mut Vec<u8>, value: i64) {
    let mut digits = [0_u8; 20];
    let mut n = value.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// An RFC 8941 string: quoted, `"` and `\` escaped (the caller has checked
/// the value is printable ASCII).
fn string(out: &mut Vec<u8>, value: &str) {
    out.push(b'"');
    for &b in value.as_bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}
