//! Bodies built to make the review's work or answer grow: the answer is
//! capped and names what it leaves out, and the work kept is counted, not
//! timed.

use aether_api::validate::{MAX_PROBLEMS, RULE_MORE, more_count};
use aether_webhook::admission::{self, Decision};
use aether_webhook::index::HostIndex;

/// A CREATE review of a VirtualHost whose routes are `route` `k` times.
fn review_of_routes(route: &str, k: usize) -> Vec<u8> {
    let routes = vec![route; k].join(",");
    format!(
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{{"group":"config.aether.io","version":"v1","kind":"VirtualHost"}},"resource":{{"group":"config.aether.io","version":"v1","resource":"virtualhosts"}},"name":"a","namespace":"n","operation":"CREATE","userInfo":{{}},"object":{{"apiVersion":"config.aether.io/v1","kind":"VirtualHost","metadata":{{"name":"a","namespace":"n"}},"spec":{{"hosts":["a.example.com"],"routes":[{routes}]}}}}}}}}"#
    )
    .into_bytes()
}

fn message(body: &[u8]) -> (String, Decision, usize) {
    let (json, decision) = admission::review(body, &HostIndex::new()).unwrap();
    let review: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let message = review["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (message, decision, json.len())
}

#[test]
fn many_empty_routes_get_a_capped_answer_naming_how_many_more() {
    for k in [1_000, 20_000] {
        let (message, decision, size) = message(&review_of_routes("{}", k));
        assert_eq!(decision, Decision::DeniedInvalid);
        // `spec.routes` above four times its 128 items, read only to
        // them, then two violations per route read (its match and its
        // action).
        assert!(
            message.starts_with(&format!(
                "VirtualHost is invalid: 257 validation errors:\n  - spec.routes: must contain no more than \
                 128 item(s) (found {k}; only the first 128 were read) [repeated.max_items]"
            )),
            "{}",
            &message[..300]
        );
        assert_eq!(message.lines().count(), 1 + MAX_PROBLEMS + 1, "k={k}");
        assert!(
            message.ends_with(&format!("\n  - and {} more", 257 - MAX_PROBLEMS)),
            "k={k}"
        );
        // The same size whatever k: the first 100 lines and the count.
        assert!(size < 16 * 1024, "k={k}: {size} bytes");
    }
    // Within the schema's 128 routes, the violations beyond the first 100
    // are counted.
    let (message, _, _) = message(&review_of_routes("{}", 128));
    assert!(
        message.starts_with("VirtualHost is invalid: 256 validation errors:"),
        "{}",
        &message[..100]
    );
    assert!(message.ends_with("\n  - and 156 more"));
}

#[test]
fn the_problems_kept_are_capped_with_the_rest_counted() {
    let object = aether_api::object::VirtualHostObject::from_value(
        serde_json::json!({
            "apiVersion": "config.aether.io/v1", "kind": "VirtualHost", "metadata": {"name": "a", "namespace": "n"},
            "spec": {"hosts": ["a.example.com"], "routes": vec![serde_json::json!({}); 128]},
        }),
        aether_api::object::Reading::Tolerant,
    )
    .unwrap();
    let problems = object.problems(aether_api::object::Judged::Admitted);
    assert_eq!(problems.len(), MAX_PROBLEMS + 1);
    let last = problems.last().unwrap();
    assert_eq!((last.rule_id, more_count(last)), (RULE_MORE, 256 - MAX_PROBLEMS));
}

#[test]
fn many_unknown_fields_in_routes_are_read_in_linear_work_and_warned_of_in_a_capped_list() {
    // Each route valid but for a field from a newer API version: set
    // aside, and warned of. Quadratic in the routes before (20,000 took
    // 23 s in a debug build).
    let route = r#"{"match":{"prefix":"/"},"backend":{"service":"web"},"idleTimeout":"1s"}"#;
    let (_, decision, size) = message(&review_of_routes(route, 15_000));
    // Above 128 routes: invalid all the same.
    assert_eq!(decision, Decision::DeniedInvalid);
    assert!(size < 16 * 1024, "{size} bytes");
    let (json, decision) = admission::review(&review_of_routes(route, 128), &HostIndex::new()).unwrap();
    assert_eq!(decision, Decision::AllowedWithWarnings);
    let review: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let warnings = review["response"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), MAX_PROBLEMS + 1);
    assert_eq!(warnings.last().unwrap(), "and 28 more unknown fields not judged");
}

#[test]
fn a_body_of_more_nodes_than_the_budget_is_refused_before_it_is_read() {
    // 3.5 MiB (the body limit) of empty routes: 1.2 million nodes.
    let k = (3 * 1024 * 1024 + 512 * 1024 - 600) / 3;
    let body = review_of_routes("{}", k);
    assert!(body.len() <= 3 * 1024 * 1024 + 512 * 1024);
    let error = admission::review(&body, &HostIndex::new()).unwrap_err();
    assert_eq!(
        error.0,
        format!("the body holds more than {} JSON nodes", admission::MAX_JSON_NODES)
    );
    // Within the budget, read and judged.
    let (_, decision, _) = message(&review_of_routes("{}", admission::MAX_JSON_NODES - 100));
    assert_eq!(decision, Decision::DeniedInvalid);
}
