//! Receiver tests (below).
