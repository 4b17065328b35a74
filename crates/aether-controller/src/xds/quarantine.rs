//! What RDS serves when an Envoy refuses one object's route configuration:
//! that resource's last version an Envoy took, to every Envoy (or, when
//! none ever took one, the configuration withdrawn: no virtual host), while
//! every other resource goes on being published.
//!
//! A pass asks for a publication (the wanted one, [`super::rds`]); what
//! streams are sent is that publication with each refused resource put
//! back to what is served instead. A refusal holds while the pass asks for
//! the version refused: a new version of the object (an edit) lifts it and
//! is sent, and its removal forgets it. So Envoy is never sent a version
//! one Envoy refused again, a new Envoy starts with the others' versions,
//! and the object's status says `Rejected` ([`Quarantine::refusal`]) until
//! an edit is taken.
//!
//! Only an object's own resources are quarantined (its HTTPS chain's,
//! `aether-edge/NS/NAME`): the plain listener's table carries every host,
//! and holding it back would hold back every tenant.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use prost::Message;
use tokio::sync::watch;
use tracing::{info, warn};

use super::{Encoded, Item, Resources};

/// The served publication of the route configurations, as streams read it.
pub(crate) type Served = Arc<watch::Sender<Option<Arc<Resources>>>>;

/// The refusals of one server's route configurations; clones share them.
#[derive(Debug, Clone)]
pub(crate) struct Quarantine {
    served: Served,
    /// The plain listener's configuration name; an object's are under it.
    base: Arc<str>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// What the last pass asked to serve.
    wanted: Option<Resources>,
    /// Per object's configuration, the last item an Envoy took.
    taken: HashMap<String, Item>,
    /// Per object's configuration refused: why, and what is served instead.
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
    /// The refusals of the configurations under `base`, published on `served`.
    pub(crate) fn new(base: Arc<str>, served: Served) -> Self {
        Self {
            served,
            base,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is one step: the state is consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `name` is one object's configuration.
    fn per_object(&self, name: &str) -> bool {
        name.strip_prefix(&*self.base).is_some_and(|rest| rest.starts_with('/'))
    }

    /// What the last pass asked to serve (to make the next one from).
    pub(crate) fn wanted(&self) -> Resources {
        self.lock().wanted.clone().unwrap_or_default()
    }

    /// Serves `wanted`, but for the refusals it still asks for; `false`
    /// when streams are sent nothing new.
    pub(crate) fn publish(&self, wanted: Resources) -> bool {
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
                info!(configuration = %name, "xds: a refused configuration changed; its new version is served");
            }
            holds
        });
        state.wanted = Some(wanted);
        self.serve(state)
    }

    /// An Envoy took these items (one response's).
    pub(crate) fn taken(&self, items: &[(String, Item)]) {
        let mut state = self.lock();
        for (name, item) in items.iter().filter(|(name, _)| self.per_object(name)) {
            state.taken.insert(name.clone(), item.clone());
        }
    }

    /// The Envoy `envoy` refused `item`, alone in a response, as `name`,
    /// saying `error`: from now on every stream is served what an Envoy
    /// took last instead, or the configuration withdrawn. A version no
    /// longer wanted (an edit came since) or not an object's changes nothing.
    pub(crate) fn refused(&self, name: &str, item: &Item, envoy: &str, error: &str) {
        if !self.per_object(name) {
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
            None => withdrawn(name),
        };
        warn!(configuration = %name, version = %item.version, %envoy, instead = %instead.version,
            "xds: Envoy refused a configuration; every Envoy is served the last one taken instead");
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
            info!(version = %next.version(), configurations = next.len(), refused = state.refused.len(),
                "xds: new route configurations");
            next.stamp();
            *current = Some(Arc::new(next));
            true
        })
    }
}

/// The configuration `name` with no virtual host: the object withdrawn
/// from its chain (Envoy answers its requests 404) without the chain
/// waiting for a configuration that never comes.
fn withdrawn(name: &str) -> Item {
    let configuration = RouteConfiguration {
        name: name.to_owned(),
        ..Default::default()
    };
    Item::new(Encoded::Buffer(Bytes::from(configuration.encode_to_vec())))
}

#[cfg(test)]
mod tests;
