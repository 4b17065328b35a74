//! Cluster mode against the mock API server, with a real Envoy over xDS:
//! `Programmed` is written to the API server for exactly the objects whose
//! condition changes, so one object's edit among many costs its own
//! patches alone.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aether_e2e::edge::PATIENCE;
use aether_e2e::kube_api::{KubeApi, RequestKey, Resource};
use aether_e2e::{Backends, Envoy, Process, RouteSource, XdsPki, free_port, wait_until};
use serde_json::{Value, json};

/// Objects in the fleet.
const OBJECTS: usize = 200;

fn virtual_host(name: &str, path: &str) -> Value {
    json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": name},
        "spec": {"hosts": [format!("{name}.example.com")],
                 "routes": [{"match": {"prefix": path}, "backend": {"service": "web"}}]}})
}

fn controller(api: &KubeApi, pki: &XdsPki, xds_port: u16, out: &Path) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command
        .env("KUBECONFIG", api.kubeconfig_path())
        .args(["--out", out.to_str().unwrap()])
        .arg(format!("--metrics-addr=127.0.0.1:{}", free_port()))
        .arg(format!("--xds-addr=127.0.0.1:{xds_port}"))
        .args(["--xds-only", "--identity", "edge-0", "--debounce-ms", "10"])
        .args(pki.controller_args());
    Process::spawn("controller", command, &out.join("controller.log"))
}

/// `shop/NAME`'s `Programmed` condition as stored.
fn programmed(api: &KubeApi, name: &str) -> Value {
    api.get(Resource::VirtualHosts, "shop", name)
        .and_then(|object| {
            object["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Programmed")
                .cloned()
        })
        .unwrap_or(Value::Null)
}

fn status_patches(api: &KubeApi) -> u64 {
    api.requests()
        .iter()
        .filter(|(key, _)| {
            key.verb == "patch" && key.resource == "virtualhosts" && key.subresource.as_deref() == Some("status")
        })
        .map(|(_, count)| count)
        .sum()
}

#[test]
fn one_edit_among_many_writes_that_objects_programmed_alone() {
    let api = KubeApi::start();
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("o{i:03}")).collect();
    for name in &names {
        api.create(virtual_host(name, "/")).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let pki = XdsPki::new();
    let xds_port = free_port();
    let process = controller(&api, &pki, xds_port, out.path());
    let all_at = |reason: &str, generation: i64| {
        names.iter().all(|name| {
            let condition = programmed(&api, name);
            condition["reason"] == reason && condition["observedGeneration"] == generation
        })
    };
    wait_until(
        "every object NoEnvoy",
        PATIENCE,
        || process.log_tail(20),
        || all_at("NoEnvoy", 1).then_some(()),
    );

    let backends = Backends::start(["web"]);
    let _envoy = Envoy::start(
        &RouteSource::Xds(([127, 0, 0, 1], xds_port).into(), pki.client_dir()),
        backends.addrs(),
    );
    wait_until(
        "every object Programmed",
        PATIENCE,
        || process.log_tail(20),
        || all_at("Programmed", 1).then_some(()),
    );
    // Settled: no more writes.
    std::thread::sleep(Duration::from_millis(500));
    let before = status_patches(&api);
    let edited = RequestKey::new("patch", Resource::VirtualHosts, Some("status"), Some("o100"));
    let edited_before = api.requests().get(&edited).copied().unwrap_or(0);

    api.replace(virtual_host("o100", "/v2")).unwrap();
    wait_until(
        "o100 Programmed at generation 2",
        PATIENCE,
        || process.log_tail(20),
        || {
            let condition = programmed(&api, "o100");
            (condition["reason"] == "Programmed" && condition["observedGeneration"] == 2).then_some(())
        },
    );
    std::thread::sleep(Duration::from_millis(500));
    let after = status_patches(&api);
    let edited_after = api.requests()[&edited];
    assert_eq!(
        after - before,
        edited_after - edited_before,
        "only o100's status was written"
    );
    assert!(
        (1..=2).contains(&(after - before)),
        "at most Pending then Programmed: {}",
        after - before
    );
}
