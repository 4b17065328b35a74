//! The RE2 guard against RE2 itself (`re2::reference`: the pinned
//! `google-re2`, Latin-1, as Envoy 1.40 compiles) on expressions generated
//! at RE2's limits (`Expressions::near_limits`): no expression the guard
//! accepts is one RE2 refuses or compiles above Envoy's 100, its bound is
//! never below RE2's program size, and the nested-count rule is exact.
//! `RE2_PARITY_CASES` raises the count (100,000 by default, a few seconds).

use std::collections::BTreeMap;
use std::time::Instant;

use aether_edge_limits::re2::reference::Re2;
use aether_edge_limits::re2::testing::Expressions;
use aether_edge_limits::re2::{ENVOY_MAX_PROGRAM_SIZE, Re2Refusal, program_size_bound};

/// Generated expressions compared by default.
const CASES: usize = 100_000;

/// The regexes of issue 31's first finding, and their neighbours at 1000.
const FINDING: &[&str] = &[
    "/(?:(?:a{2}){501}){0}x",
    "/(?:(?:a{2}){501}){0,0}x",
    "(?:(?:a{1000}){2}){0}",
    "/(?:(?:(?:a{10}){10}){11}){0}",
    "(?:(?:a{2}){500}){0}",
    "/(?:(?:(?:a{10}){10}){10}){0}x",
];

/// What the guard says, in the words of the counts below, and its bound
/// when it reads the expression (above Envoy's limit too).
fn guard(regex: &str) -> (Result<u64, String>, Option<u64>) {
    match program_size_bound(regex) {
        Ok(bound) if bound <= ENVOY_MAX_PROGRAM_SIZE => (Ok(bound), Some(bound)),
        Ok(bound) => (Err("too large".to_owned()), Some(bound)),
        Err(Re2Refusal::Syntax(_)) => (Err("syntax".to_owned()), None),
        Err(Re2Refusal::Unsupported { construct, .. }) if construct.starts_with("counted repetitions nested") => {
            (Err("nested counts".to_owned()), None)
        }
        Err(Re2Refusal::Unsupported { .. }) => (Err("unsupported".to_owned()), None),
        Err(Re2Refusal::TooLarge { .. }) => unreachable!("program_size_bound has no limit"),
    }
}

/// RE2's message without its argument (`invalid repetition size: {501}`).
fn kind(message: &str) -> &str {
    message.split(':').next().unwrap_or(message)
}

#[test]
fn the_guard_accepts_nothing_re2_refuses_on_expressions_generated_at_re2s_limits() {
    let cases = std::env::var("RE2_PARITY_CASES").map_or(CASES, |n| n.parse().expect("RE2_PARITY_CASES is a count"));
    let started = Instant::now();
    let mut expressions = Expressions::near_limits(0x31_2E2);
    let mut regexes: Vec<String> = FINDING.iter().map(|r| (*r).to_owned()).collect();
    regexes.extend((0..cases).map(|_| expressions.next_expression()));
    let generated = started.elapsed();
    // RE2 answers in its process while the guard judges here.
    let (answers, guards) = std::thread::scope(|scope| {
        let re2 = scope.spawn(|| Re2::compile_all(&regexes));
        let guards: Vec<_> = regexes.iter().map(|regex| guard(regex)).collect();
        (re2.join().expect("RE2 answers"), guards)
    });
    let compiled = started.elapsed();

    // (what the guard says, what RE2 says) → how many.
    let mut outcomes: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for ((regex, answer), (guard, bound)) in regexes.iter().zip(&answers).zip(&guards) {
        let re2 = match answer {
            Ok(size) if *size <= ENVOY_MAX_PROGRAM_SIZE => "compiles within 100".to_owned(),
            Ok(_) => "compiles above 100".to_owned(),
            Err(message) => format!("refuses: {}", kind(message)),
        };
        let said = match guard {
            Ok(bound) => {
                // Accepted: RE2 compiles it within 100 and the bound.
                if !matches!(answer, Ok(size) if size <= bound && *size <= ENVOY_MAX_PROGRAM_SIZE) {
                    wrong.push(format!("{regex:?}: guard accepts (bound {bound}), RE2 {answer:?}"));
                }
                "accepts"
            }
            Err(why) => {
                // The nested-count rule is RE2's own: exact.
                if why == "nested counts" && answer.is_ok() {
                    wrong.push(format!("{regex:?}: refused for its nested counts, RE2 {answer:?}"));
                }
                // Above Envoy's limit by the bound: still never below RE2.
                if let (Some(bound), Ok(size)) = (bound, answer)
                    && bound < size
                {
                    wrong.push(format!("{regex:?}: bound {bound} below RE2's program size {size}"));
                }
                why.as_str()
            }
        };
        *outcomes.entry((said.to_owned(), re2)).or_default() += 1;
    }
    eprintln!(
        "{} expressions ({} of issue 31, {cases} generated): generated in {generated:.2?}, judged by RE2 and the \
         guard side by side in {:.2?}",
        regexes.len(),
        FINDING.len(),
        compiled - generated,
    );
    eprintln!("  {:>7}  {:<32}  RE2", "count", "guard");
    for ((guard, re2), count) in &outcomes {
        eprintln!("  {count:>7}  {guard:<32}  {re2}");
    }
    assert!(
        wrong.is_empty(),
        "{} disagreements, the first: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(20)]
    );

    // The regexes: the first four refused for their nested counts,
    // as RE2 refuses them; the product of 1000 accepted, as RE2 compiles it.
    for regex in &FINDING[..4] {
        assert_eq!(guard(regex).0, Err("nested counts".to_owned()), "{regex}");
    }
    for regex in &FINDING[4..] {
        assert!(guard(regex).0.is_ok(), "{regex}");
    }
    // The generator reaches every side of the limits, in numbers.
    let count = |guard: &str, re2: &str| {
        outcomes
            .iter()
            .filter(|((g, r), _)| g.starts_with(guard) && r.starts_with(re2))
            .map(|(_, n)| n)
            .sum::<usize>()
    };
    let least = cases / 50;
    assert!(count("accepts", "compiles within 100") > cases / 10, "{outcomes:?}");
    assert!(
        count("nested counts", "refuses: invalid repetition size") > least,
        "{outcomes:?}"
    );
    assert!(count("", "compiles above 100") > least, "{outcomes:?}");
    assert!(count("too large", "compiles within 100") > least, "{outcomes:?}");
    for refusal in ["syntax", "unsupported"] {
        assert!(count(refusal, "refuses") > least, "{outcomes:?}");
    }
}
