//! The real-Envoy suite: Envoy 1.40 (`cargo xtask pyenv` installs it) on
//! the generated bootstrap, in front of echo backends, fed by the
//! controller in local mode, over `routes.json` and over gRPC. Every check
//! is a real HTTP request through Envoy.
//!
//! `cargo test -p aether-controller --test envoy` runs it alone.

mod actions;
mod chains;
mod cluster;
mod diff;
mod escapes;
mod examples;
mod explain;
mod explain_tls;
mod faults;
mod kubectl_wait;
mod live;
mod matching;
mod programmed;
mod properties;
mod regexes;
mod restart;
mod tls;
mod tls_properties;

use std::collections::BTreeSet;

use aether_e2e::{Controller, Edge, Mode};

/// This build's controller.
fn controller() -> Controller {
    Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
}

/// An edge running this build's controller.
fn edge(mode: Mode, files: &[(&str, &str)], clusters: &BTreeSet<String>) -> Edge {
    Edge::start(controller(), mode, files, clusters)
}
