//! Character classes as RE2 reads them, and what they cost in its program.
//!
//! A class here is a set of code points over RE2's whole range
//! `0..=0x10FFFF`: RE2 builds and negates its classes over that range,
//! then, compiling in Latin-1 (as Envoy 1.40 does), keeps the part up to
//! `0xFF`, one byte range per range. The sets are built with RE2's
//! meanings, not Rust's: `\d`, `\s`, `\w` and the POSIX classes are ASCII
//! (`\s` without `\v`), and case folding (`(?i)`) is applied to ASCII
//! letters only (the caller refuses `(?i)` with other characters, whose
//! fold orbits depend on Unicode versions).

use super::cost::Cost;

/// The largest code point RE2 reads.
const MAX_RUNE: u32 = 0x10FFFF;

/// A set of code points: sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct RuneSet {
    ranges: Vec<(u32, u32)>,
}

impl RuneSet {
    pub(super) fn single(c: u32) -> Self {
        Self { ranges: vec![(c, c)] }
    }

    pub(super) fn add_range(&mut self, lo: u32, hi: u32) {
        self.ranges.push((lo.min(hi), hi.max(lo)));
        self.canonicalize();
    }

    pub(super) fn add_set(&mut self, other: &RuneSet) {
        self.ranges.extend_from_slice(&other.ranges);
        self.canonicalize();
    }

    /// The complement within `0..=0x10FFFF`, as RE2 negates.
    pub(super) fn negated(&self) -> Self {
        let mut ranges = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = 0u32;
        for &(lo, hi) in &self.ranges {
            if lo > next {
                ranges.push((next, lo - 1));
            }
            next = hi + 1;
        }
        if next <= MAX_RUNE {
            ranges.push((next, MAX_RUNE));
        }
        Self { ranges }
    }

    /// RE2's simple case folding, for a set whose letters are ASCII: each
    /// letter brings its other case, and `k`/`s` also bring U+212A KELVIN
    /// SIGN and U+017F LATIN SMALL LETTER LONG S, their fold orbits in
    /// Unicode (in RE2's tables as in Rust's).
    pub(super) fn case_folded(&self) -> Self {
        let mut folded = self.clone();
        for &(lo, hi) in &self.ranges {
            for c in lo..=hi.min(0x7F) {
                let Ok(byte) = u8::try_from(c) else { continue };
                if byte.is_ascii_alphabetic() {
                    let lower = byte.to_ascii_lowercase();
                    folded.ranges.push((u32::from(lower), u32::from(lower)));
                    folded.ranges.push((u32::from(lower - 32), u32::from(lower - 32)));
                    match lower {
                        b'k' => folded.ranges.push((0x212A, 0x212A)),
                        b's' => folded.ranges.push((0x017F, 0x017F)),
                        _ => {}
                    }
                }
            }
        }
        folded.canonicalize();
        folded
    }

    fn canonicalize(&mut self) {
        self.ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.ranges.len());
        for &(lo, hi) in &self.ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        self.ranges = merged;
    }

    /// Whether it holds an ASCII letter.
    pub(super) fn has_ascii_letters(&self) -> bool {
        self.ranges
            .iter()
            .any(|&(lo, hi)| lo <= u32::from(b'z') && hi >= u32::from(b'A') && (lo..=hi.min(0x7F)).any(is_letter))
    }

    /// Whether every ASCII letter in it comes with its other case (RE2's
    /// `FoldsASCII`).
    pub(super) fn folds_ascii(&self) -> bool {
        (u32::from(b'a')..=u32::from(b'z')).all(|lower| self.contains(lower) == self.contains(lower - 32))
    }

    fn contains(&self, c: u32) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi)
    }

    /// Whether it holds no byte (no code point up to `0xFF`).
    pub(super) fn is_empty_in_latin1(&self) -> bool {
        self.ranges.first().is_none_or(|&(lo, _)| lo > 0xFF)
    }

    /// The instructions RE2 compiles this class into, in Latin-1: a byte
    /// range per range (cut at `0xFF`), under a chain of `Alt`s that
    /// flattening removes (they lead only to the class's own byte ranges).
    ///
    /// `fold_ascii`: count as RE2 does for a class that holds every ASCII
    /// letter with its other case, where it leaves out the ranges within
    /// `A-Z` and matches the rest case-insensitively. Only sound when
    /// nothing RE2 may merge this class with (the alternatives of an
    /// alternation become one class) lacks that property: see the caller.
    pub(super) fn cost(&self, fold_ascii: bool) -> Cost {
        let drop_upper = fold_ascii && self.folds_ascii();
        let ranges = self
            .ranges
            .iter()
            .filter(|&&(lo, hi)| lo <= 0xFF && !(drop_upper && u32::from(b'A') <= lo && hi <= u32::from(b'Z')))
            .count() as u64;
        Cost {
            instructions: ranges,
            nop_edges: 0,
        }
    }
}

fn is_letter(c: u32) -> bool {
    u8::try_from(c).is_ok_and(|b| b.is_ascii_alphabetic())
}

/// The ASCII sets of RE2's Perl classes `\d`, `\s`, `\w`.
pub(super) fn perl(kind: &regex_syntax::ast::ClassPerlKind) -> RuneSet {
    use regex_syntax::ast::ClassPerlKind;
    let ranges: &[(u8, u8)] = match kind {
        ClassPerlKind::Digit => &[(b'0', b'9')],
        // RE2's \s is [\t\n\f\r ]: no \v, unlike Rust's.
        ClassPerlKind::Space => &[(b'\t', b'\n'), (0x0C, b'\r'), (b' ', b' ')],
        ClassPerlKind::Word => &[(b'0', b'9'), (b'A', b'Z'), (b'_', b'_'), (b'a', b'z')],
    };
    from_bytes(ranges)
}

/// The ASCII sets of the POSIX classes (`[[:alpha:]]`), the same in RE2
/// and Rust.
pub(super) fn posix(kind: &regex_syntax::ast::ClassAsciiKind) -> RuneSet {
    use regex_syntax::ast::ClassAsciiKind;
    let ranges: &[(u8, u8)] = match kind {
        ClassAsciiKind::Alnum => &[(b'0', b'9'), (b'A', b'Z'), (b'a', b'z')],
        ClassAsciiKind::Alpha => &[(b'A', b'Z'), (b'a', b'z')],
        ClassAsciiKind::Ascii => &[(0, 0x7F)],
        ClassAsciiKind::Blank => &[(b'\t', b'\t'), (b' ', b' ')],
        ClassAsciiKind::Cntrl => &[(0, 0x1F), (0x7F, 0x7F)],
        ClassAsciiKind::Digit => &[(b'0', b'9')],
        ClassAsciiKind::Graph => &[(b'!', b'~')],
        ClassAsciiKind::Lower => &[(b'a', b'z')],
        ClassAsciiKind::Print => &[(b' ', b'~')],
        ClassAsciiKind::Punct => &[(b'!', b'/'), (b':', b'@'), (b'[', b'`'), (b'{', b'~')],
        ClassAsciiKind::Space => &[(b'\t', b'\r'), (b' ', b' ')],
        ClassAsciiKind::Upper => &[(b'A', b'Z')],
        ClassAsciiKind::Word => &[(b'0', b'9'), (b'A', b'Z'), (b'_', b'_'), (b'a', b'z')],
        ClassAsciiKind::Xdigit => &[(b'0', b'9'), (b'A', b'F'), (b'a', b'f')],
    };
    from_bytes(ranges)
}

/// RE2's `.`: every code point but `\n`, or every one with `(?s)`.
pub(super) fn dot(dot_matches_new_line: bool) -> RuneSet {
    let mut set = RuneSet::default();
    if dot_matches_new_line {
        set.add_range(0, MAX_RUNE);
    } else {
        set.add_range(0, 0x09);
        set.add_range(0x0B, MAX_RUNE);
    }
    set
}

fn from_bytes(ranges: &[(u8, u8)]) -> RuneSet {
    let mut set = RuneSet::default();
    for &(lo, hi) in ranges {
        set.add_range(u32::from(lo), u32::from(hi));
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negation_is_over_re2s_whole_range_surrogates_included() {
        let mut a = RuneSet::single(u32::from(b'a'));
        a = a.negated();
        assert_eq!(a.ranges, [(0, 0x60), (0x62, MAX_RUNE)]);
        assert_eq!(a.negated().ranges, [(0x61, 0x61)]);
        assert!(RuneSet::default().negated().negated().is_empty_in_latin1());
    }

    #[test]
    fn case_folding_adds_the_other_case_and_the_unicode_orbits_of_k_and_s() {
        let folded = from_bytes(&[(b'j', b'l')]).case_folded();
        assert_eq!(folded.ranges, [(0x4A, 0x4C), (0x6A, 0x6C), (0x212A, 0x212A)]);
        let folded = from_bytes(&[(b'S', b'S'), (b'1', b'1')]).case_folded();
        assert_eq!(
            folded.ranges,
            [(0x31, 0x31), (0x53, 0x53), (0x73, 0x73), (0x17F, 0x17F)]
        );
    }

    #[test]
    fn a_class_folding_ascii_may_be_counted_without_its_upper_case_ranges() {
        let letters = from_bytes(&[(b'a', b'f')]).case_folded();
        assert!(letters.folds_ascii() && letters.has_ascii_letters());
        assert_eq!(
            letters.cost(true),
            Cost {
                instructions: 1,
                nop_edges: 0
            }
        );
        assert_eq!(
            letters.cost(false),
            Cost {
                instructions: 2,
                nop_edges: 0
            }
        );
        let upper_only = from_bytes(&[(b'A', b'F')]);
        assert!(!upper_only.folds_ascii());
        assert_eq!(
            upper_only.cost(true),
            Cost {
                instructions: 1,
                nop_edges: 0
            }
        );
        assert!(!from_bytes(&[(b'0', b'9')]).has_ascii_letters());
    }

    #[test]
    fn class_costs_count_the_byte_ranges_and_their_alternations() {
        assert_eq!(
            from_bytes(&[(b'0', b'9')]).cost(false),
            Cost {
                instructions: 1,
                nop_edges: 0
            }
        );
        // [00-09] and [0B-FF]; everything above 0xFF is not a byte.
        assert_eq!(
            dot(false).cost(false),
            Cost {
                instructions: 2,
                nop_edges: 0
            }
        );
        assert_eq!(
            dot(true).cost(false),
            Cost {
                instructions: 1,
                nop_edges: 0
            }
        );
        assert_eq!(
            RuneSet::single(0x2603).cost(false),
            Cost {
                instructions: 0,
                nop_edges: 0
            }
        );
        assert!(RuneSet::single(0x2603).is_empty_in_latin1());
        assert!(!RuneSet::single(0xFF).is_empty_in_latin1());
    }
}
