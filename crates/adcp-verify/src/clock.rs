//! The [`Clock`] windows are checked against: shared with the signer,
//! defined in `adcp-sigbase`; tests pin it to the vectors' `reference_now`.

pub use adcp_sigbase::{Clock, FixedClock, SystemClock};
