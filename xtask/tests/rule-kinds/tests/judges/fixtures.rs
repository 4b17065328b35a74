//! The cases of `cases.yaml` (valid and invalid specs at every rule's
//! edges of the rule-kinds test API), judged by the three judges: a valid
//! case passes all three; an invalid one produces exactly its expected
//! (path, rule id) pairs in the Rust validator and in protovalidate, with
//! the same messages, and the CRD refuses it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use aether_api::validate::Validate;
use aether_rule_kinds::rulekinds::v1::RuleKindsSpec;
use prost::Message as _;
use xtask::rules::{Api, Field, Message, RuleKind};

use crate::common::{self, Verdict, cases, judge, pattern_of};

#[test]
fn valid_cases_pass_every_judge() {
    let cases = cases("valid");
    assert!(cases.len() >= 90, "{} valid cases", cases.len());
    let verdicts = judge(&cases.iter().map(|c| c.spec.clone()).collect::<Vec<_>>());
    let mut failures = Vec::new();
    for (case, v) in cases.iter().zip(&verdicts) {
        if !(v.rust.is_empty() && v.reference.is_empty() && v.crd.is_empty()) {
            failures.push(format!(
                "{}:\n  rust: {:?}\n  protovalidate: {:?}\n  crd: {:?}",
                case.name, v.rust, v.reference, v.crd
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_cases_produce_exactly_their_violations_in_every_judge() {
    let cases = cases("invalid");
    assert!(cases.len() >= 140, "{} invalid cases", cases.len());
    let verdicts = judge(&cases.iter().map(|c| c.spec.clone()).collect::<Vec<_>>());
    let mut failures = Vec::new();
    for (case, v) in cases.iter().zip(&verdicts) {
        let rust = Verdict::pairs(&v.rust);
        let reference = Verdict::pairs(&v.reference);
        if rust != case.expect || reference != case.expect || v.rust != v.reference || v.crd.is_empty() {
            failures.push(format!(
                "{}:\n  expected: {:?}\n  rust: {:?}\n  protovalidate: {:?}\n  crd: {:?}",
                case.name, case.expect, v.rust, v.reference, v.crd
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every (place, rule id) the test API declares, places as `[*]` patterns.
fn declared() -> BTreeSet<(String, String)> {
    let root = xtask::workspace_root();
    let pinned = xtask::proto_deps::PinnedCrates::load(&root).unwrap();
    let context =
        xtask::generators::Context::load(&root, &[PathBuf::from(xtask::rule_kinds::PROTO_DIR)], pinned).unwrap();
    let mut out = BTreeSet::new();
    let spec = context.api.message(common::SPEC).unwrap();
    walk(&context.api, spec, "spec", &mut out);
    out
}

fn walk(api: &Api, message: &Message, path: &str, out: &mut BTreeSet<(String, String)>) {
    for rule in &message.cel {
        out.insert((path.to_owned(), rule.id.clone()));
    }
    if !message.oneof_rules.is_empty() {
        out.insert((path.to_owned(), "message.oneof".to_owned()));
    }
    for oneof in message.oneofs.iter().filter(|o| o.required) {
        out.insert((format!("{path}.{}", oneof.name), "required".to_owned()));
    }
    for field in &message.fields {
        if field.ignore == xtask::rules::Ignore::Always {
            continue;
        }
        let here = format!("{path}.{}", field.json_name());
        declare(field, &here, out);
        let element = if field.descriptor.is_list() || field.descriptor.is_map() {
            format!("{here}[*]")
        } else {
            here.clone()
        };
        let value_kind = if field.descriptor.is_map() {
            match field.descriptor.kind() {
                prost_reflect::Kind::Message(entry) => entry.map_entry_value_field().kind(),
                _ => unreachable!(),
            }
        } else {
            field.descriptor.kind()
        };
        if let prost_reflect::Kind::Message(m) = value_kind
            && let Some(inner) = api.message(m.full_name())
        {
            walk(api, inner, &element, out);
        }
    }
}

fn declare(field: &Field, here: &str, out: &mut BTreeSet<(String, String)>) {
    let element = format!("{here}[*]");
    if field.required {
        out.insert((here.to_owned(), "required".to_owned()));
    }
    // Under IGNORE_IF_ZERO_VALUE an empty string is not checked at all.
    let empty_checked = field.ignore != xtask::rules::Ignore::IfZeroValue;
    let mut add = |place: &str, rules: &[xtask::rules::Rule], cel: &[xtask::rules::CelRule]| {
        for rule in rules {
            out.insert((place.to_owned(), rule.id.clone()));
            if let RuleKind::Format(format) = rule.kind
                && let Some((id, _)) = format.empty_rule()
                && empty_checked
            {
                out.insert((place.to_owned(), id));
            }
        }
        for rule in cel {
            out.insert((place.to_owned(), rule.id.clone()));
        }
    };
    add(here, &field.rules, &field.cel);
    for rules in [&field.items, &field.keys, &field.values].into_iter().flatten() {
        add(&element, &rules.rules, &rules.cel);
    }
}

/// Specs the Kubernetes form cannot write (an enum number with no name, a
/// double that is not finite), so only the binary judges see them: the
/// Rust validator and protovalidate, which must agree exactly.
/// A case's name, its spec, and the (path, rule id) pairs it breaks.
type BinaryCase = (&'static str, RuleKindsSpec, Vec<(&'static str, &'static str)>);

fn binary_only() -> Vec<BinaryCase> {
    let base = common::decode(&cases("valid")[0].spec);
    let mut unknown_enum = base.clone();
    unknown_enum.enums.as_mut().unwrap().defined = 7;
    let mut unknown_item = base.clone();
    unknown_item.lists.as_mut().unwrap().colors = vec![1, 9];
    let mut nan = base.clone();
    nan.floats.as_mut().unwrap().outside = f64::NAN;
    let mut infinite = base.clone();
    infinite.floats.as_mut().unwrap().outside = f64::INFINITY;
    let mut nan_bound = base;
    nan_bound.floats.as_mut().unwrap().gt_lt = f64::NAN;
    vec![
        (
            "an enum number with no name",
            unknown_enum,
            vec![("spec.enums.defined", "enum.defined_only")],
        ),
        (
            "an item with no name",
            unknown_item,
            vec![("spec.lists.colors[1]", "enum.defined_only")],
        ),
        (
            "NaN",
            nan,
            vec![
                ("spec.floats.outside", "double.finite"),
                ("spec.floats.outside", "double.gte_lte_exclusive"),
            ],
        ),
        ("infinity", infinite, vec![("spec.floats.outside", "double.finite")]),
        (
            "NaN breaks every bound and the message rule",
            nan_bound,
            vec![("spec.floats", "floats.ordered"), ("spec.floats.gtLt", "double.gt_lt")],
        ),
    ]
}

#[test]
fn what_the_kubernetes_form_cannot_write_is_judged_alike_in_binary() {
    let cases = binary_only();
    let messages: Vec<_> = cases
        .iter()
        .map(|(_, s, _)| (common::SPEC, s.encode_to_vec()))
        .collect();
    let reference =
        aether_judges::protovalidate::judge_with(std::path::Path::new(aether_rule_kinds::DESCRIPTORS), &messages);
    for ((name, spec, expected), reference) in cases.iter().zip(reference) {
        let mut rust: Vec<_> = spec
            .validate()
            .err()
            .into_iter()
            .flatten()
            .map(|v| (v.field_path, v.rule_id.to_owned(), v.message.into_owned()))
            .collect();
        rust.sort();
        let mut reference: Vec<_> = reference
            .into_iter()
            .map(|(p, r, m)| (aether_judges::protovalidate::kubernetes_path("spec", &p), r, m))
            .collect();
        reference.sort();
        let mut expected: Vec<_> = expected.iter().map(|(p, r)| (p.to_string(), r.to_string())).collect();
        expected.sort();
        assert_eq!(Verdict::pairs(&rust), expected, "{name}: the Rust validator");
        assert_eq!(rust, reference, "{name}: protovalidate");
    }
}

#[test]
fn every_rule_of_the_test_api_has_an_invalid_case() {
    let mut covered: BTreeSet<_> = cases("invalid")
        .into_iter()
        .flat_map(|c| c.expect)
        .map(|(path, rule)| (pattern_of(&path), rule))
        .collect();
    for (_, _, expected) in binary_only() {
        covered.extend(expected.into_iter().map(|(p, r)| (pattern_of(p), r.to_owned())));
    }
    let missing: Vec<_> = declared().difference(&covered).cloned().collect();
    assert!(missing.is_empty(), "no invalid case breaks: {missing:#?}");
}
