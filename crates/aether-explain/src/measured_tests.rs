//! What the real Envoy was measured doing where the model first disagreed
//! with it (the controller's `tests/envoy/explain.rs` found each).

use aether_projection::{ProjectionConfig, Snapshot, VirtualHostObject, project};
use serde_json::json;

use crate::{Outcome, Request, explain};

/// One object serving `a.example.com` with `routes`.
fn edge(routes: serde_json::Value) -> (Snapshot, Vec<VirtualHostObject>) {
    let objects: Vec<VirtualHostObject> = serde_json::from_value(json!([{
        "namespace": "default", "name": "a",
        "spec": {"hosts": ["a.example.com"], "routes": routes}
    }]))
    .unwrap();
    (project(&objects, &ProjectionConfig::default()).unwrap(), objects)
}

fn outcome(edge: &(Snapshot, Vec<VirtualHostObject>), line: &str, headers: &[&str]) -> Outcome {
    explain(&edge.0, &edge.1, &Request::parse(line, headers).unwrap()).outcome
}

#[test]
fn a_connect_request_is_refused_before_routing_even_when_a_route_asks_for_it() {
    let edge = edge(json!([{"match": {"prefix": "/", "methods": ["CONNECT"]}, "backend": {"service": "s"}}]));
    assert_eq!(
        outcome(&edge, "CONNECT http://a.example.com/x", &[]).status(),
        Some(400)
    );
}

#[test]
fn a_change_to_the_server_response_header_never_shows_and_is_noted() {
    let edge = edge(json!([{
        "match": {"prefix": "/"}, "backend": {"service": "s"},
        "responseHeaders": {"remove": ["server"], "set": [{"name": "x-a", "value": "1"}]}
    }]));
    let request = Request::parse("GET http://a.example.com/", &[] as &[&str]).unwrap();
    let explanation = explain(&edge.0, &edge.1, &request);
    let Outcome::Forward { response_headers, .. } = &explanation.outcome else {
        panic!("{:?}", explanation.outcome)
    };
    let names: Vec<&str> = response_headers.iter().map(crate::HeaderChange::name).collect();
    assert_eq!(names, ["x-a"]);
    assert!(explanation.notes.iter().any(|note| note.contains("server: envoy")));
}

#[test]
fn characters_envoy_escapes_in_a_path_are_routed_escaped_and_those_it_refuses_are_400() {
    // Case 69 of a 300-set run: `/aaaa}}||` fitted a regex route as sent;
    // Envoy routes it as `/aaaa%7D%7D%7C%7C` and answered 404.
    let edge = edge(json!([
        {"match": {"regex": "/a[}|]+"}, "backend": {"service": "raw"}},
        {"match": {"exact": "/a%7D%7C"}, "backend": {"service": "escaped"}}
    ]));
    let Outcome::Forward { clusters, path, .. } = outcome(&edge, "GET http://a.example.com/a}|?q={", &[]) else {
        panic!("not forwarded");
    };
    assert_eq!(
        (clusters[0].cluster.as_str(), path.as_str()),
        ("escaped", "/a%7D%7C?q={")
    );
    for refused in ["/a<b", "/a>b", "/a\"b", "/ab?q=<", "/a\u{e9}"] {
        let line = format!("GET http://a.example.com{refused}");
        assert_eq!(outcome(&edge, &line, &[]).status(), Some(400), "{refused}");
    }
}

#[test]
fn a_header_sent_twice_or_a_stray_percent_is_no_prediction() {
    let edge = edge(
        json!([{"match": {"prefix": "/", "headers": [{"name": "x-h", "exact": "a"}]}, "backend": {"service": "s"}}]),
    );
    let twice = outcome(&edge, "GET http://a.example.com/", &["x-h: a", "x-h: b"]);
    assert!(matches!(twice, Outcome::Unpredictable { .. }), "{twice:?}");
    let stray = outcome(&edge, "GET http://a.example.com/%%44f", &["x-h: a"]);
    assert!(matches!(stray, Outcome::Unpredictable { .. }), "{stray:?}");
    assert!(matches!(
        outcome(&edge, "GET http://a.example.com/%44", &["x-h: a"]),
        Outcome::Forward { .. }
    ));
}
