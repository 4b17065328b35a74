//! What a change of manifests moves at the edge: per host, the owner, the
//! routes added, removed, changed or reordered, and requests whose outcome
//! changes, each with its old and new outcome.
//!
//! ```
//! use aether_explain::diff::{Side, diff};
//! use aether_projection::{ProjectionConfig, VirtualHostObject, project};
//!
//! let objects = |service: &str| -> Vec<VirtualHostObject> {
//!     serde_json::from_value(serde_json::json!([{
//!         "namespace": "default", "name": "api",
//!         "spec": {"hosts": ["api.example.com"], "routes": [
//!             {"match": {"prefix": "/users"}, "backend": {"service": service}}
//!         ]}
//!     }])).unwrap()
//! };
//! let (old, new) = (objects("users"), objects("users-v2"));
//! let project = |objects: &[VirtualHostObject]| project(objects, &ProjectionConfig::default()).unwrap();
//! let (old_snapshot, new_snapshot) = (project(&old), project(&new));
//! let hosts = diff(Side::new(&old_snapshot, &old), Side::new(&new_snapshot, &new));
//! assert_eq!(hosts[0].host, "api.example.com");
//! assert_eq!(hosts[0].witnesses[0].request.to_string(), "GET http://api.example.com/users");
//! ```

use std::collections::{BTreeMap, BTreeSet};

use aether_api::ObjectKey;
use aether_projection::envoy_route::{Route, RouteConfiguration, VirtualHost};
use aether_projection::{Snapshot, VirtualHostObject, served_routes};
use prost::Message;
use serde::Serialize;

use crate::{Outcome, Request, edge, explain, routes, witness};

/// The requests shown per change, at most: enough to see it, few to read.
pub const WITNESSES_PER_CHANGE: usize = 3;

/// One side of a diff: a snapshot and the objects it was projected from.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    snapshot: &'a Snapshot,
    objects: &'a [VirtualHostObject],
}

impl<'a> Side<'a> {
    /// The side of `snapshot`, projected from `objects`.
    pub fn new(snapshot: &'a Snapshot, objects: &'a [VirtualHostObject]) -> Self {
        Self { snapshot, objects }
    }
}

/// What changes for one host (a domain: exact, or a `*.` wildcard).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostDiff {
    /// The host.
    pub host: String,
    /// Its owner before (`None`: not served).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_owner: Option<ObjectKey>,
    /// Its owner after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_owner: Option<ObjectKey>,
    /// Its routes' changes, in the new order (removed ones after); none
    /// when the owner changes (its routes are then another object's).
    pub routes: Vec<RouteChange>,
    /// Requests whose outcome changes.
    pub witnesses: Vec<WitnessDiff>,
}

/// One route's change. Routes are the same route when their matches are
/// equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "change", rename_all_fields = "camelCase")]
pub enum RouteChange {
    /// A new match.
    Added {
        /// Its index in the new `spec.routes`.
        index: usize,
        /// Its match, in short.
        path: String,
    },
    /// A match no longer there.
    Removed {
        /// Its index in the old `spec.routes`.
        index: usize,
        /// Its match, in short.
        path: String,
    },
    /// The same match, doing something else.
    Changed {
        /// Its index in the new `spec.routes`.
        index: usize,
        /// Its match, in short.
        path: String,
        /// What changed: `action` (backend, split, redirect, rewrite,
        /// timeout, retries), `request headers`, `response headers`.
        what: Vec<String>,
    },
    /// The same match, tried at another place among the routes both have.
    Reordered {
        /// Its index in the new `spec.routes`.
        index: usize,
        /// Its match, in short.
        path: String,
        /// Its place among the routes both sides have, before (from 0).
        old_place: usize,
        /// And after.
        new_place: usize,
    },
}

/// A request whose outcome changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessDiff {
    /// The request.
    pub request: Request,
    /// Its outcome before.
    pub old: Outcome,
    /// And after.
    pub new: Outcome,
}

/// Every host whose owner or routes change from `old` to `new`, sorted by
/// host; an empty list when nothing the edge serves changes.
pub fn diff(old: Side<'_>, new: Side<'_>) -> Vec<HostDiff> {
    // The projection's own encoding: it decodes, or the projection is broken.
    let plain = |side: Side<'_>| side.snapshot.route_configuration().unwrap_or_default();
    let (old_config, new_config) = (plain(old), plain(new));
    let (old_hosts, new_hosts) = (by_domain(&old_config), by_domain(&new_config));
    let domains: BTreeSet<&String> = old_hosts.keys().chain(new_hosts.keys()).collect();
    let mut diffs = Vec::new();
    for domain in domains {
        let (before, after) = (old_hosts.get(domain).copied(), new_hosts.get(domain).copied());
        if before.map(|vh| (&vh.name, &vh.routes)) == after.map(|vh| (&vh.name, &vh.routes)) {
            continue;
        }
        // Routes of either side asked about: those added, removed, changed
        // or moved, or all of both when the owner changes (whose routes are
        // then another object's: not compared one by one).
        let owner_changes = before.map(|vh| &vh.name) != after.map(|vh| &vh.name);
        let routes = match owner_changes {
            true => Vec::new(),
            false => route_changes(before.map(|vh| (vh, old)), after.map(|vh| (vh, new))),
        };
        let moved = moved_keys(before, after);
        let asked: Vec<&Route> = [before, after]
            .into_iter()
            .flatten()
            .flat_map(|vh| &vh.routes)
            .filter(|route| owner_changes || moved.contains(&match_key(route)))
            .collect();
        diffs.push(HostDiff {
            host: domain.clone(),
            old_owner: before.and_then(edge::object_of),
            new_owner: after.and_then(edge::object_of),
            routes,
            witnesses: witnesses(domain, &asked, old, new),
        });
    }
    diffs
}

fn by_domain(config: &RouteConfiguration) -> BTreeMap<String, &VirtualHost> {
    config
        .virtual_hosts
        .iter()
        .flat_map(|vh| vh.domains.iter().map(move |domain| (domain.clone(), vh)))
        .collect()
}

/// A route's identity across the sides: its match, encoded.
fn match_key(route: &Route) -> Vec<u8> {
    route.r#match.as_ref().map(Message::encode_to_vec).unwrap_or_default()
}

/// The identities of the routes not at the same place, the same, on both
/// sides: the first route that differs and every route after it on either
/// side (a route after a change may now be reached by other requests).
fn moved_keys(before: Option<&VirtualHost>, after: Option<&VirtualHost>) -> BTreeSet<Vec<u8>> {
    let (old, new) = (
        before.map_or(&[][..], |vh| &vh.routes[..]),
        after.map_or(&[][..], |vh| &vh.routes[..]),
    );
    let same = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    old[same..].iter().chain(&new[same..]).map(match_key).collect()
}

/// The listed index of each route of a side's virtual host.
fn indices(virtual_host: &VirtualHost, side: Side<'_>) -> Vec<usize> {
    let object = edge::object_of(virtual_host).and_then(|key| side.objects.iter().find(|object| object.key() == key));
    match object {
        Some(object) => served_routes(&object.spec),
        None => (0..virtual_host.routes.len()).collect(),
    }
}

fn route_changes(
    before: Option<(&VirtualHost, Side<'_>)>,
    after: Option<(&VirtualHost, Side<'_>)>,
) -> Vec<RouteChange> {
    let (old, new) = (listed(before), listed(after));
    let common_old: Vec<&Vec<u8>> = old
        .iter()
        .map(|(k, ..)| k)
        .filter(|k| new.iter().any(|(n, ..)| n == *k))
        .collect();
    let common_new: Vec<&Vec<u8>> = new
        .iter()
        .map(|(k, ..)| k)
        .filter(|k| old.iter().any(|(o, ..)| o == *k))
        .collect();
    let mut changes = Vec::new();
    for (key, route, index) in &new {
        let path = routes::describe(route);
        let Some((_, old_route, _)) = old.iter().find(|(k, ..)| k == key) else {
            changes.push(RouteChange::Added { index: *index, path });
            continue;
        };
        let what = what_changed(old_route, route);
        if !what.is_empty() {
            changes.push(RouteChange::Changed {
                index: *index,
                path: path.clone(),
                what,
            });
        }
        let old_place = common_old.iter().position(|k| *k == key).unwrap_or_default();
        let new_place = common_new.iter().position(|k| *k == key).unwrap_or_default();
        if old_place != new_place {
            changes.push(RouteChange::Reordered {
                index: *index,
                path,
                old_place,
                new_place,
            });
        }
    }
    for (key, route, index) in &old {
        if !new.iter().any(|(k, ..)| k == key) {
            changes.push(RouteChange::Removed {
                index: *index,
                path: routes::describe(route),
            });
        }
    }
    changes
}

/// A side's routes, each with its identity and listed index.
fn listed<'a>(side: Option<(&'a VirtualHost, Side<'_>)>) -> Vec<(Vec<u8>, &'a Route, usize)> {
    side.map(|(vh, side)| {
        vh.routes
            .iter()
            .zip(indices(vh, side))
            .map(|(route, index)| (match_key(route), route, index))
            .collect()
    })
    .unwrap_or_default()
}

fn what_changed(old: &Route, new: &Route) -> Vec<String> {
    let mut what = Vec::new();
    if old.action != new.action {
        what.push("action".to_owned());
    }
    if (&old.request_headers_to_add, &old.request_headers_to_remove)
        != (&new.request_headers_to_add, &new.request_headers_to_remove)
    {
        what.push("request headers".to_owned());
    }
    if (&old.response_headers_to_add, &old.response_headers_to_remove)
        != (&new.response_headers_to_add, &new.response_headers_to_remove)
    {
        what.push("response headers".to_owned());
    }
    what
}

/// Requests read off `asked` whose outcome differs between the sides: at
/// most [`WITNESSES_PER_CHANGE`] per route asked, none twice.
fn witnesses(domain: &str, asked: &[&Route], old: Side<'_>, new: Side<'_>) -> Vec<WitnessDiff> {
    let mut found: Vec<WitnessDiff> = Vec::new();
    for route in asked {
        let mut of_this_route = 0;
        for request in witness::requests(domain, route) {
            if of_this_route == WITNESSES_PER_CHANGE {
                break;
            }
            if found.iter().any(|w| w.request == request) {
                continue;
            }
            let before = explain(old.snapshot, old.objects, &request).outcome;
            let after = explain(new.snapshot, new.objects, &request).outcome;
            if before != after {
                of_this_route += 1;
                found.push(WitnessDiff {
                    request,
                    old: before,
                    new: after,
                });
            }
        }
    }
    found
}
