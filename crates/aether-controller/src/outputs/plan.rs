//! The reconcile core: from a snapshot and what is stored now, the files to
//! write and the status patches to send.

use std::collections::BTreeMap;
use std::fmt;

use aether_projection::{ObjectKey, RenderError, Snapshot};
use jiff::Timestamp;

use super::{Written, chains, listeners, secrets};
use crate::status::{self, Observed, StatusPatch};
use crate::tls::EdgeTls;

/// What one reconcile pass should do.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Files whose content changed, in write order (name, bytes).
    pub writes: Vec<(&'static str, prost::bytes::Bytes)>,
    /// Every SDS file of the ready secrets (name under `secrets/`,
    /// content); [`super::write_changed`] writes those that changed and
    /// removes the others. None without Envoy's files
    /// ([`Written::without_envoy_files`]).
    pub secret_files: Vec<(String, Vec<u8>)>,
    /// The route files of the HTTPS chains rendered anew, and every chain's
    /// directory ([`chains`]). None without Envoy's files.
    pub chain_files: chains::ChainFiles,
    /// Why the new `listeners.json` is not written, if it is not: Envoy
    /// could not watch all of its files ([`within_watch_limit`]). The
    /// previous one stays served.
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

/// The files to write (those whose bytes differ from `written`) and the
/// status patches to send (for the objects of `observed` whose stored
/// status differs from the desired one). `now` stamps conditions whose
/// status flips.
pub fn plan(
    snapshot: &Snapshot,
    tls: &EdgeTls,
    observed: &BTreeMap<ObjectKey, Observed>,
    written: &Written,
    now: Timestamp,
) -> Result<Plan, PlanError> {
    let mut writes = super::render_changes(snapshot, written).map_err(PlanError::Render)?;
    let mut secret_files = Vec::new();
    let mut chain_files = chains::ChainFiles::default();
    let mut listener_refused = None;
    if written.envoy_files() {
        secret_files = secrets::files(tls).map_err(PlanError::Render)?;
        chain_files = chains::render_changes(snapshot, written).map_err(PlanError::Render)?;
        if let Some(listener) = listeners::render_change(snapshot, tls, written).map_err(PlanError::Render)? {
            match within_watch_limit(snapshot, tls, written, secret_files.len()) {
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

/// Whether Envoy can watch every file of `snapshot`'s listener, beside
/// `secrets` SDS files, within `written`'s [`chains::WatchLimit`]; if not,
/// why the listener is refused.
pub fn within_watch_limit(snapshot: &Snapshot, tls: &EdgeTls, written: &Written, secrets: usize) -> Result<(), String> {
    // Envoy watches the files of the chains the listener holds: those whose
    // secret is served (a fleet naming secrets not given has no chain to
    // watch).
    let held = snapshot
        .tls_chains
        .iter()
        .filter(|chain| tls.resolutions.usable(&chain.secret))
        .count();
    written.watch_limit.check(chains::watches_needed(held, secrets))
}
