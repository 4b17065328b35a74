//! Local mode end to end: the binary on the repo's examples, and bad input
//! never losing what was read before.

use std::sync::Arc;
use std::time::Duration;

use aether_controller::TlsSettings;
use aether_controller::local::{Local, Options};
use aether_controller::metrics::Metrics;
use aether_controller::outputs::LISTENERS_FILE;
use aether_controller::outputs::{self, DEPENDENCIES_FILE, ROUTES_FILE, STATUS_FILE, TLS_SECRETS_FILE};
use aether_controller::xds;
use aether_projection::ProjectionConfig;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use prost::Message;
use serde_json::Value;

use crate::common::{self, GOOD, named, options, run_once, served_hosts};

#[test]
fn the_binary_on_the_examples_writes_every_file_then_nothing_on_a_rerun() {
    let examples = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    let out = tempfile::tempdir().unwrap();
    let (code, log) = run_once(examples, out.path());
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains(
            r#"written=["chains/", "dependencies.json", "status.json", "tls-secrets.json", "routes.json", "listeners.json"]"#
        ),
        "{log}"
    );
    assert!(
        log.contains("namespace=shop name=storefront-canary accepted=\"False\" reason=\"HostConflict\""),
        "{log}"
    );
    for name in [ROUTES_FILE, DEPENDENCIES_FILE, TLS_SECRETS_FILE, LISTENERS_FILE] {
        assert!(out.path().join(name).is_file(), "{name}");
    }
    common::decode_routes(&std::fs::read(out.path().join(ROUTES_FILE)).unwrap()).unwrap();
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    assert_eq!(status["sandbox/broken"]["conditions"][0]["reason"], "Invalid");
    assert_eq!(status["default/api"]["routeCount"], 3);
    insta::assert_json_snapshot!("examples_status", status, {".*.conditions[].lastTransitionTime" => "[now]"});
    let time = status["default/api"]["conditions"][0]["lastTransitionTime"].clone();

    let before = std::fs::metadata(out.path().join(ROUTES_FILE))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let (code, log) = run_once(examples, out.path());
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("written=[] status_changes=0"), "{log}");
    assert_eq!(
        std::fs::metadata(out.path().join(ROUTES_FILE))
            .unwrap()
            .modified()
            .unwrap(),
        before
    );
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    assert_eq!(status["default/api"]["conditions"][0]["lastTransitionTime"], time);
}

#[test]
fn a_file_that_turns_bad_keeps_its_last_objects_and_a_duplicate_keeps_the_first() {
    let input = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.yaml"), GOOD).unwrap();
    let mut local = Local::new(Options {
        manifests: input.path().to_owned(),
        out: out.path().to_owned(),
        poll: Duration::from_millis(10),
        quiet: Duration::ZERO,
        max_delay: Duration::ZERO,
        once: true,
        projection: ProjectionConfig::default(),
        secrets: None,
        tls: TlsSettings::new(out.path().to_string_lossy()),
    })
    .unwrap();
    let first = local.reconcile().unwrap();
    assert_eq!((first.input_errors, first.status_changes), (0, 1));
    let routes = std::fs::read(out.path().join(ROUTES_FILE)).unwrap();

    std::fs::write(input.path().join("a.yaml"), "spec: [unclosed").unwrap();
    let second = local.reconcile().unwrap();
    assert_eq!(second.input_errors, 1);
    assert_eq!(
        second.written,
        [STATUS_FILE],
        "the file's last objects are kept; only their status says it no longer parses"
    );
    assert_eq!(std::fs::read(out.path().join(ROUTES_FILE)).unwrap(), routes);

    std::fs::write(input.path().join("a.yaml"), GOOD).unwrap();
    std::fs::write(input.path().join("b.yaml"), GOOD.replace("svc-web", "svc-other")).unwrap();
    let third = local.reconcile().unwrap();
    assert_eq!(third.input_errors, 1, "default/api twice");
    assert_eq!(
        std::fs::read(out.path().join(ROUTES_FILE)).unwrap(),
        routes,
        "a.yaml's comes first"
    );

    std::fs::remove_file(input.path().join("a.yaml")).unwrap();
    std::fs::write(
        input.path().join("b.yaml"),
        GOOD.replace("name: api", "name: other").replace("api.", "other."),
    )
    .unwrap();
    let fourth = local.reconcile().unwrap();
    assert_eq!(fourth.input_errors, 0);
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["default/other"], "a removed object's status goes with it");
    let routes = String::from_utf8(std::fs::read(out.path().join(ROUTES_FILE)).unwrap()).unwrap();
    assert!(
        routes.contains("other.example.com") && !routes.contains("api.example.com"),
        "{routes}"
    );
}

#[test]
fn a_start_removes_the_temporary_files_a_killed_run_left() {
    let input = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("a.yaml"), GOOD).unwrap();
    let names = [
        ROUTES_FILE,
        DEPENDENCIES_FILE,
        TLS_SECRETS_FILE,
        STATUS_FILE,
        LISTENERS_FILE,
    ];
    for name in names {
        std::fs::write(out.path().join(outputs::temporary_name(name)), b"half a wri").unwrap();
    }
    // Someone else's file of a similar name is not ours to remove.
    std::fs::write(out.path().join(".notes.tmp"), b"mine").unwrap();

    let (code, stderr) = run_once(input.path(), out.path());
    assert_eq!(code, 0, "{stderr}");
    let mut left: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected = names.map(str::to_owned).to_vec();
    expected.push(".notes.tmp".to_owned());
    expected.sort();
    assert_eq!(left, expected);
}

#[tokio::test]
async fn the_binary_serves_over_xds_what_it_writes_to_routes_json() {
    let examples = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    let out = tempfile::tempdir().unwrap();
    // A free port (a race with another process taking it is possible, and would fail the test loudly).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command.arg("--manifests").arg(examples).arg("--out").arg(out.path());
    command.arg(format!("--xds-addr={addr}")).arg("--xds-plaintext");
    // A flag of Deployments written before the aggregated stream: accepted, ignored.
    command.arg("--xds-cluster=aether-controller-xds");
    let log = tempfile::NamedTempFile::new().unwrap();
    let _child = aether_e2e::Process::spawn("aether-controller", command, log.path());
    let started = std::time::Instant::now();
    let mut client = loop {
        match RouteDiscoveryServiceClient::connect(format!("http://{addr}")).await {
            Ok(client) => break client,
            Err(err) if started.elapsed() < Duration::from_secs(20) => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => panic!("the xDS server did not come up: {err}"),
        }
    };
    let (requests, outbound) = tokio::sync::mpsc::channel(1);
    requests
        .send(DiscoveryRequest {
            type_url: outputs::ROUTE_CONFIGURATION_TYPE.into(),
            resource_names: vec!["aether-edge".into()],
            ..DiscoveryRequest::default()
        })
        .await
        .unwrap();
    let mut responses = client
        .stream_routes(tokio_stream::wrappers::ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    let response = tokio::time::timeout(Duration::from_secs(20), responses.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.resources.len(), 1);
    let served = RouteConfiguration::decode(response.resources[0].value.as_slice()).unwrap();
    // Published before the files are written (gRPC clients do not wait for
    // them): routes.json, once there, holds the same configuration, under
    // the same version.
    let path = out.path().join(ROUTES_FILE);
    let routes = loop {
        match std::fs::read(&path) {
            Ok(routes) => break routes,
            Err(_) if started.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("{} was not written: {err}", path.display()),
        }
    };
    let written = common::decode_routes(&routes).unwrap();
    assert_eq!(served, RouteConfiguration::decode(written.as_slice()).unwrap());
    assert_eq!(version_info(&routes), response.version_info);
    assert!(
        served
            .virtual_hosts
            .iter()
            .any(|host| host.domains == ["api.example.com"])
    );
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(logged.matches("--xds-cluster is ignored").count(), 1, "{logged}");
}

/// `--envoy-answer-deadline-secs` reaches the fleet: with a deadline of
/// 1 s, an Envoy that takes the routes and never acknowledges them is left
/// out after it (named so), and the one that did makes the object
/// `Programmed`, where the default deadline would keep it `Pending` for a
/// minute.
#[tokio::test]
async fn the_answer_deadline_flag_leaves_an_envoy_that_never_answers_out_of_programmed() {
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("api.yaml"), GOOD).unwrap();
    let out = tempfile::tempdir().unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command
        .arg("--manifests")
        .arg(manifests.path())
        .arg("--out")
        .arg(out.path());
    command.arg(format!("--xds-addr={addr}")).arg("--xds-plaintext");
    command.arg("--envoy-answer-deadline-secs=1");
    let log = tempfile::NamedTempFile::new().unwrap();
    let _child = aether_e2e::Process::spawn("aether-controller", command, log.path());
    let started = std::time::Instant::now();
    let connect = || async {
        loop {
            match RouteDiscoveryServiceClient::connect(format!("http://{addr}")).await {
                Ok(client) => break client,
                Err(err) if started.elapsed() < Duration::from_secs(20) => {
                    let _ = err;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(err) => panic!("the xDS server did not come up: {err}"),
            }
        }
    };
    let request = |node: &str| DiscoveryRequest {
        node: Some(envoy_types::pb::envoy::config::core::v3::Node {
            id: node.into(),
            ..Default::default()
        }),
        type_url: outputs::ROUTE_CONFIGURATION_TYPE.into(),
        resource_names: vec!["aether-edge".into()],
        ..DiscoveryRequest::default()
    };
    // edge-1 acknowledges every response, edge-2 none (but reads them).
    let mut streams = Vec::new();
    for node in ["edge-1", "edge-2"] {
        let (requests, outbound) = tokio::sync::mpsc::channel(4);
        requests.send(request(node)).await.unwrap();
        let mut responses = connect()
            .await
            .stream_routes(tokio_stream::wrappers::ReceiverStream::new(outbound))
            .await
            .unwrap()
            .into_inner();
        let acknowledges = node == "edge-1";
        let ack = request(node);
        streams.push(tokio::spawn(async move {
            while let Ok(Some(response)) = responses.message().await {
                if acknowledges {
                    let ack = DiscoveryRequest {
                        version_info: response.version_info.clone(),
                        response_nonce: response.nonce.clone(),
                        ..ack.clone()
                    };
                    if requests.send(ack).await.is_err() {
                        return;
                    }
                }
            }
            drop(requests);
        }));
    }
    let status = out.path().join(STATUS_FILE);
    let programmed = loop {
        let found = std::fs::read(&status).ok().and_then(|bytes| {
            let report: Value = serde_json::from_slice(&bytes).ok()?;
            report["default/api"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Programmed" && c["status"] == "True")
                .cloned()
        });
        match found {
            Some(condition) => break condition,
            None if started.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            None => panic!(
                "never Programmed within 30 s: {}\n{}",
                std::fs::read_to_string(&status).unwrap_or_default(),
                std::fs::read_to_string(log.path()).unwrap_or_default()
            ),
        }
    };
    let message = programmed["message"].as_str().unwrap();
    assert!(message.contains("edge-2 (not answering)"), "{message}");
    for stream in streams {
        stream.abort();
    }
}

/// When every status's condition last flipped, as `status.json` holds it.
const LONG_AGO: &str = "2020-01-01T00:00:00Z";

/// `manifests/` holding `a.yaml`, `b/b.yaml` and `c.yaml` (objects `default/a`,
/// `b` and `c`), reconciled once into `out`; then every stored transition
/// time is set back to [`LONG_AGO`] and local mode restarted on it, so that
/// a status dropped and made anew shows (within the same second it would
/// get the same time). Returns the manifests directory and local mode.
fn reconciled_tree(input: &std::path::Path, out: &std::path::Path) -> (std::path::PathBuf, Local) {
    let manifests = input.join("manifests");
    std::fs::create_dir_all(manifests.join("b")).unwrap();
    std::fs::write(manifests.join("a.yaml"), named("a")).unwrap();
    std::fs::write(manifests.join("b/b.yaml"), named("b")).unwrap();
    std::fs::write(manifests.join("c.yaml"), named("c")).unwrap();
    let first = Local::new(options(&manifests, out)).unwrap().reconcile().unwrap();
    assert_eq!((first.input_errors, first.status_changes), (0, 3));
    let status: Value = serde_json::from_slice(&std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    let now = status["default/a"]["conditions"][0]["lastTransitionTime"]
        .as_str()
        .unwrap();
    let text = String::from_utf8(std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    std::fs::write(out.join(STATUS_FILE), text.replace(now, LONG_AGO)).unwrap();
    let mut local = Local::new(options(&manifests, out)).unwrap();
    let restarted = local.reconcile().unwrap();
    assert_eq!((restarted.written, restarted.status_changes), (Vec::new(), 0));
    assert_eq!(transition_times(out).len(), 3);
    (manifests, local)
}

/// Every object's `lastTransitionTime` in `status.json`.
fn transition_times(out: &std::path::Path) -> Vec<(String, String)> {
    let status: Value = serde_json::from_slice(&std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    status
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, status)| {
            let time = status["conditions"][0]["lastTransitionTime"].as_str().unwrap();
            (key.clone(), time.to_owned())
        })
        .collect()
}

/// `expected_errors` input errors and nothing written: every object, route
/// and transition time as the first pass left them.
fn assert_kept(local: &mut Local, out: &std::path::Path, expected_errors: usize, what: &str) {
    let routes = std::fs::read(out.join(ROUTES_FILE)).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.input_errors, expected_errors, "{what}");
    assert_eq!(summary.written, Vec::<&str>::new(), "{what}: nothing to write");
    assert_eq!(std::fs::read(out.join(ROUTES_FILE)).unwrap(), routes, "{what}");
    assert_eq!(
        transition_times(out),
        ["default/a", "default/b", "default/c"].map(|key| (key.to_owned(), LONG_AGO.to_owned())),
        "{what}"
    );
}

#[test]
fn a_manifest_directory_moved_away_or_a_dangling_link_keeps_every_object_and_status() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (manifests, mut local) = reconciled_tree(input.path(), out.path());

    // `mv manifests manifests.away` for a while: the listing fails, nothing is lost.
    let away = input.path().join("manifests.away");
    std::fs::rename(&manifests, &away).unwrap();
    assert_kept(&mut local, out.path(), 1, "the directory moved away");
    std::fs::rename(&away, &manifests).unwrap();
    assert_kept(&mut local, out.path(), 0, "the directory back");

    // A manifest that is a link to a file that is not there (a volume gone):
    // it cannot be read, which is not the same as it being deleted.
    std::fs::rename(manifests.join("a.yaml"), input.path().join("a.yaml")).unwrap();
    std::os::unix::fs::symlink(input.path().join("gone/a.yaml"), manifests.join("a.yaml")).unwrap();
    assert_kept(&mut local, out.path(), 1, "a.yaml a dangling link");
    std::fs::remove_file(manifests.join("a.yaml")).unwrap();
    std::os::unix::fs::symlink(input.path().join("a.yaml"), manifests.join("a.yaml")).unwrap();
    assert_kept(&mut local, out.path(), 0, "a.yaml a link to the file");
}

#[cfg(target_os = "linux")]
#[test]
fn an_unlistable_subdirectory_keeps_its_objects_and_a_deleted_file_loses_them() {
    use std::os::unix::fs::PermissionsExt;

    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (manifests, mut local) = reconciled_tree(input.path(), out.path());
    let sub = manifests.join("b");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o000)).unwrap();
    {
        let _unprivileged = aether_manifests::testing::WithoutFileCapabilities::enter();
        assert!(std::fs::read_dir(&sub).is_err(), "chmod 000 did not stop the listing");
        // b/ cannot be listed, and c.yaml after it is still read.
        assert_kept(&mut local, out.path(), 1, "b/ unlistable");
    }
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_kept(&mut local, out.path(), 0, "b/ listable again");
    assert_eq!(
        served_hosts(out.path()),
        ["a.example.com", "b.example.com", "c.example.com"]
    );

    // A listing that succeeds without the file does remove its object.
    std::fs::remove_file(sub.join("b.yaml")).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.input_errors, 0);
    assert!(summary.written.contains(&ROUTES_FILE), "{summary:?}");
    assert_eq!(served_hosts(out.path()), ["a.example.com", "c.example.com"]);
    assert_eq!(
        transition_times(out.path()),
        ["default/a", "default/c"].map(|key| (key.to_owned(), LONG_AGO.to_owned()))
    );
}

/// `routes.json`'s `versionInfo`.
fn version_info(routes: &[u8]) -> String {
    let value: Value = serde_json::from_slice(routes).unwrap();
    let version = value["versionInfo"].as_str();
    version
        .unwrap_or_else(|| panic!("no versionInfo in routes.json: {value}"))
        .to_owned()
}

/// Local mode on `input` holding `a.yaml` (object `default/a`), writing to
/// `out` and publishing over xDS: it, its publisher and the service (kept
/// alive by the caller).
fn serving_a_over_xds(
    input: &std::path::Path,
    out: &std::path::Path,
) -> (Local, xds::Publisher, aether_xds::Discovery) {
    std::fs::write(input.join("a.yaml"), named("a")).unwrap();
    let (publisher, service) = xds::channel("aether-edge", Arc::new(Metrics::new()));
    let local = Local::new(options(input, out)).unwrap().with_xds(publisher.clone());
    (local, publisher, service)
}

#[test]
fn routes_json_carries_the_xds_version_and_both_change_with_the_routes() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut local, publisher, _service) = serving_a_over_xds(input.path(), out.path());
    let mut versions = Vec::new();
    for name in ["b", "a"] {
        local.reconcile().unwrap();
        let version = version_info(&std::fs::read(out.path().join(ROUTES_FILE)).unwrap());
        // What every stream is sent (src/xds/tests.rs checks streams send this).
        assert_eq!(
            Some(&version),
            publisher.current().map(|current| current.version().to_owned()).as_ref()
        );
        assert_eq!(version.len(), 16, "{version}");
        versions.push(version);
        std::fs::write(input.path().join("a.yaml"), named(name)).unwrap();
    }
    assert_ne!(versions[0], versions[1], "other routes, another version");
    // The same routes again: the same version.
    local.reconcile().unwrap();
    assert_eq!(
        version_info(&std::fs::read(out.path().join(ROUTES_FILE)).unwrap()),
        versions[0]
    );
}

#[test]
fn xds_is_published_before_the_files_and_even_when_they_cannot_be_written() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut local, publisher, _service) = serving_a_over_xds(input.path(), out.path());
    let summary = local.reconcile().unwrap();
    assert!(summary.published_after.is_some(), "the pass says when it published");
    let first = publisher.current().unwrap().version().to_owned();

    // routes.json cannot be replaced (a directory holds its name): the pass
    // fails, yet gRPC clients get the new routes.
    let routes = out.path().join(ROUTES_FILE);
    std::fs::remove_file(&routes).unwrap();
    std::fs::create_dir_all(routes.join("in-the-way")).unwrap();
    std::fs::write(input.path().join("a.yaml"), named("b")).unwrap();
    let error = local.reconcile().unwrap_err();
    assert!(format!("{error:#}").contains(ROUTES_FILE), "{error:#}");
    let published = publisher.current().unwrap().version().to_owned();
    assert_ne!(published, first, "the change is served over gRPC");

    // Once the file can be written, it holds the version already served.
    std::fs::remove_dir_all(&routes).unwrap();
    local.reconcile().unwrap();
    assert_eq!(version_info(&std::fs::read(&routes).unwrap()), published);
}

#[test]
fn a_status_file_that_could_not_be_written_is_written_by_the_next_pass() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(input.path().join("a.yaml"), named("a")).unwrap();
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    local.reconcile().unwrap();

    // A new object (a new status) while status.json cannot be replaced.
    let status = out.path().join(STATUS_FILE);
    std::fs::remove_file(&status).unwrap();
    std::fs::create_dir_all(status.join("in-the-way")).unwrap();
    std::fs::write(input.path().join("b.yaml"), named("b")).unwrap();
    let error = local.reconcile().unwrap_err();
    assert!(format!("{error:#}").contains(STATUS_FILE), "{error:#}");

    // Nothing changes after; the next pass still writes what it could not.
    std::fs::remove_dir_all(&status).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(
        summary.status_changes, 0,
        "the statuses were derived by the failed pass"
    );
    assert!(summary.written.contains(&STATUS_FILE), "{:?}", summary.written);
    let written: Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    assert!(written.get("default/b").is_some(), "{written}");

    // And a pass that changes no status leaves it alone.
    assert_eq!(local.reconcile().unwrap().written, Vec::<&str>::new());
}

#[test]
fn a_pass_that_changes_only_statuses_leaves_routes_json_alone() {
    use std::os::unix::fs::MetadataExt;

    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(input.path().join("a.yaml"), named("a")).unwrap();
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    assert_eq!(
        local.reconcile().unwrap().published_after,
        None,
        "no xDS, nothing published"
    );
    let routes = out.path().join(ROUTES_FILE);
    let inode = std::fs::metadata(&routes).unwrap().ino();

    // An object that loses its only host to `default/a`, and one that
    // breaks the API's rules: new statuses, the same routes.
    let loser = named("b").replace("b.example.com", "a.example.com");
    std::fs::write(input.path().join("b.yaml"), loser).unwrap();
    std::fs::write(
        input.path().join("c.yaml"),
        named("c").replace("prefix: /", "prefix: //"),
    )
    .unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!((summary.written, summary.status_changes), (vec![STATUS_FILE], 2));
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    assert_eq!(status["default/b"]["conditions"][0]["reason"], "HostConflict");
    assert_eq!(status["default/c"]["conditions"][0]["reason"], "Invalid");
    // Not renamed over: an Envoy watching routes.json is not woken.
    assert_eq!(std::fs::metadata(&routes).unwrap().ino(), inode);

    // A change of routes renames it once in the pass.
    std::fs::remove_file(input.path().join("a.yaml")).unwrap();
    let summary = local.reconcile().unwrap();
    let renames = summary.written.iter().filter(|name| **name == ROUTES_FILE).count();
    assert_eq!(renames, 1, "{summary:?}");
    assert_ne!(std::fs::metadata(&routes).unwrap().ino(), inode);
    assert_eq!(served_hosts(out.path()), ["a.example.com"], "default/b serves it now");
}

/// A manifest's `metadata.generation` is its status's `observedGeneration`
/// (0 without one), and a new generation alone is a new status.
#[test]
fn observed_generation_is_the_manifests_generation() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let observed = |key: &str| -> Value {
        let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
        status[key]["conditions"][0]["observedGeneration"].clone()
    };
    let with_generation = |name: &str, generation: u32| {
        named(name).replace(
            &format!("name: {name},"),
            &format!("name: {name}, generation: {generation},"),
        )
    };
    std::fs::write(input.path().join("a.yaml"), with_generation("a", 7)).unwrap();
    std::fs::write(input.path().join("b.yaml"), named("b")).unwrap();
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    local.reconcile().unwrap();
    assert_eq!(observed("default/a"), 7);
    assert_eq!(observed("default/b"), Value::Null, "0, left out as proto3 JSON does");

    std::fs::write(input.path().join("a.yaml"), with_generation("a", 8)).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.status_changes, 1, "{summary:?}");
    assert_eq!(observed("default/a"), 8);
}
