//! The hostile-input table: every case is a request a seller, an attacker
//! or a broken proxy could send, with the exact outcome the webhook
//! checklist must give it (accept, or the error code). Requests are signed
//! with the conformance suite's test key whenever the case's
//! `Signature-Input` parses, so each case reaches the check it targets
//! instead of failing at the signature.

use crate::support::run_now;
use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::jwk::Jwk;
use adcp_sigbase::{signature_base, BaseOptions, Message, SignatureInput};
use adcp_verify::ErrorCode;
use adcp_verify::FixedClock;
use adcp_verify::MemoryReplayStore;
use adcp_verify::Profile;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;

use ErrorCode as E;

const URL: &str = "https://buyer.example.com/adcp/webhook/create_media_buy/agent_123/op_abc";
const BODY: &str =
    r#"{"idempotency_key":"whk_01","task_id":"task_456","status":"completed","result":{"media_buy_id":"mb_001"}}"#;
const COMPONENTS: &str = r#""@method" "@target-uri" "@authority" "content-type" "content-digest""#;
const TAG: &str = "adcp/webhook-signing/v1";

/// One signed request under construction.
#[derive(Clone)]
struct Req {
    url: String,
    /// `Signature-Input` member parameters after the inner list, verbatim.
    components: String,
    params: String,
    /// Extra header lines (name, raw value), before the signature pair.
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    /// Overrides of the finished header pair (raw values), applied after
    /// signing; `None` keeps what signing produced.
    input_override: Option<Vec<Vec<u8>>>,
    signature_override: Option<Vec<Vec<u8>>>,
    /// How the signature value is spelled.
    signature_encoding: BinaryEncoding,
    /// Drop the computed `Content-Digest` header.
    no_digest: bool,
    digest_override: Option<Vec<Vec<u8>>>,
}

struct World {
    key: SigningKey,
    jwks: serde_json::Value,
    now: i64,
    keyid: String,
}

fn world() -> Option<World> {
    let suite = adcp_vectors::require_dir().unwrap()?;
    let doc = adcp_vectors::load_json(&suite, "webhook-signing/positive/001-basic-post.json").unwrap();
    let jwk = adcp_vectors::referenced_jwk(&suite, "webhook-signing/keys.json", &doc).unwrap();
    let key = Jwk::from_json_value(&jwk)
        .unwrap()
        .with_test_private_member("_private_d_for_test_only")
        .unwrap()
        .signing_key()
        .unwrap();
    Some(World {
        key,
        keyid: jwk["kid"].as_str().unwrap().to_owned(),
        jwks: serde_json::json!({ "keys": [jwk] }),
        now: doc["reference_now"].as_i64().unwrap(),
    })
}

fn nonce_of(len: usize, seed: u8) -> String {
    BinaryEncoding::Base64UrlUnpadded.encode(&vec![seed; len])
}

/// `nonce` (unpadded base64url, length not a multiple of 4) with the
/// lowest unused bit of its last symbol set: another spelling of the same
/// bytes, which the strict decoder refuses.
fn with_trailing_bits(nonce: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert_ne!(nonce.len() % 4, 0, "no trailing bits in {nonce}");
    let (head, last) = nonce.split_at(nonce.len() - 1);
    let index = ALPHABET.iter().position(|&c| c == last.as_bytes()[0]).unwrap();
    let odd = format!("{head}{}", char::from(ALPHABET[index | 1]));
    assert!(BinaryEncoding::Base64UrlUnpadded.decode(&odd).is_err());
    odd
}

impl World {
    fn params(&self, created: i64, expires: i64, nonce: &str, keyid: &str, alg: &str, tag: &str) -> String {
        format!(r#";created={created};expires={expires};nonce="{nonce}";keyid="{keyid}";alg="{alg}";tag="{tag}""#)
    }

    /// A valid request with its own nonce (`seed`).
    fn req(&self, seed: u8) -> Req {
        Req {
            url: URL.to_owned(),
            components: COMPONENTS.to_owned(),
            params: self.params(
                self.now,
                self.now + 300,
                &nonce_of(16, seed),
                &self.keyid,
                "ed25519",
                TAG,
            ),
            headers: vec![("Content-Type".into(), b"application/json".to_vec())],
            body: BODY.as_bytes().to_vec(),
            input_override: None,
            signature_override: None,
            signature_encoding: BinaryEncoding::Base64UrlUnpadded,
            no_digest: false,
            digest_override: None,
        }
    }

    /// Header lines of `r`, signed when its `Signature-Input` parses.
    fn finish(&self, r: &Req) -> Vec<(String, Vec<u8>)> {
        let mut headers = r.headers.clone();
        if !r.no_digest {
            let digest = ContentDigest::compute(&r.body, &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
            match &r.digest_override {
                Some(lines) => headers.extend(lines.iter().map(|l| ("Content-Digest".to_owned(), l.clone()))),
                None => headers.push(("Content-Digest".into(), digest.into_bytes())),
            }
        }
        let input = format!("sig1=({}){}", r.components, r.params);
        let inputs = r
            .input_override
            .clone()
            .unwrap_or_else(|| vec![input.clone().into_bytes()]);
        for line in &inputs {
            headers.push(("Signature-Input".into(), line.clone()));
        }
        let signature = self.sign(&r.url, &headers, &r.body).unwrap_or_else(|| vec![0x42; 64]);
        let value = format!("sig1=:{}:", r.signature_encoding.encode(&signature)).into_bytes();
        for line in r.signature_override.clone().unwrap_or_else(|| vec![value]) {
            headers.push(("Signature".into(), line));
        }
        headers
    }

    fn sign(&self, url: &str, headers: &[(String, Vec<u8>)], body: &[u8]) -> Option<Vec<u8>> {
        let msg = message(url, headers, body);
        let input = SignatureInput::from_message(&msg).ok()??;
        let params = input.get("sig1")?;
        let canonical = adcp_canon::canonicalize_received(url).ok()?;
        let authority = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
            .and_then(|h| adcp_canon::derive_authority(&canonical, None, Some(h.as_bytes())).ok())
            .unwrap_or_else(|| canonical.authority());
        let opts = BaseOptions {
            target_uri: Some(canonical.as_str()),
            authority: Some(authority),
            ..BaseOptions::default()
        };
        let base = signature_base(&msg, params, &opts).ok()?;
        Some(self.key.sign(base.as_bytes()).ok()?.as_bytes().to_vec())
    }

    fn verify(&self, r: &Req) -> Result<(), ErrorCode> {
        self.verify_full(r).map_err(|e| e.code())
    }

    fn verify_full(&self, r: &Req) -> Result<(), adcp_verify::VerifyError> {
        let headers = self.finish(r);
        let msg = message(&r.url, &headers, &r.body);
        let verifier = Verifier::new(
            Profile::webhook_v1(),
            StaticKeyResolver::new().with_jwks(&self.jwks, "https://seller.example/mcp"),
            MemoryReplayStore::webhook(),
            FixedClock(self.now),
        );
        run_now(verifier.verify(&msg)).map(|_| ())
    }
}

fn message<'a>(url: &'a str, headers: &'a [(String, Vec<u8>)], body: &'a [u8]) -> Message<'a> {
    let mut msg = Message::request("POST", url);
    for (n, v) in headers {
        msg.push_header(n.as_str(), v.as_slice());
    }
    msg.with_body(body)
}

/// Every case: a name, the request, the expected outcome.
fn cases(w: &World) -> Vec<(String, Req, Result<(), ErrorCode>)> {
    let mut out: Vec<(String, Req, Result<(), ErrorCode>)> = Vec::new();
    let mut case = |name: String, r: Req, expect: Result<(), ErrorCode>| out.push((name, r, expect));
    let now = w.now;
    let params = |created: i64, expires: i64, nonce: &str, keyid: &str, alg: &str, tag: &str| {
        w.params(created, expires, nonce, keyid, alg, tag)
    };
    let kid = w.keyid.as_str();
    let n16 = nonce_of(16, 7);

    // Nonce lengths: at least 16 decoded bytes, unpadded base64url.
    for len in 0..=33usize {
        let r = Req {
            params: params(now, now + 300, &nonce_of(len, 9), kid, "ed25519", TAG),
            ..w.req(1)
        };
        let expect = if len >= 16 { Ok(()) } else { Err(E::HeaderMalformed) };
        case(format!("nonce of {len} bytes"), r, expect);
    }
    // Non-zero trailing bits in the last symbol (both official SDKs accept
    // them; the spelling is covered by the signature), nothing else lax.
    for (name, nonce, expect) in [
        (
            "nonce with non-zero trailing bits",
            with_trailing_bits(&nonce_of(16, 3)),
            Ok(()),
        ),
        (
            "32-byte nonce with non-zero trailing bits",
            with_trailing_bits(&nonce_of(32, 4)),
            Ok(()),
        ),
        (
            "14-byte nonce with non-zero trailing bits",
            with_trailing_bits(&nonce_of(14, 4)),
            Err(E::HeaderMalformed),
        ),
        (
            "padded nonce with non-zero trailing bits",
            format!("{}==", with_trailing_bits(&nonce_of(16, 3))),
            Err(E::HeaderMalformed),
        ),
    ] {
        let r = Req {
            params: params(now, now + 300, &nonce, kid, "ed25519", TAG),
            ..w.req(1)
        };
        case(name.to_owned(), r, expect);
    }
    for (name, nonce) in [
        ("padded nonce", format!("{}==", nonce_of(16, 3))),
        ("standard-alphabet nonce", "+/+/+/+/+/+/+/+/+/+/+/".to_owned()),
        ("nonce with a space", format!("{} ", nonce_of(16, 3))),
        ("empty nonce", String::new()),
    ] {
        let r = Req {
            params: params(now, now + 300, &nonce, kid, "ed25519", TAG),
            ..w.req(1)
        };
        case(name.to_owned(), r, Err(E::HeaderMalformed));
    }

    // The window: 60 s skew, 300 s validity, expires after created.
    for (name, created, expires, expect) in [
        ("created now, 300 s", now, now + 300, Ok(())),
        ("created at the skew edge", now + 60, now + 300, Ok(())),
        ("created past the skew edge", now + 61, now + 300, Err(E::WindowInvalid)),
        ("expired at the skew edge", now - 300, now - 60, Ok(())),
        ("expired past the skew edge", now - 301, now - 61, Err(E::WindowInvalid)),
        ("validity of 301 s", now - 1, now + 300, Err(E::WindowInvalid)),
        ("expires equals created", now, now, Err(E::WindowInvalid)),
        ("expires before created", now, now - 1, Err(E::WindowInvalid)),
        ("negative times", -300, -1, Err(E::WindowInvalid)),
        ("zero times", 0, 1, Err(E::WindowInvalid)),
        (
            "largest sf-integers",
            999_999_999_999_998,
            999_999_999_999_999,
            Err(E::WindowInvalid),
        ),
        (
            "smallest sf-integers",
            -999_999_999_999_999,
            -999_999_999_999_998,
            Err(E::WindowInvalid),
        ),
    ] {
        let r = Req {
            params: params(created, expires, &n16, kid, "ed25519", TAG),
            ..w.req(1)
        };
        case(format!("window: {name}"), r, expect);
    }
    for (name, p) in [
        (
            "16-digit created",
            format!(r#";created=1776520800000000;expires=1;nonce="{n16}";keyid="{kid}";alg="ed25519";tag="{TAG}""#),
        ),
        (
            "decimal created",
            format!(
                r#";created=1776520800.5;expires={};nonce="{n16}";keyid="{kid}";alg="ed25519";tag="{TAG}""#,
                now + 300
            ),
        ),
        (
            "string created",
            format!(
                r#";created="{now}";expires={};nonce="{n16}";keyid="{kid}";alg="ed25519";tag="{TAG}""#,
                now + 300
            ),
        ),
    ] {
        case(
            format!("window: {name}"),
            Req { params: p, ..w.req(1) },
            Err(E::HeaderMalformed),
        );
    }

    // The tag, byte for byte.
    for (tag, expect) in [
        (TAG, Ok(())),
        ("ADCP/webhook-signing/v1", Err(E::TagInvalid)),
        ("adcp/webhook-signing/V1", Err(E::TagInvalid)),
        ("adcp/request-signing/v1", Err(E::TagInvalid)),
        ("adcp/webhook-signing/v1 ", Err(E::TagInvalid)),
        ("adcp/webhook-signing/v2", Err(E::TagInvalid)),
        ("", Err(E::TagInvalid)),
    ] {
        let r = Req {
            params: params(now, now + 300, &n16, kid, "ed25519", tag),
            ..w.req(1)
        };
        case(format!("tag {tag:?}"), r, expect);
    }
    let unquoted_tag = format!(
        r#";created={now};expires={};nonce="{n16}";keyid="{kid}";alg="ed25519";tag=adcp"#,
        now + 300
    );
    case(
        "unquoted tag".into(),
        Req {
            params: unquoted_tag,
            ..w.req(1)
        },
        Err(E::HeaderMalformed),
    );

    // The algorithm: our allowlist, exact spelling, consistent with the key.
    for (alg, expect) in [
        ("ed25519", Ok(())),
        ("Ed25519", Err(E::AlgNotAllowed)),
        ("ED25519", Err(E::AlgNotAllowed)),
        ("EdDSA", Err(E::AlgNotAllowed)),
        ("hmac-sha256", Err(E::AlgNotAllowed)),
        ("rsa-pss-sha512", Err(E::AlgNotAllowed)),
        ("none", Err(E::AlgNotAllowed)),
        ("", Err(E::AlgNotAllowed)),
        ("ecdsa-p256-sha256", Err(E::KeyPurposeInvalid)),
    ] {
        let r = Req {
            params: params(now, now + 300, &n16, kid, alg, TAG),
            ..w.req(1)
        };
        case(format!("alg {alg:?}"), r, expect);
    }

    // Required parameters.
    for missing in ["created", "expires", "nonce", "keyid", "alg", "tag"] {
        let p = params(now, now + 300, &n16, kid, "ed25519", TAG);
        let p = p
            .split(';')
            .filter(|s| !s.is_empty() && !s.starts_with(missing))
            .map(|s| format!(";{s}"))
            .collect::<String>();
        case(
            format!("missing {missing}"),
            Req { params: p, ..w.req(1) },
            Err(E::ParamsIncomplete),
        );
    }
    let doubled = format!("{};created={now}", params(now, now + 300, &n16, kid, "ed25519", TAG));
    case(
        "created twice".into(),
        Req {
            params: doubled,
            ..w.req(1)
        },
        Err(E::HeaderMalformed),
    );

    // Covered components.
    for (name, components, expect) in [
        (
            "odd order",
            r#""content-digest" "@authority" "content-type" "@target-uri" "@method""#,
            Ok(()),
        ),
        (
            "extra @query",
            r#""@method" "@target-uri" "@authority" "content-type" "content-digest" "@query""#,
            Ok(()),
        ),
        (
            "no @method",
            r#""@target-uri" "@authority" "content-type" "content-digest""#,
            Err(E::ComponentsIncomplete),
        ),
        (
            "no @target-uri",
            r#""@method" "@authority" "content-type" "content-digest""#,
            Err(E::ComponentsIncomplete),
        ),
        (
            "no @authority",
            r#""@method" "@target-uri" "content-type" "content-digest""#,
            Err(E::ComponentsIncomplete),
        ),
        (
            "no content-type",
            r#""@method" "@target-uri" "@authority" "content-digest""#,
            Err(E::ComponentsIncomplete),
        ),
        (
            "no content-digest",
            r#""@method" "@target-uri" "@authority" "content-type""#,
            Err(E::ComponentsIncomplete),
        ),
        ("empty list", "", Err(E::ComponentsIncomplete)),
        (
            "@method twice",
            r#""@method" "@method" "@target-uri" "@authority" "content-type" "content-digest""#,
            Err(E::HeaderMalformed),
        ),
        (
            "uppercase field name",
            r#""@method" "@target-uri" "@authority" "Content-Type" "content-digest""#,
            Err(E::HeaderMalformed),
        ),
        (
            "unknown derived component",
            r#""@method" "@target-uri" "@authority" "content-type" "content-digest" "@host""#,
            Err(E::HeaderMalformed),
        ),
        (
            "unknown component parameter",
            r#""@method";x "@target-uri" "@authority" "content-type" "content-digest""#,
            Err(E::HeaderMalformed),
        ),
        (
            "token component",
            r#"@method "@target-uri" "@authority" "content-type" "content-digest""#,
            Err(E::HeaderMalformed),
        ),
        (
            "covered header absent",
            r#""@method" "@target-uri" "@authority" "content-type" "content-digest" "x-absent""#,
            Err(E::SignatureInvalid),
        ),
    ] {
        case(
            format!("components: {name}"),
            Req {
                components: components.to_owned(),
                ..w.req(1)
            },
            expect,
        );
    }

    // Labels and header lines.
    let valid = w.finish(&w.req(1));
    let line = |name: &str| valid.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let (input, signature) = (line("Signature-Input"), line("Signature"));
    let sig2_input = format!(
        "sig2=({COMPONENTS}){}",
        params(now, now + 300, &nonce_of(16, 99), kid, "ed25519", TAG)
    )
    .into_bytes();
    let join = |a: &[u8], b: &[u8]| [a, b", ", b].concat();
    for (name, inputs, signatures, expect) in [
        (
            "Signature-Input line twice",
            vec![input.clone(), input.clone()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "sig1 twice on one line",
            vec![join(&input, &input)],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "Signature line twice",
            vec![input.clone()],
            vec![signature.clone(), signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "sig1 twice in Signature",
            vec![input.clone()],
            vec![join(&signature, &signature)],
            Err(E::HeaderMalformed),
        ),
        (
            "an extra sig2 is ignored",
            vec![join(&input, &sig2_input)],
            vec![join(&signature, b"sig2=:AAAA:")],
            Ok(()),
        ),
        (
            "only sig2",
            vec![sig2_input.clone()],
            vec![b"sig2=:AAAA:".to_vec()],
            Err(E::HeaderMalformed),
        ),
        (
            "SIG1 uppercase label",
            vec![[b"SIG1", &input[4..]].concat()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        ("no Signature", vec![input.clone()], vec![], Err(E::HeaderMalformed)),
        (
            "no Signature-Input",
            vec![],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        ("neither header", vec![], vec![], Err(E::HeaderMalformed)),
        (
            "Signature as a token",
            vec![input.clone()],
            vec![b"sig1=abc".to_vec()],
            Err(E::HeaderMalformed),
        ),
        (
            "Signature as a string",
            vec![input.clone()],
            vec![b"sig1=\"abc\"".to_vec()],
            Err(E::HeaderMalformed),
        ),
        (
            "empty Signature value",
            vec![input.clone()],
            vec![b"sig1=::".to_vec()],
            Err(E::SignatureInvalid),
        ),
        (
            "Signature-Input member not a list",
            vec![b"sig1=\"@method\"".to_vec()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "NUL in Signature-Input",
            vec![[&input[..10], b"\0", &input[10..]].concat()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "LF in Signature-Input",
            vec![[&input[..10], b"\n", &input[10..]].concat()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "invalid UTF-8 in Signature-Input",
            vec![[&input[..], b";x=\"\xff\xfe\""].concat()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "oversized Signature-Input",
            vec![[&input[..], format!(";pad=\"{}\"", "a".repeat(9000)).as_bytes()].concat()],
            vec![signature.clone()],
            Err(E::HeaderMalformed),
        ),
        (
            "oversized Signature",
            vec![input.clone()],
            vec![format!("sig1=:{}:", "A".repeat(9000)).into_bytes()],
            Err(E::HeaderMalformed),
        ),
    ] {
        let r = Req {
            input_override: Some(inputs),
            signature_override: Some(signatures),
            ..w.req(1)
        };
        case(format!("headers: {name}"), r, expect);
    }
    // Extra labels: only `sig1` is processed; any other member must be
    // well-formed RFC 8941 and is otherwise ignored, in either header, on
    // the same line or another, before or after `sig1`. Signature-Input
    // extras are signed afresh (the signature covers `sig1` only).
    for extra in [
        &br#"relay=("@method" "@method")"#[..],
        br#"relay=("@foo")"#,
        br#"relay=("@method");keyid=abc"#,
        br#"relay=("@method");created=1;created=2"#,
        br#"relay=(tok 1);d=1.5"#,
        br#"relay="@method""#,
        b"relay",
        br#"relay=("@method"), relay=("@path")"#,
    ] {
        let name = String::from_utf8_lossy(extra);
        for (place, inputs) in [
            ("after sig1", vec![join(&input, extra)]),
            ("before sig1", vec![join(extra, &input)]),
            ("on another line", vec![input.clone(), extra.to_vec()]),
        ] {
            let r = Req {
                input_override: Some(inputs),
                ..w.req(1)
            };
            case(format!("extra Signature-Input member {place}: {name}"), r, Ok(()));
        }
    }
    for extra in [
        &b"relay=abc"[..],
        b"relay",
        b"relay=1",
        b"relay=(:AAAA:)",
        b"relay=:AAAA:;p=1",
        b"relay=:AAAA:, relay=:BBBB:",
    ] {
        let name = String::from_utf8_lossy(extra);
        for (place, signatures) in [
            ("after sig1", vec![join(&signature, extra)]),
            ("before sig1", vec![join(extra, &signature)]),
            ("on another line", vec![signature.clone(), extra.to_vec()]),
        ] {
            let r = Req {
                signature_override: Some(signatures),
                ..w.req(1)
            };
            case(format!("extra Signature member {place}: {name}"), r, Ok(()));
        }
    }
    // ...but a malformed dictionary, and a repeated `sig1`, still reject.
    for (name, extra) in [
        ("unterminated inner list", &br#"relay=("@method""#[..]),
        ("token in an inner list", br#"relay=(@method)"#),
        ("uppercase key", br#"Relay=("@method")"#),
        ("trailing comma", br#"relay=("@method"),"#),
        ("sig1 again", &input[..]),
    ] {
        let r = Req {
            input_override: Some(vec![join(&input, extra)]),
            signature_override: Some(vec![signature.clone()]),
            ..w.req(1)
        };
        case(
            format!("malformed extra Signature-Input member: {name}"),
            r,
            Err(E::HeaderMalformed),
        );
    }
    for (name, extra) in [
        ("unterminated byte sequence", &b"relay=:AAAA"[..]),
        ("invalid item", b"relay=@"),
        ("uppercase key", b"Relay=:AAAA:"),
        ("sig1 again", &signature[..]),
    ] {
        let r = Req {
            signature_override: Some(vec![join(&signature, extra)]),
            ..w.req(1)
        };
        case(
            format!("malformed extra Signature member: {name}"),
            r,
            Err(E::HeaderMalformed),
        );
    }
    for (name, encoding, expect) in [
        (
            "standard base64 signature",
            BinaryEncoding::Base64Padded,
            Err(E::HeaderMalformed),
        ),
        ("base64url signature", BinaryEncoding::Base64UrlUnpadded, Ok(())),
    ] {
        case(
            format!("encoding: {name}"),
            Req {
                signature_encoding: encoding,
                ..w.req(2)
            },
            expect,
        );
    }

    // Keys.
    for (name, keyid, expect) in [
        ("unknown keyid", "nobody", Err(E::KeyUnknown)),
        ("empty keyid", "", Err(E::KeyUnknown)),
        ("4 KiB keyid", &*"k".repeat(4096), Err(E::KeyUnknown)),
        ("keyid differing in case", &*kid.to_uppercase(), Err(E::KeyUnknown)),
    ] {
        let r = Req {
            params: params(now, now + 300, &n16, keyid, "ed25519", TAG),
            ..w.req(1)
        };
        case(format!("keyid: {name}"), r, expect);
    }
    let non_ascii = format!(
        r#";created={now};expires={};nonce="{n16}";keyid="kéy";alg="ed25519";tag="{TAG}""#,
        now + 300
    );
    case(
        "keyid: non-ASCII".into(),
        Req {
            params: non_ascii,
            ..w.req(1)
        },
        Err(E::HeaderMalformed),
    );

    // Authority: from Host / :authority, checked against the URL.
    for (name, extra, expect) in [
        ("Host equal to the URL", vec![("Host", "buyer.example.com")], Ok(())),
        ("Host in another case", vec![("Host", "BUYER.Example.COM")], Ok(())),
        (
            "Host with the default port",
            vec![("Host", "buyer.example.com:443")],
            Ok(()),
        ),
        (
            "Host of another vhost",
            vec![("Host", "evil.example")],
            Err(E::TargetUriMalformed),
        ),
        (
            "Host with another port",
            vec![("Host", "buyer.example.com:8443")],
            Err(E::TargetUriMalformed),
        ),
        (
            "two Host lines",
            vec![("Host", "buyer.example.com"), ("Host", "buyer.example.com")],
            Err(E::TargetUriMalformed),
        ),
        (
            ":authority equal to Host",
            vec![(":authority", "buyer.example.com"), ("Host", "buyer.example.com")],
            Ok(()),
        ),
        (
            ":authority differing from Host",
            vec![(":authority", "buyer.example.com"), ("Host", "evil.example")],
            Err(E::TargetUriMalformed),
        ),
        (
            ":authority of another vhost",
            vec![(":authority", "evil.example")],
            Err(E::TargetUriMalformed),
        ),
    ] {
        let mut r = w.req(1);
        r.headers
            .extend(extra.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())));
        case(format!("authority: {name}"), r, expect);
    }
    for (name, url, expect) in [
        (
            "uppercase scheme and host",
            "HTTPS://BUYER.EXAMPLE.COM/adcp/webhook/create_media_buy/agent_123/op_abc",
            Ok(()),
        ),
        (
            "dot segments",
            "https://buyer.example.com/adcp/./webhook/../webhook/create_media_buy/agent_123/op_abc",
            Ok(()),
        ),
        // Userinfo and fragments are stripped (url-canonicalization steps 3 and 8).
        ("userinfo", "https://user@buyer.example.com/adcp/webhook", Ok(())),
        ("fragment", "https://buyer.example.com/adcp/webhook#frag", Ok(())),
        ("not absolute", "/adcp/webhook", Err(E::TargetUriMalformed)),
        (
            "percent-encoded host",
            "https://buyer%2Eexample.com/adcp/webhook",
            Err(E::TargetUriMalformed),
        ),
    ] {
        case(
            format!("url: {name}"),
            Req {
                url: url.to_owned(),
                ..w.req(1)
            },
            expect,
        );
    }

    // Content-Digest.
    let other = ContentDigest::compute(b"other", &[DigestAlgorithm::Sha256], BinaryEncoding::Base64Padded);
    let url_safe = ContentDigest::compute(
        BODY.as_bytes(),
        &[DigestAlgorithm::Sha256],
        BinaryEncoding::Base64UrlUnpadded,
    );
    let ours = ContentDigest::compute(
        BODY.as_bytes(),
        &[DigestAlgorithm::Sha256],
        BinaryEncoding::Base64Padded,
    );
    for (name, lines, expect) in [
        ("digest of another body", vec![other.clone()], Err(E::DigestMismatch)),
        ("unpadded base64url digest", vec![url_safe.clone()], Ok(())),
        (
            "digest line twice",
            vec![ours.clone(), ours.clone()],
            Err(E::HeaderMalformed),
        ),
        // RFC 9530 sha-512 is as good as sha-256; the profile names no algorithm.
        (
            "sha-512 only",
            vec![ContentDigest::compute(
                BODY.as_bytes(),
                &[DigestAlgorithm::Sha512],
                BinaryEncoding::Base64Padded,
            )],
            Ok(()),
        ),
        (
            "digest as a token",
            vec!["sha-256=abc".to_owned()],
            Err(E::HeaderMalformed),
        ),
        (
            "digest with mixed alphabets",
            vec![format!("sha-256=:{}-_:", &url_safe[9..url_safe.len() - 3])],
            Err(E::HeaderMalformed),
        ),
    ] {
        let r = Req {
            digest_override: Some(lines.into_iter().map(String::into_bytes).collect()),
            ..w.req(1)
        };
        case(format!("digest: {name}"), r, expect);
    }
    case(
        "digest: covered but absent".into(),
        Req {
            no_digest: true,
            ..w.req(1)
        },
        Err(E::SignatureInvalid),
    );

    // Bodies (signed, digest matching): well-formedness after the nonce.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let large = format!(r#"{{"pad":"{}"}}"#, "x".repeat(1024 * 1024));
    for (name, body, expect) in [
        (
            "duplicate keys",
            br#"{"status":"completed","status":"failed"}"#.to_vec(),
            Err(E::BodyMalformed),
        ),
        (
            "escaped duplicate keys",
            br#"{"status":1,"\u0073tatus":2}"#.to_vec(),
            Err(E::BodyMalformed),
        ),
        (
            "nested duplicate keys",
            br#"{"result":{"a":1,"a":2}}"#.to_vec(),
            Err(E::BodyMalformed),
        ),
        (
            "bidi duplicate keys",
            "{\"a\u{202e}b\":1,\"a\u{202e}b\":2}".as_bytes().to_vec(),
            Err(E::BodyMalformed),
        ),
        (
            "zero-width keys are distinct",
            "{\"ab\":1,\"a\u{200b}b\":2}".as_bytes().to_vec(),
            Ok(()),
        ),
        ("100,000 levels of nesting", deep.into_bytes(), Err(E::BodyMalformed)),
        ("body over 1 MiB", large.into_bytes(), Err(E::BodyMalformed)),
        ("invalid UTF-8", b"{\"a\":\"\xff\"}".to_vec(), Err(E::BodyMalformed)),
        ("NUL in a string", b"{\"a\":\"\0\"}".to_vec(), Err(E::BodyMalformed)),
        ("trailing garbage", br#"{"a":1} x"#.to_vec(), Err(E::BodyMalformed)),
        ("not JSON", b"status=completed".to_vec(), Err(E::BodyMalformed)),
        ("empty body", Vec::new(), Err(E::BodyMalformed)),
        ("JSON array", br#"[{"a":1}]"#.to_vec(), Ok(())),
    ] {
        case(format!("body: {name}"), Req { body, ..w.req(1) }, expect);
    }
    out
}

#[test]
fn every_hostile_input_gets_its_exact_outcome() {
    let Some(w) = world() else { return };
    let cases = cases(&w);
    assert!(cases.len() >= 100, "the table has {} cases", cases.len());
    let mut wrong = Vec::new();
    for (name, req, expect) in &cases {
        let got = w.verify(req);
        if got != *expect {
            wrong.push(format!("{name}: expected {expect:?}, got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases wrong:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}

/// Step 14b: a malformed-body rejection names keyid, nonce, byte length and
/// the sanitized duplicate key names, never the body or the raw key bytes.
#[test]
fn a_malformed_body_rejection_carries_what_14b_says_to_log() {
    let Some(w) = world() else { return };
    let body = "{\"a\u{202e}b\":1,\"a\u{202e}b\":2,\"secret-payload\":3}"
        .as_bytes()
        .to_vec();
    let len = body.len();
    let req = Req { body, ..w.req(7) };
    let err = w.verify_full(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::BodyMalformed);
    let text = err.to_string();
    assert!(text.contains(&format!("{:?}", w.keyid)), "{text}");
    assert!(text.contains(&format!("{:?}", nonce_of(16, 7))), "{text}");
    assert!(text.contains(&format!("{len} body bytes")), "{text}");
    assert!(text.contains("<sanitized:1>"), "{text}");
    assert!(!text.contains('\u{202e}') && !text.contains("secret-payload"), "{text}");
}

/// Two spellings of one nonce (differing only in the last symbol's unused
/// bits) decode to the same bytes, and the replay key is the bytes: the
/// second delivery, though signed afresh, is a replay.
#[test]
fn two_spellings_of_one_nonce_are_one_nonce() {
    let Some(w) = world() else { return };
    let verifier = Verifier::new(
        Profile::webhook_v1(),
        StaticKeyResolver::new().with_jwks(&w.jwks, "https://seller.example/mcp"),
        MemoryReplayStore::webhook(),
        FixedClock(w.now),
    );
    let canonical = nonce_of(16, 42);
    let odd = with_trailing_bits(&canonical);
    let mut outcomes = Vec::new();
    for nonce in [&odd, &canonical, &odd] {
        let r = Req {
            params: w.params(w.now, w.now + 300, nonce, &w.keyid, "ed25519", TAG),
            ..w.req(1)
        };
        let headers = w.finish(&r);
        let msg = message(&r.url, &headers, &r.body);
        outcomes.push(run_now(verifier.verify(&msg)).map(|v| v.nonce).map_err(|e| e.code()));
    }
    let bytes = BinaryEncoding::Base64UrlUnpadded.decode(&canonical).unwrap();
    assert_eq!(outcomes[0], Ok(bytes), "the odd spelling verifies, keyed on its bytes");
    assert_eq!(outcomes[1], Err(E::Replayed));
    assert_eq!(outcomes[2], Err(E::Replayed));
}

/// The request profile ignores extra labels the same way: official
/// positive request vectors (3.1 and 3.2 spellings) with odd extra members
/// appended to both headers still verify, and a malformed extra still
/// rejects. The vectors are copied to a scratch suite, edited, and run
/// through the conformance runner.
#[test]
fn the_request_profile_ignores_extra_labels_too() {
    let Some(suite) = adcp_vectors::require_dir().unwrap() else {
        return;
    };
    let scratch = std::env::temp_dir().join(format!("adcp-extra-labels-{}", std::process::id()));
    let cases = [
        (r#"relay=("@method" "@method");keyid=abc"#, "relay=abc", None),
        (r#"relay=("@foo"), relay"#, "relay=:AAAA:;p=1", None),
        (
            r#"relay=("@method""#,
            "relay=:AAAA:",
            Some("request_signature_header_malformed"),
        ),
        (
            r#"relay=("@method")"#,
            "relay=:AAAA",
            Some("request_signature_header_malformed"),
        ),
    ];
    let mut ran = 0;
    for vector in [
        "request-signing/positive/001-basic-post.json",
        "request-signing/profile-3.2/positive/001-post-with-content-digest.json",
    ] {
        for (i, (input_extra, signature_extra, reject)) in cases.iter().enumerate() {
            let mut doc = adcp_vectors::load_json(&suite, vector).unwrap();
            let headers = doc["request"]["headers"].as_object_mut().unwrap();
            for (name, extra) in [("Signature-Input", input_extra), ("Signature", signature_extra)] {
                let value = headers[name].as_str().unwrap();
                headers[name] = format!("{value}, {extra}").into();
            }
            if let Some(code) = reject {
                doc["expected_outcome"] = serde_json::json!({ "success": false, "error_code": code });
            }
            let relative = vector.replace(".json", &format!("-extra-{i}.json"));
            let path = scratch.join(&relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
            let keys = scratch.join("request-signing/keys.json");
            if !keys.exists() {
                std::fs::copy(suite.join("request-signing/keys.json"), keys).unwrap();
            }
            let outcome = run_now(adcp_verify::conformance::run_file(&scratch, &path, None));
            assert!(
                outcome.passed,
                "{relative}: expected {:?}, got {:?} ({})",
                outcome.expected, outcome.got, outcome.detail
            );
            ran += 1;
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    assert_eq!(ran, 8);
}

/// Key-purpose separation, the RFC 9421 side: the same key published as a
/// governance-signing key (the AdCP JWS profile's purpose) verifies no
/// webhook and no request (`*_key_purpose_invalid` at step 8); the JWS
/// side, refusing RFC 9421 keys for governance tokens, is tested in
/// `adcp-jws`.
#[test]
fn a_governance_signing_key_is_refused_for_rfc9421() {
    let Some(mut w) = world() else { return };
    assert_eq!(w.verify(&w.req(41)), Ok(()));
    w.jwks["keys"][0]["adcp_use"] = "governance-signing".into();
    let err = w.verify_full(&w.req(42)).unwrap_err();
    assert_eq!(
        (err.code(), err.step().to_string()),
        (E::KeyPurposeInvalid, "8".to_owned())
    );

    // The request profile (3.2: tag adcp/request-signing/v1, RFC 8941
    // binary values) refuses it the same way, and accepts the key once it
    // is published for request signing.
    let request = |w: &World, seed: u8| {
        let mut r = w.req(seed);
        r.params = w.params(
            w.now,
            w.now + 300,
            &nonce_of(16, seed),
            &w.keyid,
            "ed25519",
            "adcp/request-signing/v1",
        );
        r.signature_encoding = BinaryEncoding::Base64Padded;
        let headers = w.finish(&r);
        let msg = message(&r.url, &headers, &r.body);
        let verifier = Verifier::new(
            Profile::request_v3_2(),
            StaticKeyResolver::new().with_jwks(&w.jwks, "https://seller.example/mcp"),
            MemoryReplayStore::request(),
            FixedClock(w.now),
        );
        run_now(verifier.verify(&msg)).map(|_| ()).map_err(|e| e.code())
    };
    assert_eq!(request(&w, 43), Err(E::KeyPurposeInvalid));
    w.jwks["keys"][0]["adcp_use"] = "request-signing".into();
    assert_eq!(request(&w, 44), Ok(()));
}
