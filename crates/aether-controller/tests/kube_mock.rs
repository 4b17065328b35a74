//! The kube side against kube's client mocking (a tower-test mock service
//! behind `kube::Client::new`): no API server runs here, so these tests see
//! the exact HTTP requests the controller sends and answer them by hand.

use std::time::Duration;

use aether_api::config::v1::VirtualHost;
use aether_controller::cluster::{ClusterState, Summary};
use aether_controller::metrics::Metrics;
use aether_projection::ProjectionConfig;
use http::{Method, Request, Response};
use kube::client::Body;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

const NOW: &str = "2026-03-04T05:06:07Z";

fn virtual_host(
    namespace: &str,
    name: &str,
    created: &str,
    generation: i64,
    hosts: &[&str],
    status: Value,
) -> VirtualHost {
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

fn main_object(status: Value) -> VirtualHost {
    virtual_host("shop", "main", "2026-01-01T00:00:00Z", 1, &["shop.example.com"], status)
}

fn canary_object(status: Value) -> VirtualHost {
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
fn serve(mut handle: Handle, failures: usize) -> JoinHandle<Vec<Sent>> {
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
            let mut stored = serde_json::to_value(base).unwrap();
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
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let server = serve(handle, failures);
    let summary = state.reconcile(&client, metrics, now.parse().unwrap()).await.unwrap();
    // The server's loop ends when the last client handle is gone.
    drop(client);
    let sent = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap();
    (summary, sent)
}

fn listed(state: &mut ClusterState, objects: Vec<VirtualHost>) {
    state.apply(&None, Event::Init);
    for object in objects {
        state.apply(&None, Event::InitApply(object));
    }
    state.apply(&None, Event::InitDone);
}

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
            }]}}),
        },
        Sent {
            method: Method::PATCH,
            path: path("main"),
            content_type: "application/merge-patch+json".into(),
            body: json!({"status": {"routeCount": 1, "conditions": [{
                "type": "Accepted", "status": "True", "observedGeneration": 1, "lastTransitionTime": NOW,
                "reason": "Accepted", "message": "serving shop.example.com"
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
    assert_eq!(summary.patched, 2);
    assert_eq!(summary.written.len(), 3);
    assert!(out.path().join("routes.json").is_file());
    assert_eq!(sent, expected_patches());

    // A pass before the watch echoes the writes: the patch responses are known, so nothing is sent.
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, "2030-01-01T00:00:00Z", 0).await;
    assert_eq!((summary.patched, summary.written.len()), (0, 0));
    assert_eq!(sent, []);

    // The watch echoes the writes (new resourceVersion, same generation): still nothing to send.
    let echoed = expected_patches();
    state.apply(&None, Event::Apply(canary_object(echoed[0].body["status"].clone())));
    state.apply(&None, Event::Apply(main_object(echoed[1].body["status"].clone())));
    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, "2030-01-01T00:00:00Z", 0).await;
    assert_eq!((summary.patched, summary.written.len()), (0, 0));
    assert_eq!(sent, []);
    assert_eq!(metrics.status_patches.get(), 2);
    assert_eq!(metrics.reconciles.get(), 3);
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
    assert_eq!(summary.patched, 0);
    assert_eq!(sent, []);
}

#[tokio::test]
async fn a_failed_patch_is_counted_and_sent_again_on_the_next_pass() {
    let out = tempfile::tempdir().unwrap();
    let metrics = Metrics::new();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    listed(&mut state, vec![main_object(Value::Null), canary_object(Value::Null)]);

    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 1).await;
    assert_eq!((summary.patched, summary.failed_patches), (1, 1));
    assert_eq!(sent, expected_patches());
    assert_eq!(metrics.reconcile_errors.get(), 1);

    let (summary, sent) = reconcile_with_mock(&mut state, &metrics, NOW, 0).await;
    assert_eq!((summary.patched, summary.failed_patches), (1, 0));
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
