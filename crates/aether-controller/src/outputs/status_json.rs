//! `status.json`: local mode's statuses, `namespace/name` → status (there
//! is no API server to hold them), read back at start so that
//! `lastTransitionTime` survives a restart.

use std::collections::BTreeMap;

use aether_api::config::v1::VirtualHostStatus;
use aether_projection::{ObjectKey, RenderError};

/// Local mode's status report: `namespace/name` → status.
pub const STATUS_FILE: &str = "status.json";

/// The report of `statuses`, pretty JSON in key order.
pub fn render(statuses: &BTreeMap<ObjectKey, VirtualHostStatus>) -> Result<Vec<u8>, RenderError> {
    let report: BTreeMap<String, &VirtualHostStatus> =
        statuses.iter().map(|(key, status)| (key.to_string(), status)).collect();
    super::pretty(&report)
}

/// The statuses of a report; a key that is not `namespace/name` is skipped.
pub fn parse(bytes: &[u8]) -> serde_json::Result<BTreeMap<ObjectKey, VirtualHostStatus>> {
    let report: BTreeMap<String, VirtualHostStatus> = serde_json::from_slice(bytes)?;
    Ok(report
        .into_iter()
        .filter_map(|(key, status)| {
            let (namespace, name) = key.split_once('/')?;
            Some((ObjectKey::new(namespace, name), status))
        })
        .collect())
}
