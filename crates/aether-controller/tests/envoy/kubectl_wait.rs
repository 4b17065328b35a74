//! `kubectl wait --for=condition=Programmed`, the real client, on the
//! controller in cluster mode against the mock API server with a real
//! Envoy: it returns once the edge serves the object's current generation,
//! not on a `True` left from the generation before, and times out while no
//! Envoy programs the object.

use std::time::{Duration, Instant};

use aether_e2e::edge::PATIENCE;
use aether_e2e::kube_api::{KubeApi, Resource};
use aether_e2e::kubectl::{self, Background};
use aether_e2e::{Backends, Served, XdsPki, free_port, wait_until};
use serde_json::{Value, json};

use crate::cluster::{controller, envoy, programmed, virtual_host};

/// The object waited on, `shop/storefront`.
const NAME: &str = "storefront";

/// `kubectl wait`'s own bound; the test waits a little longer, so that a
/// wait that never ends fails with kubectl's message.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

/// `kubectl wait` for `Programmed` on `shop/storefront`, bounded by `timeout`.
fn wait_args(timeout: Duration) -> Vec<String> {
    let target = format!("virtualhost/{NAME}");
    let timeout = format!("--timeout={}s", timeout.as_secs());
    let args = ["wait", "--for=condition=Programmed", &target, "-n", "shop", &timeout];
    args.map(str::to_owned).to_vec()
}

/// The `Programmed` condition of an object as kubectl printed it.
fn condition_of(object: &Value) -> Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Programmed"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn kubectl_wait_returns_once_the_edit_is_programmed_not_on_the_stale_true() {
    let api = KubeApi::start();
    api.create(virtual_host(NAME, "/")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let pki = XdsPki::new();
    let xds_port = free_port();
    let process = controller(&api, &pki, xds_port, out.path());
    let backends = Backends::start(["web", "api"]);
    let envoy = envoy(&pki, xds_port, "envoy-0", &backends);
    let served = || {
        let response = envoy.get(&format!("{NAME}.example.com"), "/");
        serde_json::from_slice::<Served>(&response.body)
            .map(|served| served.cluster)
            .ok()
    };
    let context = || format!("stored: {}\n{}", programmed(&api, NAME), process.log_tail(20));
    wait_until("Programmed at generation 1", PATIENCE, context, || {
        let condition = programmed(&api, NAME);
        (condition["status"] == "True" && condition["observedGeneration"] == 1).then_some(())
    });
    assert_eq!(served().as_deref(), Some("web"));

    // Frozen, the controller cannot mark the edit Pending before kubectl
    // looks: kubectl sees `True` at generation 1 on an object at 2, the
    // case where only `observedGeneration` tells the condition is stale.
    process.pause();
    // Edited as a user would, through the main resource: the status stays.
    let routes = r#"{"spec": {"routes": [{"match": {"prefix": "/"}, "backend": {"service": "api"}}]}}"#;
    let patch = kubectl::run(&api, ["patch", "vh", NAME, "-n", "shop", "--type=merge", "-p", routes]);
    assert!(patch.status.success(), "{patch:?}");
    let stale = || {
        let object = api.get(Resource::VirtualHosts, "shop", NAME).unwrap();
        let condition = programmed(&api, NAME);
        object["metadata"]["generation"] == 2 && condition["status"] == "True" && condition["observedGeneration"] == 1
    };
    assert!(stale(), "{}", context());

    let watches = api.request_count("watch", Resource::VirtualHosts);
    // `-o json`: the object kubectl saw when it judged the condition met.
    let mut wait = Background::start(
        &api,
        wait_args(KUBECTL_TIMEOUT)
            .into_iter()
            .chain(["-o".into(), "json".into()]),
    );
    // kubectl watches once it has read the object (its list, or the
    // watch's first events): give it time to judge what it read.
    wait_until("kubectl's watch", PATIENCE, context, || {
        (api.request_count("watch", Resource::VirtualHosts) > watches).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    if let Some(output) = wait.output() {
        panic!("kubectl wait returned on Programmed True at generation 1 with the object at 2: {output:?}");
    }
    assert!(stale(), "nothing but kubectl ran meanwhile: {}", context());

    process.resume();
    let output = wait_until(
        "kubectl wait to return",
        KUBECTL_TIMEOUT + Duration::from_secs(10),
        context,
        || wait.output(),
    );
    // Read at once: what the edge serves when kubectl says it is done.
    let (stored, serving) = (programmed(&api, NAME), served());
    assert!(output.status.success(), "{output:?}\n{}", context());
    let seen: Value = serde_json::from_str(&output.stdout).unwrap_or_else(|err| panic!("{err}: {output:?}"));
    let condition = condition_of(&seen);
    assert_eq!(seen["metadata"]["generation"], 2, "{seen}");
    assert_eq!(
        (&condition["status"], &condition["observedGeneration"]),
        (&json!("True"), &json!(2)),
        "kubectl returned on {condition}"
    );
    assert_eq!(
        (&stored["status"], &stored["observedGeneration"]),
        (&json!("True"), &json!(2)),
        "{stored}"
    );
    assert_eq!(serving.as_deref(), Some("api"), "Programmed means the edit is served");
}

#[test]
fn kubectl_wait_times_out_while_no_envoy_programs_the_object() {
    let api = KubeApi::start();
    api.create(virtual_host(NAME, "/")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let pki = XdsPki::new();
    let process = controller(&api, &pki, free_port(), out.path());
    wait_until(
        "NoEnvoy at generation 1",
        PATIENCE,
        || process.log_tail(20),
        || {
            let condition = programmed(&api, NAME);
            (condition["reason"] == "NoEnvoy" && condition["observedGeneration"] == 1).then_some(condition)
        },
    );
    assert_eq!(programmed(&api, NAME)["status"], "False");

    let timeout = Duration::from_secs(3);
    let started = Instant::now();
    let output = kubectl::run(&api, wait_args(timeout));
    let took = started.elapsed();
    assert!(!output.status.success(), "{output:?}");
    assert!(
        output
            .stderr
            .contains(&format!("timed out waiting for the condition on virtualhosts/{NAME}")),
        "{output:?}"
    );
    assert!(took >= timeout, "it waited its timeout out: {took:?}");
    assert_eq!(programmed(&api, NAME)["reason"], "NoEnvoy");
}
