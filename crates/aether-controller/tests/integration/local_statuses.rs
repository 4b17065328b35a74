//! Local mode derives again only the statuses of the objects the
//! projection touched (and every status when the secrets' resolutions
//! change): after every pass of a random sequence of manifest edits, its
//! `status.json` says what the same passes say when every status is
//! derived again, but for the transition times. (Not a fresh start: an
//! edit that makes an object invalid keeps its previous version served,
//! which a fresh start never had.)

use aether_controller::local::Local;
use aether_controller::outputs::STATUS_FILE;
use aether_manifests::parse_manifests;
use proptest::prelude::*;
use serde_json::Value;

use crate::common;

/// Every object spec of the examples (valid ones, an invalid one, every
/// match and action), to be reused under other names and hosts.
fn specs() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let mut specs = Vec::new();
    for path in paths {
        if let Ok(objects) = parse_manifests(&std::fs::read_to_string(&path).unwrap()) {
            specs.extend(objects.iter().map(|object| serde_json::to_value(&object.spec).unwrap()));
        }
    }
    assert!(specs.len() >= 10, "too few example specs: {}", specs.len());
    specs
}

/// A manifest of object `vh-NAME` with `spec`, its hosts from a small pool
/// (so that objects take each other's), created on `day`.
fn manifest(spec: &Value, name: usize, hosts: &[usize], day: u8) -> String {
    common::pooled(spec, name, hosts, day).manifest()
}

/// `status.json` without the transition times.
fn statuses(out: &std::path::Path) -> Value {
    let mut statuses: Value = serde_json::from_slice(&std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    for status in statuses.as_object_mut().unwrap().values_mut() {
        for condition in status["conditions"].as_array_mut().unwrap() {
            condition.as_object_mut().unwrap().remove("lastTransitionTime");
        }
    }
    statuses
}

/// Object `name` written (spec index, hosts, creation day) or deleted.
type Edit = (usize, Option<(usize, Vec<usize>, u8)>);

fn edit() -> impl Strategy<Value = Edit> {
    (
        0..6usize,
        prop::option::weighted(0.8, (0..64usize, prop::collection::vec(0..4usize, 1..3), 0..3u8)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn statuses_derived_for_the_touched_objects_equal_a_fresh_start(edits in prop::collection::vec(edit(), 1..16)) {
        let specs = specs();
        let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut local = Local::new(common::options(input.path(), out.path())).unwrap();
        let every = tempfile::tempdir().unwrap();
        let mut reference = Local::new(common::options(input.path(), every.path())).unwrap();
        for (name, change) in edits {
            let file = input.path().join(format!("vh-{name}.yaml"));
            match change {
                Some((spec, mut hosts, day)) => {
                    hosts.dedup();
                    std::fs::write(&file, manifest(&specs[spec % specs.len()], name, &hosts, day)).unwrap();
                }
                None => {
                    let _ = std::fs::remove_file(&file);
                }
            }
            local.reconcile().unwrap();
            reference.derive_every_status();
            reference.reconcile().unwrap();
            prop_assert_eq!(statuses(out.path()), statuses(every.path()));
        }
    }
}
