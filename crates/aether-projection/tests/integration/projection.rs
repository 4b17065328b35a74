//! Behaviour of the projection on hand-written objects (the checked-in
//! examples: crates/aetherctl/tests/cli/examples_projected.rs).

use aether_projection::{
    LeftOutReason, ObjectKey, ProjectError, ProjectionConfig, Projector, Snapshot, VirtualHostObject, project,
};
use aether_testing::objects;
use prost::Message;

/// `namespace/name` claiming `hosts`, one route to `svc-NAME`.
fn object(namespace: &str, name: &str, created: Option<&str>, hosts: &[&str]) -> VirtualHostObject {
    let object = objects::object(namespace, name)
        .hosts(hosts)
        .route("/", &format!("svc-{name}"));
    match created {
        Some(created) => object.created(created),
        None => object,
    }
    .build()
}

fn snapshot(objects: Vec<VirtualHostObject>) -> Snapshot {
    project(objects, &ProjectionConfig::default()).unwrap()
}

/// `(virtual host name, domains)` of the output, in order.
fn domains(snapshot: &Snapshot) -> Vec<(String, Vec<String>)> {
    snapshot
        .route_configuration()
        .unwrap()
        .virtual_hosts
        .iter()
        .map(|vh| (vh.name.clone(), vh.domains.clone()))
        .collect()
}

fn conflicts(snapshot: &Snapshot) -> Vec<(String, String, String)> {
    snapshot
        .report
        .conflicts
        .iter()
        .map(|c| (c.host.clone(), c.winner.to_string(), c.loser.to_string()))
        .collect()
}

#[test]
fn oldest_claimant_wins_and_only_the_contested_host_is_dropped() {
    let snapshot = snapshot(vec![
        object(
            "b",
            "young",
            Some("2026-02-01T00:00:00Z"),
            &["shared.example.com", "young.example.com"],
        ),
        object("z", "old", Some("2026-01-01T00:00:00Z"), &["shared.example.com"]),
    ]);
    assert_eq!(
        domains(&snapshot),
        [
            ("b/young".to_owned(), vec!["young.example.com".to_owned()]),
            ("z/old".to_owned(), vec!["shared.example.com".to_owned()]),
        ]
    );
    assert_eq!(
        conflicts(&snapshot),
        [("shared.example.com".into(), "z/old".into(), "b/young".into())]
    );
    assert!(snapshot.report.left_out.is_empty());
}

#[test]
fn ties_go_to_namespace_then_name_and_untimed_objects_rank_last() {
    let same = Some("2026-01-01T00:00:00Z");
    let snapshot = snapshot(vec![
        object("a", "untimed", None, &["x.example.com"]),
        object("b", "b", same, &["x.example.com"]),
        object("a", "z", same, &["x.example.com"]),
        object("a", "y", same, &["x.example.com"]),
    ]);
    assert_eq!(
        domains(&snapshot),
        [("a/y".to_owned(), vec!["x.example.com".to_owned()])]
    );
    let losers: Vec<String> = conflicts(&snapshot)
        .into_iter()
        .map(|(_, winner, loser)| format!("{winner}>{loser}"))
        .collect();
    assert_eq!(losers, ["a/y>a/z", "a/y>b/b", "a/y>a/untimed"]);
    let left_out: Vec<(String, &LeftOutReason)> = snapshot
        .report
        .left_out
        .iter()
        .map(|l| (l.object.to_string(), &l.reason))
        .collect();
    assert_eq!(
        left_out,
        [
            ("a/untimed".to_owned(), &LeftOutReason::NoHostsLeft),
            ("a/z".to_owned(), &LeftOutReason::NoHostsLeft),
            ("b/b".to_owned(), &LeftOutReason::NoHostsLeft),
        ]
    );
    // Left-out objects contribute no dependency.
    let services: Vec<&str> = snapshot.dependencies.iter().map(|d| d.service.as_str()).collect();
    assert_eq!(services, ["svc-y"]);
}

#[test]
fn wildcard_and_exact_host_are_no_conflict() {
    let snapshot = snapshot(vec![
        object("a", "wild", Some("2026-01-01T00:00:00Z"), &["*.example.com"]),
        object("a", "api", Some("2026-02-01T00:00:00Z"), &["api.example.com"]),
    ]);
    assert_eq!(snapshot.route_configuration().unwrap().virtual_hosts.len(), 2);
    assert!(snapshot.report.conflicts.is_empty());
}

#[test]
fn invalid_objects_are_left_out_with_their_problems() {
    let mut bad_metadata = object("Team", "api", None, &["a.example.com"]);
    bad_metadata.name = "api/".into();
    let snapshot = snapshot(vec![
        object(
            "a",
            "bad",
            Some("2000-01-01T00:00:00Z"),
            &["UPPER.example.com", "ok.example.com"],
        ),
        bad_metadata,
        object("a", "good", None, &["ok.example.com"]),
    ]);
    // The invalid object is older, but never claims its valid host either.
    assert_eq!(
        domains(&snapshot),
        [("a/good".to_owned(), vec!["ok.example.com".to_owned()])]
    );
    assert!(snapshot.report.conflicts.is_empty());
    let problems: Vec<(String, Vec<(String, &str)>)> = snapshot
        .report
        .left_out
        .iter()
        .map(|l| match &l.reason {
            LeftOutReason::Invalid { problems } => (
                l.object.to_string(),
                problems.iter().map(|p| (p.field_path.clone(), p.rule_id)).collect(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        problems,
        [
            (
                "Team/api/".to_owned(),
                vec![
                    ("metadata.namespace".to_owned(), "dns1123_label"),
                    ("metadata.name".to_owned(), "dns1123_subdomain"),
                ]
            ),
            ("a/bad".to_owned(), vec![("spec.hosts[0]".to_owned(), "string.pattern")]),
        ]
    );
}

#[test]
fn duplicate_objects_are_an_error() {
    let err = project(
        vec![
            object("a", "x", None, &["a.example.com"]),
            object("a", "x", None, &["b.example.com"]),
        ],
        &ProjectionConfig::default(),
    )
    .unwrap_err();
    assert_eq!(err, ProjectError::DuplicateObject(ObjectKey::new("a", "x")));
    assert_eq!(err.to_string(), "the input holds VirtualHost a/x more than once");
}

#[test]
fn projector_follows_changes() {
    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object(
        "a",
        "old",
        Some("2026-01-01T00:00:00Z"),
        &["x.example.com", "y.example.com"],
    ));
    projector.upsert(object("a", "new", Some("2026-02-01T00:00:00Z"), &["x.example.com"]));
    assert_eq!(domains(&projector.snapshot()).len(), 1);
    // The old object gives up x: the new one inherits it.
    projector.upsert(object("a", "old", Some("2026-01-01T00:00:00Z"), &["y.example.com"]));
    assert_eq!(
        domains(&projector.snapshot()),
        [
            ("a/new".to_owned(), vec!["x.example.com".to_owned()]),
            ("a/old".to_owned(), vec!["y.example.com".to_owned()]),
        ]
    );
    assert!(projector.remove(&ObjectKey::new("a", "old")));
    assert!(!projector.remove(&ObjectKey::new("a", "old")));
    assert_eq!(projector.len(), 1);
}

/// The buffer of each virtual host in `snapshot`, by name.
fn buffers(snapshot: &Snapshot) -> std::collections::BTreeMap<String, *const u8> {
    let names = domains(snapshot).into_iter().map(|(name, _)| name);
    names
        .zip(snapshot.virtual_hosts())
        .map(|(name, bytes)| (name, bytes.as_ptr()))
        .collect()
}

#[test]
fn a_virtual_host_whose_object_and_domains_are_unchanged_keeps_its_buffer() {
    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object(
        "team",
        "a",
        Some("2026-01-02T00:00:00Z"),
        &["a.example.com", "shared.example.com"],
    ));
    projector.upsert(object("team", "b", Some("2026-01-03T00:00:00Z"), &["b.example.com"]));
    let first = projector.snapshot();
    // Each virtual host is the route configuration's entry, byte for byte.
    let decoded = first.route_configuration().unwrap();
    for (virtual_host, bytes) in decoded.virtual_hosts.iter().zip(first.virtual_hosts()) {
        assert_eq!(virtual_host.encode_to_vec(), bytes.as_ref());
    }

    // An unrelated object: neither buffer is rebuilt.
    projector.upsert(object("team", "c", Some("2026-01-04T00:00:00Z"), &["c.example.com"]));
    let second = projector.snapshot();
    assert_eq!(buffers(&second)["team/a"], buffers(&first)["team/a"]);
    assert_eq!(buffers(&second)["team/b"], buffers(&first)["team/b"]);

    // An older object takes one of a's hosts: a's domains change, so its
    // virtual host is encoded again; b's stays.
    projector.upsert(object(
        "team",
        "old",
        Some("2025-01-01T00:00:00Z"),
        &["shared.example.com"],
    ));
    let third = projector.snapshot();
    assert_ne!(buffers(&third)["team/a"], buffers(&second)["team/a"]);
    assert_eq!(buffers(&third)["team/b"], buffers(&first)["team/b"]);
    assert_eq!(
        domains(&third)
            .into_iter()
            .find(|(name, _)| name == "team/a")
            .unwrap()
            .1,
        ["a.example.com"]
    );
    assert_eq!(
        third,
        project(
            vec![
                object(
                    "team",
                    "a",
                    Some("2026-01-02T00:00:00Z"),
                    &["a.example.com", "shared.example.com"]
                ),
                object("team", "b", Some("2026-01-03T00:00:00Z"), &["b.example.com"]),
                object("team", "c", Some("2026-01-04T00:00:00Z"), &["c.example.com"]),
                object("team", "old", Some("2025-01-01T00:00:00Z"), &["shared.example.com"]),
            ],
            &ProjectionConfig::default()
        )
        .unwrap()
    );
}

#[test]
fn a_change_of_routes_alone_keeps_the_parts_it_cannot_alter_shared() {
    use std::sync::Arc;

    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object("team", "a", Some("2026-01-02T00:00:00Z"), &["a.example.com"]));
    projector.upsert(object("team", "b", Some("2026-01-03T00:00:00Z"), &["a.example.com"]));
    let first = projector.snapshot();

    // Another path, the same backend, hosts and creation time: only a's
    // virtual host changes; every other part is the same list, not a copy.
    let mut edited = object("team", "a", Some("2026-01-02T00:00:00Z"), &["a.example.com"]);
    Arc::make_mut(&mut edited.spec).routes[0].r#match.as_mut().unwrap().path =
        Some(aether_api::config::v1::route_match::Path::Prefix("/v2".into()));
    projector.upsert(edited.clone());
    let second = projector.snapshot();
    assert_ne!(second.routes(), first.routes());
    assert!(!second.routes().shares(first.routes()));
    assert!(Arc::ptr_eq(&second.dependencies, &first.dependencies));
    assert!(Arc::ptr_eq(&second.tls_secrets, &first.tls_secrets));
    assert!(Arc::ptr_eq(&second.tls_chains, &first.tls_chains));
    assert!(Arc::ptr_eq(&second.report, &first.report));

    // Another backend: the dependencies are built again, the rest kept.
    Arc::make_mut(&mut edited.spec).routes[0]
        .backend
        .as_mut()
        .unwrap()
        .service = "svc-other".into();
    projector.upsert(edited.clone());
    let third = projector.snapshot();
    assert!(!Arc::ptr_eq(&third.dependencies, &second.dependencies));
    assert_eq!(third.dependencies[0].service, "svc-other");
    assert!(Arc::ptr_eq(&third.report, &second.report));

    // The same object again: every part is shared, the route table too.
    projector.upsert(edited.clone());
    let fourth = projector.snapshot();
    assert_eq!(fourth, third);
    assert!(fourth.routes().shares(third.routes()));
    assert!(Arc::ptr_eq(&fourth.dependencies, &third.dependencies));

    // What a full build of the same objects gives, every time.
    let b = object("team", "b", Some("2026-01-03T00:00:00Z"), &["a.example.com"]);
    assert_eq!(third, snapshot(vec![edited, b]));
}
