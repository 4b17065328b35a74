//! What one delta stream asks of one type, what it holds by our account,
//! and the changes it is owed against a publication.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;

use super::super::resources::{Item, Resources};

/// The name that subscribes to (or unsubscribes from) every resource.
const WILDCARD: &str = "*";

/// One stream's subscription to one type.
#[derive(Debug, Default)]
pub(crate) struct Subscription {
    /// The first request of this type came: nothing is sent before it.
    asked: bool,
    /// Every resource (a first request naming none, or `*`).
    wildcard: bool,
    /// The resources named, besides the wildcard.
    names: BTreeSet<String>,
    /// What Envoy holds, by our account: each resource's version as sent
    /// (or as it said on reconnecting); a NACKed one stays, so it is not
    /// sent again until it changes.
    held: HashMap<String, Arc<str>>,
    /// The publication `held` was last brought up to date with.
    synced: Option<Arc<Resources>>,
    /// Names subscribed since: looked at whatever changed.
    dirty: BTreeSet<String>,
    /// Look at every resource wanted (the first sync, a new wildcard), and
    /// answer even if nothing is owed (Envoy waits for a first response).
    full: bool,
}

/// What a response carries: resources put, by name, and names removed.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Changes {
    pub(crate) put: Vec<(String, Item)>,
    pub(crate) removed: Vec<String>,
}

impl Subscription {
    /// Applies the subscription part of `request`; returns whether the
    /// names asked for changed (the first request counts as a change).
    pub(crate) fn apply(&mut self, request: &DeltaDiscoveryRequest) -> bool {
        let first = !self.asked;
        let mut changed = first;
        if first {
            self.asked = true;
            self.full = true;
            // A reconnecting Envoy's resources: not sent again unless changed.
            self.held = request
                .initial_resource_versions
                .iter()
                .map(|(name, version)| (name.clone(), Arc::from(version.as_str())))
                .collect();
            // The legacy wildcard: a first request naming nothing.
            self.wildcard = request.resource_names_subscribe.is_empty();
        }
        for name in &request.resource_names_subscribe {
            if name == WILDCARD {
                if !self.wildcard {
                    self.wildcard = true;
                    self.full = true;
                    changed = true;
                }
                continue;
            }
            changed |= self.names.insert(name.clone());
            self.dirty.insert(name.clone());
            if !first {
                // Asked anew after the first request: sent again.
                self.held.remove(name);
            }
        }
        for name in &request.resource_names_unsubscribe {
            if name == WILDCARD {
                changed |= self.wildcard;
                self.wildcard = false;
                // Envoy drops what it no longer asks for.
                let names = &self.names;
                self.held.retain(|held, _| names.contains(held));
                continue;
            }
            changed |= self.names.remove(name);
            self.dirty.remove(name);
            if !self.wildcard {
                self.held.remove(name);
            }
        }
        changed
    }

    /// The names asked for, in order (none: every resource).
    pub(crate) fn names(&self) -> Vec<String> {
        if self.wildcard {
            Vec::new()
        } else {
            self.names.iter().cloned().collect()
        }
    }

    /// Whether the last sync was with `current` (and no other is kept).
    #[cfg(test)]
    pub(crate) fn synced_with(&self, current: &Arc<Resources>) -> bool {
        self.synced.as_ref().is_some_and(|synced| Arc::ptr_eq(synced, current))
    }

    fn wants(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }

    /// Whether `item` of `name` is news to Envoy.
    fn owed(&self, name: &str, item: &Item) -> bool {
        self.wants(name) && self.held.get(name) != Some(&item.version)
    }

    /// What `current` owes Envoy, recorded as sent; `None` when nothing
    /// (or before the first request). Costs O(changes since the last
    /// sync), or O(resources wanted) on the first sync.
    pub(crate) fn next(&mut self, current: &Arc<Resources>) -> Option<Changes> {
        if !self.asked {
            return None;
        }
        let mut put: BTreeMap<&str, &Item> = BTreeMap::new();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        let answer = self.full;
        match self.synced.as_ref().filter(|_| !self.full) {
            None => {
                if self.wildcard {
                    put.extend(current.iter().filter(|(name, item)| self.owed(name, item)));
                }
                for name in &self.names {
                    if let Some((name, item)) = current.get(name).map(|item| (name.as_str(), item))
                        && self.owed(name, item)
                    {
                        put.insert(name, item);
                    }
                }
                // What Envoy holds that is gone (it said so on reconnecting, or it was sent).
                removed.extend(
                    self.held
                        .keys()
                        .filter(|name| current.get(name).is_none() && self.wants(name))
                        .cloned(),
                );
                // What it holds and no longer asks for is not ours to track.
                let (names, wildcard) = (&self.names, self.wildcard);
                self.held.retain(|name, _| wildcard || names.contains(name));
            }
            Some(synced) => {
                if !Arc::ptr_eq(synced, current) {
                    for (name, item) in current.changes_since(synced) {
                        match item {
                            Some(item) if self.owed(name, item) => {
                                put.insert(name, item);
                            }
                            None if self.held.contains_key(name) && self.wants(name) => {
                                removed.insert(name.to_owned());
                            }
                            _ => {}
                        }
                    }
                }
                for name in &self.dirty {
                    if let Some(item) = current.get(name)
                        && self.owed(name, item)
                    {
                        put.insert(name, item);
                    }
                }
            }
        }
        let changes = Changes {
            put: put
                .into_iter()
                .map(|(name, item)| (name.to_owned(), item.clone()))
                .collect(),
            removed: removed.into_iter().collect(),
        };
        for (name, item) in &changes.put {
            self.held.insert(name.clone(), item.version.clone());
        }
        for name in &changes.removed {
            self.held.remove(name);
        }
        self.synced = Some(current.clone());
        self.dirty.clear();
        self.full = false;
        (answer || !changes.put.is_empty() || !changes.removed.is_empty()).then_some(changes)
    }
}
