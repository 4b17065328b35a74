//! The walk over a parsed expression: the allow-list, construct by
//! construct, and what each costs in RE2's flattened program (see the
//! parent module's comment for the bound).

use regex_syntax::ast::{
    self, AssertionKind, Ast, ClassSet, ClassSetItem, Flag, FlagsItemKind, GroupKind, HexLiteralKind, LiteralKind,
    SpecialLiteralKind,
};

use super::Re2Refusal;
use super::class::{self, RuneSet};
use super::cost::Cost;

mod repetition;

/// What a sub-expression costs and whether it can match the empty string
/// (RE2 compiles `x*` of such an `x` as `(x+)?`: two `Alt`s).
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub(super) cost: Cost,
    nullable: bool,
    /// The largest product of nested counted repetitions' counts on a path
    /// down from here (see [`repetition::nested_counts`]); at most 1000.
    nested_counts: u32,
}

impl Node {
    /// A node holding no counted repetition.
    const fn leaf(cost: Cost, nullable: bool) -> Self {
        Self {
            cost,
            nullable,
            nested_counts: 1,
        }
    }
}

/// The flags that change what RE2 compiles (`m` and `U` change only which
/// instruction or which order, not how many).
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    case_insensitive: bool,
    dot_matches_new_line: bool,
}

pub(super) struct Walker<'a> {
    source: &'a str,
    flags: Flags,
    /// Count classes that fold ASCII as RE2 compiles them alone (see
    /// [`RuneSet::cost`]).
    fold_ascii: bool,
    /// Whether a literal or class holds ASCII letters with their other case.
    pub(super) letters_folded: bool,
    /// Whether one holds an ASCII letter without its other case.
    pub(super) letters_unfolded: bool,
}

fn unsupported(construct: impl Into<String>, span: &ast::Span) -> Re2Refusal {
    Re2Refusal::Unsupported {
        construct: construct.into(),
        offset: span.start.offset,
    }
}

impl<'a> Walker<'a> {
    pub(super) fn new(source: &'a str, fold_ascii: bool) -> Self {
        Self {
            source,
            flags: Flags::default(),
            fold_ascii,
            letters_folded: false,
            letters_unfolded: false,
        }
    }

    /// What a set of characters costs, noting its letters.
    fn set_cost(&mut self, set: &RuneSet) -> Cost {
        if set.has_ascii_letters() {
            if set.folds_ascii() {
                self.letters_folded = true;
            } else {
                self.letters_unfolded = true;
            }
        }
        set.cost(self.fold_ascii)
    }

    pub(super) fn node(&mut self, ast: &Ast) -> Result<Node, Re2Refusal> {
        Ok(match ast {
            // An empty match: one `Nop`.
            Ast::Empty(_) => Node::leaf(Cost::new(1, 0), true),
            Ast::Flags(set) => {
                self.set_flags(&set.flags)?;
                // Where the flags are all an alternative holds, RE2
                // compiles an empty match.
                Node::leaf(Cost::new(1, 0), true)
            }
            Ast::Literal(literal) => self.literal(literal)?,
            Ast::Dot(_) => Node::leaf(self.set_cost(&class::dot(self.flags.dot_matches_new_line)), false),
            Ast::Assertion(assertion) => match assertion.kind {
                AssertionKind::StartLine
                | AssertionKind::EndLine
                | AssertionKind::StartText
                | AssertionKind::EndText
                | AssertionKind::WordBoundary
                | AssertionKind::NotWordBoundary => Node::leaf(Cost::new(1, 0), true),
                _ => {
                    return Err(unsupported(
                        "a word-boundary assertion other than \\b and \\B",
                        &assertion.span,
                    ));
                }
            },
            Ast::ClassUnicode(class) => return Err(unsupported("a Unicode class (\\p, \\P)", &class.span)),
            Ast::ClassPerl(class) => {
                let mut set = class::perl(&class.kind);
                if self.flags.case_insensitive {
                    set = set.case_folded();
                }
                if class.negated {
                    set = set.negated();
                }
                self.class(&set, &class.span)?
            }
            Ast::ClassBracketed(class) => {
                let set = self.bracketed(class)?;
                self.class(&set, &class.span)?
            }
            Ast::Repetition(repetition) => self.repetition(repetition)?,
            Ast::Group(group) => self.group(group)?,
            Ast::Alternation(alternation) => {
                let mut cost = Cost::default();
                let mut nullable = false;
                let mut nested_counts = 1;
                for ast in &alternation.asts {
                    let node = self.node(ast)?;
                    cost = cost.plus(node.cost);
                    nullable |= node.nullable;
                    nested_counts = nested_counts.max(node.nested_counts);
                }
                // k alternatives are k-1 `Alt`s: one edge into each
                // alternative may become a `Nop` (an alternative that is a
                // loop begins with a list of its own); the edges between
                // the `Alt`s lead to fresh `Alt`s, never.
                let branches = u64::try_from(alternation.asts.len()).unwrap_or(u64::MAX);
                Node {
                    cost: cost.plus(Cost::new(0, branches)),
                    nullable,
                    nested_counts,
                }
            }
            Ast::Concat(concat) => {
                let mut cost = Cost::default();
                let mut nullable = true;
                let mut nested_counts = 1;
                for ast in &concat.asts {
                    let node = self.node(ast)?;
                    cost = cost.plus(node.cost);
                    nullable &= node.nullable;
                    nested_counts = nested_counts.max(node.nested_counts);
                }
                Node {
                    cost,
                    nullable,
                    nested_counts,
                }
            }
        })
    }

    fn set_flags(&mut self, flags: &ast::Flags) -> Result<(), Re2Refusal> {
        let mut on = true;
        for item in &flags.items {
            match &item.kind {
                FlagsItemKind::Negation => on = false,
                FlagsItemKind::Flag(Flag::CaseInsensitive) => self.flags.case_insensitive = on,
                FlagsItemKind::Flag(Flag::DotMatchesNewLine) => self.flags.dot_matches_new_line = on,
                FlagsItemKind::Flag(Flag::MultiLine | Flag::SwapGreed) => {}
                FlagsItemKind::Flag(Flag::Unicode | Flag::CRLF | Flag::IgnoreWhitespace) => {
                    return Err(unsupported("a flag other than i, m, s and U", &item.span));
                }
            }
        }
        Ok(())
    }

    /// The code point of a literal, refusing the escapes RE2 lacks.
    fn literal_char(literal: &ast::Literal) -> Result<u32, Re2Refusal> {
        let c = u32::from(literal.c);
        match &literal.kind {
            LiteralKind::Verbatim
            | LiteralKind::Meta
            | LiteralKind::Superfluous
            | LiteralKind::HexFixed(HexLiteralKind::X)
            | LiteralKind::HexBrace(HexLiteralKind::X)
            | LiteralKind::Special(
                SpecialLiteralKind::Bell
                | SpecialLiteralKind::FormFeed
                | SpecialLiteralKind::Tab
                | SpecialLiteralKind::LineFeed
                | SpecialLiteralKind::CarriageReturn
                | SpecialLiteralKind::VerticalTab,
            ) => {
                if literal.kind == LiteralKind::Verbatim && !literal.c.is_ascii() {
                    return Err(unsupported(
                        "a non-ASCII character (Envoy's RE2 reads the pattern as bytes: write \\xHH)",
                        &literal.span,
                    ));
                }
                if c > 0xFF {
                    return Err(unsupported(
                        "a character above \\xFF (Envoy's RE2 matches bytes, in Latin-1)",
                        &literal.span,
                    ));
                }
                Ok(c)
            }
            LiteralKind::HexFixed(_) | LiteralKind::HexBrace(_) => {
                Err(unsupported("a \\u or \\U escape (write \\x{...})", &literal.span))
            }
            LiteralKind::Octal | LiteralKind::Special(SpecialLiteralKind::Space) => {
                Err(unsupported("this escape", &literal.span))
            }
        }
    }

    fn literal(&mut self, literal: &ast::Literal) -> Result<Node, Re2Refusal> {
        let c = Self::literal_char(literal)?;
        let cost = if self.flags.case_insensitive {
            self.fold_ascii_only(c, &literal.span)?;
            // RE2 compiles a folded letter as a class (one byte range
            // matching both cases, when counted as it compiles alone).
            self.set_cost(&RuneSet::single(c).case_folded())
        } else {
            if is_ascii_letter(c) {
                self.letters_unfolded = true;
            }
            // One byte range, in Latin-1.
            Cost::new(1, 0)
        };
        Ok(Node::leaf(cost, false))
    }

    fn fold_ascii_only(&self, c: u32, span: &ast::Span) -> Result<(), Re2Refusal> {
        if self.flags.case_insensitive && c > 0x7F {
            return Err(unsupported("a non-ASCII character under (?i)", span));
        }
        Ok(())
    }

    fn class(&mut self, set: &RuneSet, span: &ast::Span) -> Result<Node, Re2Refusal> {
        if set.is_empty_in_latin1() {
            return Err(unsupported("a class that matches no byte", span));
        }
        Ok(Node::leaf(self.set_cost(set), false))
    }

    fn bracketed(&self, class: &ast::ClassBracketed) -> Result<RuneSet, Re2Refusal> {
        let ClassSet::Item(item) = &class.kind else {
            return Err(unsupported("a class set operation (&&, --, ~~)", &class.span));
        };
        let items = match item {
            ClassSetItem::Union(union) => union.items.as_slice(),
            item => std::slice::from_ref(item),
        };
        // An unescaped `-` right after a character, not last: RE2 reads a
        // range there (and refuses `[a-\W]`, `[--\W]`), where Rust, seeing
        // no character after it, reads a `-`. After a range or a class
        // (`[a-z-_]`, `[\d-z]`) both read a `-`.
        let last = class.span.end.offset.saturating_sub(1);
        for pair in items.windows(2) {
            if let [ClassSetItem::Literal(_), ClassSetItem::Literal(literal)] = pair
                && literal.c == '-'
                && literal.kind == LiteralKind::Verbatim
                && literal.span.end.offset != last
            {
                return Err(unsupported(
                    "a - after a character that RE2 reads as a range (write \\-)",
                    &literal.span,
                ));
            }
        }
        let mut set = RuneSet::default();
        for item in items {
            set.add_set(&self.class_item(item)?);
        }
        Ok(if class.negated { set.negated() } else { set })
    }

    /// One item of a bracketed class, case folded as RE2 folds it: a
    /// negated group is folded before it is negated.
    fn class_item(&self, item: &ClassSetItem) -> Result<RuneSet, Re2Refusal> {
        let fold = |set: RuneSet| {
            if self.flags.case_insensitive {
                set.case_folded()
            } else {
                set
            }
        };
        Ok(match item {
            ClassSetItem::Empty(_) => RuneSet::default(),
            ClassSetItem::Literal(literal) => {
                let c = Self::literal_char(literal)?;
                self.fold_ascii_only(c, &literal.span)?;
                fold(RuneSet::single(c))
            }
            ClassSetItem::Range(range) => {
                let (lo, hi) = (Self::literal_char(&range.start)?, Self::literal_char(&range.end)?);
                self.fold_ascii_only(hi.max(lo), &range.span)?;
                let mut set = RuneSet::default();
                set.add_range(lo, hi);
                fold(set)
            }
            ClassSetItem::Ascii(ascii) => {
                let set = fold(class::posix(&ascii.kind));
                if ascii.negated { set.negated() } else { set }
            }
            ClassSetItem::Perl(perl) => {
                let set = fold(class::perl(&perl.kind));
                if perl.negated { set.negated() } else { set }
            }
            ClassSetItem::Unicode(unicode) => return Err(unsupported("a Unicode class (\\p, \\P)", &unicode.span)),
            ClassSetItem::Bracketed(nested) => {
                return Err(unsupported(
                    "a class nested in a class (RE2 reads [ there as a character)",
                    &nested.span,
                ));
            }
            ClassSetItem::Union(union) => {
                let mut set = RuneSet::default();
                for item in &union.items {
                    set.add_set(&self.class_item(item)?);
                }
                set
            }
        })
    }

    fn group(&mut self, group: &ast::Group) -> Result<Node, Re2Refusal> {
        let saved = self.flags;
        let capture = match &group.kind {
            GroupKind::CaptureIndex(_) => true,
            GroupKind::CaptureName { starts_with_p, name } => {
                if !starts_with_p {
                    return Err(unsupported("a (?<name>...) group (write (?P<name>...))", &group.span));
                }
                if !is_re2_capture_name(&name.name) {
                    return Err(unsupported(
                        "a group name other than ASCII letters, digits and _",
                        &name.span,
                    ));
                }
                true
            }
            GroupKind::NonCapturing(flags) => {
                self.set_flags(flags)?;
                false
            }
        };
        let sub = self.node(&group.ast);
        self.flags = saved;
        let sub = sub?;
        Ok(Node {
            // A capture is two instructions, around its expression.
            cost: if capture {
                sub.cost.plus(Cost::new(2, 0))
            } else {
                sub.cost
            },
            nullable: sub.nullable,
            nested_counts: sub.nested_counts,
        })
    }
}

fn is_ascii_letter(c: u32) -> bool {
    u8::try_from(c).is_ok_and(|b| b.is_ascii_alphabetic())
}

/// A name both RE2 and Rust accept: ASCII letters, digits and `_`, not
/// starting with a digit.
fn is_re2_capture_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
