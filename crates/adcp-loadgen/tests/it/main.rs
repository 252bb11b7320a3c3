//! Integration tests of `adcp-loadgen`, in one binary: paced and
//! pre-signed runs through in-process `adcp-sig` gateways in front of the
//! counting sink, the forwarding baseline and the verifying floor, with the
//! accounting checked to balance.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod end_to_end;
mod floor;
