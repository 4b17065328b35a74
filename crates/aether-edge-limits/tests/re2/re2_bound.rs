//! The RE2 guard against the real RE2 (`re2::reference`: Python's
//! `google-re2` in Latin-1, as Envoy 1.40 runs it): on
//! thousands of generated expressions, RE2 compiles every one the guard
//! accepts, and the guard's bound is never below RE2's program size.

use aether_edge_limits::re2::reference::Re2;
use aether_edge_limits::re2::testing::Expressions;
use aether_edge_limits::re2::{ENVOY_MAX_PROGRAM_SIZE, Re2Refusal, check, program_size_bound};

/// Generated expressions compared (each also under two anchorings).
const CASES: usize = 12_000;

/// RE2's program size for each expression, or `None` where RE2 refuses it.
fn re2_program_sizes(regexes: &[String]) -> Vec<Option<u64>> {
    Re2::compile_all(regexes).into_iter().map(Result::ok).collect()
}

#[test]
fn the_bound_is_never_below_re2s_program_size_and_re2_compiles_all_the_guard_accepts() {
    let mut expressions = Expressions::new(0x5EED_F2E2);
    let mut regexes = Vec::with_capacity(CASES * 3);
    for _ in 0..CASES {
        let regex = expressions.next_expression();
        // The same expression anchored, as routes are usually written.
        regexes.push(format!("^{regex}$"));
        regexes.push(format!("/{regex}"));
        regexes.push(regex);
    }
    let sizes = re2_program_sizes(&regexes);

    let (mut bounded, mut accepted, mut refused_syntax, mut refused_construct, mut too_large) = (0, 0, 0, 0, 0);
    let (mut ratio_sum, mut worst_ratio, mut worst) = (0.0f64, 0.0f64, String::new());
    // Of the expressions RE2 compiles within Envoy's limit, how many the
    // guard lets through: all of them below 50, and near the limit?
    let (mut real_small, mut real_small_accepted, mut real_near, mut real_near_accepted) = (0, 0, 0, 0);
    let mut refusals = std::collections::BTreeMap::new();
    for (regex, real) in regexes.iter().zip(&sizes) {
        let bound = match program_size_bound(regex) {
            Ok(bound) => bound,
            Err(Re2Refusal::Syntax(_)) => {
                refused_syntax += 1;
                continue;
            }
            Err(Re2Refusal::Unsupported { construct, .. }) => {
                *refusals.entry(construct).or_insert(0usize) += 1;
                refused_construct += 1;
                continue;
            }
            Err(Re2Refusal::TooLarge { .. }) => unreachable!("program_size_bound has no limit"),
        };
        let real = real.unwrap_or_else(|| panic!("the guard accepts {regex:?}, RE2 refuses it"));
        assert!(
            bound >= real,
            "{regex:?}: bound {bound} below RE2's program size {real}"
        );
        bounded += 1;
        let ratio = bound as f64 / real as f64;
        ratio_sum += ratio;
        if ratio > worst_ratio {
            worst_ratio = ratio;
            worst = format!("{regex:?} (bound {bound}, RE2 {real})");
        }
        match check(regex) {
            Ok(_) => {
                accepted += 1;
                assert!(real <= ENVOY_MAX_PROGRAM_SIZE);
            }
            Err(_) => too_large += 1,
        }
        if real <= ENVOY_MAX_PROGRAM_SIZE {
            if real <= 30 {
                real_small += 1;
                real_small_accepted += usize::from(bound <= ENVOY_MAX_PROGRAM_SIZE);
            } else if real > 60 {
                real_near += 1;
                real_near_accepted += usize::from(bound <= ENVOY_MAX_PROGRAM_SIZE);
            }
        }
    }
    eprintln!(
        "{} expressions: {refused_syntax} not regular expressions, {refused_construct} refused constructs, {bounded} \
         bounded; of these {accepted} accepted, {too_large} above Envoy's limit by the bound",
        regexes.len()
    );
    eprintln!("refused constructs: {refusals:?}");
    eprintln!(
        "bound / RE2 program size: mean {:.2}, worst {worst_ratio:.2}: {worst}",
        ratio_sum / f64::from(u32::try_from(bounded).expect("fits"))
    );
    eprintln!(
        "RE2 size <= 30: {real_small_accepted} of {real_small} accepted; RE2 size 61..=100: {real_near_accepted} of \
         {real_near} accepted"
    );
    // The generator reaches every outcome, in numbers.
    assert!(bounded > CASES, "{bounded}");
    assert!(
        accepted > CASES / 2 && too_large > 500 && refused_construct > 500,
        "{accepted} {too_large} {refused_construct}"
    );
}
