//! The VirtualHost controller: keeps the edge's Envoy route configuration
//! and every VirtualHost's status in step with the VirtualHost objects.
//!
//! The core is pure: [`outputs::plan()`] takes a projection
//! [`Snapshot`](aether_projection::Snapshot), what is known of each object's
//! stored status and the bytes last written, and returns the files to write
//! and the status patches to send; [`outputs`] renders and writes every
//! file. One pass (`pass.rs`: snapshot, secrets, statuses, xDS, plan, write)
//! runs it in both modes, which only move data: [`cluster`] (a kube-runtime
//! watcher in, files and `/status` merge patches out) and [`local`]
//! (manifest files in, files and a `status.json` report out).

#![deny(missing_docs)]

#[cfg(feature = "server")]
pub mod cluster;
pub mod debounce;
pub mod events;
#[cfg(feature = "server")]
pub mod leader;
pub mod listener;
#[cfg(feature = "server")]
pub mod local;
#[cfg(feature = "server")]
pub mod metrics;
pub mod outputs;
#[cfg(feature = "server")]
mod pass;
pub mod programmed;
pub mod status;
mod text;
pub mod tls;
#[cfg(feature = "server")]
pub mod xds;

pub use outputs::{Files, Written};
#[cfg(feature = "server")]
pub use pass::Summary;
pub use status::{Observed, StatusPatch};
pub use tls::{EdgeTls, TlsSettings};

#[cfg(test)]
mod testing {
    /// The projection of every manifest in `examples/`: conflicts,
    /// wildcards, several route counts.
    pub(crate) fn examples_snapshot() -> aether_projection::Snapshot {
        let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
        let mut text = String::new();
        for entry in std::fs::read_dir(examples).unwrap() {
            text.push_str("\n---\n");
            text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
        let objects = aether_manifests::parse_manifests(&text).unwrap();
        aether_projection::project(objects, &aether_projection::ProjectionConfig::default()).unwrap()
    }
}
