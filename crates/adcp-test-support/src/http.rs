//! A plain HTTP client for tests.

use std::sync::Arc;
use std::time::Duration;

/// An HTTP client for servers under test: no proxy, no redirects, giving
/// up after `timeout`. reqwest is built without a default TLS provider in
/// this workspace, so it gets an empty-rooted configuration even for
/// `http://`.
///
/// # Panics
///
/// If the TLS configuration or the client cannot be built (a broken
/// build, not a test failure).
#[must_use]
pub fn http_client(timeout: Duration) -> reqwest::Client {
    #[allow(clippy::expect_used)]
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("the default provider supports the default protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    #[allow(clippy::expect_used)]
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .expect("a plain client builds")
}
