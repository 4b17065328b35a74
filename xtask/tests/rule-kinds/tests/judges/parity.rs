//! The three judges on 10,000 specs of the rule-kinds test API, drawn from
//! its rules model (`aether_specgen`, fixed seed, seeded with every case's
//! values): they must agree on valid or invalid, and the Rust validator and
//! protovalidate on each (path, rule id). A disagreement is a bug in a
//! mapping, never a case to exclude. The sample's coverage is printed per
//! field path and rule id; every rule of the test API must be broken
//! somewhere in it, and at no place the model does not put it.

use std::collections::BTreeSet;

use aether_specgen::{Coverage, Generator, Rng};

use crate::common::{SPEC, Verdict, cases, judge, pattern_of};

const SAMPLES: usize = 10_000;

/// The rates of doubtful values per place: specs with none, one and several.
const BADNESS: [f64; 4] = [0.0, 0.01, 0.03, 0.08];

/// The generator of specs, seeded with the values of every case.
fn generator() -> Generator {
    let descriptors = std::fs::read(aether_rule_kinds::PROTO3_DESCRIPTORS).expect("the generated descriptors");
    let mut generator = Generator::new(&descriptors, SPEC).expect("the rules model reads");
    for case in cases("valid").into_iter().chain(cases("invalid")) {
        generator.seed(&case.spec);
    }
    generator
}

/// `count` specs from the generator, the same on every run.
fn sample(generator: &Generator, count: usize) -> Vec<serde_json::Value> {
    let mut rng = Rng::new(0x005e_ed0f_7e57);
    (0..count)
        .map(|i| generator.spec(&mut rng, BADNESS[i % BADNESS.len()]))
        .collect()
}

#[test]
fn the_three_judges_agree_on_10000_generated_specs_and_break_every_rule() {
    let generator = generator();
    let specs = sample(&generator, SAMPLES);
    let verdicts = judge(&specs);
    let failures: Vec<_> = specs
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| !v.agrees())
        .map(|(spec, v)| {
            format!(
                "spec {spec}\n  rust: {:?}\n  protovalidate: {:?}\n  crd: {:?}",
                Verdict::pairs(&v.rust),
                Verdict::pairs(&v.reference),
                v.crd
            )
        })
        .collect();
    let mut coverage = Coverage::new(&generator, "spec");
    for (spec, v) in specs.iter().zip(&verdicts) {
        coverage.record(spec, &Verdict::pairs(&v.rust));
    }
    println!("{}", coverage.report());
    let valid = verdicts.iter().filter(|v| v.rust.is_empty()).count();
    println!(
        "{SAMPLES} specs: {valid} valid, {} invalid, {} disagreements; {} distinct rule ids broken",
        SAMPLES - valid,
        failures.len(),
        coverage.rule_ids_broken(),
    );
    assert!(
        failures.is_empty(),
        "{} of {SAMPLES} specs judged differently; the first ones:\n{}",
        failures.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    // A sample nearly all valid or all invalid would prove little.
    assert!(
        valid >= SAMPLES / 5 && SAMPLES - valid >= SAMPLES / 5,
        "{valid} valid of {SAMPLES}"
    );
    let never_broken = coverage.never_broken();
    assert!(
        never_broken.is_empty(),
        "rules of the test API no spec breaks: {never_broken:#?}"
    );
    let unexpected = coverage.unexpected();
    assert!(
        unexpected.is_empty(),
        "violations at paths the model does not place them: {unexpected:#?}"
    );
    // Every (path, rule) a case breaks by hand is broken in the sample too.
    let broken: BTreeSet<_> = verdicts
        .iter()
        .flat_map(|v| v.rust.iter().map(|(path, rule, _)| (pattern_of(path), rule.clone())))
        .collect();
    let expected: BTreeSet<_> = cases("invalid")
        .into_iter()
        .flat_map(|c| c.expect)
        .map(|(path, rule)| (pattern_of(&path), rule))
        .collect();
    let missing: Vec<_> = expected.difference(&broken).collect();
    assert!(
        missing.is_empty(),
        "broken by a case, never in the sample: {missing:#?}"
    );
}
