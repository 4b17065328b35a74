//! The projection's output: Envoy's route configuration and what the edge
//! needs besides it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use prost::Message;
use prost::bytes::Bytes;
use serde::Serialize;

pub use crate::envoy::{MISDIRECTED_STATUS, MISDIRECTED_VIRTUAL_HOST};
use crate::route_table::RouteTable;
use crate::tls::{TlsChain, TlsSecret};
use aether_api::ObjectKey;
use aether_api::validate::Violation;

/// Everything projected from one set of VirtualHost objects.
///
/// Every list is sorted, so equal inputs give equal snapshots whatever their
/// order. The parts are shared: a [`Projector`](crate::Projector) hands the
/// same lists to every snapshot until a change alters them, so a clone is
/// cheap and an unchanged part can be told by [`Arc::ptr_eq`] (the routes
/// by [`RouteTable::same_as`]). Render it with [`Snapshot::to_json`],
/// [`Snapshot::to_yaml`] or [`Snapshot::route_configuration_binary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The `RouteConfiguration`: one Envoy virtual host per projected
    /// object, sorted by namespace, then name. Kept encoded because that is
    /// about twenty times smaller than envoy-types' structs (see
    /// [`Snapshot::route_configuration`] for those), and as its virtual
    /// hosts, so that a change of one is not a copy of all.
    pub(crate) routes: RouteTable,
    /// The whole virtual host of each object served with TLS, which its
    /// chain routes with (the same as in `routes`, unless the plain
    /// configuration redirects TLS hosts to HTTPS).
    pub(crate) tls_routes: RouteTable,
    /// The route configuration in one buffer, made on first use.
    pub(crate) route_configuration: Lazy<Bytes>,
    /// Every backend service the route configuration sends to, with its
    /// ports, sorted by service.
    pub dependencies: Arc<[Dependency]>,
    /// Every TLS secret the projected objects terminate with, sorted.
    pub tls_secrets: Arc<[TlsSecret]>,
    /// The HTTPS listener's filter chains: one per object served with
    /// TLS, sorted by object, each routing on a route configuration of its
    /// own ([`Snapshot::chain_route_configuration`]).
    pub tls_chains: Arc<[TlsChain]>,
    /// Hosts served without TLS (their object has no `tls`) that a TLS
    /// wildcard host of another object would otherwise cover, sorted: the
    /// HTTPS listener refuses their SNI rather than answer it with that
    /// wildcard's certificate, since a host without `tls` is not served
    /// over TLS.
    pub plain_hosts_under_tls_wildcards: Arc<[String]>,
    /// Conflicts and objects left out.
    pub report: Arc<Report>,
    /// The report indexed, made on first use and shared with the report.
    pub(crate) report_index: Lazy<ReportIndex>,
}

impl Snapshot {
    /// The route configuration as envoy-types' `RouteConfiguration`: one
    /// virtual host per projected object, named `namespace/name`, sorted by
    /// namespace, then name. Decoded on each call, so keep the result.
    pub fn route_configuration(&self) -> Result<RouteConfiguration, prost::DecodeError> {
        RouteConfiguration::decode(self.route_configuration_binary())
    }

    /// The route configuration as binary protobuf, in one buffer: made on
    /// the first call (a copy of every virtual host), then kept with the
    /// snapshot. What changes between passes needs only [`Snapshot::routes`].
    pub fn route_configuration_binary(&self) -> &[u8] {
        self.route_configuration.get_or_init(|| self.routes.encode())
    }

    /// [`Snapshot::route_configuration_binary`] as a shared buffer.
    pub fn route_configuration_bytes(&self) -> Bytes {
        self.route_configuration.get_or_init(|| self.routes.encode()).clone()
    }

    /// Why `key` is left out, if it is: O(log n).
    pub fn left_out(&self, key: &ObjectKey) -> Option<&LeftOut> {
        let left_out = &self.report.left_out;
        left_out
            .binary_search_by(|entry| entry.object.cmp(key))
            .ok()
            .map(|at| &left_out[at])
    }

    /// The routes of served object `key` left out, if any: O(log n).
    pub fn routes_left_out(&self, key: &ObjectKey) -> Option<&RoutesLeftOut> {
        let routes_left_out = &self.report.routes_left_out;
        routes_left_out
            .binary_search_by(|entry| entry.object.cmp(key))
            .ok()
            .map(|at| &routes_left_out[at])
    }

    /// Why `key`'s newest version is left out, if its previous one is
    /// served in its place: O(log n).
    pub fn kept(&self, key: &ObjectKey) -> Option<&Kept> {
        let kept = &self.report.kept;
        kept.binary_search_by(|entry| entry.object.cmp(key))
            .ok()
            .map(|at| &kept[at])
    }

    /// The hosts `key` lost to older objects, in the report's order (by
    /// host). The first call after the report changed indexes it (O(n));
    /// the next are O(1), in this snapshot and the next ones that share
    /// the report.
    pub fn conflicts_lost_by(&self, key: &ObjectKey) -> impl Iterator<Item = &HostConflict> {
        self.report_index()
            .conflicts_by_loser
            .get(key)
            .into_iter()
            .flatten()
            .map(|at| &self.report.conflicts[*at])
    }

    /// How many objects' newest versions are left out for their problems
    /// (invalid or unsupported; their previous version served or not),
    /// counted like [`Snapshot::conflicts_lost_by`] indexes.
    pub fn invalid_objects(&self) -> usize {
        self.report_index().invalid
    }

    fn report_index(&self) -> &ReportIndex {
        self.report_index.get_or_init(|| {
            let mut conflicts_by_loser: HashMap<ObjectKey, Vec<usize>> = HashMap::new();
            for (at, conflict) in self.report.conflicts.iter().enumerate() {
                conflicts_by_loser.entry(conflict.loser.clone()).or_default().push(at);
            }
            let invalid = self
                .report
                .left_out
                .iter()
                .filter(|left_out| left_out.reason.problems().is_some())
                .count()
                + self.report.kept.len();
            ReportIndex {
                conflicts_by_loser,
                invalid,
            }
        })
    }

    /// The TLS chain serving object `key`'s hosts, if it is served with
    /// TLS: O(log n).
    pub fn tls_chain_of(&self, key: &ObjectKey) -> Option<&TlsChain> {
        self.tls_chains
            .binary_search_by(|chain| chain.object.cmp(key))
            .ok()
            .map(|at| &self.tls_chains[at])
    }

    /// The encoded `RouteConfiguration` `chain` routes on, named by
    /// [`TlsChain::route_configuration_name`] of this snapshot's: its
    /// object's virtual host, as in [`Snapshot::routes`], and the virtual
    /// host [`MISDIRECTED_VIRTUAL_HOST`], which answers every other host
    /// `421 Misdirected Request` (the hosts of others that the chain's
    /// wildcards cover by name, so that they never fall to them). `None`
    /// when the object has no virtual host here (not a chain of this
    /// snapshot). O(size of that virtual host).
    pub fn chain_route_configuration(&self, chain: &TlsChain) -> Option<Bytes> {
        let virtual_host = self.tls_routes.virtual_host(&chain.object)?;
        let misdirected = crate::envoy::misdirected_virtual_host(&chain.misdirected);
        let name = chain.route_configuration_name(self.routes.name());
        Some(Bytes::from(
            self.routes.encode_named(&name, &[virtual_host, &misdirected]),
        ))
    }

    /// Served object `key`'s whole virtual host (encoded
    /// `envoy.config.route.v3.VirtualHost`): as its TLS chain routes, which
    /// is as the plain configuration routes unless that redirects TLS hosts
    /// to HTTPS. O(log n).
    pub fn virtual_host(&self, key: &ObjectKey) -> Option<&Bytes> {
        self.tls_routes
            .virtual_host(key)
            .or_else(|| self.routes.virtual_host(key))
    }

    /// The whole virtual hosts of the objects served with TLS, as their
    /// chains route (see [`Snapshot::virtual_host`]); shared between
    /// snapshots like [`Snapshot::routes`].
    pub fn tls_routes(&self) -> &RouteTable {
        &self.tls_routes
    }

    /// The route configuration as its virtual hosts: its version, its
    /// encoding in pieces, each virtual host by object. Shared between
    /// snapshots; a change of one virtual host is O(log n).
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// Each virtual host of the route configuration, encoded as an
    /// `envoy.config.route.v3.VirtualHost`, in the route configuration's
    /// order. Between two snapshots of one [`Projector`](crate::Projector),
    /// a virtual host that did not change is the same buffer (the same
    /// `as_ptr`), so work done per virtual host can be kept for the
    /// next snapshot and redone only for what changed.
    pub fn virtual_hosts(&self) -> impl ExactSizeIterator<Item = &Bytes> + DoubleEndedIterator {
        self.routes.virtual_hosts()
    }
}

/// What is looked up in a report by object.
#[derive(Debug)]
pub(crate) struct ReportIndex {
    /// Loser → the indices of its conflicts.
    conflicts_by_loser: HashMap<ObjectKey, Vec<usize>>,
    /// Objects left out for their problems.
    invalid: usize,
}

/// Something made from the rest of a snapshot when first asked for, and
/// kept (shared by the clones, and by the snapshots a projector hands out
/// while the part it is made from is unchanged): not part of what the
/// snapshot is, so it never makes two snapshots unequal.
pub(crate) struct Lazy<T>(Arc<OnceLock<T>>);

impl<T> Lazy<T> {
    fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(make)
    }
}

impl<T> Clone for Lazy<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Default for Lazy<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T> PartialEq for Lazy<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Lazy<T> {}

impl<T> std::fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Lazy(made)"
        } else {
            "Lazy(not yet)"
        })
    }
}

/// A backend service the edge sends to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    /// The mesh service's name.
    pub service: String,
    /// Its ports in use, ascending; `0` is the service's default port (a
    /// backend without `port`). Each `(service, port)` is one cluster, named
    /// by [`cluster_name`](crate::cluster_name).
    pub ports: Vec<u32>,
}

impl Dependency {
    /// Groups sorted `(service, port)` pairs by service.
    pub(crate) fn group<'a>(pairs: impl IntoIterator<Item = &'a (String, u32)>) -> Vec<Dependency> {
        let mut dependencies: Vec<Dependency> = Vec::new();
        for (service, port) in pairs {
            match dependencies.last_mut() {
                Some(last) if last.service == *service => last.ports.push(*port),
                _ => dependencies.push(Dependency {
                    service: service.clone(),
                    ports: vec![*port],
                }),
            }
        }
        dependencies
    }
}

/// What was not projected as written, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// One entry per host an object lost, sorted by host, then loser rank.
    pub conflicts: Vec<HostConflict>,
    /// Objects with no virtual host in the output, sorted by `namespace/name`.
    pub left_out: Vec<LeftOut>,
    /// Served objects some of whose routes are not in the output, sorted by
    /// `namespace/name`: routes with a regular expression (see
    /// [`re2`](aether_edge_limits::re2)) or an action Envoy would refuse (it refuses a
    /// whole route configuration for one). The rest of the object is served.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes_left_out: Vec<RoutesLeftOut>,
    /// Objects whose newest version is left out for its problems while
    /// their previous, valid version is served, sorted by
    /// `namespace/name` ([`Projector::upsert_keeping_valid`](crate::Projector::upsert_keeping_valid)).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Kept>,
}

/// An object served as its previous version: its newest one cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// Which object.
    pub object: ObjectKey,
    /// The `metadata.generation` of the version served (0 where there is none).
    pub generation: i64,
    /// Why the newest version is left out.
    pub newer: LeftOutReason,
}

/// The routes of a served object left out of the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutesLeftOut {
    /// Which object.
    pub object: ObjectKey,
    /// Why: the field path (`spec.routes[2].match.regex`), the rule (`re2`
    /// for a regular expression, `envoy` for an action), and what Envoy
    /// would refuse in it.
    pub problems: Vec<Violation>,
}

/// A host claimed by several valid objects: `winner` keeps it, `loser` is
/// projected without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostConflict {
    /// The contested host.
    pub host: String,
    /// The oldest claimant (see [`VirtualHostObject::creation_timestamp`](crate::VirtualHostObject)).
    pub winner: ObjectKey,
    /// A younger claimant, which loses the host.
    pub loser: ObjectKey,
}

/// An object with no virtual host in the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    /// Which object.
    pub object: ObjectKey,
    /// Why.
    #[serde(flatten)]
    pub reason: LeftOutReason,
}

/// Why an object was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum LeftOutReason {
    /// It breaks rules of the API; never projected, even in part.
    Invalid {
        /// Every broken rule.
        problems: Vec<Violation>,
    },
    /// It asks for what this build cannot do: a value, or a field it cannot
    /// do without, from a newer API version (a problem of rule
    /// `unsupported`, read tolerantly by `aether-manifests`). Never
    /// projected; upgrading, not editing, is the fix.
    Unsupported {
        /// Every problem, the unsupported parts among them.
        problems: Vec<Violation>,
    },
    /// Valid, but every one of its hosts went to an older object (each is
    /// also in [`Report::conflicts`]).
    NoHostsLeft,
}

impl LeftOutReason {
    /// Why an object with these problems (not empty) is left out:
    /// [`LeftOutReason::Unsupported`] when any is unsupported, else
    /// [`LeftOutReason::Invalid`].
    pub fn of_problems(problems: Vec<Violation>) -> Self {
        if problems
            .iter()
            .any(|problem| problem.rule_id == aether_api::object::RULE_UNSUPPORTED)
        {
            LeftOutReason::Unsupported { problems }
        } else {
            LeftOutReason::Invalid { problems }
        }
    }

    /// The problems of an object left out for them; `None` for
    /// [`LeftOutReason::NoHostsLeft`].
    pub fn problems(&self) -> Option<&[Violation]> {
        match self {
            LeftOutReason::Invalid { problems } | LeftOutReason::Unsupported { problems } => Some(problems),
            LeftOutReason::NoHostsLeft => None,
        }
    }
}
