//! The controller dies and comes back while Envoy runs; and the start
//! order the files bootstrap needs.

use std::collections::BTreeSet;
use std::process::Command;

use aether_e2e::{Envoy, RouteSource};

use aether_e2e::Mode;

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

fn clusters() -> BTreeSet<String> {
    ["svc-web", "svc-next"].into_iter().map(String::from).collect()
}

fn check(mode: Mode) {
    let mut edge = edge(mode, &[("api.yaml", API)], &clusters());
    edge.wait_for("api.example.com", "/", Some("svc-web"));
    edge.kill_controller();
    // A change while no controller runs: Envoy keeps the last configuration.
    edge.write("api.yaml", &API.replace("svc-web", "svc-next"));
    for _ in 0..20 {
        assert_eq!(edge.cluster("api.example.com", "/").as_deref(), Some("svc-web"));
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    edge.restart_controller();
    edge.wait_for("api.example.com", "/", Some("svc-next"));
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
}

#[test]
fn envoy_keeps_serving_while_the_controller_is_killed_and_catches_up_over_files() {
    check(Mode::Files);
}

#[test]
fn envoy_keeps_serving_while_the_controller_is_killed_and_catches_up_over_xds() {
    check(Mode::Xds);
}

/// What was served is not stored: an invalid edit keeps the previous
/// version served only while this controller runs; one started on the
/// invalid file serves nothing for it (docs/design.md, the
/// previous-version rule).
fn restart_forgets_the_previous_version(mode: Mode) {
    let mut edge = edge(mode, &[("api.yaml", API)], &clusters());
    edge.wait_for("api.example.com", "/", Some("svc-web"));
    edge.write(
        "api.yaml",
        &API.replace("[api.example.com]", "[Api.example.com]")
            .replace("svc-web", "svc-next"),
    );
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(edge.out().join("status.json"))
        .unwrap_or_default()
        .contains("serving the previous version")
    {
        assert!(started.elapsed().as_secs() < 20, "{}", edge.logs());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(edge.cluster("api.example.com", "/").as_deref(), Some("svc-web"));
    edge.kill_controller();
    edge.restart_controller();
    edge.wait_for("api.example.com", "/", None);
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
}

#[test]
fn a_restarted_controller_serves_no_previous_version_over_files() {
    restart_forgets_the_previous_version(Mode::Files);
}

#[test]
fn a_restarted_controller_serves_no_previous_version_over_xds() {
    restart_forgets_the_previous_version(Mode::Xds);
}

/// The files bootstrap names a routes file Envoy must find at start: Envoy
/// refuses to start without it, and starts once `aether-controller --once`
/// (the init step the bootstrap's header asks for) has written it.
#[test]
fn over_files_envoy_starts_after_the_controllers_first_pass() {
    let manifests = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("api.yaml"), API).unwrap();
    let routes = out.path().join("routes.json");
    let bootstrap = aether_e2e::bootstrap::on_loopback(
        &RouteSource::File(routes.clone()),
        aether_e2e::free_port(),
        aether_e2e::free_port(),
        &Default::default(),
    );
    let config = out.path().join("bootstrap.json");
    std::fs::write(&config, serde_json::to_vec(&bootstrap).unwrap()).unwrap();
    let validate = || {
        Command::new(aether_e2e::envoy::binary())
            .args(["--mode", "validate", "--disable-hot-restart", "--config-path"])
            .arg(&config)
            .output()
            .expect("running envoy --mode validate")
    };
    let refused = validate();
    assert!(!refused.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stderr),
        String::from_utf8_lossy(&refused.stdout)
    );
    assert!(
        said.contains("routes.json") || said.contains("listeners.json"),
        "Envoy should name a missing file: {said}"
    );
    let init = crate::controller()
        .local_mode(manifests.path(), out.path())
        .arg("--once")
        .arg(format!("--https-addr=127.0.0.1:{}", aether_e2e::free_port()))
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let accepted = validate();
    assert!(
        accepted.status.success(),
        "{}",
        String::from_utf8_lossy(&accepted.stdout)
    );
    // And it serves from that file.
    let envoy = Envoy::start(&RouteSource::File(routes), &Default::default());
    aether_e2e::wait_until(
        "the route configuration",
        aether_e2e::edge::PATIENCE,
        || envoy.log_tail(),
        || envoy.dynamic_route_config(),
    );
}

/// `envoy --mode validate` on the xDS bootstrap: it passes with the client
/// certificate's files in place (a throwaway CA's), and names a missing one.
#[test]
fn the_xds_bootstrap_validates_with_its_client_certificate_and_names_a_missing_file() {
    let pki = aether_e2e::XdsPki::new();
    let dir = tempfile::tempdir().unwrap();
    let bootstrap = aether_e2e::bootstrap::on_loopback(
        &RouteSource::Xds(([127, 0, 0, 1], aether_e2e::free_port()).into(), pki.client_dir()),
        aether_e2e::free_port(),
        aether_e2e::free_port(),
        &Default::default(),
    );
    let config = dir.path().join("bootstrap.json");
    std::fs::write(&config, serde_json::to_vec(&bootstrap).unwrap()).unwrap();
    let validate = || {
        let output = Command::new(aether_e2e::envoy::binary())
            .args(["--mode", "validate", "--disable-hot-restart", "--config-path"])
            .arg(&config)
            .output()
            .expect("running envoy --mode validate");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
        (output.status.success(), said)
    };
    let (valid, said) = validate();
    assert!(valid, "{said}");
    std::fs::remove_file(pki.client_dir().join("ca.crt")).unwrap();
    let (valid, said) = validate();
    assert!(!valid, "validated without its trusted CA file");
    assert!(said.contains("ca.crt"), "Envoy should name the missing file: {said}");
}
