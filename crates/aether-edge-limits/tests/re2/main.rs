//! aether-edge-limits' integration tests, one binary (one link step): the
//! RE2 guard's refusals, its program-size bound, and its parity with RE2
//! itself at RE2's limits.
//!
//! `cargo test -p aether-edge-limits --all-features --test re2 re2_parity::`
//! runs one module alone.

mod re2_bound;
mod re2_parity;
mod re2_refusals;
