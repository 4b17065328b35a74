//! The three judges on the rule-kinds test API, and its cases.
//!
//! - (a) the Rust validator generated for it (this crate);
//! - (b) its CRD, judged offline as the API server would: OpenAPI checks
//!   with `jsonschema`, set uniqueness, CEL with `kube-cel` (aether-judges',
//!   shared with crates/aether-api/tests);
//! - (c) protovalidate 2.1.0 (Python) on its edition-2024 descriptors.
//!
//! The CRD judges each spec as written in the Kubernetes form, explicit
//! zero values included; (a) and (c) judge what it decodes to.

use aether_api::validate::Validate;
use aether_judges::crd::CrdJudge;
use aether_judges::protovalidate;
use aether_rule_kinds::rulekinds::v1::RuleKindsSpec;
use prost::Message;
use serde_json::Value;

/// The message the judges are asked about.
pub const SPEC: &str = "aether.rulekinds.v1.RuleKindsSpec";

/// One case of `cases.yaml`: the spec as written and what it must break.
pub struct Case {
    pub name: String,
    pub spec: Value,
    /// (path, rule id), sorted; empty for a valid case.
    pub expect: Vec<(String, String)>,
}

/// The test API's descriptors.
pub fn descriptors() -> prost_reflect::DescriptorPool {
    let bytes = std::fs::read(aether_rule_kinds::PROTO3_DESCRIPTORS).expect("the generated descriptors");
    prost_reflect::DescriptorPool::decode(bytes.as_slice()).expect("the descriptors decode")
}

/// The `valid` or `invalid` cases of `tests/cases.yaml`, each `base` with
/// its patch merged in.
pub fn cases(kind: &str) -> Vec<Case> {
    let file: Value = serde_saphyr::from_str(include_str!("../cases.yaml")).expect("cases.yaml is YAML");
    let spec_message = descriptors().get_message_by_name(SPEC).expect("the spec message");
    file[kind]
        .as_array()
        .unwrap_or_else(|| panic!("cases.yaml has no {kind} list"))
        .iter()
        .map(|case| {
            let mut spec = file["base"].clone();
            if let Some(patch) = case.get("patch") {
                merge(&mut spec, patch, Some(&spec_message));
            }
            let mut expect: Vec<_> = case
                .get("expect")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|pair| {
                    (
                        pair[0].as_str().expect("a path").to_owned(),
                        pair[1].as_str().expect("a rule id").to_owned(),
                    )
                })
                .collect();
            expect.sort();
            Case {
                name: case["name"].as_str().expect("a case has a name").to_owned(),
                spec,
                expect,
            }
        })
        .collect()
}

/// Merges `patch` into `target`, a `message` in the Kubernetes form: field
/// by field, `null` removing the field; a map, list or scalar replaces.
fn merge(target: &mut Value, patch: &Value, message: Option<&prost_reflect::MessageDescriptor>) {
    match (target, patch, message) {
        (Value::Object(target), Value::Object(patch), Some(message)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(key);
                    continue;
                }
                let field = message
                    .fields()
                    .find(|f| f.json_name() == key)
                    .unwrap_or_else(|| panic!("{} has no field {key}", message.full_name()));
                let inner = match field.kind() {
                    prost_reflect::Kind::Message(m) if !field.is_map() && !field.is_list() => Some(m),
                    _ => None,
                };
                merge(target.entry(key.clone()).or_insert(Value::Null), value, inner.as_ref());
            }
        }
        (target, patch, _) => *target = patch.clone(),
    }
}

/// (path, rule id, message) of each violation, sorted.
pub type Found = Vec<(String, String, String)>;

/// The three verdicts on one spec.
pub struct Verdict {
    pub rust: Found,
    pub reference: Found,
    /// Every reason the API server would refuse it; empty if it admits it.
    pub crd: Vec<String>,
}

impl Verdict {
    /// (path, rule id) of (a) and (c).
    pub fn pairs(found: &Found) -> Vec<(String, String)> {
        found.iter().map(|(p, r, _)| (p.clone(), r.clone())).collect()
    }

    /// Whether the three agree on valid or invalid, and (a) and (c) on each
    /// (path, rule id).
    pub fn agrees(&self) -> bool {
        let valid = [self.rust.is_empty(), self.reference.is_empty(), self.crd.is_empty()];
        valid.iter().all(|v| *v == valid[0]) && Self::pairs(&self.rust) == Self::pairs(&self.reference)
    }
}

/// The spec a JSON value decodes to; panics, naming it, if it does not.
pub fn decode(spec: &Value) -> RuleKindsSpec {
    serde_json::from_value(spec.clone()).unwrap_or_else(|err| panic!("{spec} does not decode: {err}"))
}

/// Judges every spec with all three judges (protovalidate in one batch).
pub fn judge(specs: &[Value]) -> Vec<Verdict> {
    let crd = CrdJudge::from_crd(aether_rule_kinds::CRD_YAML, "spec");
    let decoded: Vec<_> = specs.iter().map(decode).collect();
    let messages: Vec<_> = decoded.iter().map(|s| (SPEC, s.encode_to_vec())).collect();
    let reference = protovalidate::judge_with(std::path::Path::new(aether_rule_kinds::DESCRIPTORS), &messages);
    specs
        .iter()
        .zip(decoded)
        .zip(reference)
        .map(|((json, spec), reference)| {
            let mut rust: Found = match spec.validate() {
                Ok(()) => Vec::new(),
                Err(violations) => violations
                    .into_iter()
                    .map(|v| (v.field_path, v.rule_id.to_owned(), v.message.into_owned()))
                    .collect(),
            };
            rust.sort();
            let mut reference: Found = reference
                .into_iter()
                .map(|(path, rule, message)| (protovalidate::kubernetes_path("spec", &path), rule, message))
                .collect();
            reference.sort();
            Verdict {
                rust,
                reference,
                crd: crd.problems(json),
            }
        })
        .collect()
}

pub use aether_specgen::coverage::pattern_of;
