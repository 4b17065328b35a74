//! aether-api's integration tests, one binary (one link step): the types'
//! encodings and round trips, the validator against the reference
//! protovalidate and the CRD (the three judges), the fixtures, the stored
//! objects, the generated CRD and the published package.
//!
//! Each module is built with the crate features it needs (the `cfg`s
//! below). `cargo test -p aether-api --all-features --test api parity::`
//! runs one module alone.

mod common;
#[cfg(all(feature = "serde", feature = "reflect"))]
mod editions_runtime;
#[cfg(all(feature = "validate", feature = "serde"))]
mod fixtures;
#[cfg(feature = "kube")]
mod kube_crd;
#[cfg(feature = "serde")]
mod kubernetes_json;
// Runs `cargo package --list`: the published files.
mod package;
// The three judges: Rust validator, CRD (OpenAPI + CEL), protovalidate.
#[cfg(all(feature = "validate", feature = "serde", feature = "reflect"))]
mod parity;
// Compares the validator with the reference protovalidate (Python); needs
// the venv described in tests/reference/README.md.
#[cfg(feature = "validate")]
mod protovalidate_reference;
#[cfg(all(feature = "serde", feature = "reflect"))]
mod round_trips;
mod stored_objects;
