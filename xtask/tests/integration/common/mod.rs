//! Helpers shared by the xtask's integration tests.

use std::path::{Path, PathBuf};

use serde_json::Value;
use xtask::generators::Context;

/// The rules model (and the rest of the context) of the protos under
/// `root/input`, compiled as codegen compiles `api/`.
pub fn context(root: &Path, input: &str) -> anyhow::Result<Context> {
    let pinned = xtask::proto_deps::PinnedCrates::load(&xtask::workspace_root()).unwrap();
    Context::load(root, &[PathBuf::from(input)], pinned)
}

/// The context of the real API.
pub fn api_context() -> Context {
    context(&xtask::workspace_root(), "api").unwrap()
}

/// The API's proto, relative to the workspace root.
pub const PROTO: &str = "api/aether/config/v1/virtual_host.proto";

/// Copies the workspace's `api/` under `to` (the proto and the files it
/// imports), `PROTO` written as `edit` makes it.
pub fn copy_api(to: &Path, edit: impl Fn(&str) -> String) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let root = xtask::workspace_root();
    copy(&root.join("api"), &to.join("api"));
    let proto = std::fs::read_to_string(root.join(PROTO)).unwrap();
    std::fs::write(to.join(PROTO), edit(&proto)).unwrap();
}

/// Writes `body` as the proto file `t/t.proto` (edition 2024, package `t`,
/// buf.validate imported, implicit presence) in a fresh directory, and
/// compiles it.
pub fn small_proto(body: &str) -> anyhow::Result<Context> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("t")).unwrap();
    let source = format!(
        "edition = \"2024\";\npackage t;\nimport \"buf/validate/validate.proto\";\n\
         option features.field_presence = IMPLICIT;\n{body}"
    );
    std::fs::write(dir.path().join("t/t.proto"), source).unwrap();
    context(dir.path(), "t")
}

/// The rules of a structural schema the API server checks, and the CEL
/// cost bounds: collects every breach with its path.
pub fn structural_problems(node: &Value, path: &str, unbounded_list_above: bool, problems: &mut Vec<String>) {
    let Some(object) = node.as_object() else {
        problems.push(format!("{path}: a schema node is not an object"));
        return;
    };
    let kind = object.get("type").and_then(Value::as_str);
    match kind {
        Some("object" | "array" | "string" | "integer" | "number" | "boolean") => {}
        other => problems.push(format!("{path}: type {other:?}")),
    }
    for banned in ["$ref", "uniqueItems", "definitions", "$schema"] {
        if object.contains_key(banned) {
            problems.push(format!("{path}: has {banned}"));
        }
    }
    if object.get("additionalProperties") == Some(&Value::Bool(false)) {
        problems.push(format!("{path}: additionalProperties: false"));
    }
    for junction in ["oneOf", "anyOf", "allOf", "not"] {
        if let Some(sub) = object.get(junction) {
            let text = sub.to_string();
            for key in ["\"type\"", "\"description\"", "\"default\""] {
                if text.contains(key) {
                    problems.push(format!("{path}: {key} inside {junction}"));
                }
            }
        }
    }
    let unbounded_here = match kind {
        Some("array") => !object.contains_key("maxItems"),
        Some("string") => !object.contains_key("maxLength") && !object.contains_key("enum"),
        Some("object") if object.contains_key("additionalProperties") => !object.contains_key("maxProperties"),
        _ => false,
    };
    if let Some(rules) = object.get("x-kubernetes-validations") {
        if unbounded_here || unbounded_list_above {
            problems.push(format!("{path}: CEL on an unbounded list or string"));
        }
        for rule in rules.as_array().unwrap() {
            for key in rule.as_object().unwrap().keys() {
                let allowed = [
                    "rule",
                    "message",
                    "messageExpression",
                    "reason",
                    "fieldPath",
                    "optionalOldSelf",
                ];
                if !allowed.contains(&key.as_str()) {
                    problems.push(format!("{path}: validation key {key}"));
                }
            }
            let rule = rule["rule"].as_str().unwrap_or_default();
            if rule.contains("this") {
                problems.push(format!("{path}: CEL still says `this`: {rule}"));
            }
        }
    }
    if kind == Some("array") {
        match object.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("atomic") => {}
            Some("set") if object["items"]["type"] != "object" && object["items"]["type"] != "array" => {}
            // A list map: object items, each key a required scalar property.
            Some("map") => {
                let items = &object["items"];
                let keys = object["x-kubernetes-list-map-keys"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if items["type"] != "object" || keys.is_empty() {
                    problems.push(format!("{path}: list map without object items or keys"));
                }
                for key in keys {
                    let required = items["required"].as_array().is_some_and(|r| r.contains(&key));
                    let scalar = matches!(
                        items["properties"][key.as_str().unwrap_or("")]["type"].as_str(),
                        Some("string" | "integer" | "boolean")
                    );
                    if !required || !scalar {
                        problems.push(format!("{path}: map key {key} is not a required scalar"));
                    }
                }
            }
            other => problems.push(format!("{path}: list type {other:?}")),
        }
        match object.get("items") {
            Some(items) => structural_problems(items, &format!("{path}[*]"), unbounded_here, problems),
            None => problems.push(format!("{path}: an array without items")),
        }
    }
    if kind == Some("object") {
        let properties = object.get("properties").and_then(Value::as_object);
        match (properties, object.get("additionalProperties")) {
            (Some(_), Some(_)) => problems.push(format!("{path}: both properties and additionalProperties")),
            (Some(properties), None) => {
                for (name, child) in properties {
                    structural_problems(child, &format!("{path}.{name}"), unbounded_list_above, problems);
                }
            }
            // A map: its values' schema.
            (None, Some(values)) => structural_problems(
                values,
                &format!("{path}[*]"),
                unbounded_list_above || unbounded_here,
                problems,
            ),
            (None, None) => problems.push(format!("{path}: an object without properties")),
        }
        for required in object.get("required").and_then(Value::as_array).into_iter().flatten() {
            let name = required.as_str().unwrap();
            if !properties.is_some_and(|p| p.contains_key(name)) {
                problems.push(format!("{path}: requires {name}, which it does not declare"));
            }
        }
    }
}
