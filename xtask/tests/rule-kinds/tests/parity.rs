//! The three judges on 10,000 specs of the rule-kinds test API, drawn from
//! the cases' values at every rule's edges (see `support/generate.rs`, fixed
//! seed): they must agree on valid or invalid, and the Rust validator and
//! protovalidate on each (path, rule id). A disagreement is a bug in a
//! mapping, never a case to exclude.

mod support;

use std::collections::BTreeSet;

use support::generate::{Generator, Rng};
use support::{Verdict, cases, judge, pattern_of};

const SAMPLES: usize = 10_000;

fn sample(count: usize) -> Vec<serde_json::Value> {
    let mut all = cases("valid");
    all.extend(cases("invalid"));
    let generator = Generator::from_cases(&all);
    let mut rng = Rng::new(0x005e_ed0f_7e57);
    // A mix of rates of bad values: specs with none, one and several.
    let rates = [0.0, 0.003, 0.01, 0.04];
    (0..count)
        .map(|i| generator.spec(&mut rng, rates[i % rates.len()]))
        .collect()
}

#[test]
fn the_three_judges_agree_on_10000_generated_specs() {
    let specs = sample(SAMPLES);
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
    let valid = verdicts.iter().filter(|v| v.rust.is_empty()).count();
    println!(
        "{SAMPLES} specs: {valid} valid, {} invalid, {} disagreements",
        SAMPLES - valid,
        failures.len()
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
    // Every rule the cases break is broken somewhere in the sample too.
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
    assert!(missing.is_empty(), "never broken in the sample: {missing:#?}");
}
