//! xtask's integration tests, one binary (one link step): the generated
//! CRD and its conventions, rules added to a scratch copy of `api/`, the
//! rules model, the breaking-change checks, the readers of earlier
//! releases and the version-skew fixtures.
//!
//! `cargo test -p xtask --test integration crd::` runs one module alone.

mod breaking_rules;
mod common;
mod crd;
mod crd_conventions;
mod new_rules;
mod previous_reader;
mod rules_model;
mod skew_fixtures;
