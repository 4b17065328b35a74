//! `aetherctl status`: the status the controller would write for each
//! object, from the controller's own status code (`aether_controller::status`)
//! over the projection of the manifests, as its local mode computes it.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use aether_api::ObjectKey;
use aether_api::config::v1::VirtualHostStatus;
use aether_controller::status::{self, ACCEPTED, Observed, REASON_ACCEPTED};
use aether_manifests::{Limits, Loaded};
use jiff::Timestamp;
use serde::Serialize;

use crate::project::{Projected, load_and_project};
use crate::report::{CommandReport, ErrorReport, SkippedReport, display};

/// What `status` found: the JSON output of `status --output json`. Every key
/// is always present; new keys may be added, none removed or renamed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusReport {
    /// Every object is fully served (`Accepted` True with reason `Accepted`)
    /// and every input read.
    pub served: bool,
    /// One per object, in file and document order.
    pub objects: Vec<ObjectStatus>,
    /// Inputs that could not be read; when there is any, no status is computed.
    pub errors: Vec<ErrorReport>,
    /// Documents of other kinds, left out.
    pub skipped: Vec<SkippedReport>,
    /// Always false: whether the edge's Envoys serve an object (its
    /// `Programmed` condition) is seen only by the controller serving
    /// them; offline, a stored `Programmed` is kept as it is.
    #[serde(rename = "programmedObservable")]
    pub programmed_observable: bool,
}

/// One object's status as the controller would write it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    pub file: String,
    pub document: usize,
    pub namespace: String,
    pub name: String,
    /// The whole status, in the Kubernetes JSON form.
    pub status: VirtualHostStatus,
    /// Whether it differs from the `status` the manifest carries (as
    /// `kubectl get -o yaml` writes it), so that the controller would patch
    /// it; true when the manifest has none.
    pub would_patch: bool,
}

/// Projects the objects under `paths` and computes each one's status. `now`
/// stamps conditions that flip (or first appear).
pub fn check(paths: &[PathBuf], limits: &Limits, now: Timestamp) -> StatusReport {
    let (projected, skipped) = load_and_project(paths, limits);
    let Projected {
        snapshot,
        objects: loaded,
    } = match projected {
        Ok(projected) => projected,
        Err(errors) => {
            return StatusReport {
                served: false,
                objects: Vec::new(),
                errors,
                skipped,
                programmed_observable: false,
            };
        }
    };
    let observed: BTreeMap<ObjectKey, Observed> = loaded
        .iter()
        .map(|l| {
            let observed = Observed {
                generation: l.object.generation,
                status: l.object.status.clone(),
                // No Envoy offline: Programmed stays as stored.
                programmed: None,
            };
            (l.object.key(), observed)
        })
        .collect();
    let statuses = match status::statuses(&snapshot, None, &observed, now) {
        Ok(statuses) => statuses,
        Err(e) => {
            // The snapshot was made here: a bug, reported rather than hidden.
            let error = ErrorReport {
                file: "(all inputs)".into(),
                document: None,
                path: None,
                message: format!("the projected route configuration does not decode: {e}"),
            };
            return StatusReport {
                served: false,
                objects: Vec::new(),
                errors: vec![error],
                skipped,
                programmed_observable: false,
            };
        }
    };
    let mut by_key: BTreeMap<ObjectKey, VirtualHostStatus> =
        statuses.into_iter().map(|patch| (patch.key, patch.status)).collect();
    let objects: Vec<ObjectStatus> = loaded
        .into_iter()
        .map(
            |Loaded {
                 file, document, object, ..
             }| {
                let status = by_key.remove(&object.key()).unwrap_or_default();
                ObjectStatus {
                    would_patch: object.status.as_ref() != Some(&status),
                    file: display(&file),
                    document,
                    namespace: object.namespace,
                    name: object.name,
                    status,
                }
            },
        )
        .collect();
    StatusReport {
        served: objects.iter().all(|o| fully_served(&o.status)),
        objects,
        errors: Vec::new(),
        skipped,
        programmed_observable: false,
    }
}

fn accepted(status: &VirtualHostStatus) -> Option<&aether_api::config::v1::Condition> {
    status.conditions.iter().find(|c| c.r#type == ACCEPTED)
}

fn fully_served(status: &VirtualHostStatus) -> bool {
    accepted(status).is_some_and(|c| c.status == "True" && c.reason == REASON_ACCEPTED)
}

impl CommandReport for StatusReport {
    fn errors(&self) -> &[ErrorReport] {
        &self.errors
    }

    fn skipped(&self) -> &[SkippedReport] {
        &self.skipped
    }

    fn passed(&self) -> bool {
        self.objects.iter().all(|o| fully_served(&o.status))
    }

    /// One line per object, then a summary:
    ///
    /// ```text
    /// FILE: document N: NAMESPACE/NAME: Accepted=STATUS (REASON), N route(s): MESSAGE
    /// ```
    ///
    /// with `[would patch]` at the end when the manifest's own status differs.
    fn write_findings(&self, out: &mut dyn Write) -> io::Result<()> {
        if !self.errors.is_empty() {
            return Ok(());
        }
        for o in &self.objects {
            let at = format!("{}: document {}: {}/{}", o.file, o.document, o.namespace, o.name);
            let Some(condition) = accepted(&o.status) else {
                writeln!(out, "{at}: no Accepted condition")?;
                continue;
            };
            let patch = if o.would_patch { " [would patch]" } else { "" };
            writeln!(
                out,
                "{at}: Accepted={} ({}), {} route(s): {}{patch}",
                condition.status, condition.reason, o.status.route_count, condition.message
            )?;
        }
        let served = self.objects.iter().filter(|o| fully_served(&o.status)).count();
        writeln!(
            out,
            "{} object(s): {} fully served, {} not",
            self.objects.len(),
            served,
            self.objects.len() - served
        )?;
        writeln!(
            out,
            "Programmed (whether the edge's Envoys serve each object) is not observable offline: \
             only the controller serving them sees it"
        )
    }
}
