//! Properties of the projection over random sets of objects, many of them
//! contesting the same hosts and some invalid.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use aether_api::config::v1::{HttpRoute, VirtualHostSpec, route_match::Path};
use aether_api::validate::Validate;
use aether_projection::envoy_route::{route, route_action, route_match};
use aether_projection::{
    MatchKind, ObjectKey, ProjectionConfig, Projector, Snapshot, VirtualHostObject, edge_normal_form, project,
};
use proptest::prelude::*;

mod strategies;

use strategies::{Change, change_strategy, objects_strategy};

fn full(objects: &[VirtualHostObject]) -> Snapshot {
    project(objects.iter().cloned(), &ProjectionConfig::default()).unwrap()
}

/// A route as `(match, where it sends)`.
type RouteSummary = (route_match::PathSpecifier, Sends);

/// Where a route sends a request: the clusters taking traffic (one, or a
/// split's entries of positive weight, in listed order), or nowhere (a
/// redirect, or the edge's own reply to a split of weight 0).
type Sends = Vec<String>;

/// Whether the edge serves route `index` of a spec: the edge limits
/// (`aether_edge_limits`, the webhook's judge too) find nothing in it.
fn servable(index: usize, route: &HttpRoute) -> bool {
    aether_edge_limits::route_problems(index, route).is_empty()
}

/// Where the API says a route sends.
fn sends(route: &HttpRoute) -> Sends {
    if route.redirect.is_some() {
        return Vec::new();
    }
    if let Some(backend) = &route.backend {
        return vec![aether_projection::cluster_name(&backend.service, backend.port)];
    }
    let mut weights: Vec<(String, u64)> = Vec::new();
    for backend in &route.backends {
        let name = aether_projection::cluster_name(&backend.service, backend.port);
        match weights.iter_mut().find(|(n, _)| *n == name) {
            Some((_, weight)) => *weight += u64::from(backend.weight),
            None => weights.push((name, backend.weight.into())),
        }
    }
    weights.into_iter().filter(|(_, w)| *w > 0).map(|(n, _)| n).collect()
}

/// `(match, sends)` of spec routes, as the projection should write them:
/// those the edge can serve, in the API's order (`aether_api::precedence`),
/// prefixes measured in the form Envoy compares.
fn expected_routes(spec: &VirtualHostSpec) -> Vec<RouteSummary> {
    let order = aether_api::precedence::route_order(spec, |p| edge_normal_form(p, MatchKind::Prefix).len());
    order
        .into_iter()
        .filter(|&index| servable(index, &spec.routes[index]))
        .map(|index| {
            let r = &spec.routes[index];
            let path = match r.r#match.as_ref().unwrap().path.as_ref().unwrap() {
                Path::Prefix(p) => route_match::PathSpecifier::Prefix(edge_normal_form(p, MatchKind::Prefix)),
                Path::Exact(p) => route_match::PathSpecifier::Path(edge_normal_form(p, MatchKind::Exact)),
                Path::Regex(regex) => {
                    route_match::PathSpecifier::SafeRegex(envoy_types::pb::envoy::r#type::matcher::v3::RegexMatcher {
                        regex: regex.clone(),
                        engine_type: None,
                    })
                }
            };
            (path, sends(r))
        })
        .collect()
}

fn actual_routes(routes: &[aether_projection::envoy_route::Route]) -> Vec<RouteSummary> {
    routes
        .iter()
        .map(|r| {
            let sends = match &r.action {
                Some(route::Action::Route(action)) => match &action.cluster_specifier {
                    Some(route_action::ClusterSpecifier::Cluster(cluster)) => vec![cluster.clone()],
                    Some(route_action::ClusterSpecifier::WeightedClusters(split)) => {
                        split.clusters.iter().map(|c| c.name.clone()).collect()
                    }
                    other => panic!("{other:?}"),
                },
                Some(route::Action::Redirect(_) | route::Action::DirectResponse(_)) => Vec::new(),
                other => panic!("{other:?}"),
            };
            (r.r#match.clone().unwrap().path_specifier.unwrap(), sends)
        })
        .collect()
}

fn by_name<'a>(objects: &'a [VirtualHostObject], name: &str) -> &'a VirtualHostObject {
    objects.iter().find(|o| o.key().to_string() == name).unwrap()
}

/// Every object the snapshot says anything of.
fn outcomes_keys(snapshot: &Snapshot) -> Vec<ObjectKey> {
    let served = snapshot
        .route_configuration()
        .unwrap()
        .virtual_hosts
        .into_iter()
        .map(|vh| {
            let (namespace, name) = vh.name.split_once('/').unwrap();
            ObjectKey::new(namespace, name)
        });
    let conflicts = snapshot
        .report
        .conflicts
        .iter()
        .flat_map(|c| [c.winner.clone(), c.loser.clone()]);
    served.chain(conflicts).collect()
}

/// All the snapshot says of one object: left out (and why), its conflicts
/// (as winner or loser), its routes left out, its virtual host, its TLS chain.
fn outcome(snapshot: &Snapshot, key: &ObjectKey) -> String {
    let name = key.to_string();
    let left_out: Vec<_> = snapshot.report.left_out.iter().filter(|l| l.object == *key).collect();
    let conflicts: Vec<_> = snapshot
        .report
        .conflicts
        .iter()
        .filter(|c| c.winner == *key || c.loser == *key)
        .collect();
    let routes: Vec<_> = snapshot
        .report
        .routes_left_out
        .iter()
        .filter(|r| r.object == *key)
        .collect();
    let host = snapshot
        .route_configuration()
        .unwrap()
        .virtual_hosts
        .into_iter()
        .find(|vh| vh.name == name);
    let chain: Vec<_> = snapshot
        .tls_chains
        .iter()
        .filter(|c| c.object == *key)
        .map(|c| &c.secret)
        .collect();
    format!("{left_out:?} {conflicts:?} {routes:?} {host:?} {chain:?}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_domain_is_ever_served_twice(objects in objects_strategy()) {
        let snapshot = full(&objects);
        let mut seen = HashSet::new();
        for virtual_host in &snapshot.route_configuration().unwrap().virtual_hosts {
            prop_assert!(!virtual_host.domains.is_empty(), "{} has no domain", virtual_host.name);
            for domain in &virtual_host.domains {
                prop_assert!(seen.insert(domain.clone()), "{domain} twice");
            }
        }
    }

    /// Against a naive oracle: each host goes to its best-ranked valid
    /// claimant; each valid object with a host left is present with all its
    /// routes the edge can serve, in the order of its `routeOrder`; nothing
    /// else is present; every route left out is reported.
    #[test]
    fn valid_objects_keep_every_route_and_the_hosts_they_win(objects in objects_strategy()) {
        let snapshot = full(&objects);
        let valid: Vec<&VirtualHostObject> = objects.iter().filter(|o| o.spec.validate().is_ok()).collect();
        let rank = |o: &VirtualHostObject| (o.creation_timestamp.is_none(), o.creation_timestamp, o.namespace.clone(), o.name.clone());
        let winner = |host: &str| valid.iter().filter(|o| o.spec.hosts.iter().any(|h| h == host)).min_by_key(|o| rank(o)).map(|o| o.key());
        let mut expected = BTreeMap::new();
        for object in &valid {
            let won: Vec<String> = object.spec.hosts.iter().filter(|h| winner(h) == Some(object.key())).cloned().collect();
            if !won.is_empty() {
                expected.insert(object.key().to_string(), (won, expected_routes(&object.spec)));
            }
        }
        let actual: BTreeMap<String, (Vec<String>, Vec<RouteSummary>)> = snapshot
            .route_configuration()
            .unwrap()
            .virtual_hosts
            .iter()
            .map(|vh| (vh.name.clone(), (vh.domains.clone(), actual_routes(&vh.routes))))
            .collect();
        prop_assert_eq!(actual, expected);
        // Every route left out is reported, with its object.
        let left_out: usize = snapshot.report.routes_left_out.iter().map(|r| {
            let routes = &by_name(&objects, &r.object.to_string()).spec.routes;
            routes.iter().enumerate().filter(|(i, route)| !servable(*i, route)).count()
        }).sum();
        let expected_left_out: usize = snapshot.route_configuration().unwrap().virtual_hosts.iter().map(|vh| {
            by_name(&objects, &vh.name).spec.routes.iter().enumerate().filter(|(i, route)| !servable(*i, route)).count()
        }).sum();
        prop_assert_eq!(left_out, expected_left_out);
        // Every invalid object is reported as such.
        let invalid = objects.len() - valid.len();
        let reported = snapshot.report.left_out.iter().filter(|l| matches!(l.reason, aether_projection::LeftOutReason::Invalid { .. })).count();
        prop_assert_eq!(reported, invalid);
    }

    /// Each served host is in the TLS chain of its owner's secret, and in
    /// no chain when its owner has no `tls`: a host lost to an older object
    /// never brings its secret along, and no two chains share a host (Envoy
    /// would reject the listener). Plain hosts listed as under a TLS
    /// wildcard are exactly those a chain's wildcard covers.
    #[test]
    fn every_served_host_is_in_its_owners_chain_only(objects in objects_strategy()) {
        let snapshot = full(&objects);
        let by_key: BTreeMap<String, &VirtualHostObject> = objects.iter().map(|o| (o.key().to_string(), o)).collect();
        let mut expected: BTreeMap<String, String> = BTreeMap::new();
        let mut plain = Vec::new();
        for virtual_host in &snapshot.route_configuration().unwrap().virtual_hosts {
            let owner = by_key[&virtual_host.name];
            for domain in &virtual_host.domains {
                match owner.spec.tls.as_ref().and_then(|_| aether_projection::TlsSecret::of(owner)) {
                    Some(secret) => { expected.insert(domain.clone(), aether_projection::listener::sds_secret_name(&secret)); }
                    None => plain.push(domain.clone()),
                }
            }
        }
        let mut actual = BTreeMap::new();
        for chain in snapshot.tls_chains.iter() {
            for name in &chain.server_names {
                prop_assert!(actual.insert(name.clone(), aether_projection::listener::sds_secret_name(&chain.secret)).is_none(), "{name} in two chains");
            }
        }
        prop_assert_eq!(&actual, &expected);
        let mut secrets: Vec<_> = snapshot.tls_chains.iter().map(|chain| chain.secret.clone()).collect();
        secrets.sort();
        secrets.dedup();
        prop_assert_eq!(secrets, snapshot.tls_secrets.to_vec());
        // A chain per object, sorted; each misdirects exactly the hosts of
        // others that its wildcards cover.
        prop_assert!(snapshot.tls_chains.windows(2).all(|pair| pair[0].object < pair[1].object));
        let routes = snapshot.route_configuration().unwrap();
        let owner: BTreeMap<&String, aether_projection::ObjectKey> = routes
            .virtual_hosts
            .iter()
            .flat_map(|vh| {
                let key = by_key[&vh.name].key();
                vh.domains.iter().map(move |domain| (domain, key.clone()))
            })
            .collect();
        for chain in snapshot.tls_chains.iter() {
            let wildcards: Vec<&str> = chain.server_names.iter().filter_map(|n| n.strip_prefix('*')).collect();
            let mut expected: Vec<String> = owner
                .iter()
                .filter(|(host, key)| **key != chain.object
                    && aether_projection::covering_wildcards(host).any(|w| wildcards.contains(&&w[1..])))
                .map(|(host, _)| (*host).clone())
                .collect();
            expected.sort();
            prop_assert_eq!(&chain.misdirected, &expected);
        }
        let mut covered: Vec<String> = plain
            .into_iter()
            .filter(|host| aether_projection::covering_wildcards(host).any(|w| actual.contains_key(&w)))
            .collect();
        covered.sort();
        prop_assert_eq!(covered, snapshot.plain_hosts_under_tls_wildcards.to_vec());
    }

    /// The route configuration is assembled from cached encodings (a head,
    /// the virtual hosts, a tail); decoding it and encoding it again with
    /// prost, which writes fields in field-number order, gives the same
    /// bytes, so xDS clients and caches see one canonical form.
    #[test]
    fn the_assembled_route_configuration_is_prosts_own_encoding(objects in objects_strategy()) {
        use prost::Message;
        let snapshot = full(&objects);
        let decoded = snapshot.route_configuration().unwrap();
        prop_assert_eq!(decoded.encode_to_vec(), snapshot.route_configuration_binary());
    }

    #[test]
    fn output_does_not_depend_on_input_order(
        (objects, shuffled) in objects_strategy().prop_flat_map(|objects| (Just(objects.clone()), Just(objects).prop_shuffle()))
    ) {
        let (a, b) = (full(&objects), full(&shuffled));
        prop_assert_eq!(a.to_json().unwrap(), b.to_json().unwrap());
        prop_assert_eq!(a.to_yaml().unwrap(), b.to_yaml().unwrap());
        prop_assert_eq!(a.route_configuration_binary(), b.route_configuration_binary());
    }

    /// After each change of a random sequence, the incrementally kept
    /// projection equals a full rebuild from the current set (the bulk
    /// start, which indexes every object before deriving any domains).
    #[test]
    fn incremental_updates_equal_a_full_rebuild(changes in prop::collection::vec(change_strategy(), 1..40)) {
        let mut projector = Projector::new(ProjectionConfig::default());
        let mut current: BTreeMap<ObjectKey, VirtualHostObject> = BTreeMap::new();
        let mut before = full(&[]);
        for change in changes {
            match change {
                Change::Upsert(object) => {
                    current.insert(object.key(), object.clone());
                    projector.upsert(object);
                }
                Change::Remove(namespace, name) => {
                    let key = ObjectKey::new(&namespace, &name);
                    prop_assert_eq!(projector.remove(&key), current.remove(&key).is_some());
                }
                Change::Edit(namespace, name, spec) => {
                    let Some(object) = current.get_mut(&ObjectKey::new(&namespace, &name)) else {
                        continue;
                    };
                    object.spec = VirtualHostSpec { hosts: object.spec.hosts.clone(), ..spec }.into();
                    projector.upsert(object.clone());
                }
            }
            let rebuilt: Vec<VirtualHostObject> = current.values().cloned().collect();
            let expected = full(&rebuilt);
            let snapshot = projector.snapshot();
            prop_assert_eq!(&snapshot, &expected);
            // The same bytes, and the version kept by sums is the one a
            // table built at once has.
            prop_assert_eq!(snapshot.route_configuration_binary(), expected.route_configuration_binary());
            prop_assert_eq!(snapshot.routes().version(), expected.routes().version());
            // An object not reported touched came out exactly as before.
            let touched = projector.take_touched();
            let keys: BTreeSet<ObjectKey> = before.report.left_out.iter().map(|l| l.object.clone())
                .chain(expected.report.left_out.iter().map(|l| l.object.clone()))
                .chain(current.keys().cloned())
                .chain(outcomes_keys(&before))
                .collect();
            for key in keys.iter().filter(|key| !touched.contains(*key)) {
                prop_assert_eq!(outcome(&before, key), outcome(&expected, key), "{} changed, not touched", key);
            }
            // The snapshot's lookups by object (indexes it shares with the
            // next snapshots while their part is unchanged) agree with the
            // lists.
            prop_assert_eq!(
                snapshot.invalid_objects(),
                expected.report.left_out.iter().filter(|l| l.reason.problems().is_some()).count()
            );
            for key in &keys {
                prop_assert_eq!(snapshot.left_out(key), expected.report.left_out.iter().find(|l| l.object == *key));
                prop_assert_eq!(
                    snapshot.routes_left_out(key),
                    expected.report.routes_left_out.iter().find(|r| r.object == *key)
                );
                prop_assert_eq!(
                    snapshot.conflicts_lost_by(key).collect::<Vec<_>>(),
                    expected.report.conflicts.iter().filter(|c| c.loser == *key).collect::<Vec<_>>()
                );
                prop_assert_eq!(
                    snapshot.tls_chain_of(key),
                    expected.tls_chains.iter().find(|chain| chain.object == *key)
                );
            }
            before = expected.clone();
            prop_assert_eq!(projector.len(), current.len());
        }
    }
}
