//! The one re-list state machine of the controller and the webhook: what a
//! stream of kube-runtime watcher events says the watched objects are now.
//!
//! Modelled on kube-runtime's own `reflector::store::Writer::apply_watcher_event`:
//! a (re-)list (`Init`, `InitApply`…, `InitDone`) is gathered aside and
//! swapped in whole when it is done, so that objects deleted while the
//! watch was down disappear, and until then readers see the previous
//! complete list, never a partial one. Unlike that store, [`Mirror`]
//! keeps a value of the caller's choosing per object (the controller's
//! projection input, the webhook's hosts), watches several scopes (one
//! namespace each, or all) in one store, and says what each event changed,
//! so that a caller can bring its own derived state (a projector, a host
//! index) up to date at the cost of the change.
//!
//! Here, beside the binaries' other shared runtime, rather than in
//! `aether-api` (whose `kube` feature carries only the resource types,
//! deliberately without a client or runtime) or in one of its two users
//! (the other would depend on it whole).

use std::collections::{BTreeMap, HashMap, HashSet};

use aether_api::ObjectKey;
pub use kube::runtime::watcher::Event;

/// What is watched: one namespace, or all (`None`).
pub type Scope = Option<String>;

/// Whether `key` is in `scope`.
pub fn in_scope(scope: &Scope, key: &ObjectKey) -> bool {
    scope.as_ref().is_none_or(|namespace| *namespace == key.namespace)
}

/// What one event changed in a [`Mirror`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<V> {
    /// `key` is new, or its value changed (its value now is
    /// [`Mirror::get`]'s).
    Upserted {
        /// The object.
        key: ObjectKey,
        /// Its value before, if it had one.
        previous: Option<V>,
    },
    /// `key` is gone (deleted, or missing from a re-list).
    Removed {
        /// The object.
        key: ObjectKey,
        /// Its value before.
        previous: V,
    },
}

/// What [`Mirror::apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied<V> {
    /// The changes, in key order for a completed list.
    pub changes: Vec<Change<V>>,
    /// The event completed a (re-)list of its scope: the mirror now holds
    /// every object of the scope.
    pub listed: bool,
}

impl<V> Applied<V> {
    fn none() -> Self {
        Self {
            changes: Vec::new(),
            listed: false,
        }
    }
}

/// The watched objects, by key, as the events applied so far say they are.
#[derive(Debug, Clone)]
pub struct Mirror<V> {
    objects: BTreeMap<ObjectKey, V>,
    /// A (re-)list in progress, per scope.
    listing: HashMap<Scope, BTreeMap<ObjectKey, V>>,
    /// The scopes listed to the end at least once.
    listed: HashSet<Scope>,
}

impl<V> Default for Mirror<V> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
            listing: HashMap::new(),
            listed: HashSet::new(),
        }
    }
}

impl<V: PartialEq> Mirror<V> {
    /// An empty mirror, no scope listed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one watcher event of `scope`, each object taken in through
    /// `convert` (its key and value; `None` leaves it out, as for an
    /// object without a name, which no API server stores), and returns
    /// what changed:
    ///
    /// - `Apply`: the object is upserted (no change if its value is equal);
    /// - `Delete`: it is removed;
    /// - `Init`: a list starts (one already in progress for the scope is
    ///   dropped: the watcher restarted it);
    /// - `InitApply`: the object joins the list in progress, and nothing
    ///   changes yet;
    /// - `InitDone`: the list replaces the scope's objects: those missing
    ///   from it are removed, those new or changed upserted.
    pub fn apply<T>(
        &mut self,
        scope: &Scope,
        event: &Event<T>,
        mut convert: impl FnMut(&T) -> Option<(ObjectKey, V)>,
    ) -> Applied<V> {
        match event {
            Event::Apply(object) => {
                let Some((key, value)) = convert(object) else {
                    return Applied::none();
                };
                let mut applied = Applied::none();
                applied.changes.extend(self.upsert(key, value));
                applied
            }
            Event::Delete(object) => {
                let mut applied = Applied::none();
                if let Some((key, _)) = convert(object)
                    && let Some(previous) = self.objects.remove(&key)
                {
                    applied.changes.push(Change::Removed { key, previous });
                }
                applied
            }
            Event::Init => {
                self.listing.insert(scope.clone(), BTreeMap::new());
                Applied::none()
            }
            Event::InitApply(object) => {
                if let Some((key, value)) = convert(object) {
                    self.listing.entry(scope.clone()).or_default().insert(key, value);
                }
                Applied::none()
            }
            Event::InitDone => self.relisted(scope),
        }
    }

    /// Swaps in the list gathered for `scope` (empty if none was started).
    fn relisted(&mut self, scope: &Scope) -> Applied<V> {
        let listed = self.listing.remove(scope).unwrap_or_default();
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|key| in_scope(scope, key) && !listed.contains_key(*key))
            .cloned()
            .collect();
        let mut changes = Vec::new();
        for key in gone {
            if let Some(previous) = self.objects.remove(&key) {
                changes.push(Change::Removed { key, previous });
            }
        }
        for (key, value) in listed {
            changes.extend(self.upsert(key, value));
        }
        self.listed.insert(scope.clone());
        Applied { changes, listed: true }
    }

    fn upsert(&mut self, key: ObjectKey, value: V) -> Option<Change<V>> {
        if self.objects.get(&key) == Some(&value) {
            return None;
        }
        let previous = self.objects.insert(key.clone(), value);
        Some(Change::Upserted { key, previous })
    }
}

impl<V> Mirror<V> {
    /// Whether `scope` has been listed to the end at least once.
    pub fn is_listed(&self, scope: &Scope) -> bool {
        self.listed.contains(scope)
    }

    /// The value of `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&V> {
        self.objects.get(key)
    }

    /// The value of `key`, to update in place what the events do not carry
    /// (the controller's record of a status it has just written).
    pub fn get_mut(&mut self, key: &ObjectKey) -> Option<&mut V> {
        self.objects.get_mut(key)
    }

    /// Every object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &V)> {
        self.objects.iter()
    }

    /// How many objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests;
