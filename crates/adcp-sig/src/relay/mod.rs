//! `adcp-sig relay`: the seller's sidecar. A seller in any language posts
//! each webhook to it once; it keeps the event in the outbox (SQLite or
//! PostgreSQL), signs every attempt, retries within the horizon, isolates
//! each destination and records `webhook_activity` (`docs/relay.md`).

mod args;
mod serve;

pub use args::{resolve, run, RelayArgs, RelayArgsError, RelayConfig, API_TOKEN_ENV};
pub use serve::{check, serve, RelayError, RelaySettings};
