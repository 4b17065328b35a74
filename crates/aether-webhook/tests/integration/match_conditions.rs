//! Which writes the API server sends this webhook: the generated
//! ValidatingWebhookConfiguration's `matchConditions`, read from the
//! checked-in file and evaluated with kube-cel as the API server evaluates
//! them (every condition true: the request is sent).

use kube_cel::{AdmissionRequest, VapEvaluator, VapExpression};
use serde_json::{Value, json};

/// The conditions of the generated configuration's one webhook.
fn conditions() -> Vec<VapExpression> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../generated/deploy/webhook/validating-webhook-configuration.yaml");
    let configuration: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let conditions = configuration["webhooks"][0]["matchConditions"].as_array().unwrap();
    assert!(!conditions.is_empty());
    conditions
        .iter()
        .map(|c| VapExpression {
            expression: c["expression"].as_str().unwrap().to_owned(),
            message: None,
            message_expression: None,
        })
        .collect()
}

/// Whether the API server sends `operation` of `object` (over `old`) to the webhook.
fn sent(operation: &str, object: &Value, old: Option<&Value>) -> bool {
    let mut evaluator = VapEvaluator::builder()
        .object(object.clone())
        .request(AdmissionRequest {
            operation: operation.into(),
            name: "api".into(),
            namespace: "shop".into(),
            ..Default::default()
        });
    if let Some(old) = old {
        evaluator = evaluator.old_object(old.clone());
    }
    let results = evaluator.build().evaluate(&conditions());
    // An error would make the API server apply failurePolicy (Fail): a
    // condition that does not evaluate is a bug here, not a skip.
    for result in &results {
        assert!(
            result.passed
                || result
                    .message
                    .as_deref()
                    .is_some_and(|m| m.contains("evaluated to false")),
            "{result:?}"
        );
    }
    results.iter().all(|r| r.passed)
}

fn object() -> Value {
    json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"name": "api", "namespace": "shop", "generation": 1, "labels": {"team": "a"}},
        "spec": {
            "hosts": ["api.example.com"],
            "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]
        },
        "status": {"observedGeneration": 1}
    })
}

#[test]
fn every_spec_change_is_sent_to_the_webhook_and_status_or_metadata_only_updates_are_not() {
    let old = object();

    let mut routes_only = old.clone();
    routes_only["spec"]["routes"][0]["match"] = json!({"regex": "(?:(?:a{2}){501}){0}x"});
    assert!(sent("UPDATE", &routes_only, Some(&old)), "a routes-only update is sent");

    let mut hosts = old.clone();
    hosts["spec"]["hosts"] = json!(["api.example.com", "www.example.com"]);
    assert!(sent("UPDATE", &hosts, Some(&old)), "a hosts update is sent");

    let mut tls = old.clone();
    tls["spec"]["tls"] = json!({"secretName": "api-tls"});
    assert!(sent("UPDATE", &tls, Some(&old)), "a new spec field is sent");

    let mut status_only = old.clone();
    status_only["status"] = json!({"observedGeneration": 2, "conditions": []});
    assert!(
        !sent("UPDATE", &status_only, Some(&old)),
        "a status-only update skips it"
    );

    let mut metadata_only = old.clone();
    metadata_only["metadata"]["labels"]["team"] = json!("b");
    metadata_only["metadata"]["annotations"] = json!({"note": "x"});
    metadata_only["metadata"]["finalizers"] = json!(["example.com/keep"]);
    assert!(
        !sent("UPDATE", &metadata_only, Some(&old)),
        "a metadata-only update skips it"
    );

    assert!(!sent("UPDATE", &old, Some(&old)), "a no-op update skips it");
    assert!(sent("CREATE", &old, None), "a create is sent");
}
