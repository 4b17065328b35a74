//! The admission target: the webhook's handler on an HTTP request body.

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;

use crate::Outcome;

/// The hosts already owned when the admission target runs, by
/// `default/owner`: one exact host and one wildcard, so that conflicts and
/// overlaps are reachable.
pub const OWNED_HOSTS: &[&str] = &["api.example.com", "*.example.com"];

/// The webhook's handler from HTTP request body to response body, as the
/// server calls it for `POST /validate-virtualhost` (no network): either a
/// well-formed AdmissionReview answering the request's uid, or a clean 400.
pub fn admission_review(data: &[u8]) -> Outcome {
    use aether_webhook::admission::{Decision, REVIEW_API_VERSION, REVIEW_KIND, review};
    use aether_webhook::index::{HostIndex, ObjectKey};
    use std::sync::LazyLock;

    static INDEX: LazyLock<HostIndex> = LazyLock::new(|| {
        let index = HostIndex::new();
        index.upsert(
            ObjectKey::new("default", "owner"),
            OWNED_HOSTS.iter().map(|h| (*h).to_owned()).collect(),
        );
        index
    });
    let (json, decision) = match review(data, &INDEX) {
        Ok(answer) => answer,
        Err(bad) => {
            assert!(!bad.0.is_empty(), "a 400 says why");
            return Outcome::Rejected;
        }
    };
    // The request as the handler read it. (An answered body is UTF-8 throughout:
    // regressions/admission_review/ keeps the body with invalid UTF-8 in an
    // unknown field that was once answered; it is a 400 now.)
    assert!(std::str::from_utf8(data).is_ok(), "an answered body is UTF-8");
    let request = aether_webhook::admission::parse(data).expect("an answered body parses");
    let answer: serde_json::Value = serde_json::from_slice(&json).expect("the answer is JSON");
    assert_eq!(answer["apiVersion"], REVIEW_API_VERSION, "{answer}");
    assert_eq!(answer["kind"], REVIEW_KIND, "{answer}");
    let response = &answer["response"];
    assert_eq!(response["uid"], request.uid.as_str(), "the answer names the request");
    let allowed = response["allowed"].as_bool().expect("allowed is a boolean");
    assert_eq!(
        allowed,
        matches!(decision, Decision::Allowed | Decision::AllowedWithWarnings),
        "{decision:?} but {answer}"
    );
    if !allowed {
        let message = response["status"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "a denial says why: {answer}");
    }
    // The spec as the handler reads it: tolerantly, fields this build does
    // not know set aside (a newer writer's), so a spec with one still
    // decodes and is judged.
    let spec = request.object.as_ref().and_then(|o| o.data.get("spec"));
    let spec: Option<VirtualHostSpec> =
        spec.and_then(|spec| aether_api::tolerant::spec(spec).ok().map(|read| read.value));
    match decision {
        // Invalid: a spec that breaks a rule, one with a value that does not
        // decode (denied naming it, as the API server's schema would), or a
        // valid one with a regular expression the edge's RE2 refuses (denied
        // naming each such field, with the `re2` rule).
        Decision::DeniedInvalid => {
            if let Some(spec) = spec
                && spec.validate().is_ok()
            {
                let refused = aether_edge_limits::regex_problems(&spec);
                let message = response["status"]["message"].as_str().unwrap_or_default();
                // A valid spec is denied for a regex the edge refuses, or
                // for the object's name or namespace (metadata).
                assert!(
                    !refused.is_empty() || message.contains("- metadata."),
                    "denied as invalid, yet valid: {answer}"
                );
                for problem in &refused {
                    assert!(
                        message.contains(&format!("{}: ", problem.field_path)),
                        "the denial does not name {}: {answer}",
                        problem.field_path
                    );
                }
            }
        }
        Decision::DeniedConflict => {
            let spec = spec.expect("a spec judged in conflict was read");
            assert!(spec.validate().is_ok(), "a conflict is judged after validation");
            assert!(
                spec.hosts.iter().any(|h| OWNED_HOSTS.contains(&h.as_str())),
                "a conflict without an owned host: {answer}"
            );
        }
        // Admitted: valid, and every regular expression one the edge's
        // Envoy compiles (admitted, a refused one would lose its route).
        Decision::Allowed | Decision::AllowedWithWarnings => {
            let spec = spec.expect("an admitted spec was read");
            assert!(spec.validate().is_ok(), "admitted, yet invalid: {answer}");
            assert!(
                aether_edge_limits::regex_problems(&spec).is_empty(),
                "admitted with a regular expression the edge refuses: {answer}"
            );
        }
        _ => {}
    }
    Outcome::Decoded
}

/// A CREATE AdmissionReview carrying `object`, as the API server sends it.
pub(crate) fn admission_review_of(object: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "fuzz"},
            "object": object,
            "dryRun": false,
        }
    })
}
