//! `adcp-sig gov verify` / `gov sign` end to end, and the governance
//! vectors under `adcp-sig conformance`: the published tokens, their codes
//! and steps, `jti` replay kept in a SQLite store across invocations,
//! revocation lists, brand.json discovery from a local HTTPS server, and
//! byte-identical issuance with the published test key.

use crate::support::jwks as common;
use crate::support::test_network;
use crate::support::{adcp_sig, adcp_sig_async};
use adcp_jws::{issue, GovernanceClaims};
use adcp_sign::{Algorithm, SoftwareSigner};
use serde_json::{json, Value};
use std::path::PathBuf;

const NOW: &str = "1785931200";

/// A file of its own for every call (tests run in parallel).
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("gov-{}-{n}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn p(path: &std::path::Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// The governance vector file, or `None` (skip) outside CI.
fn vectors() -> Option<Value> {
    let suite = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}"))?;
    Some(adcp_vectors::load_json(&suite, "governance/governance-authorization.json").unwrap())
}

fn case<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["signed_jws"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()
}

/// Files for the vectors' defaults: the public JWKS and the payload.
fn fixture_files(doc: &Value) -> (PathBuf, PathBuf) {
    let mut public = doc["signed_jws"]["test_key"].clone();
    public.as_object_mut().unwrap().remove("_private_d_for_test_only");
    let jwks = scratch("jwks.json", json!({"keys": [public]}).to_string().as_bytes());
    let payload = scratch(
        "payload.json",
        doc["signed_jws"]["verification_defaults"]["payload"]
            .to_string()
            .as_bytes(),
    );
    (jwks, payload)
}

fn verify_args(token: &str, jwks: &std::path::Path, payload: &std::path::Path, phase: &str) -> Vec<String> {
    [
        "gov",
        "verify",
        token,
        "--payload",
        &p(payload),
        "--task",
        "create_media_buy",
        "--audience",
        "https://seller.example.com/sales",
        "--caller",
        "https://buyer.example.com",
        "--phase",
        phase,
        "--amount",
        "1",
        "--currency",
        "USD",
        "--jwks",
        &p(jwks),
        "--now",
        NOW,
        "--json",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn run(args: &[String]) -> (Option<i32>, Value) {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = adcp_sig(&refs);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("not JSON: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

#[test]
fn gov_verify_accepts_and_rejects_published_tokens_with_code_and_step() {
    let Some(doc) = vectors() else { return };
    let (jwks, payload) = fixture_files(&doc);
    let token = scratch(
        "token",
        format!(
            "{}\n",
            case(&doc, "valid-exact-authorization")["compact_jws"].as_str().unwrap()
        )
        .as_bytes(),
    );
    let (code, report) = run(&verify_args(&p(&token), &jwks, &payload, "intent"));
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["error_code"], Value::Null);
    assert_eq!(report["brand_json_checked"], false, "--jwks: step 13 not performed");

    for (id, error, step) in [
        ("audience-mismatch", "governance_token_not_applicable", 8),
        ("unknown-critical-header", "governance_token_invalid", 4),
        ("signature-tampered", "governance_token_invalid", 7),
        ("token-expired", "governance_token_expired", 9),
        (
            "authorized-payload-hash-mismatch",
            "governance_token_not_applicable",
            12,
        ),
    ] {
        let token = case(&doc, id)["compact_jws"].as_str().unwrap();
        let (code, report) = run(&verify_args(token, &jwks, &payload, "intent"));
        assert_eq!(code, Some(1), "{id}: {report}");
        assert_eq!(report["ok"], false, "{id}");
        assert_eq!(report["error_code"], error, "{id}");
        assert_eq!(report["step"], step, "{id}");
    }

    // The gate is the service's: an intent token is not a purchase token.
    let token = case(&doc, "valid-exact-authorization")["compact_jws"].as_str().unwrap();
    let (code, report) = run(&verify_args(token, &jwks, &payload, "purchase"));
    assert_eq!(
        (code, report["error_code"].as_str()),
        (Some(1), Some("governance_token_not_applicable"))
    );
    assert_eq!(report["step"], 11);

    // Text form.
    let mut args = verify_args(token, &jwks, &payload, "intent");
    args.retain(|a| a != "--json");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = adcp_sig(&refs);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text.contains("step 13 (brand.json cross-check): not performed"),
        "{text}"
    );
}

#[test]
fn gov_verify_store_keeps_the_jti_across_invocations() {
    let Some(doc) = vectors() else { return };
    let (jwks, payload) = fixture_files(&doc);
    let db = scratch("replay.sqlite", b"");
    std::fs::remove_file(&db).unwrap();
    let token = case(&doc, "valid-exact-authorization")["compact_jws"].as_str().unwrap();
    let mut args = verify_args(token, &jwks, &payload, "intent");
    args.extend(["--store".to_owned(), format!("sqlite:{}", p(&db))]);
    let (code, report) = run(&args);
    assert_eq!(code, Some(0), "{report}");
    let (code, report) = run(&args);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["error_code"], "governance_token_replayed");
    assert_eq!(report["step"], 15);
}

#[test]
fn gov_verify_usage_errors_exit_2() {
    let out = adcp_sig(&["gov", "verify", "x.y.z", "--payload", "/nonexistent", "--task", "t"]);
    assert_eq!(out.status.code(), Some(2));
    let Some(doc) = vectors() else { return };
    let (_, payload) = fixture_files(&doc);
    // Neither --jwks nor --buyer-brand-json.
    let out = adcp_sig(&[
        "gov",
        "verify",
        "x.y.z",
        "--payload",
        &p(&payload),
        "--task",
        "t",
        "--audience",
        "a",
        "--caller",
        "c",
        "--phase",
        "intent",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// Signs `claims` (the published claims of a case, edited) with the test
/// key through `gov sign`.
fn gov_sign(doc: &Value, claims: &Value, payload: Option<&std::path::Path>) -> std::process::Output {
    let key = scratch("key.json", doc["signed_jws"]["test_key"].to_string().as_bytes());
    let claims = scratch("claims.json", claims.to_string().as_bytes());
    let mut args = vec![
        "gov".to_owned(),
        "sign".to_owned(),
        "--key".to_owned(),
        p(&key),
        "--claims".to_owned(),
        p(&claims),
    ];
    if let Some(payload) = payload {
        args.extend(["--payload".to_owned(), p(payload)]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    adcp_sig(&refs)
}

#[test]
fn gov_sign_reproduces_the_published_token_byte_for_byte() {
    let Some(doc) = vectors() else { return };
    let (_, payload) = fixture_files(&doc);
    let published = case(&doc, "valid-exact-authorization");
    // The hash is computed from --payload, not taken from the file.
    let mut claims = published["claims"].clone();
    claims.as_object_mut().unwrap().remove("authorized_payload_hash");
    let out = gov_sign(&doc, &claims, Some(&payload));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        published["compact_jws"].as_str().unwrap()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("TEST key"));

    // A key of another purpose is refused (exit 2).
    let mut key = doc["signed_jws"]["test_key"].clone();
    key["adcp_use"] = "request-signing".into();
    let key = scratch("request-key.json", key.to_string().as_bytes());
    let claims = scratch("claims.json", published["claims"].to_string().as_bytes());
    let out = adcp_sig(&["gov", "sign", "--key", &p(&key), "--claims", &p(&claims)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("governance-signing"));
}

#[test]
fn gov_execution_phase_needs_a_fresh_revocation_list() {
    let Some(doc) = vectors() else { return };
    let (jwks, payload) = fixture_files(&doc);
    let mut claims = case(&doc, "valid-exact-authorization")["claims"].clone();
    claims["phase"] = "purchase".into();
    claims["jti"] = "gov-cli-purchase".into();
    let out = gov_sign(&doc, &claims, None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();

    let (code, report) = run(&verify_args(&token, &jwks, &payload, "purchase"));
    assert_eq!(code, Some(1));
    assert_eq!(
        (report["error_code"].as_str(), report["step"].as_u64()),
        (Some("governance_revocation_stale"), Some(14))
    );

    let list = |jtis: Value, kids: Value, next_update: &str| {
        scratch(
            "revocations.json",
            json!({"version": 1, "issuer": "https://gov.example.com", "updated": "2026-08-05T11:55:00Z",
                   "next_update": next_update, "revoked_jtis": jtis, "revoked_kids": kids})
            .to_string()
            .as_bytes(),
        )
    };
    let with = |path: &PathBuf| {
        let mut args = verify_args(&token, &jwks, &payload, "purchase");
        args.extend(["--revocation-list".to_owned(), p(path)]);
        run(&args)
    };
    let fresh = list(json!([]), json!([]), "2026-08-05T12:10:00Z");
    assert_eq!(with(&fresh).0, Some(0));
    let by_jti = list(json!(["gov-cli-purchase"]), json!([]), "2026-08-05T12:10:00Z");
    assert_eq!(with(&by_jti).1["error_code"], "governance_token_revoked");
    let by_kid = list(json!([]), json!(["test-gov-2026"]), "2026-08-05T12:10:00Z");
    assert_eq!(with(&by_kid).1["error_code"], "governance_token_revoked");
    // next_update two hours ago (interval at its 1-minute floor): past the
    // 4-interval grace.
    let stale = list(json!([]), json!([]), "2026-08-05T10:00:00Z");
    assert_eq!(with(&stale).1["error_code"], "governance_revocation_stale");
}

#[test]
fn gov_conformance_counts_governance_vectors() {
    if vectors().is_none() {
        return;
    }
    let out = adcp_sig(&["conformance"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap();
    // 188 request/webhook outcomes (154 vector files, 34 HMAC cases), 37
    // governance (3 payload hashes, 7 authorization decisions, 27 JWS).
    assert_eq!(last, "225 passed, 0 failed (188 request/webhook, 37 governance)");
}

/// brand.json mode against a local HTTPS server: the governance entry whose
/// `url` is `iss` gives the keys (step 13 performed); an `iss` outside the
/// buyer's brand.json, or a non-governance entry, is not authorized.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gov_verify_discovers_keys_through_the_buyer_brand_json() {
    let s = common::Server::start(&["buyer.example", "gov.example"]).await;
    let iss = s.url("gov.example", "/governance");
    let signer = SoftwareSigner::generate(Algorithm::Ed25519, "gov-cli-1").unwrap();
    let mut jwk = signer.public_jwk().unwrap().to_json();
    jwk["adcp_use"] = "governance-signing".into();
    s.set("/gov-jwks.json", common::ok(json!({"keys": [jwk]}).to_string()));
    let brand = |agent_type: &str| {
        json!({"agents": [{"url": iss, "type": agent_type, "jwks_uri": s.url("gov.example", "/gov-jwks.json")}]})
            .to_string()
    };
    s.set("/.well-known/brand.json", common::ok(brand("governance")));
    let payload = json!({"idempotency_key": "cli-brand", "amount": 1});
    let claims = |jti: &str, iss: &str| {
        GovernanceClaims::from_json(&json!({
            "iss": iss, "sub": "s", "plan_hash": "p", "aud": "https://seller.example.com/sales",
            "iat": 1_785_931_200, "exp": 1_785_932_100, "jti": jti, "phase": "intent",
            "caller": "https://buyer.example.com", "check_id": "c",
            "authorized_task": "create_media_buy", "authorized_payload_hash": adcp_jws::payload_hash(&payload),
        }))
        .unwrap()
    };
    let payload_file = scratch("brand-payload.json", payload.to_string().as_bytes());
    let ca = scratch("ca.der", &s.ca_der);
    let args = |token: String| {
        let mut a: Vec<String> = [
            "gov",
            "verify",
            &token,
            "--payload",
            &p(&payload_file),
            "--task",
            "create_media_buy",
            "--audience",
            "https://seller.example.com/sales",
            "--caller",
            "https://buyer.example.com",
            "--phase",
            "intent",
            "--buyer-brand-json",
            &s.url("buyer.example", "/.well-known/brand.json"),
            "--now",
            NOW,
            "--json",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        a.extend(test_network::flags(&ca, &s.names));
        a
    };
    let out = adcp_sig_async(args(issue(&claims("brand-1", &iss), &signer).await.unwrap())).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["brand_json_checked"], true);

    // A sibling tenant on the same origin is not the buyer's agent.
    let out = adcp_sig_async(args(
        issue(&claims("brand-2", &s.url("gov.example", "/other-tenant")), &signer)
            .await
            .unwrap(),
    ))
    .await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(
        (report["error_code"].as_str(), report["step"].as_u64()),
        (Some("governance_issuer_not_authorized"), Some(13))
    );

    // The entry exists but is not a governance agent.
    s.set("/.well-known/brand.json", common::ok(brand("buying")));
    let out = adcp_sig_async(args(issue(&claims("brand-3", &iss), &signer).await.unwrap())).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(
        (report["error_code"].as_str(), report["step"].as_u64()),
        (Some("governance_issuer_not_authorized"), Some(13))
    );
}
