//! The CRD as the API server would judge a spec, offline: the OpenAPI checks
//! of its `openAPIV3Schema` (jsonschema, draft 4 semantics as OpenAPI 3.0
//! uses, RE2-style `regex` for patterns as Go's apiserver), the
//! `x-kubernetes-list-type: set` and `map` uniqueness the apiserver adds, and its
//! `x-kubernetes-validations` CEL rules (kube-cel, the client-side CEL that
//! kube's `cel` feature uses).

use serde_json::Value;

/// One CRD's schema for one property, compiled for both checks.
pub struct CrdJudge {
    schema: Value,
    openapi: jsonschema::Validator,
    cel: kube_cel::CompiledSchema,
    cel_validator: kube_cel::Validator,
}

impl CrdJudge {
    /// The judge for one top-level property (`spec`, `status`) of the objects of a CRD.
    pub fn from_crd(crd_yaml: &str, property: &str) -> Self {
        let crd: Value = serde_saphyr::from_str(crd_yaml).expect("the CRD is YAML");
        let schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][property].clone();
        assert!(schema.is_object(), "the CRD has a {property} schema");
        let openapi = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(&schema)
            .expect("the spec schema compiles");
        let cel = kube_cel::compile_schema(&schema);
        Self {
            schema,
            openapi,
            cel,
            cel_validator: kube_cel::Validator::new(),
        }
    }

    /// Every reason the apiserver would reject `value` as a spec; empty if it admits it.
    pub fn problems(&self, value: &Value) -> Vec<String> {
        let mut problems: Vec<String> = self
            .openapi
            .iter_errors(value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        unique_sets(&self.schema, value, "", &mut problems);
        if let Err(errors) = self.cel_validator.validate_compiled(&self.cel, value, None) {
            problems.extend(
                errors
                    .into_vec()
                    .into_iter()
                    .map(|e| format!("{}: {} (CEL)", e.field_path, e.message)),
            );
        }
        problems
    }
}

/// `x-kubernetes-list-type: set`: the apiserver rejects duplicate items.
fn unique_sets(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    match (schema["type"].as_str(), value) {
        (Some("object"), Value::Object(map)) => {
            for (key, child) in map {
                if let Some(child_schema) = schema["properties"].get(key) {
                    unique_sets(child_schema, child, &format!("{path}.{key}"), problems);
                }
            }
        }
        (Some("array"), Value::Array(items)) => {
            if schema["x-kubernetes-list-type"] == "set" {
                for (i, item) in items.iter().enumerate() {
                    if items[..i].contains(item) {
                        problems.push(format!("{path}[{i}]: duplicate entry in a set"));
                    }
                }
            }
            if schema["x-kubernetes-list-type"] == "map" {
                // The apiserver rejects two items with the same key values.
                let keys = schema["x-kubernetes-list-map-keys"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let key_of = |item: &Value| {
                    keys.iter()
                        .map(|k| item[k.as_str().unwrap_or("")].clone())
                        .collect::<Vec<_>>()
                };
                for (i, item) in items.iter().enumerate() {
                    if items[..i].iter().any(|earlier| key_of(earlier) == key_of(item)) {
                        problems.push(format!("{path}[{i}]: duplicate entry in a list map"));
                    }
                }
            }
            for (i, item) in items.iter().enumerate() {
                unique_sets(&schema["items"], item, &format!("{path}[{i}]"), problems);
            }
        }
        _ => {}
    }
}
