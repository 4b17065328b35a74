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
//!
//! The rule for an Envoy that refuses what others take: **a version an
//! Envoy took is never quarantined, and a refusal is lifted as soon as an
//! Envoy takes the version refused; the Envoy whose refusal is so
//! overruled quarantines nothing more while its stream lasts**
//! ([`Overruled`]). A refusal of a version nobody took yet is believed
//! (every Envoy refusing a bad configuration is the common case); one
//! Envoy that refuses everything, versions others took included, is the
//! broken one, and costs only itself: the others are served what they
//! take (and the fleet leaves it out of what is applied,
//! [`crate::fleet`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::metrics::XdsMetrics;
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
#[derive(Clone)]
pub struct Quarantine {
    served: Served,
    scope: Arc<dyn QuarantineScope>,
    state: Arc<Mutex<State>>,
    /// Told of each resource quarantined.
    metrics: Arc<dyn XdsMetrics>,
}

impl std::fmt::Debug for Quarantine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quarantine")
            .field("scope", &self.scope)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
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
    /// The refusing stream's standing, overruled if an Envoy takes it.
    by: Overruled,
}

/// Set once an Envoy took a version a stream's Envoy refused (or that
/// Envoy refused a version already taken): that stream's refusals
/// quarantine nothing more. One per stream, shared by its refusals.
#[derive(Debug, Clone, Default)]
pub struct Overruled(Arc<AtomicBool>);

impl Overruled {
    /// Whether the stream's refusals were overruled.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl PartialEq for Overruled {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Quarantine {
    /// The refusals of the resources in `scope`, published on `served`,
    /// each counted in `metrics`.
    pub fn new(scope: Arc<dyn QuarantineScope>, served: Served, metrics: Arc<dyn XdsMetrics>) -> Self {
        Self {
            served,
            scope,
            state: Arc::default(),
            metrics,
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

    /// The Envoy of the stream standing as `by` took these items (one
    /// response's): a refusal of one of them is lifted (another Envoy's:
    /// that one's refusals are overruled), and the version served again.
    pub(crate) fn taken(&self, items: &[(String, Item)], by: &Overruled) {
        let mut state = self.lock();
        let mut lifted = false;
        for (name, item) in items.iter().filter(|(name, _)| self.scope.quarantines(name)) {
            if let Some(refusal) = state.refused.get(name)
                && refusal.version == item.version
            {
                if refusal.by != *by {
                    refusal.by.set();
                }
                info!(resource = %name, version = %item.version, refused_by = %refusal.envoy,
                    "xds: an Envoy took a version another refused; the refusal is lifted and that Envoy's refusals \
                     quarantine nothing more");
                state.refused.remove(name);
                lifted = true;
            }
            state.taken.insert(name.clone(), item.clone());
        }
        if lifted {
            self.serve(&state);
        }
    }

    /// The Envoy `envoy` of the stream standing as `by` refused `item`,
    /// alone in a response, as `name`, saying `error`: from now on every
    /// stream is served what an Envoy took last instead, or the resource
    /// withdrawn. A version no longer wanted (an edit came since) or out
    /// of scope changes nothing, nor does a refusal overruled: of a version
    /// an Envoy took (which overrules the stream), or by a stream overruled.
    pub(crate) fn refused(&self, name: &str, item: &Item, envoy: &str, error: &str, by: &Overruled) {
        if !self.scope.quarantines(name) {
            return;
        }
        if by.is_set() {
            debug!(resource = %name, %envoy, "xds: a refusal by an Envoy that refused what others took; not quarantined");
            return;
        }
        let mut state = self.lock();
        if state.taken.get(name).is_some_and(|taken| taken.version == item.version) {
            by.set();
            info!(resource = %name, version = %item.version, %envoy,
                "xds: an Envoy refused a version another took; not quarantined, and its refusals quarantine nothing more");
            return;
        }
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
        self.metrics.resource_quarantined();
        warn!(resource = %name, version = %item.version, %envoy, instead = %instead.version,
            "xds: Envoy refused a resource; every Envoy is served the last version taken instead");
        let refusal = Refusal {
            version: item.version.clone(),
            envoy: envoy.to_owned(),
            error: error.to_owned(),
            instead,
            by: by.clone(),
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
