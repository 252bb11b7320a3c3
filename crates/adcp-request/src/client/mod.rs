//! The buyer side: a signing client that follows the counterparty's advertised `request_signing` capability.
