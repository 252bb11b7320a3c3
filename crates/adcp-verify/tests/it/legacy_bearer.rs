//! Legacy Bearer-token webhook authentication: header parsing, constant-time
//! comparison semantics, configuration-time token checks, the body check.

use adcp_sigbase::Message;
use adcp_verify::legacy::bearer::BearerToken;
use adcp_verify::legacy::{ConfigError, Credential};
use adcp_verify::{ErrorCode, Step};
use proptest::prelude::*;

const TOKEN: &str = "wh_tok_5f2c9a1e7b3d4c6a8e0f1b2d3c4a5e6f";
const BODY: &[u8] = br#"{"idempotency_key":"whk_1","status":"completed"}"#;

fn token() -> BearerToken {
    BearerToken::new(TOKEN).unwrap()
}

fn msg<'a>(authorization: &[&'a str], body: &'a [u8]) -> Message<'a> {
    let mut m = Message::request("POST", "https://buyer.example.com/webhooks/adcp");
    for value in authorization {
        m.push_header("Authorization", *value);
    }
    m.with_body(body)
}

fn code_step(authorization: &[&str], body: &[u8]) -> (ErrorCode, Step) {
    let e = token().verify(&msg(authorization, body)).unwrap_err();
    assert!(e.code_str().starts_with("webhook_"));
    (e.code(), e.step())
}

#[test]
fn accepts_the_registered_token() {
    let ok = [
        format!("Bearer {TOKEN}"),
        format!("bearer {TOKEN}"),
        format!("BEARER {TOKEN}"),
        format!("Bearer   {TOKEN}"),
        format!("  Bearer {TOKEN}\t"),
    ];
    for value in &ok {
        assert!(token().verify(&msg(&[value], BODY)).is_ok(), "{value:?}");
    }
    // The header name is case-insensitive.
    let m = Message::request("POST", "https://buyer.example.com/h")
        .with_header("authorization", format!("Bearer {TOKEN}"))
        .with_body(BODY);
    assert!(token().verify(&m).is_ok());
}

#[test]
fn rejects_other_tokens() {
    let prefix = &TOKEN[..TOKEN.len() - 1];
    let wrong = [
        format!("Bearer {prefix}"),
        format!("Bearer {TOKEN}x"),
        format!("Bearer {}", TOKEN.to_uppercase()),
        format!("Bearer {}", "z".repeat(TOKEN.len())),
        "Bearer x".to_owned(),
    ];
    for value in &wrong {
        assert_eq!(
            code_step(&[value], BODY),
            (ErrorCode::SignatureInvalid, Step::new(4)),
            "{value:?}"
        );
    }
}

#[test]
fn rejects_malformed_authorization() {
    let two = format!("Bearer {TOKEN}");
    let cases: [&[&str]; 9] = [
        &[],
        &[""],
        &["Bearer"],
        &["Bearer "],
        &[&format!("Basic {TOKEN}")],
        &[&format!("Bearer{TOKEN}")],
        &[&format!("Bearer\t{TOKEN}")],
        &[&format!("Bearer {TOKEN} extra")],
        &[&two, &two],
    ];
    for authorization in cases {
        assert_eq!(
            code_step(authorization, BODY),
            (ErrorCode::HeaderMalformed, Step::new(1)),
            "{authorization:?}"
        );
    }
    let non_ascii = format!("Bearer {TOKEN}\u{e9}");
    assert_eq!(
        code_step(&[&non_ascii], BODY),
        (ErrorCode::HeaderMalformed, Step::new(1))
    );
}

#[test]
fn body_checked_after_the_token() {
    let auth = format!("Bearer {TOKEN}");
    for body in [&br#"{"status":"a","status":"b"}"#[..], b"", b"{", b"[1,]"] {
        assert_eq!(
            code_step(&[&auth], body),
            (ErrorCode::BodyMalformed, Step::new(14)),
            "{body:?}"
        );
        // A wrong token is rejected first.
        assert_eq!(code_step(&["Bearer nope"], body).0, ErrorCode::SignatureInvalid);
    }
}

#[test]
fn tokens_are_checked_at_configuration() {
    assert_eq!(
        BearerToken::new("short").unwrap_err(),
        ConfigError::TooShort {
            credential: Credential::BearerToken,
            minimum: 32,
            actual: 5
        }
    );
    assert_eq!(
        BearerToken::new("x".repeat(40)).unwrap_err(),
        ConfigError::Weak {
            credential: Credential::BearerToken
        }
    );
    for bad in [
        format!("{TOKEN} "),
        format!("tok en{TOKEN}"),
        format!("{TOKEN}\n"),
        format!("{TOKEN}é"),
    ] {
        assert_eq!(BearerToken::new(bad).unwrap_err(), ConfigError::InvalidBearerToken);
    }
    assert!(BearerToken::new("!\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`{|}~").is_ok());
}

#[test]
fn debug_redacts_the_token() {
    let debug = format!("{:?}", token());
    assert_eq!(debug, "BearerToken([REDACTED])");
}

proptest! {
    /// Any token but the registered one is refused; the registered one,
    /// with any scheme casing, is accepted.
    #[test]
    fn only_the_registered_token_verifies(candidate in "[!-~]{1,80}", upper in any::<bool>()) {
        let scheme = if upper { "BEARER" } else { "Bearer" };
        let value = format!("{scheme} {candidate}");
        let result = token().verify(&msg(&[&value], BODY));
        prop_assert_eq!(result.is_ok(), candidate == TOKEN);
    }

    /// One changed byte of the token never verifies.
    #[test]
    fn single_byte_change_never_verifies(index in any::<prop::sample::Index>(), delta in 1u8..=255) {
        let mut bytes = TOKEN.as_bytes().to_vec();
        let i = index.index(bytes.len());
        bytes[i] ^= delta;
        let mut value = b"Bearer ".to_vec();
        value.extend_from_slice(&bytes);
        let m = Message::request("POST", "https://buyer.example.com/h")
            .with_header("Authorization", value)
            .with_body(BODY);
        prop_assert!(token().verify(&m).is_err());
    }
}
