//! `routes.json` rendered one virtual host at a time is the whole
//! rendering, byte for byte, after every change of a random sequence, and
//! keeps rendering what it kept.

use aether_controller::outputs::{self, RoutesJson};
use aether_manifests::parse_manifests;
use aether_projection::{ObjectKey, ProjectionConfig, Projector, VirtualHostObject};
use proptest::prelude::*;

use crate::common;

/// Every object of the examples (every match and action there is), each
/// spec to be reused under other names and hosts.
fn specs() -> Vec<serde_json::Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut specs = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        let Ok(objects) = parse_manifests(&std::fs::read_to_string(&path).unwrap()) else {
            continue;
        };
        specs.extend(objects.iter().map(|object| serde_json::to_value(&object.spec).unwrap()));
    }
    assert!(specs.len() >= 10, "too few example specs: {}", specs.len());
    specs
}

/// `spec` as object `name`, its hosts replaced by `hosts` (a small pool,
/// so that objects take each other's hosts), created on `day`.
fn object(spec: &serde_json::Value, name: usize, hosts: &[usize], day: u8) -> VirtualHostObject {
    common::pooled(spec, name, hosts, day).build()
}

#[derive(Debug, Clone)]
enum Change {
    Upsert {
        name: usize,
        spec: usize,
        hosts: Vec<usize>,
        day: u8,
    },
    Remove {
        name: usize,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (0..12usize, 0..64usize, prop::collection::vec(0..8usize, 1..3), 0..5u8)
            .prop_map(|(name, spec, hosts, day)| Change::Upsert { name, spec, hosts, day }),
        1 => (0..12usize).prop_map(|name| Change::Remove { name }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn rendering_by_virtual_host_equals_the_whole_rendering(changes in prop::collection::vec(change(), 1..24)) {
        let specs = specs();
        let mut projector = Projector::new(ProjectionConfig::default());
        let routes_json = RoutesJson::default();
        for change in changes {
            match change {
                Change::Upsert { name, spec, hosts, day } => {
                    let mut hosts = hosts;
                    hosts.dedup();
                    projector.upsert(object(&specs[spec % specs.len()], name, &hosts, day));
                }
                Change::Remove { name } => {
                    projector.remove(&ObjectKey::new("team", format!("vh-{name}")));
                }
            }
            let snapshot = projector.snapshot();
            let binary = snapshot.route_configuration_binary();
            let whole = outputs::routes_json::whole(&snapshot.routes().version(), binary).unwrap();
            let by_virtual_host = routes_json.render(&snapshot).unwrap();
            prop_assert_eq!(String::from_utf8(by_virtual_host).unwrap(), String::from_utf8(whole.clone()).unwrap());
            // A memo shared by a clone, and a fresh one, agree.
            prop_assert_eq!(&routes_json.clone().render(&snapshot).unwrap(), &whole);
            prop_assert_eq!(&RoutesJson::default().render(&snapshot).unwrap(), &whole);
        }
    }
}
