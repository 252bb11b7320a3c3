//! `grade signer`: signs a sample request and a sample webhook through the
//! signer under test (a private key file, or an HTTP signing oracle for a
//! KMS-backed key), then verifies both against the agent's published keys
//! with the real verifier, reporting what a counterparty would refuse by
//! its exact code.

use crate::error::GradeError;
use crate::report::{CaseResult, Report};
use crate::runner::{now, Client, GradeOptions, Outgoing};
use adcp_sigbase::crypto::{Algorithm, SigningKey};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_verify::{FixedClock, KeyResolver, MemoryReplayStore, Profile, StaticKeyResolver, Verifier};
use base64::Engine as _;
use sha2::Digest as _;
use std::sync::Arc;

/// The signer under test.
#[derive(Clone)]
pub enum SignerUnderTest {
    /// A private JWK (`--key-file`): its `kid`, its algorithm.
    Jwk(Vec<u8>),
    /// An HTTP signing oracle (`--signer-url`): `POST {payload_b64, kid,
    /// alg}` answered `{signature_b64}`, both unpadded base64url, `alg` an
    /// RFC 9421 name (`ed25519`, `ecdsa-p256-sha256`). The oracle is the
    /// operator's own service, so any address is allowed (internal KMS
    /// front ends); HTTPS unless the policy allows plain HTTP.
    Oracle {
        /// The oracle's URL (checked against the SSRF policy).
        url: String,
        /// The key id the signatures are labelled with.
        kid: String,
        /// The RFC 9421 algorithm name.
        alg: String,
    },
}

impl std::fmt::Debug for SignerUnderTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Jwk(_) => f.write_str("Jwk(..)"),
            Self::Oracle { url, kid, alg } => f
                .debug_struct("Oracle")
                .field("url", url)
                .field("kid", kid)
                .field("alg", alg)
                .finish(),
        }
    }
}

/// Where the agent's published keys come from.
pub enum PublishedKeys {
    /// brand.json discovery from the agent URL (`--agent`), the way a
    /// counterparty resolves them: `adcp_jwks::HttpsKeyResolver` built with
    /// this fetch configuration (roots, DNS, SSRF policy).
    Agent {
        /// The agent URL.
        url: String,
        /// The fetch configuration (`FetchConfig::default()` in production).
        fetch: adcp_jwks::FetchConfig,
    },
    /// A JWKS document (`--jwks FILE`), attributed to `agent`.
    Jwks {
        /// The JWKS (`{"keys": [...]}`).
        jwks: serde_json::Value,
        /// The agent the keys belong to.
        agent: String,
    },
}

impl std::fmt::Debug for PublishedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Agent { url, .. } => f.debug_struct("Agent").field("url", url).finish_non_exhaustive(),
            Self::Jwks { agent, .. } => f.debug_struct("Jwks").field("agent", agent).finish_non_exhaustive(),
        }
    }
}

/// What `grade signer` needs besides the [`GradeOptions`].
#[derive(Debug)]
pub struct SignerConfig {
    /// The signer under test.
    pub signer: SignerUnderTest,
    /// The agent's published keys.
    pub keys: PublishedKeys,
}

/// Signs through the signer under test.
enum Backend {
    Key {
        key: SigningKey,
        kid: String,
        alg: Algorithm,
    },
    Oracle {
        client: Client,
        url: String,
        kid: String,
        alg: Algorithm,
    },
}

impl Backend {
    fn kid(&self) -> &str {
        match self {
            Self::Key { kid, .. } | Self::Oracle { kid, .. } => kid,
        }
    }

    fn alg(&self) -> Algorithm {
        match self {
            Self::Key { alg, .. } | Self::Oracle { alg, .. } => *alg,
        }
    }

    async fn sign(&self, base: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Self::Key { key, .. } => key.sign(base).map(|s| s.into_bytes()).map_err(|e| e.to_string()),
            Self::Oracle { client, url, kid, alg } => {
                let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                let request = serde_json::json!({
                    "payload_b64": engine.encode(base),
                    "kid": kid,
                    "alg": alg.as_str(),
                });
                let out = Outgoing {
                    method: "POST".into(),
                    url: url.clone(),
                    headers: vec![("Content-Type".into(), "application/json".into())],
                    body: request.to_string().into_bytes(),
                };
                let text = client
                    .fetch_text(&out)
                    .await
                    .map_err(|e| format!("signing oracle: {e}"))?;
                let doc: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| format!("signing oracle answer: {e}"))?;
                let sig = doc["signature_b64"]
                    .as_str()
                    .ok_or("signing oracle answer has no signature_b64")?;
                engine
                    .decode(sig.trim_end_matches('='))
                    .map_err(|e| format!("signing oracle signature_b64: {e}"))
            }
        }
    }
}

/// The signer grader's preconditions, as printed.
#[must_use]
pub fn preconditions() -> Vec<String> {
    vec![
        "the agent publishes the signer's public key under the same kid (brand.json -> agents[] -> jwks_uri), with adcp_use \"request-signing\" and the signer's alg".to_owned(),
        "the signer answers with raw signatures: 64 bytes, r||s (IEEE P1363) for ECDSA P-256, never DER".to_owned(),
    ]
}

/// Grades the signer.
///
/// # Errors
///
/// [`GradeError`] when the grader cannot run (key file unreadable, oracle
/// URL refused, key discovery not configurable).
pub async fn grade_signer(config: &SignerConfig, options: &GradeOptions) -> Result<Report, GradeError> {
    let backend = match &config.signer {
        SignerUnderTest::Jwk(bytes) => {
            let jwk = Jwk::parse(bytes).map_err(|e| GradeError::Signer(format!("key file: {e}")))?;
            let kid = jwk
                .kid()
                .ok_or_else(|| GradeError::Signer("key file: no kid".into()))?
                .to_owned();
            let key = jwk
                .signing_key()
                .map_err(|e| GradeError::Signer(format!("key file: {e}")))?;
            Backend::Key {
                alg: key.algorithm(),
                key,
                kid,
            }
        }
        SignerUnderTest::Oracle { url, kid, alg } => {
            // The oracle is the operator's own service (often internal), not
            // a counterparty's URL: any address, HTTPS unless plain HTTP is
            // allowed.
            let client = Client::operator(options.policy.allows_plain_http(), options.timeout)?;
            let parsed = url::Url::parse(url).map_err(|e| GradeError::Target(format!("{url}: {e}")))?;
            if parsed.scheme() != "https" && !(parsed.scheme() == "http" && options.policy.allows_plain_http()) {
                return Err(GradeError::Target(format!(
                    "{url}: the signing oracle must be https (plain http only with --allow-http)"
                )));
            }
            let alg: Algorithm = alg
                .parse()
                .ok()
                .filter(|a: &Algorithm| !a.is_symmetric())
                .ok_or_else(|| GradeError::Signer(format!("--alg {alg}: expected ed25519 or ecdsa-p256-sha256")))?;
            Backend::Oracle {
                client,
                url: url.clone(),
                kid: kid.clone(),
                alg,
            }
        }
    };
    // One resolver per surface: the request sample is verified as a
    // seller verifies requests, the webhook sample as a buyer verifies
    // webhooks.
    let (request_keys, webhook_keys, target): (Arc<dyn KeyResolver>, Arc<dyn KeyResolver>, String) = match &config.keys
    {
        PublishedKeys::Agent { url, fetch } => {
            let build = |surface| {
                adcp_jwks::HttpsKeyResolver::builder(url.clone())
                    .surface(surface)
                    .fetch_config(fetch.clone())
                    .build()
                    .map_err(|e| GradeError::Keys(format!("--agent {url}: {e}")))
            };
            (
                Arc::new(build(adcp_jwks::SigningSurface::Request)?),
                Arc::new(build(adcp_jwks::SigningSurface::Webhook)?),
                url.clone(),
            )
        }
        PublishedKeys::Jwks { jwks, agent } => {
            let keys: Arc<dyn KeyResolver> = Arc::new(StaticKeyResolver::new().with_jwks(jwks, agent));
            (Arc::clone(&keys), keys, agent.clone())
        }
    };
    let mut report = Report::new("signer", &target, preconditions());
    let samples = [
        ("signer/request", Sample::request(), request_keys),
        ("signer/webhook", Sample::webhook(), webhook_keys),
    ];
    for (id, sample, resolver) in samples {
        let case = CaseResult::new(id, "verifies against the agent's published keys");
        if !options.selection.selects(id) {
            continue;
        }
        report.push(grade_sample(&backend, resolver, &sample, case).await);
    }
    Ok(report)
}

struct Sample {
    profile: Profile,
    url: &'static str,
    tag: &'static str,
    encoding: BinaryEncoding,
    body: &'static str,
}

impl Sample {
    fn request() -> Self {
        Self {
            profile: Profile::request_v3_2(),
            url: "https://seller.example/adcp/create_media_buy",
            tag: "adcp/request-signing/v1",
            encoding: BinaryEncoding::Base64Padded,
            body: r#"{"idempotency_key":"grade-signer-sample-0001","plan_id":"plan_001"}"#,
        }
    }

    fn webhook() -> Self {
        Self {
            profile: Profile::webhook_v1(),
            url: "https://buyer.example/webhooks/adcp",
            tag: "adcp/webhook-signing/v1",
            encoding: BinaryEncoding::Base64UrlUnpadded,
            body: r#"{"idempotency_key":"grade-signer-sample-0002","task_id":"task_1","task_type":"create_media_buy","status":"completed","timestamp":"2026-12-02T00:00:00Z","result":{"media_buy_id":"mb_1"}}"#,
        }
    }
}

async fn grade_sample(
    backend: &Backend,
    resolver: Arc<dyn KeyResolver>,
    sample: &Sample,
    case: CaseResult,
) -> CaseResult {
    let created = now();
    let nonce = match crate::prepare::fresh_token() {
        Ok(n) => n,
        Err(e) => return case.graded(false, "not signed", e),
    };
    let digest = format!(
        "sha-256=:{}:",
        sample.encoding.encode(&sha2::Sha256::digest(sample.body.as_bytes()))
    );
    let input = format!(
        "sig1=(\"@method\" \"@target-uri\" \"@authority\" \"content-type\" \"content-digest\");created={created};expires={};nonce=\"{nonce}\";keyid=\"{}\";alg=\"{}\";tag=\"{}\"",
        created + 300,
        backend.kid(),
        backend.alg().as_str(),
        sample.tag
    );
    let msg = Message::request("POST", sample.url)
        .with_header("Content-Type", "application/json")
        .with_header("Content-Digest", digest.as_str())
        .with_header("Signature-Input", input.as_str())
        .with_body(sample.body.as_bytes());
    let base = match canonical_base(&msg, sample.url) {
        Ok(b) => b,
        Err(e) => return case.graded(false, "not signed", e),
    };
    let sig = match backend.sign(&base).await {
        Ok(s) => s,
        Err(e) => return case.graded(false, "not signed", e),
    };
    let der = backend.alg() == Algorithm::EcdsaP256Sha256 && sig.len() != 64 && sig.first() == Some(&0x30);
    let header = format!("sig1=:{}:", sample.encoding.encode(&sig));
    let signed = msg.with_header("Signature", header.as_str());
    let verifier = Verifier::new(
        sample.profile.clone(),
        resolver,
        MemoryReplayStore::request(),
        FixedClock(created),
    );
    match verifier.verify(&signed).await {
        Ok(signer) => case.graded(
            true,
            "verified",
            format!("kid {} of {}", signer.keyid, signer.agent_url),
        ),
        Err(e) => {
            let mut reason = e.detail().to_owned();
            if der {
                reason = format!("DER-encoded ECDSA signature instead of r||s (IEEE P1363); {reason}");
            }
            case.graded(false, e.code_str(), reason)
        }
    }
}

fn canonical_base(msg: &Message<'_>, url: &str) -> Result<Vec<u8>, String> {
    let canonical = adcp_canon::canonicalize(url).map_err(|e| e.to_string())?;
    let opts = BaseOptions {
        target_uri: Some(canonical.as_str()),
        authority: Some(canonical.authority()),
        ..BaseOptions::default()
    };
    let input = SignatureInput::from_message(msg)
        .map_err(|e| e.to_string())?
        .ok_or("no Signature-Input")?;
    let params = input.require("sig1").map_err(|e| e.to_string())?;
    signature_base(msg, params, &opts)
        .map(|b| b.as_bytes().to_vec())
        .map_err(|e| e.to_string())
}
