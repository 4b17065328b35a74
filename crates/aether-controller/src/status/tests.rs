//! The statuses' unit tests: the outline decode,
//! routes left out, a few statuses among many.

use super::*;

/// The outline reads what envoy-types' full decode reads, on a
/// configuration with conflicts, wildcards and several route counts.
#[test]
fn the_outline_agrees_with_the_full_route_configuration() {
    let snapshot = crate::testing::examples_snapshot();
    let full = snapshot.route_configuration().unwrap();
    let outline: Vec<VirtualHostOutline> = snapshot
        .virtual_hosts()
        .map(|host| VirtualHostOutline::decode(host.as_ref()).unwrap())
        .collect();
    let full: Vec<(String, Vec<String>, usize)> = full
        .virtual_hosts
        .into_iter()
        .map(|host| (host.name, host.domains, host.routes.len()))
        .collect();
    let outline: Vec<(String, Vec<String>, usize)> = outline
        .into_iter()
        .map(|host| (host.name, host.domains, host.routes.len()))
        .collect();
    assert!(
        full.len() >= 4 && full.iter().any(|(_, _, routes)| *routes > 1),
        "{full:?}"
    );
    assert_eq!(outline, full);
}

/// Routes with a regular expression Envoy would refuse are left out:
/// still `Accepted`, reason `PartiallyInvalid` naming each, and
/// `routeCount` counting what the edge serves; with a lost host too,
/// the conflict's reason, the routes still named.
#[test]
fn routes_left_out_make_an_object_partially_invalid_and_are_not_counted() {
    let manifests = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: old, namespace: default, creationTimestamp: '2026-01-01T00:00:00Z'}
spec: {hosts: [taken.test], routes: [{match: {prefix: /}, backend: {service: s}}]}
---
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: partial, namespace: default, creationTimestamp: '2026-01-02T00:00:00Z'}
spec:
  hosts: [a.test]
  routes:
    - {match: {regex: '/[a-z]{200}'}, backend: {service: s}}
    - {match: {prefix: /}, backend: {service: s}}
---
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: both, namespace: default, creationTimestamp: '2026-01-03T00:00:00Z'}
spec:
  hosts: [taken.test, b.test]
  routes:
    - {match: {prefix: /, headers: [{name: x-a, regex: '\\pL'}]}, backend: {service: s}}
    - {match: {prefix: /}, backend: {service: s}}
";
    let objects = aether_manifests::parse_manifests(manifests).unwrap();
    let keys: BTreeMap<ObjectKey, Observed> = objects
        .iter()
        .map(|object| (object.key(), Observed::default()))
        .collect();
    let snapshot = aether_projection::project(objects, &aether_projection::ProjectionConfig::default()).unwrap();
    let index = Index::new(&snapshot, &keys).unwrap();
    let status = |name: &str| {
        desired(
            &index,
            &ObjectKey::new("default", name),
            &Observed::default(),
            &Now::new(Timestamp::from_second(1_800_000_000).unwrap()),
            None,
        )
    };
    let partial = status("partial");
    assert_eq!(partial.route_count, 1);
    let accepted = &partial.conditions[0];
    assert_eq!(
        (accepted.status.as_str(), accepted.reason.as_str()),
        ("True", REASON_PARTIALLY_INVALID)
    );
    assert!(
        accepted
            .message
            .starts_with("route left out: spec.routes[0].match.regex: RE2 may compile this")
            && accepted.message.ends_with("(re2); serving a.test"),
        "{}",
        accepted.message
    );
    let both = status("both");
    assert_eq!(both.route_count, 1);
    let accepted = &both.conditions[0];
    assert_eq!(
        (accepted.status.as_str(), accepted.reason.as_str()),
        ("True", REASON_HOST_CONFLICT)
    );
    assert!(
        accepted
            .message
            .contains("; route left out: spec.routes[0].match.headers[0].regex: a Unicode class")
            && accepted.message.ends_with("still serving b.test"),
        "{}",
        accepted.message
    );
    let old = status("old");
    assert_eq!(
        (old.conditions[0].reason.as_str(), old.route_count),
        (REASON_ACCEPTED, 1)
    );
}

/// A few statuses, found by binary search among many virtual hosts, are
/// the ones derived with every status.
#[test]
fn a_few_statuses_among_many_are_the_ones_derived_with_all() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        objects.extend(aether_manifests::parse_manifests(&text).unwrap_or_default());
    }
    objects.sort_by_key(|object| object.key());
    objects.dedup_by_key(|object| object.key());
    // Enough others (in namespaces before and after) that a handful is
    // looked up one by one.
    for i in 0..40 * objects.len() {
        let namespace = if i % 2 == 0 { "aaa" } else { "zzz" };
        let text = format!(
            "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: filler-{i}, namespace: {namespace}}}\n\
             spec: {{hosts: [filler-{i}.test], routes: [{{match: {{prefix: /}}, backend: {{service: s}}}}]}}\n"
        );
        objects.extend(aether_manifests::parse_manifests(&text).unwrap());
    }
    let all: BTreeMap<ObjectKey, Observed> = objects
        .iter()
        .map(|object| (object.key(), Observed::default()))
        .collect();
    let snapshot = aether_projection::project(objects, &aether_projection::ProjectionConfig::default()).unwrap();
    let now = Timestamp::from_second(1_800_000_000).unwrap();
    let every = statuses(&snapshot, None, &all, now).unwrap();
    for patch in every.iter().filter(|patch| !patch.key.name.starts_with("filler-")) {
        let one: BTreeMap<ObjectKey, Observed> = [(patch.key.clone(), Observed::default())].into();
        assert_eq!(
            statuses(&snapshot, None, &one, now).unwrap(),
            std::slice::from_ref(patch),
            "{}",
            patch.key
        );
    }
    // And an object the snapshot does not hold at all.
    let unknown: BTreeMap<ObjectKey, Observed> = [(ObjectKey::new("mmm", "nobody"), Observed::default())].into();
    assert_eq!(statuses(&snapshot, None, &unknown, now).unwrap().len(), 1);
}
