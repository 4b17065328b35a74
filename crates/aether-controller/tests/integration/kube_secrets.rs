//! Cluster mode's TLS Secrets against kube's client mocking: which
//! requests read them (only `GET`s of referenced Secrets, each version
//! once), what the statuses and the listener say, and that the generated
//! ClusterRole grants what is sent.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aether_controller::TlsSettings;
use aether_controller::cluster::{ClusterState, Role};
use aether_controller::metrics::Metrics;
use aether_controller::tls::cluster::ClusterSecrets;
use aether_projection::ProjectionConfig;
use aether_testing::objects;
use aether_testing::pki::{Issued, Leaf, TestCa};
use base64::Engine as _;
use http::{Method, Request, Response};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PartialObjectMeta;
use kube::client::Body;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// A stored Secret: its type, entries and resourceVersion.
type Stored = (String, Vec<(String, Vec<u8>)>, String);

/// What the mock API server holds: Secrets by `namespace/name`, and every
/// request as `(method, path)`.
#[derive(Default)]
struct Server {
    secrets: BTreeMap<String, Stored>,
    sent: Vec<(Method, String)>,
}

fn answer(server: Arc<Mutex<Server>>, mut handle: Handle) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some((request, respond)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path().to_owned();
            let body = body.collect_bytes().await.unwrap();
            let mut server = server.lock().unwrap();
            server.sent.push((parts.method.clone(), path.clone()));
            let segments: Vec<&str> = path.split('/').collect();
            let response = if parts.method == Method::GET && segments.get(5) == Some(&"secrets") {
                let key = format!("{}/{}", segments[4], segments[6]);
                match server.secrets.get(&key) {
                    Some((type_, entries, version)) => {
                        let data: serde_json::Map<String, Value> = entries
                            .iter()
                            .map(|(name, bytes)| {
                                (
                                    name.clone(),
                                    json!(base64::engine::general_purpose::STANDARD.encode(bytes)),
                                )
                            })
                            .collect();
                        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": type_, "data": data,
                            "metadata": {"namespace": segments[4], "name": segments[6], "resourceVersion": version}});
                        Response::builder().body(Body::from(serde_json::to_vec(&secret).unwrap()))
                    }
                    None => {
                        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "reason": "NotFound", "code": 404, "message": "not found"});
                        Response::builder()
                            .status(404)
                            .body(Body::from(serde_json::to_vec(&status).unwrap()))
                    }
                }
            } else {
                // A status patch: echo an object with that status.
                let body: Value = serde_json::from_slice(&body).unwrap();
                let mut stored = serde_json::to_value(object(segments[4], segments[6], "x")).unwrap();
                stored["status"] = body["status"].clone();
                Response::builder().body(Body::from(serde_json::to_vec(&stored).unwrap()))
            };
            respond.send_response(response.unwrap());
        }
    })
}

fn object(namespace: &str, name: &str, secret: &str) -> kube::core::DynamicObject {
    let object = objects::object(namespace, name)
        .created("2026-01-01T00:00:00Z")
        .stored(1);
    serde_json::from_value(
        object
            .hosts([format!("{name}.example.com")])
            .route("/", name)
            .tls(secret)
            .document(),
    )
    .unwrap()
}

fn meta(namespace: &str, name: &str, version: &str) -> PartialObjectMeta<Secret> {
    serde_json::from_value(json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": version}}))
    .unwrap()
}

fn tls_entries(issued: &Issued) -> Vec<(String, Vec<u8>)> {
    vec![
        ("tls.crt".to_owned(), issued.chain_pem.clone().into_bytes()),
        ("tls.key".to_owned(), issued.key_pem.clone().into_bytes()),
    ]
}

/// One pass against the mock; returns the requests it sent.
async fn pass(state: &mut ClusterState, server: &Arc<Mutex<Server>>) -> Vec<(Method, String)> {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let task = answer(server.clone(), handle);
    state
        .reconcile(
            &client,
            &Metrics::new(),
            "2026-03-04T05:06:07Z".parse().unwrap(),
            Role::Leader,
        )
        .await
        .unwrap();
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    std::mem::take(&mut server.lock().unwrap().sent)
}

fn resolved_refs(state: &ClusterState, namespace: &str, name: &str) -> (String, String) {
    let key = aether_projection::ObjectKey::new(namespace, name);
    let status = state.observed(&key).unwrap().status.clone().unwrap();
    let condition = status.conditions.iter().find(|c| c.r#type == "ResolvedRefs").unwrap();
    (condition.status.clone(), condition.message.clone())
}

fn secret_gets(sent: &[(Method, String)]) -> Vec<String> {
    sent.iter()
        .filter(|(method, path)| *method == Method::GET && path.contains("/secrets/"))
        .map(|(_, path)| path.clone())
        .collect()
}

#[tokio::test]
async fn referenced_secrets_are_read_once_per_version_and_nothing_else_is() {
    let ca = TestCa::new();
    let (first, second) = (
        ca.issue(&Leaf::new(&["api.example.com"], 1)),
        ca.issue(&Leaf::new(&["api.example.com"], 2)),
    );
    let server = Arc::new(Mutex::new(Server::default()));
    server.lock().unwrap().secrets.insert(
        "shop/shop-tls".into(),
        ("kubernetes.io/tls".into(), tls_entries(&first), "10".into()),
    );
    server.lock().unwrap().secrets.insert(
        "shop/opaque".into(),
        ("Opaque".into(), tls_entries(&first), "11".into()),
    );
    let out = tempfile::tempdir().unwrap();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default()).with_tls(
        TlsSettings::new(out.path().to_string_lossy()),
        ClusterSecrets::watched(),
    );
    state.apply(&None, Event::Init);
    for (name, secret) in [("api", "shop-tls"), ("other", "opaque"), ("gone", "absent")] {
        state.apply(&None, Event::InitApply(object("shop", name, secret)));
    }
    state.apply(&None, Event::InitDone);
    // The metadata watch lists the TLS Secrets (the Opaque one is not of
    // the type it selects).
    let secrets = state.secrets_mut();
    secrets.apply(Event::Init);
    secrets.apply(Event::InitApply(meta("shop", "shop-tls", "10")));
    secrets.apply(Event::InitApply(meta("shop", "unreferenced", "12")));
    secrets.apply(Event::InitDone);

    let sent = pass(&mut state, &server).await;
    assert_eq!(secret_gets(&sent), ["/api/v1/namespaces/shop/secrets/shop-tls"]);
    assert_eq!(resolved_refs(&state, "shop", "api").0, "True");
    let (status, message) = resolved_refs(&state, "shop", "other");
    assert_eq!(status, "False");
    assert!(
        message.contains("not found: no Secret shop/opaque of type kubernetes.io/tls"),
        "{message}"
    );
    assert!(resolved_refs(&state, "shop", "gone").1.contains("not found"));
    let listeners = std::fs::read_to_string(out.path().join("listeners.json")).unwrap();
    assert!(listeners.contains("kubernetes://shop/shop-tls"));
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 1);

    // Same version: not read again.
    assert_eq!(secret_gets(&pass(&mut state, &server).await), Vec::<String>::new());

    // Rotated: the watch says so (a pass is due), the pass reads it once.
    server.lock().unwrap().secrets.insert(
        "shop/shop-tls".into(),
        ("kubernetes.io/tls".into(), tls_entries(&second), "20".into()),
    );
    assert!(state.secrets_mut().apply(Event::Apply(meta("shop", "shop-tls", "20"))));
    assert!(
        !state
            .secrets_mut()
            .apply(Event::Apply(meta("shop", "unreferenced", "21")))
    );
    let sent = pass(&mut state, &server).await;
    assert_eq!(secret_gets(&sent), ["/api/v1/namespaces/shop/secrets/shop-tls"]);
    assert!(
        resolved_refs(&state, "shop", "api")
            .1
            .contains(&format!("serial {}", second.serial))
    );

    // Deleted: missing without a request; its chain and file go.
    assert!(state.secrets_mut().apply(Event::Delete(meta("shop", "shop-tls", "20"))));
    let sent = pass(&mut state, &server).await;
    assert_eq!(secret_gets(&sent), Vec::<String>::new());
    assert_eq!(resolved_refs(&state, "shop", "api").0, "False");
    assert_eq!(std::fs::read_dir(out.path().join("secrets")).unwrap().count(), 0);
    let listeners = std::fs::read_to_string(out.path().join("listeners.json")).unwrap();
    assert!(!listeners.contains("kubernetes://shop/shop-tls"));
}

/// The generated ClusterRole grants reading Secrets (and no more verbs
/// on them than get, list and watch).
#[test]
fn the_generated_cluster_role_grants_what_the_secret_reads_need() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../generated/deploy/controller/cluster-role.yaml"
    );
    let role: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rule = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|rule| rule["resources"] == json!(["secrets"]))
        .expect("a rule on secrets");
    assert_eq!(rule["apiGroups"], json!([""]));
    assert_eq!(rule["verbs"], json!(["get", "list", "watch"]));
}
