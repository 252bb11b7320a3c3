//! `adcp-sig verify`: one request, or one conformance vector.

use crate::cli::{CoverageArg, VerifyArgs, VerifyProfileArg};
use crate::exit::Exit;
use adcp_sigbase::Message;
use adcp_vectors::VectorRequest;
use adcp_verify::conformance::{run_file, Expected};
use adcp_verify::MemoryReplayStore;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use adcp_verify::{Clock, FixedClock, SystemClock};
use adcp_verify::{DigestCoverage, Profile};
use serde_json::json;
use std::path::{Path, PathBuf};

pub fn run(args: &VerifyArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
    };
    match (&args.vector, &args.request) {
        (Some(vector), _) => runtime.block_on(run_vector(args, vector)),
        (None, Some(request)) => runtime.block_on(run_request(args, request)),
        (None, None) => {
            eprintln!("adcp-sig: verify needs --request FILE --jwks FILE, or --vector FILE");
            Exit::Usage
        }
    }
}

/// The verifier profile for `--profile` and `--covers-content-digest`.
pub(crate) fn profile(arg: VerifyProfileArg, coverage: CoverageArg) -> Profile {
    match arg {
        VerifyProfileArg::Webhook => Profile::webhook_v1(),
        VerifyProfileArg::Request => Profile::request_v3_2(),
        VerifyProfileArg::RequestLegacy => Profile::request_legacy(match coverage {
            CoverageArg::Required => DigestCoverage::Required,
            CoverageArg::Either => DigestCoverage::Either,
            CoverageArg::Forbidden => DigestCoverage::Forbidden,
        }),
    }
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

async fn run_request(args: &VerifyArgs, request: &Path) -> Exit {
    let Some(profile_arg) = args.profile else {
        eprintln!("adcp-sig: --request needs --profile webhook|request|request-legacy");
        return Exit::Usage;
    };
    let loaded = read_json(request).and_then(|doc| {
        let req = if doc.get("request").is_some() {
            &doc["request"]
        } else {
            &doc
        };
        VectorRequest::from_json(req)
    });
    let jwks = args.jwks.as_deref().map(read_json).transpose();
    let (req, jwks) = match (loaded, jwks) {
        (Ok(r), Ok(Some(j))) => (r, j),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("adcp-sig: {e}");
            return Exit::Usage;
        }
        (_, Ok(None)) => {
            eprintln!("adcp-sig: --request needs --jwks FILE");
            return Exit::Usage;
        }
    };
    let mut msg = Message::request(req.method.as_str(), req.url.as_str());
    for (name, value) in &req.headers {
        msg.push_header(name.as_str(), value.as_str());
    }
    if let Some(body) = &req.body {
        msg = msg.with_body(body.as_bytes());
    }
    let keys = StaticKeyResolver::new().with_jwks(&jwks, "jwks-file");
    let now = args.now.unwrap_or_else(|| SystemClock.now());
    let profile = profile(profile_arg, args.covers_content_digest);
    let store = if profile.is_webhook() {
        MemoryReplayStore::webhook()
    } else {
        MemoryReplayStore::request()
    };
    let verifier = Verifier::new(profile, keys, store, FixedClock(now));
    match verifier.verify(&msg).await {
        Ok(signer) => {
            if args.json {
                println!(
                    "{}",
                    json!({"ok": true, "keyid": signer.keyid, "algorithm": signer.algorithm.as_str(), "target_uri": signer.target_uri})
                );
            } else {
                println!(
                    "verified: keyid {} ({}), {}",
                    signer.keyid, signer.algorithm, signer.target_uri
                );
            }
            Exit::Ok
        }
        Err(e) => {
            if args.json {
                println!(
                    "{}",
                    json!({"ok": false, "error_code": e.code_str(), "step": e.step().to_string(), "detail": e.detail()})
                );
            } else {
                println!("rejected: {} at step {}: {}", e.code_str(), e.step(), e.detail());
            }
            Exit::Rejected
        }
    }
}

/// The suite root above a vector file: the nearest ancestor holding
/// `webhook-signing/` or `request-signing/`.
fn suite_root(vector: &Path) -> Option<PathBuf> {
    vector
        .ancestors()
        .find(|d| d.join("request-signing").is_dir() || d.join("webhook-signing").is_dir())
        .map(Path::to_path_buf)
}

async fn run_vector(args: &VerifyArgs, vector: &Path) -> Exit {
    let vector = std::fs::canonicalize(vector).unwrap_or_else(|_| vector.to_path_buf());
    let Some(suite) = suite_root(&vector) else {
        eprintln!("adcp-sig: {} is not inside a conformance suite", vector.display());
        return Exit::Usage;
    };
    let profile = args.profile.map(|p| profile(p, args.covers_content_digest));
    let outcome = run_file(&suite, &vector, profile).await;
    if outcome.got.as_ref().is_err_and(|(code, _)| code == "not_run") {
        eprintln!("adcp-sig: {}", outcome.detail);
        return Exit::Usage;
    }
    let expected = match &outcome.expected {
        Expected::Accept => json!({"success": true}),
        Expected::Reject { code, .. } => json!({"success": false, "error_code": code}),
    };
    let line = match &outcome.got {
        Ok(keyid) => json!({"ok": true, "keyid": keyid, "expected": expected, "passed": outcome.passed}),
        Err((code, step)) => {
            json!({"ok": false, "error_code": code, "step": step, "expected": expected, "passed": outcome.passed})
        }
    };
    if args.json {
        println!("{line}");
    } else {
        println!(
            "{}: {} ({})",
            outcome.relative,
            if outcome.passed { "PASS" } else { "FAIL" },
            line
        );
    }
    if outcome.got.is_ok() {
        Exit::Ok
    } else {
        Exit::Rejected
    }
}
