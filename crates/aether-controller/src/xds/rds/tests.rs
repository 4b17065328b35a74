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
