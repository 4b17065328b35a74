//! Per object, the first publication of a shared resource (the plain
//! listener's route configuration, the HTTPS listener) that holds the
//! object as it is now: what the object needs of each Envoy
//! (`aether_xds::fleet::Need`).
//!
//! A shared resource is published anew for any object's change. Needing
//! its latest number would make every object wait for every other's edit:
//! each `Programmed` status would go `Pending` and back, two writes per
//! object per edit at 50,000 objects, whenever the statuses are derived
//! again (a re-list, a new leader). So each publication moves the number
//! of the objects it changed alone.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use aether_projection::{ObjectKey, Snapshot};

use crate::tls::{Resolution, Resolutions};

/// The first publication holding each object as it is now.
#[derive(Debug, Default)]
pub(crate) struct Since {
    /// Of the objects not changed since the first publication.
    floor: u64,
    /// Of the others.
    by_object: HashMap<ObjectKey, u64>,
}

impl Since {
    /// Everything is as of the item numbered `seq` (a first, or a new layout).
    pub(crate) fn reset(&mut self, seq: u64) {
        self.floor = seq;
        self.by_object.clear();
    }

    /// `key` changed in the item numbered `seq`.
    pub(crate) fn moved(&mut self, key: ObjectKey, seq: u64) {
        self.by_object.insert(key, seq);
    }

    /// `key` is no longer held.
    pub(crate) fn gone(&mut self, key: &ObjectKey) {
        self.by_object.remove(key);
    }

    /// The first publication holding `key` as it is now; no more than the latest.
    pub(crate) fn of(&self, key: &ObjectKey, latest: u64) -> u64 {
        self.by_object.get(key).copied().unwrap_or(self.floor).min(latest)
    }
}

/// The listener's [`Since`], and a digest of each object's chain as the
/// last listener holds it, to tell which chains a new listener changed.
#[derive(Debug, Default)]
pub(crate) struct ListenerSince {
    pub(crate) since: Since,
    chains: HashMap<ObjectKey, u64>,
}

impl ListenerSince {
    /// A new listener, its item numbered `seq`, made of `snapshot`'s chains and
    /// `resolutions`: O(chains), as making the listener is.
    pub(crate) fn published(&mut self, snapshot: &Snapshot, resolutions: &Resolutions, seq: u64) {
        let first = self.chains.is_empty() && self.since.floor == 0;
        let mut now = HashMap::with_capacity(snapshot.tls_chains.len());
        for chain in snapshot.tls_chains.iter() {
            let mut hasher = DefaultHasher::new();
            chain.hash(&mut hasher);
            match resolutions.get(&chain.secret) {
                Resolution::Delegated(cluster) => Some(cluster).hash(&mut hasher),
                _ => None::<&String>.hash(&mut hasher),
            }
            resolutions.usable(&chain.secret).hash(&mut hasher);
            now.insert(chain.object.clone(), hasher.finish());
        }
        if first {
            self.since.reset(seq);
        } else {
            for (key, digest) in &now {
                if self.chains.get(key) != Some(digest) {
                    self.since.moved(key.clone(), seq);
                }
            }
            for key in self.chains.keys().filter(|key| !now.contains_key(*key)) {
                self.since.gone(key);
            }
        }
        self.chains = now;
    }
}
