//! One module per subcommand.

pub mod activate;
pub mod base;
pub mod call;
pub mod canon;
pub mod conformance;
pub mod explain;
pub mod gov;
pub mod grade;
pub mod keygen;
pub mod normalize;
pub mod outbox;
pub mod resolve;
pub mod sign;
pub mod urn_eq;
pub mod verify;
pub mod verify_batch;
