//! The CRD follows the conventions kubectl, server-side apply and Gateway
//! API's tooling expect: conditions as a list map keyed by `type`, printer
//! columns for the `Accepted` condition, a category, a root description,
//! and descriptions written for manifest authors rather than proto readers.

use anyhow::Result;
use serde_json::Value;
use xtask::generators::crd::{CRD_FILE, generate, kube_attributes, message_schema};

use crate::common;

fn crd() -> Value {
    let outputs = generate(&common::api_context().api).unwrap();
    let (_, bytes) = outputs.iter().find(|(n, _)| n == CRD_FILE).unwrap();
    serde_saphyr::from_str(std::str::from_utf8(bytes).unwrap()).unwrap()
}

fn schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// Every `description` string in `node`, with its JSON pointer.
fn descriptions(node: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(text) if key == "description" => out.push((path.to_owned(), text.clone())),
                    other => descriptions(other, &format!("{path}/{key}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                descriptions(item, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn conditions_are_a_list_map_keyed_by_type() {
    let crd = crd();
    let conditions = &schema(&crd)["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"], serde_json::json!(["type"]));
    // A structural schema's map keys are required (or defaulted).
    let required = conditions["items"]["required"].as_array().unwrap();
    assert!(required.contains(&Value::from("type")), "{required:?}");
    assert_eq!(conditions["items"]["properties"]["type"]["type"], "string");
}

fn map_source(body: &str) -> Result<Value> {
    message_schema(&common::small_proto(body)?.api, "t.M")
}

#[test]
fn a_conditions_list_needs_a_required_type() {
    let condition = |rule: &str| {
        format!(
            "message C {{ string type = 1{rule}; string status = 2; }}\n\
             message M {{ repeated C conditions = 1; repeated C others = 2; }}"
        )
    };
    let mapped = map_source(&condition(" [(buf.validate.field).required = true]")).unwrap();
    assert_eq!(mapped["properties"]["conditions"]["x-kubernetes-list-type"], "map");
    // The convention is the name: another list of the same message stays atomic.
    assert_eq!(mapped["properties"]["others"]["x-kubernetes-list-type"], "atomic");
    let err = format!("{:#}", map_source(&condition("")).unwrap_err());
    assert!(
        err.contains("t.M.conditions") && err.contains("t.C.type") && err.contains("required"),
        "{err}"
    );
}

#[test]
fn printer_columns_show_the_accepted_condition_and_keep_routes() {
    let crd = crd();
    let columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
        .as_array()
        .unwrap();
    let column = |name: &str| {
        columns
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(
        column("Accepted")["jsonPath"],
        r#".status.conditions[?(@.type=="Accepted")].status"#
    );
    assert_eq!(
        column("Reason")["jsonPath"],
        r#".status.conditions[?(@.type=="Accepted")].reason"#
    );
    assert_eq!(column("Routes")["jsonPath"], ".status.routeCount");
    let names: Vec<_> = columns.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Hosts", "Routes", "Accepted", "Reason", "Programmed", "Age"]);
    let attributes = kube_attributes().join("\n");
    assert!(attributes.contains(r#"\"name\":\"Accepted\""#), "{attributes}");
}

#[test]
fn the_resource_is_in_the_aether_category() {
    let crd = crd();
    assert_eq!(crd["spec"]["names"]["categories"], serde_json::json!(["aether"]));
    assert!(kube_attributes().join("\n").contains("category = \"aether\""));
}

#[test]
fn the_root_says_what_a_virtual_host_is() {
    let crd = crd();
    let description = schema(&crd)["description"].as_str().unwrap();
    assert!(
        description.starts_with("A VirtualHost routes HTTP requests"),
        "{description}"
    );
}

#[test]
fn descriptions_carry_no_proto_only_wording() {
    let crd = crd();
    let mut all = Vec::new();
    descriptions(schema(&crd), "", &mut all);
    assert!(all.len() > 20, "the walk finds the descriptions");
    for (path, text) in &all {
        for proto_only in [
            "_UNSPECIFIED",
            "SECRET_PROVIDER_KUBERNETES",
            "SECRET_PROVIDER_AWS",
            "```",
        ] {
            assert!(!text.contains(proto_only), "{path}: {proto_only:?} in {text:?}");
        }
    }
    let spec = schema(&crd)["properties"]["spec"]["description"].as_str().unwrap();
    assert!(
        spec.contains("\n    tls: {secretName: example-tls, provider: KUBERNETES}"),
        "{spec}"
    );
}

#[test]
fn enum_fields_list_their_values_documentation() {
    let crd = crd();
    let provider = &schema(&crd)["properties"]["spec"]["properties"]["tls"]["properties"]["provider"];
    let text = provider["description"].as_str().unwrap();
    assert!(
        text.starts_with("Where the secret is stored. Required, and must be a value defined below."),
        "{text}"
    );
    assert!(
        text.ends_with(
            "Values:\n\
             - KUBERNETES: A Kubernetes Secret of type `kubernetes.io/tls` in the VirtualHost's namespace.\n\
             - AWS_SECRETS_MANAGER: A secret in AWS Secrets Manager, named by `secret_name`."
        ),
        "{text}"
    );
}

#[test]
fn enum_mentions_are_rewritten_and_a_field_lists_the_values_it_allows() {
    // The Kubernetes form omits a zero value, so `*_UNSPECIFIED` is never
    // mentioned; a field that allows it still lists it among its values.
    let mapped = map_source(
        "enum Color {\n  // None.\n  COLOR_UNSPECIFIED = 0;\n  // Like blood.\n  COLOR_RED = 1;\n}\n\
         message M {\n  // Pick `COLOR_RED` (not COLOR_UNSPECIFIED).\n  \
         Color c = 1 [(buf.validate.field).enum.defined_only = true, (buf.validate.field).required = true];\n  \
         // Any color.\n  Color any = 2;\n}",
    )
    .unwrap();
    assert_eq!(
        mapped["properties"]["c"]["description"],
        "Pick `RED`.\n\nValues:\n- RED: Like blood."
    );
    assert_eq!(
        mapped["properties"]["any"]["description"],
        "Any color.\n\nValues:\n- UNSPECIFIED: None.\n- RED: Like blood."
    );
}
