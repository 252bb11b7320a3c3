//! The buyer side: a signing client that follows the counterparty's
//! advertised `request_signing` capability.
//!
//! One concept per file: [`SigningClient`] and its builder
//! (`signing_client.rs`), [`Counterparty`] (`counterparty.rs`),
//! [`Transport`] and the wire shapes (`transport.rs`), the capability
//! reader and [`CapabilityCache`] (`capability.rs`), [`SigningDecision`]
//! (`decision.rs`), the SSRF [`TargetPolicy`] (`target.rs`),
//! [`AgentCapabilities`], the key-discovery capabilities source
//! (`agent_capabilities.rs`),
//! [`CallResponse`] (`response.rs`) and [`ClientError`] (`error.rs`).

mod agent_capabilities;
mod capability;
mod counterparty;
mod decision;
mod error;
mod response;
mod signing_client;
mod target;
mod transport;

pub use agent_capabilities::{AgentCapabilities, DEFAULT_CAPABILITIES_TIMEOUT};
pub use capability::{CapabilityCache, DEFAULT_CAPABILITY_TTL};
pub use counterparty::Counterparty;
pub use decision::{SigningDecision, SigningReason, SigningVersion};
pub use error::ClientError;
pub use response::{CallResponse, MAX_RESPONSE_BYTES};
pub use signing_client::{SigningClient, SigningClientBuilder, DEFAULT_TIMEOUT};
pub use target::TargetPolicy;
pub use transport::Transport;
