//! Local mode on the inputs that once made it serve the wrong
//! thing: each case fails on the code before its fix.

use std::time::Duration;

use aether_controller::local::Local;
use aether_controller::outputs::{ROUTES_FILE, STATUS_FILE};
use aether_manifests::Limits;
use aether_manifests::testing::atomic_writer_volume;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::config::route::v3::route::Action;
use envoy_types::pb::envoy::config::route::v3::route_action::ClusterSpecifier;
use prost::Message;

use crate::common::{self, named, options, served_hosts};

/// A ConfigMap mounted as a volume: every pass reads each file once (no
/// duplicates reported), and a new version replaces the old one whole.
#[test]
fn a_configmap_volume_is_read_once_per_file_and_follows_its_versions() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b, c) = (named("a"), named("b"), named("c"));
    atomic_writer_volume(input.path(), "1", &[("a.yaml", &a), ("b.yaml", &b)]);
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    for pass in 0..2 {
        let summary = local.reconcile().unwrap();
        assert_eq!(summary.input_errors, 0, "pass {pass}: {summary:?}");
        assert_eq!(served_hosts(out.path()), ["a.example.com", "b.example.com"]);
    }
    atomic_writer_volume(input.path(), "2", &[("a.yaml", &a), ("sub/c.yaml", &c)]);
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.input_errors, 0, "{summary:?}");
    assert_eq!(served_hosts(out.path()), ["a.example.com", "c.example.com"]);
}

/// A manifest caught half-written is not served: the edge keeps what the
/// file held when it was last read whole, until the file has settled.
#[test]
fn a_manifest_caught_half_written_is_not_served() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = input.path().join("shop.yaml");
    let whole = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: shop}\nspec:\n  \
                 hosts: [shop.example.com]\n  routes:\n  - match: {prefix: /cart}\n    backend:\n      \
                 service: svc-cart\n      port: 8443\n  - match: {prefix: /}\n    backend:\n      service: svc-web\n";
    // Any file modified within the hour is being written; none is waited for.
    let limits = Limits {
        settle: Duration::from_secs(3600),
        max_settle_wait: Duration::ZERO,
        ..Limits::default()
    };
    let mut local = Local::new(options(input.path(), out.path()))
        .unwrap()
        .with_limits(limits);
    std::fs::write(&file, whole).unwrap();
    modified_ago(&file, Duration::from_secs(7200));
    assert_eq!(local.reconcile().unwrap().input_errors, 0);
    assert_eq!(served_clusters(out.path()), ["svc-cart:8443", "svc-web"]);

    // The writer is half-way: the text so far is valid YAML, and a
    // VirtualHost, with another port and without the last route.
    let half = &whole[..whole.find("43\n").unwrap()];
    assert!(aether_manifests::parse_manifests(half).is_ok(), "{half}");
    std::fs::write(&file, half).unwrap();
    modified_ago(&file, Duration::ZERO);
    let summary = local.reconcile().unwrap();
    assert_eq!((summary.input_errors, summary.stale_files), (1, 1), "{summary:?}");
    assert_eq!(served_clusters(out.path()), ["svc-cart:8443", "svc-web"]);

    // Written whole and left alone: served.
    std::fs::write(&file, whole.replace("8443", "9443")).unwrap();
    modified_ago(&file, Duration::from_secs(7200));
    let summary = local.reconcile().unwrap();
    assert_eq!((summary.input_errors, summary.stale_files), (0, 0), "{summary:?}");
    assert_eq!(served_clusters(out.path()), ["svc-cart:9443", "svc-web"]);
}

/// Sets `file`'s modification time `age` in the past.
fn modified_ago(file: &std::path::Path, age: Duration) {
    let handle = std::fs::File::options().write(true).open(file).unwrap();
    handle.set_modified(std::time::SystemTime::now() - age).unwrap();
}

/// The clusters `routes.json` routes to, in route order.
fn served_clusters(out: &std::path::Path) -> Vec<String> {
    let binary = common::decode_routes(&std::fs::read(out.join(ROUTES_FILE)).unwrap()).unwrap();
    let config = RouteConfiguration::decode(binary.as_slice()).unwrap();
    config
        .virtual_hosts
        .iter()
        .flat_map(|host| &host.routes)
        .filter_map(|route| match &route.action {
            Some(Action::Route(action)) => match &action.cluster_specifier {
                Some(ClusterSpecifier::Cluster(cluster)) => Some(cluster.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A value of the wrong type makes its object `Invalid` (its status names
/// the path, the type and the range), like any broken rule; the other
/// objects are served. Before, the document was an input error and nothing
/// said which object was wrong.
#[test]
fn a_type_error_makes_its_object_invalid_naming_the_path_and_range() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(input.path().join("a.yaml"), named("a")).unwrap();
    std::fs::write(
        input.path().join("b.yaml"),
        named("b").replace("service: svc-web}", "service: svc-web, port: 4294967296}"),
    )
    .unwrap();
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.input_errors, 0, "{summary:?}");
    assert_eq!(served_hosts(out.path()), ["a.example.com"]);
    let status: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let accepted = &status["default/b"]["conditions"][0];
    assert_eq!(
        (&accepted["status"], &accepted["reason"]),
        (&"False".into(), &"Invalid".into())
    );
    assert_eq!(
        accepted["message"],
        "left out: spec.routes[0].backend.port: must be an integer from 0 to 65535, got 4294967296 (type)"
    );
}
