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
