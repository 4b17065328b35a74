//! Every incremental publication equals the one made from scratch.

use aether_projection::{ObjectKey, ProjectionConfig, Projector};
use aether_testing::objects;

use super::*;

/// `name` in namespace `shop` with `hosts`, a route to `service`, TLS or not.
fn object(name: &str, hosts: &[&str], service: &str, tls: bool) -> aether_projection::VirtualHostObject {
    let created = format!("2026-01-01T00:00:{:02}Z", name.len());
    let object = objects::object("shop", name)
        .created(&created)
        .hosts(hosts)
        .route("/", service);
    if tls {
        object.tls(&format!("{name}-tls"))
    } else {
        object
    }
    .build()
}

/// The names and versions of every item.
fn items(resources: &Resources) -> Vec<(String, String)> {
    resources
        .iter()
        .map(|(name, item)| (name.to_owned(), item.version.to_string()))
        .collect()
}

/// One change to the objects.
type Step = Box<dyn Fn(&mut Projector)>;

#[test]
fn every_incremental_publication_is_the_one_made_from_scratch() {
    let mut projector = Projector::new(ProjectionConfig::default());
    let mut resources = Resources::default();
    let mut last: Option<Source> = None;
    let steps: Vec<Step> = vec![
        Box::new(|p| p.upsert(object("a", &["a.example.com"], "web", true))),
        Box::new(|p| p.upsert(object("b", &["b.example.com"], "web", true))),
        // A route edit of a: only its chain and the plain configuration.
        Box::new(|p| p.upsert(object("a", &["a.example.com"], "api", true))),
        // A wildcard covering a and b: both become misdirected in it.
        Box::new(|p| p.upsert(object("wild", &["*.example.com"], "web", true))),
        Box::new(|p| p.upsert(object("plain", &["plain.example.com"], "web", false))),
        // b drops TLS, then is removed: the wildcard's misdirected list follows.
        Box::new(|p| p.upsert(object("b", &["b.example.com"], "web", false))),
        Box::new(|p| {
            p.remove(&ObjectKey::new("shop", "b"));
        }),
        Box::new(|p| {
            p.remove(&ObjectKey::new("shop", "wild"));
        }),
        Box::new(|p| p.upsert(object("a", &["a.example.com", "www.example.com"], "api", true))),
    ];
    for (at, step) in steps.iter().enumerate() {
        step(&mut projector);
        let snapshot = projector.snapshot();
        let before = resources.clone();
        last = Some(update(&mut resources, last.as_ref(), &snapshot));
        let mut scratch = Resources::default();
        update(&mut scratch, None, &snapshot);
        assert_eq!(items(&resources), items(&scratch), "step {at}");
        assert!(last.as_ref().unwrap().is(&snapshot));
        let changed: Vec<&str> = resources.changes_since(&before).map(|(name, _)| name).collect();
        if at == 2 {
            assert_eq!(changed, ["aether-edge", "aether-edge/shop/a"]);
        }
        if at == 3 {
            // The new chain; a's and b's hosts are named in it, their own
            // configurations are unchanged.
            assert_eq!(changed, ["aether-edge", "aether-edge/shop/wild"]);
        }
    }
    let names: Vec<String> = items(&resources).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["aether-edge", "aether-edge/shop/a"]);
}

#[test]
fn the_table_is_sent_as_its_pieces_each_virtual_host_shared() {
    let snapshot = crate::testing::examples_snapshot();
    let table = TableEncoding(snapshot.routes().clone());
    let mut pieces = Vec::new();
    table.push_pieces(&mut pieces);
    let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
    assert_eq!(bytes, snapshot.route_configuration_binary().to_vec());
    assert_eq!(table.encoded_len(), bytes.len());
    assert!(snapshot.virtual_hosts().len() >= 4);
    for virtual_host in snapshot.virtual_hosts() {
        let end = virtual_host.as_ptr() as usize + virtual_host.len();
        assert!(
            pieces
                .iter()
                .any(|piece| piece.as_ptr() as usize + piece.len() == end && piece.len() > virtual_host.len()),
            "a virtual host was copied"
        );
    }
    assert!(table.same_as(&TableEncoding(snapshot.routes().clone())));
    // The digest is written twice (the pure core does not depend on the
    // server's crate): one digest all the same.
    assert_eq!(aether_xds::version_of(&bytes), crate::outputs::version_of(&bytes));
}

#[test]
fn only_a_chains_configuration_is_quarantined_and_withdrawn_to_its_name_alone() {
    let scope = ChainConfigurations {
        base: "aether-edge".into(),
    };
    assert!(scope.quarantines("aether-edge/default/a"));
    assert!(!scope.quarantines("aether-edge"), "the plain table carries every host");
    assert!(!scope.quarantines("aether-edgex/default/a"));
    let withdrawn = scope.withdrawn("aether-edge/default/a");
    assert_eq!(
        RouteConfiguration::decode(withdrawn.body.to_bytes()).unwrap(),
        RouteConfiguration {
            name: "aether-edge/default/a".to_owned(),
            ..Default::default()
        }
    );
}
