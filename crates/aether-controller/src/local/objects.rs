//! The objects local mode fed to the projector and their statuses, which
//! `status.json` holds (there is no API server to store them): the
//! [`Inputs`] local mode gives a pass. `observedGeneration` is the
//! manifest's `metadata.generation` (0 when it has none).

use std::collections::{BTreeMap, HashMap};

use aether_api::config::v1::VirtualHostStatus;
use aether_projection::{ObjectKey, VirtualHostObject};
use prost::bytes::Bytes;

use crate::outputs::{STATUS_FILE, status_json};
use crate::pass::{Inputs, log_status};
use crate::status::{Observed, StatusPatch};

pub(super) struct Objects {
    /// The objects fed to the projector (looked up once per object read on
    /// every pass: a hash map, not a tree of string comparisons).
    fed: HashMap<ObjectKey, VirtualHostObject>,
    statuses: BTreeMap<ObjectKey, VirtualHostStatus>,
    /// Every status held is of an object fed: none to drop until one goes.
    statuses_pruned: bool,
    /// Whether `status.json` may not hold `statuses` (one changed since it
    /// was last written, or that write failed): it is rendered only then,
    /// not on every pass (it holds every object's status).
    status_file_stale: bool,
}

impl Objects {
    /// No object yet, the statuses of an earlier run's `status.json`.
    pub(super) fn new(statuses: BTreeMap<ObjectKey, VirtualHostStatus>) -> Self {
        Self {
            fed: HashMap::new(),
            statuses,
            statuses_pruned: false,
            status_file_stale: true,
        }
    }

    /// The object fed as `key`.
    pub(super) fn fed(&self, key: &ObjectKey) -> Option<&VirtualHostObject> {
        self.fed.get(key)
    }

    /// `object` is fed as `key`.
    pub(super) fn feed(&mut self, key: ObjectKey, object: VirtualHostObject) {
        self.fed.insert(key, object);
    }

    /// The object `key` is no longer fed.
    pub(super) fn remove(&mut self, key: &ObjectKey) {
        if self.fed.remove(key).is_some() {
            self.statuses_pruned = false;
        }
    }

    /// The pass wrote its files, `status.json` among them when it was stale.
    pub(super) fn status_file_written(&mut self) {
        self.status_file_stale = false;
    }
}

impl Inputs for Objects {
    fn count(&self) -> usize {
        self.fed.len()
    }

    fn observed(&self, key: &ObjectKey) -> Option<Observed> {
        self.fed.get(key).map(|object| Observed {
            generation: object.generation,
            status: self.statuses.get(key).cloned(),
            programmed: None,
        })
    }

    fn every_observed(&self) -> BTreeMap<ObjectKey, Observed> {
        self.fed
            .iter()
            .map(|(key, object)| {
                let status = self.statuses.get(key).cloned();
                (
                    key.clone(),
                    Observed {
                        generation: object.generation,
                        status,
                        programmed: None,
                    },
                )
            })
            .collect()
    }

    /// Each changed status is logged and kept; `status.json` is rendered
    /// when one changed or an object went.
    fn statuses_file(&mut self, patches: &[StatusPatch]) -> anyhow::Result<Option<(&'static str, Bytes)>> {
        let held = self.statuses.len();
        for patch in patches {
            log_status(&patch.key, &patch.status);
            self.statuses.insert(patch.key.clone(), patch.status.clone());
        }
        if !self.statuses_pruned {
            self.statuses.retain(|key, _| self.fed.contains_key(key));
            self.statuses_pruned = true;
        }
        if !patches.is_empty() || self.statuses.len() != held {
            self.status_file_stale = true;
        }
        if !self.status_file_stale {
            return Ok(None);
        }
        Ok(Some((STATUS_FILE, status_json::render(&self.statuses)?.into())))
    }
}
