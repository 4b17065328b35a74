//! Strings a pattern matches, drawn by walking its syntax tree.
//!
//! Ours because the generators we could depend on refuse what every
//! pattern of an API has: proptest's `string_regex` rejects anchors
//! (`^...$`), and rand_regex needs a `rand` generator where ours draw from a
//! [`Choices`] (a fuzzer's bytes or a seeded generator alike).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::Choices;

/// Whether `value` matches the pattern `source` (`None` when it does not
/// compile). Each pattern is compiled once: labelling a generator's
/// candidates and evaluating CEL `matches()` ask the same few patterns
/// thousands of times.
pub fn is_match(source: &str, value: &str) -> Option<bool> {
    static COMPILED: LazyLock<Mutex<HashMap<String, Option<regex::Regex>>>> = LazyLock::new(Default::default);
    let regex = {
        let mut compiled = COMPILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        compiled
            .entry(source.to_owned())
            .or_insert_with(|| regex::Regex::new(source).ok())
            .clone()
    };
    regex.map(|r| r.is_match(value))
}

/// How many times an unbounded repetition (`*`, `+`, `{n,}`) repeats at most
/// beyond its minimum: long enough to vary, short enough to stay cheap.
const UNBOUNDED_EXTRA: u32 = 8;

/// A pattern parsed once, to draw strings from.
pub struct Pattern(Hir);

impl Pattern {
    /// Parses `source` as the `regex` crate does; `None` if it cannot.
    pub fn new(source: &str) -> Option<Self> {
        regex_syntax::Parser::new().parse(source).ok().map(Self)
    }

    /// A string matching the pattern (anchors are satisfied by placement).
    pub fn draw(&self, choices: &mut dyn Choices) -> String {
        let mut out = String::new();
        draw(&self.0, choices, &mut out);
        out
    }
}

fn draw(hir: &Hir, choices: &mut dyn Choices, out: &mut String) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => out.push_str(&String::from_utf8_lossy(&literal.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            if ranges.is_empty() {
                return;
            }
            let range = ranges[choices.below(ranges.len())];
            let span = u32::from(range.end()) - u32::from(range.start()) + 1;
            let pick = u32::from(range.start()) + choices.below(span as usize) as u32;
            out.push(char::from_u32(pick).unwrap_or(range.start()));
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges = class.ranges();
            if ranges.is_empty() {
                return;
            }
            let range = ranges[choices.below(ranges.len())];
            let span = usize::from(range.end() - range.start()) + 1;
            out.push(char::from(range.start() + choices.below(span) as u8));
        }
        HirKind::Repetition(repetition) => {
            let max = repetition.max.unwrap_or(repetition.min + UNBOUNDED_EXTRA);
            // The ends of the range as often as the middle: the edges of a
            // bounded repetition (a 63-character label) are where rules bite.
            let count = match choices.below(4) {
                0 => repetition.min,
                1 => max,
                _ => repetition.min + choices.below((max - repetition.min + 1) as usize) as u32,
            };
            for _ in 0..count {
                draw(&repetition.sub, choices, out);
            }
        }
        HirKind::Capture(capture) => draw(&capture.sub, choices, out),
        HirKind::Concat(parts) => parts.iter().for_each(|part| draw(part, choices, out)),
        HirKind::Alternation(options) => draw(&options[choices.below(options.len())], choices, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rng;

    #[test]
    fn drawn_strings_match_their_pattern() {
        let mut rng = Rng::new(7);
        for source in [
            "^[a-z]+$",
            "^(\\*\\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$",
            "^([0-9]{1,5}(h|m|s|ms)){1,4}$",
            "^/([A-Za-z0-9._~-]|%[0-9A-F]{2})*$",
        ] {
            let pattern = Pattern::new(source).unwrap();
            let regex = regex::Regex::new(source).unwrap();
            for _ in 0..200 {
                let drawn = pattern.draw(&mut rng);
                assert!(regex.is_match(&drawn), "{drawn:?} does not match {source}");
            }
        }
    }
}
