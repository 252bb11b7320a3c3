//! `adcp-sig sign --count N` and `adcp-sig verify-batch` end to end: N
//! freshly signed webhooks, one with a tampered body and one replayed,
//! give exact counts, per-line results and exit codes.

use crate::support::{adcp_sig, json_lines, s, stderr, stdout};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("verify_batch_cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `adcp-sig sign --profile webhook` of `body` to `url` with `key`, then
/// `extra`.
fn sign_webhook(url: &str, body: &str, key: &str, extra: &[&str]) -> Output {
    let args = [
        "sign",
        "--profile",
        "webhook",
        "--url",
        url,
        "--body",
        body,
        "--key",
        key,
    ];
    adcp_sig(&[&args[..], extra].concat())
}

/// A key pair in `dir` and `count` webhooks signed with it, one per line.
fn signed_lines(dir: &Path, count: usize) -> (PathBuf, Vec<String>) {
    let (private, jwks) = (dir.join("k.jwk"), dir.join("jwks.json"));
    let out = adcp_sig(&[
        "keygen",
        "--alg",
        "ed25519",
        "--kid",
        "batch-key",
        "--out-private",
        s(&private),
        "--out-jwks",
        s(&jwks),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let n = count.to_string();
    let out = sign_webhook(
        "https://buyer.example/webhooks/adcp",
        r#"{"task_id":"t1","status":"completed"}"#,
        s(&private),
        &["--count", &n],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    (jwks, lines)
}

/// `adcp-sig verify-batch --profile webhook` of the `requests` file against
/// `jwks`, then `extra`.
fn verify_batch(jwks: &Path, requests: &Path, extra: &[&str]) -> Output {
    let args = [
        "verify-batch",
        "--profile",
        "webhook",
        "--jwks",
        s(jwks),
        "--requests",
        s(requests),
    ];
    adcp_sig(&[&args[..], extra].concat())
}

/// The JSON values of `--json` output, one a line.
fn nonce(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap();
    let input = v["headers"]["Signature-Input"].as_str().unwrap();
    input
        .split("nonce=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn sign_count_prints_one_request_per_line_with_fresh_nonces() {
    let dir = scratch("count");
    let (_, lines) = signed_lines(&dir, 4);
    assert_eq!(lines.len(), 4);
    let nonces: HashSet<String> = lines.iter().map(|l| nonce(l)).collect();
    assert_eq!(nonces.len(), 4, "every signature has its own nonce");
    let out = sign_webhook(
        "https://b.example/h",
        "{}",
        "k.jwk",
        &["--count", "2", "--nonce", "AAAAAAAAAAAAAAAAAAAAAA"],
    );
    assert_eq!(out.status.code(), Some(2), "--count conflicts with --nonce");
}

#[test]
fn tampered_and_replayed_lines_are_counted_and_reported() {
    let dir = scratch("mixed");
    let (jwks, lines) = signed_lines(&dir, 6);
    let mut batch: Vec<String> = lines[..5].to_vec();
    // Line 6: a fresh signature whose body was changed in transit.
    let mut tampered: Value = serde_json::from_str(&lines[5]).unwrap();
    tampered["body"] = r#"{"task_id":"t1","status":"failed"}"#.into();
    batch.push(tampered.to_string());
    // Line 7: line 1 again, a replay.
    batch.push(lines[0].clone());
    let file = dir.join("requests.jsonl");
    std::fs::write(&file, batch.join("\n") + "\n").unwrap();

    // The signatures are fresh: verify as of now.
    let out = verify_batch(&jwks, &file, &[]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let text_lines: Vec<&str> = text.lines().collect();
    assert_eq!(text_lines.len(), 3, "{text}");
    assert!(
        text_lines[0].starts_with("line 6: rejected: webhook_signature_digest_mismatch at step 11"),
        "{text}"
    );
    assert!(
        text_lines[1].starts_with("line 7: rejected: webhook_signature_replayed at step 12"),
        "{text}"
    );
    assert!(text_lines[2].starts_with("5 verified, 2 rejected in "), "{text}");
    assert!(text_lines[2].ends_with(" requests/s)"), "{text}");
    assert_eq!(stderr(&out), "", "no progress output when not on a terminal");

    let out = verify_batch(&jwks, &file, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let values = json_lines(&out);
    assert_eq!(values.len(), 8, "7 results and a summary");
    for (i, v) in values[..5].iter().enumerate() {
        assert_eq!(v["line"], i + 1);
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["keyid"], "batch-key");
    }
    assert_eq!(values[5]["error_code"], "webhook_signature_digest_mismatch");
    assert_eq!(values[5]["step"], "11");
    assert_eq!(values[6]["error_code"], "webhook_signature_replayed");
    assert_eq!(values[6]["line"], 7);
    // Through Verifier::verify_batch, in chunks that split the file
    // differently: the same per-line results.
    for batch in ["4", "100"] {
        let out = verify_batch(&jwks, &file, &["--json", "--batch", batch]);
        assert_eq!(out.status.code(), Some(1));
        let batched = json_lines(&out);
        assert_eq!(batched[..7], values[..7], "--batch {batch}");
        assert_eq!(batched[7]["verified"], 5);
    }
    let summary = &values[7];
    assert_eq!(summary["summary"], true);
    assert_eq!(
        (summary["verified"].as_u64(), summary["rejected"].as_u64()),
        (Some(5), Some(2))
    );
    assert_eq!(summary["total"], 7);
    assert!(summary["requests_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_all_good_batch_exits_0_and_a_late_clock_rejects_everything() {
    let dir = scratch("good");
    let (jwks, lines) = signed_lines(&dir, 3);
    let file = dir.join("requests.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = verify_batch(&jwks, &file, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("3 verified, 0 rejected in "),
        "{}",
        stdout(&out)
    );

    // An hour later every signature is outside its window.
    let late = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600)
        .to_string();
    let out = verify_batch(&jwks, &file, &["--now", &late, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let values = json_lines(&out);
    assert!(values[..3]
        .iter()
        .all(|v| v["error_code"] == "webhook_signature_window_invalid"));
    assert_eq!(values[3]["rejected"], 3);

    // An unreadable line is a rejection, not a crash; a missing file is a usage error.
    std::fs::write(&file, format!("{}\nnot json\n", lines[0])).unwrap();
    let out = verify_batch(&jwks, &file, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("line 2: rejected: unreadable_request"),
        "{}",
        stdout(&out)
    );
    let missing = dir.join("missing.jsonl");
    let out = verify_batch(&jwks, &missing, &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_bare_reports_the_bare_rate_of_the_same_requests() {
    let dir = scratch("bare");
    let (jwks, lines) = signed_lines(&dir, 5);
    let file = dir.join("requests.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    for batch in ["1", "4"] {
        let out = verify_batch(&jwks, &file, &["--batch", batch, "--compare-bare", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        let values = json_lines(&out);
        let bare = values.last().unwrap();
        assert_eq!(bare["bare_signatures"], 5, "{bare}");
        assert!(bare["bare_requests_per_second"].as_f64().unwrap() > 0.0);
        let ratio = bare["ratio_to_bare"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{bare}");
    }
}
