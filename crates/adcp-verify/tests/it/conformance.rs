//! The official AdCP conformance suite (release 3.2.4) through the
//! verifier: every vector runs, none is skipped, and the suite must match
//! the committed manifest.

use adcp_verify::conformance::{run_suite, run_suite_in, RunMode};

#[tokio::test]
async fn conformance_suite() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let report = run_suite(&suite).await;
    for problem in &report.manifest_problems {
        eprintln!("MANIFEST {problem}");
    }
    for o in report.outcomes.iter().filter(|o| !o.passed) {
        eprintln!(
            "FAIL {} expected {:?} got {:?} ({})",
            o.relative, o.expected, o.got, o.detail
        );
    }
    eprintln!("{}", report.summary_line());
    assert!(report.manifest_problems.is_empty(), "suite does not match the manifest");
    // 154 vector files plus the HMAC fixture's 15 + 10 + 4 verifier-side
    // and 4 + 1 signer-side cases.
    assert_eq!(report.outcomes.len(), 154 + 34, "every vector runs");
    assert_eq!(report.failed(), 0, "{}", report.summary_line());
}

/// Runs the suite as `mode` says; every vector runs and passes.
async fn every_vector_passes(mode: RunMode) {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let report = run_suite_in(&suite, mode).await;
    for o in report.outcomes.iter().filter(|o| !o.passed) {
        eprintln!(
            "FAIL {} expected {:?} got {:?} ({})",
            o.relative, o.expected, o.got, o.detail
        );
    }
    assert_eq!(report.outcomes.len(), 154 + 34, "every vector runs");
    assert_eq!(report.failed(), 0, "{}", report.summary_line());
}

/// The same suite through batch verification: each vector's request is
/// verified twice in one `verify_batch` call; the first copy must get the
/// vector's outcome and the second what a sequential redelivery gets.
#[tokio::test]
async fn conformance_suite_through_batch_verification() {
    every_vector_passes(RunMode::Batched).await;
}

/// The same suite on a verifier whose Ed25519 signatures are checked by a
/// `SignatureBatcher`: every vector gets its outcome.
#[tokio::test]
async fn conformance_suite_through_the_signature_batcher() {
    every_vector_passes(RunMode::Batcher).await;
}
