//! The VirtualHost controller: keeps the edge's Envoy route configuration
//! and every VirtualHost's status in step with the VirtualHost objects.
//!
//! The core is pure: [`plan`] takes a projection [`Snapshot`], what is known
//! of each object's stored status and the bytes last written, and returns
//! the files to write and the status patches to send; [`outputs`] renders
//! and writes every file. One pass (`pass.rs`: snapshot, secrets, statuses,
//! xDS, plan, write) runs it in both modes, which only move data:
//! [`cluster`] (a kube-runtime watcher in, files and `/status` merge patches
//! out) and [`local`] (manifest files in, files and a `status.json` report
//! out).

#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fmt;

use aether_projection::{ObjectKey, RenderError, Snapshot};
use jiff::Timestamp;

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
#[cfg(feature = "server")]
pub mod replicas;
pub mod status;
pub mod tls;
#[cfg(feature = "server")]
pub mod xds;

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

pub use outputs::{Files, Written};
pub use status::{Observed, StatusPatch};
pub use tls::{EdgeTls, TlsSettings};

/// What one reconcile pass should do.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Files whose content changed, in write order (name, bytes).
    pub writes: Vec<(&'static str, prost::bytes::Bytes)>,
    /// Every SDS file of the ready secrets (name under `secrets/`,
    /// content); [`outputs::write_changed`] writes those that changed and
    /// removes the others. None without Envoy's files
    /// ([`outputs::Written::without_envoy_files`]).
    pub secret_files: Vec<(String, Vec<u8>)>,
    /// The route files of the HTTPS chains rendered anew, and every chain's
    /// directory ([`outputs::chains`]). None without Envoy's files.
    pub chain_files: outputs::chains::ChainFiles,
    /// Why the new `listeners.json` is not written, if it is not: Envoy
    /// could not watch all of its files. The previous one stays served.
    pub listener_refused: Option<String>,
    /// Objects whose status differs from the stored one, in key order.
    pub patches: Vec<StatusPatch>,
    /// Host conflicts in the snapshot (one per lost host).
    pub conflicts: usize,
    /// Objects left out for their problems: invalid, or unsupported (from a
    /// newer API version).
    pub invalid: usize,
}

/// The snapshot could not be turned into files or statuses.
#[derive(Debug)]
pub enum PlanError {
    /// Rendering the files failed.
    Render(RenderError),
    /// The snapshot's route configuration did not decode.
    Decode(prost::DecodeError),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Render(err) => err.fmt(f),
            Self::Decode(err) => write!(f, "decoding the route configuration: {err}"),
        }
    }
}

impl std::error::Error for PlanError {}

/// The reconcile core: from the projection and what is stored now, the
/// files to write (those whose bytes differ from `written`) and the status
/// patches to send (for the objects of `observed` whose stored status
/// differs from the desired one). `now` stamps conditions whose status flips.
pub fn plan(
    snapshot: &Snapshot,
    tls: &EdgeTls,
    observed: &BTreeMap<ObjectKey, Observed>,
    written: &Written,
    now: Timestamp,
) -> Result<Plan, PlanError> {
    let mut writes = outputs::render_changes(snapshot, written).map_err(PlanError::Render)?;
    let mut secret_files = Vec::new();
    let mut chain_files = outputs::chains::ChainFiles::default();
    let mut listener_refused = None;
    if written.envoy_files() {
        secret_files = outputs::secrets::files(tls).map_err(PlanError::Render)?;
        chain_files = outputs::chains::render_changes(snapshot, written).map_err(PlanError::Render)?;
        if let Some(listener) = outputs::listeners::render_change(snapshot, tls, written).map_err(PlanError::Render)? {
            // Envoy watches the files of the chains the listener holds:
            // those whose secret is served (a fleet naming secrets not
            // given has no chain to watch).
            let held = snapshot
                .tls_chains
                .iter()
                .filter(|chain| tls.resolutions.usable(&chain.secret))
                .count();
            let watches = outputs::chains::watches_needed(held, secret_files.len());
            match written.watch_limit.check(watches) {
                Ok(()) => writes.push(listener),
                Err(refused) => {
                    // The previous listener stays, and so do the files it
                    // names; no chain it does not name is added.
                    chain_files
                        .rendered
                        .retain(|file| written.chains.contains_key(&file.dir));
                    chain_files.current.extend(written.chains.keys().cloned());
                    listener_refused = Some(refused);
                }
            }
        }
    }
    let patches = status::patches(snapshot, Some(&tls.resolutions), observed, now).map_err(PlanError::Decode)?;
    let invalid = snapshot.invalid_objects();
    Ok(Plan {
        writes,
        secret_files,
        chain_files,
        listener_refused,
        patches,
        conflicts: snapshot.report.conflicts.len(),
        invalid,
    })
}
