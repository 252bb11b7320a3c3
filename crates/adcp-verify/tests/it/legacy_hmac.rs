//! Legacy HMAC-SHA256: header and timestamp syntax, the window edges,
//! secret rotation, configuration-time secret checks, and property tests
//! (a single-byte change to the body, the timestamp or the signature never
//! verifies; arbitrary input never panics).

use adcp_sigbase::crypto::SigningKey;
use adcp_sigbase::Message;
use adcp_verify::legacy::hmac::{HmacSecrets, SecretSlot, WINDOW};
use adcp_verify::legacy::{ConfigError, Credential};
use adcp_verify::FixedClock;
use adcp_verify::{ErrorCode, Step};
use proptest::prelude::*;

const NOW: i64 = 1_790_000_000;
const CURRENT: &[u8] = b"current-secret-9f1c2e7a4b8d3f6a0c5e9b2d7f4a1c8e";
const PREVIOUS: &[u8] = b"previous-secret-3a6d9c2f5b8e1a4d7c0f3b6e9a2d5c8f";
const OTHER: &[u8] = b"unrelated-secret-7e4b1d8a5f2c9e6b3a0d7f4c1e8b5a2d";
const BODY: &[u8] = br#"{"idempotency_key":"whk_1","task_id":"task_1","status":"completed"}"#;

fn sign(secret: &[u8], ts: &str, body: &[u8]) -> String {
    let mac = SigningKey::hmac_sha256(secret)
        .unwrap()
        .sign(&[ts.as_bytes(), b".", body].concat())
        .unwrap();
    format!(
        "sha256={}",
        mac.as_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn msg<'a>(headers: &'a [(&'a str, String)], body: &'a [u8]) -> Message<'a> {
    let mut m = Message::request("POST", "https://buyer.example.com/webhooks/adcp");
    for (n, v) in headers {
        m.push_header(*n, v.as_str());
    }
    m.with_body(body)
}

fn signed(secret: &[u8], ts: &str, body: &[u8]) -> Vec<(&'static str, String)> {
    vec![
        ("X-ADCP-Signature", sign(secret, ts, body)),
        ("X-ADCP-Timestamp", ts.to_owned()),
    ]
}

fn current() -> HmacSecrets {
    HmacSecrets::new(CURRENT).unwrap()
}

fn code_step(secrets: &HmacSecrets, headers: &[(&str, String)], body: &[u8], now: i64) -> (ErrorCode, Step) {
    let e = secrets.verify(&msg(headers, body), &FixedClock(now)).unwrap_err();
    (e.code(), e.step())
}

#[test]
fn accepts_a_valid_delivery() {
    let h = signed(CURRENT, &NOW.to_string(), BODY);
    let v = current().verify(&msg(&h, BODY), &FixedClock(NOW)).unwrap();
    assert_eq!((v.timestamp, v.secret), (NOW, SecretSlot::Current));
}

#[test]
fn header_names_are_case_insensitive_and_values_trimmed() {
    let ts = NOW.to_string();
    let h = vec![
        ("x-adcp-signature", format!(" {}\t", sign(CURRENT, &ts, BODY))),
        ("X-Adcp-Timestamp", format!("  {ts} ")),
    ];
    assert!(current().verify(&msg(&h, BODY), &FixedClock(NOW)).is_ok());
}

#[test]
fn window_edges() {
    let ts = NOW.to_string();
    let h = signed(CURRENT, &ts, BODY);
    for now in [NOW - WINDOW, NOW, NOW + WINDOW] {
        assert!(current().verify(&msg(&h, BODY), &FixedClock(now)).is_ok(), "now {now}");
    }
    for now in [NOW - WINDOW - 1, NOW + WINDOW + 1, 0, i64::MIN, i64::MAX] {
        assert_eq!(
            code_step(&current(), &h, BODY, now),
            (ErrorCode::WindowInvalid, Step::new(3)),
            "now {now}"
        );
    }
}

#[test]
fn timestamp_syntax() {
    // Each is signed as written, so only the syntax rule can reject it.
    for ts in [
        "+1790000000",
        "01790000000",
        "-1790000000",
        "1790000000.0",
        "1.79e9",
        "0x6AB0F080",
        "1790000000a",
        "1 790000000",
        "١٧٩٠٠٠٠٠٠٠",
        "99999999999999999999",
        "9223372036854775808",
    ] {
        let h = signed(CURRENT, ts, BODY);
        assert_eq!(
            code_step(&current(), &h, BODY, NOW),
            (ErrorCode::HeaderMalformed, Step::new(2)),
            "{ts:?}"
        );
    }
    // `0` and the largest i64 are numbers (outside the window here).
    for ts in ["0", "9223372036854775807"] {
        let h = signed(CURRENT, ts, BODY);
        assert_eq!(
            code_step(&current(), &h, BODY, NOW).0,
            ErrorCode::WindowInvalid,
            "{ts:?}"
        );
    }
}

#[test]
fn signature_syntax() {
    let ts = NOW.to_string();
    let good = sign(CURRENT, &ts, BODY);
    let hex = good.strip_prefix("sha256=").unwrap();
    let cases = [
        (format!("SHA256={hex}"), ErrorCode::AlgNotAllowed),
        (format!("sha512={hex}"), ErrorCode::AlgNotAllowed),
        (format!("sha-256={hex}"), ErrorCode::AlgNotAllowed),
        (format!("=sha256{hex}"), ErrorCode::AlgNotAllowed),
        (hex.to_owned(), ErrorCode::HeaderMalformed),
        (format!("sha256={}", hex.to_uppercase()), ErrorCode::HeaderMalformed),
        (format!("sha256={}", &hex[..62]), ErrorCode::HeaderMalformed),
        (format!("sha256={hex}00"), ErrorCode::HeaderMalformed),
        (format!("sha256=sha256={hex}"), ErrorCode::HeaderMalformed),
        (format!("sha256= {hex}"), ErrorCode::HeaderMalformed),
        (format!("sha256={}g", &hex[..63]), ErrorCode::HeaderMalformed),
        (format!("sha256={}", "0".repeat(64)), ErrorCode::SignatureInvalid),
    ];
    for (value, code) in cases {
        let h = vec![("X-ADCP-Signature", value.clone()), ("X-ADCP-Timestamp", ts.clone())];
        assert_eq!(code_step(&current(), &h, BODY, NOW), (code, Step::new(4)), "{value:?}");
    }
}

#[test]
fn missing_empty_or_repeated_headers() {
    let ts = NOW.to_string();
    let sig = sign(CURRENT, &ts, BODY);
    let cases: [Vec<(&str, String)>; 7] = [
        vec![],
        vec![("X-ADCP-Signature", sig.clone())],
        vec![("X-ADCP-Timestamp", ts.clone())],
        vec![("X-ADCP-Signature", " ".into()), ("X-ADCP-Timestamp", ts.clone())],
        vec![("X-ADCP-Signature", sig.clone()), ("X-ADCP-Timestamp", String::new())],
        vec![
            ("X-ADCP-Signature", sig.clone()),
            ("X-ADCP-Signature", sig.clone()),
            ("X-ADCP-Timestamp", ts.clone()),
        ],
        vec![
            ("X-ADCP-Signature", sig.clone()),
            ("X-ADCP-Timestamp", ts.clone()),
            ("X-ADCP-Timestamp", ts.clone()),
        ],
    ];
    for h in cases {
        assert_eq!(
            code_step(&current(), &h, BODY, NOW),
            (ErrorCode::HeaderMalformed, Step::new(1)),
            "{h:?}"
        );
    }
}

#[test]
fn body_checked_after_the_mac() {
    let ts = NOW.to_string();
    for body in [
        &br#"{"status":"approved","status":"rejected"}"#[..],
        br#"{"a":{"b":[{"c":1,"c":2}]}}"#,
        br#"{"status":"approved"} {"status":"rejected"}"#,
        b"not json",
        b"\xef\xbb\xbf{}",
        b"",
    ] {
        let h = signed(CURRENT, &ts, body);
        let e = current().verify(&msg(&h, body), &FixedClock(NOW)).unwrap_err();
        assert_eq!(
            (e.code(), e.step()),
            (ErrorCode::BodyMalformed, Step::new(14)),
            "{body:?}"
        );
        assert_eq!(e.code_str(), "webhook_body_malformed");
        // A forged MAC over the same body is a signature failure first.
        let forged = signed(OTHER, &ts, body);
        assert_eq!(code_step(&current(), &forged, body, NOW).0, ErrorCode::SignatureInvalid);
    }
    // A missing body is the empty body: MAC over "{ts}.", then malformed.
    let h = signed(CURRENT, &ts, b"");
    let m = Message::request("POST", "https://buyer.example.com/h")
        .with_header("X-ADCP-Signature", h[0].1.as_str())
        .with_header("X-ADCP-Timestamp", ts.as_str());
    assert_eq!(
        current().verify(&m, &FixedClock(NOW)).unwrap_err().code(),
        ErrorCode::BodyMalformed
    );
}

#[test]
fn deprecated_body_signature_field_is_ignored() {
    // "Receivers MUST ignore any deprecated body-level `signature` field."
    let body = br#"{"status":"completed","signature":"sha256=0000"}"#;
    let ts = NOW.to_string();
    let h = signed(CURRENT, &ts, body);
    assert!(current().verify(&msg(&h, body), &FixedClock(NOW)).is_ok());
}

#[test]
fn rotation_accepts_current_and_previous() {
    let ts = NOW.to_string();
    let secrets = current().with_previous(PREVIOUS).unwrap();
    assert!(secrets.has_previous());
    assert_eq!(secrets.previous_retires_at(), None);
    let by = |secret| secrets.verify(&msg(&signed(secret, &ts, BODY), BODY), &FixedClock(NOW));
    assert_eq!(by(CURRENT).unwrap().secret, SecretSlot::Current);
    assert_eq!(by(PREVIOUS).unwrap().secret, SecretSlot::Previous);
    let e = by(OTHER).unwrap_err();
    assert_eq!((e.code(), e.step()), (ErrorCode::SignatureInvalid, Step::new(4)));
    // Without the previous secret, its signatures fail.
    let only = current();
    assert!(!only.has_previous());
    let e = only
        .verify(&msg(&signed(PREVIOUS, &ts, BODY), BODY), &FixedClock(NOW))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::SignatureInvalid);
}

#[test]
fn rotation_retires_the_previous_secret() {
    let ts = NOW.to_string();
    let retire_at = NOW + 120;
    let secrets = current().with_previous_until(PREVIOUS, retire_at).unwrap();
    assert_eq!(secrets.previous_retires_at(), Some(retire_at));
    let h = signed(PREVIOUS, &ts, BODY);
    for now in [NOW, retire_at] {
        assert_eq!(
            secrets.verify(&msg(&h, BODY), &FixedClock(now)).unwrap().secret,
            SecretSlot::Previous
        );
    }
    assert_eq!(
        code_step(&secrets, &h, BODY, retire_at + 1),
        (ErrorCode::SignatureInvalid, Step::new(4))
    );
    // The current secret is unaffected by the retirement.
    let h = signed(CURRENT, &ts, BODY);
    assert!(secrets.verify(&msg(&h, BODY), &FixedClock(retire_at + 1)).is_ok());
}

#[test]
fn rotate_moves_current_to_previous() {
    let ts = NOW.to_string();
    let rotated = HmacSecrets::new(PREVIOUS)
        .unwrap()
        .with_previous(OTHER)
        .unwrap()
        .rotate(CURRENT, NOW + WINDOW)
        .unwrap();
    assert_eq!(rotated.previous_retires_at(), Some(NOW + WINDOW));
    let by = |secret| rotated.verify(&msg(&signed(secret, &ts, BODY), BODY), &FixedClock(NOW));
    assert_eq!(by(CURRENT).unwrap().secret, SecretSlot::Current);
    assert_eq!(by(PREVIOUS).unwrap().secret, SecretSlot::Previous);
    // The older previous secret is gone.
    assert_eq!(by(OTHER).unwrap_err().code(), ErrorCode::SignatureInvalid);
}

#[test]
fn same_secret_twice_reports_current() {
    let ts = NOW.to_string();
    let secrets = current().with_previous(CURRENT).unwrap();
    let v = secrets
        .verify(&msg(&signed(CURRENT, &ts, BODY), BODY), &FixedClock(NOW))
        .unwrap();
    assert_eq!(v.secret, SecretSlot::Current);
}

#[test]
fn short_and_weak_secrets_are_refused_at_configuration() {
    for len in [0, 1, 16, 31] {
        let secret = (0..len).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>();
        let expected = ConfigError::TooShort {
            credential: Credential::HmacSecret,
            minimum: 32,
            actual: len,
        };
        assert_eq!(HmacSecrets::new(&secret).unwrap_err(), expected);
        assert_eq!(current().with_previous(&secret).unwrap_err(), expected);
        assert_eq!(current().with_previous_until(&secret, NOW).unwrap_err(), expected);
        assert_eq!(current().rotate(&secret, NOW).unwrap_err(), expected);
    }
    let weak = ConfigError::Weak {
        credential: Credential::HmacSecret,
    };
    for secret in [[0u8; 32], [b'0'; 32], [b'a'; 32], [0xff; 32]] {
        assert_eq!(HmacSecrets::new(secret).unwrap_err(), weak);
    }
    assert!(HmacSecrets::new([b'k'; 31].iter().chain(b"x").copied().collect::<Vec<_>>()).is_ok());
    assert!(HmacSecrets::new(vec![7u8; 200].into_iter().chain([8]).collect::<Vec<_>>()).is_ok());
    assert!(ConfigError::TooShort {
        credential: Credential::HmacSecret,
        minimum: 32,
        actual: 3
    }
    .to_string()
    .contains("at least 32 bytes"));
}

#[test]
fn debug_redacts_secrets() {
    let secrets = current().with_previous(PREVIOUS).unwrap();
    let debug = format!("{secrets:?}");
    assert!(
        !debug.contains("current-secret") && !debug.contains("previous-secret"),
        "{debug}"
    );
    assert!(debug.contains("REDACTED"), "{debug}");
}

fn json_body() -> impl Strategy<Value = Vec<u8>> {
    (
        "[a-z_]{1,12}",
        "[ -~]{0,40}",
        any::<i64>(),
        prop::collection::vec("[a-z]{1,8}", 0..4),
    )
        .prop_map(|(key, text, n, items)| {
            serde_json::to_vec(&serde_json::json!({
                "idempotency_key": "whk_prop",
                key: text,
                "n": n,
                "items": items,
                "nested": {"ok": true, "list": [{"a": 1}, {"a": 2}]},
            }))
            .unwrap()
        })
}

#[derive(Debug, Clone, Copy)]
enum Part {
    Body,
    Timestamp,
    Signature,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A valid delivery verifies; changing any one byte of the body, the
    /// timestamp value or the signature value to any other byte never
    /// does, under current + previous secrets, and the MAC (never the body
    /// check) is what rejects: the step is never 14.
    #[test]
    fn single_byte_change_never_verifies(
        body in json_body(),
        skew in -WINDOW..=WINDOW,
        use_previous in any::<bool>(),
        part in prop_oneof![Just(Part::Body), Just(Part::Timestamp), Just(Part::Signature)],
        index in any::<prop::sample::Index>(),
        delta in 1u8..=255,
    ) {
        let secrets = current().with_previous(PREVIOUS).unwrap();
        let ts = (NOW + skew).to_string();
        let secret = if use_previous { PREVIOUS } else { CURRENT };
        let (mut sig, mut ts_value, mut body) = (sign(secret, &ts, &body).into_bytes(), ts.into_bytes(), body);
        let clean = vec![("X-ADCP-Signature", String::from_utf8(sig.clone()).unwrap()), ("X-ADCP-Timestamp", String::from_utf8(ts_value.clone()).unwrap())];
        prop_assert!(secrets.verify(&msg(&clean, &body), &FixedClock(NOW)).is_ok());

        let target = match part {
            Part::Body => &mut body,
            Part::Timestamp => &mut ts_value,
            Part::Signature => &mut sig,
        };
        let i = index.index(target.len());
        target[i] ^= delta;

        let mut m = Message::request("POST", "https://buyer.example.com/webhooks/adcp");
        m.push_header("X-ADCP-Signature", sig.as_slice());
        m.push_header("X-ADCP-Timestamp", ts_value.as_slice());
        let m = m.with_body(body.as_slice());
        let err = secrets.verify(&m, &FixedClock(NOW));
        prop_assert!(err.is_err(), "{part:?}[{i}] ^= {delta:#04x} verified");
        let err = err.unwrap_err();
        prop_assert_ne!(err.step(), Step::new(14), "{:?}: {}", part, err);
    }

    /// Arbitrary header values and bodies never panic and never verify.
    #[test]
    fn arbitrary_input_never_verifies(
        sig in prop::collection::vec(any::<u8>(), 0..90),
        ts in prop::collection::vec(any::<u8>(), 0..24),
        body in prop::collection::vec(any::<u8>(), 0..64),
        now in any::<i64>(),
    ) {
        let mut m = Message::request("POST", "https://buyer.example.com/webhooks/adcp");
        m.push_header("X-ADCP-Signature", sig.as_slice());
        m.push_header("X-ADCP-Timestamp", ts.as_slice());
        let m = m.with_body(body.as_slice());
        prop_assert!(current().verify(&m, &FixedClock(now)).is_err());
    }
}
