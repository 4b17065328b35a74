//! The controller's binary in cluster mode, a separate process, against
//! the mock API server of aether-e2e (over HTTP, through `KUBECONFIG`):
//! it lists and watches, takes the Lease, writes statuses and records an
//! Event, with nothing answered by hand.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aether_e2e::kube_api::{KubeApi, RequestKey, Resource};
use aether_e2e::{Process, free_port, wait_until};
use serde_json::{Value, json};

fn virtual_host(host: &str) -> Value {
    json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": "main"},
        "spec": {"hosts": [host], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "main"}}]}})
}

fn controller(api: &KubeApi, out: &Path) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command.env("KUBECONFIG", api.kubeconfig_path()).args([
        "--out",
        out.to_str().unwrap(),
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
        "--identity",
        "edge-0",
        "--debounce-ms",
        "10",
    ]);
    Process::spawn("controller", command, &out.join("controller.log"))
}

/// Waits (up to 30 s) for shop/main's Accepted condition at `generation`; returns its message.
fn accepted_at(api: &KubeApi, process: &Process, generation: i64) -> String {
    wait_until(
        "the Accepted condition",
        Duration::from_secs(30),
        || process.log_tail(20),
        || {
            let object = api.get(Resource::VirtualHosts, "shop", "main")?;
            let conditions = object["status"]["conditions"].as_array()?.clone();
            let accepted = conditions.iter().find(|c| c["type"] == "Accepted")?;
            (accepted["observedGeneration"] == generation && accepted["status"] == "True")
                .then(|| accepted["message"].as_str().unwrap_or_default().to_owned())
        },
    )
}

#[test]
fn a_controller_process_lists_watches_leads_and_writes_statuses() {
    let api = KubeApi::start();
    api.create(virtual_host("shop.example.com")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut process = controller(&api, out.path());

    assert_eq!(accepted_at(&api, &process, 1), "serving shop.example.com");
    let lease = api.get(Resource::Leases, "default", "aether-controller").unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], "edge-0");

    // A new spec reaches the process through its watch.
    api.replace(virtual_host("moved.example.com")).unwrap();
    assert_eq!(accepted_at(&api, &process, 2), "serving moved.example.com");
    let routes = std::fs::read_to_string(out.path().join("routes.json")).unwrap();
    assert!(routes.contains("moved.example.com"));

    let events = api.events();
    assert!(
        events
            .iter()
            .any(|event| event["regarding"]["name"] == "main" && event["reason"] == "Accepted"),
        "{events:?}"
    );
    let requests = api.requests();
    let status_patches = RequestKey::new("patch", Resource::VirtualHosts, Some("status"), Some("main"));
    assert_eq!(requests[&status_patches], 2);
    // One list of each watched kind: the watches never had to start over.
    assert_eq!(api.request_count("list", Resource::VirtualHosts), 1);
    assert_eq!(api.request_count("list", Resource::Secrets), 1);
    process.kill();
}
