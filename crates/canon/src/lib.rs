//! placeholder
pub mod normalize;
pub mod urn;
