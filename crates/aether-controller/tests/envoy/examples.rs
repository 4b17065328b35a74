//! The repository's `examples/`, served by a real Envoy.

use std::path::Path;

use aether_projection::envoy_route::route_match::PathSpecifier;

use aether_e2e::edge::{clusters, projection};
use aether_e2e::{Edge, Mode};

use crate::edge;

/// The example manifests (file name, text), and one more object whose two
/// routes overlap, for first-match order.
fn manifests() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("examples/ lists")
        .map(|entry| {
            let path = entry.expect("an entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("an example reads"))
        })
        .collect();
    files.sort();
    files.push(("order.yaml".into(), ORDER.into()));
    files
}

const ORDER: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: order, namespace: default}
spec:
  hosts: [order.example.net]
  routes:
    - match: {prefix: /a}
      backend: {service: svc-first}
    - match: {prefix: /ab}
      backend: {service: svc-shadowed}
";

fn start(mode: Mode) -> Edge {
    let files = manifests();
    let texts: Vec<&str> = files.iter().map(|(_, text)| text.as_str()).collect();
    let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    edge(mode, &pairs, &clusters(&texts))
}

/// What each request of the examples must reach (`None`: Envoy's 404).
const CASES: &[(&str, &str, Option<&str>)] = &[
    // default/api: prefix, exact, and the catch-all.
    ("api.example.com", "/users/42", Some("svc-users:8080")),
    ("api.example.com", "/healthz", Some("svc-health")),
    // exact is exact: a longer path falls through to the prefix `/`.
    ("api.example.com", "/healthz/x", Some("svc-web")),
    ("api.example.com", "/", Some("svc-web")),
    // Clients send the port in Host: it does not change the match.
    ("api.example.com:443", "/users", Some("svc-users:8080")),
    ("api.example.com:8080", "/healthz", Some("svc-health")),
    // A specific host beats the wildcard `*.example.com`.
    ("api.example.com", "/api", Some("svc-web")),
    // The older object keeps a contested host; the loser keeps the rest.
    ("api.example.com", "/v1", Some("svc-web")),
    ("legacy.example.com", "/v1/x", Some("svc-legacy:8080")),
    ("legacy.example.com", "/", Some("svc-legacy")),
    ("shop.example.com", "/", Some("svc-storefront")),
    ("www.shop.example.com", "/cart/1", Some("svc-cart:8443")),
    ("shop.example.com", "/checkout", Some("svc-checkout")),
    ("shop.example.com", "/healthz", Some("svc-health")),
    // The wildcard: one label or more, never the bare suffix.
    ("foo.example.com", "/", Some("svc-tenant-web")),
    ("a.b.example.com", "/api/v2", Some("svc-tenant-api:9090")),
    ("example.com", "/", None),
    // The invalid object (host `Sandbox.example.com`, path `/docs//v2`) is
    // left out: its host falls to the wildcard, never to svc-docs.
    ("sandbox.example.com", "/docs/v2", Some("svc-tenant-web")),
    // First match wins: `/ab...` matches `/a`, listed first.
    ("order.example.net", "/abc", Some("svc-first")),
    ("unknown.example.org", "/", None),
];

fn check(mode: Mode) {
    let edge = start(mode);
    for (host, path, cluster) in CASES {
        assert_eq!(edge.cluster(host, path).as_deref(), *cluster, "{mode:?}: {host}{path}");
    }
    // The backend sees the path and Host as the client sent them.
    let served = edge.served("api.example.com:443", "/users/42?x=1").expect("served");
    assert_eq!(
        (served.path.as_str(), served.host.as_str()),
        ("/users/42?x=1", "api.example.com:443")
    );
    every_route_reaches_its_backend(&edge);
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
}

/// Each route of each accepted object matching on the path alone and
/// sending to one backend, asked
/// for on each of its object's domains (a wildcard as `x.` + its suffix),
/// reaches the backend of the first route of that object that matches the
/// path, as Envoy's first-match order says. (Objects matching on more, the
/// matching examples, are checked request by request in `matching.rs`.)
fn every_route_reaches_its_backend(edge: &Edge) {
    let files = manifests();
    let texts: Vec<&str> = files.iter().map(|(_, text)| text.as_str()).collect();
    let config = projection(&texts)
        .route_configuration()
        .expect("the projection decodes");
    let mut checked = 0;
    // To one backend: the other actions are checked by `actions.rs`.
    let path_only = |route: &aether_projection::envoy_route::Route| {
        route.r#match.as_ref().is_some_and(|m| {
            m.headers.is_empty()
                && m.query_parameters.is_empty()
                && matches!(
                    m.path_specifier,
                    Some(PathSpecifier::Prefix(_) | PathSpecifier::Path(_))
                )
        }) && matches!(
            &route.action,
            Some(aether_projection::envoy_route::route::Action::Route(action))
                if matches!(action.cluster_specifier, Some(aether_projection::envoy_route::route_action::ClusterSpecifier::Cluster(_)))
        )
    };
    for virtual_host in config.virtual_hosts.iter().filter(|vh| vh.routes.iter().all(path_only)) {
        let paths: Vec<(PathSpecifier, String)> = virtual_host
            .routes
            .iter()
            .map(|route| {
                let path = route
                    .r#match
                    .as_ref()
                    .and_then(|m| m.path_specifier.clone())
                    .expect("a path");
                let cluster = match route.action.as_ref().expect("an action") {
                    aether_projection::envoy_route::route::Action::Route(action) => match &action.cluster_specifier {
                        Some(aether_projection::envoy_route::route_action::ClusterSpecifier::Cluster(c)) => c.clone(),
                        other => panic!("unexpected cluster specifier {other:?}"),
                    },
                    other => panic!("unexpected action {other:?}"),
                };
                (path, cluster)
            })
            .collect();
        for domain in &virtual_host.domains {
            let host = domain.replace('*', "x");
            for (path, _) in &paths {
                let request = match path {
                    PathSpecifier::Prefix(prefix) | PathSpecifier::Path(prefix) => prefix.clone(),
                    other => panic!("unexpected path specifier {other:?}"),
                };
                let expected = paths
                    .iter()
                    .find(|(candidate, _)| match candidate {
                        PathSpecifier::Prefix(prefix) => request.starts_with(prefix.as_str()),
                        PathSpecifier::Path(exact) => request == *exact,
                        _ => false,
                    })
                    .map(|(_, cluster)| cluster.as_str());
                assert_eq!(edge.cluster(&host, &request).as_deref(), expected, "{host}{request}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "only {checked} requests");
}

#[test]
fn the_examples_are_routed_as_written_over_files() {
    check(Mode::Files);
}

#[test]
fn the_examples_are_routed_as_written_over_xds() {
    check(Mode::Xds);
}
