//! Where a webhook goes and how it authenticates: the registration.

use adcp_jwks::{SsrfError, SsrfPolicy};
use adcp_sign::{LegacyHmacSigner, SignError};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use url::{Host, Url};

/// How deliveries to one registration authenticate, chosen strictly from
/// the registration: `authentication` absent → RFC 9421 (the default and
/// the recommended posture); present → the deprecated legacy scheme it
/// names. Never both.
#[derive(Clone)]
pub enum DestinationAuth {
    /// The AdCP RFC 9421 webhook profile, signed by the sender's key.
    Rfc9421,
    /// Deprecated: `X-ADCP-Signature` / `X-ADCP-Timestamp` over the raw body.
    HmacSha256(Arc<LegacyHmacSigner>),
    /// Deprecated: `Authorization: Bearer <token>` (no body protection).
    Bearer(String),
}

impl fmt::Debug for DestinationAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rfc9421 => "Rfc9421",
            Self::HmacSha256(_) => "HmacSha256(<redacted>)",
            Self::Bearer(_) => "Bearer(<redacted>)",
        })
    }
}

impl DestinationAuth {
    /// A stable name for logs: `rfc9421`, `hmac-sha256`, `bearer`.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Rfc9421 => "rfc9421",
            Self::HmacSha256(_) => "hmac-sha256",
            Self::Bearer(_) => "bearer",
        }
    }

    /// Whether this is a deprecated legacy scheme.
    #[must_use]
    pub const fn is_legacy(&self) -> bool {
        !matches!(self, Self::Rfc9421)
    }
}

/// A webhook registration as the buyer sent it
/// (`push_notification_config`, `notification_configs[]`, …): the URL,
/// the `operation_id` to echo, and the authentication mode.
#[derive(Debug, Clone)]
pub struct Destination {
    url: String,
    operation_id: Option<String>,
    auth: DestinationAuth,
}

/// A registration the sender cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DestinationError {
    /// `url` is missing or not a string.
    #[error("registration has no url")]
    MissingUrl,
    /// The `authentication` block is malformed or names an unsupported scheme.
    #[error("registration authentication is invalid: {0}")]
    InvalidAuthentication(&'static str),
    /// The legacy credential was refused (too short, weak).
    #[error("registration credential refused: {0}")]
    Credential(String),
    /// The URL fails the SSRF rules (scheme, userinfo, reserved address).
    #[error("destination refused: {0}")]
    Untrusted(SsrfError),
}

impl Destination {
    /// An RFC 9421 destination.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            operation_id: None,
            auth: DestinationAuth::Rfc9421,
        }
    }

    /// Sets the registered `operation_id` (kept for the envelope echo).
    #[must_use]
    pub fn with_operation_id(mut self, operation_id: impl Into<String>) -> Self {
        self.operation_id = Some(operation_id.into());
        self
    }

    /// Sets the authentication mode explicitly.
    #[must_use]
    pub fn with_auth(mut self, auth: DestinationAuth) -> Self {
        self.auth = auth;
        self
    }

    /// Reads a registration object: `url` (required), `operation_id`, and
    /// `authentication` (`{"schemes": ["HMAC-SHA256"|"Bearer"],
    /// "credentials": "…"}`; absent or `null` selects RFC 9421). A legacy
    /// scheme logs a deprecation warning: it is removed in AdCP 4.0.
    ///
    /// # Errors
    ///
    /// [`DestinationError`].
    pub fn from_registration(registration: &Value) -> Result<Self, DestinationError> {
        let url = registration
            .get("url")
            .and_then(Value::as_str)
            .ok_or(DestinationError::MissingUrl)?;
        let operation_id = registration
            .get("operation_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let auth = match registration.get("authentication") {
            None | Some(Value::Null) => DestinationAuth::Rfc9421,
            Some(block) => {
                let invalid = DestinationError::InvalidAuthentication;
                let scheme = match block.get("schemes").and_then(Value::as_array).map(Vec::as_slice) {
                    Some([Value::String(s)]) => s.as_str(),
                    _ => return Err(invalid("`schemes` must hold exactly one scheme")),
                };
                let credentials = block
                    .get("credentials")
                    .and_then(Value::as_str)
                    .ok_or(invalid("`credentials` must be a string"))?;
                let auth = match scheme {
                    "HMAC-SHA256" => DestinationAuth::HmacSha256(Arc::new(
                        LegacyHmacSigner::new(credentials.as_bytes())
                            .map_err(|e: SignError| DestinationError::Credential(e.code().to_owned()))?,
                    )),
                    "Bearer" => {
                        if credentials.len() < 32 || !credentials.bytes().all(|b| b.is_ascii_graphic()) {
                            return Err(DestinationError::Credential("bearer_token_invalid".to_owned()));
                        }
                        DestinationAuth::Bearer(credentials.to_owned())
                    }
                    _ => return Err(invalid("`schemes` must be [\"HMAC-SHA256\"] or [\"Bearer\"]")),
                };
                tracing::warn!(
                    target: "adcp_webhook::sender",
                    scheme = auth.as_str(),
                    "registration selects a deprecated legacy webhook scheme (removed in AdCP 4.0); prefer RFC 9421"
                );
                auth
            }
        };
        Ok(Self {
            url: url.to_owned(),
            operation_id,
            auth,
        })
    }

    /// The URL, as registered.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The registered `operation_id`.
    #[must_use]
    pub fn operation_id(&self) -> Option<&str> {
        self.operation_id.as_deref()
    }

    /// The authentication mode.
    #[must_use]
    pub fn auth(&self) -> &DestinationAuth {
        &self.auth
    }
}

/// The SSRF rules a sender applies to every destination: the
/// `adcp-jwks` destination policy (HTTPS only, reserved ranges refused for
/// literals and for every resolved address, ports unrestricted unless
/// hardened), used before the first attempt and, through its pinning
/// resolver, on every connection. This wrapper adds one test-only switch
/// for plain HTTP to loopback.
#[derive(Debug, Clone, Default)]
pub struct DestinationPolicy {
    inner: adcp_jwks::DestinationPolicy,
    plain_http_loopback: bool,
    plain_http_any_host: bool,
}

impl DestinationPolicy {
    /// The production policy: HTTPS only, reserved ranges refused, any port.
    #[must_use]
    pub fn new(policy: adcp_jwks::DestinationPolicy) -> Self {
        Self {
            inner: policy,
            plain_http_loopback: false,
            plain_http_any_host: false,
        }
    }

    /// A policy from raw SSRF rules (for example one with the test-only
    /// loopback exception, to reach a TLS server on this machine).
    #[must_use]
    pub fn from_ssrf_policy(ssrf: SsrfPolicy) -> Self {
        Self::new(adcp_jwks::DestinationPolicy::from_ssrf_policy(ssrf))
    }

    /// The opt-in hardened profile: destination ports `{443, 8443}` only.
    #[must_use]
    pub fn hardened() -> Self {
        Self::new(adcp_jwks::DestinationPolicy::hardened())
    }

    /// **Tests and local demos only.** Also accepts `http://` URLs whose
    /// host is a loopback IP literal (`127.0.0.0/8`, `[::1]`), and loopback
    /// addresses in general. Never enable it in production.
    #[must_use]
    pub fn dangerously_allow_plain_http_loopback(self) -> Self {
        let ssrf = self.inner.ssrf_policy().clone().dangerously_allow_loopback_for_tests();
        Self {
            inner: adcp_jwks::DestinationPolicy::from_ssrf_policy(ssrf),
            plain_http_loopback: true,
            plain_http_any_host: self.plain_http_any_host,
        }
    }

    /// **Local development only** (`adcp-sig activate --allow-http`).
    /// Everything [`dangerously_allow_plain_http_loopback`](Self::dangerously_allow_plain_http_loopback)
    /// allows, plus `http://` to a DNS name (`http://localhost:8080/`).
    /// Every other rule stays: no userinfo, the port policy, and every
    /// reserved range but loopback refused, for literals here and for
    /// every resolved address at connect time. Never enable it in
    /// production: plain HTTP gives up the transport integrity the
    /// signature does not cover (the response).
    #[must_use]
    pub fn dangerously_allow_plain_http(self) -> Self {
        Self {
            plain_http_any_host: true,
            ..self.dangerously_allow_plain_http_loopback()
        }
    }

    /// Whether plain HTTP is allowed (to loopback at least): the client
    /// is then not HTTPS-only.
    #[must_use]
    pub fn allows_plain_http_loopback(&self) -> bool {
        self.plain_http_loopback || self.plain_http_any_host
    }

    /// The `adcp-jwks` policy in force.
    #[must_use]
    pub fn policy(&self) -> &adcp_jwks::DestinationPolicy {
        &self.inner
    }

    /// Validates `url` (before the first attempt; reqwest never resolves
    /// an IP-literal host, so literals are checked here).
    ///
    /// # Errors
    ///
    /// The [`SsrfError`] of the first rule the URL breaks.
    pub fn check(&self, url: &str) -> Result<Url, SsrfError> {
        let parsed = Url::parse(url).map_err(|_| SsrfError::InvalidUrl)?;
        if parsed.scheme() == "http" && self.plain_http_loopback {
            let loopback = match parsed.host() {
                Some(Host::Ipv4(ip)) => ip.is_loopback(),
                Some(Host::Ipv6(ip)) => ip.is_loopback(),
                _ => false,
            };
            // In development mode any host may use plain HTTP; its literal
            // is range-checked below and a name's addresses at connect time.
            if !loopback && !self.plain_http_any_host {
                return Err(SsrfError::SchemeNotAllowed);
            }
            let mut as_https = parsed.clone();
            as_https.set_scheme("https").map_err(|()| SsrfError::InvalidUrl)?;
            self.inner.ssrf_policy().check_parsed_url(&as_https)?;
            return Ok(parsed);
        }
        self.inner.validate_url(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registration_selects_one_mode() {
        let d = Destination::from_registration(&json!({"url": "https://b.example/h", "operation_id": "op_1"})).unwrap();
        assert_eq!(d.auth().as_str(), "rfc9421");
        assert_eq!(d.operation_id(), Some("op_1"));
        let secret = "0123456789abcdef0123456789abcdef";
        let d = Destination::from_registration(&json!({"url": "https://b.example/h",
            "authentication": {"schemes": ["HMAC-SHA256"], "credentials": secret}}))
        .unwrap();
        assert_eq!(d.auth().as_str(), "hmac-sha256");
        for bad in [
            json!({"url": "https://b.example/h", "authentication": {"schemes": ["HMAC-SHA256", "Bearer"], "credentials": secret}}),
            json!({"url": "https://b.example/h", "authentication": {"schemes": ["Basic"], "credentials": secret}}),
            json!({"url": "https://b.example/h", "authentication": {"schemes": ["HMAC-SHA256"], "credentials": "short"}}),
            json!({"operation_id": "op"}),
        ] {
            assert!(Destination::from_registration(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plain_http_only_to_loopback_literals_and_only_when_enabled() {
        let prod = DestinationPolicy::default();
        assert_eq!(prod.check("http://127.0.0.1:8080/h"), Err(SsrfError::SchemeNotAllowed));
        assert!(matches!(
            prod.check("https://10.1.2.3/h"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert!(prod.check("https://buyer.example/h").is_ok());
        let test = DestinationPolicy::default().dangerously_allow_plain_http_loopback();
        assert!(test.check("http://127.0.0.1:8080/h").is_ok());
        assert!(test.check("http://[::1]:8080/h").is_ok());
        assert_eq!(test.check("http://buyer.example/h"), Err(SsrfError::SchemeNotAllowed));
        assert!(matches!(
            test.check("https://169.254.169.254/"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert!(matches!(
            test.check("http://user:pw@127.0.0.1/"),
            Err(SsrfError::CredentialsInUrl)
        ));
        let dev = DestinationPolicy::default().dangerously_allow_plain_http();
        assert!(dev.allows_plain_http_loopback());
        assert!(dev.check("http://localhost:8080/h").is_ok());
        assert!(dev.check("http://127.0.0.1:8080/h").is_ok());
        assert!(matches!(
            dev.check("http://10.0.0.1/h"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert!(matches!(
            dev.check("http://169.254.169.254/"),
            Err(SsrfError::ReservedAddress(_))
        ));
        assert_eq!(dev.check("ftp://127.0.0.1/"), Err(SsrfError::SchemeNotAllowed));
    }
}
