//! `adcp-sig verify-batch`: verifies one request per line of a JSONL file
//! with one long-lived [`Verifier`] (one in-memory replay store, so a nonce
//! seen earlier in the file is a replay), then reports `N verified, M
//! rejected` and the rate.
//!
//! Each line is a request in the vectors' `request` shape (what `adcp-sig
//! sign --count N` prints). Lines are verified in file order. A line that
//! is not a readable request is counted as rejected (`"error_code":
//! "unreadable_request"`, a CLI marker, not a spec code).
//!
//! Exit codes: 0 every request verified, 1 at least one rejected, 2 usage
//! or I/O errors.

use crate::cli::{CoverageArg, VerifyProfileArg};
use crate::commands::explain::message;
use crate::exit::Exit;
use adcp_sigbase::Message;
use adcp_vectors::VectorRequest;
use adcp_verify::MemoryReplayStore;
use adcp_verify::StaticKeyResolver;
use adcp_verify::Verifier;
use adcp_verify::{Clock, FixedClock, SystemClock};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `adcp-sig verify-batch`.
#[derive(Debug, Args)]
pub struct VerifyBatchArgs {
    /// Profile every request is verified under.
    #[arg(long, value_enum)]
    pub profile: VerifyProfileArg,
    /// Legacy endpoint `covers_content_digest` policy (`--profile request-legacy`).
    #[arg(long, value_enum, default_value = "either")]
    pub covers_content_digest: CoverageArg,
    /// JWKS (`{"keys": [...]}`) the signer's keys come from.
    #[arg(long, value_name = "FILE")]
    pub jwks: PathBuf,
    /// One request per line (JSONL), as `adcp-sig sign --count N` prints them.
    #[arg(long, value_name = "FILE")]
    pub requests: PathBuf,
    /// Verify as of this Unix time instead of now.
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// Verify N requests at a time with `Verifier::verify_batch` (Ed25519
    /// signatures checked as one batch). 1, the default, calls
    /// `Verifier::verify` once per line. Outcomes are the same either way
    /// (replays inside a batch are still replays), except that a batch
    /// reads the clock once and reports a per-keyid cap filled within the
    /// batch at step 13 instead of 9a (same code).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub batch: usize,
    /// One JSON object per request, then a summary object, instead of text.
    #[arg(long)]
    pub json: bool,
    /// Afterwards, time the bare signature verifications of the same
    /// requests (their bases built beforehand, outside the timing) and
    /// print that rate and the ratio `verify-batch rate / bare rate`: the
    /// performance target is ≥ 0.95.
    #[arg(long)]
    pub compare_bare: bool,
}

/// Runs the command.
pub fn run(args: &VerifyBatchArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("adcp-sig: cannot start the runtime: {e}");
            return Exit::Usage;
        }
    };
    match runtime.block_on(batch(args)) {
        Ok(0) => Exit::Ok,
        Ok(_) => Exit::Rejected,
        Err(e) => {
            eprintln!("adcp-sig: {e}");
            Exit::Usage
        }
    }
}

/// A progress bar on a terminal, hidden otherwise (piped, CI, tests).
fn progress(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} {msg}") {
        bar.set_style(style);
    }
    bar
}

/// Verifies every line; the number of rejected requests.
async fn batch(args: &VerifyBatchArgs) -> Result<u64, String> {
    let jwks: Value = std::fs::read_to_string(&args.jwks)
        .map_err(|e| format!("{}: {e}", args.jwks.display()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("{}: {e}", args.jwks.display())))?;
    let file = std::fs::File::open(&args.requests).map_err(|e| format!("{}: {e}", args.requests.display()))?;
    let mut lines = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|e| format!("{}: {e}", args.requests.display()))?;
        if !line.trim().is_empty() {
            lines.push(line);
        }
    }

    let profile = crate::commands::verify::profile(args.profile, args.covers_content_digest);
    let store = if profile.is_webhook() {
        MemoryReplayStore::webhook()
    } else {
        MemoryReplayStore::request()
    };
    let now = args.now.unwrap_or_else(|| SystemClock.now());
    let verifier = Verifier::new(
        profile,
        StaticKeyResolver::new().with_jwks(&jwks, "jwks-file"),
        store,
        FixedClock(now),
    );

    let bar = progress(lines.len() as u64);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (mut verified, mut rejected) = (0u64, 0u64);
    let chunk = args.batch.max(1);
    let started = Instant::now();
    for (chunk_index, chunk_lines) in lines.chunks(chunk).enumerate() {
        let requests: Vec<Result<VectorRequest, String>> = chunk_lines
            .iter()
            .map(|line| {
                serde_json::from_str::<Value>(line)
                    .map_err(|e| e.to_string())
                    .and_then(|doc| VectorRequest::from_json(doc.get("request").unwrap_or(&doc)))
            })
            .collect();
        let msgs: Vec<Message<'_>> = requests.iter().filter_map(|r| r.as_ref().ok()).map(message).collect();
        let mut outcomes = if chunk == 1 {
            let mut v = Vec::with_capacity(msgs.len());
            for msg in &msgs {
                v.push(verifier.verify(msg).await);
            }
            v
        } else {
            verifier.verify_batch(&msgs).await
        }
        .into_iter();
        for (offset, request) in requests.iter().enumerate() {
            let number = chunk_index * chunk + offset + 1;
            let result = match request {
                Err(e) => Err(json!({"line": number, "ok": false, "error_code": "unreadable_request", "detail": e})),
                Ok(_) => match outcomes.next() {
                    Some(Ok(signer)) => Ok(json!({"line": number, "ok": true, "keyid": signer.keyid})),
                    Some(Err(e)) => Err(json!({
                        "line": number, "ok": false, "error_code": e.code_str(),
                        "step": e.step().to_string(), "detail": e.detail()
                    })),
                    None => return Err("the verifier returned fewer results than requests".into()),
                },
            };
            let written = match &result {
                Ok(v) => {
                    verified += 1;
                    if args.json {
                        writeln!(out, "{v}")
                    } else {
                        Ok(())
                    }
                }
                Err(v) => {
                    rejected += 1;
                    if args.json {
                        writeln!(out, "{v}")
                    } else {
                        let step = v["step"].as_str().map(|s| format!(" at step {s}")).unwrap_or_default();
                        writeln!(
                            out,
                            "line {number}: rejected: {}{step}: {}",
                            v["error_code"].as_str().unwrap_or(""),
                            v["detail"].as_str().unwrap_or("")
                        )
                    }
                }
            };
            written.map_err(|e| format!("stdout: {e}"))?;
        }
        bar.inc(chunk_lines.len() as u64);
    }
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let total = verified + rejected;
    let rate = if seconds > 0.0 { total as f64 / seconds } else { 0.0 };
    let summary = if args.json {
        json!({
            "summary": true, "verified": verified, "rejected": rejected, "total": total,
            "seconds": seconds, "requests_per_second": rate
        })
        .to_string()
    } else {
        format!("{verified} verified, {rejected} rejected in {seconds:.3} s ({rate:.0} requests/s)")
    };
    writeln!(out, "{summary}")
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))?;
    if args.compare_bare {
        let bare = bare_rate(&lines, verifier.keys(), verifier.profile())?;
        let line = if args.json {
            json!({"bare_signatures": bare.count, "bare_requests_per_second": bare.rate, "ratio_to_bare": rate / bare.rate})
                .to_string()
        } else {
            format!(
                "bare signature verification of the same {} requests: {:.0} requests/s; verify-batch / bare = {:.3}",
                bare.count,
                bare.rate,
                rate / bare.rate
            )
        };
        writeln!(out, "{line}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(rejected)
}

/// The rate of bare signature verifications over the requests' bases.
struct BareRate {
    count: usize,
    rate: f64,
}

/// Builds every readable request's signature base, key and signature
/// first (untimed), then times only the signature verifications.
fn bare_rate(lines: &[String], keys: &StaticKeyResolver, profile: &adcp_verify::Profile) -> Result<BareRate, String> {
    let mut items = Vec::new();
    for line in lines {
        let Ok(doc) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Ok(request) = VectorRequest::from_json(doc.get("request").unwrap_or(&doc)) else {
            continue;
        };
        let msg = message(&request);
        let Some(prepared) = bare_item(&msg, keys, profile) else {
            continue;
        };
        items.push(prepared);
    }
    if items.is_empty() {
        return Err("--compare-bare: no request with a usable signature".into());
    }
    let started = Instant::now();
    let mut ok = 0usize;
    for (key, algorithm, base, signature) in &items {
        ok += usize::from(
            key.key()
                .is_ok_and(|(k, _)| k.verify(*algorithm, base, signature).is_ok()),
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    std::hint::black_box(ok);
    Ok(BareRate {
        count: items.len(),
        rate: if seconds > 0.0 {
            items.len() as f64 / seconds
        } else {
            0.0
        },
    })
}

type BareItem = (
    std::sync::Arc<adcp_verify::ResolvedKey>,
    adcp_sigbase::crypto::Algorithm,
    Vec<u8>,
    Vec<u8>,
);

/// The key, algorithm, signature base and signature of `msg`'s `sig1`.
fn bare_item(msg: &Message<'_>, keys: &StaticKeyResolver, profile: &adcp_verify::Profile) -> Option<BareItem> {
    use adcp_verify::KeyResolver;
    let params = adcp_sigbase::SignatureInput::from_message(msg)
        .ok()??
        .into_signature("sig1")?;
    let signature = adcp_sigbase::Signatures::from_message(msg)
        .ok()??
        .decode("sig1", profile.signature_encoding())
        .ok()?;
    let key = keys.resolve_cached(params.keyid()?)?.ok()??;
    let algorithm = params.alg()?.parse().ok()?;
    let target = adcp_canon::canonicalize_received(msg.target_uri()).ok()?;
    let first = |name: &'static str| msg.field_lines(name).next();
    let authority = match (first(":authority"), first("host")) {
        (None, None) => target.authority(),
        (a, h) => adcp_canon::derive_authority(&target, a, h).ok()?,
    };
    let opts = adcp_sigbase::BaseOptions {
        target_uri: Some(target.as_str()),
        authority: Some(authority),
        ..adcp_sigbase::BaseOptions::default()
    };
    let base = adcp_sigbase::signature_base(msg, &params, &opts).ok()?;
    Some((key, algorithm, base.as_bytes().to_vec(), signature))
}
