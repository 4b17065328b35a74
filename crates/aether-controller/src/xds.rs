//! The edge's configuration over gRPC: the RouteConfiguration (RDS), the
//! HTTPS listener (LDS) and its certificates (SDS, see
//! [`listeners_secrets`]). An alternative to `routes.json` for Envoys that
//! do not share the controller's file system. Served by `aether-xds`'s
//! [`Discovery`] ([`channel`]):
//! - `AggregatedDiscoveryService/DeltaAggregatedResources`: all three types
//!   on one delta stream, what Envoy's bootstrap uses; and the delta stream
//!   of each type (`DeltaRoutes`, `DeltaListeners`, `DeltaSecrets`);
//! - the state-of-the-world stream of each type (`StreamRoutes`, ...) and
//!   `FetchRoutes`; state-of-the-world ADS is `UNIMPLEMENTED`.
//!
//! Here is what is published: each pass [`Publisher::publish`]es the
//! snapshot's RouteConfiguration as its route table (a piece per virtual
//! host, shared with the projection: O(1), no copy); its version is the
//! table's, made of its virtual hosts' digests, so every replica gives the
//! same configuration the same version and an unchanged one is not pushed
//! again.
//! How streams serve it (ACK/NACK by nonce, memory bounded for clients
//! that do not read) is `aether-xds`'s business; the controller decides:
//! - over delta, an object's configuration refused alone is quarantined:
//!   every stream is served the last version an Envoy took instead
//!   (`rds.rs`); the plain one never is;
//! - names filter (the configuration's name is the projection's
//!   `route_configuration_name`, `aether-edge` by default); a stream naming
//!   other route configurations gets none of them. Envoy then waits for
//!   them (15 s by default) and serves its listener no routes, a mistake
//!   of configuration seen only on its side: so each such request is
//!   logged as a warning naming what was asked and what is served, and
//!   counted, once per stream and list of names (Envoy repeats its names
//!   in every SotW ACK).

use std::sync::{Arc, Mutex, PoisonError};

use aether_projection::{ObjectKey, Snapshot};
use aether_xds::fleet;
use aether_xds::quarantine::Quarantine;
use aether_xds::sotw::Kind;
use aether_xds::{Discovery, Resources, Service, delta};
use envoy_types::pb::envoy::config::core::v3::Node;
use tokio::sync::watch;
use tracing::warn;

use crate::metrics::Metrics;
use crate::outputs::ROUTE_CONFIGURATION_TYPE;
use crate::programmed::Programmed;

pub mod listeners_secrets;
mod rds;
mod since;

/// One version of the route configuration (its one resource, the
/// encoded `envoy.config.route.v3.RouteConfiguration`).
pub type Version = Resources;

/// Hands each pass's configuration to the server's streams.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// The route configuration's name (its resource name in RDS).
    name: Arc<str>,
    current: Arc<watch::Sender<Option<Arc<Version>>>>,
    /// What is served of the publications, given Envoys' refusals.
    quarantine: Quarantine,
    /// What the last RDS publication was made from ([`rds`]).
    source: Arc<Mutex<Option<rds::Source>>>,
    /// Per object, the first plain route configuration and listener
    /// holding it as it is now ([`since`]).
    table_since: Arc<Mutex<since::Since>>,
    pub(crate) listener_since: Arc<Mutex<since::ListenerSince>>,
    /// The HTTPS listener and the certificates ([`listeners_secrets`]).
    pub(crate) tls: listeners_secrets::TlsSenders,
    /// The Envoys the streams serve, and what each applied.
    fleet: fleet::Fleet,
}

impl Publisher {
    /// Publishes `snapshot`'s route configurations (the plain one and each
    /// HTTPS chain's, see `xds/rds.rs`), made from the last publication;
    /// streams are woken only when one of them changed.
    pub fn publish(&self, snapshot: &Snapshot) {
        let mut source = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        // Most passes leave the routes alone: the same parts, told in O(1).
        if source.as_ref().is_some_and(|source| source.is(snapshot)) {
            return;
        }
        let mut next = self.quarantine.wanted();
        let last = source.take();
        let made = rds::update(&mut next, last.as_ref(), snapshot);
        let seq = next.get(&self.name).map_or(0, |item| item.seq);
        let mut since = self.table_since.lock().unwrap_or_else(PoisonError::into_inner);
        match last.as_ref().and_then(|last| last.changed_objects(snapshot)) {
            Some(changed) => {
                for key in changed {
                    if snapshot.routes().virtual_host(&key).is_some() {
                        since.moved(key, seq);
                    } else {
                        since.gone(&key);
                    }
                }
            }
            None => since.reset(seq),
        }
        drop(since);
        *source = Some(made);
        self.quarantine.publish(next);
    }

    /// The version last published, if any.
    pub fn current(&self) -> Option<Arc<Version>> {
        self.current.borrow().clone()
    }

    /// The Envoys served, and what each applied.
    pub fn fleet(&self) -> &fleet::Fleet {
        &self.fleet
    }

    /// What the fleet says of the object `key` of `snapshot`: `Rejected`
    /// while its configuration is quarantined, otherwise what its Envoys
    /// hold of what it [needs](Publisher::needs).
    pub fn programmed(&self, snapshot: &Snapshot, tls: &crate::tls::Resolutions, key: &ObjectKey) -> Programmed {
        if let Some(chain) = snapshot.tls_chain_of(key) {
            let name = chain.route_configuration_name(&self.name);
            if let Some(refusal) = self.quarantine.refusal(&name) {
                return Programmed::Rejected {
                    envoy: refusal.envoy,
                    resource: format!("RouteConfiguration {name}"),
                    error: refusal.error,
                };
            }
        }
        self.fleet.applied(&self.needs(snapshot, tls, key)).into()
    }

    /// What the object `key` of `snapshot` needs of each Envoy, as now
    /// published: the plain route configuration, and for an object served
    /// over TLS the listener, its chain's configuration and its secret
    /// (when served here rather than by the mesh).
    pub fn needs(&self, snapshot: &Snapshot, tls: &crate::tls::Resolutions, key: &ObjectKey) -> Vec<fleet::Need> {
        let mut needs = Vec::new();
        // A shared resource as first published with the object ([`since`]).
        let mut need =
            |type_url: &'static str, current: Option<&Resources>, name: String, since: Option<&since::Since>| {
                if let Some(item) = current.and_then(|current| current.get(&name)) {
                    let seq = since.map_or(item.seq, |since| since.of(key, item.seq));
                    needs.push(fleet::Need { type_url, name, seq });
                }
            };
        let routes = self.current();
        let table_since = self.table_since.lock().unwrap_or_else(PoisonError::into_inner);
        need(
            ROUTE_CONFIGURATION_TYPE,
            routes.as_deref(),
            self.name.to_string(),
            Some(&table_since),
        );
        drop(table_since);
        if let Some(chain) = snapshot.tls_chain_of(key).filter(|chain| tls.usable(&chain.secret)) {
            let listeners = self.tls.listeners.borrow().clone();
            let listener_since = self.listener_since.lock().unwrap_or_else(PoisonError::into_inner);
            need(
                listeners_secrets::LISTENER_TYPE,
                listeners.as_deref(),
                aether_projection::listener::HTTPS_LISTENER.to_owned(),
                Some(&listener_since.since),
            );
            drop(listener_since);
            need(
                ROUTE_CONFIGURATION_TYPE,
                routes.as_deref(),
                chain.route_configuration_name(&self.name),
                None,
            );
            let secrets = self.tls.secrets.borrow().clone();
            need(
                listeners_secrets::SECRET_TYPE,
                secrets.as_deref(),
                aether_projection::listener::sds_secret_name(&chain.secret),
                None,
            );
        }
        needs
    }
}

/// A publisher and the service that serves what it publishes, the
/// RouteConfiguration named `name` (and the listener and secrets).
pub fn channel(name: &str, metrics: Arc<Metrics>) -> (Publisher, Discovery) {
    channel_with(name, metrics, fleet::Fleet::default())
}

/// [`channel`], its Envoys tracked by `fleet`.
pub fn channel_with(name: &str, metrics: Arc<Metrics>, fleet: fleet::Fleet) -> (Publisher, Discovery) {
    let (sender, routes) = watch::channel(None);
    let sender = Arc::new(sender);
    let scope = Arc::new(rds::ChainConfigurations { base: name.into() });
    let quarantine = Quarantine::new(scope, sender.clone(), metrics.clone());
    let (tls_senders, tls) = listeners_secrets::channels();
    metrics.envoys.set(fleet.clone());
    let publisher = Publisher {
        name: name.into(),
        current: sender,
        quarantine: quarantine.clone(),
        source: Arc::default(),
        table_since: Arc::default(),
        listener_since: Arc::default(),
        tls: tls_senders,
        fleet: fleet.clone(),
    };
    let routes_kind = {
        let (name, metrics) = (Arc::<str>::from(name), metrics.clone());
        Kind {
            type_url: ROUTE_CONFIGURATION_TYPE,
            // A stream asks for the configurations of its connection
            // managers, and is pushed only what changes among them.
            by_name: true,
            on_names: Arc::new(move |names, node| check_names(&name, names, node, &metrics)),
        }
    };
    let served = |kind: Kind, current, quarantine| delta::Served {
        kind,
        current,
        quarantine,
    };
    // The aggregated stream's order when several types are owed:
    // listeners, routes, secrets (Envoy asks for the routes and secrets a
    // new listener names once it has it).
    let services = vec![
        Service {
            name: "envoy.service.listener.v3.ListenerDiscoveryService",
            noun: "Listeners",
            served: served(
                listeners_secrets::kind(listeners_secrets::LISTENER_TYPE),
                tls.listeners,
                None,
            ),
        },
        Service {
            name: "envoy.service.route.v3.RouteDiscoveryService",
            noun: "Routes",
            served: served(routes_kind, routes, Some(quarantine)),
        },
        Service {
            name: "envoy.service.secret.v3.SecretDiscoveryService",
            noun: "Secrets",
            served: served(
                listeners_secrets::kind(listeners_secrets::SECRET_TYPE),
                tls.secrets,
                None,
            ),
        },
    ];
    (publisher, Discovery::new(services, metrics, fleet))
}

/// Warns about, and counts, a request whose `names` include some this
/// server does not serve (`served`). Called once per distinct request, not
/// for every ACK that repeats its names.
/// Names a warning about names not served shows at most.
const MAX_LOGGED_NAMES: usize = 20;

fn check_names(served: &str, names: &[String], node: Option<&Node>, metrics: &Metrics) {
    // The plain configuration, or a chain's (`served/NAMESPACE/NAME`).
    let ours = |name: &String| {
        name == served
            || name
                .strip_prefix(served)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|key| key.split('/').count() == 2)
    };
    if names.iter().all(ours) {
        return;
    }
    metrics.xds_unknown_resource_requests.inc();
    // The first few, and how many: a client may name 100,000.
    let requested = &names[..names.len().min(MAX_LOGGED_NAMES)];
    warn!(?requested, names = names.len(), %served, node = ?node.map(|node| &node.id),
        "xds: Envoy asked for a route configuration this server does not serve; \
         it gets none, and its listener no routes (check rds.route_config_name)");
}

#[cfg(test)]
mod tests;
