//! Phase 2 actions in the projection: each field as Envoy's route, through
//! both builders; weighted backends in the dependency set; the default
//! retry policy kept, replaced or removed.

use aether_projection::{Format, ProjectionConfig, Projector, Snapshot, VirtualHostObject, project};
use aether_testing::objects;
use serde_json::{Value, json};

fn object(name: &str, spec: Value) -> VirtualHostObject {
    objects::object("default", name)
        .created("2026-01-01T00:00:00Z")
        .spec(spec)
        .build()
}

/// Both builders, which must agree; the object must be valid and served.
fn both(routes: Value) -> Snapshot {
    let objects = vec![object("o", json!({"hosts": ["a.test"], "routes": routes}))];
    let full = project(objects.clone(), &ProjectionConfig::default()).expect("projects");
    let mut projector = Projector::new(ProjectionConfig::default());
    for object in objects {
        projector.upsert(object);
    }
    assert_eq!(
        projector.snapshot(),
        full,
        "the incremental build differs from the full one"
    );
    assert!(full.report.left_out.is_empty(), "{:?}", full.report.left_out);
    assert!(
        full.report.routes_left_out.is_empty(),
        "{:?}",
        full.report.routes_left_out
    );
    full
}

/// The Envoy routes, in Envoy's JSON, without their matches.
fn routes(snapshot: &Snapshot) -> Vec<Value> {
    let json: Value = serde_json::from_slice(&snapshot.render(Format::Json).expect("renders")).expect("JSON");
    json["routeConfiguration"]["virtualHosts"][0]["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .map(|route| {
            let mut route = route.clone();
            route.as_object_mut().expect("a route").remove("match");
            route
        })
        .collect()
}

/// The projection's default policy, as every route without `retries` has it.
fn default_retry() -> Value {
    json!({"retryOn": "connect-failure,refused-stream,reset-before-request", "numRetries": 2})
}

#[test]
fn weighted_backends_become_weighted_clusters_and_dependencies() {
    let snapshot = both(json!([
        {"match": {"prefix": "/api"}, "backends": [
            {"service": "svc-api", "port": 8080, "weight": 90},
            {"service": "svc-canary", "weight": 10},
            {"service": "svc-idle", "weight": 0}
        ]},
        {"match": {"prefix": "/drained"}, "backends": [{"service": "svc-drained", "weight": 0}]},
        {"match": {"prefix": "/"}, "backends": [{"service": "svc-max", "weight": 1_000_000}]}
    ]));
    assert_eq!(
        routes(&snapshot),
        [
            json!({"route": {"weightedClusters": {"clusters": [
                {"name": "svc-api:8080", "weight": 90},
                {"name": "svc-canary", "weight": 10}
            ]}, "retryPolicy": default_retry()}}),
            // Every weight 0: Gateway API's 500, since Envoy refuses the split.
            json!({"directResponse": {"status": 500}}),
            json!({"route": {"weightedClusters": {"clusters": [{"name": "svc-max", "weight": 1_000_000}]},
                "retryPolicy": default_retry()}}),
        ]
    );
    let dependencies: Vec<(String, Vec<u32>)> = snapshot
        .dependencies
        .iter()
        .map(|d| (d.service.clone(), d.ports.clone()))
        .collect();
    assert_eq!(
        dependencies,
        [
            ("svc-api".to_owned(), vec![8080]),
            ("svc-canary".to_owned(), vec![0]),
            ("svc-drained".to_owned(), vec![0]),
            ("svc-idle".to_owned(), vec![0]),
            ("svc-max".to_owned(), vec![0]),
        ]
    );
}

#[test]
fn rewrites_become_prefix_regex_and_host_rewrites() {
    let snapshot = both(json!([
        {"match": {"prefix": "/api"}, "rewrite": {"prefix": "/v2"}, "backend": {"service": "svc"}},
        {"match": {"exact": "/status"}, "rewrite": {"path": "/a%20b", "host": "health.internal"}, "backend": {"service": "svc"}},
        {"match": {"regex": "/x/.*"}, "rewrite": {"host": "x.internal"}, "backend": {"service": "svc"}}
    ]));
    assert_eq!(
        routes(&snapshot),
        [
            json!({"route": {"cluster": "svc", "prefixRewrite": "/v2", "retryPolicy": default_retry()}}),
            json!({"route": {"cluster": "svc", "hostRewriteLiteral": "health.internal",
                "regexRewrite": {"pattern": {"regex": "^/.*$"}, "substitution": "/a%20b"},
                "retryPolicy": default_retry()}}),
            json!({"route": {"cluster": "svc", "hostRewriteLiteral": "x.internal", "retryPolicy": default_retry()}}),
        ]
    );
}

#[test]
fn redirects_become_envoys_with_gateway_api_defaults() {
    let snapshot = both(json!([
        {"match": {"prefix": "/old"}, "redirect": {"scheme": "https", "host": "new.example.com", "port": 8443, "prefix": "/new", "statusCode": 301}},
        {"match": {"prefix": "/s"}, "redirect": {"scheme": "https"}},
        {"match": {"prefix": "/h"}, "redirect": {"scheme": "http", "statusCode": 303}},
        {"match": {"exact": "/t"}, "redirect": {"path": "/e", "statusCode": 307}},
        {"match": {"exact": "/m"}, "redirect": {"host": "m.example.com", "statusCode": 308}},
        {"match": {"exact": "/f"}, "redirect": {"path": "/g", "statusCode": 302}},
        {"match": {"exact": "/w"}, "redirect": {"scheme": "https", "host": "w.example.com"}}
    ]));
    assert_eq!(
        routes(&snapshot),
        [
            json!({"redirect": {"schemeRedirect": "https", "hostRedirect": "new.example.com", "portRedirect": 8443, "prefixRewrite": "/new"}}),
            // No status: 302; a scheme without a port: that scheme's port.
            json!({"redirect": {"schemeRedirect": "https", "portRedirect": 443, "responseCode": "FOUND"}}),
            json!({"redirect": {"schemeRedirect": "http", "portRedirect": 80, "responseCode": "SEE_OTHER"}}),
            json!({"redirect": {"pathRedirect": "/e", "responseCode": "TEMPORARY_REDIRECT"}}),
            json!({"redirect": {"hostRedirect": "m.example.com", "responseCode": "PERMANENT_REDIRECT"}}),
            json!({"redirect": {"pathRedirect": "/g", "responseCode": "FOUND"}}),
            // With a host, Envoy replaces the whole authority: no port written.
            json!({"redirect": {"schemeRedirect": "https", "hostRedirect": "w.example.com", "responseCode": "FOUND"}}),
        ]
    );
}

#[test]
fn header_changes_set_overwrite_add_append_and_percent_is_literal() {
    let snapshot = both(json!([
        {"match": {"prefix": "/"}, "backend": {"service": "svc"},
         "requestHeaders": {"set": [{"name": "x-team", "value": "a"}, {"name": "x-discount", "value": "50% %REQ(x)%"}],
                            "add": [{"name": "x-via", "value": "edge"}], "remove": ["x-debug"]},
         "responseHeaders": {"set": [{"name": "cache-control", "value": "no-store"}],
                             "add": [{"name": "x-served-by", "value": "edge"}], "remove": ["x-internal", "server"]}}
    ]));
    assert_eq!(
        routes(&snapshot),
        [json!({
            "route": {"cluster": "svc", "retryPolicy": default_retry()},
            "requestHeadersToAdd": [
                {"header": {"key": "x-team", "value": "a"}, "appendAction": "OVERWRITE_IF_EXISTS_OR_ADD"},
                {"header": {"key": "x-discount", "value": "50%% %%REQ(x)%%"}, "appendAction": "OVERWRITE_IF_EXISTS_OR_ADD"},
                {"header": {"key": "x-via", "value": "edge"}}
            ],
            "requestHeadersToRemove": ["x-debug"],
            "responseHeadersToAdd": [
                {"header": {"key": "cache-control", "value": "no-store"}, "appendAction": "OVERWRITE_IF_EXISTS_OR_ADD"},
                {"header": {"key": "x-served-by", "value": "edge"}}
            ],
            "responseHeadersToRemove": ["x-internal", "server"]
        })]
    );
}

#[test]
fn timeouts_and_retries_replace_or_keep_the_default_policy() {
    let snapshot = both(json!([
        {"match": {"prefix": "/t"}, "backend": {"service": "svc"}, "timeout": "1m30s"},
        {"match": {"prefix": "/r"}, "backend": {"service": "svc"}, "timeout": "0s",
         "retries": {"attempts": 3, "perTryTimeout": "500ms", "retryOn": ["connect-failure", "5xx"]}},
        {"match": {"prefix": "/d"}, "backend": {"service": "svc"}, "retries": {"attempts": 4, "perTryTimeout": "0s"}},
        {"match": {"prefix": "/n"}, "backend": {"service": "svc"}, "retries": {"attempts": 0, "retryOn": ["5xx"]}},
        {"match": {"prefix": "/"}, "backends": [{"service": "svc", "weight": 1}], "timeout": "99999h99999h99999h99999h"}
    ]));
    assert_eq!(
        routes(&snapshot),
        [
            json!({"route": {"cluster": "svc", "timeout": "90s", "retryPolicy": default_retry()}}),
            json!({"route": {"cluster": "svc", "timeout": "0s",
                "retryPolicy": {"retryOn": "connect-failure,5xx", "numRetries": 3, "perTryTimeout": "0.500s"}}}),
            // No conditions: the default's.
            json!({"route": {"cluster": "svc",
                "retryPolicy": {"retryOn": "connect-failure,refused-stream,reset-before-request", "numRetries": 4}}}),
            // No attempts: no policy, no retries.
            json!({"route": {"cluster": "svc"}}),
            json!({"route": {"weightedClusters": {"clusters": [{"name": "svc", "weight": 1}]},
                "timeout": "1439985600s", "retryPolicy": default_retry()}}),
        ]
    );
}
