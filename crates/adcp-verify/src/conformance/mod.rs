//! The AdCP conformance-suite runner (feature `conformance`).
//!
//! Loads vector files from the official suite (located as
//! [`adcp_vectors::dir`] describes; never vendored), checks the suite
//! against the committed manifest of SHA-256 hashes and per-directory
//! counts, installs each vector's `test_harness_state` through the public
//! APIs, pins the clock to `reference_now`, runs the verifier under the
//! profile the vector's directory names and compares the outcome with
//! `expected_outcome`.

mod hmac_fixture;
mod manifest;
mod runner;
mod vector;

pub use manifest::{check_manifest, Manifest, MANIFEST_3_2_4};
pub use runner::{
    profile_for, run_file, run_file_in, run_suite, run_suite_in, run_suite_observed, Harness, Outcome, RunMode,
    SuiteReport, CONFORMANCE_AGENT,
};
pub use vector::{Expected, Vector};
