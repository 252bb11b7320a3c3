//! `adcp-sig keygen` and `adcp-sig sign` end to end: what `sign` emits is
//! accepted by `adcp-sig verify`, the webhook vectors are reproduced byte
//! for byte, and refusals have their exit codes and error identifiers.

use crate::support::{adcp_sig, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under the test target's scratch space.
fn scratch() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "sign_cli-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `keygen` into `dir`: (private JWK file, JWKS file).
fn keygen(dir: &Path, alg: &str, kid: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{kid}.jwk"));
    let jwks = dir.join(format!("{kid}.jwks.json"));
    let out = adcp_sig(&[
        "keygen",
        "--alg",
        alg,
        "--kid",
        kid,
        "--out-private",
        path_str(&private),
        "--out-jwks",
        path_str(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "nothing on stdout when both files are written");
    (private, jwks)
}

const NOW: &str = "1776520800";

#[test]
fn what_sign_emits_verify_accepts() {
    let dir = scratch();
    let urls = [
        // IDN hosts, U-label and A-label, with and without a root dot.
        "https://bücher.example/adcp/webhook",
        "https://xn--bcher-kva.example./adcp/webhook",
        "https://MÜNCHEN.de/hook",
        // Default and explicit ports.
        "https://buyer.example.com:443/hook",
        "http://buyer.example.com:80/hook",
        "https://buyer.example.com:8443/hook",
        "http://127.0.0.1:8080/hook",
        "https://[2001:DB8::1]:443/hook",
        // Dot segments.
        "https://buyer.example.com/a/./b/../c/hook",
        "https://buyer.example.com/a/%2E%2E/hook",
        // Percent-encoding, raw non-ASCII in the path.
        "https://buyer.example.com/op_%e2%98%83/%7euser/a%2fb",
        "https://buyer.example.com/café/hook",
        // Queries, preserved byte for byte; a fragment is dropped.
        "https://buyer.example.com/hook?b=2&a=1&c=3",
        "https://buyer.example.com/hook?x=%7e&y=+&z=%2f&q=caf%c3%a9",
        "https://buyer.example.com/hook?#frag",
    ];
    let body = r#"{"idempotency_key":"whk_01HW9D3H8FZP2N6R8T0V4X6Z9B","task_id":"task_456","status":"completed"}"#;
    for (alg, kid) in [("ed25519", "rt-ed25519"), ("es256", "rt-es256")] {
        let (key, jwks) = keygen(&dir, alg, kid);
        for profile in ["webhook", "request", "request-legacy"] {
            for (i, url) in urls.iter().enumerate() {
                let out = adcp_sig(&[
                    "sign",
                    "--profile",
                    profile,
                    "--url",
                    url,
                    "--body",
                    body,
                    "--key",
                    path_str(&key),
                    "--created",
                    NOW,
                ]);
                assert_eq!(out.status.code(), Some(0), "{profile} {url}: {}", stderr(&out));
                let signed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
                let expected = adcp_canon::canonicalize(url).unwrap();
                assert_eq!(signed["url"], expected.as_str(), "{url}");
                assert_eq!(signed["method"], "POST");
                assert_eq!(signed["body"], body);
                let file = dir.join(format!("{kid}-{profile}-{i}.json"));
                std::fs::write(&file, stdout(&out)).unwrap();

                let verify = if profile == "request-legacy" {
                    vec!["verify", "--profile", profile, "--covers-content-digest", "required"]
                } else {
                    vec!["verify", "--profile", profile]
                };
                let mut args = verify;
                args.extend([
                    "--request",
                    path_str(&file),
                    "--jwks",
                    path_str(&jwks),
                    "--now",
                    NOW,
                    "--json",
                ]);
                let out = adcp_sig(&args);
                let verdict: Value = serde_json::from_str(stdout(&out).trim())
                    .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
                assert_eq!(verdict["ok"], true, "{alg} {profile} {url}: {verdict}");
                assert_eq!(out.status.code(), Some(0));
                assert_eq!(verdict["keyid"], kid);
                assert_eq!(verdict["target_uri"], expected.as_str());
            }
        }
    }
}

#[test]
fn a_request_without_a_body_and_a_forbidden_digest_endpoint() {
    let dir = scratch();
    let (key, jwks) = keygen(&dir, "ed25519", "nobody");
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "request",
        "--method",
        "GET",
        "--url",
        "https://seller.example.com/tasks/1",
        "--key",
        path_str(&key),
        "--created",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let signed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(signed["body"], Value::Null);
    let headers = signed["headers"].as_object().unwrap();
    assert_eq!(headers.len(), 2, "Signature and Signature-Input only: {headers:?}");
    assert!(signed["headers"]["Signature-Input"]
        .as_str()
        .unwrap()
        .starts_with(r#"sig1=("@method" "@target-uri" "@authority");"#));
    let file = dir.join("get.json");
    std::fs::write(&file, stdout(&out)).unwrap();
    let out = adcp_sig(&[
        "verify",
        "--profile",
        "request",
        "--request",
        path_str(&file),
        "--jwks",
        path_str(&jwks),
        "--now",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // A legacy `forbidden` endpoint: no content-digest at all.
    let body_file = dir.join("body.json");
    std::fs::write(&body_file, r#"{"plan_id":"plan_001"}"#).unwrap();
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "request-legacy",
        "--covers-content-digest",
        "forbidden",
        "--url",
        "https://seller.example.com/adcp/create_media_buy",
        "--body-file",
        path_str(&body_file),
        "--key",
        path_str(&key),
        "--created",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let signed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(signed["headers"].get("Content-Digest").is_none());
    assert_eq!(signed["body"], r#"{"plan_id":"plan_001"}"#);
    let file = dir.join("forbidden.json");
    std::fs::write(&file, stdout(&out)).unwrap();
    let out = adcp_sig(&[
        "verify",
        "--profile",
        "request-legacy",
        "--covers-content-digest",
        "forbidden",
        "--request",
        path_str(&file),
        "--jwks",
        path_str(&jwks),
        "--now",
        NOW,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// A private JWK file for the suite's Ed25519 webhook test key: its
/// published test-only `_private_d_for_test_only` as `d`.
fn vector_key(dir: &Path, suite: &Path) -> PathBuf {
    let keys = adcp_vectors::load_json(suite, "webhook-signing/keys.json").unwrap();
    let mut jwk = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == "test-ed25519-webhook-2026")
        .unwrap()
        .clone();
    let object = jwk.as_object_mut().unwrap();
    let d = object.remove("_private_d_for_test_only").unwrap();
    object.insert("d".into(), d);
    let path = dir.join("test-ed25519-webhook-2026.jwk");
    std::fs::write(&path, jwk.to_string()).unwrap();
    path
}

#[test]
fn the_webhook_vectors_are_reproduced_through_the_cli() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let dir = scratch();
    let key = vector_key(&dir, &suite);
    for name in [
        "001-basic-post.json",
        "004-default-port-stripped.json",
        "005-percent-encoded-path.json",
        "006-query-byte-preserved.json",
    ] {
        let vector = adcp_vectors::load_json(&suite, &format!("webhook-signing/positive/{name}")).unwrap();
        let request = adcp_vectors::VectorRequest::from_json(&vector["request"]).unwrap();
        let header = |n: &str| {
            request
                .headers
                .iter()
                .find(|(h, _)| h.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        let input = adcp_sigbase::SignatureInput::parse(header("Signature-Input").as_bytes()).unwrap();
        let params = input.require("sig1").unwrap();
        let created = params.created().unwrap().to_string();
        let expires = params.expires().unwrap().to_string();
        let out = adcp_sig(&[
            "sign",
            "--profile",
            "webhook",
            "--url",
            &request.url,
            "--body",
            request.body.as_deref().unwrap(),
            "--content-type",
            &header("Content-Type"),
            "--key",
            path_str(&key),
            "--created",
            &created,
            "--expires",
            &expires,
            "--nonce",
            params.nonce().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let signed: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(signed["headers"]["Signature"], header("Signature"), "{name}");
        assert_eq!(
            signed["headers"]["Signature-Input"],
            header("Signature-Input"),
            "{name}"
        );
        assert_eq!(signed["headers"]["Content-Digest"], header("Content-Digest"), "{name}");
    }
}

#[test]
fn refusals_have_error_identifiers_and_exit_codes() {
    let dir = scratch();
    let (key, jwks) = keygen(&dir, "ed25519", "refusals");
    let url = "https://buyer.example.com/hook";
    let sign = |extra: &[&str]| {
        let mut args = vec!["sign", "--url", url, "--key", path_str(&key)];
        args.extend(extra);
        adcp_sig(&args)
    };
    let refused = |out: &Output, code: &str| {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
        assert_eq!(stdout(out), "", "nothing signed is printed");
        assert!(stderr(out).contains(code), "{code}: {}", stderr(out));
    };
    refused(
        &sign(&[
            "--profile",
            "webhook",
            "--body",
            r#"{"packages":[{"id":"a","id":"b"}]}"#,
        ]),
        "duplicate_key_input",
    );
    refused(&sign(&["--profile", "webhook", "--body", "{,}"]), "invalid_json_input");
    refused(
        &sign(&[
            "--profile",
            "webhook",
            "--body",
            "{}",
            "--created",
            "1000",
            "--expires",
            "1301",
        ]),
        "validity_too_long",
    );
    refused(
        &sign(&["--profile", "webhook", "--body", "{}", "--nonce", "short"]),
        "nonce_invalid",
    );
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        "https://a..b/",
        "--body",
        "{}",
        "--key",
        path_str(&key),
    ]);
    refused(&out, "target_uri_malformed");
    refused(&sign(&["--profile", "request", "--method", "post"]), "method_invalid");
    // A public JWKS (or JWK) is not a signing key.
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        url,
        "--body",
        "{}",
        "--key",
        path_str(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let public = dir.join("public.jwk");
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&jwks).unwrap()).unwrap();
    std::fs::write(&public, set["keys"][0].to_string()).unwrap();
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        url,
        "--body",
        "{}",
        "--key",
        path_str(&public),
    ]);
    refused(&out, "private_key_missing");

    // Usage errors: exit 2.
    let usage = |out: &Output| assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    usage(&sign(&["--profile", "webhook"]));
    usage(&sign(&[
        "--profile",
        "webhook",
        "--body",
        "{}",
        "--body-file",
        "x.json",
    ]));
    usage(&sign(&[
        "--profile",
        "webhook",
        "--body",
        "{}",
        "--covers-content-digest",
        "forbidden",
    ]));
    usage(&sign(&[
        "--profile",
        "webhook",
        "--body-file",
        path_str(&dir.join("missing.json")),
    ]));
    usage(&adcp_sig(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        url,
        "--body",
        "{}",
        "--key",
        "/nonexistent.jwk",
    ]));
}

#[test]
fn keygen_writes_safe_files_and_prints_otherwise() {
    let dir = scratch();
    let (private, jwks) = keygen(&dir, "es256", "kg-1");
    let private_json: Value = serde_json::from_str(&std::fs::read_to_string(&private).unwrap()).unwrap();
    assert_eq!(private_json["kty"], "EC");
    assert_eq!(private_json["alg"], "ES256");
    assert!(private_json["d"].is_string());
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&jwks).unwrap()).unwrap();
    let public = &set["keys"][0];
    assert_eq!(public["kid"], "kg-1");
    assert_eq!(public["use"], "sig");
    assert_eq!(public["key_ops"], serde_json::json!(["verify"]));
    assert_eq!(public["adcp_use"], "request-signing");
    assert!(public.get("d").is_none());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "private key readable by others: {mode:o}");
    }

    // Never overwritten, and nothing written when one target exists.
    let fresh = dir.join("fresh.jwk");
    let out = adcp_sig(&[
        "keygen",
        "--alg",
        "ed25519",
        "--kid",
        "kg-2",
        "--out-private",
        path_str(&fresh),
        "--out-jwks",
        path_str(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("exists"), "{}", stderr(&out));
    assert!(!fresh.exists());

    // Without files: the private JWK, then the JWKS, one per line.
    let out = adcp_sig(&["keygen", "--alg", "ed25519", "--kid", "kg-3"]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["kty"], "OKP");
    assert!(lines[0]["d"].is_string());
    assert_eq!(lines[1]["keys"][0]["alg"], "EdDSA");
    assert!(lines[1]["keys"][0].get("d").is_none());

    // A kid that cannot be a keyid.
    let out = adcp_sig(&["keygen", "--alg", "ed25519", "--kid", "bad\u{e9}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("key_id_invalid"));
}

#[test]
fn keygen_purpose_sets_adcp_use_and_notes_the_deprecated_one() {
    let dir = scratch();
    // Default: request-signing, no note.
    let out = adcp_sig(&["keygen", "--alg", "ed25519", "--kid", "kp-1"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[1]["keys"][0]["adcp_use"], "request-signing");

    let out = adcp_sig(&[
        "keygen",
        "--alg",
        "es256",
        "--kid",
        "kp-2",
        "--purpose",
        "request-signing",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");

    // webhook-signing: published as such (private JWK too, so `sign` and
    // `activate` keep it), with a deprecation note on stderr.
    let private = dir.join("wh.jwk");
    let jwks = dir.join("wh.jwks.json");
    let out = adcp_sig(&[
        "keygen",
        "--alg",
        "ed25519",
        "--kid",
        "kp-3",
        "--purpose",
        "webhook-signing",
        "--out-private",
        path_str(&private),
        "--out-jwks",
        path_str(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let note = stderr(&out);
    assert!(
        note.contains("deprecated") && note.contains("must still accept"),
        "{note}"
    );
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&jwks).unwrap()).unwrap();
    assert_eq!(set["keys"][0]["adcp_use"], "webhook-signing");
    let private_json: Value = serde_json::from_str(&std::fs::read_to_string(&private).unwrap()).unwrap();
    assert_eq!(private_json["adcp_use"], "webhook-signing");

    // It still signs webhooks, and the webhook verifier accepts it; request
    // signing refuses it.
    let body = r#"{"idempotency_key":"whk_purpose_0001","task_id":"t1","status":"completed"}"#;
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "webhook",
        "--url",
        "https://buyer.example/hook",
        "--body",
        body,
        "--key",
        path_str(&private),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let request = dir.join("wh-request.json");
    std::fs::write(&request, stdout(&out)).unwrap();
    let out = adcp_sig(&[
        "verify",
        "--profile",
        "webhook",
        "--request",
        path_str(&request),
        "--jwks",
        path_str(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = adcp_sig(&[
        "sign",
        "--profile",
        "request",
        "--url",
        "https://seller.example/adcp",
        "--body",
        "{}",
        "--key",
        path_str(&private),
    ]);
    assert_ne!(out.status.code(), Some(0));

    let out = adcp_sig(&[
        "keygen",
        "--alg",
        "ed25519",
        "--kid",
        "kp-4",
        "--purpose",
        "governance-signing",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

// ------------------------------------------------------------- activate

/// A loopback receiver for `adcp-sig activate`, on its own runtime (the
/// test thread blocks on the child process). `reply` maps the challenge
/// value to the status and body returned; every request body is kept.
struct ChallengeReceiver {
    addr: std::net::SocketAddr,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    _runtime: tokio::runtime::Runtime,
}

impl ChallengeReceiver {
    fn start(reply: fn(&str) -> (u16, String)) -> Self {
        use axum::http::{header, StatusCode};
        use axum::response::IntoResponse;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = std::sync::Arc::clone(&bodies);
        let app = axum::Router::new().fallback(axum::routing::post(move |body: axum::body::Bytes| {
            let seen = std::sync::Arc::clone(&seen);
            async move {
                let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let (status, text) = reply(value["challenge"].as_str().unwrap_or_default());
                seen.lock().unwrap().push(value);
                (
                    StatusCode::from_u16(status).unwrap(),
                    [(header::CONTENT_TYPE, "application/json")],
                    text,
                )
                    .into_response()
            }
        }));
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            addr,
            bodies,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/webhooks/adcp", self.addr)
    }

    fn received(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
}

fn echo_challenge(v: &str) -> (u16, String) {
    (200, serde_json::json!({ "challenge": v }).to_string())
}

/// `adcp-sig activate` with the common flags, then `extra`.
fn activate(url: &str, key: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "activate",
        "--url",
        url,
        "--key",
        path_str(key),
        "--seller-agent-url",
        "https://seller.example/adcp",
        "--subscriber-id",
        "buyer-primary",
    ];
    args.extend_from_slice(extra);
    adcp_sig(&args)
}

fn json_out(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn activate_exit_codes_and_json() {
    let dir = scratch();
    let (key, _) = keygen(&dir, "ed25519", "activate-1");
    let good = ChallengeReceiver::start(echo_challenge);
    let account = [
        "--account-id",
        "acct_123",
        "--event-types",
        "creative.status_changed,creative.purged,creative.status_changed",
        "--allow-http",
    ];

    // Activated: exit 0, one human line.
    let out = activate(&good.url(), &key, &account);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("activated:"), "{text}");

    // --json: outcome, status and the challenge sent, which is what the
    // receiver got.
    let mut with_json = account.to_vec();
    with_json.push("--json");
    let out = activate(&good.url(), &key, &with_json);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["outcome"], "activated");
    assert_eq!(report["activated"], true);
    assert_eq!(report["status"], 200);
    let challenge = &report["challenge"];
    assert_eq!(challenge["type"], "webhook.challenge");
    assert_eq!(challenge["account_id"], "acct_123");
    assert_eq!(challenge["subscriber_id"], "buyer-primary");
    assert_eq!(challenge["seller_agent_url"], "https://seller.example/adcp");
    assert_eq!(challenge["delivery_auth"], serde_json::json!({"mode": "rfc9421"}));
    assert_eq!(
        challenge["event_types"],
        serde_json::json!(["creative.purged", "creative.status_changed"])
    );
    let received = good.received();
    assert_eq!(received.len(), 2);
    assert_eq!(&received[1], challenge);
    assert_ne!(
        received[0]["challenge"], received[1]["challenge"],
        "fresh value per run"
    );

    // Agent level.
    let out = activate(
        &good.url(),
        &key,
        &[
            "--scope",
            "agent",
            "--event-types",
            "capabilities.changed",
            "--allow-http",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json_out(&out);
    assert_eq!(report["challenge"]["scope"], "agent");
    assert!(report["challenge"].get("account_id").is_none());

    // Not activated: a wrong echo is exit 1 with its reason.
    let wrong = ChallengeReceiver::start(|_| (200, serde_json::json!({"token": "x".repeat(43)}).to_string()));
    let out = activate(&wrong.url(), &key, &with_json);
    assert_eq!(out.status.code(), Some(1));
    let report = json_out(&out);
    assert_eq!(report["outcome"], "wrong_echo");
    assert_eq!(report["reason"], "challenge_response_mismatch");
    assert_eq!(report["status"], 200);
    let out = activate(&wrong.url(), &key, &account);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with("not activated:"), "{}", stdout(&out));

    // A refusal status.
    let refused = ChallengeReceiver::start(|_| (403, "{}".to_owned()));
    let out = activate(&refused.url(), &key, &with_json);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_out(&out)["outcome"], "refused");
    assert_eq!(json_out(&out)["status"], 403);

    // Without --allow-http the loopback http URL is refused before sending.
    let before = good.received().len();
    let out = activate(
        &good.url(),
        &key,
        &["--account-id", "acct_123", "--event-types", "creative.purged", "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let report = json_out(&out);
    assert_eq!(report["outcome"], "ssrf_refused");
    assert_eq!(report["challenge"], Value::Null);
    let out = activate(
        "https://10.0.0.1/hook",
        &key,
        &[
            "--account-id",
            "acct_123",
            "--event-types",
            "creative.purged",
            "--allow-http",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(good.received().len(), before);

    // Usage (exit 2): a non-agent type in an agent challenge, both or
    // neither of --account-id / --scope, no event types, a bad key.
    for extra in [
        &[
            "--scope",
            "agent",
            "--event-types",
            "capabilities.changed,creative.purged",
            "--allow-http",
        ][..],
        &[
            "--account-id",
            "a",
            "--event-types",
            "capabilities.changed",
            "--allow-http",
        ][..],
        &[
            "--account-id",
            "a",
            "--scope",
            "agent",
            "--event-types",
            "capabilities.changed",
        ][..],
        &["--event-types", "capabilities.changed"][..],
        &["--scope", "agent", "--allow-http"][..],
        &[
            "--scope",
            "agent",
            "--event-types",
            "capabilities.changed",
            "--timeout",
            "0",
        ][..],
    ] {
        let out = activate(&good.url(), &key, extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
    }
    let out = activate(
        &good.url(),
        &key,
        &[
            "--scope",
            "agent",
            "--event-types",
            "creative.purged",
            "--allow-http",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_out(&out)["error"], "event_type_not_allowed");
    let out = activate(
        &good.url(),
        &dir.join("missing.jwk"),
        &[
            "--scope",
            "agent",
            "--event-types",
            "capabilities.changed",
            "--allow-http",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(good.received().len(), before, "nothing sent on a usage error");
}

#[test]
fn activate_legacy_credentials_are_fingerprinted_never_printed() {
    let dir = scratch();
    let (key, _) = keygen(&dir, "es256", "activate-2");
    let good = ChallengeReceiver::start(echo_challenge);
    let bearer = "bearer-token-for-the-cli-test-0123456789";
    // SHA-256 of the exact strings (computed outside the SDK).
    let bearer_fp = "2ed3e20da3543885f41480e17530e60fcce30610bbc006a03befb66314d996e8";
    let bearer_nl_fp = "86edf6f7ee510ed6e80040ead4b5c419627768cd96ee7d0dabe8e9fa03b3ff34";
    let hmac = "hmac-secret-for-the-cli-test-0123456789ab";
    let hmac_fp = "71e40a78eb68a6e8b3ce7e34b53480d0369e27302ff84e2a8734cb1dc8adc32e";
    let cases = [
        ("Bearer", format!("{bearer}\n"), bearer_fp),
        ("Bearer", format!("{bearer}\r\n"), bearer_fp),
        ("Bearer", bearer.to_owned(), bearer_fp),
        // Only one trailing newline is removed.
        ("Bearer", format!("{bearer}\n\n"), bearer_nl_fp),
        ("HMAC-SHA256", format!("{hmac}\n"), hmac_fp),
    ];
    for (i, (mode, content, fingerprint)) in cases.iter().enumerate() {
        let file = dir.join(format!("credential-{i}"));
        std::fs::write(&file, content).unwrap();
        let out = activate(
            &good.url(),
            &key,
            &[
                "--account-id",
                "acct_9",
                "--event-types",
                "creative.purged",
                "--delivery-auth",
                mode,
                "--credential-file",
                path_str(&file),
                "--allow-http",
                "--json",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{mode} {i}: {}", stderr(&out));
        let report = json_out(&out);
        assert_eq!(
            report["challenge"]["delivery_auth"],
            serde_json::json!({"mode": mode, "credential_fingerprint": fingerprint}),
            "{mode} {i}"
        );
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            !all.contains(bearer) && !all.contains(hmac),
            "credential printed: {all}"
        );
        let received = good.received();
        let last = received.last().unwrap().to_string();
        assert!(!last.contains(bearer) && !last.contains(hmac), "credential sent");
    }

    // --credential-file rules: required for legacy modes, refused for
    // rfc9421, must be readable and non-empty.
    let file = dir.join("credential-0");
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let common = [
        "--account-id",
        "acct_9",
        "--event-types",
        "creative.purged",
        "--allow-http",
    ];
    for extra in [
        vec!["--delivery-auth", "Bearer"],
        vec!["--delivery-auth", "HMAC-SHA256"],
        vec!["--delivery-auth", "rfc9421", "--credential-file", path_str(&file)],
        vec!["--credential-file", path_str(&file)],
        vec!["--delivery-auth", "Bearer", "--credential-file", path_str(&empty)],
        vec![
            "--delivery-auth",
            "Bearer",
            "--credential-file",
            "/nonexistent/credential",
        ],
        vec!["--delivery-auth", "bearer", "--credential-file", path_str(&file)],
    ] {
        let mut args = common.to_vec();
        args.extend(extra.iter().copied());
        let out = activate(&good.url(), &key, &args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(bearer), "credential printed: {all}");
    }
}

#[test]
fn sign_takes_the_receivers_body_limit() {
    let dir = scratch();
    let (private, jwks) = keygen(&dir, "ed25519", "limit-key");
    // 1.5 MiB: over the 1 MiB default, under a 2 MiB receiver's limit.
    let body = serde_json::json!({"idempotency_key": "big-body-000000000001", "task_id": "t",
        "status": "completed", "result": {"filler": "x".repeat(1536 * 1024)}})
    .to_string();
    let body_file = dir.join("body.json");
    std::fs::write(&body_file, &body).unwrap();
    let sign = |extra: &[&str]| {
        let mut args = vec![
            "sign",
            "--profile",
            "webhook",
            "--url",
            "https://buyer.example/hooks",
            "--key",
            path_str(&private),
            "--body-file",
            path_str(&body_file),
        ];
        args.extend_from_slice(extra);
        adcp_sig(&args)
    };
    let refused = sign(&[]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("invalid_json_input"), "{}", stderr(&refused));
    let signed = sign(&["--max-body-bytes", "2097152"]);
    assert_eq!(signed.status.code(), Some(0), "{}", stderr(&signed));
    let request: Value = serde_json::from_str(stdout(&signed).trim()).unwrap();
    assert_eq!(request["body"].as_str().map(str::len), Some(body.len()));
    let zero = sign(&["--max-body-bytes", "0"]);
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    let _ = jwks;
}
