//! Signer tests (below).
