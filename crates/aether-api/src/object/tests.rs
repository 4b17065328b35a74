//! Decoding objects: identification errors, problems, and the rules they hide.

use super::*;
use crate::config::v1::{API_VERSION, KIND};
use serde_json::json;

fn decode(value: Value) -> Result<VirtualHostObject, DecodeError> {
    VirtualHostObject::from_value(value, Reading::Strict)
}

fn host(spec: Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "api", "namespace": "edge", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": spec,
    })
}

fn spec() -> Value {
    json!({"hosts": ["api.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]})
}

fn error(value: Value) -> (String, String) {
    let e = decode(value).unwrap_err();
    (e.path, e.message)
}

#[test]
fn a_virtual_host_decodes_with_its_metadata() {
    let object = decode(host(spec())).unwrap();
    assert_eq!(object.key().to_string(), "edge/api");
    assert_eq!(object.creation_timestamp, Some("2025-01-01T00:00:00Z".parse().unwrap()));
    assert_eq!(object.spec.hosts, ["api.example.com"]);
    assert_eq!(object.spec.routes[0].backend.as_ref().unwrap().service, "web");
}

/// The problems of the object `value` (which must be identified).
fn problems(value: Value) -> Vec<(String, &'static str, String)> {
    decode(value)
        .unwrap()
        .problems(Judged::Whole)
        .into_iter()
        .map(|p| (p.field_path, p.rule_id, p.message.into_owned()))
        .collect()
}

fn problem(path: &str, rule: &'static str, message: &str) -> (String, &'static str, String) {
    (path.to_owned(), rule, message.to_owned())
}

#[test]
fn a_malformed_creation_timestamp_or_generation_is_a_problem_of_the_object() {
    for (timestamp, expected) in [
        (json!("yesterday"), "must be an RFC 3339 date-time, got \"yesterday\": "),
        (json!(1735689600), "must be an RFC 3339 date-time, got 1735689600"),
    ] {
        let mut value = host(spec());
        value["metadata"]["creationTimestamp"] = timestamp;
        let object = decode(value).unwrap();
        assert_eq!(object.creation_timestamp, None);
        assert_eq!(object.read_problems.len(), 1);
        assert_eq!(
            (
                object.read_problems[0].field_path.as_str(),
                object.read_problems[0].rule_id
            ),
            ("metadata.creationTimestamp", RULE_TYPE)
        );
        assert!(
            object.read_problems[0].message.starts_with(expected),
            "{}",
            object.read_problems[0].message
        );
    }
    let mut value = host(spec());
    value["metadata"]["creationTimestamp"] = Value::Null;
    assert_eq!(decode(value).unwrap().creation_timestamp, None);
}

#[test]
fn generation_is_read_and_must_be_a_non_negative_integer() {
    let mut value = host(spec());
    assert_eq!(decode(value.clone()).unwrap().generation, 0);
    value["metadata"]["generation"] = json!(7);
    assert_eq!(decode(value.clone()).unwrap().generation, 7);
    for bad in [json!(-1), json!("7"), json!(1.5)] {
        value["metadata"]["generation"] = bad.clone();
        assert_eq!(
            problems(value.clone()),
            [problem(
                "metadata.generation",
                RULE_TYPE,
                &format!("must be an integer of at least 0, got {bad}")
            )]
        );
    }
}

#[test]
fn the_namespace_defaults_to_default() {
    let mut value = host(spec());
    value["metadata"] = json!({"name": "api"});
    assert_eq!(decode(value).unwrap().key().to_string(), "default/api");
}

#[test]
fn a_document_that_is_not_a_mapping_says_what_it_is() {
    for (value, found) in [
        (json!("text"), "a string"),
        (json!([1]), "a sequence"),
        (json!(3), "a number"),
    ] {
        assert_eq!(
            error(value),
            (
                String::new(),
                format!("expected a mapping (a Kubernetes object), found {found}")
            )
        );
    }
}

#[test]
fn api_version_and_kind_must_be_this_apis() {
    let mut value = host(spec());
    value["apiVersion"] = json!("v1");
    assert_eq!(
        error(value.clone()),
        (
            "apiVersion".into(),
            r#"expected "config.aether.io/v1", found "v1""#.into()
        )
    );
    value["apiVersion"] = json!(API_VERSION);
    value["kind"] = json!("Gateway");
    assert_eq!(
        error(value.clone()),
        ("kind".into(), r#"expected "VirtualHost", found "Gateway""#.into())
    );
    value.as_object_mut().unwrap().remove("kind");
    assert_eq!(error(value), ("kind".into(), r#"required ("VirtualHost")"#.into()));
}

#[test]
fn a_name_is_required_and_a_missing_spec_is_a_problem() {
    let mut value = host(spec());
    value["metadata"] = json!({"namespace": "edge", "name": ""});
    assert_eq!(error(value), ("metadata.name".into(), "required".into()));
    let mut value = host(spec());
    value.as_object_mut().unwrap().remove("spec");
    assert_eq!(problems(value), [problem("spec", RULE_REQUIRED, "required")]);
}

#[test]
fn values_of_the_wrong_type_are_problems_worded_from_the_crd_schema() {
    let port = |value: Value| {
        let mut bad = spec();
        bad["routes"][0]["backend"]["port"] = value;
        problems(host(bad))
    };
    let range = "must be an integer from 0 to 65535, got";
    for (value, got) in [
        (json!(-1), "-1"),
        (json!(8080.0), "8080.0"),
        (json!(4294967296u64), "4294967296"),
        (json!(true), "true"),
    ] {
        assert_eq!(
            port(value),
            [problem(
                "spec.routes[0].backend.port",
                RULE_TYPE,
                &format!("{range} {got}")
            )]
        );
    }
    // In range for the type, out of the rule's: the validator's rule.
    assert_eq!(port(json!(70000))[0].1, "uint32.lte");

    let mut bad = spec();
    bad["tls"] = json!({"secretName": "s", "provider": "VAULT"});
    assert_eq!(
        problems(host(bad)),
        [problem(
            "spec.tls.provider",
            RULE_ENUM,
            "must be one of KUBERNETES, AWS_SECRETS_MANAGER, got \"VAULT\""
        )]
    );

    let mut bad = spec();
    bad["routes"][0]["backend"]["colour"] = json!("blue");
    assert_eq!(
        problems(host(bad)),
        [problem(
            "spec.routes[0].backend.colour",
            RULE_UNKNOWN_FIELD,
            "unknown field (the fields are port, service)"
        )]
    );

    assert_eq!(
        problems(host(json!("hosts"))),
        [problem("spec", RULE_TYPE, "must be a mapping, got \"hosts\""),]
    );
}

#[test]
fn every_problem_is_found_and_the_rules_they_hide_are_not_reported() {
    let value = host(json!({
        // A list item of the wrong type keeps its place: hosts[2] is still [2].
        "hosts": ["a.example.com", 7, "UPPER.example.com"],
        "routes": [
            {"match": {"prefix": 5}, "backend": {"service": "web", "port": -1}},
            {"match": {"prefix": "/"}, "backend": {"service": "Bad_Name"}}
        ],
    }));
    assert_eq!(
        problems(value),
        [
            problem("spec.hosts[1]", RULE_TYPE, "must be a string, got 7"),
            problem(
                "spec.routes[0].backend.port",
                RULE_TYPE,
                "must be an integer from 0 to 65535, got -1"
            ),
            problem("spec.routes[0].match.prefix", RULE_TYPE, "must be a string, got 5"),
            // The rules the rest breaks; not the stand-in's pattern at
            // hosts[1], nor routes[0].match's now-missing oneof.
            problem(
                "spec.hosts[2]",
                "string.pattern",
                "does not match regex pattern `^(\\*\\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`"
            ),
            problem(
                "spec.routes[1].backend.service",
                "string.pattern",
                "does not match regex pattern `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`"
            ),
        ]
    );
}

#[test]
fn a_status_of_the_wrong_type_is_a_problem_too() {
    let mut value = host(spec());
    value["status"] = json!({"routeCount": "three"});
    assert_eq!(
        problems(value),
        [problem(
            "status.routeCount",
            RULE_TYPE,
            "must be an integer from 0 to 128, got \"three\""
        )]
    );
}
