//! Condition transitions as Kubernetes Events, against kube's client
//! mocking (a tower-test mock service behind `kube::Client::new`): the
//! exact Event requests a transition sends, none without one (a pass, a
//! re-list, a restart over stored statuses, a follower), a failing or
//! silent Events API that never holds the status patches, and the
//! generated ClusterRole granting what is sent.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aether_controller::cluster::{ClusterState, Role};
use aether_controller::events::EventRecorder;
use aether_controller::metrics::Metrics;
use aether_projection::ProjectionConfig;
use aether_testing::objects;
use http::{Method, Request, Response};
use kube::client::Body;
use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const NOW: &str = "2026-03-04T05:06:07Z";
const STATUS_PATH: &str = "/apis/config.aether.io/v1/namespaces/shop/virtualhosts";
const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/shop/events";

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// How the mock answers the Events API.
#[derive(Clone, Copy, PartialEq)]
enum Events {
    /// Stores them (answers with what was sent).
    Store,
    /// 500 to each.
    Fail,
    /// Never answers.
    Hang,
}

/// A request the controller sent.
#[derive(Debug, Clone)]
struct Sent {
    method: Method,
    path: String,
    body: Value,
}

/// The mock API server's objects, by name (namespace `shop`).
type Objects = Arc<Mutex<BTreeMap<String, Value>>>;

/// A client whose requests are answered like an API server that stores
/// VirtualHost statuses (from `objects`) and answers Events as `events`
/// says; every request is reported on the returned channel as it arrives.
fn mock(objects: Objects, events: Events) -> (kube::Client, mpsc::UnboundedReceiver<Sent>) {
    let (service, mut handle): (_, Handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let (report, requests) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        let mut version = 100;
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let body: Value = serde_json::from_slice(&body.collect_bytes().await.unwrap()).unwrap();
            let path = parts.uri.path().to_owned();
            let _ = report.send(Sent {
                method: parts.method.clone(),
                path: path.clone(),
                body: body.clone(),
            });
            version += 1;
            let (code, answer) = if let Some(rest) = path.strip_prefix(&format!("{STATUS_PATH}/")) {
                assert_eq!(parts.method, Method::PATCH, "{path}");
                let name = rest.strip_suffix("/status").unwrap();
                let mut objects = objects.lock().unwrap();
                let stored = objects.get_mut(name).unwrap();
                stored["status"] = body["status"].clone();
                stored["metadata"]["resourceVersion"] = json!(version.to_string());
                (200, stored.clone())
            } else if path.starts_with(EVENTS_PATH) {
                match events {
                    Events::Store => (if parts.method == Method::POST { 201 } else { 200 }, body),
                    Events::Fail => (
                        500,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "etcd is sad", "reason": "InternalError", "code": 500}),
                    ),
                    Events::Hang => {
                        held.push(respond);
                        continue;
                    }
                }
            } else {
                panic!("unexpected {} {path}", parts.method);
            };
            let response = Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&answer).unwrap()));
            respond.send_response(response.unwrap());
        }
    });
    (kube::Client::new(service, "default"), requests)
}

/// A stored VirtualHost `shop/NAME`.
fn object(name: &str, created: &str, generation: i64, host: &str) -> Value {
    let object = objects::object("shop", name)
        .created(created)
        .stored(generation)
        .metadata("uid", format!("uid-{name}").into());
    object.hosts([host]).route("/", name).document()
}

fn dynamic(object: &Value) -> DynamicObject {
    serde_json::from_value(object.clone()).unwrap()
}

/// The watch lists every object of `objects` as stored now.
fn listed(state: &mut ClusterState, objects: &Objects) {
    state.apply(&None, Event::Init);
    for object in objects.lock().unwrap().values() {
        state.apply(&None, Event::InitApply(dynamic(object)));
    }
    state.apply(&None, Event::InitDone);
}

/// The watch sees `object` changed (and the mock stores it).
fn changed(state: &mut ClusterState, objects: &Objects, object: Value) {
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    let mut stored = object.clone();
    let before = objects.lock().unwrap()[&name].clone();
    stored["status"] = before["status"].clone();
    // A newer version than the one stored, as an API server numbers it.
    let version: u64 = before["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    stored["metadata"]["resourceVersion"] = json!((version + 1).to_string());
    state.apply(&None, Event::Apply(dynamic(&stored)));
    objects.lock().unwrap().insert(name, stored);
}

async fn next(requests: &mut mpsc::UnboundedReceiver<Sent>, count: usize) -> Vec<Sent> {
    let mut received = Vec::new();
    for _ in 0..count {
        let request = tokio::time::timeout(Duration::from_secs(10), requests.recv()).await;
        received.push(request.expect("a request within 10 s").expect("the mock is running"));
    }
    received
}

/// The requests of one pass and the events that follow it: `patches`
/// status patches (sent during the pass) and `events` Event requests.
async fn pass(
    state: &mut ClusterState,
    client: &kube::Client,
    metrics: &Metrics,
    requests: &mut mpsc::UnboundedReceiver<Sent>,
    patches: usize,
    events: usize,
) -> (Vec<Sent>, Vec<Sent>) {
    let summary = state
        .reconcile(client, metrics, NOW.parse().unwrap(), Role::Leader)
        .await
        .unwrap();
    assert_eq!((summary.status_changes, summary.failed_patches), (patches, 0));
    let (events_sent, patches_sent): (Vec<Sent>, Vec<Sent>) = next(requests, patches + events)
        .await
        .into_iter()
        .partition(|sent| sent.path.starts_with(EVENTS_PATH));
    assert!(patches_sent.iter().all(|sent| sent.path.ends_with("/status")));
    (patches_sent, events_sent)
}

/// What an Event's `regarding` says of `shop/NAME` (its uid: `kubectl
/// describe` finds the object's events by it).
fn regarding(name: &str) -> Value {
    json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHost", "namespace": "shop",
           "name": name, "uid": format!("uid-{name}")})
}

/// An Event's (type, reason, action, note, regarding).
fn event(sent: &Sent) -> (String, String, String, String, Value) {
    let regarding = sent.body["regarding"].clone();
    let text = |key: &str| sent.body[key].as_str().unwrap_or_default().to_owned();
    (text("type"), text("reason"), text("action"), text("note"), regarding)
}

fn state_with_events(
    client: &kube::Client,
    metrics: &Metrics,
) -> (ClusterState, tokio::task::JoinHandle<()>, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let (recorder, task) = EventRecorder::spawn(client.clone(), Some("edge-0".to_owned()), metrics);
    let state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default()).with_events(recorder);
    (state, task, out)
}

#[tokio::test]
async fn a_transition_records_its_event_and_a_pass_or_relist_without_one_records_none() {
    let objects: Objects = Arc::default();
    for (name, created, generation) in [
        ("main", "2026-01-01T00:00:00Z", 1),
        ("canary", "2026-02-01T00:00:00Z", 7),
    ] {
        objects
            .lock()
            .unwrap()
            .insert(name.to_owned(), object(name, created, generation, "shop.example.com"));
    }
    // And one that breaks the API's rules (not a hostname).
    objects.lock().unwrap().insert(
        "broken".to_owned(),
        object("broken", "2026-01-15T00:00:00Z", 1, "not a host!"),
    );
    let (client, mut requests) = mock(objects.clone(), Events::Store);
    let metrics = Metrics::new();
    let (mut state, events_task, _out) = state_with_events(&client, &metrics);
    listed(&mut state, &objects);

    // A follower patches nothing and records nothing (the leader's first
    // pass below is the next to send anything).
    let summary = state
        .reconcile(&client, &metrics, NOW.parse().unwrap(), Role::Follower)
        .await
        .unwrap();
    assert_eq!(summary.left_to_leader, 3);

    // The first statuses: the broken object is invalid and the canary loses
    // its host (Warnings), main is accepted.
    let (patches, mut events) = pass(&mut state, &client, &metrics, &mut requests, 3, 3).await;
    assert_eq!(patches.len(), 3);
    let invalid = event(&events.remove(0));
    assert_eq!(
        (invalid.0.as_str(), invalid.1.as_str(), invalid.2.as_str(), &invalid.4),
        ("Warning", "Invalid", "Accepted", &regarding("broken"))
    );
    assert!(
        invalid.3.starts_with("Accepted=False: left out: spec.hosts[0]: "),
        "{}",
        invalid.3
    );
    assert_eq!(
        events.iter().map(event).collect::<Vec<_>>(),
        [
            (
                "Warning".to_owned(),
                "HostConflict".to_owned(),
                "Accepted".to_owned(),
                "Accepted=False: left out: host shop.example.com is served by the older VirtualHost shop/main"
                    .to_owned(),
                regarding("canary")
            ),
            (
                "Normal".to_owned(),
                "Accepted".to_owned(),
                "Accepted".to_owned(),
                "Accepted=True: serving shop.example.com".to_owned(),
                regarding("main")
            ),
        ]
    );
    for sent in &events {
        assert_eq!((sent.method.clone(), sent.path.as_str()), (Method::POST, EVENTS_PATH));
        assert_eq!(sent.body["apiVersion"], "events.k8s.io/v1");
        assert_eq!(sent.body["reportingController"], "aether-controller");
        assert_eq!(sent.body["reportingInstance"], "edge-0");
        assert_eq!(sent.body["metadata"]["namespace"], "shop");
        assert!(sent.body["eventTime"].is_string(), "{}", sent.body);
    }
    let first_conflict = events[0].body["metadata"]["name"].as_str().unwrap().to_owned();

    // A re-list of what is stored (as after a watch restart): nothing to
    // patch, nothing to record.
    listed(&mut state, &objects);
    pass(&mut state, &client, &metrics, &mut requests, 0, 0).await;

    // main moves away: the canary gets its host (Normal); main's status
    // changes its message and generation only (no event). Events go out
    // in order, so this being the next one says the re-list sent none.
    changed(
        &mut state,
        &objects,
        object("main", "2026-01-01T00:00:00Z", 2, "moved.example.com"),
    );
    let (_, events) = pass(&mut state, &client, &metrics, &mut requests, 2, 1).await;
    assert_eq!(
        event(&events[0]),
        (
            "Normal".to_owned(),
            "Accepted".to_owned(),
            "Accepted".to_owned(),
            "Accepted=True: serving shop.example.com".to_owned(),
            regarding("canary")
        )
    );

    // main comes back: the canary's conflict again, within minutes: the
    // recorder patches the first Event's series rather than adding one.
    changed(
        &mut state,
        &objects,
        object("main", "2026-01-01T00:00:00Z", 3, "shop.example.com"),
    );
    let (_, events) = pass(&mut state, &client, &metrics, &mut requests, 2, 1).await;
    assert_eq!(events[0].method, Method::PATCH);
    assert_eq!(events[0].path, format!("{EVENTS_PATH}/{first_conflict}"));
    assert_eq!(events[0].body["series"]["count"], 2);
    assert_eq!(events[0].body["reason"], "HostConflict");

    // Every queued event is sent once the recorder is dropped: none
    // beyond those above (main's message-only changes recorded nothing).
    drop(state);
    tokio::time::timeout(Duration::from_secs(10), events_task)
        .await
        .expect("the events task ends")
        .unwrap();
    assert!(requests.try_recv().is_err(), "an event no transition asked for");
    assert_eq!((metrics.events.get(), metrics.event_failures.get()), (5, 0));
}

/// After a restart the stored statuses are what transitions are compared
/// with: a condition already stored with its status and reason records
/// nothing, even when its patch goes out (here, a newer generation).
#[tokio::test]
async fn a_restart_records_nothing_for_a_condition_already_stored() {
    let objects: Objects = Arc::default();
    let condition = |status: &str, reason: &str, generation: i64, message: &str| {
        json!({"conditions": [{"type": "Accepted", "status": status, "reason": reason, "message": message,
                               "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"}],
               "routeCount": 0})
    };
    let mut main = object("main", "2026-01-01T00:00:00Z", 1, "shop.example.com");
    main["status"] = condition("True", "Accepted", 1, "serving shop.example.com");
    let mut canary = object("canary", "2026-02-01T00:00:00Z", 7, "shop.example.com");
    // Stored by the previous run at generation 6, as a conflict.
    canary["status"] = condition("False", "HostConflict", 6, "left out: host shop.example.com ...");
    objects.lock().unwrap().insert("main".into(), main);
    objects.lock().unwrap().insert("canary".into(), canary);
    let (client, mut requests) = mock(objects.clone(), Events::Store);
    let metrics = Metrics::new();
    let (mut state, events_task, _out) = state_with_events(&client, &metrics);
    listed(&mut state, &objects);

    // main: its stored ResolvedRefs is missing (a patch, and no event: a
    // first ResolvedRefs=True is no news); the canary: a new generation.
    let (patches, events) = pass(&mut state, &client, &metrics, &mut requests, 2, 0).await;
    assert_eq!(events.len(), 0);
    assert_eq!(
        patches.iter().map(|sent| sent.path.as_str()).collect::<Vec<_>>(),
        [
            format!("{STATUS_PATH}/canary/status"),
            format!("{STATUS_PATH}/main/status")
        ]
    );
    drop(state);
    tokio::time::timeout(Duration::from_secs(10), events_task)
        .await
        .unwrap()
        .unwrap();
    assert!(requests.try_recv().is_err(), "an event for a condition already stored");
    assert_eq!(metrics.events.get(), 0);
}

/// An Events API that fails, or never answers, holds no status patch: the
/// pass ends with every status stored, and the failures are counted.
#[tokio::test]
async fn a_failing_or_silent_events_api_never_holds_the_statuses() {
    for answer in [Events::Fail, Events::Hang] {
        let objects: Objects = Arc::default();
        for (name, created) in [("main", "2026-01-01T00:00:00Z"), ("canary", "2026-02-01T00:00:00Z")] {
            objects
                .lock()
                .unwrap()
                .insert(name.to_owned(), object(name, created, 1, "shop.example.com"));
        }
        let (client, mut requests) = mock(objects.clone(), answer);
        let metrics = Metrics::new();
        let (mut state, events_task, _out) = state_with_events(&client, &metrics);
        listed(&mut state, &objects);
        let summary = tokio::time::timeout(
            Duration::from_secs(10),
            state.reconcile(&client, &metrics, NOW.parse().unwrap(), Role::Leader),
        )
        .await
        .expect("the pass ends")
        .unwrap();
        assert_eq!((summary.status_changes, summary.failed_patches), (2, 0));
        for name in ["main", "canary"] {
            let reason = objects.lock().unwrap()[name]["status"]["conditions"][0]["reason"].clone();
            assert!(reason.is_string(), "{name}'s status is stored");
        }
        // Both events are tried in turn (a silent API holds the first).
        let tried = if answer == Events::Fail { 2 } else { 1 };
        let sent = next(&mut requests, 2 + tried).await;
        assert_eq!(sent.iter().filter(|sent| sent.path == EVENTS_PATH).count(), tried);
        drop(state);
        if answer == Events::Hang {
            // Still waiting for its answer: stopped as the binary would.
            events_task.abort();
            assert_eq!(metrics.events.get(), 0);
        } else {
            tokio::time::timeout(Duration::from_secs(10), events_task)
                .await
                .unwrap()
                .unwrap();
            assert_eq!((metrics.events.get(), metrics.event_failures.get()), (0, 2));
            assert!(
                metrics.encode().contains("aether_controller_event_failures_total 2"),
                "{}",
                metrics.encode()
            );
        }
    }
}

/// Past the queue's bound, events are dropped at once and counted: the
/// caller (a pass) never waits for the Events API.
#[tokio::test]
async fn a_full_queue_drops_and_counts_without_waiting() {
    let (client, mut requests) = mock(Objects::default(), Events::Hang);
    let metrics = Metrics::new();
    let (recorder, task) = EventRecorder::spawn(client, None, &metrics);
    let regarding = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("config.aether.io/v1".into()),
        kind: Some("VirtualHost".into()),
        namespace: Some("shop".into()),
        name: Some("main".into()),
        uid: Some("uid-main".into()),
        ..Default::default()
    };
    let transition = aether_controller::events::Transition {
        warning: true,
        reason: "HostConflict".into(),
        action: "Accepted",
        note: "Accepted=False: ...".into(),
    };
    // The first is sent (and never answered): the queue fills behind it.
    assert_eq!(recorder.record(&regarding, vec![transition.clone()]), 0);
    next(&mut requests, 1).await;
    let started = std::time::Instant::now();
    let dropped = recorder.record(&regarding, vec![transition; aether_controller::events::QUEUE + 10]);
    assert!(started.elapsed() < Duration::from_secs(5), "recording waited");
    assert_eq!(dropped, 10);
    assert_eq!(metrics.event_failures.get(), 10);
    task.abort();
}

/// The generated ClusterRole grants what the recorder sends: `create`
/// (POST) and `patch` (a series) of `events.k8s.io` Events, nothing more.
#[test]
fn the_generated_cluster_role_grants_creating_and_patching_events() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../generated/deploy/controller/cluster-role.yaml"
    );
    let role: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rules: Vec<&Value> = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|rule| rule["resources"].as_array().unwrap().contains(&json!("events")))
        .collect();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(rules[0]["apiGroups"], json!(["events.k8s.io"]));
    assert_eq!(rules[0]["verbs"], json!(["create", "patch"]));
    assert!(rules[0].get("resourceNames").is_none(), "events have generated names");
}
