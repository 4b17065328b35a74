//! Cluster mode keeps serving an object's previous version when a watch
//! event brings one it cannot use (the webhook is not always there:
//! `failurePolicy: Ignore`, or an object a newer API wrote). Against kube's
//! client mocking, as `kube_mock.rs`.

use std::time::Duration;

use aether_controller::cluster::{ClusterState, Role};
use aether_controller::metrics::Metrics;
use aether_controller::outputs::ROUTES_FILE;
use aether_projection::ProjectionConfig;
use http::{Request, Response};
use kube::client::Body;
use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

/// `shop/main` at `generation`, serving `host` to `service` with TLS.
fn main_object(generation: i64, host: &str, service: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": "main", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "generation": generation, "resourceVersion": generation.to_string()},
        "spec": {"hosts": [host], "routes": [{"match": {"prefix": "/"}, "backend": {"service": service}}],
                 "tls": {"secretName": "shop-tls", "provider": "KUBERNETES"}}
    }))
    .unwrap()
}

/// One pass as leader against a mock API server that stores every status
/// patch: the `Accepted` condition and `routeCount` of each patch sent.
async fn reconcile(state: &mut ClusterState) -> Vec<(Value, Value)> {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let server = tokio::spawn(async move {
        let mut sent = Vec::new();
        while let Some((request, respond)) = handle.next_request().await {
            let body: Value = serde_json::from_slice(&request.into_body().collect_bytes().await.unwrap()).unwrap();
            let mut stored = serde_json::to_value(main_object(1, "shop.example.com", "svc")).unwrap();
            stored["status"] = body["status"].clone();
            sent.push((
                body["status"]["conditions"][0].clone(),
                body["status"]["routeCount"].clone(),
            ));
            let response = Response::builder().body(Body::from(serde_json::to_vec(&stored).unwrap()));
            respond.send_response(response.unwrap());
        }
        sent
    });
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
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap()
}

/// `shop/canary`, younger than `shop/main`, claiming its host.
fn canary() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": "canary", "creationTimestamp": "2026-02-01T00:00:00Z",
                     "generation": 1, "resourceVersion": "1"},
        "spec": {"hosts": ["shop.example.com", "canary.example.com"],
                 "routes": [{"match": {"prefix": "/"}, "backend": {"service": "svc-canary"}}]}
    }))
    .unwrap()
}

/// The version kept is the same object: it holds its hosts by its own
/// age, so a younger object claiming one does not take it.
#[tokio::test]
async fn a_kept_version_keeps_its_hosts_from_a_younger_claimant() {
    let out = tempfile::tempdir().unwrap();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    state.apply(&None, Event::Init);
    state.apply(&None, Event::InitApply(main_object(1, "shop.example.com", "svc-v1")));
    state.apply(&None, Event::InitApply(canary()));
    state.apply(&None, Event::InitDone);
    reconcile(&mut state).await;
    let routes = || std::fs::read_to_string(out.path().join(ROUTES_FILE)).unwrap();
    let served = routes();
    assert!(
        served.contains("svc-v1") && served.contains("canary.example.com"),
        "{served}"
    );

    state.apply(&None, Event::Apply(main_object(2, "Shop_Example", "svc-v2")));
    reconcile(&mut state).await;
    assert_eq!(routes(), served, "the younger object took the host");
}

#[tokio::test]
async fn an_invalid_or_unsupported_update_keeps_the_previous_version_served() {
    let out = tempfile::tempdir().unwrap();
    let mut state = ClusterState::new(vec![None], out.path().to_owned(), ProjectionConfig::default());
    state.apply(&None, Event::Init);
    state.apply(&None, Event::InitApply(main_object(1, "shop.example.com", "svc-v1")));
    state.apply(&None, Event::InitDone);
    let sent = reconcile(&mut state).await;
    assert_eq!(sent[0].0["reason"], "Accepted", "{sent:?}");
    let routes = || std::fs::read_to_string(out.path().join(ROUTES_FILE)).unwrap();
    let served = routes();
    assert!(served.contains("svc-v1"), "{served}");
    let tls = std::fs::read_to_string(out.path().join("tls-secrets.json")).unwrap();

    // Generation 2 breaks a rule (admitted without the webhook).
    state.apply(&None, Event::Apply(main_object(2, "Shop_Example", "svc-v2")));
    let sent = reconcile(&mut state).await;
    assert_eq!(routes(), served, "the previous version's routes changed");
    assert_eq!(
        std::fs::read_to_string(out.path().join("tls-secrets.json")).unwrap(),
        tls
    );
    let (condition, route_count) = &sent[0];
    assert_eq!(
        (&condition["status"], &condition["reason"], route_count),
        (&"False".into(), &"Invalid".into(), &1.into()),
        "{sent:?}"
    );
    assert_eq!(condition["observedGeneration"], 2);
    let message = condition["message"].as_str().unwrap();
    assert!(message.starts_with("left out: spec.hosts[0]: "), "{message}");
    assert!(
        message.ends_with("; serving the previous version (generation 1): serving shop.example.com"),
        "{message}"
    );

    // Generation 3 asks for a provider of a newer API: still the first.
    let mut newer = serde_json::to_value(main_object(3, "shop.example.com", "svc-v3")).unwrap();
    newer["spec"]["tls"]["provider"] = "VAULT".into();
    state.apply(&None, Event::Apply(serde_json::from_value(newer).unwrap()));
    let sent = reconcile(&mut state).await;
    assert_eq!(routes(), served);
    assert_eq!(sent[0].0["reason"], "Unsupported", "{sent:?}");
    assert!(
        sent[0].0["message"]
            .as_str()
            .unwrap()
            .ends_with("; serving the previous version (generation 1): serving shop.example.com"),
        "{sent:?}"
    );

    // Generation 4 is valid: served.
    state.apply(&None, Event::Apply(main_object(4, "shop.example.com", "svc-v4")));
    let sent = reconcile(&mut state).await;
    let now = routes();
    assert!(now.contains("svc-v4") && !now.contains("svc-v1"), "{now}");
    assert_eq!(sent[0].0["reason"], "Accepted", "{sent:?}");

    // Deleted: gone.
    state.apply(&None, Event::Delete(main_object(4, "shop.example.com", "svc-v4")));
    reconcile(&mut state).await;
    assert!(!routes().contains("svc-v4"));
}
