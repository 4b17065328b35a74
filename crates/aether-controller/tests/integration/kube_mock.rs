//! The kube side against kube's client mocking (a tower-test mock service
//! behind `kube::Client::new`): no API server runs here, so these tests see
//! the exact HTTP requests the controller sends and answer them by hand.

use std::time::Duration;

use aether_controller::Summary;
use aether_controller::cluster::{self, ClusterState, Role};
use aether_controller::debounce::Debouncer;
use aether_controller::metrics::Metrics;
use aether_projection::ProjectionConfig;
use http::{Method, Request, Response};
use kube::client::Body;
use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

const NOW: &str = "2026-03-04T05:06:07Z";

fn virtual_host(
    namespace: &str,
    name: &str,
    created: &str,
    generation: i64,
    hosts: &[&str],
    status: Value,
) -> DynamicObject {
    let mut object = json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": namespace, "name": name, "creationTimestamp": created,
                     "generation": generation, "resourceVersion": "1"},
        "spec": {"hosts": hosts, "routes": [{"match": {"prefix": "/"}, "backend": {"service": name}}]}
    });
    if !status.is_null() {
        object["status"] = status;
    }
    serde_json::from_value(object).unwrap()
}

/// `object` at `resource_version` (the API server's order of writes).
fn at_version(mut object: DynamicObject, resource_version: &str) -> DynamicObject {
    object.metadata.resource_version = Some(resource_version.to_owned());
    object
}

fn main_object(status: Value) -> DynamicObject {
    virtual_host("shop", "main", "2026-01-01T00:00:00Z", 1, &["shop.example.com"], status)
}

fn canary_object(status: Value) -> DynamicObject {
    virtual_host(
        "shop",
        "canary",
        "2026-02-01T00:00:00Z",
        7,
        &["shop.example.com"],
        status,
    )
}

/// A PATCH the controller sent: path, content type, body.
#[derive(Debug, Clone, PartialEq)]
struct Sent {
    method: Method,
    path: String,
    content_type: String,
    body: Value,
}

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// Answers every request like an API server that stores the status (or with
/// `fail` for the first `failures` requests) and returns what was sent once
/// the client is gone.
fn serve(handle: Handle, failures: usize) -> JoinHandle<Vec<Sent>> {
    serve_reporting(handle, failures, None)
}

/// [`serve`], also reporting each request on `report` as it arrives.
fn serve_reporting(
    mut handle: Handle,
    failures: usize,
    report: Option<mpsc::UnboundedSender<Sent>>,
) -> JoinHandle<Vec<Sent>> {
    tokio::spawn(async move {
        let mut sent = Vec::new();
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let body: Value = serde_json::from_slice(&body.collect_bytes().await.unwrap()).unwrap();
            sent.push(Sent {
                method: parts.method.clone(),
                path: parts.uri.path().to_owned(),
                content_type: parts.headers["content-type"].to_str().unwrap().to_owned(),
                body: body.clone(),
            });
            if let Some(report) = &report {
                let _ = report.send(sent.last().unwrap().clone());
            }
            if sent.len() <= failures {
                let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                    "message": "etcd is sad", "reason": "InternalError", "code": 500});
                let response = Response::builder()
                    .status(500)
                    .body(Body::from(serde_json::to_vec(&status).unwrap()));
                respond.send_response(response.unwrap());
                continue;
            }
            let name = parts.uri.path().split('/').nth_back(1).unwrap().to_owned();
            let base = if name == "main" {
                main_object(Value::Null)
            } else {
                canary_object(Value::Null)
            };
            // Each write is a newer version than the listed objects'.
            let mut stored = serde_json::to_value(at_version(base, "2")).unwrap();
            stored["status"] = body["status"].clone();
            let response = Response::builder().body(Body::from(serde_json::to_vec(&stored).unwrap()));
            respond.send_response(response.unwrap());
        }
        sent
    })
}

/// One reconcile pass against a mock API server that fails the first
/// `failures` requests: the pass's summary and every request it sent.
async fn reconcile_with_mock(
    state: &mut ClusterState,
    metrics: &Metrics,
    now: &str,
    failures: usize,
) -> (Summary, Vec<Sent>) {
    reconcile_as(state, metrics, now, failures, Role::Leader).await
}

/// [`reconcile_with_mock`] in the given role.
async fn reconcile_as(
    state: &mut ClusterState,
    metrics: &Metrics,
    now: &str,
    failures: usize,
    role: Role,
) -> (Summary, Vec<Sent>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let server = serve(handle, failures);
    let summary = state
        .reconcile(&client, metrics, now.parse().unwrap(), role)
        .await
        .unwrap();
    // The server's loop ends when the last client handle is gone.
    drop(client);
    let sent = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap();
    (summary, sent)
}

fn listed(state: &mut ClusterState, objects: Vec<DynamicObject>) {
    state.apply(&None, Event::Init);
    for object in objects {
        state.apply(&None, Event::InitApply(object));
    }
    state.apply(&None, Event::InitDone);
}

/// `Programmed`'s message when Envoy reads files.
const NOT_OBSERVED: &str = "Envoy reads its configuration from files: what it applied is not observed";

fn expected_patches() -> Vec<Sent> {
    let path = |name: &str| format!("/apis/config.aether.io/v1/namespaces/shop/virtualhosts/{name}/status");
    vec![
        Sent {
            method: Method::PATCH,
            path: path("canary"),
            content_type: "application/merge-patch+json".into(),
            body: json!({"status": {"routeCount": 0, "conditions": [{
                "type": "Accepted", "status": "False", "observedGeneration": 7, "lastTransitionTime": NOW,
                "reason": "HostConflict",
                "message": "left out: host shop.example.com is served by the older VirtualHost shop/main"
            }, {
                "type": "Programmed", "status": "Unknown", "observedGeneration": 7, "lastTransitionTime": NOW,
                "reason": "NotObserved", "message": NOT_OBSERVED
            }]}}),
        },
        Sent {
            method: Method::PATCH,
            path: path("main"),
            content_type: "application/merge-patch+json".into(),
            body: json!({"status": {"routeCount": 1, "conditions": [{
                "type": "Accepted", "status": "True", "observedGeneration": 1, "lastTransitionTime": NOW,
                "reason": "Accepted", "message": "serving shop.example.com"
            }, {
                // Served without `tls`; the canary, not served, has none.
                "type": "ResolvedRefs", "status": "True", "observedGeneration": 1, "lastTransitionTime": NOW,
                "reason": "ResolvedRefs", "message": "no TLS secret referenced: served over plain HTTP only"
            }, {
                // Envoy reads the files this controller writes.
                "type": "Programmed", "status": "Unknown", "observedGeneration": 1, "lastTransitionTime": NOW,
                "reason": "NotObserved", "message": NOT_OBSERVED
            }]}}),
        },
    ]
}

#[tokio::test]
async fn status_patches_are_exact_and_an_unchanged_status_sends_none() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);
    assert!(state.ready());

    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(summary.status_changes, 2);
    // dependencies, tls-secrets, routes, listeners.
    assert_eq!(summary.written.len(), 4);
    assert!(out.path().join("routes.json").is_file());
    assert_eq!(sent, expected_patches());

    // A pass before the watch echoes the writes: the patch responses are known, so nothing is sent.
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, "2030-01-01T00:00:00Z", 0).await;
    assert_eq!((summary.status_changes, summary.written.len()), (0, 0));
    assert_eq!(sent, []);

    // The watch echoes the writes (new resourceVersion, same generation): still nothing to send.
    let echoed = expected_patches();
    state.apply(
        &None,
        Event::Apply(at_version(canary_object(echoed[0].body["status"].clone()), "2")),
    );
    state.apply(
        &None,
        Event::Apply(at_version(main_object(echoed[1].body["status"].clone()), "2")),
    );
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, "2030-01-01T00:00:00Z", 0).await;
    assert_eq!((summary.status_changes, summary.written.len()), (0, 0));
    assert_eq!(sent, []);
    assert_eq!(metrics.status_patches.get(), 2);
    assert_eq!(metrics.reconciles.get(), 3);
}

#[tokio::test]
async fn a_status_overwritten_by_someone_else_is_written_back_and_only_it() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);
    let (_, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(sent, expected_patches());
    let echoed = expected_patches();
    state.apply(
        &None,
        Event::Apply(at_version(canary_object(echoed[0].body["status"].clone()), "2")),
    );
    state.apply(
        &None,
        Event::Apply(at_version(main_object(echoed[1].body["status"].clone()), "2")),
    );
    let (_, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(sent, []);

    // Another writer replaces main's status: the pass derives it again
    // (its object changed) and writes it back; the canary's is left be.
    state.apply(
        &None,
        Event::Apply(at_version(main_object(json!({"routeCount": 5})), "3")),
    );
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(summary.status_changes, 1);
    assert_eq!(sent, expected_patches()[1..]);
}

#[tokio::test]
async fn a_watch_event_older_than_a_write_is_not_taken_for_the_stored_status() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);
    let (_, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(sent, expected_patches());

    // A watch lagging behind the writes (thousands of them at start)
    // delivers the objects as they were before: not newer than what the
    // writes returned, so nothing is written again.
    state.apply(&None, Event::Apply(main_object(Value::Null)));
    state.apply(&None, Event::Apply(canary_object(Value::Null)));
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!((summary.status_changes, sent), (0, vec![]));

    // A newer version is taken: another writer's status is written back.
    state.apply(
        &None,
        Event::Apply(at_version(main_object(json!({"routeCount": 5})), "3")),
    );
    let (_, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!(sent, expected_patches()[1..]);
}

#[tokio::test]
async fn a_stored_status_that_is_already_right_sends_nothing_even_at_startup() {
    let out = tempfile::tempdir().unwrap();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    let stored = expected_patches();
    listed(
        &mut state,
        vec![
            main_object(stored[1].body["status"].clone()),
            canary_object(stored[0].body["status"].clone()),
        ],
    );
    let (summary, sent) = reconcile_with_mock(&mut state, &Metrics::new(), "2031-01-01T00:00:00Z", 0).await;
    assert_eq!(summary.status_changes, 0);
    assert_eq!(sent, []);
}

#[tokio::test]
async fn a_failed_patch_is_counted_and_sent_again_on_the_next_pass() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);

    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 1).await;
    assert_eq!((summary.status_changes, summary.failed_patches), (1, 1));
    assert_eq!(sent, expected_patches());
    assert_eq!(metrics.reconcile_errors.get(), 1);

    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!((summary.status_changes, summary.failed_patches), (1, 0));
    assert_eq!(sent, expected_patches()[..1]);
}

#[tokio::test]
async fn a_relist_drops_deleted_objects_and_waits_for_every_namespace() {
    let out = tempfile::tempdir().unwrap();
    let scopes = vec![Some("shop".to_owned()), Some("other".to_owned())];
    let mut state = ClusterState::new(scopes.clone(), out.path().to_owned(), ProjectionConfig::default());
    state.apply(&scopes[0], Event::Init);
    state.apply(&scopes[0], Event::InitApply(main_object(Value::Null)));
    state.apply(&scopes[0], Event::InitApply(canary_object(Value::Null)));
    state.apply(&scopes[0], Event::InitDone);
    assert!(!state.ready(), "namespace other is not listed yet");
    state.apply(&scopes[1], Event::Init);
    state.apply(&scopes[1], Event::InitDone);
    assert!(state.ready());
    // A re-list of shop without the canary (deleted while the watch was down).
    state.apply(&scopes[0], Event::Init);
    state.apply(&scopes[0], Event::InitApply(main_object(Value::Null)));
    state.apply(&scopes[0], Event::InitDone);
    let keys: Vec<String> = state.keys().map(ToString::to_string).collect();
    assert_eq!(keys, ["shop/main"]);
}

#[tokio::test]
async fn a_follower_writes_its_files_and_leaves_every_status_to_the_leader() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);

    let (summary, sent) = reconcile_as(&mut state, &metrics, NOW, 0, Role::Follower).await;
    assert_eq!(sent, []);
    assert_eq!(
        (summary.written.len(), summary.status_changes, summary.left_to_leader),
        (4, 0, 2)
    );
    assert!(out.path().join("routes.json").is_file());
    assert_eq!(metrics.status_patches_pending.get(), 2);

    // The same replica as leader: the files are current, the statuses go out.
    let (summary, sent) = reconcile_as(&mut state, &metrics, NOW, 0, Role::Leader).await;
    assert_eq!(sent, expected_patches());
    assert_eq!(
        (summary.written.len(), summary.status_changes, summary.left_to_leader),
        (0, 2, 0)
    );
    assert_eq!(metrics.status_patches_pending.get(), 0);
}

/// Events for [`cluster::run`], sent by the test.
type Events = mpsc::UnboundedSender<(
    cluster::Scope,
    Result<Event<DynamicObject>, kube::runtime::watcher::Error>,
)>;

/// [`cluster::run`] against the mock API server (failing the first
/// `failures` requests), with a 10 ms debounce: the event sender, the leadership sender, the live request reports, the
/// shutdown trigger, and the loop's task (which yields the metrics).
struct Running {
    events: Events,
    leading: watch::Sender<bool>,
    requests: mpsc::UnboundedReceiver<Sent>,
    shutdown: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<(anyhow::Result<()>, Metrics)>,
    out: tempfile::TempDir,
}

fn start(leading: bool, failures: usize) -> Running {
    let out = tempfile::tempdir().unwrap();
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let (report, requests) = mpsc::unbounded_channel();
    serve_reporting(handle, failures, Some(report));
    let (events, mut event_stream) = mpsc::unbounded_channel();
    let (leading, leading_rx) = watch::channel(leading);
    let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
    let dir = out.path().to_owned();
    let task = tokio::spawn(async move {
        let metrics = Metrics::new();
        let mut state = ClusterState::new(vec![None], dir, ProjectionConfig::default());
        let events = futures_util::stream::poll_fn(move |cx| event_stream.poll_recv(cx));
        let debouncer = Debouncer::new(Duration::from_millis(10), Duration::from_millis(50));
        let shutdown = async {
            let _ = shutdown_rx.await;
        };
        let feeds = cluster::Feeds {
            virtual_hosts: events,
            secrets: futures_util::stream::pending(),
            leading: leading_rx,
        };
        let result = cluster::run(&client, &mut state, feeds, &metrics, debouncer, shutdown).await;
        (result, metrics)
    });
    Running {
        events,
        leading,
        requests,
        shutdown,
        task,
        out,
    }
}

/// Waits (up to 10 s) until `routes.json` exists and holds `needle`.
async fn routes_contain(out: &std::path::Path, needle: &str) {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if std::fs::read_to_string(out.join("routes.json")).is_ok_and(|text| text.contains(needle)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("routes.json never held {needle}"));
}

async fn next_requests(requests: &mut mpsc::UnboundedReceiver<Sent>, count: usize) -> Vec<Sent> {
    let mut received = Vec::new();
    for _ in 0..count {
        let request = tokio::time::timeout(Duration::from_secs(10), requests.recv()).await;
        received.push(
            request
                .expect("a request within 10 s")
                .expect("the mock server is running"),
        );
    }
    received
}

#[tokio::test]
async fn the_loop_patches_statuses_only_while_it_holds_the_lease() {
    let mut running = start(false, 0);
    for event in [
        Event::Init,
        Event::InitApply(main_object(Value::Null)),
        Event::InitApply(canary_object(Value::Null)),
        Event::InitDone,
    ] {
        running.events.send((None, Ok(event))).unwrap();
    }
    // A follower's pass: the files appear, no request is sent.
    routes_contain(running.out.path(), "shop.example.com").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(running.requests.try_recv().is_err(), "a follower sent a request");

    // Winning the Lease runs a pass at once, with no new event: the statuses go out.
    running.leading.send(true).unwrap();
    let sent = next_requests(&mut running.requests, 2).await;
    assert_eq!(
        sent.iter().map(|sent| &sent.path).collect::<Vec<_>>(),
        expected_patches().iter().map(|sent| &sent.path).collect::<Vec<_>>()
    );
    assert_eq!(sent[0].body["status"]["conditions"][0]["reason"], "HostConflict");
    assert_eq!(sent[1].body["status"]["conditions"][0]["reason"], "Accepted");

    // Losing it: the main object moves to another host; the files follow, the status does not.
    running.leading.send(false).unwrap();
    let moved = virtual_host(
        "shop",
        "main",
        "2026-01-01T00:00:00Z",
        2,
        &["moved.example.com"],
        Value::Null,
    );
    // An edit: newer than the status writes.
    let moved = at_version(moved, "3");
    running.events.send((None, Ok(Event::Apply(moved)))).unwrap();
    routes_contain(running.out.path(), "moved.example.com").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        running.requests.try_recv().is_err(),
        "a replica that lost the Lease sent a request"
    );

    // Winning it back: both statuses changed (the canary now has its host, main a new generation).
    running.leading.send(true).unwrap();
    let sent = next_requests(&mut running.requests, 2).await;
    assert_eq!(sent[0].body["status"]["conditions"][0]["reason"], "Accepted");
    assert_eq!(
        sent[0].body["status"]["conditions"][0]["message"],
        "serving shop.example.com"
    );
    assert_eq!(sent[1].body["status"]["conditions"][0]["observedGeneration"], 2);

    running.shutdown.send(()).unwrap();
    let (result, metrics) = tokio::time::timeout(Duration::from_secs(10), running.task)
        .await
        .unwrap()
        .unwrap();
    result.unwrap();
    assert_eq!(metrics.ready.get(), 1, "a pass wrote the files");
    assert_eq!(metrics.leader.get(), 1);
    assert_eq!(metrics.status_patches.get(), 4);
}

#[tokio::test]
async fn the_loop_fails_when_the_leader_election_stops() {
    let running = start(true, 0);
    drop(running.leading);
    let (result, _) = tokio::time::timeout(Duration::from_secs(10), running.task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.unwrap_err().to_string(), "the leader election stopped");
}

#[tokio::test(start_paused = true)]
async fn failing_status_patches_are_retried_after_growing_waits() {
    // Every request fails: each pass sends both patches again.
    let mut running = start(true, usize::MAX);
    for event in [
        Event::Init,
        Event::InitApply(main_object(Value::Null)),
        Event::InitApply(canary_object(Value::Null)),
        Event::InitDone,
    ] {
        running.events.send((None, Ok(event))).unwrap();
    }
    let mut passes = Vec::new();
    for _ in 0..6 {
        next_requests(&mut running.requests, 2).await;
        passes.push(tokio::time::Instant::now());
    }
    let waits: Vec<Duration> = passes.windows(2).map(|pair| pair[1] - pair[0]).collect();
    // Half a second, doubling (each plus the debouncer's 10 ms quiet
    // period): the passes back off rather than retry at a fixed rate.
    for (wait, backoff) in waits.iter().zip([500, 1000, 2000, 4000, 8000]) {
        let backoff = Duration::from_millis(backoff);
        assert!(
            (backoff..backoff + Duration::from_millis(50)).contains(wait),
            "waits between passes: {waits:?}"
        );
    }
}
