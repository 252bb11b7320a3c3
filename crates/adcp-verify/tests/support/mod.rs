//! Fresh signed requests built from a conformance vector, re-signed with
//! the vector's test key (each with its own nonce).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // shared test code

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// A vector's request template, key and clock.
pub struct Template {
    pub url: String,
    pub body: String,
    pub now: i64,
    pub jwk: serde_json::Value,
    headers: Vec<(String, String)>,
    input: String,
    old_nonce: String,
    key: SigningKey,
}

impl Template {
    /// Loads `vector` (relative to the suite) and its signing key.
    pub fn load(suite: &Path, vector: &str) -> Self {
        let doc = adcp_vectors::load_json(suite, vector).unwrap();
        let req = adcp_vectors::VectorRequest::from_json(&doc["request"]).unwrap();
        let jwk = adcp_vectors::referenced_jwk(suite, "webhook-signing/keys.json", &doc).unwrap();
        let key = Jwk::from_json_value(&jwk)
            .unwrap()
            .with_test_private_member("_private_d_for_test_only")
            .unwrap()
            .signing_key()
            .unwrap();
        let input = req
            .headers
            .iter()
            .find(|(n, _)| n == "Signature-Input")
            .unwrap()
            .1
            .clone();
        let old_nonce = SignatureInput::parse(input.as_bytes())
            .unwrap()
            .require("sig1")
            .unwrap()
            .nonce()
            .unwrap()
            .to_owned();
        Self {
            headers: req
                .headers
                .iter()
                .filter(|(n, _)| n != "Signature-Input" && n != "Signature")
                .cloned()
                .collect(),
            url: req.url,
            body: req.body.unwrap_or_default(),
            now: doc["reference_now"].as_i64().unwrap(),
            jwk,
            input,
            old_nonce,
            key,
        }
    }

    /// The JWKS holding the vector's key.
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [self.jwk.clone()] })
    }

    /// Header lines of a request signed with its own 16-byte `nonce`.
    pub fn sign(&self, nonce: [u8; 16]) -> Vec<(String, String)> {
        let canonical = adcp_canon::canonicalize_received(&self.url).unwrap();
        let opts = BaseOptions {
            target_uri: Some(canonical.as_str()),
            authority: Some(canonical.authority()),
            ..BaseOptions::default()
        };
        let nonce = BinaryEncoding::Base64UrlUnpadded.encode(&nonce);
        let mut headers = self.headers.clone();
        headers.push(("Signature-Input".into(), self.input.replace(&self.old_nonce, &nonce)));
        let msg = message(&self.url, &headers, &self.body);
        let params = SignatureInput::from_message(&msg).unwrap().unwrap();
        let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
        let sig = self.key.sign(base.as_bytes()).unwrap();
        headers.push((
            "Signature".into(),
            format!("sig1=:{}:", BinaryEncoding::Base64UrlUnpadded.encode(sig.as_bytes())),
        ));
        headers
    }
}

/// A request message over borrowed parts.
pub fn message<'a>(url: &'a str, headers: &'a [(String, String)], body: &'a str) -> Message<'a> {
    let mut msg = Message::request("POST", url);
    for (n, v) in headers {
        msg.push_header(n.as_str(), v.as_str());
    }
    msg.with_body(body.as_bytes())
}

/// A vector's request as it is, headers and body included.
pub fn vector_message(req: &adcp_vectors::VectorRequest) -> Message<'_> {
    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    match &req.body {
        Some(body) => msg.with_body(body.as_bytes()),
        None => msg,
    }
}

/// Polls a future that never waits (in-memory stores) to completion.
pub fn run_now<F: Future>(f: F) -> F::Output {
    match pin!(f).as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory verification must not wait"),
    }
}
