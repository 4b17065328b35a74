//! Cluster mode against the mock API server, with a real Envoy over xDS:
//! `Programmed` is written to the API server for exactly the objects whose
//! condition changes, so one object's edit among many costs its own
//! patches alone.
//!
//! `AETHER_PROGRAMMED_OBJECTS=N` runs the one-edit check with N objects
//! (200 by default; docs/benchmarks.md has 50,000); the counts are printed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aether_e2e::edge::PATIENCE;
use aether_e2e::kube_api::{KubeApi, RequestKey, Resource};
use aether_e2e::{Backends, Envoy, Process, RouteSource, XdsPki, free_port, wait_until};
use serde_json::{Value, json};

/// Objects in the fleet, unless `AETHER_PROGRAMMED_OBJECTS` says.
const OBJECTS: usize = 200;

fn objects() -> usize {
    std::env::var("AETHER_PROGRAMMED_OBJECTS").map_or(OBJECTS, |n| n.parse().expect("a number of objects"))
}

/// `shop/NAME`: `NAME.example.com`, `path` routed to the service `web`.
pub(crate) fn virtual_host(name: &str, path: &str) -> Value {
    json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": name},
        "spec": {"hosts": [format!("{name}.example.com")],
                 "routes": [{"match": {"prefix": path}, "backend": {"service": "web"}}]}})
}

/// The controller `edge-0`, alone: it holds the Lease.
pub(crate) fn controller(api: &KubeApi, pki: &XdsPki, xds_port: u16, out: &Path) -> Process {
    replica(api, pki, xds_port, out, "edge-0")
}

/// The controller `identity`, its reports living 3 s.
fn replica(api: &KubeApi, pki: &XdsPki, xds_port: u16, out: &Path, identity: &str) -> Process {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command
        .env("KUBECONFIG", api.kubeconfig_path())
        .args(["--out", out.to_str().unwrap()])
        .arg(format!("--metrics-addr=127.0.0.1:{}", free_port()))
        .arg(format!("--xds-addr=127.0.0.1:{xds_port}"))
        .args(["--xds-only", "--identity", identity, "--debounce-ms", "10"])
        .args(["--programmed-report-ttl-secs", "3"])
        .args(pki.controller_args());
    Process::spawn(identity, command, &out.join(format!("{identity}.log")))
}

/// An Envoy with node id `node` on the xDS of the replica at `xds_port`.
pub(crate) fn envoy(pki: &XdsPki, xds_port: u16, node: &str, backends: &Backends) -> Envoy {
    let source = RouteSource::Xds(([127, 0, 0, 1], xds_port).into(), pki.client_dir());
    let mut bootstrap = aether_e2e::bootstrap::on_loopback(&source, free_port(), free_port(), backends.addrs());
    aether_e2e::bootstrap::set_node_id(&mut bootstrap, node);
    Envoy::run(bootstrap)
}

/// `shop/NAME`'s `Programmed` condition as stored.
pub(crate) fn programmed(api: &KubeApi, name: &str) -> Value {
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
    let objects = objects();
    // Patience grows with the fleet: each status is written once per step.
    let patience = PATIENCE.max(Duration::from_millis(10 * objects as u64));
    let names: Vec<String> = (0..objects).map(|i| format!("o{i:05}")).collect();
    let edited_name = &names[objects / 2];
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
    let started = std::time::Instant::now();
    wait_until(
        "every object NoEnvoy",
        patience,
        || process.log_tail(20),
        || all_at("NoEnvoy", 1).then_some(()),
    );

    let backends = Backends::start(["web"]);
    let _envoy = Envoy::start(
        &RouteSource::Xds(([127, 0, 0, 1], xds_port).into(), pki.client_dir()),
        backends.addrs(),
    );
    let no_envoy = (started.elapsed(), status_patches(&api));
    wait_until(
        "every object Programmed",
        patience,
        || process.log_tail(20),
        || all_at("Programmed", 1).then_some(()),
    );
    // Settled: no more writes.
    std::thread::sleep(Duration::from_millis(500));
    let before = status_patches(&api);
    let programmed_all = (started.elapsed(), before);
    let edited = RequestKey::new("patch", Resource::VirtualHosts, Some("status"), Some(edited_name));
    let edited_before = api.requests().get(&edited).copied().unwrap_or(0);

    let edit_started = std::time::Instant::now();
    api.replace(virtual_host(edited_name, "/v2")).unwrap();
    wait_until(
        "the edited object Programmed at generation 2",
        patience,
        || process.log_tail(20),
        || {
            let condition = programmed(&api, edited_name);
            (condition["reason"] == "Programmed" && condition["observedGeneration"] == 2).then_some(())
        },
    );
    let edit_programmed = edit_started.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let after = status_patches(&api);
    let edited_after = api.requests()[&edited];
    eprintln!(
        "{objects} objects: NoEnvoy everywhere after {:?} ({} status patches); Programmed everywhere after {:?} \
         ({} in all); one edit Programmed after {edit_programmed:?}, {} status patches ({} its own)",
        no_envoy.0,
        no_envoy.1,
        programmed_all.0,
        programmed_all.1,
        after - before,
        edited_after - edited_before,
    );
    assert_eq!(
        after - before,
        edited_after - edited_before,
        "only the edited object's status was written"
    );
    assert!(
        (1..=2).contains(&(after - before)),
        "at most Pending then Programmed: {}",
        after - before
    );
}

/// Two replicas, an Envoy on each: the holder's statuses count both; with
/// the follower's Envoy gone, an edit waits for it, and with the follower
/// gone too, its report expires and nothing stays Pending.
#[test]
fn the_holder_speaks_for_every_replicas_envoys() {
    let api = KubeApi::start();
    let names: Vec<String> = (0..20).map(|i| format!("o{i:03}")).collect();
    for name in &names {
        api.create(virtual_host(name, "/")).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let pki = XdsPki::new();
    let ports = [free_port(), free_port()];
    let holder = replica(&api, &pki, ports[0], out.path(), "edge-0");
    wait_until(
        "edge-0 to hold the Lease",
        PATIENCE,
        || holder.log_tail(20),
        || {
            let lease = api.get(Resource::Leases, "default", "aether-controller")?;
            (lease["spec"]["holderIdentity"] == "edge-0").then_some(())
        },
    );
    let mut follower = replica(&api, &pki, ports[1], out.path(), "edge-1");
    // Envoy backs off up to 30 s between failed xDS connections: it starts
    // once the replica listens, or a loaded machine makes it miss the wait.
    wait_until(
        "edge-1 to serve xDS",
        PATIENCE,
        || follower.log_tail(20),
        || std::net::TcpStream::connect(("127.0.0.1", ports[1])).ok().map(drop),
    );
    let backends = Backends::start(["web"]);
    let _first = envoy(&pki, ports[0], "envoy-0", &backends);
    let mut second = envoy(&pki, ports[1], "envoy-1", &backends);
    let follower_log = out.path().join("edge-1.log");
    let logs = || {
        let follower = std::fs::read_to_string(&follower_log).unwrap_or_default();
        let tail: Vec<&str> = follower.lines().rev().take(20).collect();
        let reports: Vec<Value> = api
            .list(Resource::ConfigMaps, Some("default"))
            .iter()
            .map(|report| report["data"].clone())
            .collect();
        format!(
            "o004: {}\no005: {}\nreports: {reports:?}\n{}\n--- edge-1 ---\n{}",
            programmed(&api, "o004"),
            programmed(&api, "o005"),
            holder.log_tail(20),
            tail.join("\n")
        )
    };
    let message_of = |name: &str| {
        programmed(&api, name)["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // Each replica reports its Envoy.
    wait_until("a report of one Envoy from each replica", PATIENCE, logs, || {
        let reports = api.list(Resource::ConfigMaps, Some("default"));
        let envoys: Vec<Value> = reports
            .iter()
            .filter_map(|report| serde_json::from_str::<Value>(report["data"]["report.json"].as_str()?).ok())
            .map(|report| report["envoys"].clone())
            .collect();
        (envoys == [json!(1), json!(1)]).then_some(())
    });
    // An edit is programmed once both Envoys applied it.
    api.replace(virtual_host("o004", "/v2")).unwrap();
    wait_until("o004 applied by both Envoys", PATIENCE, logs, || {
        let condition = programmed(&api, "o004");
        (condition["observedGeneration"] == 2 && condition["message"] == "applied by 2 Envoys").then_some(())
    });

    // The follower's Envoy goes: an edit waits for it.
    second.kill();
    api.replace(virtual_host("o005", "/v2")).unwrap();
    wait_until("o005 Pending on the follower's Envoy alone", PATIENCE, logs, || {
        let condition = programmed(&api, "o005");
        let message = "waiting for 1 of 2 Envoys to apply it: envoy-1 (disconnected)";
        (condition["reason"] == "Pending" && condition["observedGeneration"] == 2 && condition["message"] == message)
            .then_some(())
    });
    // The follower goes too: its report expires, and o005 is programmed by
    // the Envoy left.
    follower.kill();
    let gone = std::time::Instant::now();
    wait_until(
        "o005 Programmed once the follower's report expired",
        PATIENCE,
        logs,
        || (message_of("o005") == "applied by 1 Envoy").then_some(()),
    );
    assert!(gone.elapsed() < Duration::from_secs(10), "{:?}", gone.elapsed());
    assert_eq!(programmed(&api, "o005")["observedGeneration"], 2);
}
