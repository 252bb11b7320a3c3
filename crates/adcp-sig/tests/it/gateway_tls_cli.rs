//! `adcp-sig gateway --tls-cert --tls-key` as a process: serves HTTPS
//! (HTTP/2 by ALPN), reloads its certificate on a real `SIGHUP` without
//! dropping an open connection (a failed reload keeps the certificate),
//! refuses a `--revoked-kid`'s signatures, and prints the new settings in
//! its listening line.

use crate::support::gateway as common;
use adcp_sign::{Algorithm, HttpSigner, SignedRequest, SoftwareSigner};
use common::{event, line_with, TempDir, Upstream, AGENT, PATH};
use std::io::BufReader;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// The name the test reaches the gateway by.
const HOST: &str = "hooks.buyer.example";

/// A test CA and the certificates it issues (PEM chain, PEM key, DER).
struct Pki {
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    fn new() -> Self {
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

    fn leaf(&self) -> (String, String, Vec<u8>) {
        let params = rcgen::CertificateParams::new(vec![HOST.to_owned()]).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }

    /// An HTTP/2-only client trusting this CA, reaching `HOST` at `addr`.
    fn client(&self, addr: SocketAddr) -> reqwest::Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let mut tls =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec()];
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .tls_info(true)
            .no_proxy()
            .resolve(HOST, addr)
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }
}

/// Posts `signed`: status, `WWW-Authenticate`, and the certificate of the
/// connection it went over.
async fn post(client: &reqwest::Client, url: &str, signed: &SignedRequest) -> (u16, Option<String>, Vec<u8>) {
    let response = common::signed_post(client, url, signed).send().await.unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let peer = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate())
        .unwrap()
        .to_vec();
    (response.status().as_u16(), challenge, peer)
}

fn signal(child: &std::process::Child, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_process_serves_https_and_reloads_its_certificate_on_sighup() {
    let dir = TempDir::new("cli-tls");
    let upstream = Upstream::start().await;
    let pki = Pki::new();
    let (cert_pem, key_pem, first) = pki.leaf();
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    std::fs::write(&cert, &cert_pem).unwrap();
    std::fs::write(&key, &key_pem).unwrap();
    let signer = |kid: &str| {
        let key = SoftwareSigner::generate(Algorithm::Ed25519, kid).unwrap();
        let jwk = key.jwks().unwrap().to_public_json()["keys"][0].clone();
        (HttpSigner::webhook(key).unwrap(), jwk)
    };
    let (current, current_jwk) = signer("seller-2026");
    let (revoked, revoked_jwk) = signer("test-revoked-2026");
    std::fs::write(
        dir.0.join("jwks.json"),
        serde_json::json!({ "keys": [current_jwk, revoked_jwk] }).to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
        .arg("gateway")
        .args(["--listen", "127.0.0.1:0", "--upstream", upstream.url().as_str()])
        .arg("--jwks")
        .arg(dir.0.join("jwks.json"))
        .args(["--jwks-agent", AGENT, "--store", &dir.sqlite(), "--quiet"])
        .arg("--tls-cert")
        .arg(&cert)
        .args(["--revoked-kid", "test-revoked-2026", "--replay-cap-per-keyid", "100"])
        // The key from the environment.
        .env("ADCP_GATEWAY_TLS_KEY", &key)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let line = line_with(&mut stderr, "listening on");
    let addr: SocketAddr = line
        .split("listening on https://")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    assert!(line.contains(&format!("TLS for {HOST}")), "{line}");
    assert!(line.contains("revoked kids test-revoked-2026"), "{line}");
    assert!(line.contains("replay cap 100 per keyid"), "{line}");
    let url = format!("https://{HOST}:{}{PATH}", addr.port());

    let open = pki.client(addr);
    let signed = current.sign_webhook(&url, &event("a")).await.unwrap();
    assert_eq!(post(&open, &url, &signed).await, (200, None, first.clone()));
    let signed = revoked.sign_webhook(&url, &event("r")).await.unwrap();
    let (status, challenge, _) = post(&open, &url, &signed).await;
    assert_eq!(
        (status, challenge.as_deref()),
        (401, Some("Signature error=\"webhook_signature_key_revoked\""))
    );

    // SIGHUP: the new certificate for new connections, the open one kept.
    let (cert_pem, key_pem, second) = pki.leaf();
    std::fs::write(&cert, &cert_pem).unwrap();
    std::fs::write(&key, &key_pem).unwrap();
    signal(&child, "-HUP");
    let reloaded = line_with(&mut stderr, "SIGHUP");
    assert!(reloaded.contains("reloaded"), "{reloaded}");
    let signed = current.sign_webhook(&url, &event("b")).await.unwrap();
    assert_eq!(post(&open, &url, &signed).await, (200, None, first));
    let signed = current.sign_webhook(&url, &event("c")).await.unwrap();
    assert_eq!(
        post(&pki.client(addr), &url, &signed).await,
        (200, None, second.clone())
    );

    // A failed reload is reported and changes nothing.
    std::fs::write(&cert, "not a certificate\n").unwrap();
    signal(&child, "-HUP");
    let failed = line_with(&mut stderr, "SIGHUP");
    assert!(
        failed.contains("error") && failed.contains("keeping the current certificate"),
        "{failed}"
    );
    let signed = current.sign_webhook(&url, &event("d")).await.unwrap();
    assert_eq!(post(&pki.client(addr), &url, &signed).await, (200, None, second));
    assert_eq!(upstream.applied_keys().len(), 4);

    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn tls_flags_come_in_pairs_and_bad_files_exit_2() {
    let dir = TempDir::new("cli-tls-usage");
    std::fs::write(dir.0.join("k.json"), r#"{"keys":[]}"#).unwrap();
    std::fs::write(dir.0.join("bad.pem"), "not a certificate\n").unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_adcp-sig"))
            .args(["gateway", "--upstream", "http://127.0.0.1:9/events", "--jwks", "k.json"])
            .args(extra)
            .current_dir(&dir.0)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out) = run(&["--tls-cert", "bad.pem"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("give both --tls-cert FILE and --tls-key FILE, or neither"),
        "{out}"
    );
    let (code, out) = run(&["--tls-cert", "bad.pem", "--tls-key", "bad.pem"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--tls-cert bad.pem: no CERTIFICATE block"), "{out}");
    // A certificate naming no DNS name or IP address, and nothing else
    // saying which Host to accept: the gateway does not start, and says
    // what to add.
    let pki = Pki::new();
    let key = rcgen::KeyPair::generate().unwrap();
    let nameless = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .signed_by(&key, &pki.ca, &pki.ca_key)
        .unwrap();
    std::fs::write(dir.0.join("nameless.pem"), nameless.pem()).unwrap();
    std::fs::write(dir.0.join("nameless-key.pem"), key.serialize_pem()).unwrap();
    let tls = ["--tls-cert", "nameless.pem", "--tls-key", "nameless-key.pem"];
    let (code, out) = run(&tls);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--tls-cert nameless.pem: the certificate names no DNS name or IP address")
            && out.contains("add --public-url URL")
            && out.contains("--accept-host HOST[:PORT]"),
        "{out}"
    );
    let (code, out) = run(&["--replay-cap-per-keyid", "0"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--replay-cap-per-keyid must be at least 1"), "{out}");
}
