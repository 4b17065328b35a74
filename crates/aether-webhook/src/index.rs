//! The cluster-wide host index: which VirtualHost claims which host.
//!
//! Fed by a source (the cluster watcher or a watched manifest directory),
//! read by every admission review. A review asks about the hosts of one
//! object, so every lookup is keyed by those hosts (and, for the wildcard
//! warning, by their DNS suffixes): its cost grows with the object's hosts
//! and labels, never with the number of indexed objects.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::sync::{PoisonError, RwLock};

pub use aether_api::ObjectKey;

/// A host of the reviewed object that another object already claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub host: String,
    pub owner: ObjectKey,
}

/// A wildcard of one object covering a specific host of another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// The reviewed object's host.
    pub host: String,
    /// The other object's host it overlaps.
    pub other_host: String,
    pub owner: ObjectKey,
}

/// What the index says about one object's hosts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    pub conflicts: Vec<Conflict>,
    pub overlaps: Vec<Overlap>,
}

/// At most this many overlaps are reported per host of the reviewed object:
/// a warning names examples, and a wildcard like `*.com` could cover
/// thousands of objects.
pub const MAX_OVERLAPS_PER_HOST: usize = 3;

#[derive(Default)]
struct Inner {
    /// Hosts of each object, as indexed (to undo them on update or delete).
    hosts_of: HashMap<ObjectKey, Vec<String>>,
    /// Exact host string (wildcards included, as written) → its owners.
    owners: HashMap<String, BTreeSet<ObjectKey>>,
    /// `example.com` of a wildcard `*.example.com` → the wildcard's owners.
    wildcard_suffixes: HashMap<String, BTreeSet<ObjectKey>>,
    /// Every proper DNS suffix of a specific host (`b.example.com`,
    /// `example.com`, `com` for `a.b.example.com`) → the objects having a
    /// specific host under it, with how many.
    specific_suffixes: HashMap<String, BTreeMap<ObjectKey, u32>>,
    hosts: usize,
}

/// The proper DNS suffixes of `host`: `a.b.c` gives `b.c`, then `c`.
fn proper_suffixes(host: &str) -> impl Iterator<Item = &str> {
    host.match_indices('.').map(move |(i, _)| &host[i + 1..])
}

impl Inner {
    fn add(&mut self, key: &ObjectKey, hosts: &[String]) {
        for host in hosts {
            self.owners.entry(host.clone()).or_default().insert(key.clone());
            if let Some(suffix) = host.strip_prefix("*.") {
                self.wildcard_suffixes
                    .entry(suffix.to_owned())
                    .or_default()
                    .insert(key.clone());
            } else {
                for suffix in proper_suffixes(host) {
                    *self
                        .specific_suffixes
                        .entry(suffix.to_owned())
                        .or_default()
                        .entry(key.clone())
                        .or_default() += 1;
                }
            }
        }
        self.hosts += hosts.len();
    }

    fn remove(&mut self, key: &ObjectKey) -> bool {
        let Some(hosts) = self.hosts_of.remove(key) else {
            return false;
        };
        fn drop_owner(map: &mut HashMap<String, BTreeSet<ObjectKey>>, at: &str, key: &ObjectKey) {
            if let Some(set) = map.get_mut(at) {
                set.remove(key);
                if set.is_empty() {
                    map.remove(at);
                }
            }
        }
        for host in &hosts {
            drop_owner(&mut self.owners, host, key);
            if let Some(suffix) = host.strip_prefix("*.") {
                drop_owner(&mut self.wildcard_suffixes, suffix, key);
            } else {
                for suffix in proper_suffixes(host) {
                    if let Some(counts) = self.specific_suffixes.get_mut(suffix) {
                        if let Some(n) = counts.get_mut(key) {
                            *n -= 1;
                            if *n == 0 {
                                counts.remove(key);
                            }
                        }
                        if counts.is_empty() {
                            self.specific_suffixes.remove(suffix);
                        }
                    }
                }
            }
        }
        self.hosts -= hosts.len();
        true
    }

    fn upsert(&mut self, key: ObjectKey, mut hosts: Vec<String>) {
        self.remove(&key);
        // An object repeating a host claims it once.
        hosts.sort();
        hosts.dedup();
        self.add(&key, &hosts);
        self.hosts_of.insert(key, hosts);
    }
}

/// The host index, shared between its source and the request handlers.
#[derive(Default)]
pub struct HostIndex {
    inner: RwLock<Inner>,
}

impl HostIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the hosts `key` claims, replacing what it claimed before.
    pub fn upsert(&self, key: ObjectKey, hosts: Vec<String>) {
        self.write().upsert(key, hosts);
    }

    /// Forgets `key`; false if it was not indexed.
    pub fn remove(&self, key: &ObjectKey) -> bool {
        self.write().remove(key)
    }

    /// Replaces the whole index (a fresh list from the source).
    pub fn replace_all(&self, objects: impl IntoIterator<Item = (ObjectKey, Vec<String>)>) {
        let mut fresh = Inner::default();
        for (key, hosts) in objects {
            fresh.upsert(key, hosts);
        }
        *self.write() = fresh;
    }

    /// (objects, hosts) indexed.
    pub fn len(&self) -> (usize, usize) {
        let inner = self.read();
        (inner.hosts_of.len(), inner.hosts)
    }

    pub fn is_empty(&self) -> bool {
        self.read().hosts_of.is_empty()
    }

    /// The conflicts and wildcard overlaps of `hosts`, as if claimed by
    /// `key`: `key`'s own entries are ignored, so an update is not judged
    /// against the object's previous version.
    pub fn check(&self, key: &ObjectKey, hosts: &[String]) -> Findings {
        let inner = self.read();
        let mut findings = Findings::default();
        let others = |set: &'_ BTreeSet<ObjectKey>| set.iter().filter(|k| *k != key).cloned().collect::<Vec<_>>();
        for host in hosts {
            if let Some(set) = inner.owners.get(host) {
                for owner in others(set) {
                    findings.conflicts.push(Conflict {
                        host: host.clone(),
                        owner,
                    });
                }
            }
            let mut overlaps = Vec::new();
            if let Some(suffix) = host.strip_prefix("*.") {
                // Which other objects have a specific host under `suffix`?
                if let Some(counts) = inner.specific_suffixes.get(suffix) {
                    for owner in counts.keys().filter(|k| *k != key).take(MAX_OVERLAPS_PER_HOST) {
                        let under = inner.hosts_of[owner].iter().find(|h| {
                            !h.starts_with("*.") && h.ends_with(suffix) && h[..h.len() - suffix.len()].ends_with('.')
                        });
                        if let Some(other_host) = under {
                            overlaps.push(Overlap {
                                host: host.clone(),
                                other_host: other_host.clone(),
                                owner: owner.clone(),
                            });
                        }
                    }
                }
            } else {
                // Which other objects have a wildcard over one of its suffixes?
                for suffix in proper_suffixes(host) {
                    if let Some(set) = inner.wildcard_suffixes.get(suffix) {
                        for owner in set.iter().filter(|k| *k != key) {
                            if overlaps.len() == MAX_OVERLAPS_PER_HOST {
                                break;
                            }
                            overlaps.push(Overlap {
                                host: host.clone(),
                                other_host: format!("*.{suffix}"),
                                owner: owner.clone(),
                            });
                        }
                    }
                }
            }
            findings.overlaps.extend(overlaps);
        }
        findings
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-updated
        // in a way lookups would trip on, so a poisoned lock is still used.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|h| (*h).to_owned()).collect()
    }

    #[test]
    fn exact_conflict_names_owner_and_ignores_self() {
        let index = HostIndex::new();
        let a = ObjectKey::new("team-a", "api");
        index.upsert(a.clone(), hosts(&["api.example.com", "www.example.com"]));
        let b = ObjectKey::new("team-b", "other");
        let found = index.check(&b, &hosts(&["api.example.com", "new.example.com"]));
        assert_eq!(
            found.conflicts,
            [Conflict {
                host: "api.example.com".into(),
                owner: a.clone()
            }]
        );
        assert!(index.check(&a, &hosts(&["api.example.com"])).conflicts.is_empty());
    }

    #[test]
    fn wildcard_and_specific_overlap_both_ways_but_do_not_conflict() {
        let index = HostIndex::new();
        let w = ObjectKey::new("ns", "wild");
        let s = ObjectKey::new("ns", "specific");
        index.upsert(w.clone(), hosts(&["*.example.com"]));
        index.upsert(s.clone(), hosts(&["a.b.example.com"]));
        let new = ObjectKey::new("ns", "new");

        let found = index.check(&new, &hosts(&["api.example.com"]));
        assert!(found.conflicts.is_empty());
        assert_eq!(found.overlaps.len(), 1);
        assert_eq!(found.overlaps[0].owner, w);
        assert_eq!(found.overlaps[0].other_host, "*.example.com");

        let found = index.check(&new, &hosts(&["*.b.example.com"]));
        assert!(found.conflicts.is_empty());
        assert_eq!(found.overlaps[0].owner, s);
        assert_eq!(found.overlaps[0].other_host, "a.b.example.com");

        // The wildcard itself, exactly, is a conflict.
        assert_eq!(index.check(&new, &hosts(&["*.example.com"])).conflicts.len(), 1);
        // `example.com` is not under `*.example.com`; `badexample.com` neither.
        assert!(index.check(&new, &hosts(&["example.com"])).overlaps.is_empty());
        assert!(index.check(&new, &hosts(&["x.badexample.com"])).overlaps.is_empty());
    }

    #[test]
    fn upsert_and_remove_undo_every_entry() {
        let index = HostIndex::new();
        let a = ObjectKey::new("ns", "a");
        index.upsert(a.clone(), hosts(&["*.example.com", "x.example.com"]));
        index.upsert(a.clone(), hosts(&["y.example.org"]));
        assert_eq!(index.len(), (1, 1));
        let other = ObjectKey::new("ns", "b");
        let found = index.check(&other, &hosts(&["*.example.com", "z.example.com", "x.example.com"]));
        assert_eq!(found, Findings::default());
        assert!(index.remove(&a));
        assert!(!index.remove(&a));
        assert_eq!(index.len(), (0, 0));
        assert!(index.check(&other, &hosts(&["y.example.org"])).conflicts.is_empty());
        let inner = index.read();
        assert!(inner.owners.is_empty() && inner.wildcard_suffixes.is_empty() && inner.specific_suffixes.is_empty());
    }

    #[test]
    fn overlaps_per_host_are_bounded() {
        let index = HostIndex::new();
        for i in 0..10 {
            index.upsert(
                ObjectKey::new("ns", format!("o{i}")),
                hosts(&[&format!("h{i}.example.com")]),
            );
        }
        let found = index.check(&ObjectKey::new("ns", "w"), &hosts(&["*.com"]));
        assert_eq!(found.overlaps.len(), MAX_OVERLAPS_PER_HOST);
    }
}
