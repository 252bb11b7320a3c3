//! A local HTTPS server for the integration tests: a test CA minted with
//! rcgen at test time, one leaf certificate for the given names, routes by
//! `host + path` (or by path alone), and per-route hit counters. Only
//! loopback is ever contacted, through the explicitly test-only SSRF
//! exception.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use adcp_jwks::{FetchConfig, Fetcher, SsrfPolicy, StaticDnsResolver, TrustRoots};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Vec<u8>,
    pub extra: String,
    /// Omit `Content-Length` (the body ends when the connection closes).
    pub no_length: bool,
    /// Send the body in 1 KiB pieces this far apart.
    pub trickle: Duration,
    /// Wait this long before answering at all.
    pub delay: Duration,
}

pub fn ok(body: impl Into<Vec<u8>>) -> Resp {
    Resp {
        status: 200,
        body: body.into(),
        extra: String::new(),
        no_length: false,
        trickle: Duration::ZERO,
        delay: Duration::ZERO,
    }
}

pub fn redirect(status: u16, location: &str) -> Resp {
    Resp {
        status,
        body: Vec::new(),
        extra: format!("Location: {location}\r\n"),
        no_length: false,
        trickle: Duration::ZERO,
        delay: Duration::ZERO,
    }
}

type Routes = Arc<Mutex<HashMap<String, Resp>>>;
type Hits = Arc<Mutex<HashMap<String, usize>>>;

pub struct Server {
    pub port: u16,
    pub ca_der: Vec<u8>,
    pub names: Vec<String>,
    routes: Routes,
    hits: Hits,
}

impl Server {
    /// A server whose certificate covers `names` (all resolved to 127.0.0.1
    /// by [`Server::fetch_config`]).
    pub async fn start(names: &[&str]) -> Self {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        let leaf_params = rcgen::CertificateParams::new(names.clone()).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &ca, &ca_key).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes: Routes = Arc::default();
        let hits: Hits = Arc::default();
        let (r, h) = (routes.clone(), hits.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, r, h) = (acceptor.clone(), r.clone(), h.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let host = head
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("host").then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default();
                    let host = host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h).to_owned();
                    let keyed = format!("{host}{path}");
                    {
                        let mut h = h.lock().unwrap();
                        *h.entry(keyed.clone()).or_default() += 1;
                        *h.entry(path.clone()).or_default() += 1;
                    }
                    let resp = {
                        let r = r.lock().unwrap();
                        r.get(&keyed).or_else(|| r.get(&path)).cloned()
                    }
                    .unwrap_or(Resp {
                        status: 404,
                        ..ok("{}")
                    });
                    if !resp.delay.is_zero() {
                        tokio::time::sleep(resp.delay).await;
                    }
                    let length = if resp.no_length {
                        String::new()
                    } else {
                        format!("Content-Length: {}\r\n", resp.body.len())
                    };
                    let out = format!(
                        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\n{length}{}Connection: close\r\n\r\n",
                        resp.status, resp.extra
                    );
                    let _ = tls.write_all(out.as_bytes()).await;
                    if resp.trickle.is_zero() {
                        let _ = tls.write_all(&resp.body).await;
                    } else {
                        for piece in resp.body.chunks(1024) {
                            if tls.write_all(piece).await.is_err() {
                                return;
                            }
                            let _ = tls.flush().await;
                            tokio::time::sleep(resp.trickle).await;
                        }
                    }
                    let _ = tls.shutdown().await;
                });
            }
        });
        Self {
            port,
            ca_der: ca.der().to_vec(),
            names,
            routes,
            hits,
        }
    }

    /// Serves `resp` at `route`: `"/path"` on every host, or
    /// `"host/path"` on one host.
    pub fn set(&self, route: &str, resp: Resp) {
        self.routes.lock().unwrap().insert(route.to_owned(), resp);
    }

    /// Requests received for `route` (same key forms as [`Server::set`]).
    pub fn hits(&self, route: &str) -> usize {
        self.hits.lock().unwrap().get(route).copied().unwrap_or(0)
    }

    /// Requests received on `host`, any path.
    pub fn host_hits(&self, host: &str) -> usize {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with(host) && k[host.len()..].starts_with('/'))
            .map(|(_, v)| v)
            .sum()
    }

    /// Requests received in total.
    pub fn total_requests(&self) -> usize {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| !k.starts_with('/'))
            .map(|(_, v)| v)
            .sum()
    }

    pub fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }

    pub fn fetch_config(&self) -> FetchConfig {
        let mut dns = StaticDnsResolver::new();
        for name in &self.names {
            dns = dns.with(name, [IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        }
        FetchConfig {
            policy: SsrfPolicy::new().dangerously_allow_loopback_for_tests(),
            resolver: Arc::new(dns),
            roots: TrustRoots::Custom(vec![self.ca_der.clone()]),
            connect_timeout: Duration::from_secs(2),
            total_timeout: Duration::from_secs(3),
        }
    }

    pub fn fetcher(&self) -> Fetcher {
        Fetcher::new(self.fetch_config()).unwrap()
    }
}

/// A fresh Ed25519 request-signing public JWK (with `adcp_use`).
pub fn key(kid: &str) -> serde_json::Value {
    key_pair(kid).1
}

/// A fresh Ed25519 signing key and its public JWK.
pub fn key_pair(kid: &str) -> (adcp_sigbase::crypto::SigningKey, serde_json::Value) {
    let signer = adcp_sigbase::crypto::SigningKey::generate_ed25519().unwrap();
    let mut v = adcp_sigbase::jwk::Jwk::from_signing_key(&signer, kid)
        .unwrap()
        .to_public_json();
    v["adcp_use"] = "request-signing".into();
    v["use"] = "sig".into();
    v["key_ops"] = serde_json::json!(["verify"]);
    (signer, v)
}

pub fn jwks(keys: Vec<serde_json::Value>) -> Vec<u8> {
    serde_json::json!({ "keys": keys }).to_string().into_bytes()
}
