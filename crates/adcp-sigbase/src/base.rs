//! The signature base (RFC 9421 §2.5): one line per covered component,
//! then `@signature-params`.

use crate::component::ComponentId;
use crate::message::Message;
use crate::signature_input::SignatureParams;
use crate::structured::{SfType, StructuredFields};
use crate::Error;
use std::borrow::Cow;

/// Inputs to base construction beyond the message itself.
///
/// A profile that canonicalizes URLs (AdCP does, with `adcp-canon`) passes
/// the canonical `@target-uri` and `@authority` here; otherwise both are
/// derived from the message's target URI (authority lowercased, default
/// port removed).
#[derive(Debug, Clone, Copy, Default)]
pub struct BaseOptions<'a> {
    /// The `@target-uri` value to use (and to derive `@scheme`, `@path`,
    /// `@query`, `@request-target`, `@query-param` from).
    pub target_uri: Option<&'a str>,
    /// The `@authority` value to use.
    pub authority: Option<&'a str>,
    /// For responses: the request components marked `req` come from.
    pub related_request: Option<&'a Message<'a>>,
    /// Structured field types for `sf` / `key`; `None` uses the defaults.
    pub structured_fields: Option<&'a StructuredFields>,
}

/// The bytes a signature is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureBase(Vec<u8>);

impl SignatureBase {
    /// The base bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The base as text (field values may carry obs-text; lossy for those).
    pub fn to_str_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }

    /// Consumes the base, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl AsRef<[u8]> for SignatureBase {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Builds the signature base of `params` over `msg`.
///
/// ```
/// use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
/// let msg = Message::request("POST", "https://Example.com:443/hook?x=1")
///     .with_header("Content-Type", "application/json");
/// let input = SignatureInput::parse(br#"sig1=("@method" "@authority" "@path" "content-type");created=1"#)?;
/// let base = signature_base(&msg, input.require("sig1")?, &BaseOptions::default())?;
/// assert_eq!(
///     base.to_str_lossy(),
///     "\"@method\": POST\n\"@authority\": example.com\n\"@path\": /hook\n\"content-type\": application/json\n\"@signature-params\": (\"@method\" \"@authority\" \"@path\" \"content-type\");created=1"
/// );
/// # Ok::<(), adcp_sigbase::Error>(())
/// ```
pub fn signature_base(
    msg: &Message<'_>,
    params: &SignatureParams,
    opts: &BaseOptions<'_>,
) -> Result<SignatureBase, Error> {
    let default_types = StructuredFields::default();
    let types = opts.structured_fields.unwrap_or(&default_types);
    let mut out = Vec::with_capacity(256 + params.components().len() * 96);
    // One scratch buffer for every component identifier and the params
    // line, sized for the params line so that it never grows.
    let mut scratch = String::with_capacity(128 + params.components().len() * 32 + params.params().len() * 64);
    for component in params.components() {
        let source = if component.flag("req") {
            opts.related_request.ok_or_else(|| Error::UnsupportedComponent {
                component: component.to_string(),
            })?
        } else {
            msg
        };
        // Options describe the message being signed; a `req` component
        // reads the related request's own target URI.
        let (target, authority) = if component.flag("req") {
            (source.target_uri(), None)
        } else {
            (opts.target_uri.unwrap_or_else(|| msg.target_uri()), opts.authority)
        };
        let ctx = Context {
            msg: source,
            target,
            authority,
            types,
        };
        ctx.write_lines(component, &mut scratch, &mut out)?;
    }
    out.extend_from_slice(b"\"@signature-params\": ");
    scratch.clear();
    params.serialize_into(&mut scratch);
    out.extend_from_slice(scratch.as_bytes());
    Ok(SignatureBase(out))
}

struct Context<'m> {
    msg: &'m Message<'m>,
    target: &'m str,
    authority: Option<&'m str>,
    types: &'m StructuredFields,
}

impl Context<'_> {
    fn missing(component: &ComponentId) -> Error {
        Error::MissingComponent {
            component: component.to_string(),
        }
    }

    fn write_lines(&self, c: &ComponentId, scratch: &mut String, out: &mut Vec<u8>) -> Result<(), Error> {
        scratch.clear();
        c.serialize_into(scratch);
        if c.name() == "@query-param" {
            return self.write_query_params(c, scratch, out);
        }
        out.extend_from_slice(scratch.as_bytes());
        out.extend_from_slice(b": ");
        if c.is_derived() {
            self.write_derived(c, out)?;
        } else {
            self.write_field(c, out)?;
        }
        out.push(b'\n');
        Ok(())
    }

    fn write_derived(&self, c: &ComponentId, out: &mut Vec<u8>) -> Result<(), Error> {
        let uri = || UriParts::split(self.target);
        match c.name() {
            "@method" => out.extend_from_slice(self.msg.method().as_bytes()),
            "@target-uri" => out.extend_from_slice(self.target.as_bytes()),
            "@authority" => match self.authority {
                Some(a) => out.extend_from_slice(a.as_bytes()),
                None => {
                    let parts = uri()?;
                    let a = adcp_canon::canonicalize_authority_header(parts.host_port().as_bytes(), parts.scheme)
                        .map_err(|e| Error::InvalidTargetUri { detail: e.to_string() })?;
                    out.extend_from_slice(a.as_bytes());
                }
            },
            "@scheme" => out.extend(uri()?.scheme.bytes().map(|b| b.to_ascii_lowercase())),
            "@path" => out.extend_from_slice(uri()?.path_or_root().as_bytes()),
            "@query" => {
                out.push(b'?');
                out.extend_from_slice(uri()?.query.unwrap_or("").as_bytes());
            }
            "@request-target" => {
                let parts = uri()?;
                out.extend_from_slice(parts.path_or_root().as_bytes());
                if let Some(q) = parts.query {
                    out.push(b'?');
                    out.extend_from_slice(q.as_bytes());
                }
            }
            "@status" => {
                let status = self.msg.status().ok_or_else(|| Error::UnsupportedComponent {
                    component: c.to_string(),
                })?;
                out.extend_from_slice(format!("{status:03}").as_bytes());
            }
            _ => {
                return Err(Error::UnsupportedComponent {
                    component: c.to_string(),
                })
            }
        }
        Ok(())
    }

    fn write_query_params(&self, c: &ComponentId, ident: &str, out: &mut Vec<u8>) -> Result<(), Error> {
        let wanted = c.string_param("name").ok_or_else(|| Self::missing(c))?;
        let query = UriParts::split(self.target)?.query.unwrap_or("");
        let mut matches = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .filter(|(name, _)| form_reencode(name) == wanted);
        let Some((_, value)) = matches.next() else {
            return Err(Self::missing(c));
        };
        // RFC 9421 §2.2.8: a parameter name that occurs more than once
        // must not be covered (sign `@query` instead).
        if matches.next().is_some() {
            return Err(Error::RepeatedQueryParam {
                name: wanted.to_owned(),
            });
        }
        out.extend_from_slice(ident.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(form_reencode(value).as_bytes());
        out.push(b'\n');
        Ok(())
    }

    fn write_field(&self, c: &ComponentId, out: &mut Vec<u8>) -> Result<(), Error> {
        let trailer = c.flag("tr");
        if c.flag("bs") {
            use base64::Engine as _;
            let mut any = false;
            let lines: Box<dyn Iterator<Item = &[u8]>> = if trailer {
                Box::new(self.msg.trailer_lines(c.name()))
            } else {
                Box::new(self.msg.field_lines(c.name()))
            };
            for line in lines {
                if any {
                    out.extend_from_slice(b", ");
                }
                any = true;
                out.push(b':');
                let encoded = base64::engine::general_purpose::STANDARD.encode(crate::message::trim_ows(line));
                out.extend_from_slice(encoded.as_bytes());
                out.push(b':');
            }
            return if any { Ok(()) } else { Err(Self::missing(c)) };
        }
        let combined = if trailer {
            self.msg.combined_trailer(c.name())?
        } else {
            self.msg.combined_field(c.name())?
        }
        .ok_or_else(|| Self::missing(c))?;
        if let Some(key) = c.string_param("key") {
            let value = dictionary_member(&combined, key, c.name())?;
            out.extend_from_slice(value.as_bytes());
        } else if c.flag("sf") {
            let ty = self.types.get(c.name()).ok_or_else(|| Error::StructuredField {
                name: c.name().to_owned(),
                detail: "not a known structured field (register its type)".into(),
            })?;
            out.extend_from_slice(reserialize(&combined, ty, c.name())?.as_bytes());
        } else {
            out.extend_from_slice(&combined);
        }
        Ok(())
    }
}

/// The parts of an absolute URI that derived components need, unmodified.
struct UriParts<'a> {
    scheme: &'a str,
    authority: &'a str,
    path: &'a str,
    query: Option<&'a str>,
}

impl<'a> UriParts<'a> {
    fn split(uri: &'a str) -> Result<Self, Error> {
        let (scheme, rest) = uri.split_once("://").ok_or_else(|| Error::InvalidTargetUri {
            detail: format!("not an absolute URI: {:?}", truncate(uri)),
        })?;
        let rest = rest.split('#').next().unwrap_or(rest);
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(auth_end);
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        Ok(Self {
            scheme,
            authority,
            path,
            query,
        })
    }

    fn path_or_root(&self) -> &'a str {
        if self.path.is_empty() {
            "/"
        } else {
            self.path
        }
    }

    /// The authority without userinfo.
    fn host_port(&self) -> &'a str {
        self.authority.rsplit_once('@').map_or(self.authority, |(_, hp)| hp)
    }
}

fn truncate(s: &str) -> &str {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// RFC 9421 §2.2.8: decode as `application/x-www-form-urlencoded` (`+` is
/// space, `%XX` decoded), then percent-encode everything outside
/// `ALPHA / DIGIT / "*" / "-" / "." / "_"` (so space becomes `%20`).
fn form_reencode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => decoded.push(b' '),
            b'%' => match (
                bytes.get(i + 1).and_then(|&h| hex(h)),
                bytes.get(i + 2).and_then(|&l| hex(l)),
            ) {
                (Some(h), Some(l)) => {
                    decoded.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => decoded.push(b'%'),
            },
            b => decoded.push(b),
        }
        i += 1;
    }
    // Form parsing decodes the bytes as UTF-8 with replacement.
    let decoded = String::from_utf8_lossy(&decoded);
    let mut out = String::with_capacity(decoded.len() * 3);
    for b in decoded.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'*' | b'-' | b'.' | b'_') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 0xf)]));
        }
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn sf_error(name: &str, detail: impl std::fmt::Display) -> Error {
    Error::StructuredField {
        name: name.to_owned(),
        detail: detail.to_string(),
    }
}

/// Re-serializes a structured field in canonical form (`sf`).
fn reserialize(value: &[u8], ty: SfType, name: &str) -> Result<String, Error> {
    let parser = || sfv::Parser::new(value).with_version(sfv::Version::Rfc8941);
    let serialized = match ty {
        SfType::Item => Some(sfv::FieldType::serialize(
            &parser().parse::<sfv::Item>().map_err(|e| sf_error(name, e))?,
        )),
        SfType::List => sfv::FieldType::serialize(&parser().parse::<sfv::List>().map_err(|e| sf_error(name, e))?),
        SfType::Dictionary => {
            sfv::FieldType::serialize(&parser().parse::<sfv::Dictionary>().map_err(|e| sf_error(name, e))?)
        }
    };
    serialized.ok_or_else(|| sf_error(name, "empty structured field"))
}

/// The canonical serialization of member `key` of a Dictionary field (`key`).
fn dictionary_member(value: &[u8], key: &str, name: &str) -> Result<String, Error> {
    let dict = sfv::Parser::new(value)
        .with_version(sfv::Version::Rfc8941)
        .parse::<sfv::Dictionary>()
        .map_err(|e| sf_error(name, e))?;
    let (k, entry) = dict
        .iter()
        .find(|(k, _)| k.as_str() == key)
        .ok_or_else(|| Error::MissingComponent {
            component: format!("\"{name}\";key=\"{key}\""),
        })?;
    let mut single = sfv::Dictionary::new();
    single.insert(k.clone(), entry.clone());
    let s = sfv::FieldType::serialize(&single).ok_or_else(|| sf_error(name, "empty member"))?;
    // `k=value…`, or `k;params` / `k` for a boolean true.
    Ok(match s.strip_prefix(key).and_then(|r| r.strip_prefix('=')) {
        Some(v) => v.to_owned(),
        None => format!("?1{}", &s[key.len().min(s.len())..]),
    })
}

#[cfg(test)]
mod tests {
    use super::form_reencode;

    #[test]
    fn query_param_reencoding_matches_rfc9421_examples() {
        assert_eq!(
            form_reencode("this%20is%20a%20big%0Amultiline%20value"),
            "this%20is%20a%20big%0Amultiline%20value"
        );
        assert_eq!(form_reencode("with+plus+whitespace"), "with%20plus%20whitespace");
        assert_eq!(form_reencode("fa%C3%A7ade%22%3A%20"), "fa%C3%A7ade%22%3A%20");
        assert_eq!(form_reencode("batman"), "batman");
        assert_eq!(form_reencode("100%"), "100%25");
        assert_eq!(form_reencode("%zz"), "%25zz");
        assert_eq!(form_reencode("%FF"), "%EF%BF%BD");
    }
}
