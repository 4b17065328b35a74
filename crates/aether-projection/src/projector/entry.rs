//! An object's entry in the projection: its problems, or the parts of it
//! built once (its Envoy virtual host, backends, secret) while it is valid.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use aether_api::object::Judged;
use aether_api::validate::Violation;
use envoy_types::pb::envoy::config::route::v3 as route;
use prost::bytes::Bytes;

use crate::envoy;
use crate::input::{Rank, VirtualHostObject};
use crate::tls::TlsSecret;

#[derive(Debug, Clone)]
pub(super) enum Entry {
    Invalid(Vec<Violation>),
    /// Boxed: most objects are valid, and a valid one's parts are what
    /// the map holds, so the invalid ones need not be as large.
    Valid(Box<Valid>),
}

#[derive(Debug, Clone)]
pub(super) struct Valid {
    pub(super) rank: Arc<Rank>,
    /// The Envoy virtual host's name, `namespace/name`.
    pub(super) name: String,
    /// Lowercased, in spec order (which the domains keep).
    pub(super) hosts: Vec<String>,
    /// The hosts currently won, in spec order.
    pub(super) domains: Vec<String>,
    /// The Envoy virtual host (name, domains, then the routes, built and
    /// encoded once) as a route configuration's entry
    /// ([`envoy::virtual_host_entry`]), re-encoded only when its domains
    /// change.
    pub(super) virtual_host: Bytes,
    /// Where the encoded routes start in `virtual_host`.
    pub(super) routes_at: usize,
    /// The problems of the routes left out of them.
    pub(super) routes_left_out: Vec<Violation>,
    /// Distinct `(service, port)` pairs of the routes.
    pub(super) backends: Vec<(String, u32)>,
    pub(super) secret: Option<TlsSecret>,
    pub(super) included: bool,
    /// The version's `metadata.generation` (0 where there is none).
    pub(super) generation: i64,
}

impl Entry {
    /// Validates the object as the edge serves it ([`Judged::Served`]: a
    /// spec field set aside is a problem, the status is not judged) and, if
    /// valid, builds its cached parts, each route with `retry` unless it
    /// sets its own.
    pub(super) fn of(object: &VirtualHostObject, retry: Option<&route::RetryPolicy>) -> Entry {
        let problems = object.problems(Judged::Served);
        if !problems.is_empty() {
            return Entry::Invalid(problems);
        }
        let rank = Arc::new(Rank::of(object));
        let backends: BTreeSet<(String, u32)> = object
            .spec
            .routes
            .iter()
            .flat_map(envoy::route_backends)
            .map(|(service, port)| (service.to_owned(), port))
            .collect();
        let secret = TlsSecret::of(object);
        let (routes, routes_left_out) = envoy::encoded_routes(&object.spec, retry);
        let name = rank.key.to_string();
        let virtual_host = envoy::virtual_host_entry(&name, &[], &routes);
        Entry::Valid(Box::new(Valid {
            routes_at: virtual_host.len() - routes.len(),
            virtual_host,
            routes_left_out,
            domains: Vec::new(),
            name,
            hosts: object.spec.hosts.iter().map(|host| host.to_ascii_lowercase()).collect(),
            rank,
            backends: backends.into_iter().collect(),
            secret,
            included: false,
            generation: 0,
        }))
    }
}

/// Drops an object's share of the dependency and secret sets.
pub(super) fn release(
    dependencies: &mut BTreeMap<(String, u32), usize>,
    secrets: &mut BTreeMap<TlsSecret, usize>,
    valid: &Valid,
) {
    for backend in &valid.backends {
        decrement(dependencies, backend);
    }
    if let Some(secret) = &valid.secret {
        decrement(secrets, secret);
    }
}

pub(super) fn decrement<K: Ord>(counts: &mut BTreeMap<K, usize>, key: &K) {
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}
