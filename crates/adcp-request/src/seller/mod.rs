//! The seller side: verify incoming signed AdCP requests under the seller's own `request_signing` capability.
