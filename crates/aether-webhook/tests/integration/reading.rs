//! Reviews as the API server sends them, read by kube's types and
//! judged: their decisions, and a body that gives an object's identity
//! twice refused.

use aether_webhook::admission::{self, BadRequest, Decision};
use aether_webhook::index::{HostIndex, ObjectKey};
use serde_json::{Value, json};

fn index() -> HostIndex {
    let index = HostIndex::new();
    index.upsert(
        ObjectKey::new("other", "owner"),
        vec!["taken.example.com".to_owned(), "*.wild.example.com".to_owned()],
    );
    index
}

fn spec() -> Value {
    json!({
        "hosts": ["api.example.com", "x.wild.example.com"],
        "routes": [
            {"match": {"prefix": "/api", "methods": ["GET"]}, "backend": {"service": "svc-api", "port": 8080}},
            {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health", "port": 8081}}
        ],
        "tls": {"secretName": "t", "provider": "KUBERNETES"}
    })
}

/// A review as the API server sends one (userInfo, options, managedFields).
fn body(spec: Value) -> Value {
    // Every field of kube's ObjectMeta.
    let metadata = json!({
        "name": "api", "namespace": "shop", "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app": "api"},
        "annotations": {"note": "n"}, "finalizers": ["f"], "generateName": "api-",
        "deletionGracePeriodSeconds": 30, "deletionTimestamp": "2026-01-02T00:00:00Z",
        "resourceVersion": "7", "selfLink": "/x", "uid": "0c5d",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u1"}],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "config.aether.io/v1",
                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}}}}]
    });
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "requestKind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "requestResource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": "api", "namespace": "shop", "operation": "CREATE",
            "userInfo": {"username": "admin", "uid": "u", "groups": ["system:authenticated"], "extra": {"k": ["v"]}},
            "object": {
                "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
                "metadata": metadata,
                "spec": spec
            },
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl"}
        }
    })
}

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

#[test]
fn reviews_as_the_api_server_sends_them_are_answered() {
    let index = index();
    let mut taken = spec();
    taken["hosts"] = json!(["taken.example.com"]);
    let mut unknown = spec();
    unknown["routes"][0]["idleTimeout"] = json!("15s");
    unknown["mirror"] = json!("svc-shadow");
    let mut new_value = spec();
    new_value["tls"]["provider"] = json!("VAULT");
    let mut unspecified = spec();
    unspecified["tls"]["provider"] = json!("UNSPECIFIED");
    let mut new_member = spec();
    new_member["routes"][0]["match"] = json!({"template": "/users/{id}"});
    let mut wrong_type = spec();
    wrong_type["routes"][0]["backend"]["port"] = json!(-1);
    let mut invalid = spec();
    invalid["hosts"] = json!(["NOT A HOST"]);
    let mut regex = spec();
    regex["routes"][0]["match"] = json!({"regex": "[a-z]{200}"});
    let mut decisions = Vec::new();
    for spec in [
        spec(),
        taken,
        unknown,
        new_value,
        unspecified,
        new_member,
        wrong_type,
        invalid,
        regex,
    ] {
        let body = bytes(&body(spec));
        decisions.push(admission::review(&body, &index).unwrap().1);
    }
    use Decision::*;
    assert_eq!(
        decisions,
        [
            AllowedWithWarnings,
            DeniedConflict,
            AllowedWithWarnings,
            DeniedUnsupported,
            DeniedUnsupported,
            DeniedUnsupported,
            DeniedInvalid,
            DeniedInvalid,
            DeniedInvalid
        ]
    );
}

#[test]
fn an_identity_given_twice_is_refused() {
    let index = index();
    let review = body(spec());
    let text = String::from_utf8(bytes(&review)).unwrap();
    for (edited, field) in [
        (
            text.replacen("\"metadata\":{", "\"metadata\":{\"name\":\"other\",", 1),
            "request.object.metadata.name",
        ),
        (
            text.replacen("\"metadata\":{", "\"metadata\":{\"na\\u006de\":\"other\",", 1),
            "request.object.metadata.name",
        ),
        (
            text.replacen("\"metadata\":{", "\"metadata\":{\"namespace\":null,", 1),
            "request.object.metadata.namespace",
        ),
    ] {
        let expected = Err(BadRequest(format!(
            "{field} is given twice (the API server never sends a field twice)"
        )));
        assert_eq!(admission::review(edited.as_bytes(), &index), expected, "{edited}");
    }
    let mut update = review.clone();
    update["request"]["operation"] = json!("UPDATE");
    update["request"]["oldObject"] = review["request"]["object"].clone();
    let text = String::from_utf8(bytes(&update)).unwrap();
    let at = text.find("\"oldObject\":{\"apiVersion\"").unwrap();
    let edited = format!(
        "{}{}",
        &text[..at],
        text[at..].replacen("\"metadata\":{", "\"metadata\":{\"name\":\"x\",", 1)
    );
    assert_eq!(
        admission::review(edited.as_bytes(), &index).unwrap_err().0,
        "request.oldObject.metadata.name is given twice (the API server never sends a field twice)"
    );
    // Given once, it is read as ever.
    assert!(admission::review(&bytes(&update), &index).is_ok());
}
