//! `regex_full_match`, which `explain` matches paths, headers and query
//! parameters with, against RE2 itself (Python's `google-re2` in Latin-1,
//! as Envoy 1.40 runs it): on random expressions the RE2 guard accepts,
//! aimed at its limits too, and texts built to fit them or nearly: the
//! same answer for every pair, or `explain` says it cannot tell.
//!
//! `AETHER_RE2_MATCH_EXPRESSIONS` (default 400) sets the expressions per
//! stream; 20 texts each.

use aether_edge_limits::re2::reference::Re2;
use aether_edge_limits::re2::testing::Expressions;
use aether_specgen::{Choices, Rng};

/// Bytes every text may hold besides the expression's own: the edges of
/// ASCII classes, line ends, and bytes above ASCII.
const EXTRA: &[u8] = b"aZ09_-./ \t\n\r\x00\x7f\x80\xe9\xff";

fn expressions_per_stream() -> usize {
    std::env::var("AETHER_RE2_MATCH_EXPRESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(400)
}

/// Texts for `regex`: random strings over its own bytes and [`EXTRA`], of
/// lengths 0 to 12, and each with a byte changed, added or removed.
fn texts(regex: &str, rng: &mut Rng) -> Vec<Vec<u8>> {
    let alphabet: Vec<u8> = regex
        .bytes()
        .filter(|b| b.is_ascii_alphanumeric())
        .chain(EXTRA.iter().copied())
        .collect();
    let mut texts = Vec::new();
    for _ in 0..10 {
        let text: Vec<u8> = (0..rng.below(13))
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        let mut near = text.clone();
        match (rng.below(3), near.len()) {
            (0, len) if len > 0 => near[rng.below(len)] = alphabet[rng.below(alphabet.len())],
            (1, len) if len > 0 => {
                near.remove(rng.below(len));
            }
            (_, len) => near.insert(rng.below(len + 1), alphabet[rng.below(alphabet.len())]),
        }
        texts.push(text);
        texts.push(near);
    }
    texts
}

fn compare(mut expressions: Expressions, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    let mut accepted = 0;
    while accepted < expressions_per_stream() {
        let regex = expressions.next_expression();
        if aether_edge_limits::re2::check(&regex).is_err() {
            continue;
        }
        accepted += 1;
        for text in texts(&regex, &mut rng) {
            cases.push((regex.clone(), text));
        }
    }
    let answers = Re2::full_match_all(&cases);
    let (mut matched, mut unpredictable, mut disagreements) = (0, 0, Vec::new());
    for ((regex, text), re2) in cases.iter().zip(answers) {
        let re2 = re2.unwrap_or_else(|e| panic!("the guard accepted `{regex}`, RE2 refuses it: {e}"));
        match aether_explain::regex_full_match(regex, text) {
            Ok(ours) if ours == re2 => matched += usize::from(ours),
            Ok(ours) => disagreements.push(format!(
                "`{regex}` on {:?}: RE2 {re2}, explain {ours}",
                String::from_utf8_lossy(text)
            )),
            Err(why) => {
                if unpredictable < 5 {
                    eprintln!("unpredictable: `{regex}`: {why}");
                }
                unpredictable += 1
            }
        }
    }
    eprintln!(
        "{} pairs of {accepted} expressions: {matched} matched, {unpredictable} unpredictable",
        cases.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} of {} pairs differ:\n{}",
        disagreements.len(),
        cases.len(),
        disagreements[..disagreements.len().min(20)].join("\n")
    );
    assert_eq!(unpredictable, 0, "explain cannot read an expression the guard accepts");
    // Not vacuous: a share of the texts fit their expression.
    assert!(
        matched * 50 >= cases.len(),
        "only {matched} of {} texts fit",
        cases.len()
    );
}

#[test]
fn explain_matches_as_re2_on_expressions_the_guard_accepts() {
    compare(Expressions::new(0x5EED), 1);
}

#[test]
fn explain_matches_as_re2_on_expressions_at_the_guards_limits() {
    compare(Expressions::near_limits(0x11A1), 2);
}
