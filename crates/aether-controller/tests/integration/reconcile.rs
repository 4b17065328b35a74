//! The pure reconcile core: snapshot + stored statuses + written files →
//! files to write + status patches.

use std::collections::BTreeMap;

use aether_api::config::v1::{Condition, VirtualHostStatus};
use aether_controller::outputs::LISTENERS_FILE;
use aether_controller::outputs::plan;
use aether_controller::outputs::{self, DEPENDENCIES_FILE, ROUTES_FILE, TLS_SECRETS_FILE};
use aether_controller::{Files, Observed, StatusPatch, Written};
use aether_manifests::parse_manifests;
use aether_projection::{ObjectKey, ProjectionConfig, Snapshot, VirtualHostObject, project};
use jiff::Timestamp;
use serde_json::json;

use crate::common::{decode_routes, object};

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-06-01T12:30:45Z";

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn examples() -> Vec<VirtualHostObject> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut objects = Vec::new();
    for name in ["invalid.yaml", "proposal.yaml", "storefront.yaml", "tenants.yaml"] {
        objects.extend(parse_manifests(&std::fs::read_to_string(format!("{dir}/{name}")).unwrap()).unwrap());
    }
    objects
}

fn observe(objects: &[VirtualHostObject], generation: i64) -> BTreeMap<ObjectKey, Observed> {
    objects
        .iter()
        .map(|object| {
            let observed = Observed {
                generation,
                status: None,
                programmed: None,
            };
            (object.key(), observed)
        })
        .collect()
}

fn accepted(status: &VirtualHostStatus) -> &Condition {
    status.conditions.iter().find(|c| c.r#type == "Accepted").unwrap()
}

fn patch_for<'a>(patches: &'a [StatusPatch], key: &str) -> &'a VirtualHostStatus {
    &patches.iter().find(|p| p.key.to_string() == key).unwrap().status
}

#[test]
fn first_pass_writes_every_file_and_a_status_for_every_object() {
    let objects = examples();
    let snapshot = project(objects.clone(), &ProjectionConfig::default()).unwrap();
    let plan = plan(&snapshot, &no_tls(), &observe(&objects, 3), &Written::default(), ts(T0)).unwrap();

    let names: Vec<&str> = plan.writes.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        [DEPENDENCIES_FILE, TLS_SECRETS_FILE, ROUTES_FILE, LISTENERS_FILE],
        "routes, then the listener that routes with them, last"
    );
    let routes = &plan.writes[2].1;
    assert_eq!(decode_routes(routes).unwrap(), snapshot.route_configuration_binary());
    let dependencies: serde_json::Value = serde_json::from_slice(&plan.writes[0].1).unwrap();
    assert_eq!(dependencies, serde_json::to_value(&*snapshot.dependencies).unwrap());
    assert_eq!((plan.conflicts, plan.invalid), (2, 1));

    assert_eq!(plan.patches.len(), objects.len());
    let spec_routes = |key: &str| {
        objects
            .iter()
            .find(|o| o.key().to_string() == key)
            .unwrap()
            .spec
            .routes
            .len() as u32
    };
    for (key, status, reason, routes) in [
        ("default/api", "True", "Accepted", spec_routes("default/api")),
        (
            "legacy/legacy-api",
            "True",
            "HostConflict",
            spec_routes("legacy/legacy-api"),
        ),
        ("platform/tenants", "True", "Accepted", spec_routes("platform/tenants")),
        ("sandbox/broken", "False", "Invalid", 0),
        ("shop/storefront", "True", "Accepted", spec_routes("shop/storefront")),
        ("shop/storefront-canary", "False", "HostConflict", 0),
    ] {
        let got = patch_for(&plan.patches, key);
        let condition = accepted(got);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str(), got.route_count),
            (status, reason, routes),
            "{key}: {condition:?}"
        );
        assert_eq!(
            (condition.observed_generation, condition.last_transition_time.as_str()),
            (3, T0)
        );
        assert!(routes > 0 || status == "False");
    }
    let canary = accepted(patch_for(&plan.patches, "shop/storefront-canary"));
    assert_eq!(
        canary.message,
        "left out: host shop.example.com is served by the older VirtualHost shop/storefront"
    );
    let legacy = accepted(patch_for(&plan.patches, "legacy/legacy-api"));
    assert_eq!(
        legacy.message,
        "host api.example.com is served by the older VirtualHost default/api; still serving legacy.example.com"
    );
    let broken = accepted(patch_for(&plan.patches, "sandbox/broken"));
    assert!(broken.message.contains("spec.hosts[0]: ") && broken.message.contains("spec.routes[0].match.prefix: "));
}

/// Applies the patches as an API server would, returning the new observations.
fn stored(patches: &[StatusPatch], generation: i64) -> BTreeMap<ObjectKey, Observed> {
    patches
        .iter()
        .map(|p| {
            let observed = Observed {
                generation,
                status: Some(p.status.clone()),
                programmed: None,
            };
            (p.key.clone(), observed)
        })
        .collect()
}

#[test]
fn an_unchanged_world_writes_nothing_and_patches_nothing() {
    let objects = examples();
    let snapshot = project(objects.clone(), &ProjectionConfig::default()).unwrap();
    let first = plan(&snapshot, &no_tls(), &observe(&objects, 1), &Written::default(), ts(T0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut written = Written::default();
    let files: Files = first.writes.into_iter().collect();
    assert_eq!(
        outputs::write_changed(
            dir.path(),
            &files,
            &[],
            &Default::default(),
            &mut written,
            snapshot.routes()
        )
        .unwrap()
        .len(),
        4
    );
    let second = plan(&snapshot, &no_tls(), &stored(&first.patches, 1), &written, ts(T1)).unwrap();
    assert_eq!(second.writes, []);
    assert_eq!(second.patches, []);

    // A restarted controller reads the files back and finds them current too.
    let restarted = Written::read_existing(
        dir.path(),
        &[ROUTES_FILE, DEPENDENCIES_FILE, TLS_SECRETS_FILE, LISTENERS_FILE],
    );
    assert_eq!(
        plan(&snapshot, &no_tls(), &stored(&first.patches, 1), &restarted, ts(T1))
            .unwrap()
            .writes,
        []
    );

    // Another route configuration is rendered and written; going back to
    // the first one writes it again.
    let without_api = objects.iter().filter(|object| object.name != "api").cloned();
    let other = project(without_api, &ProjectionConfig::default()).unwrap();
    let changed = plan(&other, &no_tls(), &BTreeMap::new(), &written, ts(T1)).unwrap();
    assert!(changed.writes.iter().any(|(name, _)| *name == ROUTES_FILE));
    let files: Files = changed.writes.into_iter().collect();
    outputs::write_changed(
        dir.path(),
        &files,
        &[],
        &Default::default(),
        &mut written,
        other.routes(),
    )
    .unwrap();
    let back = plan(&snapshot, &no_tls(), &BTreeMap::new(), &written, ts(T1)).unwrap();
    let (name, bytes) = back.writes.last().unwrap();
    assert_eq!(
        (*name, bytes),
        (ROUTES_FILE, &outputs::render(&snapshot).unwrap()[ROUTES_FILE])
    );
}

fn two(canary_created: &str) -> Vec<VirtualHostObject> {
    vec![
        object(
            "shop",
            "main",
            Some("2026-01-01T00:00:00Z"),
            &["shop.example.com"],
            &["web"],
        ),
        object(
            "shop",
            "canary",
            Some(canary_created),
            &["shop.example.com", "beta.example.com"],
            &["canary"],
        ),
    ]
}

fn snapshot_of(objects: Vec<VirtualHostObject>) -> Snapshot {
    project(objects, &ProjectionConfig::default()).unwrap()
}

#[test]
fn last_transition_time_moves_only_when_the_status_flips() {
    // The canary is younger: it loses shop.example.com and keeps beta (True, HostConflict).
    let objects = two("2026-02-01T00:00:00Z");
    let first = plan(
        &snapshot_of(objects.clone()),
        &no_tls(),
        &observe(&objects, 1),
        &Written::default(),
        ts(T0),
    )
    .unwrap();
    let canary = patch_for(&first.patches, "shop/canary");
    assert_eq!(
        (accepted(canary).status.as_str(), accepted(canary).reason.as_str()),
        ("True", "HostConflict")
    );

    // Now older than main: it wins both hosts; main loses its only host and flips to False.
    let objects = two("2025-01-01T00:00:00Z");
    let second = plan(
        &snapshot_of(objects),
        &no_tls(),
        &stored(&first.patches, 1),
        &Written::default(),
        ts(T1),
    )
    .unwrap();
    let canary = patch_for(&second.patches, "shop/canary");
    let main = patch_for(&second.patches, "shop/main");
    assert_eq!(
        (
            accepted(canary).reason.as_str(),
            accepted(canary).last_transition_time.as_str()
        ),
        ("Accepted", T0),
        "True → True keeps the time"
    );
    assert_eq!(
        (
            accepted(main).status.as_str(),
            accepted(main).last_transition_time.as_str()
        ),
        ("False", T1),
        "True → False moves it"
    );
    assert_eq!(main.route_count, 0);
    assert_eq!(canary.route_count, 1);
}

#[test]
fn a_new_generation_alone_is_patched_and_other_conditions_are_kept() {
    let objects = two("2026-02-01T00:00:00Z");
    let snapshot = snapshot_of(objects.clone());
    let first = plan(&snapshot, &no_tls(), &observe(&objects, 1), &Written::default(), ts(T0)).unwrap();
    let mut observed = stored(&first.patches, 2);
    let foreign = Condition {
        r#type: "example.com/Audited".into(),
        status: "True".into(),
        observed_generation: 1,
        last_transition_time: T0.into(),
        reason: "Audited".into(),
        message: String::new(),
    };
    for o in observed.values_mut() {
        o.status.as_mut().unwrap().conditions.insert(0, foreign.clone());
    }
    let second = plan(&snapshot, &no_tls(), &observed, &Written::default(), ts(T1)).unwrap();
    assert_eq!(second.patches.len(), 2);
    for patch in &second.patches {
        assert_eq!(
            patch.status.conditions[0], foreign,
            "a condition the controller does not own"
        );
        let condition = &patch.status.conditions[1];
        assert_eq!(
            (condition.observed_generation, condition.last_transition_time.as_str()),
            (2, T0)
        );
    }
}

#[test]
fn the_merge_patch_always_carries_route_count_and_the_whole_condition_list() {
    let patch = StatusPatch {
        key: ObjectKey::new("shop", "canary"),
        status: VirtualHostStatus {
            conditions: vec![Condition {
                r#type: "Accepted".into(),
                status: "False".into(),
                observed_generation: 4,
                last_transition_time: T1.into(),
                reason: "HostConflict".into(),
                message: "left out".into(),
            }],
            route_count: 0,
        },
    };
    assert_eq!(
        patch.merge_patch(),
        json!({"status": {"routeCount": 0, "conditions": [{
            "type": "Accepted", "status": "False", "observedGeneration": 4,
            "lastTransitionTime": T1, "reason": "HostConflict", "message": "left out"
        }]}})
    );
}

#[test]
fn a_failed_write_leaves_the_previous_file_and_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let mut written = Written::default();
    let old: Files = [(ROUTES_FILE, prost::bytes::Bytes::from_static(b"old\n"))].into();
    let (old_routes, new_routes) = (empty_routes("old"), empty_routes("new"));
    outputs::write_changed(dir.path(), &old, &[], &Default::default(), &mut written, &old_routes).unwrap();
    // Block the temporary file's path: the write must fail before the rename.
    std::fs::create_dir(dir.path().join(outputs::temporary_name(ROUTES_FILE))).unwrap();
    let new: Files = [(ROUTES_FILE, prost::bytes::Bytes::from_static(b"new\n"))].into();
    assert!(outputs::write_changed(dir.path(), &new, &[], &Default::default(), &mut written, &new_routes).is_err());
    assert_eq!(std::fs::read(dir.path().join(ROUTES_FILE)).unwrap(), b"old\n");
    std::fs::remove_dir(dir.path().join(outputs::temporary_name(ROUTES_FILE))).unwrap();
    // Not recorded as written, so the next pass writes it.
    assert_eq!(
        outputs::write_changed(dir.path(), &new, &[], &Default::default(), &mut written, &new_routes).unwrap(),
        [ROUTES_FILE]
    );
    assert_eq!(std::fs::read(dir.path().join(ROUTES_FILE)).unwrap(), b"new\n");
    assert_eq!(
        outputs::write_changed(dir.path(), &new, &[], &Default::default(), &mut written, &new_routes).unwrap(),
        Vec::<&str>::new()
    );
}

/// The route table of no object, in the route configuration `name`.
fn empty_routes(name: &str) -> aether_projection::RouteTable {
    let config = ProjectionConfig {
        route_configuration_name: name.into(),
        ..ProjectionConfig::default()
    };
    project(Vec::<aether_projection::VirtualHostObject>::new(), &config)
        .unwrap()
        .routes()
        .clone()
}

/// No secret read: every referenced one is refused.
fn no_tls() -> aether_controller::EdgeTls {
    aether_controller::EdgeTls {
        settings: aether_controller::TlsSettings::new("/var/run/aether"),
        resolutions: Default::default(),
    }
}
