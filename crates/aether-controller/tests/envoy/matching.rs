//! Phase 2 matching on a real Envoy, through the examples of each feature
//! (`examples/match-*.yaml`, `examples/route-order.yaml`): regex paths,
//! methods, header values (exact, prefix, regex), present, absent and
//! inverted headers, query parameters, `routeOrder: SPECIFICITY` against
//! the listed order, and a route whose regex Envoy would refuse left out
//! while the rest of its object, and every other host, is served.

use std::path::Path;

use aether_e2e::edge::clusters;
use aether_e2e::{Edge, Mode, Served};

use crate::edge;

const FEATURES: &[&str] = &[
    "match-regex.yaml",
    "match-methods.yaml",
    "match-headers.yaml",
    "match-query.yaml",
    "route-order.yaml",
];

/// The same routes as `examples/route-order.yaml`, listed order.
const LISTED: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: docs-listed, namespace: default}
spec:
  hosts: [docs-listed.example.org]
  routes:
    - {match: {prefix: /}, backend: {service: svc-web}}
    - {match: {prefix: /docs}, backend: {service: svc-docs}}
    - {match: {regex: '/docs/v[0-9]+/.*'}, backend: {service: svc-docs-versioned}}
    - {match: {exact: /docs/index.html}, backend: {service: svc-docs-index}}
";

/// A route Envoy would refuse (a program above 100), beside good ones.
const PARTIAL: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: partial, namespace: default}
spec:
  hosts: [partial.example.org]
  routes:
    - {match: {regex: '/[a-z]{120}'}, backend: {service: svc-never}}
    - {match: {prefix: /, headers: [{name: x-a, regex: '[0-9]+'}]}, backend: {service: svc-digits}}
    - {match: {prefix: /}, backend: {service: svc-web}}
";

fn manifests() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<(String, String)> = FEATURES
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("examples/{name}: {e}"));
            ((*name).to_owned(), text)
        })
        .collect();
    files.push(("listed.yaml".into(), LISTED.into()));
    files.push(("partial.yaml".into(), PARTIAL.into()));
    files
}

/// Where Envoy sends `method path` for `host` with `headers` (`None`: 404).
fn cluster(edge: &Edge, method: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> Option<String> {
    let response = aether_e2e::http::request(edge.envoy.listener(), method, host, path, headers)
        .unwrap_or_else(|e| panic!("{method} {host}{path}: {e}\n{}", edge.logs()));
    match response.status {
        200 => {
            let served: Served = serde_json::from_slice(&response.body).expect("a backend's answer");
            Some(served.cluster)
        }
        404 => None,
        status => panic!("{method} {host}{path} {headers:?}: status {status}\n{}", edge.logs()),
    }
}

/// (method, host, path, headers, expected cluster).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const CASES: &[Case] = &[
    // A regex path fits the whole path (anchors implied), query aside.
    ("GET", "users.example.org", "/users/42", &[], "svc-users:8080"),
    (
        "GET",
        "users.example.org",
        "/users/42/orders?x=1",
        &[],
        "svc-users:8080",
    ),
    ("GET", "users.example.org", "/users/me", &[], "svc-web"),
    ("GET", "users.example.org", "/x/users/42", &[], "svc-web"),
    // Methods: one of several, one, none.
    ("POST", "orders.example.org", "/orders", &[], "svc-orders-write"),
    ("PATCH", "orders.example.org", "/orders/7", &[], "svc-orders-write"),
    ("GET", "orders.example.org", "/orders/7", &[], "svc-orders-read"),
    ("DELETE", "orders.example.org", "/orders/7", &[], "svc-web"),
    // Header values: exact, prefix, regex (whole value).
    ("GET", "canary.example.org", "/", &[("x-env", "canary")], "svc-canary"),
    ("GET", "canary.example.org", "/", &[("x-env", "Canary")], "svc-web"),
    (
        "GET",
        "canary.example.org",
        "/",
        &[("authorization", "Bearer abc")],
        "svc-api",
    ),
    (
        "GET",
        "canary.example.org",
        "/",
        &[("authorization", "Basic abc")],
        "svc-web",
    ),
    (
        "GET",
        "canary.example.org",
        "/",
        &[("x-version", "v12")],
        "svc-versioned",
    ),
    ("GET", "canary.example.org", "/", &[("x-version", "v12b")], "svc-web"),
    // Present, inverted: the token route only without x-debug.
    (
        "GET",
        "canary.example.org",
        "/",
        &[("authorization", "Bearer abc"), ("x-debug", "1")],
        "svc-web",
    ),
    (
        "GET",
        "canary.example.org",
        "/",
        &[("authorization", "Bearer abc"), ("x-debug", "")],
        "svc-web",
    ),
    // Every entry must match; header names are case-insensitive.
    ("GET", "canary.example.org", "/", &[("X-Env", "canary")], "svc-canary"),
    // Query parameters, as sent: exact, regex, present with or without a value.
    ("GET", "search.example.org", "/search?version=2", &[], "svc-search-v2"),
    (
        "GET",
        "search.example.org",
        "/search?q=a&version=2",
        &[],
        "svc-search-v2",
    ),
    ("GET", "search.example.org", "/search?version=%32", &[], "svc-search"),
    ("GET", "search.example.org", "/search?version=3", &[], "svc-search"),
    (
        "GET",
        "search.example.org",
        "/search?id=12345678",
        &[],
        "svc-search-by-id",
    ),
    ("GET", "search.example.org", "/search?id=123456789", &[], "svc-search"),
    (
        "GET",
        "search.example.org",
        "/search?preview",
        &[],
        "svc-search-preview",
    ),
    (
        "GET",
        "search.example.org",
        "/search?preview=yes",
        &[],
        "svc-search-preview",
    ),
    ("GET", "search.example.org", "/search", &[], "svc-search"),
    // SPECIFICITY: the exact path, then the regex, then the longest prefix
    // beat the catch-all listed first...
    ("GET", "docs.example.org", "/docs/index.html", &[], "svc-docs-index"),
    ("GET", "docs.example.org", "/docs/v2/intro", &[], "svc-docs-versioned"),
    ("GET", "docs.example.org", "/docs/intro", &[], "svc-docs"),
    ("GET", "docs.example.org", "/about", &[], "svc-web"),
    // ... which, listed first, takes every request.
    ("GET", "docs-listed.example.org", "/docs/index.html", &[], "svc-web"),
    ("GET", "docs-listed.example.org", "/docs/v2/intro", &[], "svc-web"),
    // The route Envoy would refuse is left out; the rest is served.
    ("GET", "partial.example.org", "/abc", &[("x-a", "42")], "svc-digits"),
    ("GET", "partial.example.org", "/abc", &[], "svc-web"),
];

fn check(mode: Mode) {
    let files = manifests();
    let texts: Vec<&str> = files.iter().map(|(_, text)| text.as_str()).collect();
    let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let edge = edge(mode, &pairs, &clusters(&texts));
    for (method, host, path, headers, expected) in CASES {
        assert_eq!(
            cluster(&edge, method, host, path, headers).as_deref(),
            Some(*expected),
            "{mode:?}: {method} {host}{path} {headers:?}"
        );
    }
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
    // The status says which route is left out, and counts what is served.
    let status: serde_json::Value = aether_e2e::wait_until(
        "the controller's status of default/partial",
        aether_e2e::edge::PATIENCE,
        || edge.logs(),
        || {
            let text = std::fs::read_to_string(edge.out().join("status.json")).ok()?;
            let all: serde_json::Value = serde_json::from_str(&text).ok()?;
            all.get("default/partial").cloned()
        },
    );
    assert_eq!(status["routeCount"], 2, "{status}");
    let accepted = &status["conditions"][0];
    assert_eq!(
        (accepted["status"].as_str(), accepted["reason"].as_str()),
        (Some("True"), Some("PartiallyInvalid")),
        "{status}"
    );
    assert!(
        accepted["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("route left out: spec.routes[0].match.regex: RE2 may compile"),
        "{status}"
    );
}

#[test]
fn each_match_feature_routes_real_requests_over_files() {
    check(Mode::Files);
}

#[test]
fn each_match_feature_routes_real_requests_over_xds() {
    check(Mode::Xds);
}
