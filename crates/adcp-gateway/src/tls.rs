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
//! Without a public URL, the certificate's names (its subjectAltName DNS
//! names and IP addresses) also decide which `Host` / `:authority` a
//! request may arrive for (see
//! [`GatewayOptions::tls`](crate::GatewayOptions::tls)).

use crate::error::ConfigError;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Set by a gateway whose accepted `Host`s are the certificate's
    /// names alone (no public URL, no accept-host): a reload to a
    /// certificate without any is then refused.
    names_required: AtomicBool,
}

/// One certificate as loaded: the chain and key rustls serves, and the
/// DNS names (lowercase) and IP addresses of its subjectAltName
/// extension.
struct Loaded {
    key: Arc<CertifiedKey>,
    dns_names: Vec<String>,
    ip_addresses: Vec<IpAddr>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert", &self.inner.cert_path)
            .field("key", &self.inner.key_path)
            .field("dns_names", &self.dns_names())
            .field("ip_addresses", &self.ip_addresses())
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
                names_required: AtomicBool::new(false),
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
    /// As [`from_pem_files`](Self::from_pem_files), and
    /// [`ConfigError::TlsNoNames`] when the new certificate names no DNS
    /// name or IP address while a gateway serving it accepts only the
    /// certificate's names (no public URL, no accept-host).
    pub fn reload(&self) -> Result<(), ConfigError> {
        let loaded = load(&self.inner.cert_path, &self.inner.key_path, &self.inner.provider)?;
        if self.inner.names_required.load(Ordering::Relaxed) && !loaded.has_names() {
            return Err(ConfigError::TlsNoNames {
                path: self.inner.cert_path.clone(),
            });
        }
        *self.inner.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(loaded);
        Ok(())
    }

    /// The DNS names of the current certificate's subjectAltName extension,
    /// lowercase (wildcards as `*.example.com`).
    #[must_use]
    pub fn dns_names(&self) -> Vec<String> {
        self.current().dns_names.clone()
    }

    /// The IP addresses of the current certificate's subjectAltName
    /// extension (`iPAddress` entries), IPv4 and IPv6.
    #[must_use]
    pub fn ip_addresses(&self) -> Vec<IpAddr> {
        self.current().ip_addresses.clone()
    }

    /// The current certificate's names as they would be matched: its DNS
    /// names, then its IP addresses (IPv6 in brackets).
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        let current = self.current();
        let ips = current.ip_addresses.iter().map(|ip| match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        });
        current.dns_names.iter().cloned().chain(ips).collect()
    }

    /// Whether the current certificate names at least one DNS name or IP
    /// address, so that some `Host` can match it.
    #[must_use]
    pub fn has_names(&self) -> bool {
        self.current().has_names()
    }

    /// Marks the certificate's names as the only `Host`s accepted: a
    /// reload to a certificate without any is refused from then on.
    pub(crate) fn require_names(&self) {
        self.inner.names_required.store(true, Ordering::Relaxed);
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

    /// Whether `host` (no port) is one of the current certificate's
    /// names. An IP address (`192.0.2.1`, `[2001:db8::1]` or
    /// `2001:db8::1`) matches an `iPAddress` entry equal to it, never a
    /// DNS name; a DNS name matches a DNS name exactly, ignoring ASCII
    /// case, or under a wildcard name `*.rest` standing for exactly one
    /// left-most label (RFC 6125 §6.4.3: `a.rest` matches, `rest` and
    /// `a.b.rest` do not).
    #[must_use]
    pub fn covers(&self, host: &str) -> bool {
        let current = self.current();
        match host_ip(host) {
            Some(ip) => current.ip_addresses.contains(&ip),
            None => covers(&current.dns_names, host),
        }
    }

    /// Reloads the certificate each time the process receives `SIGHUP`,
    /// until the returned task is aborted; a failed reload is reported on
    /// stderr and the current certificate kept. The signal handler is
    /// installed before this returns (so a `SIGHUP` no longer ends the
    /// process). For a server of your own: a gateway's
    /// [`Gateway::reload_on_sighup`](crate::Gateway::reload_on_sighup)
    /// (what [`Gateway::run`](crate::Gateway::run) runs) reloads the
    /// certificate it serves and its key and policy material together.
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
                        tls.names().join(", ")
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
        f.debug_struct("Loaded")
            .field("dns_names", &self.dns_names)
            .field("ip_addresses", &self.ip_addresses)
            .finish()
    }
}

impl Loaded {
    fn has_names(&self) -> bool {
        !self.dns_names.is_empty() || !self.ip_addresses.is_empty()
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
    let ip_addresses = san_ip_addresses(end_entity.as_ref());
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| key_error(pem_reason(e)))?;
    let key = CertifiedKey::from_der(chain, key, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => key_error("not the private key of the --tls-cert certificate".to_owned()),
        other => key_error(other.to_string()),
    })?;
    Ok(Loaded {
        key: Arc::new(key),
        dns_names,
        ip_addresses,
    })
}

/// `host` as an IP address: dotted IPv4, or IPv6 with or without the
/// brackets of an authority.
fn host_ip(host: &str) -> Option<IpAddr> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    bare.parse().ok()
}

/// The `iPAddress` entries (4 or 16 octets) of a DER certificate's
/// subjectAltName extension, in order, without duplicates. webpki has
/// already parsed the certificate; anything this walk does not find where
/// X.509 puts it yields no address, never a panic.
fn san_ip_addresses(certificate: &[u8]) -> Vec<IpAddr> {
    /// The DER of OID 2.5.29.17 (subjectAltName), without tag and length.
    const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
    let mut found = Vec::new();
    // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { ... [3] extensions }, ... }
    let Some((0x30, certificate, _)) = der::tlv(certificate) else {
        return found;
    };
    let Some((0x30, tbs, _)) = der::tlv(certificate) else {
        return found;
    };
    let Some(extensions) = der::children(tbs).find_map(|(tag, content)| (tag == 0xa3).then_some(content)) else {
        return found;
    };
    let Some((0x30, extensions, _)) = der::tlv(extensions) else {
        return found;
    };
    for (tag, extension) in der::children(extensions) {
        if tag != 0x30 {
            continue;
        }
        // Extension ::= SEQUENCE { extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
        let mut fields = der::children(extension);
        if fields.next() != Some((0x06, SUBJECT_ALT_NAME)) {
            continue;
        }
        let Some((_, value)) = fields.find(|(tag, _)| *tag == 0x04) else {
            continue;
        };
        let Some((0x30, names, _)) = der::tlv(value) else {
            continue;
        };
        // GeneralName iPAddress [7] IMPLICIT OCTET STRING: tag 0x87.
        for (tag, octets) in der::children(names) {
            let ip = match (tag, octets.len()) {
                (0x87, 4) => <[u8; 4]>::try_from(octets).ok().map(IpAddr::from),
                (0x87, 16) => <[u8; 16]>::try_from(octets).ok().map(IpAddr::from),
                _ => None,
            };
            if let Some(ip) = ip.filter(|ip| !found.contains(ip)) {
                found.push(ip);
            }
        }
    }
    found
}

/// Just enough DER to walk to a certificate's subjectAltName: single-byte
/// tags, definite lengths of up to four octets.
mod der {
    /// The first element of `input`: its tag, its content and what
    /// follows it; `None` when it is not a well-formed element.
    pub(super) fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        if tag & 0x1f == 0x1f {
            return None;
        }
        let (&first, rest) = rest.split_first()?;
        let (length, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let octets = usize::from(first & 0x7f);
            if octets == 0 || octets > 4 || rest.len() < octets {
                return None;
            }
            let (octets, rest) = rest.split_at(octets);
            let length = octets.iter().fold(0usize, |length, b| (length << 8) | usize::from(*b));
            (length, rest)
        };
        if rest.len() < length {
            return None;
        }
        let (content, rest) = rest.split_at(length);
        Some((tag, content, rest))
    }

    /// The elements of a constructed value's content, as `(tag, content)`,
    /// up to the first malformed one.
    pub(super) fn children(mut content: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
        std::iter::from_fn(move || {
            let (tag, value, rest) = tlv(content)?;
            content = rest;
            Some((tag, value))
        })
    }
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
    use super::{covers, host_ip, san_ip_addresses};
    use std::net::IpAddr;

    #[test]
    fn ip_address_sans_are_read_from_the_certificate() {
        let names = ["hooks.buyer.example", "192.0.2.7", "2001:db8::1", "::1"].map(str::to_owned);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(names.to_vec())
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let ips: Vec<IpAddr> = ["192.0.2.7", "2001:db8::1", "::1"]
            .map(|ip| ip.parse().unwrap())
            .to_vec();
        assert_eq!(san_ip_addresses(cert.der()), ips);
        // A certificate without subjectAltName, and bytes that are no
        // certificate: no address, no panic.
        let bare = rcgen::CertificateParams::new(Vec::<String>::new())
            .unwrap()
            .self_signed(&key)
            .unwrap();
        assert!(san_ip_addresses(bare.der()).is_empty());
        let der = cert.der().to_vec();
        for end in 0..der.len() {
            let _ = san_ip_addresses(&der[..end]);
        }
        for garbage in [
            &[][..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x1f, 0x01, 0x00],
        ] {
            assert!(san_ip_addresses(garbage).is_empty());
        }
    }

    #[test]
    fn hosts_that_are_ip_addresses_are_parsed_with_or_without_brackets() {
        assert_eq!(host_ip("192.0.2.7"), "192.0.2.7".parse().ok());
        assert_eq!(host_ip("[2001:db8::1]"), "2001:db8::1".parse().ok());
        assert_eq!(host_ip("2001:db8::1"), "2001:db8::1".parse().ok());
        for not_ip in [
            "hooks.buyer.example",
            "[hooks.buyer.example]",
            "192.0.2.7:443",
            "[::1",
            "",
        ] {
            assert_eq!(host_ip(not_ip), None, "{not_ip}");
        }
    }

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
