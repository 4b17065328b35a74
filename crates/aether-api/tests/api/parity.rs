//! One contract, three judges. For every fixture and for 12,000 specs drawn
//! from the rules model (`aether_specgen`: valid specs, and specs just past
//! each rule's edge), these must agree on valid or invalid:
//!
//! - (a) the Rust validator (`aether_api::validate`, generated from the rules);
//! - (b) the CRD: its OpenAPI checks, set semantics and `x-kubernetes-validations`
//!   CEL, evaluated offline as the API server would (see `aether_judges::crd`);
//! - (c) protovalidate 2.x (Python), the reference, on the edition-2024
//!   descriptors as written.
//!
//! (a) and (c) must also agree on what is wrong: the same (path, rule id) set.
//! A disagreement is a bug in a mapping, never a case to exclude. The sample's
//! coverage is printed per field path and rule id; every rule of the proto
//! must be broken somewhere in it, with no case written for it by hand.

use aether_api::config::v1::{VirtualHostSpec, route_match::Path};
use aether_api::validate::Validate;
use aether_specgen::{Coverage, Generator, Rng};
use prost::Message;

use crate::common;

const SAMPLES: usize = 12_000;

/// The rates of doubtful values per place: specs with none, one and several.
const BADNESS: [f64; 4] = [0.0, 0.005, 0.02, 0.06];

/// `count` specs from the generator, the same on every run, each as drawn
/// (JSON) and decoded.
fn sample(generator: &Generator, count: usize) -> Vec<(serde_json::Value, VirtualHostSpec)> {
    let mut rng = Rng::new(0x0a37_4e12);
    (0..count)
        .map(|i| {
            let json = generator.spec(&mut rng, BADNESS[i % BADNESS.len()]);
            let spec = aether_testing::drawn::decode(&json);
            (json, spec)
        })
        .collect()
}

/// Draws past the sample, at most, to break a rule the sample left unbroken.
const TOP_UP: usize = 20_000;

/// The rate of doubtful values of those draws.
const TOP_UP_BADNESS: f64 = 0.1;

/// What the Rust validator says is wrong with a spec: (path, rule id), sorted.
fn rust_violations(spec: &VirtualHostSpec) -> Vec<(String, String)> {
    let mut found: Vec<_> = match spec.validate() {
        Ok(()) => Vec::new(),
        Err(violations) => violations
            .into_iter()
            .map(|v| (v.field_path, v.rule_id.to_owned()))
            .collect(),
    };
    found.sort();
    found
}

/// Specs drawn past the sample, until each rule the sample leaves unbroken
/// (as the Rust validator reads it) is broken once: a rule with few chances
/// in a sample (a redirect's prefix past its length) is judged every run,
/// whatever the fields around it, without a sample large enough for luck.
fn top_up(
    generator: &Generator,
    drawn: &[(serde_json::Value, VirtualHostSpec)],
) -> Vec<(serde_json::Value, VirtualHostSpec)> {
    let mut coverage = Coverage::new(generator, "spec");
    for (json, spec) in drawn {
        coverage.record(json, &rust_violations(spec));
    }
    let mut missing = coverage.never_broken();
    let mut rng = Rng::new(0x70_9e_0f);
    let mut extra = Vec::new();
    for _ in 0..TOP_UP {
        if missing.is_empty() {
            break;
        }
        let json = generator.spec(&mut rng, TOP_UP_BADNESS);
        let spec = aether_testing::drawn::decode(&json);
        let violations = rust_violations(&spec);
        if violations
            .iter()
            .any(|(path, rule)| missing.contains(&(aether_specgen::coverage::pattern_of(path), rule.clone())))
        {
            coverage.record(&json, &violations);
            missing = coverage.never_broken();
            extra.push((json, spec));
        }
    }
    extra
}

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

/// Whether a spec uses a route action beyond v1's `backend`.
fn uses_actions(spec: &VirtualHostSpec) -> bool {
    spec.routes.iter().any(|r| {
        !r.backends.is_empty()
            || r.redirect.is_some()
            || r.rewrite.is_some()
            || r.request_headers.is_some()
            || r.response_headers.is_some()
            || !r.timeout.is_empty()
            || r.retries.is_some()
    })
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
            let rust = rust_violations(spec);
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
fn the_three_judges_agree_on_12000_generated_specs_and_break_every_rule() {
    // Seeded with the fixtures' and examples' values.
    let generator = aether_testing::drawn::generator();
    let mut drawn = sample(&generator, SAMPLES);
    let extra = top_up(&generator, &drawn);
    let topped_up = extra.len();
    drawn.extend(extra);
    let total = drawn.len();
    let specs: Vec<VirtualHostSpec> = drawn.iter().map(|(_, s)| s.clone()).collect();
    let verdicts = judge_all(&specs);
    let failures = disagreements(&specs, &verdicts);
    let mut coverage = Coverage::new(&generator, "spec");
    for ((json, _), v) in drawn.iter().zip(&verdicts) {
        coverage.record(json, &v.rust);
    }
    println!("{}", coverage.report());
    let valid = verdicts.iter().filter(|v| v.rust.is_empty()).count();
    let count = |uses: fn(&VirtualHostSpec) -> bool| {
        let using: Vec<_> = specs.iter().zip(&verdicts).filter(|(s, _)| uses(s)).collect();
        (using.len(), using.iter().filter(|(_, v)| v.rust.is_empty()).count())
    };
    let (with_match_fields, valid_with_match_fields) = count(uses_match_fields);
    let (with_actions, valid_with_actions) = count(uses_actions);
    println!(
        "{total} specs ({SAMPLES} drawn, {topped_up} more to break what those left unbroken): {valid} valid, {} \
         invalid, {} disagreements; {with_match_fields} use the match fields or route order ({valid_with_match_fields} \
         of them valid); {with_actions} use the route actions ({valid_with_actions} of them valid); {} distinct rule \
         ids broken",
        total - valid,
        failures.len(),
        coverage.rule_ids_broken(),
    );
    assert!(
        failures.is_empty(),
        "{} of {total} specs judged differently; the first ones:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    // A sample that is nearly all valid or all invalid would prove little.
    assert!(
        valid >= total / 5 && total - valid >= total / 5,
        "{valid} valid of {total}"
    );
    assert!(
        valid_with_match_fields >= 1_000 && valid_with_actions >= 1_000,
        "{valid_with_match_fields} valid specs use the match fields, {valid_with_actions} the actions"
    );
    let never_broken = coverage.never_broken();
    assert!(
        never_broken.is_empty(),
        "rules of the proto no spec breaks: {never_broken:#?}"
    );
    let unexpected = coverage.unexpected();
    assert!(
        unexpected.is_empty(),
        "violations at paths the model does not place them: {unexpected:#?}"
    );
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
