//! One object, one resource: each HTTPS object's chain routes on a route
//! configuration of its own, so Envoy applies an edit of one object as one
//! small update, and adding an object updates the listener in place.
//! Plain HTTP redirects the TLS hosts (`--tls-hosts-over-plain-http=redirect`),
//! so the plain configuration does not change with their routes either.

use std::collections::BTreeMap;

use aether_e2e::edge::PATIENCE;
use aether_e2e::{Controller, Edge, Mode, wait_until};
use aether_testing::pki::{Leaf, TestCa};

use aether_controller::outputs::chains::{RESERVED_OPEN_FILES, watches_needed};

use crate::controller;
use crate::tls::clusters;

/// `namespace/name` claiming `host`, `/v{version}` to `svc-NAME-api`.
fn object(name: &str, version: u32) -> String {
    object_with(name, version, &[])
}

/// [`object`], claiming `more` hosts too.
fn object_with(name: &str, version: u32, more: &[&str]) -> String {
    let hosts = std::iter::once(format!("{name}.example.com")).chain(more.iter().map(|host| (*host).to_owned()));
    aether_testing::objects::object("default", name)
        .hosts(hosts)
        .route(&format!("/v{version}"), &format!("svc-{name}-api"))
        .route("/", &format!("svc-{name}"))
        .tls("wild-tls")
        .manifest()
}

/// A step of a test: what it does, doing it, and the cluster the moved
/// host goes to after it.
type Step = (&'static str, Box<dyn Fn(&Edge)>, Option<&'static str>);

/// Each route configuration's `update_success`, by configuration.
fn updates(edge: &Edge) -> BTreeMap<String, u64> {
    edge.envoy
        .stats_matching("http.edge.rds.", ".update_success")
        .into_iter()
        .map(|(name, value)| {
            let name = name["http.edge.rds.".len()..name.len() - ".update_success".len()].to_owned();
            (name, value)
        })
        .collect()
}

/// An edge redirecting TLS hosts over plain HTTP, with `args` more, serving
/// `objects` (all under the one wildcard certificate) with backends for
/// `names`, and the CA that issued the certificate.
fn start(mode: Mode, args: &[&str], names: &[&str], objects: &[&str]) -> (Edge, TestCa) {
    start_with(controller(), mode, args, names, objects)
}

/// [`start`] with the harness's `settings`.
fn start_with(settings: Controller, mode: Mode, args: &[&str], names: &[&str], objects: &[&str]) -> (Edge, TestCa) {
    let files: Vec<(String, String)> = objects
        .iter()
        .map(|name| (format!("{name}.yaml"), object(name, 1)))
        .collect();
    start_manifests(settings, mode, args, names, &files)
}

/// [`start_with`] on the manifest `files` (name, text).
pub(crate) fn start_manifests(
    settings: Controller,
    mode: Mode,
    args: &[&str],
    names: &[&str],
    files: &[(String, String)],
) -> (Edge, TestCa) {
    let ca = TestCa::new();
    let wild = ca.issue(&Leaf::new(&["*.example.com"], 0x0c01));
    let mut settings = Controller {
        args: vec!["--tls-hosts-over-plain-http=redirect".to_owned()],
        ..settings
    };
    settings.args.extend(args.iter().map(|arg| (*arg).to_owned()));
    let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let edge = Edge::start_with_secrets(settings, mode, &pairs, &clusters(names), |dir| {
        aether_testing::pki::write_secret(dir, "default", "wild-tls", &wild.chain_pem, &wild.key_pem);
    });
    (edge, ca)
}

/// The cluster `GET path` of `name`'s host goes to over TLS (`None`: 404).
fn served(edge: &Edge, ca: &TestCa, name: &str, path: &str) -> Option<String> {
    let host = format!("{name}.example.com");
    edge.served_tls(&host, path, &ca.der).map(|served| served.cluster)
}

/// The cluster `GET path` for `host` goes to over TLS, `None` when no chain
/// takes the handshake (or no route the request).
pub(crate) fn chain_serves(edge: &Edge, ca: &TestCa, host: &str, path: &str) -> Option<String> {
    let response = edge.get_tls(host, host, path, &ca.der).ok()?;
    let served: aether_e2e::Served = serde_json::from_slice(&response.body).ok()?;
    Some(served.cluster)
}

fn one_edit_is_one_updated_configuration(mode: Mode) {
    let names = ["a", "b", "c", "d"];
    let (edge, ca) = start(mode, &[], &names, &names[..3]);
    let served = |name: &str, path: &str| served(&edge, &ca, name, path);
    for name in &names[..3] {
        wait_until(
            "every chain served",
            PATIENCE,
            || edge.logs(),
            || (served(name, "/v1").as_deref() == Some(format!("svc-{name}-api").as_str())).then_some(()),
        );
    }
    // Plain HTTP redirects a TLS host to HTTPS.
    let plain = edge.envoy.get("a.example.com", "/v1");
    assert_eq!(plain.status, 301, "{plain:?}");
    assert!(
        plain
            .header("location")
            .is_some_and(|to| to.starts_with("https://a.example.com")),
        "{plain:?}"
    );

    // An edit of a: a's configuration alone is updated, once.
    let before = updates(&edge);
    assert!(before.contains_key("aether-edge/default/a"), "{before:?}");
    let listeners = edge.envoy.stat("listener_manager.listener_modified");
    edge.write("a.yaml", &object("a", 2));
    wait_until(
        "a's edit served",
        PATIENCE,
        || edge.logs(),
        || (served("a", "/v2").as_deref() == Some("svc-a-api")).then_some(()),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = updates(&edge);
    let changed: Vec<(&String, u64)> = after
        .iter()
        .filter(|(name, value)| before.get(*name) != Some(*value))
        .map(|(name, value)| (name, value - before.get(name).copied().unwrap_or(0)))
        .collect();
    assert_eq!(
        changed,
        [(&"aether-edge/default/a".to_owned(), 1)],
        "{before:?} {after:?}"
    );
    assert_eq!(edge.envoy.stat("listener_manager.listener_modified"), listeners);

    // A new object: a new chain, the listener updated in place, the other
    // chains' configurations untouched.
    let in_place = edge.envoy.stat("listener_manager.listener_in_place_updated");
    let before = updates(&edge);
    edge.write("d.yaml", &object("d", 1));
    wait_until(
        "d served",
        PATIENCE,
        || edge.logs(),
        || {
            edge.envoy
                .stat("listener_manager.listener_in_place_updated")
                .gt(&in_place)
                .then_some(())
                .and_then(|()| (served("d", "/v1").as_deref() == Some("svc-d-api")).then_some(()))
        },
    );
    let after = updates(&edge);
    for name in &names[..3] {
        let key = format!("aether-edge/default/{name}");
        assert_eq!(after.get(&key), before.get(&key), "{key}: {before:?} {after:?}");
    }
    assert_eq!(served("a", "/v2").as_deref(), Some("svc-a-api"));

    // A host moves from c to d, then d goes: each time the listener is
    // updated in place (only the chains that change drain), and a's and
    // b's configurations are untouched.
    let in_place_since =
        |since: u64| move |edge: &Edge| edge.envoy.stat("listener_manager.listener_in_place_updated").gt(&since);
    // No chain for a host: the handshake is refused (None).
    let moved = |edge: &Edge| chain_serves(edge, &ca, "moved.example.com", "/v1");
    let steps: [Step; 3] = [
        (
            "c claims moved",
            Box::new(|edge: &Edge| edge.write("c.yaml", &object_with("c", 1, &["moved.example.com"]))),
            Some("svc-c-api"),
        ),
        (
            "moved goes from c to d",
            Box::new(|edge: &Edge| {
                edge.write("c.yaml", &object("c", 1));
                edge.write("d.yaml", &object_with("d", 1, &["moved.example.com"]));
            }),
            Some("svc-d-api"),
        ),
        ("d removed", Box::new(|edge: &Edge| edge.remove("d.yaml")), None),
    ];
    for (step, change, expected) in steps {
        let since = edge.envoy.stat("listener_manager.listener_in_place_updated");
        let before = updates(&edge);
        change(&edge);
        wait_until(
            step,
            PATIENCE,
            || edge.logs(),
            || (in_place_since(since)(&edge) && moved(&edge).as_deref() == expected).then_some(()),
        );
        let after = updates(&edge);
        for name in ["a", "b"] {
            let key = format!("aether-edge/default/{name}");
            assert_eq!(after.get(&key), before.get(&key), "{step}: {key}: {before:?} {after:?}");
        }
        assert_eq!(served("a", "/v2").as_deref(), Some("svc-a-api"), "{step}");
        assert_eq!(served("b", "/v1").as_deref(), Some("svc-b-api"), "{step}");
    }
    assert!(
        edge.get_tls("d.example.com", "d.example.com", "/v1", &ca.der).is_err(),
        "d has no chain any more"
    );
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
    assert_eq!(edge.listeners_rejected(), 0, "{}", edge.logs());
}

#[test]
fn one_edit_is_one_updated_configuration_over_files() {
    one_edit_is_one_updated_configuration(Mode::Files);
}

#[test]
fn one_edit_is_one_updated_configuration_over_xds() {
    one_edit_is_one_updated_configuration(Mode::Xds);
}

/// Envoy refuses one object's configuration (spoiled past every guard by
/// the test-only `--test-refused-chain`): every other host keeps being
/// served and keeps receiving edits.
#[cfg(feature = "test-hooks")]
fn a_refused_configuration_costs_its_object_alone(mode: Mode) {
    let names = ["a", "b", "c"];
    let (edge, ca) = start(mode, &["--test-refused-chain=default/b"], &names, &names);
    let served = |name: &str, path: &str| served(&edge, &ca, name, path);
    for name in ["a", "c"] {
        wait_until(
            "the others served",
            PATIENCE,
            || edge.logs(),
            || (served(name, "/v1").as_deref() == Some(format!("svc-{name}-api").as_str())).then_some(()),
        );
    }
    let refused = || edge.envoy.stat("http.edge.rds.aether-edge/default/b.update_rejected");
    wait_until(
        "b's configuration refused",
        PATIENCE,
        || edge.logs(),
        || (refused() > 0).then_some(()),
    );
    assert_eq!(served("b", "/v1"), None, "b has no routes Envoy took");
    // The others keep receiving edits, b's refusals notwithstanding.
    edge.write("a.yaml", &object("a", 2));
    edge.write("b.yaml", &object("b", 2));
    wait_until(
        "a's edit served",
        PATIENCE,
        || edge.logs(),
        || (served("a", "/v2").as_deref() == Some("svc-a-api")).then_some(()),
    );
    assert_eq!(served("c", "/v1").as_deref(), Some("svc-c-api"));
    let refusals = edge.envoy.stats_matching("http.edge.rds.", ".update_rejected");
    let others: u64 = refusals
        .iter()
        .filter(|(name, _)| !name.contains("default/b"))
        .map(|(_, value)| value)
        .sum();
    // Over files each configuration is its own subscription: only b's
    // counts a refusal. Over the aggregated stream Envoy tells every route
    // subscription of a refused response (their counters move too), but
    // each resource comes in a response of its own: the others' edits were
    // served above all the same.
    if matches!(mode, Mode::Files) {
        assert_eq!(others, 0, "{refusals:?}");
    }
}

#[cfg(feature = "test-hooks")]
#[test]
fn a_refused_configuration_costs_its_object_alone_over_files() {
    a_refused_configuration_costs_its_object_alone(Mode::Files);
}

#[cfg(feature = "test-hooks")]
#[test]
fn a_refused_configuration_costs_its_object_alone_over_xds() {
    a_refused_configuration_costs_its_object_alone(Mode::Xds);
}

/// Over files Envoy holds an open file per watched chain. Under an open-file
/// limit (the controller's and Envoy's alike, as a pod's containers get the
/// runtime's), a listener with as many chains as the limit leaves room for
/// is served whole; one more chain is not written: Envoy keeps running and
/// serving the listener it has, and the chain comes once there is room.
#[test]
fn past_envoys_open_file_limit_the_listener_stays_and_envoy_runs() {
    // Three chains, the one SDS file, routes.json and listeners.json.
    let room = watches_needed(3, 1) + RESERVED_OPEN_FILES;
    let settings = Controller {
        open_files: Some(u64::try_from(room).unwrap()),
        ..controller()
    };
    let names = ["a", "b", "c", "d"];
    let (edge, ca) = start_with(settings, Mode::Files, &[], &names, &names[..3]);
    let served = |name: &str, path: &str| chain_serves(&edge, &ca, &format!("{name}.example.com"), path);
    let serves = |name: &str, path: &str, cluster: &str| {
        wait_until(
            &format!("{name}{path} served over TLS"),
            PATIENCE,
            || edge.logs(),
            || (served(name, path).as_deref() == Some(cluster)).then_some(()),
        );
    };
    for name in &names[..3] {
        serves(name, "/v1", &format!("svc-{name}-api"));
    }
    let envoy_pid = edge.envoy.id();
    let limits = std::fs::read_to_string(format!("/proc/{envoy_pid}/limits")).unwrap();
    assert!(
        limits
            .lines()
            .any(|line| line.starts_with("Max open files") && line.split_whitespace().any(|f| f == room.to_string())),
        "{limits}"
    );

    // A fourth chain would need one more open file than Envoy has room for.
    edge.write("d.yaml", &object("d", 1));
    wait_until(
        "the controller to refuse the listener",
        PATIENCE,
        || edge.logs(),
        || edge.controller_log().contains("RLIMIT_NOFILE").then_some(()),
    );
    let refusal = edge.controller_log();
    assert!(
        refusal.contains(&format!("the open-file limit (RLIMIT_NOFILE) is {room}")),
        "{refusal}"
    );
    // The chains Envoy has are still served and still take edits.
    edge.write("a.yaml", &object("a", 2));
    serves("a", "/v2", "svc-a-api");
    // No chain for d yet: its handshake is refused.
    let d = edge.get_tls("d.example.com", "d.example.com", "/v1", &ca.der);
    assert!(d.is_err(), "d has no chain yet: {d:?}");
    assert!(edge.envoy.is_ready(), "{}", edge.logs());
    assert_eq!(edge.rejected(), 0);

    // Room again: d's chain comes, c's goes.
    edge.remove("c.yaml");
    serves("d", "/v1", "svc-d-api");
    wait_until(
        "c's chain gone",
        PATIENCE,
        || edge.logs(),
        || served("c", "/v1").is_none().then_some(()),
    );
    serves("b", "/v1", "svc-b-api");
    assert!(edge.envoy.is_ready(), "{}", edge.logs());
}
