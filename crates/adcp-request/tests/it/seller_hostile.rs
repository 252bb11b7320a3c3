//! Hostile input through the layer: arbitrary header lines and bodies, and
//! arbitrary mutations of a validly signed request, never panic and always
//! get a well-formed answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{http_request, received, send, tools_call, Answer, Buyer, NOW};
use adcp_request::RequestVerifier;
use adcp_verify::request_policy::{FallbackCredential, VerifierCapability};
use adcp_verify::{DigestCoverage, FixedClock, MemoryReplayStore};
use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;

fn verifier(buyer: &Buyer) -> RequestVerifier {
    let capability = VerifierCapability::builder(DigestCoverage::Required)
        .required_for(["create_media_buy"])
        .warn_for(["update_media_buy"])
        .build()
        .unwrap();
    RequestVerifier::builder(
        Arc::new(buyer.keys.clone()),
        Arc::new(MemoryReplayStore::request()),
        capability,
    )
    .clock(Arc::new(FixedClock(NOW)))
    .max_body_bytes(4_096)
    .authenticator_fn(|parts, _| match parts.headers.get(http::header::AUTHORIZATION) {
        Some(v) if v == "Bearer good" => FallbackCredential::Valid,
        _ => FallbackCredential::Absent,
    })
    .build()
    .unwrap()
}

/// Every answer is one of the documented shapes.
fn check(answer: &Answer) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(answer.status, 200 | 400 | 401 | 413 | 503),
        "status {}",
        answer.status
    );
    if answer.status == 200 {
        prop_assert!(answer.reached_handler());
        return Ok(());
    }
    let code = answer.code().unwrap_or_default().to_owned();
    prop_assert!(!code.is_empty(), "{answer:?}");
    prop_assert!(answer.json["message"].is_string());
    prop_assert_eq!(answer.json.as_object().map(serde_json::Map::len), Some(2));
    match answer.status {
        401 if code == "unauthenticated" => prop_assert!(answer.challenges.is_empty()),
        401 => prop_assert_eq!(&answer.challenges, &vec![format!("Signature error=\"{code}\"")]),
        503 => prop_assert!(answer.retry_after.is_some() && answer.challenges.is_empty()),
        _ => prop_assert!(answer.challenges.is_empty()),
    }
    Ok(())
}

const NAMES: &[&str] = &[
    "signature",
    "signature-input",
    "content-type",
    "content-digest",
    "host",
    "authorization",
    "content-length",
    "x-anything",
];

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..80),
        "[ -~]{0,120}".prop_map(String::into_bytes),
        "sig1=:[A-Za-z0-9+/=_-]{0,100}:".prop_map(String::into_bytes),
        "sig1=\\([\" @a-z-]{0,60}\\);created=[0-9]{1,12};expires=[0-9]{1,12};nonce=\"[A-Za-z0-9_-]{0,30}\";keyid=\"[a-z0-9-]{0,20}\";alg=\"ed25519\";tag=\"adcp/request-signing/v1\""
            .prop_map(String::into_bytes),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        ("[a-z_/A-Z]{0,20}", "[a-z_]{0,20}").prop_map(|(method, name)| {
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"name": name, "arguments": {}}})
                .to_string()
                .into_bytes()
        }),
        Just(b"[{\"jsonrpc\":\"2.0\"}]".to_vec()),
        Just(vec![b'{'; 5_000]),
    ]
}

/// What to do to a validly signed request.
#[derive(Debug, Clone)]
enum Mutation {
    Remove(usize),
    Set(usize, Vec<u8>),
    Append(usize, Vec<u8>),
    FlipBody(usize),
    Path(String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..NAMES.len()).prop_map(Mutation::Remove),
        (0..NAMES.len(), value()).prop_map(|(i, v)| Mutation::Set(i, v)),
        (0..NAMES.len(), value()).prop_map(|(i, v)| Mutation::Append(i, v)),
        any::<usize>().prop_map(Mutation::FlipBody),
        "/[a-z/.%0-9:]{0,30}".prop_map(Mutation::Path),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_requests_get_well_formed_answers(
        method in prop_oneof![Just("POST"), Just("GET"), Just("PUT"), Just("post")],
        path in "/[a-z/.:%0-9_]{0,40}",
        headers in proptest::collection::vec((0..NAMES.len(), value()), 0..8),
        body in body(),
    ) {
        let rt = runtime();
        let buyer = Buyer::new();
        let mut request = http_request(method, &format!("https://seller.example.com{path}"), &[], Some(&body));
        for (i, v) in headers {
            if let Ok(v) = HeaderValue::from_bytes(&v) {
                request.headers_mut().append(HeaderName::from_static(NAMES[i]), v);
            }
        }
        let answer = rt.block_on(send(&verifier(&buyer), request));
        check(&answer)?;
    }

    #[test]
    fn mutated_signed_requests_get_well_formed_answers(
        operation in prop_oneof![Just("create_media_buy"), Just("update_media_buy"), Just("get_products")],
        mutations in proptest::collection::vec(mutation(), 0..4),
    ) {
        let rt = runtime();
        let buyer = Buyer::new();
        let body = tools_call(operation, json!({"idempotency_key": "hostile-1"}));
        let signed = rt.block_on(buyer.sign("https://seller.example.com/mcp", &body));
        let (mut parts, full) = received(&signed).into_parts();
        let mut bytes = signed.body().map(|b| b.as_bytes().to_vec()).unwrap_or_default();
        let _ = full;
        for m in mutations {
            match m {
                Mutation::Remove(i) => { parts.headers.remove(NAMES[i]); }
                Mutation::Set(i, v) => if let Ok(v) = HeaderValue::from_bytes(&v) {
                    parts.headers.insert(HeaderName::from_static(NAMES[i]), v);
                },
                Mutation::Append(i, v) => if let Ok(v) = HeaderValue::from_bytes(&v) {
                    parts.headers.append(HeaderName::from_static(NAMES[i]), v);
                },
                Mutation::FlipBody(at) => if !bytes.is_empty() {
                    let at = at % bytes.len();
                    bytes[at] ^= 0x20;
                },
                Mutation::Path(p) => if let Ok(uri) = p.parse() { parts.uri = uri; },
            }
        }
        let request = http::Request::from_parts(parts, http_body_util::Full::new(Bytes::from(bytes)));
        let answer = rt.block_on(send(&verifier(&buyer), request));
        check(&answer)?;
    }
}
