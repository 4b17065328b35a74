//! `aetherctl`'s integration tests, one binary (one link step): the real
//! binary on files (`common` runs it bounded in time and memory), its
//! library entry points in process, and where the projection and the
//! webhook meet.
//!
//! `cargo test -p aetherctl --test cli validate::` runs one module alone.

mod common;
mod convert;
mod diff;
mod examples_projected;
mod explain;
mod kubectl_habits;
mod offline;
mod paths;
mod race;
mod reading;
mod skew;
mod usage;
mod validate;
