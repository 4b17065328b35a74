//! aether-webhook's integration tests, one binary (one link step): the
//! admission handler and host index on their own, the HTTPS server in
//! process and the binary as deployed. The floods are `tests/flood.rs`, a
//! binary of their own.
//!
//! `cargo test -p aether-webhook --test integration webhook::` runs one
//! module alone.

// Shared with tests/flood.rs.
#[cfg(feature = "server")]
#[path = "../common/mod.rs"]
mod common;

#[cfg(feature = "server")]
mod binary;
mod bounded;
#[cfg(feature = "server")]
mod budget;
#[cfg(feature = "server")]
mod local_input;
mod match_conditions;
mod reading;
mod skew;
#[cfg(feature = "server")]
mod webhook;
