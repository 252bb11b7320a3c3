//! TLS termination in the gateway: [`TlsConfig`], a PEM certificate chain
//! and private key that can be reloaded while serving.
//!
//! The gateway offers HTTP/2 and HTTP/1.1 by ALPN (`h2`, `http/1.1`) with
//! rustls on the aws-lc-rs provider. The certificate in use sits behind a
//! [`rustls::server::ResolvesServerCert`] that hands every new handshake
//! the current one; [`TlsConfig::reload`] reads the files again and swaps
//! it atomically, so connections already open keep theirs and new ones get
//! the new one. A reload that fails (unreadable file, malformed PEM, a key
//! that is not the certificate's) changes nothing.
//!
//! Without a public URL, the certificate's DNS names also decide which
//! `Host` / `:authority` a request may arrive for (see
//! [`GatewayOptions::tls`](crate::GatewayOptions::tls)).

use crate::error::ConfigError;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

/// The ALPN protocols offered, in order of preference.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A TLS server certificate and key read from PEM files, reloadable.
///
/// Cloning is cheap: clones share the current certificate, so a reload
/// through one is seen by every server using another.
///
/// ```no_run
/// # fn run() -> Result<(), adcp_gateway::ConfigError> {
/// let tls = adcp_gateway::TlsConfig::from_pem_files("/etc/adcp/tls/fullchain.pem", "/etc/adcp/tls/key.pem")?;
/// println!("serving for {:?}", tls.dns_names());
/// // … after the files were renewed:
/// tls.reload()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<Inner>,
}

struct Inner {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<Loaded>>,
}

/// One certificate as loaded: the chain and key rustls serves, and the
/// DNS names of its subjectAltName extension (lowercase).
struct Loaded {
    key: Arc<CertifiedKey>,
    dns_names: Vec<String>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert", &self.inner.cert_path)
            .field("key", &self.inner.key_path)
            .field("dns_names", &self.dns_names())
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads the certificate chain (`cert`: PEM, end-entity certificate
    /// first, then intermediates) and its private key (`key`: PEM, PKCS#8,
    /// PKCS#1 or SEC1).
    ///
    /// # Errors
    ///
    /// [`ConfigError::TlsCert`] when the chain cannot be read or has no
    /// certificate; [`ConfigError::TlsKey`] when the key cannot be read,
    /// is of an unsupported type, or is not the certificate's.
    pub fn from_pem_files(cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let (cert_path, key_path) = (cert.as_ref().to_path_buf(), key.as_ref().to_path_buf());
        let loaded = load(&cert_path, &key_path, &provider)?;
        Ok(Self {
            inner: Arc::new(Inner {
                cert_path,
                key_path,
                provider,
                current: RwLock::new(Arc::new(loaded)),
            }),
        })
    }

    /// Reads the files again and, if they hold a usable certificate and
    /// key, makes them the certificate of every new handshake. Connections
    /// already open keep the certificate they were set up with. On error
    /// the current certificate stays in use.
    ///
    /// # Errors
    ///
    /// As [`from_pem_files`](Self::from_pem_files).
    pub fn reload(&self) -> Result<(), ConfigError> {
        let loaded = load(&self.inner.cert_path, &self.inner.key_path, &self.inner.provider)?;
        *self.inner.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(loaded);
        Ok(())
    }

    /// The DNS names of the current certificate's subjectAltName extension,
    /// lowercase (wildcards as `*.example.com`).
    #[must_use]
    pub fn dns_names(&self) -> Vec<String> {
        self.current().dns_names.clone()
    }

    /// The certificate chain file.
    #[must_use]
    pub fn cert_path(&self) -> &Path {
        &self.inner.cert_path
    }

    /// The private key file.
    #[must_use]
    pub fn key_path(&self) -> &Path {
        &self.inner.key_path
    }

    /// A rustls server configuration serving the current certificate (and
    /// every reloaded one) with ALPN `h2` then `http/1.1`, TLS 1.2 and 1.3,
    /// no client authentication: what [`Gateway::serve`](crate::Gateway::serve)
    /// uses, for a server of your own around [`Gateway::router`](crate::Gateway::router).
    ///
    /// # Errors
    ///
    /// [`ConfigError::TlsProvider`] if the crypto provider offers no safe
    /// protocol version (it does).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, ConfigError> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&self.inner.provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::TlsProvider(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(self.clone()));
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }

    /// Whether `host` (a DNS name, no port) is one of the current
    /// certificate's names: exactly, ignoring ASCII case, or under a
    /// wildcard name `*.rest` standing for exactly one left-most label
    /// (RFC 6125 §6.4.3: `a.rest` matches, `rest` and `a.b.rest` do not).
    #[must_use]
    pub fn covers(&self, host: &str) -> bool {
        covers(&self.current().dns_names, host)
    }

    /// Reloads the certificate each time the process receives `SIGHUP`,
    /// until the returned task is aborted; a failed reload is reported on
    /// stderr and the current certificate kept. The signal handler is
    /// installed before this returns (so a `SIGHUP` no longer ends the
    /// process). [`Gateway::run`](crate::Gateway::run) calls it when
    /// serving TLS.
    ///
    /// # Errors
    ///
    /// The signal handler could not be installed.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime with its I/O driver enabled (as
    /// `tokio::signal` does).
    #[cfg(unix)]
    pub fn reload_on_sighup(&self) -> std::io::Result<tokio::task::JoinHandle<()>> {
        let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let tls = self.clone();
        Ok(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match tls.reload() {
                    Ok(()) => eprintln!(
                        "SIGHUP: TLS certificate reloaded from {} ({})",
                        tls.cert_path().display(),
                        tls.dns_names().join(", ")
                    ),
                    Err(e) => eprintln!("error: SIGHUP: TLS reload failed, keeping the current certificate: {e}"),
                }
            }
        }))
    }

    fn current(&self) -> Arc<Loaded> {
        Arc::clone(&self.inner.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded").field("dns_names", &self.dns_names).finish()
    }
}

impl ResolvesServerCert for TlsConfig {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current().key))
    }
}

/// Reads and checks a chain and its key.
fn load(cert_path: &Path, key_path: &Path, provider: &CryptoProvider) -> Result<Loaded, ConfigError> {
    let cert_error = |reason: String| ConfigError::TlsCert {
        path: cert_path.to_path_buf(),
        reason,
    };
    let key_error = |reason: String| ConfigError::TlsKey {
        path: key_path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| cert_error(pem_reason(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(pem_reason(e)))?;
    let Some(end_entity) = chain.first() else {
        return Err(cert_error("no CERTIFICATE block in the file".to_owned()));
    };
    let dns_names = webpki::EndEntityCert::try_from(end_entity)
        .map_err(|e| cert_error(format!("not an X.509 certificate: {e}")))?
        .valid_dns_names()
        .map(str::to_ascii_lowercase)
        .collect();
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| key_error(pem_reason(e)))?;
    let key = CertifiedKey::from_der(chain, key, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => key_error("not the private key of the --tls-cert certificate".to_owned()),
        other => key_error(other.to_string()),
    })?;
    Ok(Loaded {
        key: Arc::new(key),
        dns_names,
    })
}

/// A PEM reading error in words (the file's I/O error as is).
fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::Io(e) => e.to_string(),
        E::NoItemsFound => "no PEM block of the expected type in the file".to_owned(),
        other => format!("malformed PEM: {other}"),
    }
}

/// The name-matching rule of [`TlsConfig::covers`].
fn covers(names: &[String], host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if host.is_empty() {
        return false;
    }
    names.iter().any(|name| match name.strip_prefix("*.") {
        Some(parent) => host
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest == parent),
        None => *name == host,
    })
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn names_match_exactly_or_under_one_wildcard_label() {
        let names = ["hooks.buyer.example".to_owned(), "*.wild.example".to_owned()];
        for host in [
            "hooks.buyer.example",
            "HOOKS.Buyer.example",
            "hooks.buyer.example.",
            "a.wild.example",
        ] {
            assert!(covers(&names, host), "{host}");
        }
        for host in [
            "buyer.example",
            "x.hooks.buyer.example",
            "wild.example",
            "a.b.wild.example",
            ".wild.example",
            "",
            "127.0.0.1",
        ] {
            assert!(!covers(&names, host), "{host}");
        }
    }
}
