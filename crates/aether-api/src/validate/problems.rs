//! An object's list of violations, as every reader and consumer of objects
//! reports it: bounded (the rest counted in one [`RULE_MORE`] violation),
//! what did not decode first and the rules the rest breaks after, worded as
//! the validator words a list.

use super::{Violation, Violations};

/// The rule of a list above its schema's `maxItems`, found before decoding
/// and cut to them (as protovalidate names the rule). The items kept are
/// read and judged as ever, so the violations in them are still reported.
pub const RULE_MAX_ITEMS: &str = "repeated.max_items";

/// The rule of the one violation that stands for those left out of a list
/// capped at [`MAX_PROBLEMS`] (see [`capped`]): its message says how many
/// (`and 1199900 more`), and its path is empty.
pub const RULE_MORE: &str = "more";

/// Most violations listed per object; the rest are counted in one
/// [`RULE_MORE`] violation. (The validator's violations are bounded by the
/// schema's list bounds, to which a reading cuts every list first.) So an
/// object with a million broken items costs 100 paths in memory and about
/// 10 KiB of message, not 2.4 million paths and 170 MiB.
pub const MAX_PROBLEMS: usize = 100;

/// How many violations a [`RULE_MORE`] violation stands for; 0 for any other.
pub fn more_count(problem: &Violation) -> usize {
    if problem.rule_id != RULE_MORE {
        return 0;
    }
    problem
        .message
        .strip_prefix("and ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The [`RULE_MORE`] violation standing for `count` violations left out.
fn more(count: usize) -> Violation {
    Violation::new(String::new(), RULE_MORE, format!("and {count} more"))
}

/// `problems`, the first [`MAX_PROBLEMS`] of them listed and the rest
/// (with any already counted in a [`RULE_MORE`] violation) counted in one
/// [`RULE_MORE`] violation at the end.
pub fn capped(problems: Vec<Violation>) -> Vec<Violation> {
    let mut more_than_listed = 0;
    let mut listed = Vec::with_capacity(problems.len().min(MAX_PROBLEMS + 1));
    for problem in problems {
        if problem.rule_id == RULE_MORE {
            more_than_listed += more_count(&problem);
        } else if listed.len() < MAX_PROBLEMS {
            listed.push(problem);
        } else {
            more_than_listed += 1;
        }
    }
    if more_than_listed > 0 {
        listed.push(more(more_than_listed));
    }
    listed
}

/// Every violation of some objects, as [`Violations`] displays a list
/// (`2 validation errors:` then one per line; a [`RULE_MORE`] violation as
/// `and N more`, counted in the total).
pub fn describe_all(problems: &[Violation]) -> String {
    let total: usize = problems
        .iter()
        .map(|p| more_count(p).max(usize::from(p.rule_id != RULE_MORE)))
        .sum();
    let mut out = match total {
        1 => "1 validation error:".to_owned(),
        n => format!("{n} validation errors:"),
    };
    for problem in problems {
        if problem.rule_id == RULE_MORE {
            out.push_str(&format!("\n  - {}", problem.message));
        } else {
            out.push_str(&format!("\n  - {problem}"));
        }
    }
    out
}

/// `problems` (values that did not decode), then the validator's
/// `violations` of the same value, except those on a value with a problem,
/// under it, or around it: a refused value was left at its default, so a
/// rule that requires, counts or compares it would speak of the gap, not of
/// the manifest. Capped (see [`capped`]): the problems are first, so each
/// violation is compared with at most 100 of them (the violations are
/// bounded by the schema's list bounds, to which the reading cut the lists).
pub fn with_violations(problems: Vec<Violation>, violations: impl IntoIterator<Item = Violation>) -> Vec<Violation> {
    let mut problems = capped(problems);
    // `a` is `b`, or a field or item of it.
    let within = |a: &str, b: &str| {
        a.strip_prefix(b)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    let kept: Vec<Violation> = violations
        .into_iter()
        .filter(|v| {
            !problems
                .iter()
                // A list cut to its `maxItems` is no gap: its items are read.
                .any(|p| {
                    p.rule_id != RULE_MORE
                        && p.rule_id != RULE_MAX_ITEMS
                        && (within(&v.field_path, &p.field_path) || within(&p.field_path, &v.field_path))
                })
        })
        .collect();
    problems.extend(kept);
    capped(problems)
}

/// The violations `validate` found, if any, one by one.
pub fn violations_of(found: Result<(), Violations>) -> impl Iterator<Item = Violation> {
    found.err().into_iter().flatten()
}
