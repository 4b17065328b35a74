//! What a type's streams are served when an Envoy refuses one of its
//! resources: that resource's last version an Envoy took, to every Envoy
//! (or, when none ever took one, what its [`QuarantineScope`] withdraws it
//! to), while every other resource goes on being published.
//!
//! A publisher asks for a publication (the wanted one); what streams are
//! sent is that publication with each refused resource put back to what is
//! served instead. A refusal holds while the publisher asks for the version
//! refused: a new version (an edit) lifts it and is sent, and its removal
//! forgets it. So Envoy is never sent a version one Envoy refused again, a
//! new Envoy starts with the others' versions, and [`Quarantine::refusal`]
//! says so until a new version is taken.
//!
//! Only the resources the scope names are quarantined: a resource every
//! tenant shares (the controller's plain route configuration) held back
//! would hold back every tenant.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tracing::{info, warn};

use crate::resources::{Item, Resources};

/// The served publication of the type, as streams read it.
pub type Served = Arc<watch::Sender<Option<Arc<Resources>>>>;

/// Which resources a refusal quarantines, and what stands in for one no
/// Envoy ever took.
pub trait QuarantineScope: std::fmt::Debug + Send + Sync {
    /// Whether a refusal of `name` quarantines it.
    fn quarantines(&self, name: &str) -> bool;
    /// What `name` is served as when it is refused and no Envoy took an
    /// earlier version: something Envoy takes that serves nothing.
    fn withdrawn(&self, name: &str) -> Item;
}

/// The refusals of one type's resources; clones share them.
#[derive(Debug, Clone)]
pub struct Quarantine {
    served: Served,
    scope: Arc<dyn QuarantineScope>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// What the last pass asked to serve.
    wanted: Option<Resources>,
    /// Per resource in scope, the last item an Envoy took.
    taken: HashMap<String, Item>,
    /// Per resource refused: why, and what is served instead.
    refused: BTreeMap<String, Refusal>,
}

/// An Envoy's refusal of a resource's version.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The version refused.
    pub version: Arc<str>,
    /// The node id of the Envoy that refused it.
    pub envoy: String,
    /// What Envoy said.
    pub error: String,
    /// Served in its place.
    instead: Item,
}

impl Quarantine {
    /// The refusals of the resources in `scope`, published on `served`.
    pub fn new(scope: Arc<dyn QuarantineScope>, served: Served) -> Self {
        Self {
            served,
            scope,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is one step: the state is consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the publisher last asked to serve (to make the next one from).
    pub fn wanted(&self) -> Resources {
        self.lock().wanted.clone().unwrap_or_default()
    }

    /// Serves `wanted`, but for the refusals it still asks for; `false`
    /// when streams are sent nothing new.
    pub fn publish(&self, wanted: Resources) -> bool {
        let mut state = self.lock();
        let state = &mut *state;
        if let Some(old) = &state.wanted {
            for (name, item) in wanted.changes_since(old) {
                if item.is_none() {
                    state.taken.remove(name);
                }
            }
        }
        state.refused.retain(|name, refusal| {
            let holds = wanted.get(name).is_some_and(|item| item.version == refusal.version);
            if !holds {
                info!(resource = %name, "xds: a refused resource changed; its new version is served");
            }
            holds
        });
        state.wanted = Some(wanted);
        self.serve(state)
    }

    /// An Envoy took these items (one response's).
    pub(crate) fn taken(&self, items: &[(String, Item)]) {
        let mut state = self.lock();
        for (name, item) in items.iter().filter(|(name, _)| self.scope.quarantines(name)) {
            state.taken.insert(name.clone(), item.clone());
        }
    }

    /// The Envoy `envoy` refused `item`, alone in a response, as `name`,
    /// saying `error`: from now on every stream is served what an Envoy
    /// took last instead, or the resource withdrawn. A version no longer
    /// wanted (an edit came since) or out of scope changes nothing.
    pub(crate) fn refused(&self, name: &str, item: &Item, envoy: &str, error: &str) {
        if !self.scope.quarantines(name) {
            return;
        }
        let mut state = self.lock();
        let wanted = state.wanted.as_ref().and_then(|wanted| wanted.get(name));
        if wanted.is_none_or(|wanted| wanted.version != item.version)
            || state
                .refused
                .get(name)
                .is_some_and(|refusal| refusal.version == item.version)
        {
            return;
        }
        let instead = match state.taken.get(name) {
            Some(taken) => taken.clone(),
            None => self.scope.withdrawn(name),
        };
        warn!(resource = %name, version = %item.version, %envoy, instead = %instead.version,
            "xds: Envoy refused a resource; every Envoy is served the last version taken instead");
        let refusal = Refusal {
            version: item.version.clone(),
            envoy: envoy.to_owned(),
            error: error.to_owned(),
            instead,
        };
        state.refused.insert(name.to_owned(), refusal);
        self.serve(&state);
    }

    /// The refusal that holds for `name`, if one does.
    pub fn refusal(&self, name: &str) -> Option<Refusal> {
        self.lock().refused.get(name).cloned()
    }

    /// Publishes the wanted resources with the refusals served instead:
    /// O(refusals × log n), and refusals are what the guards let through.
    fn serve(&self, state: &State) -> bool {
        let Some(wanted) = &state.wanted else {
            return false;
        };
        let mut next = wanted.clone();
        for (name, refusal) in &state.refused {
            next.put_item(name.clone(), refusal.instead.clone());
        }
        self.served.send_if_modified(|current| {
            if current.as_deref().is_some_and(|current| current.same_as(&next)) {
                return false;
            }
            info!(version = %next.version(), resources = next.len(), refused = state.refused.len(),
                "xds: new resources published");
            next.stamp();
            *current = Some(Arc::new(next));
            true
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
