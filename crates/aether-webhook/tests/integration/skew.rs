//! Version skew: objects written against a newer proto (today's plus
//! `crates/aether-api/tests/skew/additions.txt`), reviewed by this build's
//! admission handler, as the API server would send them once the newer CRD
//! is applied and before the webhook is upgraded.

use std::path::{Path, PathBuf};

use aether_manifests::Limits;
use aether_webhook::admission::{self, Decision};
use aether_webhook::index::HostIndex;
use serde_json::Value;

/// The fixture's one object, as JSON.
fn object(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../aether-api/tests/skew")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    let mut documents = aether_manifests::parse(Path::new(name), &bytes, &Limits::default()).unwrap();
    documents.remove(0).value
}

/// The response, and how it was decided.
fn review(name: &str) -> (Value, Decision) {
    let body = serde_json::to_vec(&admission::review_for("skew", &object(name), None)).unwrap();
    let (answer, decision) = admission::review(&body, &HostIndex::new()).unwrap();
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    (answer["response"].clone(), decision)
}

fn message(response: &Value) -> &str {
    response["status"]["message"].as_str().unwrap_or_default()
}

#[test]
fn new_fields_are_admitted_with_a_warning_naming_each() {
    let (response, decision) = review("a-newer-fields.yaml");
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(decision, Decision::AllowedWithWarnings);
    let warnings: Vec<&str> = response["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("spec.mirror"), "{warnings:?}");
    assert!(warnings[1].contains("spec.routes[0].idleTimeout"), "{warnings:?}");
}

#[test]
fn a_new_enum_value_is_denied_unsupported_naming_field_and_value() {
    let (response, decision) = review("b-new-enum-value.yaml");
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(decision, Decision::DeniedUnsupported);
    let message = message(&response);
    assert!(message.starts_with("Unsupported:"), "{message}");
    assert!(
        message.contains("spec.tls.provider: unknown value \"VAULT\""),
        "{message}"
    );
}

#[test]
fn a_new_oneof_member_is_denied_unsupported_naming_it() {
    let (response, decision) = review("c-new-oneof-member.yaml");
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(decision, Decision::DeniedUnsupported);
    let message = message(&response);
    assert!(message.starts_with("Unsupported:"), "{message}");
    assert!(
        message.contains("spec.routes[0].match.template: unknown field"),
        "{message}"
    );
}

#[test]
fn a_plain_object_is_admitted_without_warnings() {
    let (response, decision) = review("d-plain.yaml");
    assert_eq!(
        (response["allowed"].clone(), decision),
        (Value::Bool(true), Decision::Allowed)
    );
}
