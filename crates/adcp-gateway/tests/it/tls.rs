//! The gateway serving HTTPS: a CA and server certificates made here
//! (rcgen), a real TLS client trusting that CA (reqwest on rustls). A
//! signed webhook over HTTP/1.1 and over HTTP/2 (ALPN) is verified and
//! forwarded; the received `Host` must be a certificate name or an
//! accept-host; a reload swaps the certificate for new connections while
//! an open one keeps working; bad files are configuration errors, at
//! start-up and at reload (the old certificate stays).

use crate::support::{event, Seller, TempDir, Upstream, AGENT, PATH};
use adcp_gateway::{ConfigError, Gateway, GatewayConfig, GatewayError, GatewayHandle};
use adcp_sign::SignedRequest;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The name the tests reach the gateway by.
const HOST: &str = "hooks.buyer.example";

/// A test CA that issues server certificates.
pub struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

/// A server certificate: PEM chain and key, and the certificate's DER.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: Vec<u8>,
}

impl Pki {
    pub fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = params.self_signed(&ca_key).unwrap();
        Self { ca, ca_key }
    }

    /// The CA certificate, DER.
    pub fn ca_der(&self) -> Vec<u8> {
        self.ca.der().to_vec()
    }

    /// A certificate for `names` (DNS SANs) with a fresh key.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let params = rcgen::CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }

    /// A client trusting this CA only, offering `alpn`, reaching every
    /// name in `names` at `addr`, reporting the peer certificate
    /// (`TlsInfo`).
    pub fn client(&self, alpn: &[&[u8]], names: &[&str], addr: SocketAddr) -> reqwest::Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let mut tls =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let mut builder = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .tls_info(true)
            .no_proxy()
            .timeout(Duration::from_secs(10));
        for name in names {
            builder = builder.resolve(name, addr);
        }
        builder.build().unwrap()
    }
}

/// Writes `leaf` to `cert.pem` / `key.pem` in `dir`; their paths.
fn write(dir: &TempDir, leaf: &Leaf) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&key, &leaf.key_pem).unwrap();
    (cert, key)
}

/// The settings of the tests with TLS from `cert` / `key`.
fn config(dir: &TempDir, seller: &Seller, upstream: &Upstream, (cert, key): (PathBuf, PathBuf)) -> GatewayConfig {
    std::fs::write(dir.0.join("seller-jwks.json"), seller.jwks.to_string()).unwrap();
    let mut config = GatewayConfig::from_toml_str(&format!(
        "upstream = \"{}\"\njwks_agent = \"{AGENT}\"\nupstream_timeout = 5\n",
        upstream.url()
    ))
    .unwrap();
    config.jwks = Some(dir.0.join("seller-jwks.json"));
    config.store = format!("sqlite:{}", dir.0.join("dedup.sqlite").display())
        .parse()
        .unwrap();
    config.tls_cert = Some(cert);
    config.tls_key = Some(key);
    config.access_log = false;
    config
}

/// The gateway of `config` served on a loopback port.
async fn start(config: &GatewayConfig) -> GatewayHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Gateway::from_config(config).await.unwrap().serve(listener).unwrap()
}

/// What one request got: status, the `WWW-Authenticate` value, the HTTP
/// version, and the server certificate of its connection.
struct Answer {
    status: u16,
    challenge: Option<String>,
    version: reqwest::Version,
    peer: Option<Vec<u8>>,
}

/// Posts `signed` to `url`, with `host` as the `Host` header if given.
async fn post(client: &reqwest::Client, url: &str, signed: &SignedRequest, host: Option<&str>) -> Answer {
    let mut request = client.post(url);
    for (name, value) in signed.headers() {
        request = request.header(*name, value.as_str());
    }
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request
        .body(signed.body().unwrap().as_bytes().to_vec())
        .send()
        .await
        .unwrap();
    Answer {
        status: response.status().as_u16(),
        challenge: response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned()),
        version: response.version(),
        peer: response
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|info| info.peer_certificate().map(<[u8]>::to_vec)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_webhooks_over_https_h1_and_h2_are_forwarded_and_a_wrong_host_refused() {
    let dir = TempDir::new("tls-serve");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let leaf = pki.leaf(&[HOST, "*.wild.example"]);
    let mut config = config(&dir, &seller, &upstream, write(&dir, &leaf));
    // An accept-host beside the certificate's names: the address itself.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    config.accept_hosts = vec![addr.to_string()];
    let handle = Gateway::from_config(&config).await.unwrap().serve(listener).unwrap();
    assert_eq!(handle.base_url(), format!("https://{addr}"));
    assert_eq!(handle.gateway().tls().unwrap().dns_names(), [HOST, "*.wild.example"]);
    let port = addr.port();

    // HTTP/1.1 and HTTP/2, each as the client's only ALPN protocol.
    for (n, (alpn, version)) in [
        (&b"http/1.1"[..], reqwest::Version::HTTP_11),
        (&b"h2"[..], reqwest::Version::HTTP_2),
    ]
    .into_iter()
    .enumerate()
    {
        let client = pki.client(&[alpn], &[HOST], addr);
        let url = format!("https://{HOST}:{port}{PATH}");
        let signed = seller
            .signer
            .sign_webhook(&url, &event(&format!("v{n}")))
            .await
            .unwrap();
        let answer = post(&client, &url, &signed, None).await;
        assert_eq!((answer.status, answer.challenge), (200, None), "{version:?}");
        assert_eq!(answer.version, version);
        assert_eq!(answer.peer.as_deref(), Some(leaf.der.as_slice()));
        assert_eq!(upstream.applied().len(), n + 1);
    }
    // Both offered: HTTP/2 is chosen.
    let client = pki.client(&[b"h2", b"http/1.1"], &[HOST, "a.wild.example"], addr);
    let url = format!("https://a.wild.example:{port}{PATH}");
    let signed = seller.signer.sign_webhook(&url, &event("wild")).await.unwrap();
    let answer = post(&client, &url, &signed, None).await;
    assert_eq!((answer.status, answer.version), (200, reqwest::Version::HTTP_2));
    assert_eq!(upstream.applied().len(), 3);

    // A Host the certificate does not name (signed for it, so only the
    // Host rule refuses it), over HTTP/1.1: refused before verification.
    let h1 = pki.client(&[b"http/1.1"], &[HOST], addr);
    for wrong in [format!("evil.example:{port}"), format!("a.b.wild.example:{port}")] {
        let signed = seller
            .signer
            .sign_webhook(&format!("https://{wrong}{PATH}"), &event("evil"))
            .await
            .unwrap();
        let answer = post(&h1, &format!("https://{HOST}:{port}{PATH}"), &signed, Some(&wrong)).await;
        assert_eq!(
            (answer.status, answer.challenge.as_deref()),
            (401, Some("Signature error=\"webhook_target_uri_malformed\"")),
            "{wrong}"
        );
    }
    assert_eq!(upstream.applied().len(), 3, "nothing forwarded");
    // The accept-host: the address, port included.
    let signed = seller
        .signer
        .sign_webhook(&format!("https://{addr}{PATH}"), &event("ip"))
        .await
        .unwrap();
    let answer = post(
        &h1,
        &format!("https://{HOST}:{port}{PATH}"),
        &signed,
        Some(&addr.to_string()),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(upstream.applied().len(), 4);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_serves_the_new_certificate_to_new_connections_and_keeps_open_ones() {
    let dir = TempDir::new("tls-reload");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let first = pki.leaf(&[HOST]);
    let files = write(&dir, &first);
    let handle = start(&config(&dir, &seller, &upstream, files.clone())).await;
    let addr = handle.local_addr();
    let url = format!("https://{HOST}:{}{PATH}", addr.port());
    let sign = |n: &'static str| {
        let (seller, url) = (&seller, url.clone());
        async move { seller.signer.sign_webhook(&url, &event(n)).await.unwrap() }
    };

    // An HTTP/2 connection opened before the reload.
    let open = pki.client(&[b"h2"], &[HOST], addr);
    let answer = post(&open, &url, &sign("a").await, None).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(first.der.as_slice()))
    );

    let second = pki.leaf(&[HOST]);
    write(&dir, &second);
    handle.reload_tls().unwrap();

    // The open connection keeps working, with its certificate.
    let answer = post(&open, &url, &sign("b").await, None).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(first.der.as_slice()))
    );
    // A new connection gets the new certificate.
    let fresh = pki.client(&[b"http/1.1"], &[HOST], addr);
    let answer = post(&fresh, &url, &sign("c").await, None).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(second.der.as_slice()))
    );

    // Failed reloads keep the current certificate: a file that is no PEM,
    // a key that is not the certificate's.
    std::fs::write(&files.0, "not a certificate\n").unwrap();
    let e = handle.reload_tls().unwrap_err();
    assert!(
        matches!(&e, ConfigError::TlsCert { path, .. } if *path == files.0),
        "{e:?}"
    );
    let third = pki.leaf(&[HOST]);
    std::fs::write(&files.0, &third.cert_pem).unwrap();
    let e = handle.reload_tls().unwrap_err();
    assert!(
        matches!(&e, ConfigError::TlsKey { path, .. } if *path == files.1)
            && e.to_string().contains("not the private key"),
        "{e}"
    );
    let fresh = pki.client(&[b"h2"], &[HOST], addr);
    let answer = post(&fresh, &url, &sign("d").await, None).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(second.der.as_slice()))
    );
    assert_eq!(upstream.applied().len(), 4);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_naming_ip_addresses_accepts_requests_for_them() {
    let dir = TempDir::new("tls-ip");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    // IP-address SANs only: an IPv4 address the client connects to, and
    // IPv6 loopback.
    let leaf = pki.leaf(&["127.0.0.1", "::1"]);
    let handle = start(&config(&dir, &seller, &upstream, write(&dir, &leaf))).await;
    let tls = handle.gateway().tls().unwrap();
    assert!(tls.dns_names().is_empty());
    assert_eq!(
        tls.ip_addresses(),
        ["127.0.0.1".parse::<std::net::IpAddr>().unwrap(), "::1".parse().unwrap()]
    );
    assert_eq!(tls.names(), ["127.0.0.1", "[::1]"]);
    let addr = handle.local_addr();
    let port = addr.port();
    // The client verifies the certificate for the address it connects to.
    let url = format!("https://127.0.0.1:{port}{PATH}");
    for (n, alpn) in [&b"http/1.1"[..], &b"h2"[..]].into_iter().enumerate() {
        let client = pki.client(&[alpn], &[], addr);
        let signed = seller
            .signer
            .sign_webhook(&url, &event(&format!("ip{n}")))
            .await
            .unwrap();
        let answer = post(&client, &url, &signed, None).await;
        assert_eq!((answer.status, answer.challenge), (200, None), "{alpn:?}");
        assert_eq!(answer.peer.as_deref(), Some(leaf.der.as_slice()));
    }
    assert_eq!(upstream.applied().len(), 2);
    // Any Host naming one of the addresses, with or without a port, IPv6
    // in brackets (spelled canonically or not), is accepted; another
    // address, or a name, is not.
    let h1 = pki.client(&[b"http/1.1"], &[], addr);
    let accepted = [
        "127.0.0.1".to_owned(),
        format!("[::1]:{port}"),
        "[::1]".to_owned(),
        format!("[0:0:0:0:0:0:0:1]:{port}"),
    ];
    for (n, host) in accepted.iter().enumerate() {
        let signed = seller
            .signer
            .sign_webhook(&format!("https://{host}{PATH}"), &event(&format!("host{n}")))
            .await
            .unwrap();
        let answer = post(&h1, &url, &signed, Some(host)).await;
        assert_eq!((answer.status, answer.challenge), (200, None), "{host}");
    }
    assert_eq!(upstream.applied().len(), 2 + accepted.len());
    for host in [
        format!("127.0.0.2:{port}"),
        format!("[::2]:{port}"),
        format!("localhost:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
    ] {
        let signed = seller
            .signer
            .sign_webhook(&format!("https://{host}{PATH}"), &event("other"))
            .await
            .unwrap();
        let answer = post(&h1, &url, &signed, Some(&host)).await;
        assert_eq!(
            (answer.status, answer.challenge.as_deref()),
            (401, Some("Signature error=\"webhook_target_uri_malformed\"")),
            "{host}"
        );
    }
    assert_eq!(upstream.applied().len(), 2 + accepted.len(), "nothing else forwarded");

    // A reload to a certificate naming nothing is refused (no request
    // could be accepted): the current one stays.
    let nameless = pki.leaf(&[]);
    write(&dir, &nameless);
    let e = handle.reload_tls().unwrap_err();
    assert!(matches!(e, ConfigError::TlsNoNames { .. }), "{e:?}");
    let signed = seller.signer.sign_webhook(&url, &event("after")).await.unwrap();
    let answer = post(&pki.client(&[b"h2"], &[], addr), &url, &signed, None).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(leaf.der.as_slice()))
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_naming_nothing_needs_a_public_url_or_an_accept_host() {
    let dir = TempDir::new("tls-nameless");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let nameless = pki.leaf(&[]);
    let files = write(&dir, &nameless);
    let config = config(&dir, &seller, &upstream, files.clone());
    expect(
        config.clone(),
        &format!(
            "--tls-cert {}: the certificate names no DNS name or IP address (subjectAltName), so no request could be accepted; add --public-url URL",
            files.0.display()
        ),
    )
    .await;
    // Gateway::new refuses it as well.
    let store = adcp_store::open(&adcp_store::StoreUrl::Memory, adcp_store::StoreOptions::default())
        .await
        .unwrap();
    let mut options = adcp_gateway::GatewayOptions::new(upstream.url().parse().unwrap());
    options.tls = Some(adcp_gateway::TlsConfig::from_pem_files(&files.0, &files.1).unwrap());
    let keys = Arc::new(adcp_verify::StaticKeyResolver::new());
    let e = Gateway::new(keys.clone(), store.clone(), options.clone()).unwrap_err();
    assert!(
        matches!(e, GatewayError::Config(ConfigError::TlsNoNames { .. })),
        "{e:?}"
    );
    // With an accept-host, or a public URL, it starts.
    options.accept_hosts = vec!["hooks.buyer.example".into()];
    assert!(Gateway::new(keys, store, options).is_ok());
    let mut accept = config.clone();
    accept.accept_hosts = vec!["127.0.0.1".into()];
    assert!(accept.validate().is_ok());
    let mut public = config;
    public.public_url = Some("https://buyer.example".parse().unwrap());
    assert!(public.validate().is_ok());
}

/// `config` is refused by `validate` and by `from_config` with the same
/// configuration error, containing `want`.
async fn expect(config: GatewayConfig, want: &str) {
    let validated = config.validate().unwrap_err().to_string();
    let e = Gateway::from_config(&config).await.unwrap_err();
    assert!(matches!(e, GatewayError::Config(_)), "{e:?}");
    assert!(e.to_string().contains(want), "{e} (wanted {want:?})");
    assert_eq!(validated, e.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_files_at_start_up_are_configuration_errors() {
    let dir = TempDir::new("tls-errors");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let leaf = pki.leaf(&[HOST]);
    let (cert, key) = write(&dir, &leaf);
    // A missing file, a file without a certificate, a key without its
    // certificate.
    let missing = dir.0.join("missing.pem");
    let mut c = config(&dir, &seller, &upstream, (missing.clone(), key.clone()));
    expect(c.clone(), &format!("--tls-cert {}", missing.display())).await;
    std::fs::write(dir.0.join("garbage.pem"), "-----BEGIN NOTHING-----\n").unwrap();
    c.tls_cert = Some(dir.0.join("garbage.pem"));
    expect(c.clone(), "--tls-cert").await;
    c.tls_cert = Some(cert.clone());
    c.tls_key = Some(cert.clone());
    expect(c.clone(), "--tls-key").await;
    let other = pki.leaf(&[HOST]);
    std::fs::write(dir.0.join("other-key.pem"), &other.key_pem).unwrap();
    c.tls_key = Some(dir.0.join("other-key.pem"));
    expect(c.clone(), "not the private key of the --tls-cert certificate").await;
    // Both or neither.
    c.tls_key = None;
    expect(c.clone(), "give both --tls-cert FILE and --tls-key FILE, or neither").await;
    let mut c = config(&dir, &seller, &upstream, (cert, key));
    assert!(c.validate().is_ok());
    c.tls_cert = None;
    expect(c, "or neither").await;
    // Reloading a plain-HTTP gateway.
    let mut plain = config(&dir, &seller, &upstream, (PathBuf::new(), PathBuf::new()));
    plain.tls_cert = None;
    plain.tls_key = None;
    let handle = start(&plain).await;
    assert!(handle.base_url().starts_with("http://"));
    assert!(matches!(handle.reload_tls(), Err(ConfigError::NoTls)));
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_public_url_tls_serves_and_the_public_url_decides_the_target() {
    let dir = TempDir::new("tls-public");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let leaf = pki.leaf(&[HOST]);
    let mut config = config(&dir, &seller, &upstream, write(&dir, &leaf));
    config.public_url = Some("https://buyer.example".parse().unwrap());
    let handle = start(&config).await;
    assert!(handle.base_url().starts_with("https://"));
    let addr = handle.local_addr();
    let client = pki.client(&[b"http/1.1"], &[HOST], addr);
    let connect = format!("https://{HOST}:{}{PATH}", addr.port());
    // The public URL's authority is accepted though the certificate does
    // not name it; the certificate's own name is not.
    let signed = seller
        .signer
        .sign_webhook(&format!("https://buyer.example{PATH}"), &event("p"))
        .await
        .unwrap();
    let answer = post(&client, &connect, &signed, Some("buyer.example")).await;
    assert_eq!(
        (answer.status, answer.peer.as_deref()),
        (200, Some(leaf.der.as_slice()))
    );
    let signed = seller.signer.sign_webhook(&connect, &event("q")).await.unwrap();
    let answer = post(&client, &connect, &signed, None).await;
    assert_eq!(
        (answer.status, answer.challenge.as_deref()),
        (401, Some("Signature error=\"webhook_target_uri_malformed\""))
    );
    assert_eq!(upstream.applied().len(), 1);
    handle.shutdown().await.unwrap();
}

/// The certificate a fresh connection to `/healthz` is served, if the
/// gateway answers.
async fn served_certificate(pki: &Pki, addr: SocketAddr) -> Option<Vec<u8>> {
    let client = pki.client(&[b"http/1.1"], &[HOST], addr);
    let response = client
        .get(format!("https://{HOST}:{}/healthz", addr.port()))
        .send()
        .await
        .ok()?;
    assert_eq!(response.status(), 200);
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate().map(<[u8]>::to_vec))
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reloads_the_certificate_on_sighup() {
    let dir = TempDir::new("tls-sighup");
    let upstream = Upstream::start().await;
    let seller = Seller::new();
    let pki = Pki::new();
    let first = pki.leaf(&[HOST]);
    let mut config = config(&dir, &seller, &upstream, write(&dir, &first));
    // A free port: bound, then released for the gateway.
    config.listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let addr = config.listen;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        Gateway::run(&config, async {
            let _ = stopped.await;
        })
        .await
    });
    let mut served = None;
    for _ in 0..100 {
        served = served_certificate(&pki, addr).await;
        if served.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(served.as_deref(), Some(first.der.as_slice()));
    // A real SIGHUP to this process: `run` installed its handler before
    // serving, so the process lives on and reloads.
    let second = pki.leaf(&[HOST]);
    write(&dir, &second);
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut reloaded = false;
    for _ in 0..100 {
        if served_certificate(&pki, addr).await.as_deref() == Some(second.der.as_slice()) {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reloaded, "the new certificate is served after SIGHUP");
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}
