//! Property tests: duplicate-key input is rejected at any depth and clean
//! input is kept byte for byte; serialize-once bodies; nonces and
//! idempotency keys from any random bytes.

use std::collections::BTreeSet;
use std::sync::Mutex;

use adcp_sign::{
    Body, FixedClock, HttpSigner, IdempotencyKey, Nonce, RandomSource, RandomnessUnavailable, SoftwareSigner,
    WebhookEvent,
};
use proptest::prelude::*;

/// A JSON tree whose objects may repeat member names on purpose.
#[derive(Debug, Clone)]
enum Node {
    Leaf(&'static str),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    fn write(&self, out: &mut String, spaced: bool) {
        let (comma, colon) = if spaced { (", ", ": ") } else { (",", ":") };
        match self {
            Node::Leaf(text) => out.push_str(text),
            Node::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    item.write(out, spaced);
                }
                out.push(']');
            }
            Node::Object(members) => {
                out.push('{');
                for (i, (name, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    out.push('"');
                    out.push_str(name);
                    out.push('"');
                    out.push_str(colon);
                    value.write(out, spaced);
                }
                out.push('}');
            }
        }
    }

    /// The names that repeat within one object, anywhere in the tree.
    fn duplicates(&self, found: &mut Vec<String>) {
        match self {
            Node::Leaf(_) => {}
            Node::Array(items) => items.iter().for_each(|i| i.duplicates(found)),
            Node::Object(members) => {
                let mut seen = BTreeSet::new();
                let mut reported = BTreeSet::new();
                for (name, value) in members {
                    if !seen.insert(name.clone()) && reported.insert(name.clone()) {
                        found.push(name.clone());
                    }
                    value.duplicates(found);
                }
            }
        }
    }
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        Just(Node::Leaf("1")),
        Just(Node::Leaf("-2.5e3")),
        Just(Node::Leaf("true")),
        Just(Node::Leaf("null")),
        Just(Node::Leaf("\"v\"")),
        Just(Node::Leaf("\"caf\\u00e9 \\\"q\\\"\"")),
    ];
    leaf.prop_recursive(6, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Node::Array),
            // Names from a small alphabet, so repeats are common.
            prop::collection::vec(("[a-c]{1,2}", inner), 0..5).prop_map(Node::Object),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn duplicate_keys_are_rejected_at_any_depth_and_clean_input_is_kept(tree in node(), spaced in any::<bool>()) {
        let mut text = String::new();
        tree.write(&mut text, spaced);
        let mut duplicates = Vec::new();
        tree.duplicates(&mut duplicates);
        match Body::from_json_bytes(text.clone()) {
            Ok(body) => {
                prop_assert!(duplicates.is_empty(), "accepted {} with duplicates {:?}", text, duplicates);
                prop_assert_eq!(body.as_str(), text.as_str());
            }
            Err(err) => {
                prop_assert_eq!(err.code(), "duplicate_key_input", "{}", text);
                prop_assert!(!duplicates.is_empty(), "rejected clean input {}", text);
                let report = err.duplicate_keys().unwrap();
                prop_assert!(report.names().len() <= 4);
                for name in report.names() {
                    prop_assert!(duplicates.contains(name), "{} not among {:?}", name, duplicates);
                }
            }
        }
    }

    #[test]
    fn serialized_bodies_are_compact_and_what_serde_json_writes(tree in node()) {
        let mut text = String::new();
        tree.write(&mut text, false);
        let mut duplicates = Vec::new();
        tree.duplicates(&mut duplicates);
        prop_assume!(duplicates.is_empty());
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let body = Body::json(&value).unwrap();
        prop_assert_eq!(body.as_str(), serde_json::to_string(&value).unwrap());
        prop_assert!(!body.as_str().contains(", ") && !body.as_str().contains("\": "));
    }

    #[test]
    fn idempotency_keys_are_uuid_v4_for_any_random_bytes(bytes in any::<[u8; 16]>()) {
        let key = IdempotencyKey::generate_with(&Replay::new(&bytes)).unwrap();
        let text = key.as_str();
        prop_assert_eq!(text.len(), 36);
        for (i, c) in text.char_indices() {
            if matches!(i, 8 | 13 | 18 | 23) {
                prop_assert_eq!(c, '-');
            } else {
                prop_assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
            }
        }
        prop_assert_eq!(&text[14..15], "4");
        prop_assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"));
        // A generated key always passes the schema pattern, except for the
        // one impossible-in-practice all-equal case, which cannot happen:
        // the version nibble and the hyphens differ from the rest.
        prop_assert!(IdempotencyKey::new(text).is_ok());
    }

    #[test]
    fn generated_nonces_parse_back(bytes in any::<[u8; 16]>()) {
        let nonce = Nonce::generate(&Replay::new(&bytes)).unwrap();
        prop_assert_eq!(nonce.as_str().len(), 22);
        prop_assert_eq!(Nonce::parse(nonce.as_str()).unwrap(), nonce);
    }
}

/// Hands out the given bytes, then fails.
struct Replay(Mutex<Vec<u8>>);

impl Replay {
    fn new(bytes: &[u8]) -> Self {
        Self(Mutex::new(bytes.to_vec()))
    }
}

impl RandomSource for Replay {
    fn fill(&self, dest: &mut [u8]) -> Result<(), RandomnessUnavailable> {
        let mut left = self.0.lock().unwrap();
        if left.len() < dest.len() {
            return Err(RandomnessUnavailable);
        }
        let rest = left.split_off(dest.len());
        dest.copy_from_slice(&left);
        *left = rest;
        Ok(())
    }
}

#[test]
fn randomness_is_injected_and_its_failure_is_an_error() {
    // Deterministic nonces and keys from a scripted source...
    let source = Replay::new(&[0xab; 32]);
    let key = IdempotencyKey::generate_with(&source).unwrap();
    assert_eq!(key.as_str(), "abababab-abab-4bab-abab-abababababab");
    assert_eq!(Nonce::generate(&source).unwrap().as_str(), "q6urq6urq6urq6urq6urqw");
    // ...and a failing source is `randomness_unavailable`, retryable.
    let err = Nonce::generate(&source).unwrap_err();
    assert_eq!(err.code(), "randomness_unavailable");
    assert!(err.is_retryable());
    assert_eq!(
        WebhookEvent::new_with(&serde_json::json!({}), &source)
            .unwrap_err()
            .code(),
        "randomness_unavailable"
    );

    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let key = SoftwareSigner::generate(adcp_sign::Algorithm::Ed25519, "k").unwrap();
    let signer = HttpSigner::webhook(key)
        .unwrap()
        .with_clock(FixedClock(100))
        .with_random(Replay::new(&[7; 16]));
    let body = Body::from_json_bytes("{}").unwrap();
    let request = adcp_sign::UnsignedRequest::post("https://a.example/", &body);
    let signed = rt.block_on(signer.sign(&request)).unwrap();
    assert_eq!(signed.nonce().as_str(), "BwcHBwcHBwcHBwcHBwcHBw");
    assert_eq!((signed.created(), signed.expires()), (100, 400));
    assert_eq!(
        rt.block_on(signer.sign(&request)).unwrap_err().code(),
        "randomness_unavailable"
    );
}

#[test]
fn an_event_is_serialized_once_and_reused_for_every_attempt() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let key = SoftwareSigner::generate(adcp_sign::Algorithm::Ed25519, "k").unwrap();
    let signer = HttpSigner::webhook(key).unwrap();
    let event = WebhookEvent::new(&serde_json::json!({"status": "completed", "result": {"id": "mb_1"}})).unwrap();
    let attempts: Vec<_> = (0..3)
        .map(|_| {
            rt.block_on(signer.sign_webhook("https://buyer.example/hook", &event))
                .unwrap()
        })
        .collect();
    let nonces: BTreeSet<&str> = attempts.iter().map(|a| a.nonce().as_str()).collect();
    assert_eq!(nonces.len(), 3, "a fresh nonce per attempt");
    for attempt in &attempts {
        assert_eq!(attempt.body().unwrap().as_str(), event.body().as_str());
        assert_eq!(attempt.header("Content-Digest"), attempts[0].header("Content-Digest"));
    }
    let parsed: serde_json::Value = serde_json::from_str(event.body().as_str()).unwrap();
    assert_eq!(parsed["idempotency_key"], event.idempotency_key().as_str());
    assert!(event.body().as_str().starts_with("{\"idempotency_key\":\""));

    // Rebuilding from a kept key gives the same bytes.
    let again = WebhookEvent::with_idempotency_key(
        event.idempotency_key().clone(),
        &serde_json::json!({"status": "completed", "result": {"id": "mb_1"}}),
    )
    .unwrap();
    assert_eq!(again.body(), event.body());
    // And so does reading the bytes back.
    let read = WebhookEvent::from_json_bytes(event.body().as_str()).unwrap();
    assert_eq!(read.idempotency_key(), event.idempotency_key());
}
