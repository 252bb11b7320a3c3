//! [`UnsignedRequest`]: what to sign.

use crate::{Body, SignError};

/// The default `Content-Type` of a body: `application/json`.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// A request (or webhook) about to be signed: method, URL as given (it is
/// canonicalized when signed), optional body and its content type.
///
/// ```
/// use adcp_sign::{Body, UnsignedRequest};
///
/// let body = Body::from_json_bytes(r#"{"plan_id":"plan_001"}"#)?;
/// let post = UnsignedRequest::post("https://seller.example.com/adcp/create_media_buy", &body);
/// assert_eq!(post.method(), "POST");
/// assert_eq!(post.content_type(), "application/json");
///
/// let get = UnsignedRequest::new("GET", "https://seller.example.com/adcp/tasks/123");
/// assert!(get.body().is_none());
/// # Ok::<(), adcp_sign::SignError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct UnsignedRequest<'a> {
    method: &'a str,
    url: &'a str,
    body: Option<&'a Body>,
    content_type: &'a str,
}

impl<'a> UnsignedRequest<'a> {
    /// A request without a body.
    #[must_use]
    pub fn new(method: &'a str, url: &'a str) -> Self {
        Self {
            method,
            url,
            body: None,
            content_type: JSON_CONTENT_TYPE,
        }
    }

    /// A `POST` of `body` as `application/json`.
    #[must_use]
    pub fn post(url: &'a str, body: &'a Body) -> Self {
        Self::new("POST", url).with_body(body)
    }

    /// The same request with `body`.
    #[must_use]
    pub fn with_body(mut self, body: &'a Body) -> Self {
        self.body = Some(body);
        self
    }

    /// The same request with another `Content-Type` for its body.
    #[must_use]
    pub fn with_content_type(mut self, content_type: &'a str) -> Self {
        self.content_type = content_type;
        self
    }

    /// The method.
    #[must_use]
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The URL as given.
    #[must_use]
    pub fn url(&self) -> &'a str {
        self.url
    }

    /// The body, if any.
    #[must_use]
    pub fn body(&self) -> Option<&'a Body> {
        self.body
    }

    /// The `Content-Type` sent (and covered) with a body.
    #[must_use]
    pub fn content_type(&self) -> &'a str {
        self.content_type
    }
}

/// Checks the method: an RFC 9110 token without lower-case letters (the
/// AdCP profile signs `@method` upper-case, and methods are
/// case-sensitive, so `post` is not silently turned into `POST`).
pub(crate) fn check_method(method: &str) -> Result<(), SignError> {
    let tchar = |b: u8| {
        b.is_ascii_digit()
            || b.is_ascii_uppercase()
            || matches!(
                b,
                b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
            )
    };
    if method.is_empty() || method.len() > 32 || !method.bytes().all(tchar) {
        return Err(SignError::MethodInvalid);
    }
    Ok(())
}

/// Checks a `Content-Type` value: printable ASCII (space and tab allowed
/// inside), no surrounding whitespace, at most 256 bytes, and no comma
/// outside a quoted string (a verifier rejects a multi-valued
/// `Content-Type`).
pub(crate) fn check_content_type(value: &str) -> Result<(), SignError> {
    let bytes = value.as_bytes();
    let edge_ok = |b: Option<&u8>| b.is_some_and(|b| !matches!(b, b' ' | b'\t'));
    if bytes.len() > 256 || !edge_ok(bytes.first()) || !edge_ok(bytes.last()) {
        return Err(SignError::ContentTypeInvalid);
    }
    let mut quoted = false;
    let mut escaped = false;
    for &b in bytes {
        if !(b == b'\t' || (0x20..=0x7e).contains(&b)) {
            return Err(SignError::ContentTypeInvalid);
        }
        if escaped {
            escaped = false;
        } else if quoted && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quoted = !quoted;
        } else if b == b',' && !quoted {
            return Err(SignError::ContentTypeInvalid);
        }
    }
    if quoted {
        return Err(SignError::ContentTypeInvalid);
    }
    Ok(())
}
