//! Turning a conformance vector into a live request for a target: the
//! vector's path under the target URL, its signature window moved to now,
//! a fresh nonce, its real signatures recomputed over the new base with
//! the suite's test keys (its fault kept: placeholders stay placeholders,
//! a corrupted signature is corrupted again, a wrong digest stays wrong).

use crate::runner::Outgoing;
use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_vectors::VectorRequest;
use base64::Engine as _;
use sha2::Digest as _;
use std::collections::HashMap;
use std::path::Path;

/// The suite's test keys of one directory, private parts included.
#[derive(Default)]
pub(crate) struct KeyRing {
    keys: HashMap<String, SigningKey>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing").field("kids", &self.keys.keys()).finish()
    }
}

impl KeyRing {
    /// Every key of `suite/relative` (a `keys.json`) whose test-only
    /// private member loads.
    pub(crate) fn load(suite: &Path, relative: &str) -> Result<Self, String> {
        let doc = adcp_vectors::load_json(suite, relative)?;
        let mut keys = HashMap::new();
        for jwk in doc["keys"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(kid) = jwk["kid"].as_str() else { continue };
            let key = Jwk::from_json_value(jwk)
                .and_then(|k| k.with_test_private_member("_private_d_for_test_only"))
                .and_then(|k| k.signing_key());
            if let Ok(key) = key {
                keys.insert(kid.to_owned(), key);
            }
        }
        Ok(Self { keys })
    }

    fn sign(&self, kid: &str, base: &[u8]) -> Option<Vec<u8>> {
        self.keys
            .get(kid)?
            .sign(base)
            .ok()
            .map(adcp_sigbase::crypto::Signature::into_bytes)
    }
}

/// How one vector is turned into a request.
#[derive(Debug, Clone)]
pub(crate) struct Recipe {
    /// The URL the request is sent to and signed for.
    pub(crate) url: String,
    /// A replacement body (the content digest follows it unless the
    /// vector's digest was deliberately wrong).
    pub(crate) body: Option<Vec<u8>>,
    /// A `Host` header to send instead of the URL's authority (the
    /// authority-fault vectors).
    pub(crate) host: Option<String>,
    /// The binary encoding of a recomputed signature whose original token
    /// does not show its alphabet.
    pub(crate) encoding: BinaryEncoding,
    /// Corrupt every recomputed signature (the `*_signature_invalid`
    /// vectors).
    pub(crate) corrupt: bool,
    /// Replace the `Content-Type` header.
    pub(crate) content_type: Option<String>,
}

/// The request `vector` describes, prepared by `recipe` for `now`.
pub(crate) fn prepare(
    vector: &serde_json::Value,
    recipe: &Recipe,
    ring: &KeyRing,
    now: i64,
) -> Result<Outgoing, String> {
    let request = VectorRequest::from_json(&vector["request"])?;
    let reference = vector["reference_now"].as_i64().ok_or("reference_now missing")?;
    let delta = now - reference;
    let original_body = request.body.clone().unwrap_or_default().into_bytes();
    let body = recipe.body.clone().unwrap_or_else(|| original_body.clone());
    let nonce = fresh_nonce()?;

    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in &request.headers {
        let lower = name.to_ascii_lowercase();
        let value = match lower.as_str() {
            "host" => continue,
            "content-type" if recipe.content_type.is_some() => continue,
            "content-digest" if body != original_body => fix_digest(value, &original_body, &body),
            "signature-input" => rewrite_params(value, delta, &nonce),
            _ => value.clone(),
        };
        headers.push((name.clone(), value));
    }
    if let Some(content_type) = &recipe.content_type {
        headers.push(("Content-Type".into(), content_type.clone()));
    }

    // Signatures over the base the verifier will rebuild from what is sent.
    let mut msg = Message::request(request.method.as_str(), recipe.url.as_str());
    for (name, value) in headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("signature")) {
        msg.push_header(name.as_str(), value.as_str());
    }
    let msg = msg.with_body(&body);
    let canonical = adcp_canon::canonicalize(&recipe.url).ok();
    let opts = canonical.as_ref().map(|c| BaseOptions {
        target_uri: Some(c.as_str()),
        authority: Some(c.authority()),
        ..BaseOptions::default()
    });
    let resign = |label: &str| -> Option<Vec<u8>> {
        let opts = opts.as_ref()?;
        let input = SignatureInput::from_message_for(&msg, label).ok()??;
        let params = input.require(label).ok()?;
        let kid = params.keyid()?;
        let base = signature_base(&msg, params, opts).ok()?;
        let mut sig = ring.sign(kid, base.as_bytes())?;
        if recipe.corrupt {
            if let Some(first) = sig.first_mut() {
                *first ^= 0x01;
            }
        }
        Some(sig)
    };
    let mut out_headers = Vec::with_capacity(headers.len() + 1);
    for (name, value) in &headers {
        if name.eq_ignore_ascii_case("signature") {
            out_headers.push((name.clone(), rewrite_signature(value, recipe.encoding, &resign)));
        } else {
            out_headers.push((name.clone(), value.clone()));
        }
    }
    if let Some(host) = &recipe.host {
        out_headers.push(("Host".into(), host.clone()));
    }
    Ok(Outgoing {
        method: request.method,
        url: recipe.url.clone(),
        headers: out_headers,
        body,
    })
}

/// Why a vector cannot be graded black box because it verifies against a
/// key of its own (`jwks_override`) that the endpoint cannot be given.
pub(crate) fn needs_override(vector: &serde_json::Value) -> Option<String> {
    let over = vector.get("jwks_override").filter(|o| !o.is_null())?;
    let kids: Vec<&str> = over["keys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(|k| k["kid"].as_str()).collect())
        .unwrap_or_else(|| {
            over.as_object()
                .map(|m| m.keys().map(String::as_str).collect())
                .unwrap_or_default()
        });
    Some(format!(
        "verifies against a key of its own (jwks_override: {}) that a black-box endpoint's trust store cannot be given",
        kids.join(", ")
    ))
}

/// A fresh random token (a nonce's 128 bits, base64url).
pub(crate) fn fresh_token() -> Result<String, String> {
    fresh_nonce()
}

fn fresh_nonce() -> Result<String, String> {
    adcp_sign::Nonce::generate(&adcp_sign::OsRandom)
        .map(|n| n.as_str().to_owned())
        .map_err(|e| e.to_string())
}

/// `created` and `expires` moved by `delta` seconds, `nonce` replaced,
/// everything else byte for byte (malformed spellings included).
pub(crate) fn rewrite_params(line: &str, delta: i64, nonce: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while let Some(i) = rest.find(';') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' || c == '*'))
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        let Some(after) = rest[name_len..].strip_prefix('=') else {
            continue;
        };
        let value_len = if let Some(quoted) = after.strip_prefix('"') {
            quoted.find('"').map_or(after.len(), |q| q + 2)
        } else {
            after.find([';', ',', ' ', ')']).unwrap_or(after.len())
        };
        let value = &after[..value_len];
        let replacement = match name {
            "created" | "expires" => value.parse::<i64>().ok().map(|v| (v + delta).to_string()),
            "nonce" if value.starts_with('"') => Some(format!("\"{nonce}\"")),
            "nonce" => Some(nonce.to_owned()),
            _ => None,
        };
        out.push_str(name);
        out.push('=');
        out.push_str(replacement.as_deref().unwrap_or(value));
        rest = &after[value_len..];
    }
    out.push_str(rest);
    out
}

/// A `Content-Digest` value for `new` where it carried the right digest of
/// `old` (same algorithm, same encoding); a wrong digest stays wrong.
fn fix_digest(value: &str, old: &[u8], new: &[u8]) -> String {
    let mut out = value.to_owned();
    let pairs = [
        (sha2::Sha256::digest(old).to_vec(), sha2::Sha256::digest(new).to_vec()),
        (sha2::Sha512::digest(old).to_vec(), sha2::Sha512::digest(new).to_vec()),
    ];
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
    ];
    for (o, n) in &pairs {
        for engine in &engines {
            let from = engine.encode(o);
            if out.contains(&from) {
                out = out.replace(&from, &engine.encode(n));
            }
        }
    }
    out
}

/// Each `label=:token:` member of a `Signature` line with a recomputed
/// signature, unless the token is a placeholder (all zero bytes), mixes
/// Base64 alphabets, or no signature can be computed for its label.
fn rewrite_signature(line: &str, default: BinaryEncoding, resign: &dyn Fn(&str) -> Option<Vec<u8>>) -> String {
    line.split(',')
        .map(|member| {
            let trimmed = member.trim();
            let Some((label, token)) = trimmed
                .split_once("=:")
                .and_then(|(l, t)| t.strip_suffix(':').map(|t| (l, t)))
            else {
                return member.to_owned();
            };
            let url_chars = token.contains(['-', '_']);
            let std_chars = token.contains(['+', '/', '=']);
            if url_chars && std_chars {
                return member.to_owned();
            }
            let placeholder = [BinaryEncoding::Base64Padded, BinaryEncoding::Base64UrlUnpadded]
                .iter()
                .find_map(|e| e.decode(token).ok())
                .is_some_and(|bytes| bytes.iter().all(|b| *b == 0));
            if placeholder {
                return member.to_owned();
            }
            let encoding = if url_chars {
                BinaryEncoding::Base64UrlUnpadded
            } else if std_chars {
                BinaryEncoding::Base64Padded
            } else {
                default
            };
            match resign(label) {
                Some(sig) => {
                    let lead = &member[..member.len() - member.trim_start().len()];
                    format!("{lead}{label}=:{}:", encoding.encode(&sig))
                }
                None => member.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `target`'s scheme, authority and path (without a trailing `/`) followed
/// by the path and query of `vector_url`.
pub(crate) fn join_url(target: &url::Url, vector_url: &str) -> Result<String, String> {
    let after_scheme = vector_url.split_once("://").map_or(vector_url, |(_, rest)| rest);
    let suffix = after_scheme.find(['/', '?']).map_or("/", |i| &after_scheme[i..]);
    let mut base = target.clone();
    base.set_query(None);
    base.set_fragment(None);
    let text = base.as_str().trim_end_matches('/').to_owned();
    let joined = format!("{text}{suffix}");
    url::Url::parse(&joined)
        .map(|u| u.as_str().to_owned())
        .map_err(|e| format!("{joined}: {e}"))
}

/// The raw authority of `vector_url` (between `://` and the path).
pub(crate) fn raw_authority(vector_url: &str) -> &str {
    let after_scheme = vector_url.split_once("://").map_or(vector_url, |(_, rest)| rest);
    after_scheme
        .find(['/', '?'])
        .map_or(after_scheme, |i| &after_scheme[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_move_and_the_nonce_is_replaced() {
        let line = r#"sig1=("@method");created=100;expires=400;nonce="abc";keyid="k";tag="t""#;
        assert_eq!(
            rewrite_params(line, 10, "NEW"),
            r#"sig1=("@method");created=110;expires=410;nonce="NEW";keyid="k";tag="t""#
        );
        let unquoted = "sig1=();created=1;keyid=k;nonce=n";
        assert_eq!(rewrite_params(unquoted, 1, "X"), "sig1=();created=2;keyid=k;nonce=X");
    }

    #[test]
    fn vector_paths_go_under_the_target_path() {
        let target = url::Url::parse("https://agent.example/api/").unwrap_or_else(|_| unreachable!());
        assert_eq!(
            join_url(&target, "https://seller.example.com/adcp/get_media_buy?b=2&a=1").as_deref(),
            Ok("https://agent.example/api/adcp/get_media_buy?b=2&a=1")
        );
        assert_eq!(raw_authority("https://[::1]:8/x"), "[::1]:8");
    }

    #[test]
    fn a_right_digest_follows_the_body_a_wrong_one_stays() {
        let old = b"{}";
        let right = format!(
            "sha-256=:{}:",
            base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(old))
        );
        let fixed = fix_digest(&right, old, b"[]");
        assert_ne!(fixed, right);
        assert_eq!(fix_digest("sha-256=:AAAA:", old, b"[]"), "sha-256=:AAAA:");
    }
}
