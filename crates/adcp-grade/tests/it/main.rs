//! The graders against our own endpoints on loopback (everything passes)
//! and against deliberately broken ones (exactly the cases their fault
//! breaks fail). One test binary; each module one grader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod support;

mod receiver;
mod request_signing;
mod sender;
mod signer;
