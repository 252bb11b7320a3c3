//! The [`Clock`] that stamps `created` (and the legacy HMAC timestamp):
//! shared with the verifier, defined in `adcp-sigbase`.

pub use adcp_sigbase::{Clock, FixedClock, SystemClock};
