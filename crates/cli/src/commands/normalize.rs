//! `adcp-sig normalize`: lossy URL normalization for deduplication.

use crate::cli::NormalizeArgs;
use crate::exit::Exit;

pub fn run(_args: &NormalizeArgs) -> Exit {
    Exit::Usage
}
