//! The borrowed reading of a review (`admission::read`, the spec decoded
//! from its text) gives every body the answer kube's types gave it
//! (`admission::parse`, the spec decoded from a JSON tree): the same
//! response bytes and decision, or the same 400 message, on valid,
//! invalid, unknown-field, malformed and odd bodies alike.

use std::path::PathBuf;

use aether_webhook::admission::{self, BadRequest, Decision, Request, Spec};
use aether_webhook::index::{HostIndex, ObjectKey};
use kube::core::admission::AdmissionResponse;
use serde_json::{Value, json};

/// The answer as kube's types read the body, judged by the same `decide`.
fn reference(body: &[u8], index: &HostIndex) -> Result<(Vec<u8>, Decision), BadRequest> {
    let request = admission::parse(body)?;
    let (response, decision) = admission::decide(&Request::from(request), index);
    Ok((serde_json::to_vec(&response.into_review()).unwrap(), decision))
}

fn index() -> HostIndex {
    let index = HostIndex::new();
    index.upsert(
        ObjectKey::new("other", "owner"),
        vec!["taken.example.com".to_owned(), "*.wild.example.com".to_owned()],
    );
    index
}

/// Both readings answer `body` alike; true when the borrowed one read it.
fn same(body: &[u8], index: &HostIndex) -> bool {
    let answer = admission::review(body, index);
    assert_eq!(answer, reference(body, index), "{}", String::from_utf8_lossy(body));
    // The borrowed reading alone, as `read` calls it: on bodies that pass
    // the depth and UTF-8 checks.
    let Ok(kube) = admission::parse(body) else {
        return false;
    };
    let borrowed = aether_webhook::request::read_borrowed(std::str::from_utf8(body).unwrap());
    if let Some(request) = &borrowed {
        same_request(request, &Request::from(kube));
    }
    borrowed.is_some()
}

/// What the judgement reads, field by field.
fn same_request(borrowed: &Request<'_>, kube: &Request<'_>) {
    assert_eq!(borrowed.uid, kube.uid);
    assert_eq!(borrowed.kind, kube.kind);
    assert_eq!(borrowed.sub_resource, kube.sub_resource);
    assert_eq!(borrowed.name, kube.name);
    assert_eq!(borrowed.namespace, kube.namespace);
    assert_eq!(borrowed.operation, kube.operation);
    let (Some(a), Some(b)) = (&borrowed.object, &kube.object) else {
        assert_eq!(borrowed.object.is_some(), kube.object.is_some());
        return;
    };
    assert_eq!((&a.name, &a.namespace), (&b.name, &b.namespace));
    let tree = |spec: &Spec<'_>| match spec {
        Spec::Text(text) => serde_json::from_str::<Value>(text.get()).unwrap(),
        Spec::Tree(tree) => tree.clone(),
    };
    assert_eq!(a.spec.as_ref().map(tree), b.spec.as_ref().map(tree));
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
fn reviews_as_the_api_server_sends_them_are_read_borrowed_and_answered_alike() {
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
        assert!(
            same(&body, &index),
            "not read borrowed: {}",
            String::from_utf8_lossy(&body)
        );
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

/// Every place of the review replaced by a value of each JSON type, and
/// every mapping given an unknown field.
#[test]
fn every_part_replaced_is_answered_alike() {
    fn places(value: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        out.push(at.clone());
        match value {
            Value::Object(fields) => fields.iter().for_each(|(name, field)| {
                at.push(json!(name));
                places(field, at, out);
                at.pop();
            }),
            Value::Array(items) => items.iter().enumerate().for_each(|(index, item)| {
                at.push(json!(index));
                places(item, at, out);
                at.pop();
            }),
            _ => {}
        }
    }
    fn at_mut<'a>(value: &'a mut Value, path: &[Value]) -> &'a mut Value {
        path.iter().fold(value, |value, step| match step {
            Value::String(name) => &mut value[name.as_str()],
            step => &mut value[step.as_u64().unwrap() as usize],
        })
    }
    let index = index();
    let base = body(spec());
    let mut all = Vec::new();
    places(&base, &mut Vec::new(), &mut all);
    let replacements = [
        json!(null),
        json!("x"),
        json!(7),
        json!(-1.5),
        json!(true),
        json!([]),
        json!(["x", 1]),
        json!({}),
        json!({"zz": [1]}),
        json!("UPDATE"),
        json!("status"),
        json!("admission.k8s.io/v1beta1"),
    ];
    for path in &all {
        for replacement in &replacements {
            let mut review = base.clone();
            *at_mut(&mut review, path) = replacement.clone();
            same(&bytes(&review), &index);
        }
        let mut review = base.clone();
        if let Value::Object(fields) = at_mut(&mut review, path) {
            fields.insert("zz-unknown".into(), json!({"a": [null]}));
            same(&bytes(&review), &index);
        }
        let mut review = base.clone();
        if let Value::Object(fields) = at_mut(&mut review, path)
            && let Some(name) = fields.keys().next().cloned()
        {
            fields.remove(&name);
            same(&bytes(&review), &index);
        }
    }
}

#[test]
fn bodies_a_tree_cannot_hold_are_answered_alike() {
    let index = index();
    let body = String::from_utf8(bytes(&body(spec()))).unwrap();
    let mut texts: Vec<String> = Vec::new();
    // A field given twice, at each level.
    for field in [
        "\"apiVersion\":",
        "\"request\":",
        "\"uid\":",
        "\"userInfo\":",
        "\"object\":",
        "\"metadata\":",
        "\"spec\":",
        "\"name\":",
        "\"hosts\":",
        "\"provider\":",
    ] {
        let at = body.find(field).unwrap();
        let end = at + field.len();
        // `"field": VALUE,` copied in front of itself: value up to its comma
        // or closing bracket at the same depth.
        let mut depth = 0i32;
        let mut in_string = false;
        let mut escaped = false;
        let mut stop = end;
        for (offset, c) in body[end..].char_indices() {
            match (in_string, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (true, false, '"') => in_string = false,
                (true, ..) => {}
                (false, _, '"') => in_string = true,
                (false, _, '{' | '[') => depth += 1,
                (false, _, '}' | ']') if depth == 0 => {
                    stop = end + offset;
                    break;
                }
                (false, _, '}' | ']') => depth -= 1,
                (false, _, ',') if depth == 0 => {
                    stop = end + offset;
                    break;
                }
                _ => {}
            }
        }
        texts.push(format!("{}{},{}", &body[..at], &body[at..stop], &body[at..]));
    }
    // Lists where mappings belong, escapes, a response, whitespace.
    texts.extend([
        format!("[{body}]"),
        body.replacen("\"uid\":\"705ab4f5", "\"uid\":\"\\u0037\\\"05ab4f5", 1),
        body.replacen("\"name\":\"api\"", "\"name\":\"a\\u0070i\"", 1),
        body.replacen("\"spec\":", "\"sp\\u0065c\":", 1),
        // Metadata fields given twice (the last kept), escaped, of the wrong type.
        body.replacen("\"metadata\":{", "\"metadata\":{\"name\":\"first\",\"namespace\":null,", 1),
        body.replacen("\"metadata\":{", "\"metadata\":{\"labels\":{\"a\":1},", 1),
        body.replacen("\"metadata\":{", "\"metadata\":{\"na\\u006de\":\"escaped\",", 1),
        body.replacen("\"metadata\":{", "\"metadata\":{\"labels\":{\"a\":\"b\",\"a\":\"c\"},", 1),
        body.replacen("\"userInfo\":{", "\"userInfo\":{\"username\":7,", 1),
        body.replacen("\"userInfo\":{", "\"userInfo\":{\"extra\":{\"k\":[\"a\"],\"k\":null},", 1),
        body.replacen("{\"apiVersion\":\"admission", "{\"response\":{\"uid\":\"r\",\"allowed\":true},\"apiVersion\":\"admission", 1),
        body.replacen("{\"apiVersion\":\"admission", "{\"response\":{\"uid\":7},\"apiVersion\":\"admission", 1),
        body.replace(',', " ,\n\t"),
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":["u",{"group":"","version":"v1","kind":"Pod"}]}"#.to_owned(),
        // kube reads a request (no flattened fields) from a list of its
        // fields in order, and an object (flattened fields) from a mapping only.
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":["u",{"group":"config.aether.io","version":"v1","kind":"VirtualHost"},{"group":"config.aether.io","version":"v1","resource":"virtualhosts"},null,null,null,null,"api","shop","CREATE",{},{"metadata":{"name":"api"},"spec":{"hosts":["a.example.com"],"routes":[{"match":{"prefix":"/"},"backend":{"service":"web"}}]}},null,false,null]}"#.to_owned(),
        {
            let mut review = self::body(spec());
            let object = review["request"]["object"].take();
            review["request"]["object"] = json!([object["metadata"], object["spec"]]);
            String::from_utf8(bytes(&review)).unwrap()
        },
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_owned(),
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}"#.to_owned(),
        "{}".to_owned(),
        "null".to_owned(),
        "".to_owned(),
    ]);
    for text in &texts {
        same(text.as_bytes(), &index);
    }
    // Every prefix of the body: malformed JSON.
    for end in (0..body.len()).step_by(7) {
        same(&body.as_bytes()[..end], &index);
    }
    // Not UTF-8, nested too deep.
    same(b"{\"apiVersion\":\"admission.k8s.io/v1\",\"x\":\"\xff\"}", &index);
    same("[".repeat(100).as_bytes(), &index);
}

#[test]
fn the_fuzz_corpus_is_answered_alike() {
    let index = index();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut read = 0;
    for dir in ["corpus/admission_review", "regressions/admission_review"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let body = std::fs::read(entry.unwrap().path()).unwrap();
            same(&body, &index);
            read += 1;
        }
    }
    assert!(read > 10, "{read} bodies");
}

#[test]
fn the_allowed_response_is_what_kube_makes_of_the_request() {
    let body = bytes(&body(spec()));
    let kube = admission::parse(&body).unwrap();
    let expected = AdmissionResponse::from(&kube);
    assert_eq!(aether_webhook::request::response_to(&Request::from(kube)), expected);
    let borrowed = admission::read(&body).unwrap();
    assert_eq!(aether_webhook::request::response_to(&borrowed), expected);
}

#[path = "../benches/common/mod.rs"]
#[allow(dead_code)]
mod common;

#[test]
fn the_benchmark_bodies_are_read_borrowed_and_answered_alike() {
    let index = common::index();
    for k in [0, 7, 63] {
        for body in common::mix(k) {
            assert!(same(&body, &index), "{}", String::from_utf8_lossy(&body));
        }
    }
}

#[test]
fn an_identity_given_twice_is_refused_by_both_readings() {
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
        assert_eq!(reference(edited.as_bytes(), &index), expected);
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
    // Given once, both read it as ever.
    assert!(admission::review(&bytes(&update), &index).is_ok());
}
