//! The examples of RFC 9421 (HTTP Message Signatures), byte for byte.
//!
//! Messages, keys, signature bases and signatures are copied from the RFC:
//! the component examples of §2.1–§2.2, the signature-parameter and
//! signature-base examples of §2.3–§2.5 and §4.3, and Appendix B (test keys
//! B.1, test messages B.2, signatures B.2.1–B.2.6, B.3, B.4). Long lines keep
//! the RFC's RFC 8792 single-backslash wrapping and are unwrapped by
//! [`rfc8792`] as that RFC specifies: the `\`, the line break and the
//! continuation line's leading spaces are not part of the value.
//!
//! Ed25519 (B.2.6, B.4) and HMAC-SHA256 (B.2.5) are deterministic, so the
//! published signatures are verified with the published keys (B.1.4, B.1.5)
//! *and* re-created bit for bit. The ECDSA P-256 signatures (B.2.4, B.3,
//! §2.4) are verified with `test-key-ecc-p256` (B.1.3). This crate has no
//! RSA, so the RSA examples (B.2.1–B.2.3, §2.5, §4.3) are checked for their
//! signature bases only.

use adcp_sigbase::crypto::{Algorithm, CryptoError, SigningKey, VerifyingKey};
use adcp_sigbase::digest::{ContentDigest, DigestAlgorithm, DigestPolicy};
use adcp_sigbase::encoding::BinaryEncoding;
use adcp_sigbase::structured::{SfType, StructuredFields};
use adcp_sigbase::{signature_base, BaseOptions, Error, Message, SignatureInput, Signatures};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Undoes RFC 8792 §7 single-backslash wrapping: a line ending in `\`
/// continues on the next line, whose leading spaces are dropped.
fn rfc8792(wrapped: &str) -> String {
    let mut out = String::with_capacity(wrapped.len());
    let mut continuation = false;
    for line in wrapped.split('\n') {
        let line = if continuation {
            line.trim_start_matches(' ')
        } else {
            line
        };
        match line.strip_suffix('\\') {
            Some(head) => {
                out.push_str(head);
                continuation = true;
            }
            None => {
                out.push_str(line);
                out.push('\n');
                continuation = false;
            }
        }
    }
    assert!(!continuation, "wrapped text ends with a continuation");
    out.pop();
    out
}

/// A `Name: value` field line, the value as written (leading space kept:
/// the library trims it).
fn field_line(line: &str) -> (String, String) {
    let (name, value) = line
        .split_once(':')
        .unwrap_or_else(|| panic!("not a field line: {line:?}"));
    (name.to_owned(), value.to_owned())
}

/// An RFC example message (request line or status line, field lines, an
/// empty line, the content). A request's target URI is
/// `scheme://` + `Host` + request target.
fn http_message(wrapped: &str, scheme: &str) -> Message<'static> {
    let text = rfc8792(wrapped);
    let (head, content) = match text.split_once("\n\n") {
        Some((head, content)) => (head, Some(content)),
        None => (text.as_str(), None),
    };
    let mut lines = head.split('\n');
    let start = lines.next().expect("start line");
    let fields: Vec<(String, String)> = lines.map(field_line).collect();
    let mut msg = match start.strip_prefix("HTTP/1.1 ") {
        Some(status) => Message::response(status[..3].parse().expect("status code")),
        None => {
            let mut parts = start.split(' ');
            let method = parts.next().expect("method");
            let target = parts.next().expect("request target");
            assert_eq!(parts.next(), Some("HTTP/1.1"), "{start}");
            let host = fields
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("host"))
                .map(|(_, value)| value.trim())
                .expect("Host");
            Message::request(method.to_owned(), format!("{scheme}://{host}{target}"))
        }
    };
    for (name, value) in fields {
        msg.push_header(name, value);
    }
    if let Some(content) = content {
        msg = msg.with_body(content.as_bytes().to_vec());
    }
    msg
}

/// Adds the (wrapped) field lines to `msg`, e.g. the `Signature-Input` and
/// `Signature` fields an example adds to `test-request`.
fn with_fields(mut msg: Message<'static>, wrapped: &str) -> Message<'static> {
    for line in rfc8792(wrapped).split('\n') {
        let (name, value) = field_line(line);
        msg.push_header(name, value);
    }
    msg
}

/// The signature base of signature `label`, read from the message's own
/// `Signature-Input` field.
fn base_of(msg: &Message<'_>, label: &str, opts: &BaseOptions<'_>) -> String {
    let input = SignatureInput::from_message(msg).unwrap().expect("Signature-Input");
    let base = signature_base(msg, input.require(label).unwrap(), opts).unwrap();
    String::from_utf8(base.into_bytes()).expect("ASCII signature base")
}

/// The decoded value of signature `label` in the message's `Signature` field.
fn signature_of(msg: &Message<'_>, label: &str) -> Vec<u8> {
    Signatures::from_message(msg)
        .unwrap()
        .expect("Signature")
        .decode(label, BinaryEncoding::Base64Padded)
        .unwrap()
}

/// The base lines of `components` (the inside of an inner list, e.g.
/// `"@method" "date"`), without the closing `@signature-params` line.
fn component_lines(msg: &Message<'_>, components: &str, opts: &BaseOptions<'_>) -> Result<String, Error> {
    let input = SignatureInput::parse(format!("x=({components});created=1").as_bytes())?;
    let base = signature_base(msg, input.require("x")?, opts)?;
    let text = String::from_utf8(base.into_bytes()).expect("ASCII signature base");
    let (lines, params) = text.rsplit_once('\n').expect("at least one component line");
    assert_eq!(params, format!("\"@signature-params\": ({components});created=1"));
    Ok(lines.to_owned())
}

fn default_lines(msg: &Message<'_>, components: &str) -> String {
    component_lines(msg, components, &BaseOptions::default()).unwrap()
}

// ---------------------------------------------------------------------------
// Appendix B.1: example keys
// ---------------------------------------------------------------------------

/// B.1.3 `test-key-ecc-p256`, public key.
const TEST_KEY_ECC_P256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lf
w0EkjqF7xB4FivAxzic30tMM4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
-----END PUBLIC KEY-----";

/// B.1.3 `test-key-ecc-p256`, private key (SEC1).
const TEST_KEY_ECC_P256_PRIVATE: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIFKbhfNZfpDsW43+0+JjUr9K+bTeuxopu653+hBaXGA7oAoGCCqGSM49
AwEHoUQDQgAEqIVYZVLCrPZHGHjP17CTW0/+D9Lfw0EkjqF7xB4FivAxzic30tMM
4GF+hR6Dxh71Z50VGGdldkkDXZCnTNnoXQ==
-----END EC PRIVATE KEY-----";

/// B.1.3 `test-key-ecc-p256` as a JWK: `d`, `x`, `y`.
const TEST_KEY_ECC_P256_JWK: [&str; 3] = [
    "UpuF81l-kOxbjf7T4mNSv0r5tN67Gim7rnf6EFpcYDs",
    "qIVYZVLCrPZHGHjP17CTW0_-D9Lfw0EkjqF7xB4FivA",
    "Mc4nN9LTDOBhfoUeg8Ye9WedFRhnZXZJA12Qp0zZ6F0",
];

/// B.1.4 `test-key-ed25519`, public key.
const TEST_KEY_ED25519_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=
-----END PUBLIC KEY-----";

/// B.1.4 `test-key-ed25519`, private key (PKCS#8).
const TEST_KEY_ED25519_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----";

/// B.1.4 `test-key-ed25519` as a JWK: `d`, `x`.
const TEST_KEY_ED25519_JWK: [&str; 2] = [
    "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU",
    "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs",
];

/// B.1.5 `test-shared-secret`: 64 random bytes in Base64.
const TEST_SHARED_SECRET: &str = r#"uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBt\
  bmHhIDi6pcl8jsasjlTMtDQ=="#;

fn shared_secret() -> Vec<u8> {
    BinaryEncoding::Base64Padded
        .decode(&rfc8792(TEST_SHARED_SECRET))
        .unwrap()
}

fn ecc_p256() -> VerifyingKey {
    VerifyingKey::p256_from_spki_pem(TEST_KEY_ECC_P256_PUBLIC).unwrap()
}

fn ed25519() -> VerifyingKey {
    VerifyingKey::ed25519_from_spki_pem(TEST_KEY_ED25519_PUBLIC).unwrap()
}

#[test]
fn b_1_3_ecc_p256_test_key_pem_and_jwk_are_the_same_key() {
    let [d, x, y] = TEST_KEY_ECC_P256_JWK.map(|v| BinaryEncoding::Base64UrlUnpadded.decode(v).unwrap());
    let from_pem = SigningKey::p256_from_sec1_pem(TEST_KEY_ECC_P256_PRIVATE).unwrap();
    let from_jwk = SigningKey::p256_from_scalar(&d).unwrap();
    assert_eq!(from_pem.verifying_key(), ecc_p256());
    assert_eq!(from_jwk.verifying_key(), ecc_p256());
    assert_eq!(VerifyingKey::p256_from_coordinates(&x, &y).unwrap(), ecc_p256());
    assert_eq!(ecc_p256().algorithm(), Algorithm::EcdsaP256Sha256);
}

#[test]
fn b_1_4_ed25519_test_key_pem_and_jwk_are_the_same_key() {
    let [d, x] = TEST_KEY_ED25519_JWK.map(|v| BinaryEncoding::Base64UrlUnpadded.decode(v).unwrap());
    let from_pem = SigningKey::ed25519_from_pkcs8_pem(TEST_KEY_ED25519_PRIVATE).unwrap();
    let from_jwk = SigningKey::ed25519_from_seed(&d).unwrap();
    assert_eq!(from_pem.verifying_key(), ed25519());
    assert_eq!(from_jwk.verifying_key(), ed25519());
    assert_eq!(ed25519().public_key_bytes(), Some(&x[..]));
    assert_eq!(ed25519().algorithm(), Algorithm::Ed25519);
}

#[test]
fn b_1_5_shared_secret_is_64_bytes() {
    assert_eq!(shared_secret().len(), 64);
    assert_eq!(
        SigningKey::hmac_sha256(&shared_secret()).unwrap().algorithm(),
        Algorithm::HmacSha256
    );
}

// ---------------------------------------------------------------------------
// Appendix B.2: test messages
// ---------------------------------------------------------------------------

/// B.2 `test-request`.
const TEST_REQUEST: &str = r#"POST /foo?param=Value&Pet=dog HTTP/1.1
Host: example.com
Date: Tue, 20 Apr 2021 02:07:55 GMT
Content-Type: application/json
Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+T\
  aPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
Content-Length: 18

{"hello": "world"}"#;

/// B.2 `test-response`.
const TEST_RESPONSE: &str = r#"HTTP/1.1 200 OK
Date: Tue, 20 Apr 2021 02:07:56 GMT
Content-Type: application/json
Content-Digest: sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41Q\
  JgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:
Content-Length: 23

{"message": "good dog"}"#;

fn test_request() -> Message<'static> {
    http_message(TEST_REQUEST, "https")
}

fn test_response() -> Message<'static> {
    http_message(TEST_RESPONSE, "https")
}

/// The `Content-Digest` of a test message is the RFC 9530 SHA-512 digest of
/// its content (so the digest-covering examples cover the right bytes).
fn assert_content_digest_matches(msg: &Message<'_>) {
    let field = msg.combined_field("content-digest").unwrap().expect("Content-Digest");
    let body = msg.body().expect("content");
    let digest = ContentDigest::parse(&*field, BinaryEncoding::Base64Padded).unwrap();
    digest
        .verify(body, &DigestPolicy::only(DigestAlgorithm::Sha512))
        .unwrap();
    assert_eq!(
        ContentDigest::compute(body, &[DigestAlgorithm::Sha512], BinaryEncoding::Base64Padded).as_bytes(),
        &*field
    );
}

#[test]
fn b_2_test_request_content_digest_matches_its_content() {
    let msg = test_request();
    assert_eq!(msg.body(), Some(&br#"{"hello": "world"}"#[..]));
    assert_content_digest_matches(&msg);
}

#[test]
fn b_2_test_response_content_digest_matches_its_content() {
    let msg = test_response();
    assert_eq!(msg.status(), Some(200));
    assert_eq!(msg.body(), Some(&br#"{"message": "good dog"}"#[..]));
    assert_content_digest_matches(&msg);
}

// ---------------------------------------------------------------------------
// B.2.1 Minimal Signature Using rsa-pss-sha512
// ---------------------------------------------------------------------------

const B21_FIELDS: &str = r#"Signature-Input: sig-b21=();created=1618884473\
  ;keyid="test-key-rsa-pss";nonce="b3k2pp5k7z-50gnwp.yemd"
Signature: sig-b21=:d2pmTvmbncD3xQm8E9ZV2828BjQWGgiwAaw5bAkgibUopem\
  LJcWDy/lkbbHAve4cRAtx31Iq786U7it++wgGxbtRxf8Udx7zFZsckzXaJMkA7ChG\
  52eSkFxykJeNqsrWH5S+oxNFlD4dzVuwe8DhTSja8xxbR/Z2cOGdCbzR72rgFWhzx\
  2VjBqJzsPLMIQKhO4DGezXehhWwE56YCE+O6c0mKZsfxVrogUvA4HELjVKWmAvtl6\
  UnCh8jYzuVG5WSb/QEVPnP5TmcAnLH1g+s++v6d4s8m0gCw1fV5/SITLq9mhho8K3\
  +7EPYTU8IU1bLhdxO5Nyt8C8ssinQ98Xw9Q==:"#;

const B21_BASE: &str = r#""@signature-params": ();created=1618884473;keyid="test-key-rsa-pss"\
  ;nonce="b3k2pp5k7z-50gnwp.yemd""#;

#[test]
fn b_2_1_minimal_signature_base() {
    let msg = with_fields(test_request(), B21_FIELDS);
    assert_eq!(base_of(&msg, "sig-b21", &BaseOptions::default()), rfc8792(B21_BASE));
    let input = SignatureInput::from_message(&msg).unwrap().unwrap();
    let params = input.require("sig-b21").unwrap();
    assert!(params.components().is_empty());
    assert_eq!(params.nonce(), Some("b3k2pp5k7z-50gnwp.yemd"));
    // RSA-PSS with the 2048-bit test-key-rsa-pss: 256 bytes.
    assert_eq!(signature_of(&msg, "sig-b21").len(), 256);
}

// ---------------------------------------------------------------------------
// B.2.2 Selective Covered Components Using rsa-pss-sha512
// ---------------------------------------------------------------------------

const B22_FIELDS: &str = r#"Signature-Input: sig-b22=("@authority" "content-digest" \
  "@query-param";name="Pet");created=1618884473\
  ;keyid="test-key-rsa-pss";tag="header-example"
Signature: sig-b22=:LjbtqUbfmvjj5C5kr1Ugj4PmLYvx9wVjZvD9GsTT4F7GrcQ\
  EdJzgI9qHxICagShLRiLMlAJjtq6N4CDfKtjvuJyE5qH7KT8UCMkSowOB4+ECxCmT\
  8rtAmj/0PIXxi0A0nxKyB09RNrCQibbUjsLS/2YyFYXEu4TRJQzRw1rLEuEfY17SA\
  RYhpTlaqwZVtR8NV7+4UKkjqpcAoFqWFQh62s7Cl+H2fjBSpqfZUJcsIk4N6wiKYd\
  4je2U/lankenQ99PZfB4jY3I5rSV2DSBVkSFsURIjYErOs0tFTQosMTAoxk//0RoK\
  UqiYY8Bh0aaUEb0rQl3/XaVe4bXTugEjHSw==:"#;

const B22_BASE: &str = r#""@authority": example.com
"content-digest": sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX\
  +TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
"@query-param";name="Pet": dog
"@signature-params": ("@authority" "content-digest" \
  "@query-param";name="Pet")\
  ;created=1618884473;keyid="test-key-rsa-pss"\
  ;tag="header-example""#;

#[test]
fn b_2_2_selective_covered_components_base() {
    let msg = with_fields(test_request(), B22_FIELDS);
    assert_eq!(base_of(&msg, "sig-b22", &BaseOptions::default()), rfc8792(B22_BASE));
    assert_eq!(signature_of(&msg, "sig-b22").len(), 256);
}

// ---------------------------------------------------------------------------
// B.2.3 Full Coverage Using rsa-pss-sha512
// ---------------------------------------------------------------------------

const B23_FIELDS: &str = r#"Signature-Input: sig-b23=("date" "@method" "@path" "@query" \
  "@authority" "content-type" "content-digest" "content-length")\
  ;created=1618884473;keyid="test-key-rsa-pss"
Signature: sig-b23=:bbN8oArOxYoyylQQUU6QYwrTuaxLwjAC9fbY2F6SVWvh0yB\
  iMIRGOnMYwZ/5MR6fb0Kh1rIRASVxFkeGt683+qRpRRU5p2voTp768ZrCUb38K0fU\
  xN0O0iC59DzYx8DFll5GmydPxSmme9v6ULbMFkl+V5B1TP/yPViV7KsLNmvKiLJH1\
  pFkh/aYA2HXXZzNBXmIkoQoLd7YfW91kE9o/CCoC1xMy7JA1ipwvKvfrs65ldmlu9\
  bpG6A9BmzhuzF8Eim5f8ui9eH8LZH896+QIF61ka39VBrohr9iyMUJpvRX2Zbhl5Z\
  JzSRxpJyoEZAFL2FUo5fTIztsDZKEgM4cUA==:"#;

const B23_BASE: &str = r#""date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@query": ?param=Value&Pet=dog
"@authority": example.com
"content-type": application/json
"content-digest": sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX\
  +TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
"content-length": 18
"@signature-params": ("date" "@method" "@path" "@query" \
  "@authority" "content-type" "content-digest" "content-length")\
  ;created=1618884473;keyid="test-key-rsa-pss""#;

#[test]
fn b_2_3_full_coverage_base() {
    let msg = with_fields(test_request(), B23_FIELDS);
    assert_eq!(base_of(&msg, "sig-b23", &BaseOptions::default()), rfc8792(B23_BASE));
    assert_eq!(signature_of(&msg, "sig-b23").len(), 256);
}

// ---------------------------------------------------------------------------
// B.2.4 Signing a Response Using ecdsa-p256-sha256
// ---------------------------------------------------------------------------

const B24_FIELDS: &str = r#"Signature-Input: sig-b24=("@status" "content-type" \
  "content-digest" "content-length");created=1618884473\
  ;keyid="test-key-ecc-p256"
Signature: sig-b24=:wNmSUAhwb5LxtOtOpNa6W5xj067m5hFrj0XQ4fvpaCLx0NK\
  ocgPquLgyahnzDnDAUy5eCdlYUEkLIj+32oiasw==:"#;

const B24_BASE: &str = r#""@status": 200
"content-type": application/json
"content-digest": sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ4\
  1QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aGgfLQ==:
"content-length": 23
"@signature-params": ("@status" "content-type" "content-digest" \
  "content-length");created=1618884473;keyid="test-key-ecc-p256""#;

#[test]
fn b_2_4_response_base() {
    let msg = with_fields(test_response(), B24_FIELDS);
    assert_eq!(base_of(&msg, "sig-b24", &BaseOptions::default()), rfc8792(B24_BASE));
}

#[test]
fn b_2_4_published_ecdsa_p256_signature_verifies() {
    let msg = with_fields(test_response(), B24_FIELDS);
    let base = base_of(&msg, "sig-b24", &BaseOptions::default());
    let signature = signature_of(&msg, "sig-b24");
    assert_eq!(signature.len(), 64);
    ecc_p256()
        .verify(Algorithm::EcdsaP256Sha256, base.as_bytes(), &signature)
        .unwrap();
    // ECDSA is randomized: a fresh signature differs but verifies.
    let signer = SigningKey::p256_from_sec1_pem(TEST_KEY_ECC_P256_PRIVATE).unwrap();
    let fresh = signer.sign(base.as_bytes()).unwrap();
    ecc_p256()
        .verify(Algorithm::EcdsaP256Sha256, base.as_bytes(), fresh.as_bytes())
        .unwrap();
    assert_eq!(
        ecc_p256().verify(Algorithm::EcdsaP256Sha256, rfc8792(B23_BASE).as_bytes(), &signature),
        Err(CryptoError::VerificationFailed)
    );
}

// ---------------------------------------------------------------------------
// B.2.5 Signing a Request Using hmac-sha256
// ---------------------------------------------------------------------------

const B25_FIELDS: &str = r#"Signature-Input: sig-b25=("date" "@authority" "content-type")\
  ;created=1618884473;keyid="test-shared-secret"
Signature: sig-b25=:pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=:"#;

const B25_BASE: &str = r#""date": Tue, 20 Apr 2021 02:07:55 GMT
"@authority": example.com
"content-type": application/json
"@signature-params": ("date" "@authority" "content-type")\
  ;created=1618884473;keyid="test-shared-secret""#;

#[test]
fn b_2_5_hmac_sha256_base() {
    let msg = with_fields(test_request(), B25_FIELDS);
    assert_eq!(base_of(&msg, "sig-b25", &BaseOptions::default()), rfc8792(B25_BASE));
}

#[test]
fn b_2_5_published_hmac_sha256_signature_verifies_and_is_recreated() {
    let msg = with_fields(test_request(), B25_FIELDS);
    let base = base_of(&msg, "sig-b25", &BaseOptions::default());
    let signature = signature_of(&msg, "sig-b25");
    assert_eq!(signature.len(), 32);

    let verifier = VerifyingKey::hmac_sha256(&shared_secret()).unwrap();
    verifier
        .verify(Algorithm::HmacSha256, base.as_bytes(), &signature)
        .unwrap();

    let signer = SigningKey::hmac_sha256(&shared_secret()).unwrap();
    let recreated = signer.sign(base.as_bytes()).unwrap();
    assert_eq!(recreated.as_bytes(), &signature[..]);
    assert_eq!(
        BinaryEncoding::Base64Padded.encode(recreated.as_bytes()),
        "pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8="
    );

    let mut altered = base.into_bytes();
    altered[0] ^= 1;
    assert_eq!(
        verifier.verify(Algorithm::HmacSha256, &altered, &signature),
        Err(CryptoError::VerificationFailed)
    );
}

// ---------------------------------------------------------------------------
// B.2.6 Signing a Request Using ed25519
// ---------------------------------------------------------------------------

const B26_FIELDS: &str = r#"Signature-Input: sig-b26=("date" "@method" "@path" "@authority" \
  "content-type" "content-length");created=1618884473\
  ;keyid="test-key-ed25519"
Signature: sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1\
  u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"#;

const B26_BASE: &str = r#""date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ("date" "@method" "@path" "@authority" \
  "content-type" "content-length");created=1618884473\
  ;keyid="test-key-ed25519""#;

#[test]
fn b_2_6_ed25519_base() {
    let msg = with_fields(test_request(), B26_FIELDS);
    assert_eq!(base_of(&msg, "sig-b26", &BaseOptions::default()), rfc8792(B26_BASE));
}

#[test]
fn b_2_6_published_ed25519_signature_verifies_and_is_recreated() {
    let msg = with_fields(test_request(), B26_FIELDS);
    let base = base_of(&msg, "sig-b26", &BaseOptions::default());
    let signature = signature_of(&msg, "sig-b26");
    assert_eq!(signature.len(), 64);

    ed25519()
        .verify(Algorithm::Ed25519, base.as_bytes(), &signature)
        .unwrap();

    let signer = SigningKey::ed25519_from_pkcs8_pem(TEST_KEY_ED25519_PRIVATE).unwrap();
    let recreated = signer.sign(base.as_bytes()).unwrap();
    assert_eq!(recreated.as_bytes(), &signature[..]);
    assert_eq!(
        BinaryEncoding::Base64Padded.encode(recreated.as_bytes()),
        "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw=="
    );

    // Any other base (here B.2.5's) fails.
    assert_eq!(
        ed25519().verify(Algorithm::Ed25519, rfc8792(B25_BASE).as_bytes(), &signature),
        Err(CryptoError::VerificationFailed)
    );
}

// ---------------------------------------------------------------------------
// B.3 TLS-Terminating Proxies (ecdsa-p256-sha256)
// ---------------------------------------------------------------------------

const B3_REQUEST: &str = r#"POST /foo?param=Value&Pet=dog HTTP/1.1
Host: service.internal.example
Date: Tue, 20 Apr 2021 02:07:55 GMT
Content-Type: application/json
Content-Length: 18
Client-Cert: :MIIBqDCCAU6gAwIBAgIBBzAKBggqhkjOPQQDAjA6MRswGQYDVQQKD\
  BJMZXQncyBBdXRoZW50aWNhdGUxGzAZBgNVBAMMEkxBIEludGVybWVkaWF0ZSBDQT\
  AeFw0yMDAxMTQyMjU1MzNaFw0yMTAxMjMyMjU1MzNaMA0xCzAJBgNVBAMMAkJDMFk\
  wEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YnXXfaUgmnMtOXU/IncWalRhebrXmck\
  C8vdgJ1p5Be5F/3YC8OthxM4+k1M6aEAEFcGzkJiNy6J84y7uzo9M6NyMHAwCQYDV\
  R0TBAIwADAfBgNVHSMEGDAWgBRm3WjLa38lbEYCuiCPct0ZaSED2DAOBgNVHQ8BAf\
  8EBAMCBsAwEwYDVR0lBAwwCgYIKwYBBQUHAwIwHQYDVR0RAQH/BBMwEYEPYmRjQGV\
  4YW1wbGUuY29tMAoGCCqGSM49BAMCA0gAMEUCIBHda/r1vaL6G3VliL4/Di6YK0Q6\
  bMjeSkC3dFCOOB8TAiEAx/kHSB4urmiZ0NX5r5XarmPk0wmuydBVoU4hBVZ1yhk=:
Signature-Input: ttrp=("@path" "@query" "@method" "@authority" \
  "client-cert");created=1618884473;keyid="test-key-ecc-p256"
Signature: ttrp=:xVMHVpawaAC/0SbHrKRs9i8I3eOs5RtTMGCWXm/9nvZzoHsIg6\
  Mce9315T6xoklyy0yzhD9ah4JHRwMLOgmizw==:

{"hello": "world"}"#;

const B3_BASE: &str = r#""@path": /foo
"@query": ?param=Value&Pet=dog
"@method": POST
"@authority": service.internal.example
"client-cert": :MIIBqDCCAU6gAwIBAgIBBzAKBggqhkjOPQQDAjA6MRswGQYDVQQ\
  KDBJMZXQncyBBdXRoZW50aWNhdGUxGzAZBgNVBAMMEkxBIEludGVybWVkaWF0ZSBD\
  QTAeFw0yMDAxMTQyMjU1MzNaFw0yMTAxMjMyMjU1MzNaMA0xCzAJBgNVBAMMAkJDM\
  FkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YnXXfaUgmnMtOXU/IncWalRhebrXm\
  ckC8vdgJ1p5Be5F/3YC8OthxM4+k1M6aEAEFcGzkJiNy6J84y7uzo9M6NyMHAwCQY\
  DVR0TBAIwADAfBgNVHSMEGDAWgBRm3WjLa38lbEYCuiCPct0ZaSED2DAOBgNVHQ8B\
  Af8EBAMCBsAwEwYDVR0lBAwwCgYIKwYBBQUHAwIwHQYDVR0RAQH/BBMwEYEPYmRjQ\
  GV4YW1wbGUuY29tMAoGCCqGSM49BAMCA0gAMEUCIBHda/r1vaL6G3VliL4/Di6YK0\
  Q6bMjeSkC3dFCOOB8TAiEAx/kHSB4urmiZ0NX5r5XarmPk0wmuydBVoU4hBVZ1yhk=:
"@signature-params": ("@path" "@query" "@method" "@authority" \
  "client-cert");created=1618884473;keyid="test-key-ecc-p256""#;

#[test]
fn b_3_tls_terminating_proxy_base_and_ecdsa_signature() {
    let msg = http_message(B3_REQUEST, "https");
    let base = base_of(&msg, "ttrp", &BaseOptions::default());
    assert_eq!(base, rfc8792(B3_BASE));
    let signature = signature_of(&msg, "ttrp");
    ecc_p256()
        .verify(Algorithm::EcdsaP256Sha256, base.as_bytes(), &signature)
        .unwrap();
}

// ---------------------------------------------------------------------------
// B.4 HTTP Message Transformations (ed25519)
// ---------------------------------------------------------------------------

const B4_SIGNATURE_FIELDS: &str = r#"Signature-Input: transform=("@method" "@path" "@authority" \
  "accept");created=1618884473;keyid="test-key-ed25519"
Signature: transform=:ZT1kooQsEHpZ0I1IjCqtQppOmIqlJPeo7DHR3SoMn0s5J\
  Z1eRGS0A+vyYP9t/LXlh5QMFFQ6cpLt2m0pmj3NDA==:"#;

const B4_BASE: &str = r#""@method": GET
"@path": /demo
"@authority": example.org
"accept": application/json, */*
"@signature-params": ("@method" "@path" "@authority" "accept")\
  ;created=1618884473;keyid="test-key-ed25519""#;

/// The signed message, then the transformed messages the RFC says still
/// verify.
const B4_VALID: [&str; 4] = [
    "GET /demo?name1=Value1&Name2=value2 HTTP/1.1
Host: example.org
Date: Fri, 15 Jul 2022 14:24:55 GMT
Accept: application/json
Accept: */*",
    "GET /demo?name1=Value1&Name2=value2&param=added HTTP/1.1
Host: example.org
Date: Fri, 15 Jul 2022 14:24:55 GMT
Accept: application/json
Accept: */*
Accept-Language: en-US,en;q=0.5",
    "GET /demo?name1=Value1&Name2=value2 HTTP/1.1
Host: example.org
Referer: https://developer.example.org/demo
Accept: application/json, */*",
    "GET /demo?name1=Value1&Name2=value2 HTTP/1.1
Accept: application/json
Accept: */*
Date: Fri, 15 Jul 2022 14:24:55 GMT
Host: example.org",
];

/// The transformed messages the RFC says no longer verify: method and
/// authority changed; the two `Accept` lines swapped.
const B4_INVALID: [&str; 2] = [
    "POST /demo?name1=Value1&Name2=value2 HTTP/1.1
Host: example.com
Date: Fri, 15 Jul 2022 14:24:55 GMT
Accept: application/json
Accept: */*",
    "GET /demo?name1=Value1&Name2=value2 HTTP/1.1
Host: example.org
Date: Fri, 15 Jul 2022 14:24:55 GMT
Accept: */*
Accept: application/json",
];

fn b4_message(head: &str) -> Message<'static> {
    with_fields(http_message(head, "https"), B4_SIGNATURE_FIELDS)
}

#[test]
fn b_4_signed_message_base_and_ed25519_signature() {
    let msg = b4_message(B4_VALID[0]);
    let base = base_of(&msg, "transform", &BaseOptions::default());
    assert_eq!(base, rfc8792(B4_BASE));
    let signature = signature_of(&msg, "transform");
    ed25519()
        .verify(Algorithm::Ed25519, base.as_bytes(), &signature)
        .unwrap();
    let signer = SigningKey::ed25519_from_pkcs8_pem(TEST_KEY_ED25519_PRIVATE).unwrap();
    assert_eq!(signer.sign(base.as_bytes()).unwrap().as_bytes(), &signature[..]);
}

#[test]
fn b_4_allowed_transformations_keep_the_base_and_the_signature_valid() {
    for head in B4_VALID {
        let msg = b4_message(head);
        let base = base_of(&msg, "transform", &BaseOptions::default());
        assert_eq!(base, rfc8792(B4_BASE), "{head}");
        ed25519()
            .verify(Algorithm::Ed25519, base.as_bytes(), &signature_of(&msg, "transform"))
            .unwrap_or_else(|e| panic!("{head}: {e}"));
    }
}

#[test]
fn b_4_covered_changes_invalidate_the_signature() {
    for head in B4_INVALID {
        let msg = b4_message(head);
        let base = base_of(&msg, "transform", &BaseOptions::default());
        assert_ne!(base, rfc8792(B4_BASE), "{head}");
        assert_eq!(
            ed25519().verify(Algorithm::Ed25519, base.as_bytes(), &signature_of(&msg, "transform")),
            Err(CryptoError::VerificationFailed),
            "{head}"
        );
    }
}

// ---------------------------------------------------------------------------
// §2.1 HTTP Fields
// ---------------------------------------------------------------------------

/// §2.1's example fragment, except `X-Obs-Fold-Header` (see the next test).
fn s2_1_message() -> Message<'static> {
    Message::request("GET", "https://www.example.com/")
        .with_header("Host", "www.example.com")
        .with_header("Date", "Tue, 20 Apr 2021 02:07:56 GMT")
        .with_header("X-OWS-Header", "   Leading and trailing whitespace.   ")
        .with_header("Cache-Control", "max-age=60")
        .with_header("Cache-Control", "   must-revalidate")
        .with_header("Example-Dict", " a=1,    b=2;x=1;y=2,   c=(a   b   c)")
}

#[test]
fn s2_1_field_values_are_trimmed_and_combined() {
    assert_eq!(
        default_lines(
            &s2_1_message(),
            r#""host" "date" "x-ows-header" "cache-control" "example-dict""#
        ),
        r#""host": www.example.com
"date": Tue, 20 Apr 2021 02:07:56 GMT
"x-ows-header": Leading and trailing whitespace.
"cache-control": max-age=60, must-revalidate
"example-dict": a=1,    b=2;x=1;y=2,   c=(a   b   c)"#
    );
}

/// §2.1 shows `X-Obs-Fold-Header: Obsolete\n    line folding.` signed as
/// `"x-obs-fold-header": Obsolete line folding.`. This library deliberately
/// refuses field values that still carry the fold (`message.rs`: "obsolete
/// line folding is not accepted either"); an HTTP/1.1 recipient that
/// replaces the fold with SP (RFC 9112 §5.2) gets the RFC's line.
#[test]
fn s2_1_obsolete_line_folding_is_refused_and_the_unfolded_value_matches() {
    let folded = s2_1_message().with_header("X-Obs-Fold-Header", "Obsolete\r\n    line folding.");
    assert_eq!(
        component_lines(&folded, r#""x-obs-fold-header""#, &BaseOptions::default()),
        Err(Error::InvalidFieldValue {
            name: "x-obs-fold-header".into()
        })
    );
    let unfolded = s2_1_message().with_header("X-Obs-Fold-Header", "Obsolete line folding.");
    assert_eq!(
        default_lines(&unfolded, r#""x-obs-fold-header""#),
        r#""x-obs-fold-header": Obsolete line folding."#
    );
}

#[test]
fn s2_1_empty_field_value_is_signed_as_empty() {
    let msg = s2_1_message().with_header("X-Empty-Header", " ");
    assert_eq!(default_lines(&msg, r#""x-empty-header""#), "\"x-empty-header\": ");
}

#[test]
fn s2_1_missing_field_is_an_error() {
    assert_eq!(
        component_lines(&s2_1_message(), r#""x-absent""#, &BaseOptions::default()),
        Err(Error::MissingComponent {
            component: r#""x-absent""#.into()
        })
    );
}

// §2.1.1 Strict Serialization of HTTP Structured Fields

fn example_dict_types() -> StructuredFields {
    StructuredFields::default().with("example-dict", SfType::Dictionary)
}

#[test]
fn s2_1_1_sf_reserializes_a_dictionary() {
    let types = example_dict_types();
    let opts = BaseOptions {
        structured_fields: Some(&types),
        ..BaseOptions::default()
    };
    let msg = Message::request("GET", "https://www.example.com/")
        .with_header("Example-Dict", "  a=1,    b=2;x=1;y=2,   c=(a   b   c)");
    assert_eq!(
        component_lines(&msg, r#""example-dict" "example-dict";sf"#, &opts).unwrap(),
        r#""example-dict": a=1,    b=2;x=1;y=2,   c=(a   b   c)
"example-dict";sf: a=1, b=2;x=1;y=2, c=(a b c)"#
    );
}

#[test]
fn s2_1_1_sf_on_a_field_of_unknown_type_is_an_error() {
    let msg = Message::request("GET", "https://www.example.com/").with_header("Example-Dict", "a=1");
    let err = component_lines(&msg, r#""example-dict";sf"#, &BaseOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::StructuredField { name, .. } if name == "example-dict"),
        "{err:?}"
    );
}

// §2.1.2 Dictionary Structured Field Members

#[test]
fn s2_1_2_key_selects_dictionary_members() {
    let types = example_dict_types();
    let opts = BaseOptions {
        structured_fields: Some(&types),
        ..BaseOptions::default()
    };
    let msg = Message::request("GET", "https://www.example.com/")
        .with_header("Example-Dict", "  a=1, b=2;x=1;y=2, c=(a   b    c), d");
    assert_eq!(
        component_lines(
            &msg,
            r#""example-dict";key="a" "example-dict";key="d" "example-dict";key="b" "example-dict";key="c""#,
            &opts
        )
        .unwrap(),
        r#""example-dict";key="a": 1
"example-dict";key="d": ?1
"example-dict";key="b": 2;x=1;y=2
"example-dict";key="c": (a b c)"#
    );
}

/// §2.5's error example: `"example-dict";key="c"` over `a=1, b=2`.
#[test]
fn s2_1_2_key_naming_an_absent_member_is_an_error() {
    let types = example_dict_types();
    let opts = BaseOptions {
        structured_fields: Some(&types),
        ..BaseOptions::default()
    };
    let msg = Message::request("GET", "https://www.example.com/").with_header("Example-Dict", "a=1, b=2");
    let err = component_lines(&msg, r#""example-dict";key="c""#, &opts).unwrap_err();
    assert!(matches!(err, Error::MissingComponent { .. }), "{err:?}");
}

// §2.1.3 Binary-Wrapped HTTP Fields

#[test]
fn s2_1_3_bs_wraps_each_field_line() {
    let two_lines = Message::request("GET", "https://www.example.com/")
        .with_header("Example-Header", "value, with, lots")
        .with_header("Example-Header", "of, commas");
    let one_line = Message::request("GET", "https://www.example.com/")
        .with_header("Example-Header", "value, with, lots, of, commas");
    for msg in [&two_lines, &one_line] {
        assert_eq!(
            default_lines(msg, r#""example-header""#),
            r#""example-header": value, with, lots, of, commas"#
        );
    }
    assert_eq!(
        default_lines(&two_lines, r#""example-header";bs"#),
        r#""example-header";bs: :dmFsdWUsIHdpdGgsIGxvdHM=:, :b2YsIGNvbW1hcw==:"#
    );
    assert_eq!(
        default_lines(&one_line, r#""example-header";bs"#),
        r#""example-header";bs: :dmFsdWUsIHdpdGgsIGxvdHMsIG9mLCBjb21tYXM=:"#
    );
}

// §2.1.4 Trailer Fields

#[test]
fn s2_1_4_tr_takes_the_value_from_the_trailers() {
    let msg = Message::response(200)
        .with_header("Content-Type", "text/plain")
        .with_header("Transfer-Encoding", "chunked")
        .with_header("Trailer", "Expires")
        .with_body(&b"HTTPMessageSignatures"[..])
        .with_trailer("Expires", "Wed, 9 Nov 2022 07:28:00 GMT");
    assert_eq!(
        default_lines(&msg, r#""@status" "trailer" "expires";tr"#),
        r#""@status": 200
"trailer": Expires
"expires";tr: Wed, 9 Nov 2022 07:28:00 GMT"#
    );
    // Without `tr` the field is looked up in the header section, where it
    // is not.
    assert!(matches!(
        component_lines(&msg, r#""expires""#, &BaseOptions::default()),
        Err(Error::MissingComponent { .. })
    ));
}

// ---------------------------------------------------------------------------
// §2.2 Derived Components
// ---------------------------------------------------------------------------

/// The request of §2.2.1–§2.2.6, sent over HTTPS (§2.2.4: over plain HTTP).
const S2_2_REQUEST: &str = "POST /path?param=value HTTP/1.1
Host: www.example.com";

#[test]
fn s2_2_1_method() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "https"), r#""@method""#),
        r#""@method": POST"#
    );
}

#[test]
fn s2_2_2_target_uri() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "https"), r#""@target-uri""#),
        r#""@target-uri": https://www.example.com/path?param=value"#
    );
}

#[test]
fn s2_2_3_authority() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "https"), r#""@authority""#),
        r#""@authority": www.example.com"#
    );
}

#[test]
fn s2_2_4_scheme() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "http"), r#""@scheme""#),
        r#""@scheme": http"#
    );
}

#[test]
fn s2_2_5_request_target_origin_form() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "https"), r#""@request-target""#),
        r#""@request-target": /path?param=value"#
    );
}

#[test]
fn s2_2_6_path() {
    assert_eq!(
        default_lines(&http_message(S2_2_REQUEST, "https"), r#""@path""#),
        r#""@path": /path"#
    );
}

#[test]
fn s2_2_7_query() {
    let cases = [
        (
            "POST /path?param=value&foo=bar&baz=bat%2Dman HTTP/1.1\nHost: www.example.com",
            r#""@query": ?param=value&foo=bar&baz=bat%2Dman"#,
        ),
        (
            "POST /path?queryString HTTP/1.1\nHost: www.example.com",
            r#""@query": ?queryString"#,
        ),
        // No query: the value is the leading `?` alone.
        ("POST /path HTTP/1.1\nHost: www.example.com", r#""@query": ?"#),
    ];
    for (request, line) in cases {
        assert_eq!(
            default_lines(&http_message(request, "https"), r#""@query""#),
            line,
            "{request}"
        );
    }
}

#[test]
fn s2_2_8_query_param() {
    let msg = http_message(
        "POST /path?param=value&foo=bar&baz=batman&qux= HTTP/1.1\nHost: www.example.com",
        "https",
    );
    assert_eq!(
        default_lines(
            &msg,
            r#""@query-param";name="baz" "@query-param";name="qux" "@query-param";name="param""#
        ),
        rfc8792(
            r#""@query-param";name="baz": batman
"@query-param";name="qux": \

"@query-param";name="param": value"#
        )
    );
}

#[test]
fn s2_2_8_query_param_names_and_values_are_decoded_and_reencoded() {
    let msg = http_message(
        r#"GET /parameters?var=this%20is%20a%20big%0Amultiline%20value&\
  bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20=something HTTP/1.1
Host: www.example.com
Date: Tue, 20 Apr 2021 02:07:56 GMT"#,
        "https",
    );
    assert_eq!(
        default_lines(
            &msg,
            r#""@query-param";name="var" "@query-param";name="bar" "@query-param";name="fa%C3%A7ade%22%3A%20""#
        ),
        r#""@query-param";name="var": this%20is%20a%20big%0Amultiline%20value
"@query-param";name="bar": with%20plus%20whitespace
"@query-param";name="fa%C3%A7ade%22%3A%20": something"#
    );
}

/// "If a query parameter is named as a covered component but it does not
/// occur in the query parameters, this MUST cause an error".
#[test]
fn s2_2_8_absent_query_param_is_an_error() {
    let msg = http_message("POST /path?param=value HTTP/1.1\nHost: www.example.com", "https");
    assert_eq!(
        component_lines(&msg, r#""@query-param";name="nope""#, &BaseOptions::default()),
        Err(Error::MissingComponent {
            component: r#""@query-param";name="nope""#.into()
        })
    );
}

/// RFC 9421 §2.2.8: "If a parameter name occurs multiple times in a
/// request, the named query parameter MUST NOT be included." Base
/// generation must fail; the library emits one line per occurrence instead
/// (the behaviour of draft-ietf-httpbis-message-signatures-16 and earlier).
#[test]
fn s2_2_8_repeated_query_param_name_must_not_be_covered() {
    let msg = http_message("POST /path?dup=1&dup=2 HTTP/1.1\nHost: www.example.com", "https");
    let result = component_lines(&msg, r#""@query-param";name="dup""#, &BaseOptions::default());
    assert!(
        matches!(result, Err(Error::RepeatedQueryParam { ref name }) if name == "dup"),
        "a repeated query parameter was covered: {result:?}"
    );
}

#[test]
fn s2_2_9_status() {
    let msg = http_message("HTTP/1.1 200 OK\nDate: Fri, 26 Mar 2010 00:05:00 GMT", "https");
    assert_eq!(default_lines(&msg, r#""@status""#), r#""@status": 200"#);
}

/// "The @status component identifier MUST NOT be used in a request message."
#[test]
fn s2_2_9_status_in_a_request_is_an_error() {
    let err = component_lines(
        &http_message(S2_2_REQUEST, "https"),
        r#""@status""#,
        &BaseOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::UnsupportedComponent { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------
// §2.3 Signature Parameters
// ---------------------------------------------------------------------------

#[test]
fn s2_3_signature_params_value_keeps_the_parameter_order() {
    let value = rfc8792(
        r#"("@target-uri" "@authority" "date" "cache-control")\
  ;keyid="test-key-rsa-pss";alg="rsa-pss-sha512";\
  created=1618884475;expires=1618884775"#,
    );
    let input = SignatureInput::parse(format!("sig1={value}").as_bytes()).unwrap();
    let params = input.require("sig1").unwrap();
    assert_eq!(params.serialize(), value);
    assert_eq!(params.keyid(), Some("test-key-rsa-pss"));
    assert_eq!(params.alg(), Some("rsa-pss-sha512"));
    assert_eq!(params.created(), Some(1618884475));
    assert_eq!(params.expires(), Some(1618884775));
    assert_eq!(params.components().len(), 4);
}

// ---------------------------------------------------------------------------
// §2.4 Signing Request Components in a Response Message
// ---------------------------------------------------------------------------

const S2_4_RESPONSE: &str = r#"HTTP/1.1 503 Service Unavailable
Date: Tue, 20 Apr 2021 02:07:56 GMT
Content-Type: application/json
Content-Length: 62
Content-Digest: sha-512=:0Y6iCBzGg5rZtoXS95Ijz03mslf6KAMCloESHObfwnHJ\
  DbkkWWQz6PhhU9kxsTbARtY2PTBOzq24uJFpHsMuAg==:
Signature-Input: reqres=("@status" "content-digest" "content-type" \
  "@authority";req "@method";req "@path";req "content-digest";req)\
  ;created=1618884479;keyid="test-key-ecc-p256"
Signature: reqres=:dMT/A/76ehrdBTD/2Xx8QuKV6FoyzEP/I9hdzKN8LQJLNgzU\
  4W767HK05rx1i8meNQQgQPgQp8wq2ive3tV5Ag==:

{"busy": true, "message": "Your call is very important to us"}"#;

const S2_4_BASE: &str = r#""@status": 503
"content-digest": sha-512=:0Y6iCBzGg5rZtoXS95Ijz03mslf6KAMCloESHObfwnHJ\
  DbkkWWQz6PhhU9kxsTbARtY2PTBOzq24uJFpHsMuAg==:
"content-type": application/json
"@authority";req: example.com
"@method";req: POST
"@path";req: /foo
"content-digest";req: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A\
  2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
"@signature-params": ("@status" "content-digest" "content-type" \
  "@authority";req "@method";req "@path";req "content-digest";req)\
  ;created=1618884479;keyid="test-key-ecc-p256""#;

#[test]
fn s2_4_request_components_in_a_response_base_and_ecdsa_signature() {
    let request = test_request();
    let response = http_message(S2_4_RESPONSE, "https");
    assert_content_digest_matches(&response);
    let opts = BaseOptions {
        related_request: Some(&request),
        ..BaseOptions::default()
    };
    let base = base_of(&response, "reqres", &opts);
    assert_eq!(base, rfc8792(S2_4_BASE));
    ecc_p256()
        .verify(
            Algorithm::EcdsaP256Sha256,
            base.as_bytes(),
            &signature_of(&response, "reqres"),
        )
        .unwrap();
}

#[test]
fn s2_4_req_without_a_related_request_is_an_error() {
    let response = http_message(S2_4_RESPONSE, "https");
    let input = SignatureInput::from_message(&response).unwrap().unwrap();
    let err = signature_base(&response, input.require("reqres").unwrap(), &BaseOptions::default()).unwrap_err();
    assert!(matches!(err, Error::UnsupportedComponent { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------
// §2.5 Creating the Signature Base (signed in §3.1 with rsa-pss-sha512)
// ---------------------------------------------------------------------------

const S2_5_FIELDS: &str = r#"Signature-Input: sig1=("@method" "@authority" "@path" \
  "content-digest" "content-length" "content-type")\
  ;created=1618884473;keyid="test-key-rsa-pss"
Signature: sig1=:HIbjHC5rS0BYaa9v4QfD4193TORw7u9edguPh0AW3dMq9WImrl\
  FrCGUDih47vAxi4L2YRZ3XMJc1uOKk/J0ZmZ+wcta4nKIgBkKq0rM9hs3CQyxXGxH\
  LMCy8uqK488o+9jrptQ+xFPHK7a9sRL1IXNaagCNN3ZxJsYapFj+JXbmaI5rtAdSf\
  SvzPuBCh+ARHBmWuNo1UzVVdHXrl8ePL4cccqlazIJdC4QEjrF+Sn4IxBQzTZsL9y\
  9TP5FsZYzHvDqbInkTNigBcE9cKOYNFCn4D/WM7F6TNuZO9EgtzepLWcjTymlHzK7\
  aXq6Am6sfOrpIC49yXjj3ae6HRalVc/g==:"#;

const S2_5_BASE: &str = r#""@method": POST
"@authority": example.com
"@path": /foo
"content-digest": sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX\
  +TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
"content-length": 18
"content-type": application/json
"@signature-params": ("@method" "@authority" "@path" \
  "content-digest" "content-length" "content-type")\
  ;created=1618884473;keyid="test-key-rsa-pss""#;

#[test]
fn s2_5_signature_base_example() {
    let msg = with_fields(test_request(), S2_5_FIELDS);
    let base = base_of(&msg, "sig1", &BaseOptions::default());
    assert_eq!(base, rfc8792(S2_5_BASE));
    // §2.5: the base has no trailing newline.
    assert!(!base.ends_with('\n'));
    assert_eq!(signature_of(&msg, "sig1").len(), 256);
}

// ---------------------------------------------------------------------------
// §4.3 Multiple Signatures: the proxy's signature (rsa-v1_5-sha256)
// ---------------------------------------------------------------------------

/// The request as forwarded by the proxy, with the proxy's signature
/// (the client's `sig1` members are left out).
const S4_3_FORWARDED: &str = r#"POST /foo?param=Value&Pet=dog HTTP/1.1
Host: origin.host.internal.example
Date: Tue, 20 Apr 2021 02:07:56 GMT
Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+T\
  aPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
Content-Type: application/json
Content-Length: 18
Forwarded: for=192.0.2.123;host=example.com;proto=https
Signature-Input: proxy_sig=("@method" "@authority" "@path" \
  "content-digest" "content-type" "content-length" "forwarded")\
  ;created=1618884480;keyid="test-key-rsa";alg="rsa-v1_5-sha256"\
  ;expires=1618884540
Signature: proxy_sig=:S6ZzPXSdAMOPjN/6KXfXWNO/f7V6cHm7BXYUh3YD/fRad4BC\
  aRZxP+JH+8XY1I6+8Cy+CM5g92iHgxtRPz+MjniOaYmdkDcnL9cCpXJleXsOckpURl\
  49GwiyUpZ10KHgOEe11sx3G2gxI8S0jnxQB+Pu68U9vVcasqOWAEObtNKKZd8tSFu7\
  LB5YAv0RAGhB8tmpv7sFnIm9y+7X5kXQfi8NMaZaA8i2ZHwpBdg7a6CMfwnnrtflzv\
  ZdXAsD3LH2TwevU+/PBPv0B6NMNk93wUs/vfJvye+YuI87HU38lZHowtznbLVdp770\
  I6VHR6WfgS9ddzirrswsE1w5o0LV/g==:

{"hello": "world"}"#;

const S4_3_BASE: &str = r#""@method": POST
"@authority": origin.host.internal.example
"@path": /foo
"content-digest": sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX\
  +TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:
"content-type": application/json
"content-length": 18
"forwarded": for=192.0.2.123;host=example.com;proto=https
"@signature-params": ("@method" "@authority" "@path" \
  "content-digest" "content-type" "content-length" "forwarded")\
  ;created=1618884480;keyid="test-key-rsa";alg="rsa-v1_5-sha256"\
  ;expires=1618884540"#;

#[test]
fn s4_3_proxy_signature_base() {
    let msg = http_message(S4_3_FORWARDED, "https");
    assert_eq!(base_of(&msg, "proxy_sig", &BaseOptions::default()), rfc8792(S4_3_BASE));
    assert_eq!(signature_of(&msg, "proxy_sig").len(), 256);
}
