//! The CRD as the API server would judge a spec, offline: the OpenAPI checks
//! of its `openAPIV3Schema` (jsonschema, draft 4 semantics as OpenAPI 3.0
//! uses, RE2-style `regex` for patterns as Go's apiserver), the
//! `x-kubernetes-list-type: set` and `map` uniqueness the apiserver adds, and its
//! `x-kubernetes-validations` CEL rules (compiled by kube-cel, the client-side
//! CEL that kube's `cel` feature uses, and evaluated in `crd::rules`).

mod rules;

use serde_json::Value;

/// One CRD's schema for one property, compiled for both checks.
pub struct CrdJudge {
    schema: Value,
    openapi: jsonschema::Validator,
    cel: rules::Rules,
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
        let cel = rules::Rules::new(schema.clone());
        Self { schema, openapi, cel }
    }

    /// Every reason the apiserver would reject `value` as a spec; empty if it admits it.
    pub fn problems(&self, value: &Value) -> Vec<String> {
        let mut problems: Vec<String> = self
            .openapi
            .iter_errors(value)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        unique_sets(&self.schema, value, "", &mut problems);
        self.cel.problems(value, &mut problems);
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

#[cfg(test)]
mod tests {
    use super::CrdJudge;
    use serde_json::json;

    /// A CRD whose `spec` has a string, a map and numbers, each with a CEL rule.
    const CRD: &str = r#"
spec:
  versions:
  - schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              name:
                type: string
                x-kubernetes-validations:
                - rule: self.size() <= 3
                  message: at most 3 characters
              labels:
                type: object
                additionalProperties:
                  type: string
                x-kubernetes-validations:
                - rule: self.all(k, k.size() <= 3)
                  message: keys of at most 3 characters
              data:
                type: string
                format: byte
                x-kubernetes-validations:
                - rule: self.size() <= 3
                  message: at most 3 bytes
              ratio:
                type: number
                x-kubernetes-validations:
                - rule: self < 2.5
                  message: below 2.5
              count:
                type: integer
                x-kubernetes-validations:
                - rule: self < 3
                  message: below 3
              pair:
                type: object
                properties:
                  a:
                    type: integer
                x-kubernetes-validations:
                - rule: self.a > 0
                  message: a positive
"#;

    fn problems(spec: serde_json::Value) -> Vec<String> {
        CrdJudge::from_crd(CRD, "spec").problems(&spec)
    }

    #[test]
    fn size_counts_characters_of_a_string() {
        // "héé" is 3 characters in 5 bytes, as the API server counts them.
        assert_eq!(problems(json!({"name": "héé"})), Vec::<String>::new());
        assert_eq!(problems(json!({"name": "héél"})), ["name: at most 3 characters (CEL)"]);
    }

    #[test]
    fn size_counts_characters_of_a_map_key() {
        assert_eq!(problems(json!({"labels": {"ééé": "v"}})), Vec::<String>::new());
        assert_eq!(
            problems(json!({"labels": {"éééé": "v"}})),
            ["labels: keys of at most 3 characters (CEL)"]
        );
    }

    #[test]
    fn size_counts_bytes_of_bytes() {
        // base64 of 3 and of 4 bytes.
        assert_eq!(problems(json!({"data": "AQID"})), Vec::<String>::new());
        assert_eq!(problems(json!({"data": "AQIDBA=="})), ["data: at most 3 bytes (CEL)"]);
    }

    #[test]
    fn numbers_bind_as_the_schema_types() {
        // A whole number on a `number` field is a double, so it compares with 2.5.
        assert_eq!(problems(json!({"ratio": 2, "count": 2})), Vec::<String>::new());
        let mut found = problems(json!({"ratio": 2.75, "count": 3}));
        found.sort();
        assert_eq!(found, ["count: below 3 (CEL)", "ratio: below 2.5 (CEL)"]);
    }

    #[test]
    fn a_rule_that_fails_to_evaluate_is_a_problem() {
        // `self.a` of an object without `a` is an error, not false.
        assert_eq!(problems(json!({"pair": {"a": 1}})), Vec::<String>::new());
        let found = problems(json!({"pair": {}}));
        assert!(
            found.len() == 1 && found[0].starts_with("pair: rule \"self.a > 0\" failed to evaluate"),
            "{found:?}"
        );
    }
}
