//! [`SignedRequest`]: the signed message, ready to send.

use serde_json::{Map, Value};

use crate::{Body, Nonce, SignError};

/// A signed request: the method, the URL to send it to, the headers to add
/// and the exact body bytes, all from one signing operation.
///
/// Send it as it is: to [`url`](Self::url) (the canonical target URI the
/// signature covers, ASCII, so an IDN host is already in its A-label form),
/// with every [header](Self::headers) and exactly the
/// [body](Self::body) bytes. Do not re-serialize the body, and do not add
/// a second `Content-Type`. The HTTP client supplies `Host` (or
/// `:authority`) from the URL.
///
/// `Debug` omits the body.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Option<Body>,
    pub(crate) created: i64,
    pub(crate) expires: i64,
    pub(crate) nonce: Nonce,
    pub(crate) base: Vec<u8>,
}

impl SignedRequest {
    /// The method.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The URL to send to: the canonical `@target-uri` that was signed.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The headers to send, in this order: `Content-Type` and
    /// `Content-Digest` (when there is a body and the profile covers its
    /// digest), `Signature-Input`, `Signature`.
    #[must_use]
    pub fn headers(&self) -> &[(&'static str, String)] {
        &self.headers
    }

    /// The value of header `name` (case-insensitive), if present.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body, if any: the bytes that were digested.
    #[must_use]
    pub fn body(&self) -> Option<&Body> {
        self.body.as_ref()
    }

    /// The `created` parameter.
    #[must_use]
    pub fn created(&self) -> i64 {
        self.created
    }

    /// The `expires` parameter.
    #[must_use]
    pub fn expires(&self) -> i64 {
        self.expires
    }

    /// The `nonce` parameter.
    #[must_use]
    pub fn nonce(&self) -> &Nonce {
        &self.nonce
    }

    /// The signature base that was signed (RFC 9421 §2.5), for debugging
    /// and conformance checks.
    #[must_use]
    pub fn signature_base(&self) -> &[u8] {
        &self.base
    }

    /// The request as the conformance vectors write it:
    /// `{"method", "url", "headers": {name: value}, "body"}` (`body` is
    /// `null` without one). This is what `adcp-sig sign` prints and
    /// `adcp-sig verify --request` reads.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut headers = Map::new();
        for (name, value) in &self.headers {
            headers.insert((*name).to_owned(), Value::String(value.clone()));
        }
        let mut out = Map::new();
        out.insert("method".into(), Value::String(self.method.clone()));
        out.insert("url".into(), Value::String(self.url.clone()));
        out.insert("headers".into(), Value::Object(headers));
        out.insert(
            "body".into(),
            self.body
                .as_ref()
                .map_or(Value::Null, |b| Value::String(b.as_str().to_owned())),
        );
        Value::Object(out)
    }

    /// The request as an [`http::Request`] (the body copied into a
    /// `Vec<u8>`, empty without one).
    ///
    /// # Errors
    ///
    /// `http_request_invalid` if `http` cannot represent the request: a
    /// canonical URL keeps raw characters such as `<`, `>` or `"` byte for
    /// byte (AdCP canonicalization never re-encodes), and `http::Uri`
    /// refuses some of them (`<` and `>` anywhere, `"` in the query).
    pub fn to_http(&self) -> Result<http::Request<Vec<u8>>, SignError> {
        let mut builder = http::Request::builder()
            .method(self.method.as_str())
            .uri(self.url.as_str());
        for (name, value) in &self.headers {
            builder = builder.header(*name, value.as_str());
        }
        builder
            .body(self.body.as_ref().map(|b| b.as_bytes().to_vec()).unwrap_or_default())
            .map_err(|e| SignError::HttpRequestInvalid { reason: e.to_string() })
    }
}
