use aether_projection::{ProjectionConfig, VirtualHostObject, project};
use serde_json::{Value, json};

use super::*;
use crate::{RouteResult, explain};

/// Routes of one match each, one object per route, so that each witness
/// is tried against that route alone.
fn matches() -> Vec<Value> {
    vec![
        json!({"prefix": "/users"}),
        json!({"prefix": "/"}),
        json!({"exact": "/docs/index.html"}),
        json!({"exact": "/"}),
        json!({"regex": "/v[0-9]+/items/[a-z]{2,4}"}),
        json!({"regex": "/(a|bb)+(\\.json)?"}),
        json!({"prefix": "/m", "methods": ["POST"]}),
        json!({"prefix": "/m", "methods": ["GET", "HEAD"]}),
        json!({"prefix": "/", "headers": [{"name": "x-env", "exact": "canary"}]}),
        json!({"prefix": "/", "headers": [{"name": "authorization", "prefix": "Bearer "}]}),
        json!({"prefix": "/", "headers": [{"name": "x-version", "regex": "v[0-9]+"}]}),
        json!({"prefix": "/", "headers": [{"name": "x-debug", "present": true}]}),
        json!({"prefix": "/", "headers": [{"name": "x-debug", "present": true, "invert": true}]}),
        json!({"prefix": "/", "headers": [{"name": "x-env", "exact": "prod", "invert": true}]}),
        json!({"prefix": "/search", "queryParams": [{"name": "version", "exact": "2"}]}),
        json!({"prefix": "/search", "queryParams": [{"name": "id", "regex": "[0-9]{1,8}"}]}),
        json!({"prefix": "/search", "queryParams": [{"name": "preview", "present": true}]}),
        json!({
            "regex": "/api/[a-z]+",
            "methods": ["PUT"],
            "headers": [{"name": "x-a", "exact": "1"}, {"name": "x-b", "prefix": "t"}],
            "queryParams": [{"name": "q", "present": true}, {"name": "r", "exact": "s"}]
        }),
    ]
}

/// The matchers a route match holds, as near misses name them.
fn matchers_of(route_match: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if route_match["prefix"] != json!("/") {
        names.push("path".to_owned());
    }
    if route_match.get("methods").is_some() {
        names.push("method".to_owned());
    }
    for header in route_match["headers"].as_array().into_iter().flatten() {
        names.push(format!("header {}", header["name"].as_str().unwrap()));
    }
    for parameter in route_match["queryParams"].as_array().into_iter().flatten() {
        names.push(format!("query {}", parameter["name"].as_str().unwrap()));
    }
    names
}

#[test]
fn the_witness_fits_and_each_near_miss_fails_at_the_matcher_it_breaks() {
    for route_match in matches() {
        let objects: Vec<VirtualHostObject> = serde_json::from_value(json!([{
            "namespace": "default", "name": "w",
            "spec": {"hosts": ["*.example.com"], "routes": [{"match": route_match, "backend": {"service": "s"}}]}
        }]))
        .unwrap();
        let snapshot = project(&objects, &ProjectionConfig::default()).unwrap();
        let config = snapshot.route_configuration().unwrap();
        let route = &config.virtual_hosts[0].routes[0];
        let found = witnesses("*.example.com", route);
        assert!(!found.is_empty(), "{route_match}: no witness");
        assert_eq!(found[0].breaks, None, "{route_match}");
        for witness in &found {
            let explanation = explain(&snapshot, &objects, &witness.request);
            let expected = match &witness.breaks {
                None => RouteResult::Matched,
                Some(matcher) => match &explanation.routes[..] {
                    [step] => match &step.result {
                        RouteResult::Failed { matcher: failed, why } => {
                            assert_eq!(failed, matcher, "{route_match} {}", witness.request);
                            RouteResult::Failed {
                                matcher: matcher.clone(),
                                why: why.clone(),
                            }
                        }
                        RouteResult::Matched | RouteResult::NotTried => {
                            panic!("{route_match}: {} matched", witness.request)
                        }
                    },
                    steps => panic!("{route_match}: {steps:?}"),
                },
            };
            assert_eq!(
                explanation.routes.iter().map(|s| &s.result).collect::<Vec<_>>(),
                [&expected],
                "{route_match}: {}",
                witness.request
            );
        }
        let broken: Vec<String> = found.iter().filter_map(|w| w.breaks.clone()).collect();
        assert_eq!(
            broken,
            matchers_of(&route_match),
            "{route_match}: a matcher with no near miss"
        );
    }
}

#[test]
fn a_regex_witness_is_a_shortest_string_of_safe_bytes() {
    assert_eq!(shortest("/v[0-9]+/x", Charset::Path).as_deref(), Some("/v0/x"));
    assert_eq!(shortest("/(abc|d)*e?", Charset::Path).as_deref(), Some("/"));
    assert_eq!(shortest("/[./]x", Charset::Path), None, "only bytes the edge rewrites");
    assert_eq!(shortest("^/a$", Charset::Path).as_deref(), Some("/a"));
    assert_eq!(shortest("[&=]", Charset::Query), None);
}

#[test]
fn the_same_route_gives_the_same_requests() {
    let objects: Vec<VirtualHostObject> = serde_json::from_value(json!([{
        "namespace": "default", "name": "w",
        "spec": {"hosts": ["a.example.com"], "routes": [{"match": matches()[17], "backend": {"service": "s"}}]}
    }]))
    .unwrap();
    let snapshot = project(&objects, &ProjectionConfig::default()).unwrap();
    let route = &snapshot.route_configuration().unwrap().virtual_hosts[0].routes[0];
    let first = requests("a.example.com", route);
    assert_eq!(first, requests("a.example.com", route));
    assert_eq!(first[0].to_string(), "PUT http://a.example.com/api/a?q=1&r=s");
}

#[test]
fn a_path_witness_starts_with_a_slash() {
    // Measured: Envoy answers 400 to a request line whose path has no `/`.
    assert_eq!(shortest("[a-z]{3}", Charset::Path), None);
    assert_eq!(shortest(r"\D{1,}", Charset::Path).as_deref(), Some("/a"));
}
