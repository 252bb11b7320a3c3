//! One module per subcommand.

pub mod base;
pub mod canon;
pub mod conformance;
pub mod normalize;
pub mod urn_eq;
pub mod verify;
