//! Forwarding a verified, claimed event to the upstream application.

use crate::error::GatewayError;
use crate::metrics::UpstreamFailure;
use adcp_webhook::Webhook;
use std::sync::Arc;
use std::time::Duration;

/// Header carrying the `keyid` that verified the event (absent for legacy
/// HMAC registrations).
pub const VERIFIED_KEYID: &str = "x-adcp-verified-keyid";
/// Header carrying the verified sender (the seller's agent URL).
pub const VERIFIED_AGENT: &str = "x-adcp-verified-agent";
/// Header carrying the event's `idempotency_key`.
pub const IDEMPOTENCY_KEY: &str = "x-adcp-idempotency-key";
/// Header carrying the payload's `notification_id`, when it has one.
pub const NOTIFICATION_ID: &str = "x-adcp-notification-id";
/// Header carrying the payload's `notification_type` (a list-change
/// webhook's `event`), when it has one.
pub const NOTIFICATION_TYPE: &str = "x-adcp-notification-type";
/// Header carrying, on a re-emission, the first delivery's
/// `idempotency_key`.
pub const REEMISSION_OF: &str = "x-adcp-reemission-of";

/// Whether a payload value may travel in a header: `[A-Za-z0-9_.:-]{1,255}`
/// (the identifier charset of the schemas; anything else is omitted, so
/// no payload byte can inject a header).
fn header_safe(value: &str) -> bool {
    (1..=255).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// An HTTP client (public web PKI roots for `https`, no proxy, no
/// redirects) giving up after `timeout`.
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, GatewayError> {
    client(timeout, Some(timeout))
}

/// An HTTP client as [`http_client`] giving up on a connection after
/// `connect_timeout`, with no bound on the whole exchange: the caller
/// bounds each wait itself (request mode's proxy, whose streamed answers
/// last as long as they last).
pub(crate) fn streaming_http_client(connect_timeout: Duration) -> Result<reqwest::Client, GatewayError> {
    client(connect_timeout, None)
}

fn client(connect_timeout: Duration, timeout: Option<Duration>) -> Result<reqwest::Client, GatewayError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| GatewayError::Tls(Box::new(e)))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut builder = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect_timeout);
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    builder.build().map_err(|e| GatewayError::HttpClient(Box::new(e)))
}

/// The HTTP client that posts events upstream.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    url: url::Url,
    client: reqwest::Client,
}

impl Upstream {
    /// A client for `url` (`http` or `https`; public web PKI roots for
    /// `https`), giving up on an attempt after `timeout`.
    pub(crate) fn new(url: url::Url, timeout: Duration) -> Result<Self, GatewayError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(crate::error::ConfigError::UpstreamScheme {
                scheme: url.scheme().to_owned(),
            }
            .into());
        }
        let client = http_client(timeout)?;
        Ok(Self { url, client })
    }

    /// The upstream URL.
    pub(crate) fn url(&self) -> &url::Url {
        &self.url
    }

    /// Posts the event's raw bytes with the verified identity headers.
    /// `Ok` only when the upstream answered `2xx`; otherwise why the event
    /// was not acknowledged.
    pub(crate) async fn forward(&self, webhook: &Webhook) -> Result<(), UpstreamFailure> {
        let mut request = self
            .client
            .post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(VERIFIED_AGENT, webhook.sender())
            .header(IDEMPOTENCY_KEY, webhook.idempotency_key());
        if let Some(keyid) = webhook.keyid() {
            request = request.header(VERIFIED_KEYID, keyid);
        }
        for (name, value) in [
            (NOTIFICATION_ID, webhook.notification_id()),
            (NOTIFICATION_TYPE, webhook.notification_type()),
            (REEMISSION_OF, webhook.reemission_of()),
        ] {
            if let Some(value) = value.filter(|v| header_safe(v)) {
                request = request.header(name, value);
            }
        }
        match request.body(webhook.raw().clone()).send().await {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(_) => Err(UpstreamFailure::Status),
            Err(e) if e.is_timeout() => Err(UpstreamFailure::Timeout),
            Err(_) => Err(UpstreamFailure::Connect),
        }
    }
}
