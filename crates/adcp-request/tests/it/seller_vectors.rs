//! Every official request-signing vector through the tower layer (not only
//! through the verifier), with each vector's harness state installed as the
//! verifier's own conformance runner installs it.
//!
//! A vector expecting success must reach the handler; one expecting a
//! rejection must get the exact status and `WWW-Authenticate` code. The
//! requests arrive as an HTTP/1.1 server sees them: origin-form request
//! target and a `Host` header (the URL's authority, unless the vector sends
//! its own).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::common::{http_request, send};
use adcp_request::RequestVerifier;
use adcp_verify::conformance::{Expected, Harness, Vector};
use adcp_verify::FixedClock;
use std::path::Path;
use std::sync::Arc;

const DIRS: [(&str, usize); 6] = [
    ("request-signing/positive", 15),
    ("request-signing/negative", 31),
    ("request-signing/profile-3.2/positive", 14),
    ("request-signing/profile-3.2/negative", 32),
    ("request-signing/a2a/positive", 7),
    ("request-signing/a2a/negative", 26),
];

async fn run(suite: &Path, path: &Path) -> Result<(), String> {
    let vector = Vector::load(suite, path)?;
    let expected = vector.expected()?;
    let harness = Harness::new(&vector, None).await?;
    let capability = harness.capability.ok_or("no capability")?;
    let scheme = harness.request.url.split("://").next().unwrap_or("https").to_owned();
    let verifier = RequestVerifier::builder(Arc::new(harness.keys), Arc::new(harness.replay), capability)
        .profile(harness.profile)
        .clock(Arc::new(FixedClock(harness.now)))
        .scheme(scheme)
        .build()
        .map_err(|e| e.to_string())?;
    let req = &harness.request;
    let request = http_request(
        &req.method,
        &req.url,
        &req.headers,
        req.body.as_deref().map(str::as_bytes),
    );
    let answer = send(&verifier, request).await;
    let context = vector.relative.as_str();
    match expected {
        Expected::Accept => {
            if !answer.reached_handler() {
                return Err(format!("{context}: expected acceptance, got {answer:?}"));
            }
        }
        Expected::Reject { code, .. } => {
            let result = std::panic::catch_unwind(|| answer.assert_rejected_with(&code, context));
            if result.is_err() {
                return Err(format!("{context}: expected {code}, got {answer:?}"));
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_request_vector_through_the_layer() {
    let Some(suite) = adcp_vectors::require_dir().unwrap_or_else(|e| panic!("{e}")) else {
        return;
    };
    let mut ran = 0;
    let mut failures = Vec::new();
    for (dir, count) in DIRS {
        let files = adcp_vectors::json_files(&suite, dir);
        assert_eq!(files.len(), count, "{dir}: vector count");
        for path in files {
            ran += 1;
            if let Err(e) = run(&suite, &path).await {
                failures.push(e);
            }
        }
    }
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    assert_eq!(ran, 125, "every vector runs");
    assert!(failures.is_empty(), "{} of {ran} vectors failed", failures.len());
}
