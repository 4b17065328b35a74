//! Repetitions: RE2's rules for `*`, `+`, `?` and counted `{n,m}`, and
//! what each repetition costs in its program.

use regex_syntax::ast::{self, Ast, RepetitionKind, RepetitionRange};

use super::{Node, Walker, unsupported};
use crate::re2::cost::{ALT, Cost};
use crate::re2::{RE2_MAX_REPEAT, Re2Refusal};

impl Walker<'_> {
    pub(super) fn repetition(&mut self, repetition: &ast::Repetition) -> Result<Node, Re2Refusal> {
        if matches!(*repetition.ast, Ast::Repetition(_)) {
            return Err(unsupported(
                "a repetition of a repetition (RE2 refuses a** and a{2}{3}: group the inner one)",
                &repetition.op.span,
            ));
        }
        let (min, max) = match &repetition.op.kind {
            RepetitionKind::ZeroOrOne => (0, Some(1)),
            RepetitionKind::ZeroOrMore => (0, None),
            RepetitionKind::OneOrMore => (1, None),
            RepetitionKind::Range(range) => {
                // RE2 reads `{` as a character unless `{n}`, `{n,}` or
                // `{n,m}` follows exactly; Rust also takes spaces and `{,m}`.
                let text = &self.source[repetition.op.span.start.offset..repetition.op.span.end.offset];
                if !is_strict_count(text.strip_suffix('?').unwrap_or(text)) {
                    return Err(unsupported(
                        "a counted repetition not written {n}, {n,} or {n,m}",
                        &repetition.op.span,
                    ));
                }
                // RE2 reads no number with a leading zero: `a{09}` is text.
                if has_leading_zero(text) {
                    return Err(unsupported(
                        "a count with a leading zero (RE2 reads {09} as text)",
                        &repetition.op.span,
                    ));
                }
                let (min, max) = match *range {
                    RepetitionRange::Exactly(n) => (n, Some(n)),
                    RepetitionRange::AtLeast(n) => (n, None),
                    RepetitionRange::Bounded(n, m) => (n, Some(m)),
                };
                if min.max(max.unwrap_or(0)) > RE2_MAX_REPEAT {
                    return Err(unsupported(
                        format!("a repetition count above RE2's {RE2_MAX_REPEAT}"),
                        &repetition.op.span,
                    ));
                }
                (min, max)
            }
        };
        let sub = self.node(&repetition.ast)?;
        let nested_counts = nested_counts(&repetition.op, min, max, sub.nested_counts)?;
        // As RE2 simplifies them: x{n,} is n copies then x+ (x* when n is
        // 0); x{n,m} is m copies, the last m-n each under a `?`; x{0} is
        // an empty match; a star of a nullable x is (x+)?.
        // A loop over one byte range may end as an `AltMatch` (a `.*` in
        // front of the match, with `(?s)`), one more instruction.
        let loop_alt = if sub.cost == Cost::new(1, 0) {
            ALT.plus(Cost::new(1, 0))
        } else {
            ALT
        };
        let star = sub
            .cost
            .plus(loop_alt)
            .plus(if sub.nullable { ALT } else { Cost::default() });
        let cost = match (min, max) {
            (0, Some(0)) => Cost::new(1, 0),
            (0, None) => star,
            (n, None) => sub.cost.times(n).plus(loop_alt),
            (n, Some(m)) => sub.cost.times(m).plus(ALT.times(m - n)),
        };
        Ok(Node {
            cost,
            nullable: min == 0 || sub.nullable,
            nested_counts,
        })
    }
}

/// RE2's parser, as it pushes a counted repetition of count 2 or more
/// (`RepetitionWalker` in its `parse.cc`), divides 1000 by the count of
/// each counted repetition below, its own first (the maximum, or the
/// minimum when unbounded; a count of 0 divides nothing), and refuses
/// the expression ("invalid repetition size") when the quotient reaches
/// 0: when the counts on one path multiply to more than 1000. It does
/// so before simplifying, so under `{0}` too, where the program stays
/// small. `*`, `+` and `?` are not counted repetitions. The product of
/// `op` over `below`, the largest below it, or the refusal naming `op`,
/// the repetition RE2 names (the first pushed whose walk fails: the
/// walk is bottom-up and left to right, as RE2 pushes).
pub(super) fn nested_counts(op: &ast::RepetitionOp, min: u32, max: Option<u32>, below: u32) -> Result<u32, Re2Refusal> {
    if !matches!(op.kind, RepetitionKind::Range(_)) {
        return Ok(below);
    }
    let product = max.unwrap_or(min).max(1).saturating_mul(below);
    if product > RE2_MAX_REPEAT {
        return Err(unsupported(
            format!(
                "counted repetitions nested to a product of {product} (RE2 refuses a product of nested counts \
                 above {RE2_MAX_REPEAT}, even under {{0}})"
            ),
            &op.span,
        ));
    }
    Ok(product)
}

/// `{n}`, `{n,}` or `{n,m}`, digits only.
fn is_strict_count(text: &str) -> bool {
    let Some(inner) = text.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match inner.split_once(',') {
        None => digits(inner),
        Some((min, max)) => digits(min) && (max.is_empty() || digits(max)),
    }
}

/// Whether a number of `{n}`, `{n,}` or `{n,m}` has a leading zero.
fn has_leading_zero(text: &str) -> bool {
    text.trim_start_matches('{')
        .split([',', '}'])
        .any(|number| number.len() > 1 && number.starts_with('0'))
}
