//! Faults around a running edge: the manifest directory vanishing, and an
//! Envoy asking for a route configuration the controller does not serve.

use std::collections::BTreeSet;
use std::time::Duration;

use aether_e2e::edge::PATIENCE;
use aether_e2e::{Envoy, Mode, Process, RouteSource, bootstrap, free_port, wait_until};

use crate::edge;

const API: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: api, namespace: default}
spec:
  hosts: [api.example.com]
  routes:
    - match: {prefix: /}
      backend: {service: svc-web}
";

/// The manifest directory moved away for a while (`mv DIR DIR.away`): an
/// I/O error, not a deletion; Envoy keeps every host and the same version.
fn directory_moved_away(mode: Mode) {
    let clusters: BTreeSet<String> = ["svc-web".to_owned()].into();
    let edge = edge(mode, &[("api.yaml", API)], &clusters);
    edge.wait_for("api.example.com", "/", Some("svc-web"));
    let version = edge.envoy.route_config_version().expect("a configuration");
    let away = edge.manifests().with_extension("away");
    std::fs::rename(edge.manifests(), &away).expect("moving the manifests away");
    // Many of the controller's polls (50 ms) while the directory is gone.
    for _ in 0..40 {
        assert_eq!(
            edge.cluster("api.example.com", "/").as_deref(),
            Some("svc-web"),
            "{}",
            edge.logs()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(edge.envoy.route_config_version().expect("a configuration"), version);
    std::fs::rename(&away, edge.manifests()).expect("moving the manifests back");
    edge.write(
        "api.yaml",
        &API.replace("[api.example.com]", "[api.example.com, www.example.com]"),
    );
    edge.wait_for("www.example.com", "/", Some("svc-web"));
    assert_eq!(edge.rejected(), 0);
}

#[test]
fn a_manifest_directory_moved_away_leaves_the_edge_serving_over_files() {
    directory_moved_away(Mode::Files);
}

#[test]
fn a_manifest_directory_moved_away_leaves_the_edge_serving_over_xds() {
    directory_moved_away(Mode::Xds);
}

/// An Envoy configured for another route configuration name waits for it
/// forever; the controller says so, naming both.
#[test]
fn an_envoy_asking_for_another_route_configuration_is_named_in_the_controllers_log() {
    let manifests = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("api.yaml"), API).unwrap();
    let xds = free_port();
    let mut command = crate::controller().local_mode(manifests.path(), out.path());
    let pki = aether_e2e::XdsPki::new();
    command
        .arg(format!("--xds-addr=127.0.0.1:{xds}"))
        .args(pki.controller_args());
    let controller = Process::spawn("aether-controller", command, &out.path().join("controller.log"));
    let mut config = bootstrap::on_loopback(
        &RouteSource::Xds(([127, 0, 0, 1], xds).into(), pki.client_dir()),
        free_port(),
        free_port(),
        &Default::default(),
    );
    config
        .pointer_mut(&format!("{}/route_config_name", bootstrap::RDS))
        .map(|name| *name = "edge-typo".into())
        .expect("the bootstrap names its route configuration");
    let envoy = Envoy::run(config);
    wait_until(
        "the controller's warning about edge-typo",
        PATIENCE,
        || format!("{}\n{}", controller.log_tail(20), envoy.log_tail()),
        || {
            let log = controller.log();
            log.lines()
                .find(|line| line.contains("WARN") && line.contains("edge-typo") && line.contains("aether-edge"))
                .map(str::to_owned)
        },
    );
}
