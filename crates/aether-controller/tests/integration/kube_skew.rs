//! Version skew in cluster mode: the controller's own watch (kube-runtime's
//! watcher, [`cluster::watch`]) lists VirtualHosts from a mock API server
//! (kube's tower-test mock behind `kube::Client::new`) that stores objects
//! written against a newer proto (`crates/aether-api/tests/skew/`) among
//! ones of today's. One newer object must not fail the list: the others
//! are served, an object asking for what this build cannot do is left out
//! with `Accepted=False`, reason `Unsupported`, naming the field and value,
//! and a status patch leaves alone what the controller does not own.

use std::collections::BTreeMap;
use std::time::Duration;

use aether_controller::cluster::{self, ClusterState};
use aether_controller::debounce::Debouncer;
use aether_controller::metrics::Metrics;
use aether_controller::outputs::ROUTES_FILE;
use aether_projection::ProjectionConfig;
use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

const SKEW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../aether-api/tests/skew");
const COLLECTION: &str = "/apis/config.aether.io/v1/virtualhosts";

/// A skew fixture as the API server stores it: the manifest, with the
/// metadata the server adds (`index` orders the creation times).
fn stored(file: &str, index: usize) -> Value {
    let text = std::fs::read_to_string(format!("{SKEW}/{file}")).unwrap();
    let mut object: Value = serde_saphyr::from_str(&text).unwrap();
    stamp(&mut object, index);
    object
}

fn stamp(object: &mut Value, index: usize) {
    let metadata = &mut object["metadata"];
    metadata["creationTimestamp"] = json!(format!("2026-01-0{}T00:00:00Z", index + 1));
    metadata["generation"] = json!(1);
    metadata["resourceVersion"] = json!("1");
    metadata["uid"] = json!(format!("uid-{index}"));
}

/// A VirtualHost of today's API serving `host`.
fn plain(namespace: &str, name: &str, host: &str, index: usize) -> Value {
    let mut object = json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"hosts": [host], "routes": [{"match": {"prefix": "/"}, "backend": {"service": format!("svc-{name}")}}]}
    });
    stamp(&mut object, index);
    object
}

/// A status patch the controller sent.
#[derive(Debug, Clone)]
struct Patch {
    /// `namespace/name`.
    object: String,
    content_type: String,
    body: Value,
}

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// RFC 7386, as the API server applies a merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let fields = target.as_object_mut().unwrap();
    for (key, value) in patch {
        if value.is_null() {
            fields.remove(key);
        } else {
            merge(fields.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// An API server holding `items`: the list is answered, each watch left
/// open (no change happens), each status merge patch applied and answered
/// with the object as stored, and reported on `patches`.
fn serve(mut handle: Handle, items: Vec<Value>, patches: mpsc::UnboundedSender<Patch>) {
    tokio::spawn(async move {
        let mut objects: BTreeMap<String, Value> = items
            .into_iter()
            .map(|item| {
                let key = format!(
                    "{}/{}",
                    item["metadata"]["namespace"].as_str().unwrap(),
                    item["metadata"]["name"].as_str().unwrap()
                );
                (key, item)
            })
            .collect();
        // Open watches: answered never, dropped with the server.
        let mut watches = Vec::new();
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            let (code, answer) = match parts.method {
                Method::GET if path == COLLECTION && query.contains("watch=true") => {
                    watches.push(respond);
                    continue;
                }
                Method::GET if path == COLLECTION => (
                    200,
                    json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHostList",
                           "metadata": {"resourceVersion": "1"},
                           "items": objects.values().cloned().collect::<Vec<_>>()}),
                ),
                Method::PATCH => {
                    let body: Value = serde_json::from_slice(&body.collect_bytes().await.unwrap()).unwrap();
                    let segments: Vec<&str> = path.split('/').collect();
                    // /apis/config.aether.io/v1/namespaces/NS/virtualhosts/NAME/status
                    let key = format!("{}/{}", segments[5], segments[7]);
                    let object = objects.get_mut(&key).unwrap();
                    merge(object, &json!({"status": body["status"].clone()}));
                    let _ = patches.send(Patch {
                        object: key,
                        content_type: parts.headers["content-type"].to_str().unwrap().to_owned(),
                        body,
                    });
                    (200, object.clone())
                }
                method => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                           "code": 404, "message": format!("no {method} {path} here")}),
                ),
            };
            let response = Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&answer).unwrap()));
            respond.send_response(response.unwrap());
        }
        drop(watches);
    });
}

/// The controller's loop (leader, 10 ms debounce) on its own watch of a
/// mock API server holding `items`: the patches it sends, and its output
/// directory.
fn start(items: Vec<Value>) -> (mpsc::UnboundedReceiver<Patch>, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let (report, patches) = mpsc::unbounded_channel();
    serve(handle, items, report);
    let dir = out.path().to_owned();
    tokio::spawn(async move {
        let metrics = Metrics::new();
        let mut state = ClusterState::new(vec![None], dir, ProjectionConfig::default());
        let events = cluster::watch(&client, &[None]);
        let (_leading, leading) = watch::channel(true);
        let debouncer = Debouncer::new(Duration::from_millis(10), Duration::from_millis(50));
        let feeds = cluster::Feeds {
            virtual_hosts: events,
            secrets: futures_util::stream::pending(),
            leading,
        };
        let result = cluster::run(&client, &mut state, feeds, &metrics, debouncer, std::future::pending()).await;
        panic!("the loop ended: {result:?}");
    });
    (patches, out)
}

/// The next `count` patches, by object (each object patched once).
async fn patches(patches: &mut mpsc::UnboundedReceiver<Patch>, count: usize) -> BTreeMap<String, Patch> {
    let mut received = BTreeMap::new();
    for _ in 0..count {
        let patch = tokio::time::timeout(Duration::from_secs(20), patches.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} status patches within 20 s: {received:#?}", received.len()))
            .unwrap();
        let object = patch.object.clone();
        assert!(
            received.insert(object.clone(), patch).is_none(),
            "{object} patched twice"
        );
    }
    // Nothing more: a patched status is the one stored.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(patches.try_recv().is_err(), "an extra patch");
    received
}

fn accepted(patch: &Patch) -> &Value {
    let conditions = patch.body["status"]["conditions"].as_array().unwrap();
    conditions.iter().find(|c| c["type"] == "Accepted").unwrap()
}

#[tokio::test]
async fn one_newer_object_in_the_list_is_left_out_unsupported_and_the_rest_is_served() {
    let items = vec![
        plain("shop", "first", "first.example.com", 0),
        stored("b-new-enum-value.yaml", 1),
        plain("shop", "second", "second.example.com", 2),
        stored("a-newer-fields.yaml", 3),
        stored("c-new-oneof-member.yaml", 4),
        stored("d-plain.yaml", 5),
    ];
    let (mut sent, out) = start(items);
    let sent = patches(&mut sent, 6).await;

    for served in ["shop/first", "shop/second", "skew/plain"] {
        let condition = accepted(&sent[served]);
        assert_eq!(
            (&condition["status"], &condition["reason"]),
            (&json!("True"), &json!("Accepted")),
            "{served}: {condition}"
        );
    }
    let vault = accepted(&sent["skew/new-enum-value"]);
    assert_eq!(
        (&vault["status"], &vault["reason"]),
        (&json!("False"), &json!("Unsupported")),
        "{vault}"
    );
    let message = vault["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.tls.provider: unknown value \"VAULT\""),
        "{message}"
    );
    let template = accepted(&sent["skew/new-oneof-member"]);
    assert_eq!(
        (&template["status"], &template["reason"]),
        (&json!("False"), &json!("Unsupported")),
        "{template}"
    );
    let message = template["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.routes[0].match.template: unknown field"),
        "{message}"
    );
    // New fields in the spec may change the routing in ways this build
    // cannot tell: the object is left out, naming them.
    let newer = accepted(&sent["skew/newer-fields"]);
    assert_eq!(
        (&newer["status"], &newer["reason"]),
        (&json!("False"), &json!("Unsupported")),
        "{newer}"
    );
    let message = newer["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.mirror: unknown field") && message.contains("spec.routes[0].idleTimeout"),
        "{message}"
    );
    for patch in sent.values() {
        assert_eq!(patch.content_type, "application/merge-patch+json");
    }

    // The edge serves the rest.
    let routes = std::fs::read_to_string(out.path().join(ROUTES_FILE)).unwrap();
    for host in ["first.example.com", "second.example.com", "plain.example.com"] {
        assert!(routes.contains(host), "{host} not served: {routes}");
    }
    for left_out in [
        "vault.example.com",
        "template.example.com",
        "newer.example.com",
        "svc-vault",
        "svc-template",
        "svc-api",
    ] {
        assert!(!routes.contains(left_out), "{left_out} served: {routes}");
    }
}

#[tokio::test]
async fn a_status_patch_leaves_alone_what_the_controller_does_not_own() {
    let mut object = plain("shop", "kept", "kept.example.com", 0);
    // A newer writer's status: a field this build does not know, a condition
    // of another owner with a field this build does not know, and this
    // controller's own condition from an older generation.
    let reconciled = json!({"type": "Reconciled", "status": "True", "observedGeneration": 1,
                            "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Reconciled",
                            "message": "by the mesh", "severity": "Info"});
    object["status"] = json!({"routeCount": 1, "servedHosts": ["kept.example.com"], "conditions": [
        reconciled,
        {"type": "Accepted", "status": "True", "observedGeneration": 0, "lastTransitionTime": "2026-01-01T00:00:00Z",
         "reason": "Accepted", "message": "serving kept.example.com"}
    ]});
    let (mut sent, _out) = start(vec![object, plain("shop", "other", "other.example.com", 1)]);
    let sent = patches(&mut sent, 2).await;
    let patch = &sent["shop/kept"];
    let status = patch.body["status"].as_object().unwrap();
    // A merge patch of the fields the controller writes only: `servedHosts`
    // stays as stored.
    assert_eq!(
        status.keys().collect::<Vec<_>>(),
        ["conditions", "routeCount"],
        "{status:?}"
    );
    let conditions = status["conditions"].as_array().unwrap();
    // The list is replaced whole by a merge patch: the other owner's
    // condition goes back as stored, its unknown field with it.
    assert_eq!(conditions[0], reconciled);
    assert_eq!(conditions[1]["type"], "Accepted");
    assert_eq!(conditions[1]["observedGeneration"], 1);
    assert_eq!(
        conditions[1]["lastTransitionTime"], "2026-01-01T00:00:00Z",
        "the status did not flip"
    );
    assert_eq!(conditions[2]["type"], "ResolvedRefs");
    assert_eq!(conditions[3]["type"], "Programmed");
    assert_eq!(conditions.len(), 4);
}
