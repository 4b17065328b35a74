//! The well-known string formats' checks (`aether_rules::formats`), built
//! once, and strings drawn to pass them.

use aether_rules::Format;
use aether_rules::formats::Check;

use crate::regex::Pattern;
use crate::{Choices as _, Rng};

thread_local! {
    /// Each format's check, built once per thread (building one compiles
    /// its patterns).
    static CHECKS: std::cell::RefCell<Vec<(Format, Check)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `format`'s check.
pub fn check_of(format: Format) -> Check {
    CHECKS.with(|checks| {
        let mut checks = checks.borrow_mut();
        if let Some((_, check)) = checks.iter().find(|(f, _)| *f == format) {
            return check.clone();
        }
        let check = format.check();
        checks.push((format, check.clone()));
        check
    })
}

/// A string drawn to pass `check` (the first pattern of an `All`: the
/// labels, not this, say whether it passes the others).
pub fn draw(check: &Check, rng: &mut Rng) -> Option<String> {
    match check {
        Check::Pattern(p) => Pattern::new(&p.source).map(|p| p.draw(rng)),
        Check::All(all) => all.first().and_then(|c| draw(c, rng)),
        Check::Any(any) => any.get(rng.below(any.len().max(1))).and_then(|c| draw(c, rng)),
    }
}

/// Whether `value` passes `check`.
pub fn passes(check: &Check, value: &str) -> bool {
    match check {
        Check::Pattern(p) => crate::regex::is_match(&p.source, value).unwrap_or(false),
        Check::All(all) => all.iter().all(|c| passes(c, value)),
        Check::Any(any) => any.iter().any(|c| passes(c, value)),
    }
}
