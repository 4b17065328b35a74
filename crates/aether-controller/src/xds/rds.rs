//! What RDS serves of a snapshot: the plain listener's route configuration
//! (every host, named by the projection's `route_configuration_name`) and
//! one per HTTPS chain, named by
//! [`TlsChain::route_configuration_name`]: its object's virtual host and
//! the misdirected one ([`Snapshot::chain_route_configuration`]).
//!
//! Each publication is made from the last one, redoing only what changed:
//! an edit of one object's routes re-encodes that object's chain (found
//! through [`RouteTable::changed_since`] of the chains' virtual hosts,
//! [`Snapshot::tls_routes`], O(changes)); a change of the
//! chains themselves (hosts, TLS, objects added or removed) walks them,
//! comparing each with the chain it was made from, and re-encodes only
//! those whose virtual host or misdirected hosts differ.
//!
//! The plain configuration is sent as its table, a piece per virtual host
//! ([`TableEncoding`]), so that publishing it copies nothing; a chain's is
//! one buffer, and only chains' configurations are quarantined when Envoy
//! refuses them ([`ChainConfigurations`]).

use std::any::Any;
use std::sync::Arc;

use aether_projection::{RouteTable, Snapshot, TlsChain};
use aether_xds::quarantine::QuarantineScope;
use aether_xds::{Encoded, Item, Pieces, Resources};
use bytes::Bytes;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use prost::Message;

/// The route configuration as its table: sent a piece per virtual host,
/// its version the table's own (`routes.json`'s `versionInfo`).
#[derive(Debug)]
pub(crate) struct TableEncoding(pub(crate) RouteTable);

impl TableEncoding {
    /// `table` as an encoding: O(1), its parts shared.
    pub(crate) fn encoded(table: &RouteTable) -> Encoded {
        Encoded::Pieces(Arc::new(Self(table.clone())))
    }
}

impl Pieces for TableEncoding {
    fn encoded_len(&self) -> usize {
        self.0.encoded_len()
    }

    fn push_pieces(&self, pieces: &mut Vec<Bytes>) {
        pieces.extend(self.0.pieces().filter(|piece| !piece.is_empty()).cloned());
    }

    fn to_bytes(&self) -> Bytes {
        self.0.encode()
    }

    fn version(&self) -> String {
        self.0.version()
    }

    fn same_as(&self, other: &dyn Pieces) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|other| self.0.same_as(&other.0))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a refusal quarantines: one object's configuration, its HTTPS
/// chain's (`BASE/NAMESPACE/NAME`). The plain listener's table carries
/// every host, and holding it back would hold back every tenant.
#[derive(Debug)]
pub(crate) struct ChainConfigurations {
    /// The plain configuration's name; the chains' are under it.
    pub(crate) base: Arc<str>,
}

impl QuarantineScope for ChainConfigurations {
    fn quarantines(&self, name: &str) -> bool {
        name.strip_prefix(&*self.base).is_some_and(|rest| rest.starts_with('/'))
    }

    /// The configuration `name` with no virtual host: the object withdrawn
    /// from its chain (Envoy answers its requests 404) without the chain
    /// waiting for a configuration that never comes.
    fn withdrawn(&self, name: &str) -> Item {
        let configuration = RouteConfiguration {
            name: name.to_owned(),
            ..Default::default()
        };
        Item::new(Encoded::Buffer(Bytes::from(configuration.encode_to_vec())))
    }
}

/// What the last publication was made from.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    table: RouteTable,
    /// The chains' virtual hosts ([`Snapshot::tls_routes`]).
    tls_table: RouteTable,
    chains: Arc<[TlsChain]>,
}

impl Source {
    /// Whether `snapshot` is what this was made from: O(1) while nothing
    /// changed (the projector shares its parts).
    pub(crate) fn is(&self, snapshot: &Snapshot) -> bool {
        self.table.shares(snapshot.routes())
            && self.tls_table.shares(snapshot.tls_routes())
            && Arc::ptr_eq(&self.chains, &snapshot.tls_chains)
    }
}

impl Source {
    /// The objects whose virtual host differs in `snapshot`'s plain table
    /// (added, changed or removed); `None` when the table is another one
    /// (renamed): O(changes) while the projector shares the table's parts.
    pub(crate) fn changed_objects(&self, snapshot: &Snapshot) -> Option<Vec<aether_projection::ObjectKey>> {
        let table = snapshot.routes();
        (table.name() == self.table.name()).then(|| table.changed_since(&self.table))
    }
}

/// Updates `resources` (the last publication, made from `last`, or empty)
/// to serve `snapshot`; returns what it is now made from.
pub(crate) fn update(resources: &mut Resources, last: Option<&Source>, snapshot: &Snapshot) -> Source {
    let table = snapshot.routes();
    let tls_table = snapshot.tls_routes();
    let base = table.name();
    resources.put(base, TableEncoding::encoded(table));
    let put = |resources: &mut Resources, chain: &TlsChain| {
        if let Some(configuration) = crate::listener::chain_route_configuration(snapshot, chain) {
            resources.put(chain.route_configuration_name(base), Encoded::Buffer(configuration));
        }
    };
    match last {
        Some(last) if Arc::ptr_eq(&last.chains, &snapshot.tls_chains) && last.table.name() == base => {
            for key in tls_table.changed_since(&last.tls_table) {
                if let Some(chain) = snapshot.tls_chain_of(&key) {
                    put(resources, chain);
                }
            }
        }
        Some(last) if last.table.name() == base => {
            let old = |chain: &TlsChain| {
                last.chains
                    .binary_search_by(|old| old.object.cmp(&chain.object))
                    .ok()
                    .map(|at| &last.chains[at])
            };
            for gone in last.chains.iter() {
                if snapshot.tls_chain_of(&gone.object).is_none() {
                    resources.remove(&gone.route_configuration_name(base));
                }
            }
            for chain in snapshot.tls_chains.iter() {
                let same = old(chain).is_some_and(|old| {
                    old.misdirected == chain.misdirected
                        && same_buffer(
                            last.tls_table.virtual_host(&chain.object),
                            tls_table.virtual_host(&chain.object),
                        )
                });
                if !same {
                    put(resources, chain);
                }
            }
        }
        _ => {
            *resources = Resources::default();
            resources.put(base, TableEncoding::encoded(table));
            for chain in snapshot.tls_chains.iter() {
                put(resources, chain);
            }
        }
    }
    Source {
        table: table.clone(),
        tls_table: tls_table.clone(),
        chains: snapshot.tls_chains.clone(),
    }
}

/// The same buffer (a virtual host the projector shares while unchanged).
fn same_buffer(a: Option<&prost::bytes::Bytes>, b: Option<&prost::bytes::Bytes>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.as_ptr() == b.as_ptr() && a.len() == b.len(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
