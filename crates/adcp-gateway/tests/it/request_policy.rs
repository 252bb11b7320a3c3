//! The request-signing suite's two policy files through a running
//! request-mode gateway: `body-integrity-policy.json` (17 cases, real
//! signatures made to each case's facts by `adcp_request::conformance`,
//! exactly as the seller layer's tests build them) and
//! `protocol-method-names.json` (declarations and exact-match cases, as
//! unsigned JSON-RPC calls).
//!
//! How a case's expected action maps onto the gateway, which has no
//! authenticator of its own and defers independent credentials to the
//! seller's server (the composition rule on the credential header,
//! `Authorization` by default):
//!
//! - `accept`: forwarded once, body unchanged; `X-Adcp-Signature:
//!   verified` with `X-Adcp-Verified-Agent` / `-Keyid` when the case's
//!   `authentication_source` is `signature`, else `unsigned` without
//!   identity headers (the credential is the seller's to judge).
//! - `reject`: the exact status and `WWW-Authenticate` code, nothing
//!   forwarded.
//! - `accept_with_warning` (a `warn_for` signature that fails, with a
//!   valid fallback credential): the credential header is present, so the
//!   request is forwarded marked `failed`, without identity. The same case
//!   without the header is refused with a plain `401` (no signature
//!   challenge), nothing forwarded.
//! - `reject_unauthenticated` (the same failure without a credential):
//!   refused with a plain `401`, nothing forwarded; with the credential
//!   header added it is forwarded marked `failed`, without identity.

use crate::request_mode::{memory_store, send_raw, serve, Answer, Seen, Seller};
use adcp_gateway::{GatewayOptions, RequestOptions};
use adcp_request::conformance::{
    body_integrity_case, protocol_method_call, requiring_methods, PolicyCase, POLICY_AGENT, POLICY_BEARER, POLICY_NOW,
    PROTOCOL_METHOD_URL,
};
use adcp_verify::request_policy::VerifierCapability;
use adcp_verify::{FixedClock, KeyResolver, StaticKeyResolver};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The public URL of every gateway here (the cases' seller).
const PUBLIC: &str = "https://seller.example.com/";

fn options(seller: &Seller, request: RequestOptions) -> GatewayOptions {
    let mut options = GatewayOptions::new(seller.url());
    options.clock = Some(Arc::new(FixedClock(POLICY_NOW)));
    options.public_url = Some(PUBLIC.parse().unwrap());
    options.request = Some(request);
    options
}

/// `headers` and `body` to `url` through a fresh gateway (and seller)
/// configured with `request` and trusting `keys`.
async fn through_gateway(
    keys: Arc<dyn KeyResolver>,
    request: RequestOptions,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> (Answer, Vec<Seen>) {
    let seller = Seller::start().await;
    let handle = serve(keys, memory_store().await, options(&seller, request)).await;
    let answer = send_raw(handle.local_addr(), "POST", url, headers, body).await;
    handle.shutdown().await.unwrap();
    (answer, seller.seen())
}

async fn run_case(case: &PolicyCase, headers: &[(String, String)]) -> (Answer, Vec<Seen>) {
    let mut request = RequestOptions::new(case.capability.clone());
    request.profile = case.profile.clone();
    assert_eq!(case.method, "POST", "{}", case.id);
    through_gateway(Arc::new(case.keys.clone()), request, &case.url, headers, &case.body).await
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).map(|v| v.to_str().unwrap())
}

/// Forwarded once, unchanged, with `marking` and identity headers only
/// for `verified`.
fn assert_forwarded(id: &str, case: &PolicyCase, answer: &Answer, seen: &[Seen], marking: &str) {
    assert_eq!(answer.status, 200, "{id}: {answer:?}");
    let [forwarded] = seen else {
        panic!("{id}: forwarded {} times", seen.len())
    };
    assert_eq!(forwarded.body, case.body, "{id}");
    assert_eq!(header(forwarded, "x-adcp-signature"), Some(marking), "{id}");
    let verified = marking == "verified";
    assert_eq!(
        header(forwarded, "x-adcp-verified-agent"),
        verified.then_some(POLICY_AGENT),
        "{id}"
    );
    assert_eq!(
        forwarded.headers.contains_key("x-adcp-verified-keyid"),
        verified,
        "{id}"
    );
}

/// A plain `401` without a signature challenge, nothing forwarded.
fn assert_unauthenticated(id: &str, answer: &Answer, seen: &[Seen]) {
    assert_eq!(answer.status, 401, "{id}: {answer:?}");
    assert!(
        !answer
            .header("www-authenticate")
            .iter()
            .any(|v| v.starts_with("Signature")),
        "{id}: {answer:?}"
    );
    assert!(seen.is_empty(), "{id}: forwarded");
}

fn with_credential(headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut headers = headers.to_vec();
    headers.push(("authorization".to_owned(), POLICY_BEARER.to_owned()));
    headers
}

fn without_credential(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("authorization"))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_integrity_policy_through_a_running_gateway() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/body-integrity-policy.json").unwrap();
    let cases = file["cases"].as_array().unwrap();
    let mut actions: BTreeMap<String, usize> = BTreeMap::new();
    for raw in cases {
        let case = body_integrity_case(raw).await.unwrap();
        let id = case.id.as_str();
        let expected = &raw["expected"];
        let action = expected["action"].as_str().unwrap();
        let (answer, seen) = run_case(&case, &case.headers).await;
        match action {
            "accept" => {
                let marking = if expected["authentication_source"] == "signature" {
                    "verified"
                } else {
                    "unsigned"
                };
                assert_eq!(
                    marking == "verified",
                    expected["verified_signer_identity"].as_bool().unwrap(),
                    "{id}"
                );
                assert_forwarded(id, &case, &answer, &seen, marking);
            }
            "accept_with_warning" => {
                assert_eq!(expected["authentication_source"], "fallback", "{id}");
                assert_forwarded(id, &case, &answer, &seen, "failed");
                let (answer, seen) = run_case(&case, &without_credential(&case.headers)).await;
                assert_unauthenticated(id, &answer, &seen);
            }
            "reject" => {
                let code = expected["error_code"].as_str().unwrap();
                let status = if code == "request_body_malformed" { 400 } else { 401 };
                answer
                    .check_rejected(code, status)
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                assert!(seen.is_empty(), "{id}: a rejected request was forwarded");
            }
            "reject_unauthenticated" => {
                assert_unauthenticated(id, &answer, &seen);
                let (answer, seen) = run_case(&case, &with_credential(&case.headers)).await;
                assert_forwarded(id, &case, &answer, &seen, "failed");
            }
            other => panic!("{id}: action {other}"),
        }
        *actions.entry(action.to_owned()).or_default() += 1;
    }
    assert_eq!(cases.len(), 17, "every case runs");
    let expected: BTreeMap<String, usize> = [
        ("accept", 3),
        ("accept_with_warning", 3),
        ("reject", 10),
        ("reject_unauthenticated", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(actions, expected);
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

/// An unsigned call of `method` through a gateway requiring `declared`.
async fn call(declared: Vec<&str>, method: &str) -> (Answer, Vec<Seen>) {
    let (headers, body) = protocol_method_call(method);
    let request = RequestOptions::new(requiring_methods(declared).unwrap());
    through_gateway(
        Arc::new(StaticKeyResolver::new()),
        request,
        PROTOCOL_METHOD_URL,
        &headers,
        &body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_method_names_through_a_running_gateway() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let file = adcp_vectors::load_json(&suite, "request-signing/protocol-method-names.json").unwrap();

    // Every valid declaration configures a gateway that requires a
    // signature for exactly that decoded method.
    let mut valid = 0;
    for family in file["valid_declarations"].as_array().unwrap() {
        let methods = strings(&family["methods"]);
        for method in &methods {
            let (answer, seen) = call(methods.clone(), method).await;
            answer
                .check_rejected("request_signature_required", 401)
                .unwrap_or_else(|e| panic!("{method}: {e}"));
            assert!(seen.is_empty(), "{method}: forwarded");
            valid += 1;
        }
    }
    assert_eq!(valid, 21);

    // Invalid declarations never configure a gateway: the capability is
    // refused before one can be built.
    let invalid = strings(&file["invalid_declarations"]);
    for name in &invalid {
        let block =
            json!({"supported": true, "covers_content_digest": "required", "protocol_methods_required_for": [name]});
        assert!(VerifierCapability::from_json(&block).is_err(), "{name}");
        assert!(requiring_methods([*name]).is_err(), "{name}");
    }
    assert_eq!(invalid.len(), 7);

    // Exact, case-sensitive matching on the decoded wire method: a match
    // is refused, anything else is forwarded unsigned.
    let cases = file["exact_match_cases"].as_array().unwrap();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let (answer, seen) = call(
            strings(&case["declared_methods"]),
            case["wire_method"].as_str().unwrap(),
        )
        .await;
        if case["matches"].as_bool().unwrap() {
            answer
                .check_rejected("request_signature_required", 401)
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(seen.is_empty(), "{id}: forwarded");
        } else {
            assert_eq!(answer.status, 200, "{id}: {answer:?}");
            let [forwarded] = seen.as_slice() else {
                panic!("{id}: forwarded {} times", seen.len())
            };
            assert_eq!(header(forwarded, "x-adcp-signature"), Some("unsigned"), "{id}");
        }
    }
    assert_eq!(cases.len(), 8);
}
