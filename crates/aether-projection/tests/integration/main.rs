//! aether-projection's integration tests, one binary (one link step): the
//! Envoy route configuration and listener it writes, its matching, actions
//! and edge limits, the path normal form, and its properties over random
//! sets of objects.
//!
//! `cargo test -p aether-projection --test integration properties::` runs
//! one module alone.

mod actions;
mod edge;
mod listener;
mod matching;
mod path_normal_form;
mod previous_version;
mod projection;
mod properties;
