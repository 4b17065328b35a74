//! One review of the largest body a limit allows, timed, for
//! `/usr/bin/time -v` to give its peak memory (docs/benchmarks.md):
//! `cargo run --release -p aether-webhook --example largest_body -- SHAPE`,
//! SHAPE one of `idle` (a one-route body: the idle size), `empty-routes`
//! (3.5 MiB of `{}` routes, the body limit), `budget-routes` (empty routes
//! up to the node budget), `unknown-routes` (routes each with a field
//! from a newer API version, up to the node budget), `unknown-mappings`
//! (one route with a field from a newer API version holding small
//! mappings, up to the node budget).

use std::time::Instant;

use aether_webhook::admission;
use aether_webhook::index::HostIndex;
use aether_webhook::server::Limits;

fn review_of_routes(route: &str, k: usize) -> Vec<u8> {
    let routes = vec![route; k].join(",");
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{{"group":"config.aether.io","version":"v1","kind":"VirtualHost"}},"resource":{{"group":"config.aether.io","version":"v1","resource":"virtualhosts"}},"name":"a","namespace":"n","operation":"CREATE","userInfo":{{}},"object":{{"apiVersion":"config.aether.io/v1","kind":"VirtualHost","metadata":{{"name":"a","namespace":"n"}},"spec":{{"hosts":["a.example.com"],"routes":[{routes}]}}}}}}}}"#
    )
    .into_bytes()
}

fn main() {
    let shape = std::env::args().nth(1).unwrap_or_else(|| "empty-routes".to_owned());
    let route = r#"{"match":{"prefix":"/"},"backend":{"service":"web"}}"#;
    let max_body = Limits::default().max_body_bytes;
    let body = match shape.as_str() {
        "idle" => review_of_routes(route, 1),
        "empty-routes" => review_of_routes("{}", (max_body - 600) / 3),
        "budget-routes" => review_of_routes("{}", admission::MAX_JSON_NODES - 100),
        // Seven nodes a route.
        "unknown-routes" => review_of_routes(
            r#"{"match":{"prefix":"/"},"idleTimeout":"1s"}"#,
            (admission::MAX_JSON_NODES - 100) / 7,
        ),
        // One route whose unknown field holds small mappings (three nodes
        // each, a BTreeMap leaf each: the most memory a node takes).
        "unknown-mappings" => review_of_routes(
            &format!(
                r#"{{"match":{{"prefix":"/"}},"x":[{}]}}"#,
                vec![r#"{"a":1}"#; (admission::MAX_JSON_NODES - 100) / 3].join(",")
            ),
            1,
        ),
        other => panic!("unknown shape {other}"),
    };
    assert!(body.len() <= max_body, "{} bytes", body.len());
    let index = HostIndex::new();
    let started = Instant::now();
    let outcome = admission::review(&body, &index);
    let took = started.elapsed();
    match outcome {
        Ok((json, decision)) => println!(
            "{shape}: body {} bytes, {decision:?}, answer {} bytes, {took:?}",
            body.len(),
            json.len()
        ),
        Err(error) => println!(
            "{shape}: body {} bytes, bad request ({}), {took:?}",
            body.len(),
            error.0
        ),
    }
}
