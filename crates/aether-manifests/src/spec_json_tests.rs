//! `objects::decode_spec_json` (a spec's JSON text, decoded straight when
//! everything in it is known) gives what `decode_spec_reading` gives for
//! the same spec as a tree: the same spec, problems and fields set aside,
//! read tolerantly and strictly.

use serde_json::{Value, json};

use crate::Reading;
use crate::objects::{decode_spec_json, decode_spec_reading};

fn base() -> Value {
    json!({
        "hosts": ["api.example.com", "*.example.org"],
        "routes": [
            {"match": {"prefix": "/api", "methods": ["GET", "POST"], "headers": [{"name": "x-v", "exact": "1"}]},
             "backend": {"service": "svc-api", "port": 8080},
             "retries": {"attempts": 2, "retryOn": ["5xx"]}},
            {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health", "port": 8081}},
            {"match": {"regex": "/v[0-9]+/.*"}, "redirect": {"scheme": "https", "statusCode": 301}}
        ],
        "tls": {"secretName": "bench-tls", "provider": "KUBERNETES"},
        "routeOrder": "LISTED"
    })
}

/// Both decodings of `text` agree, for both readings.
fn same(text: &str) {
    let tree: Value = serde_json::from_str(text).unwrap();
    for reading in [Reading::Tolerant, Reading::Strict] {
        assert_eq!(
            decode_spec_json(text, reading),
            decode_spec_reading(Some(&tree), reading),
            "{reading:?} {text}"
        );
    }
}

/// Every place in `value`, as a path of keys and indexes.
fn places(value: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                at.push(json!(name));
                places(field, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                at.push(json!(index));
                places(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(value: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(value, |value, step| match step {
        Value::String(name) => &mut value[name.as_str()],
        step => &mut value[step.as_u64().unwrap() as usize],
    })
}

#[test]
fn a_valid_spec_decodes_alike() {
    // ... and straight from the text: everything in it is known, and it decodes.
    let text = base().to_string();
    assert!(aether_api::tolerant::all_known(&text, "spec"));
    assert!(serde_json::from_str::<aether_api::config::v1::VirtualHostSpec>(&text).is_ok());
    same(&base().to_string());
    same(&serde_json::to_string_pretty(&base()).unwrap());
}

#[test]
fn every_value_replaced_decodes_alike() {
    let mut all = Vec::new();
    places(&base(), &mut Vec::new(), &mut all);
    let replacements = [
        json!(null),
        json!("x"),
        json!(""),
        json!(-1),
        json!(0),
        json!(8080.0),
        json!(70000),
        json!(true),
        json!([]),
        json!(["x"]),
        json!({}),
        json!({"zz": 1}),
        json!("UNSPECIFIED"),
        json!("SECRET_PROVIDER_UNSPECIFIED"),
        json!("SECRET_PROVIDER_KUBERNETES"),
        json!("ROUTE_ORDER_SPECIFICITY"),
        json!("VAULT"),
        json!("8080"),
    ];
    for path in &all {
        for replacement in &replacements {
            let mut spec = base();
            *at_mut(&mut spec, path) = replacement.clone();
            same(&spec.to_string());
        }
    }
}

#[test]
fn an_unknown_field_anywhere_decodes_alike() {
    let mut all = Vec::new();
    places(&base(), &mut Vec::new(), &mut all);
    for path in &all {
        for (name, value) in [("idleTimeout", json!("15s")), ("example.com/weight", json!({"a": [1]}))] {
            let mut spec = base();
            if let Value::Object(fields) = at_mut(&mut spec, path) {
                fields.insert(name.into(), value);
                same(&spec.to_string());
            }
        }
    }
}

#[test]
fn texts_a_tree_cannot_hold_decode_alike() {
    for text in [
        // A field given twice: a tree keeps the last.
        r#"{"hosts": ["a.example.com"], "hosts": ["b.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]}"#,
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web", "port": 1, "port": 2}}]}"#,
        r#"{"hosts": ["a.example.com"], "zz": 1, "zz": 2, "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]}"#,
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}], "tls": {"secretName": "t", "provider": "VAULT", "provider": "KUBERNETES"}}"#,
        // Escapes in names and values.
        r#"{"ho\u0073ts": ["a.example.com"], "routes": [{"match": {"prefix": "/\u00e9"}, "backend": {"service": "w\"eb"}}]}"#,
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}], "tls": {"secretName": "t", "provider": "KUBERN\u0045TES"}}"#,
        // Numbers written otherwise.
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web", "port": 8.08e3}}]}"#,
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web", "port": -0}}]}"#,
        r#"{"hosts": ["a.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web", "port": 18446744073709551616}}]}"#,
        // Not a mapping at all.
        "null",
        "[]",
        "\"spec\"",
        "7",
        "{}",
    ] {
        same(text);
    }
}

#[test]
fn text_that_is_not_json_is_a_problem_not_a_panic() {
    let (spec, problems, set_aside) = decode_spec_json("{\"hosts\": [", Reading::Tolerant);
    assert_eq!(spec, Default::default());
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].field_path, "spec");
    assert!(problems[0].message.starts_with("malformed JSON: "), "{problems:?}");
    assert!(set_aside.is_empty());
}
