//! The HTTP message a signature covers, borrowed from wherever it lives.

use crate::Error;
use std::borrow::Cow;

/// An HTTP request (or response) as signed or as received: method, target
/// URI, header field lines in received order (duplicates kept), optional
/// body and trailers.
///
/// Nothing is copied: names and values borrow from the caller's buffers
/// (an `http::Request`, a parsed vector, raw parts). Field names are matched
/// case-insensitively; values keep their bytes.
///
/// ```
/// use adcp_sigbase::Message;
/// let msg = Message::request("POST", "https://buyer.example.com/hook")
///     .with_header("Content-Type", "application/json")
///     .with_header("X-Tag", "a")
///     .with_header("x-tag", " b ")
///     .with_body(b"{}");
/// assert_eq!(msg.combined_field("x-tag")?.as_deref(), Some(&b"a, b"[..]));
/// # Ok::<(), adcp_sigbase::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Message<'a> {
    method: Cow<'a, str>,
    target_uri: Cow<'a, str>,
    status: Option<u16>,
    fields: Vec<(Cow<'a, str>, Cow<'a, [u8]>)>,
    trailers: Vec<(Cow<'a, str>, Cow<'a, [u8]>)>,
    body: Option<Cow<'a, [u8]>>,
}

impl<'a> Message<'a> {
    /// A request with `method` and absolute `target_uri`.
    pub fn request(method: impl Into<Cow<'a, str>>, target_uri: impl Into<Cow<'a, str>>) -> Self {
        Self {
            method: method.into(),
            target_uri: target_uri.into(),
            ..Self::default()
        }
    }

    /// A response with `status` (for `@status`).
    pub fn response(status: u16) -> Self {
        Self {
            status: Some(status),
            ..Self::default()
        }
    }

    /// Adds a header field line (kept in order; repeated names allowed).
    pub fn with_header(mut self, name: impl Into<Cow<'a, str>>, value: impl Into<HeaderBytes<'a>>) -> Self {
        self.push_header(name, value);
        self
    }

    /// Adds a header field line in place.
    pub fn push_header(&mut self, name: impl Into<Cow<'a, str>>, value: impl Into<HeaderBytes<'a>>) {
        self.fields.push((name.into(), value.into().0));
    }

    /// Adds a trailer field line (for the `tr` component parameter).
    pub fn with_trailer(mut self, name: impl Into<Cow<'a, str>>, value: impl Into<HeaderBytes<'a>>) -> Self {
        self.trailers.push((name.into(), value.into().0));
        self
    }

    /// Sets the body bytes.
    pub fn with_body(mut self, body: impl Into<Cow<'a, [u8]>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Replaces the target URI (e.g. with its canonical form, or one
    /// reconstructed from scheme, `Host` and request target).
    pub fn with_target_uri(mut self, target_uri: impl Into<Cow<'a, str>>) -> Self {
        self.target_uri = target_uri.into();
        self
    }

    /// Borrows an [`http::Request`]. The target URI is the request's URI as
    /// given; when that is origin-form (`/path`), set the absolute URI with
    /// [`Message::with_target_uri`] (a server knows its scheme and host).
    pub fn from_http<B: AsRef<[u8]>>(req: &'a http::Request<B>) -> Self {
        let uri = req.uri();
        let target_uri = match (uri.scheme(), uri.authority()) {
            (Some(_), Some(_)) => Cow::Owned(uri.to_string()),
            _ => Cow::Owned(uri.path_and_query().map_or_else(|| "/".to_owned(), ToString::to_string)),
        };
        let mut msg = Self::request(req.method().as_str(), target_uri);
        msg.fields = req
            .headers()
            .iter()
            .map(|(name, value)| (Cow::Borrowed(name.as_str()), Cow::Borrowed(value.as_bytes())))
            .collect();
        msg.body = Some(Cow::Borrowed(req.body().as_ref()));
        msg
    }

    /// The request method as given (case preserved).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The target URI as given.
    pub fn target_uri(&self) -> &str {
        &self.target_uri
    }

    /// The response status, for responses.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The body bytes, if any.
    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }

    /// All header field lines in received order.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))
    }

    /// The values of every line of header field `name` (case-insensitive).
    pub fn field_lines<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
        lines(&self.fields, name)
    }

    /// The values of every line of trailer field `name`.
    pub fn trailer_lines<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
        lines(&self.trailers, name)
    }

    /// Header field `name` combined per RFC 9110 §5.3 and RFC 9421 §2.1:
    /// each line trimmed of leading and trailing whitespace, lines joined
    /// with `", "`. Borrowed when there is a single line. `None` when absent.
    pub fn combined_field(&self, name: &str) -> Result<Option<Cow<'_, [u8]>>, Error> {
        combine(&self.fields, name)
    }

    /// Trailer field `name` combined like [`Message::combined_field`].
    pub fn combined_trailer(&self, name: &str) -> Result<Option<Cow<'_, [u8]>>, Error> {
        combine(&self.trailers, name)
    }

    /// The single value of a field that must not have several: `Ok(None)`
    /// when absent; [`Error::MultiValuedField`] when it has more than one
    /// line or a top-level comma outside quoted strings (as a singleton
    /// field like `Content-Type` must not).
    pub fn single_field(&self, name: &str) -> Result<Option<&[u8]>, Error> {
        let mut lines = self
            .fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref());
        let Some(first) = lines.next() else { return Ok(None) };
        if lines.next().is_some() || has_top_level_comma(first) {
            return Err(Error::MultiValuedField {
                name: name.to_ascii_lowercase(),
            });
        }
        Ok(Some(trim_ows(first)))
    }
}

/// Header value bytes accepted by [`Message::with_header`]: `&str`,
/// `&[u8]`, `String`, `Vec<u8>` or an [`http::HeaderValue`].
#[derive(Debug, Clone)]
pub struct HeaderBytes<'a>(Cow<'a, [u8]>);

impl<'a> From<&'a str> for HeaderBytes<'a> {
    fn from(v: &'a str) -> Self {
        Self(Cow::Borrowed(v.as_bytes()))
    }
}

impl<'a> From<&'a [u8]> for HeaderBytes<'a> {
    fn from(v: &'a [u8]) -> Self {
        Self(Cow::Borrowed(v))
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for HeaderBytes<'a> {
    fn from(v: &'a [u8; N]) -> Self {
        Self(Cow::Borrowed(v))
    }
}

impl From<String> for HeaderBytes<'_> {
    fn from(v: String) -> Self {
        Self(Cow::Owned(v.into_bytes()))
    }
}

impl From<Vec<u8>> for HeaderBytes<'_> {
    fn from(v: Vec<u8>) -> Self {
        Self(Cow::Owned(v))
    }
}

impl<'a> From<&'a http::HeaderValue> for HeaderBytes<'a> {
    fn from(v: &'a http::HeaderValue) -> Self {
        Self(Cow::Borrowed(v.as_bytes()))
    }
}

fn lines<'s>(fields: &'s Fields<'_>, name: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
    fields
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

type Fields<'a> = [(Cow<'a, str>, Cow<'a, [u8]>)];

fn combine<'s>(fields: &'s Fields<'_>, name: &str) -> Result<Option<Cow<'s, [u8]>>, Error> {
    let mut lines = fields
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref());
    let Some(first) = lines.next() else { return Ok(None) };
    check_field_value(first, name)?;
    let first = trim_ows(first);
    let Some(second) = lines.next() else {
        return Ok(Some(Cow::Borrowed(first)));
    };
    let mut out = Vec::with_capacity(first.len() + second.len() + 2);
    out.extend_from_slice(first);
    for line in std::iter::once(second).chain(lines) {
        check_field_value(line, name)?;
        out.extend_from_slice(b", ");
        out.extend_from_slice(trim_ows(line));
    }
    Ok(Some(Cow::Owned(out)))
}

/// Field values may not carry CR, LF or NUL (RFC 9110 §5.5); obsolete line
/// folding is not accepted either (RFC 9421 §2.1 would require rewriting it).
fn check_field_value(value: &[u8], name: &str) -> Result<(), Error> {
    if memchr::memchr3(b'\r', b'\n', 0, value).is_some() {
        return Err(Error::InvalidFieldValue {
            name: name.to_ascii_lowercase(),
        });
    }
    Ok(())
}

/// Strips leading and trailing SP / HTAB.
pub(crate) fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |e| e + 1);
    &v[start..end]
}

fn has_top_level_comma(v: &[u8]) -> bool {
    let mut in_quotes = false;
    let mut escaped = false;
    for &b in v {
        match (in_quotes, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (_, _, b'"') => in_quotes = !in_quotes,
            (false, _, b',') => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_detection_respects_quotes() {
        assert!(has_top_level_comma(b"application/json, text/plain"));
        assert!(!has_top_level_comma(b"multipart/form-data; boundary=\"a,b\""));
        assert!(!has_top_level_comma(b"text/plain; x=\"a\\\",b\""));
        assert!(!has_top_level_comma(b"application/json"));
    }

    #[test]
    fn trimming() {
        assert_eq!(trim_ows(b" \ta b\t "), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
        assert_eq!(trim_ows(b""), b"");
    }
}
