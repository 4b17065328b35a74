//! The rule-kinds test API's tests, one binary (one link step): the three
//! judges on its cases (`fixtures`) and on specs drawn from its rules model
//! (`parity`).
//!
//! `cargo test -p aether-rule-kinds --test judges parity::` runs one module
//! alone.

mod common;
mod fixtures;
mod parity;
