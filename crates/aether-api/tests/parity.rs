//! One contract, three judges. For every fixture and for 12,000 specs drawn
//! near the rules' edges (at least 10,000 of them using the matches beyond a
//! path prefix or exact path, or the route order, and at least 10,000 using
//! the route actions beyond `backend`), these must agree on valid or
//! invalid:
//!
//! - (a) the Rust validator (`aether_api::validate`, generated from the rules);
//! - (b) the CRD: its OpenAPI checks, set semantics and `x-kubernetes-validations`
//!   CEL, evaluated offline as the API server would (see `aether_judges::crd`);
//! - (c) protovalidate 2.x (Python), the reference, on the edition-2024
//!   descriptors as written.
//!
//! (a) and (c) must also agree on what is wrong: the same (path, rule id) set.
//! A disagreement is a bug in a mapping, never a case to exclude.

mod common;

use aether_api::config::v1::{VirtualHostSpec, route_match::Path};
use aether_api::validate::Validate;
use prost::Message;

const SAMPLES: usize = 12_000;

/// Whether a spec uses a field beyond v1's: the route order, a regex path,
/// methods, headers or query parameters.
fn uses_match_fields(spec: &VirtualHostSpec) -> bool {
    spec.route_order != 0
        || spec.routes.iter().filter_map(|r| r.r#match.as_ref()).any(|m| {
            matches!(m.path, Some(Path::Regex(_)))
                || !m.methods.is_empty()
                || !m.headers.is_empty()
                || !m.query_params.is_empty()
        })
}

/// Whether a spec uses a route action beyond v1's `backend`: `backends`,
/// `redirect`, `rewrite`, header changes, `timeout` or `retries`.
fn uses_actions(spec: &VirtualHostSpec) -> bool {
    spec.routes.iter().any(common::actions::uses_actions)
}

/// The three verdicts on one spec, and what (a) and (c) said was wrong.
struct Verdicts {
    rust: Vec<(String, String)>,
    crd: Vec<String>,
    reference: Vec<(String, String)>,
}

fn judge_all(specs: &[VirtualHostSpec]) -> Vec<Verdicts> {
    let crd = common::crd_judge("spec");
    let messages: Vec<_> = specs
        .iter()
        .map(|s| ("aether.config.v1.VirtualHostSpec", s.encode_to_vec()))
        .collect();
    let reference = aether_judges::protovalidate::judge(&messages);
    specs
        .iter()
        .zip(reference)
        .map(|(spec, reference)| {
            let mut rust: Vec<_> = match spec.validate() {
                Ok(()) => Vec::new(),
                Err(violations) => violations
                    .into_iter()
                    .map(|v| (v.field_path, v.rule_id.to_owned()))
                    .collect(),
            };
            rust.sort();
            let mut reference: Vec<_> = reference
                .into_iter()
                .map(|(path, rule, _)| (aether_judges::protovalidate::kubernetes_path("spec", &path), rule))
                .collect();
            reference.sort();
            let json = serde_json::to_value(spec).expect("a spec with named enum values writes as JSON");
            Verdicts {
                rust,
                crd: crd.problems(&json),
                reference,
            }
        })
        .collect()
}

/// Every disagreement, described; empty when the judges agree on all.
fn disagreements(specs: &[VirtualHostSpec], verdicts: &[Verdicts]) -> Vec<String> {
    let mut out = Vec::new();
    for (spec, v) in specs.iter().zip(verdicts) {
        let valid = [v.rust.is_empty(), v.crd.is_empty(), v.reference.is_empty()];
        if valid.iter().any(|&x| x != valid[0]) || v.rust != v.reference {
            out.push(format!(
                "spec {}\n  rust: {:?}\n  crd: {:?}\n  protovalidate: {:?}",
                serde_json::to_string(spec).unwrap(),
                v.rust,
                v.crd,
                v.reference
            ));
        }
    }
    out
}

#[test]
fn the_three_judges_agree_on_12000_specs_near_the_edges() {
    let specs = common::sample(common::boundary::spec(), SAMPLES);
    let verdicts = judge_all(&specs);
    let failures = disagreements(&specs, &verdicts);
    let valid = verdicts.iter().filter(|v| v.rust.is_empty()).count();
    let with_match_fields: Vec<_> = specs
        .iter()
        .zip(&verdicts)
        .filter(|(s, _)| uses_match_fields(s))
        .collect();
    let valid_with_match_fields = with_match_fields.iter().filter(|(_, v)| v.rust.is_empty()).count();
    let with_actions: Vec<_> = specs.iter().zip(&verdicts).filter(|(s, _)| uses_actions(s)).collect();
    let valid_with_actions = with_actions.iter().filter(|(_, v)| v.rust.is_empty()).count();
    println!(
        "{SAMPLES} specs: {valid} valid, {} invalid, {} disagreements; {} use the match fields or route order \
         ({valid_with_match_fields} of them valid); {} use the route actions ({valid_with_actions} of them valid)",
        SAMPLES - valid,
        failures.len(),
        with_match_fields.len(),
        with_actions.len(),
    );
    assert!(
        with_actions.len() >= 10_000 && valid_with_actions >= 1_000,
        "{} specs use the route actions, {valid_with_actions} of them valid",
        with_actions.len()
    );
    assert!(
        with_match_fields.len() >= 10_000 && valid_with_match_fields >= 1_000,
        "{} specs use the match fields, {valid_with_match_fields} of them valid",
        with_match_fields.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {SAMPLES} specs judged differently; the first ones:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    // A sample that is nearly all valid or all invalid would prove little.
    assert!(
        valid >= SAMPLES / 5 && SAMPLES - valid >= SAMPLES / 5,
        "{valid} valid of {SAMPLES}"
    );
}

#[test]
fn every_rule_of_the_proto_is_broken_somewhere_in_the_sample() {
    let specs = common::sample(common::boundary::spec(), 2_000);
    let mut rules: Vec<_> = specs
        .iter()
        .filter_map(|s| s.validate().err())
        .flat_map(|e| e.into_iter().map(|v| v.rule_id))
        .collect();
    rules.sort();
    rules.dedup();
    for rule in [
        "repeated.min_items",
        "repeated.max_items",
        "repeated.unique",
        "string.max_len",
        "string.min_len",
        "string.pattern",
        "path.no_empty_segment",
        "path.no_dot_segment",
        "path.no_encoded_slash",
        "required",
        "uint32.lte",
        "string.in",
        "bool.const",
        "message.oneof",
        "backends.unique_service_port",
        "uint32.in",
        "string.not_in",
        "headers.unique_name",
        "route.redirect_no_rewrite",
        "route.redirect_no_request_headers",
        "route.redirect_no_timeout",
        "route.redirect_no_retries",
        "route.rewrite_prefix_needs_prefix_match",
        "route.redirect_prefix_needs_prefix_match",
    ] {
        assert!(rules.contains(&rule), "no spec breaks {rule}: {rules:?}");
    }
}

#[test]
fn the_crd_judge_rejects_what_the_schema_forbids() {
    // The judge must be able to say no, or agreement would be vacuous.
    let crd = common::crd_judge("spec");
    let good = serde_json::to_value(common::proposal_spec()).unwrap();
    assert!(crd.problems(&good).is_empty(), "{:?}", crd.problems(&good));
    let mut bad = good.clone();
    bad["hosts"] = serde_json::json!(["a.example.com", "a.example.com"]);
    assert!(crd.problems(&bad).iter().any(|p| p.contains("duplicate")));
    let mut bad = good.clone();
    bad["routes"][0]["match"] = serde_json::json!({"prefix": "/a//b"});
    assert!(
        crd.problems(&bad).iter().any(|p| p.contains("CEL")),
        "{:?}",
        crd.problems(&bad)
    );
    let mut bad = good;
    bad["routes"][0]["backend"]["port"] = serde_json::json!(65536);
    assert!(!crd.problems(&bad).is_empty());
}
#[test]
fn names_of_length_have_that_length_and_short_labels() {
    for total in [1, 63, 64, 65, 127, 252, 253, 254] {
        let name = common::boundary::name_of_length(total);
        assert_eq!(name.len(), total, "{name}");
        assert!(name.split('.').all(|l| !l.is_empty() && l.len() <= 63), "{name}");
    }
}
