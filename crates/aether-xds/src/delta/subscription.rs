//! What one delta stream asks of one type, what it holds by our account,
//! and the changes it is owed against a publication.
//!
//! After its first sync, what Envoy holds is not stored per stream: it is
//! the publication the subscription last synced with, restricted to the
//! names it wants, less the names subscribed since (every change of a
//! wanted resource was sent, and a NACKed one counts as held, so it is not
//! sent again until it changes). A stream thus keeps its names and one
//! shared publication, not a copy of every name and version it was sent.
//!
//! What a stream names is bounded ([`MAX_SUBSCRIBED_NAMES`],
//! [`MAX_SUBSCRIBED_NAME_BYTES`] per type): a request past it ends the
//! stream (`RESOURCE_EXHAUSTED`, naming the bound), so a client naming
//! more costs its own stream alone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
use tonic::Status;

use crate::resources::{Item, Resources};

/// The name that subscribes to (or unsubscribes from) every resource.
pub(crate) const WILDCARD: &str = "*";
/// Names one stream subscribes to of one type at most: twice the 50,000
/// HTTPS objects an edge is measured at (each a route configuration and
/// a secret an Envoy names).
pub(crate) const MAX_SUBSCRIBED_NAMES: usize = 100_000;
/// Bytes of the names one stream subscribes to of one type at most: what
/// one request may carry, which is what a reconnecting Envoy names at once.
pub(crate) const MAX_SUBSCRIBED_NAME_BYTES: usize = crate::requests::MAX_REQUEST_BYTES;

/// One stream's subscription to one type.
#[derive(Debug, Default)]
pub(crate) struct Subscription {
    /// The first request of this type came: nothing is sent before it.
    asked: bool,
    /// Every resource (a first request naming none, or `*`).
    wildcard: bool,
    /// The resources named, besides the wildcard.
    names: BTreeSet<String>,
    /// Their bytes.
    name_bytes: usize,
    /// Until the first sync: what a reconnecting Envoy said it holds
    /// (`initial_resource_versions`).
    initial: HashMap<String, Arc<str>>,
    /// The publication last synced with: what Envoy holds (see the module
    /// documentation).
    synced: Option<Arc<Resources>>,
    /// Names subscribed since: not held, sent if published.
    dirty: BTreeSet<String>,
    /// The wildcard was asked for since: resources not named before are
    /// not held.
    wildcard_added: bool,
}

/// What a response carries: resources put, by name, and names removed.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Changes {
    pub(crate) put: Vec<(String, Item)>,
    pub(crate) removed: Vec<String>,
}

impl Subscription {
    /// Applies the subscription part of `request`; returns whether the
    /// names asked for changed (the first request counts as a change), or
    /// the refusal that ends the stream when they would pass their bounds.
    pub(crate) fn apply(&mut self, request: &DeltaDiscoveryRequest) -> Result<bool, Status> {
        let first = !self.asked;
        let mut changed = first;
        if first {
            self.asked = true;
            // A reconnecting Envoy's resources: not sent again unless changed.
            self.initial = request
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
                    self.wildcard_added = true;
                    changed = true;
                }
                continue;
            }
            if !self.names.contains(name) {
                self.bound(request, name)?;
                self.name_bytes += name.len();
                self.names.insert(name.clone());
                changed = true;
            }
            if !first {
                // Asked anew after the first request: sent again.
                self.dirty.insert(name.clone());
                self.initial.remove(name);
            }
        }
        for name in &request.resource_names_unsubscribe {
            if name == WILDCARD {
                changed |= self.wildcard;
                self.wildcard = false;
                self.wildcard_added = false;
                continue;
            }
            if self.names.remove(name) {
                self.name_bytes -= name.len();
                changed = true;
            }
            if !self.wildcard {
                self.dirty.remove(name);
            }
        }
        Ok(changed)
    }

    /// The refusal of `name`, if subscribing it passes a bound.
    fn bound(&self, request: &DeltaDiscoveryRequest, name: &str) -> Result<(), Status> {
        if self.names.len() >= MAX_SUBSCRIBED_NAMES {
            return Err(Status::resource_exhausted(format!(
                "this stream subscribes to more than {MAX_SUBSCRIBED_NAMES} names of {}",
                request.type_url
            )));
        }
        if self.name_bytes + name.len() > MAX_SUBSCRIBED_NAME_BYTES {
            return Err(Status::resource_exhausted(format!(
                "this stream subscribes to names of {} of more than {MAX_SUBSCRIBED_NAME_BYTES} bytes",
                request.type_url
            )));
        }
        Ok(())
    }

    /// How many names it subscribes to, besides the wildcard.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the last sync was with `current` (and no other is kept).
    #[cfg(test)]
    pub(crate) fn synced_with(&self, current: &Arc<Resources>) -> bool {
        self.synced.as_ref().is_some_and(|synced| Arc::ptr_eq(synced, current))
    }

    /// Whether the first request of this type came.
    pub(crate) fn asked(&self) -> bool {
        self.asked
    }

    /// Whether the stream asks for `name`.
    pub(crate) fn wants(&self, name: &str) -> bool {
        self.wildcard || self.names.contains(name)
    }

    /// What `current` owes Envoy, recorded as sent; `None` when nothing
    /// (or before the first request). Costs O(changes since the last
    /// sync), or O(resources wanted) on the first sync and when the
    /// wildcard is asked for.
    pub(crate) fn next(&mut self, current: &Arc<Resources>) -> Option<Changes> {
        if !self.asked {
            return None;
        }
        let mut put: BTreeMap<&str, &Item> = BTreeMap::new();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        let first = self.synced.is_none();
        match &self.synced {
            None => {
                let news = |name: &str, item: &Item| self.initial.get(name) != Some(&item.version);
                if self.wildcard {
                    put.extend(current.iter().filter(|(name, item)| news(name, item)));
                }
                for (name, item) in self
                    .names
                    .iter()
                    .filter_map(|name| current.get(name).map(|item| (name, item)))
                {
                    if news(name, item) {
                        put.insert(name, item);
                    }
                }
                // What it said it holds, wants, and is gone.
                removed.extend(
                    self.initial
                        .keys()
                        .filter(|name| current.get(name).is_none() && self.wants(name))
                        .cloned(),
                );
            }
            Some(synced) => {
                if !Arc::ptr_eq(synced, current) {
                    for (name, item) in current.changes_since(synced) {
                        // Not held: wanted only since, or named anew.
                        let held_before = !self.wildcard_added || self.names.contains(name);
                        if !self.wants(name) || self.dirty.contains(name) || !held_before {
                            continue;
                        }
                        match item {
                            Some(item) => {
                                put.insert(name, item);
                            }
                            None => {
                                removed.insert(name.to_owned());
                            }
                        }
                    }
                }
                for (name, item) in self
                    .dirty
                    .iter()
                    .filter_map(|name| current.get(name).map(|item| (name, item)))
                {
                    if self.wants(name) {
                        put.insert(name, item);
                    }
                }
                if self.wildcard_added && self.wildcard {
                    put.extend(current.iter().filter(|(name, _)| !self.names.contains(*name)));
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
        self.synced = Some(current.clone());
        self.initial = HashMap::new();
        self.dirty.clear();
        self.wildcard_added = false;
        // The first answer goes out even empty: Envoy waits for one.
        (first || !changes.put.is_empty() || !changes.removed.is_empty()).then_some(changes)
    }
}
