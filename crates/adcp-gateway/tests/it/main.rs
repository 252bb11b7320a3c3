//! Integration tests of the `adcp-gateway` library API: settings from
//! TOML and the environment with their typed errors, and a gateway built
//! from a `GatewayConfig`, served on loopback, that forwards a signed
//! webhook once and refuses a tampered one; HTTPS (HTTP/1.1 and HTTP/2
//! by ALPN, the Host rule, certificate reloads); static revoked kids and
//! the per-keyid replay cap; request mode (every request-signing vector
//! through a running gateway, the two policy files of the suite, the
//! proxy's header rules, the composition with the credential header,
//! buyer keys discovered through the `identity.brand_json_url` chain; a
//! 3.2 and a legacy 3.0/3.1 request profile side by side; MCP Streamable
//! HTTP: event streams past the upstream timeout, unverified bodyless
//! `GET` / `DELETE`, streams ended by the client, the idle timeout or a
//! shutdown);
//! the periodic purge of the store's expired rows; reloading keys and
//! policies without a restart; a re-emission racing its first delivery.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod config;
mod limits;
mod mcp_streams;
mod purge;
mod reemission;
mod reload;
mod request_discovery;
mod request_mode;
mod request_policy;
mod request_profile;
mod serve;
mod support;
mod tls;
