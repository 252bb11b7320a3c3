//! `adcp-sig explain` end to end: requests built from the webhook-signing
//! conformance vector `positive/001-basic-post.json`, re-signed with the
//! vector's test key (or deliberately broken), explained by the binary. For
//! each failure the explanation names the failing step and shows what was
//! expected beside what was found, in text and in `--json`.

use crate::support::{adcp_sig, s, stdout};
use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const VECTOR: &str = "webhook-signing/positive/001-basic-post.json";

fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "explain_cli-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The vector's request parts, its key and clock.
struct Fx {
    dir: PathBuf,
    url: String,
    body: String,
    input: String,
    now: i64,
    key: SigningKey,
    jwks: PathBuf,
}

/// What to sign.
struct Sig<'a> {
    url: &'a str,
    body: &'a str,
    tag: &'a str,
    key: &'a SigningKey,
}

impl Fx {
    fn load() -> Option<Self> {
        let suite = adcp_vectors::require_dir().unwrap()?;
        let doc = adcp_vectors::load_json(&suite, VECTOR).unwrap();
        let req = adcp_vectors::VectorRequest::from_json(&doc["request"]).unwrap();
        let jwk = adcp_vectors::referenced_jwk(&suite, "webhook-signing/keys.json", &doc).unwrap();
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
        let dir = scratch();
        let jwks = dir.join("jwks.json");
        std::fs::write(&jwks, json!({ "keys": [jwk] }).to_string()).unwrap();
        Some(Self {
            dir,
            url: req.url,
            body: req.body.unwrap(),
            input,
            now: doc["reference_now"].as_i64().unwrap(),
            key,
            jwks,
        })
    }

    fn sig<'a>(&'a self) -> Sig<'a> {
        Sig {
            url: &self.url,
            body: &self.body,
            tag: "adcp/webhook-signing/v1",
            key: &self.key,
        }
    }

    /// A request signed as `sig` says (the vector's parameters, its own
    /// nonce), in the vectors' `request` shape.
    fn sign(&self, sig: &Sig<'_>) -> Value {
        let digest = ContentDigest::compute(
            sig.body.as_bytes(),
            &[DigestAlgorithm::Sha256],
            BinaryEncoding::Base64Padded,
        );
        let old_nonce = SignatureInput::parse(self.input.as_bytes())
            .unwrap()
            .require("sig1")
            .unwrap()
            .nonce()
            .unwrap()
            .to_owned();
        static NONCE: AtomicUsize = AtomicUsize::new(1);
        let nonce = BinaryEncoding::Base64UrlUnpadded.encode(&[NONCE.fetch_add(1, Ordering::SeqCst) as u8; 16]);
        let input = self
            .input
            .replace(&old_nonce, &nonce)
            .replace("adcp/webhook-signing/v1", sig.tag);
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Content-Digest".to_owned(), digest),
            ("Signature-Input".to_owned(), input),
        ];
        let mut msg = Message::request("POST", sig.url);
        for (n, v) in &headers {
            msg.push_header(n.as_str(), v.as_str());
        }
        let msg = msg.with_body(sig.body.as_bytes());
        let canonical = adcp_canon::canonicalize_received(sig.url).unwrap();
        let opts = BaseOptions {
            target_uri: Some(canonical.as_str()),
            authority: Some(canonical.authority()),
            ..BaseOptions::default()
        };
        let params = SignatureInput::from_message(&msg).unwrap().unwrap();
        let base = signature_base(&msg, params.require("sig1").unwrap(), &opts).unwrap();
        let signature = sig.key.sign(base.as_bytes()).unwrap();
        let mut hdrs = serde_json::Map::new();
        for (n, v) in headers {
            hdrs.insert(n, v.into());
        }
        hdrs.insert(
            "Signature".into(),
            format!(
                "sig1=:{}:",
                BinaryEncoding::Base64UrlUnpadded.encode(signature.as_bytes())
            )
            .into(),
        );
        json!({"method": "POST", "url": sig.url, "headers": hdrs, "body": sig.body})
    }

    fn write(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    /// `adcp-sig base` of a request: the sender's signature base.
    fn sender_base(&self, name: &str, request: &Value) -> PathBuf {
        let req = self.write(&format!("{name}.sent.json"), request);
        let out = adcp_sig(&["base", "--request", s(&req)]);
        assert_eq!(out.status.code(), Some(0));
        let path = self.dir.join(format!("{name}.base.txt"));
        std::fs::write(&path, out.stdout).unwrap();
        path
    }

    /// `explain` in text and in JSON: (exit code, text, json).
    fn explain(&self, name: &str, request: &Value, extra: &[&str]) -> (Option<i32>, String, Value) {
        let req = self.write(&format!("{name}.json"), request);
        let now = self.now.to_string();
        let mut args = vec!["explain", "--request", s(&req), "--jwks", s(&self.jwks), "--now", &now];
        args.extend_from_slice(extra);
        let text = adcp_sig(&args);
        args.push("--json");
        let j = adcp_sig(&args);
        assert_eq!(text.status.code(), j.status.code());
        let v: Value = serde_json::from_str(&stdout(&j)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&j)));
        (text.status.code(), stdout(&text), v)
    }
}

fn diff_lines(v: &Value, side: &str) -> Vec<String> {
    v["base_diff"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .filter(|d| d["side"] == side)
        .map(|d| d["line"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_good_request_is_explained_as_verified() {
    let Some(f) = Fx::load() else { return };
    let (code, text, v) = f.explain("good", &f.sign(&f.sig()), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("verdict: verified"), "{text}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["request"]["body_digest"], v["request"]["content_digest_header"]);
}

#[test]
fn wrong_key_step_10_same_base_other_key() {
    let Some(f) = Fx::load() else { return };
    let other = SigningKey::generate_ed25519().unwrap();
    let sent = f.sign(&Sig { key: &other, ..f.sig() });
    let base = f.sender_base("wrong-key", &sent);
    let (code, text, v) = f.explain("wrong-key", &sent, &["--expected-base", s(&base)]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("verdict: rejected: webhook_signature_invalid at step 10"),
        "{text}"
    );
    // The bases agree, so the key is what differs; the key used is shown.
    assert!(text.contains("signature base: identical to the sender's"), "{text}");
    assert!(text.contains("the sender signed with another key"), "{text}");
    assert!(text.contains("thumbprint:       "), "{text}");
    assert_eq!(v["error_code"], "webhook_signature_invalid");
    assert_eq!(v["step"], "10");
    assert_eq!(v["base_diff"], json!([]));
    assert_eq!(v["key"]["kid"], "test-ed25519-webhook-2026");
    assert!(v["key"]["thumbprint"].as_str().is_some_and(|t| !t.is_empty()));
}

#[test]
fn changed_body_step_11_header_digest_beside_body_digest() {
    let Some(f) = Fx::load() else { return };
    let mut sent = f.sign(&f.sig());
    let header = sent["headers"]["Content-Digest"].as_str().unwrap().to_owned();
    let tampered = f.body.replace("completed", "failed");
    sent["body"] = tampered.clone().into();
    let received = ContentDigest::compute(
        tampered.as_bytes(),
        &[DigestAlgorithm::Sha256],
        BinaryEncoding::Base64Padded,
    );
    assert_ne!(header, received);
    let (code, text, v) = f.explain("changed-body", &sent, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("verdict: rejected: webhook_signature_digest_mismatch at step 11"),
        "{text}"
    );
    assert!(
        text.contains(&format!("  expected: Content-Digest (header): {header}\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  found:    digest of the received body: {received}\n")),
        "{text}"
    );
    assert_eq!(v["step"], "11");
    assert_eq!(v["request"]["content_digest_header"], header.as_str());
    assert_eq!(v["request"]["body_digest"], received.as_str());
}

#[test]
fn changed_url_step_10_shows_the_differing_base_lines() {
    let Some(f) = Fx::load() else { return };
    let sent = f.sign(&f.sig());
    let base = f.sender_base("url", &sent);
    let original = f.url.clone();
    // (received URL, its canonical @target-uri, the authority line changes)
    let port = original.replacen("buyer.example.com", "buyer.example.com:8443", 1);
    let case = original.replace("/create_media_buy/", "/Create_Media_Buy/");
    let pct = original.replace("create_media_buy/agent_123", "create_media_buy%2Fagent_123");
    for (name, received, authority_changes) in [("port", &port, true), ("case", &case, false), ("pct", &pct, false)] {
        let mut req = sent.clone();
        req["url"] = received.as_str().into();
        let (code, text, v) = f.explain(&format!("url-{name}"), &req, &["--expected-base", s(&base)]);
        assert_eq!(code, Some(1), "{name}: {text}");
        assert!(
            text.starts_with("verdict: rejected: webhook_signature_invalid at step 10"),
            "{name}: {text}"
        );
        let canonical = adcp_canon::canonicalize_received(received.as_str()).unwrap();
        let minus = format!("- \"@target-uri\": {original}\n");
        let plus = format!("+ \"@target-uri\": {}\n", canonical.as_str());
        assert!(text.contains(&minus) && text.contains(&plus), "{name}: {text}");
        assert!(
            text.contains(&format!("  @target-uri:      {}\n", canonical.as_str())),
            "{name}: {text}"
        );
        let sender = diff_lines(&v, "sender");
        let verifier = diff_lines(&v, "verifier");
        assert!(sender.contains(&format!("\"@target-uri\": {original}")), "{name}: {v}");
        assert!(
            verifier.contains(&format!("\"@target-uri\": {}", canonical.as_str())),
            "{name}: {v}"
        );
        let authority_line = format!("\"@authority\": {}", canonical.authority());
        assert_eq!(verifier.contains(&authority_line), authority_changes, "{name}: {v}");
        assert_eq!(v["request"]["authority"], canonical.authority(), "{name}");
        // Only the lines that changed are in the JSON diff: @target-uri,
        // and @authority when the port changed.
        assert_eq!(verifier.len(), 1 + usize::from(authority_changes), "{name}: {v}");
    }
}

#[test]
fn expired_window_step_5_names_the_failing_condition() {
    let Some(f) = Fx::load() else { return };
    let sent = f.sign(&f.sig());
    let req = f.write("expired.json", &sent);
    let late = (f.now + 300 + 61).to_string();
    let args = ["explain", "--request", s(&req), "--jwks", s(&f.jwks), "--now", &late];
    let text = adcp_sig(&args);
    assert_eq!(text.status.code(), Some(1));
    let text = stdout(&text);
    assert!(
        text.starts_with("verdict: rejected: webhook_signature_window_invalid at step 5"),
        "{text}"
    );
    let expires = f.now + 300;
    let failing = format!("expires ({expires}) < now - 60 ({})", f.now + 301);
    assert!(text.contains(&format!("  found:    {failing}\n")), "{text}");
    let j = adcp_sig(&[&args[..], &["--json"]].concat());
    let v: Value = serde_json::from_str(&stdout(&j)).unwrap();
    assert_eq!(v["step"], "5");
    assert_eq!(v["signature"]["window_failures"], json!([failing]));
    // One second earlier the same request is inside the window.
    let ok = (f.now + 300 + 60).to_string();
    let out = adcp_sig(&["explain", "--request", s(&req), "--jwks", s(&f.jwks), "--now", &ok]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn wrong_tag_step_3_expected_beside_found() {
    let Some(f) = Fx::load() else { return };
    let sent = f.sign(&Sig {
        tag: "adcp/request-signing/v1",
        ..f.sig()
    });
    let (code, text, v) = f.explain("wrong-tag", &sent, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.starts_with("verdict: rejected: webhook_signature_tag_invalid at step 3"),
        "{text}"
    );
    assert!(text.contains("  expected: tag=\"adcp/webhook-signing/v1\"\n"), "{text}");
    assert!(text.contains("  found:    tag=\"adcp/request-signing/v1\"\n"), "{text}");
    assert_eq!(v["step"], "3");
    assert_eq!(v["expected"], "tag=\"adcp/webhook-signing/v1\"");
    assert_eq!(v["found"], "tag=\"adcp/request-signing/v1\"");
    // Under the request profile the tag passes step 3 (and fails later).
    let (_, _, v) = f.explain("wrong-tag-request", &sent, &["--profile", "request"]);
    assert_ne!(v["step"], "3", "{v}");
}

#[test]
fn usage_errors_exit_2() {
    let out = adcp_sig(&[
        "explain",
        "--request",
        "/nonexistent/request.json",
        "--jwks",
        "/nonexistent/jwks.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = adcp_sig(&["explain", "--request", "r.json"]);
    assert_eq!(out.status.code(), Some(2), "--jwks or --agent is required");
}

#[test]
fn request_profiles_follow_the_verifier() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let dir = scratch();
    let keys = adcp_vectors::load_json(&suite, "request-signing/keys.json").unwrap();
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, json!({ "keys": keys["keys"] }).to_string()).unwrap();
    // A legacy (3.1, base64url) request vector: verified under
    // request-legacy, malformed at step 1 under the 3.2 profile.
    let vector = suite.join("request-signing/positive/001-basic-post.json");
    let now = adcp_vectors::load_json(&suite, "request-signing/positive/001-basic-post.json").unwrap()["reference_now"]
        .to_string();
    let run = |profile: &str| {
        let out = adcp_sig(&[
            "explain",
            "--request",
            s(&vector),
            "--jwks",
            s(&jwks),
            "--now",
            &now,
            "--profile",
            profile,
            "--json",
        ]);
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        (out.status.code(), v)
    };
    let (code, v) = run("request-legacy");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["profile"], "request-legacy");
    let (code, v) = run("request");
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["error_code"], "request_signature_header_malformed");
    assert_eq!(v["step"], "1");
}
