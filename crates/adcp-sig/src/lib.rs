//! The library side of `adcp-sig`: its two long-running commands, usable
//! in-process (tests) as well as from the binary.
//!
//! - [`gateway`]: `adcp-sig gateway`'s flags mapped onto an
//!   [`adcp_gateway::GatewayConfig`], and the command's run (progress,
//!   signals, exit codes). The gateway itself is the `adcp-gateway`
//!   library.
//! - [`relay`]: `adcp-sig relay`'s settings and run: the seller's durable
//!   delivery sidecar on the `adcp-outbox` library.
//! - [`settings`]: the one declaration per setting both commands use
//!   (flag, environment variable, TOML key).
//! - [`demo`]: a self-contained run of the gateway against signed,
//!   duplicated, replayed, tampered and expired webhooks.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod demo;
pub mod gateway;
pub mod relay;
pub mod settings;
mod signals;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
