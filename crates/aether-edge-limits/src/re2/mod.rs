//! The RE2 guard: which regular expressions the edge's Envoy compiles.
//!
//! Envoy compiles every `safe_regex` with RE2 and refuses the whole
//! `RouteConfiguration`, every host with it, when one regex does not
//! compile or its RE2 program is larger than the runtime value
//! `re2.max_program_size.error_level` (100 by default; Envoy's
//! `source/common/common/regex.cc`). Neither can be said as a
//! buf.validate or CEL rule, so [`check`] says it, and the webhook
//! (denying) and the projection (leaving the route out) call it.
//!
//! Measured on Envoy 1.40 (the real-Envoy suite, `tests/envoy/regexes.rs`
//! of the controller): a program of 100 is applied, 101 refused; and its
//! RE2 runs in **Latin-1**: it matches bytes (`.` is one byte), refuses
//! `\x{100}` and above ("invalid escape sequence"), and reads a
//! pattern's non-ASCII bytes one by one.
//!
//! How: the expression is parsed with `regex-syntax` (Rust's regex parser;
//! RE2 has no Rust binding) and accepted only if every construct in it is
//! on an allow-list of syntax RE2 accepts too and reads the same way, with
//! RE2's meaning where the two differ in meaning only: `\d`, `\s`, `\w`,
//! `\b` are ASCII, as in RE2. The rest is refused, naming the construct:
//! non-ASCII characters (write `\xHH`), characters above `\xFF`, Unicode
//! classes (`\p{..}`), nested classes and class set operations (`[a[b]]`,
//! `&&`, `--`, `~~`: RE2 reads them as literal characters), `\<`, `\>`,
//! `\b{..}`, `\u`/`\U` escapes, flags other than `i m s U`, `(?<name>..)`
//! (`(?P<name>..)` is accepted), repetitions of repetitions (`a**`),
//! counted repetitions RE2 would read as text (`a{ 2}`, `a{,2}`, a
//! count with a leading zero: `a{09}`) or above
//! RE2's 1000, counted repetitions nested so that their counts on one path
//! multiply above 1000 (each its maximum, or its minimum when unbounded;
//! counts of 0 and `*`, `+`, `?` multiply nothing), even under `{0}`:
//! RE2's parser refuses them before simplifying (`RepetitionWalker` in its
//! `parse.cc`), as `(?:(?:a{2}){501}){0}`, whose program would be small;
//! classes that match no byte, a `-` after a character in a
//! class where RE2 would read a range (`[--\W]`), and `(?i)` together
//! with non-ASCII characters.
//!
//! Then it bounds the size of RE2's program from above, without RE2. RE2
//! compiles, then flattens its program: every `Alt` goes, each
//! instruction that consumes or marks input (a byte range, a capture, an
//! empty-width assertion, the match) stays once, and an `Alt` edge leading
//! to an instruction that heads a list of its own (a loop, a join)
//! becomes a `Nop`. The bound is `E + N + 6`: `E` those instructions,
//! `N` the `Alt` edges that may become a `Nop` (both edges of the `Alt` of
//! a `*`, `+`, `?`; one edge into each alternative of `|`; none of a
//! class's `Alt`s, which lead to its fresh byte ranges), and the 6 the
//! failure instruction, the match, the unanchored `.*?` prefix (a byte
//! range and an `Alt` of two edges) and the `AltMatch` it may become.
//! Every construct counts what RE2 may compile for it at most (counted
//! repetitions as the copies RE2 makes of them, a class one byte range per
//! range, `class::RuneSet::cost`); RE2's own simplifications
//! only shrink the program. Tests compare the guard with RE2 itself
//! (`reference`: Python's `google-re2`, in Latin-1): the bound with its
//! `ProgramSize()` on 36,000 generated expressions, never below it; and
//! on 100,000 expressions generated at RE2's limits (`tests/re2/re2_parity.rs`,
//! and the fuzz target `re2_parity`), none the guard accepts RE2 refuses
//! or compiles above 100. Where the guard cannot read as RE2 does, it
//! refuses, naming the construct.

mod class;
mod cost;
#[cfg(feature = "testing")]
pub mod reference;
#[cfg(feature = "testing")]
pub mod testing;
mod walk;

use std::fmt;

use regex_syntax::ast;

use walk::Walker;

/// Envoy's default `re2.max_program_size.error_level`: the largest RE2
/// program size it accepts.
pub const ENVOY_MAX_PROGRAM_SIZE: u64 = 100;

/// RE2's largest count in a counted repetition (`a{1000}`), and the
/// largest product of nested counts (`(?:(?:a{2}){500}){0}`).
pub(crate) const RE2_MAX_REPEAT: u32 = 1000;

/// Why a regular expression is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Re2Refusal {
    /// Not a regular expression at all (Rust's parser refuses it).
    Syntax(String),
    /// A construct RE2 does not accept, or reads otherwise than Rust.
    Unsupported {
        /// What, in words.
        construct: String,
        /// Its byte offset in the expression.
        offset: usize,
    },
    /// RE2's program may be larger than Envoy accepts.
    TooLarge {
        /// The upper bound of RE2's program size.
        bound: u64,
    },
}

impl fmt::Display for Re2Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(error) => write!(f, "not a regular expression: {error}"),
            Self::Unsupported { construct, offset } => {
                write!(
                    f,
                    "{construct} (at offset {offset}) is not accepted: the edge's RE2 does not read it as written"
                )
            }
            Self::TooLarge { bound } => write!(
                f,
                "RE2 may compile this into a program of up to {bound} instructions; Envoy refuses programs above \
                 {ENVOY_MAX_PROGRAM_SIZE} (simplify it: fewer alternatives, smaller counted repetitions, fewer \
                 `.` and negated classes)"
            ),
        }
    }
}

impl std::error::Error for Re2Refusal {}

/// Whether the edge's Envoy compiles `regex` (RE2 syntax, within its
/// default program size): `Ok` with the upper bound of the program size,
/// or why not.
pub fn check(regex: &str) -> Result<u64, Re2Refusal> {
    let bound = program_size_bound(regex)?;
    if bound > ENVOY_MAX_PROGRAM_SIZE {
        return Err(Re2Refusal::TooLarge { bound });
    }
    Ok(bound)
}

/// The allow-list and the upper bound of RE2's program size, with no limit
/// on the size (what [`check`] compares with Envoy's).
pub fn program_size_bound(regex: &str) -> Result<u64, Re2Refusal> {
    // 100 levels: far inside RE2's own nesting limit (1000), and a program
    // that nests deeper would not fit in Envoy's size anyway.
    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(100)
        .build()
        .parse(regex)
        .map_err(|error| Re2Refusal::Syntax(error.kind().to_string()))?;
    // First counted with RE2's saving for classes that fold ASCII; if the
    // expression also holds letters in one case only, which RE2 may merge
    // with them into a class that does not fold, counted without it.
    let mut walker = Walker::new(regex, true);
    let node = walker.node(&ast)?;
    if !(walker.letters_folded && walker.letters_unfolded) {
        return Ok(node.cost.total());
    }
    let mut walker = Walker::new(regex, false);
    Ok(walker.node(&ast)?.cost.total())
}
