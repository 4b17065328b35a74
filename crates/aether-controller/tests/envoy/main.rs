//! The real-Envoy suite: Envoy 1.40 (`cargo xtask pyenv` installs it) on
//! the generated bootstrap, in front of echo backends, fed by the
//! controller in local mode, over `routes.json` and over gRPC. Every check
//! is a real HTTP request through Envoy.
//!
//! `cargo test -p aether-controller --test envoy` runs it alone.

mod edge;
mod escapes;
mod examples;
mod live;
mod properties;
mod restart;
