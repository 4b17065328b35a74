//! `Projector::upsert_keeping_valid` and `keep_valid`: a version left out
//! for its problems does not replace the valid one held, which keeps its
//! routes, secret and hosts (by its own rank), reported as kept until a
//! valid version comes or the object is removed.

use aether_api::validate::Violation;
use aether_projection::{LeftOutReason, ObjectKey, ProjectionConfig, Projector, VirtualHostObject};
use aether_testing::objects;

fn object(name: &str, created: &str, hosts: &[&str], service: &str) -> VirtualHostObject {
    let object = objects::object("default", name).created(created).hosts(hosts);
    object.route("/", service).tls(&format!("{service}-tls")).build()
}

fn served(projector: &Projector) -> Vec<(String, Vec<String>, String)> {
    use aether_projection::envoy_route::route::Action;
    use aether_projection::envoy_route::route_action::ClusterSpecifier;
    let config = projector.snapshot().route_configuration().unwrap();
    config
        .virtual_hosts
        .into_iter()
        .map(|host| {
            let cluster = match &host.routes[0].action {
                Some(Action::Route(action)) => match &action.cluster_specifier {
                    Some(ClusterSpecifier::Cluster(cluster)) => cluster.clone(),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            (host.name, host.domains, cluster)
        })
        .collect()
}

#[test]
fn an_unusable_version_keeps_the_valid_one_served_until_a_valid_one_or_the_removal() {
    let old = ("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z");
    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert_keeping_valid(object("main", old.0, &["shop.example.com"], "svc-v1"), 1);
    projector.upsert_keeping_valid(
        object(
            "canary",
            old.1,
            &["shop.example.com", "canary.example.com"],
            "svc-canary",
        ),
        1,
    );
    let before = served(&projector);
    let secrets = projector.snapshot().tls_secrets.clone();
    projector.take_touched();

    // Generation 2 of main breaks a rule: generation 1 is served, its host
    // kept from the younger canary, and reported.
    let key = ObjectKey::new("default", "main");
    projector.upsert_keeping_valid(object("main", old.0, &["Shop_Example"], "svc-v2"), 2);
    let snapshot = projector.snapshot();
    assert_eq!(served(&projector), before);
    assert_eq!(snapshot.tls_secrets, secrets);
    let kept = snapshot.kept(&key).unwrap();
    assert_eq!(kept.generation, 1);
    assert!(matches!(&kept.newer, LeftOutReason::Invalid { problems } if problems[0].field_path == "spec.hosts[0]"));
    assert_eq!(snapshot.left_out(&key), None);
    assert_eq!(snapshot.invalid_objects(), 1);
    assert!(projector.take_touched().contains(&key));

    // The same again changes nothing, and touches nothing.
    projector.upsert_keeping_valid(object("main", old.0, &["Shop_Example"], "svc-v2"), 2);
    assert!(projector.take_touched().is_empty());

    // A reader's own problem (a file that no longer parses) is kept the same way.
    let unreadable = Violation {
        field_path: "main.yaml".into(),
        rule_id: "manifest",
        message: "invalid YAML".into(),
    };
    assert!(projector.keep_valid(&key, std::slice::from_ref(&unreadable)));
    assert_eq!(
        projector.snapshot().kept(&key).unwrap().newer.problems(),
        Some(std::slice::from_ref(&unreadable))
    );

    // Generation 3 is valid: served, no longer reported.
    projector.upsert_keeping_valid(object("main", old.0, &["shop.example.com"], "svc-v3"), 3);
    let snapshot = projector.snapshot();
    assert_eq!(snapshot.kept(&key), None);
    assert_eq!(served(&projector)[1].2, "svc-v3");

    // Removed: gone, and canary inherits the host.
    projector.upsert_keeping_valid(object("main", old.0, &["Shop_Example"], "svc-v4"), 4);
    assert!(projector.remove(&key));
    let snapshot = projector.snapshot();
    assert_eq!(snapshot.kept(&key), None);
    assert_eq!(
        served(&projector),
        [(
            "default/canary".to_owned(),
            vec!["shop.example.com".to_owned(), "canary.example.com".to_owned()],
            "svc-canary".to_owned()
        )]
    );

    // With no valid version held, an invalid one is left out; nothing to keep.
    projector.upsert_keeping_valid(object("main", old.0, &["Shop_Example"], "svc-v5"), 5);
    assert!(projector.snapshot().left_out(&key).is_some());
    assert!(!projector.keep_valid(&key, std::slice::from_ref(&unreadable)));
}

/// `upsert`, for a one-off projection, replaces whatever was held.
#[test]
fn a_plain_upsert_replaces_a_valid_version_with_an_invalid_one() {
    let mut projector = Projector::new(ProjectionConfig::default());
    let created = "2026-01-01T00:00:00Z";
    projector.upsert(object("main", created, &["shop.example.com"], "svc-v1"));
    projector.upsert(object("main", created, &["Shop_Example"], "svc-v2"));
    assert!(served(&projector).is_empty());
    assert!(projector.snapshot().report.kept.is_empty());
}
