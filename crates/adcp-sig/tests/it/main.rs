//! The integration tests of `adcp-sig`, one test binary: each module is
//! one former `tests/*.rs` file (the binary end to end, the gateway
//! in-process and as a process, the demo), the helpers they share are in
//! [`support`].
//!
//! One binary links the package once instead of once per file. No test
//! here needs a process of its own (no global allocator, no process-wide
//! subscriber); one that does belongs in a separate `tests/*.rs` file
//! saying why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod support;

mod call;
mod canon_cli;
mod demo_cli;
mod explain_agent_cli;
mod explain_cli;
mod gateway;
mod gateway_agents_cli;
mod gateway_cli;
mod gateway_faults;
mod gateway_fleet;
mod gateway_reload_cli;
mod gateway_request_cli;
mod gateway_revocation;
mod gateway_tls_cli;
mod gov;
mod grade;
mod grade_sender;
mod relay_crash;
mod relay_fleet;
mod relay_isolation;
mod relay_reporting_cli;
mod relay_slow_upstream;
mod relay_store_faults;
mod relay_support;
mod resolve_cli;
mod sign_cli;
mod verify_batch_cli;
