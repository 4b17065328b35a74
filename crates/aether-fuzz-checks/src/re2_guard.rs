//! The invariants of the RE2 guard (`aether_edge_limits::re2`), which the
//! webhook and the projection ask whether the edge's Envoy compiles a
//! regular expression: its own (`re2_guard`), and against RE2 itself
//! (`re2_parity`).

use std::sync::{LazyLock, Mutex};

use aether_edge_limits::re2::reference::Re2;
use aether_edge_limits::re2::{self, ENVOY_MAX_PROGRAM_SIZE, Re2Refusal};

use regex_syntax::ast::{self, Ast, ClassSet, ClassSetItem, HexLiteralKind, LiteralKind};

use crate::Outcome;

/// Any text through the guard: it never panics, says why it refuses
/// (a refused construct at an offset inside the text, on a character
/// boundary), its bound is on the right side of Envoy's limit, and what
/// it accepts is a regular expression for Rust's parser too; read as RE2
/// reads it (bytes, Latin-1), its program is covered by the bound: the shortest
/// match consumes `minimum_len` bytes through as many distinct byte
/// instructions of RE2's program, plus its match instruction, so a bound
/// below `minimum_len + 1` would undercount a program Envoy then refuses.
pub fn re2_guard(data: &[u8]) -> Outcome {
    let Ok(regex) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    // `check` is `program_size_bound` cut at Envoy's limit: what it says of
    // the size holds of the bound.
    let bound = match re2::check(regex) {
        Ok(bound) => {
            assert!(bound <= ENVOY_MAX_PROGRAM_SIZE, "{regex:?} accepted with bound {bound}");
            bound
        }
        Err(Re2Refusal::TooLarge { bound }) => {
            assert!(bound > ENVOY_MAX_PROGRAM_SIZE, "{regex:?} refused with bound {bound}");
            bound
        }
        Err(Re2Refusal::Syntax(error)) => {
            assert!(!error.is_empty(), "a syntax error says what for {regex:?}");
            return Outcome::Rejected;
        }
        Err(Re2Refusal::Unsupported { construct, offset }) => {
            assert!(!construct.is_empty(), "a refusal names its construct for {regex:?}");
            assert!(
                offset < regex.len() && regex.is_char_boundary(offset),
                "{construct} at offset {offset} is not in {regex:?}"
            );
            return Outcome::Rejected;
        }
    };
    // As RE2 runs it in Envoy: bytes (Latin-1), `\d \s \w \b` ASCII.
    // Rust's byte mode reads `\xHH` as that byte but `\x{HH}` as a code
    // point (two bytes of UTF-8 above 0x7F, or an error in a class), which
    // RE2 in Latin-1 reads as one byte: the braces are dropped first.
    let mut ast = ast::parse::ParserBuilder::new()
        .nest_limit(100)
        .build()
        .parse(regex)
        .unwrap_or_else(|e| panic!("the guard accepts {regex:?}, Rust's parser refuses it: {e}"));
    hex_escapes_as_bytes(&mut ast);
    let hir = regex_syntax::hir::translate::TranslatorBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .translate(regex, &ast)
        .unwrap_or_else(|e| panic!("the guard accepts {regex:?}, Rust's byte mode refuses it: {e}"));
    if let Some(minimum_len) = hir.properties().minimum_len() {
        let minimum_len = u64::try_from(minimum_len).expect("a length fits in u64");
        assert!(
            bound > minimum_len,
            "bound {bound} for {regex:?}, whose shortest match is {minimum_len} bytes"
        );
    }
    if bound > ENVOY_MAX_PROGRAM_SIZE {
        return Outcome::Rejected;
    }
    Outcome::Decoded
}

/// RE2 itself, started on the first input and kept for the process: one
/// line each way per question.
static RE2: LazyLock<Mutex<Re2>> = LazyLock::new(|| Mutex::new(Re2::start()));

/// Any text through the guard and through RE2 itself (`re2::reference`:
/// the pinned `google-re2`, Latin-1, as Envoy 1.40 compiles; it panics,
/// saying how to install it, when missing): the guard's own invariants
/// ([`re2_guard`]), then every expression the guard accepts RE2 compiles
/// within Envoy's 100 and the guard's bound, and every one it refuses for
/// its nested counts RE2 refuses too (that rule is exact).
pub fn re2_parity(data: &[u8]) -> Outcome {
    let outcome = re2_guard(data);
    let Ok(regex) = std::str::from_utf8(data) else {
        return outcome;
    };
    let guard = re2::check(regex);
    let nested_counts = matches!(
        &guard,
        Err(Re2Refusal::Unsupported { construct, .. }) if construct.starts_with("counted repetitions nested")
    );
    if guard.is_err() && !nested_counts {
        return outcome;
    }
    // A panic of another input's check leaves RE2 itself as it was.
    let answer = RE2
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .compile(regex);
    match guard {
        Ok(bound) => match answer {
            Ok(size) => assert!(
                size <= bound && size <= ENVOY_MAX_PROGRAM_SIZE,
                "the guard accepts {regex:?} with bound {bound}, RE2's program is {size}"
            ),
            Err(message) => panic!("the guard accepts {regex:?}, RE2 refuses it: {message}"),
        },
        Err(refusal) => assert!(
            answer.is_err(),
            "the guard refuses {regex:?} ({refusal}), RE2 compiles it: {answer:?}"
        ),
    }
    outcome
}

/// Every `\x{HH}` up to `\x{FF}` written as `\xHH`, which Rust's byte mode
/// reads as one byte, as RE2 in Latin-1 reads both.
fn hex_escapes_as_bytes(ast: &mut Ast) {
    match ast {
        Ast::Literal(literal) => hex_escape_as_byte(literal),
        Ast::ClassBracketed(class) => class_hex_escapes_as_bytes(&mut class.kind),
        Ast::Repetition(repetition) => hex_escapes_as_bytes(&mut repetition.ast),
        Ast::Group(group) => hex_escapes_as_bytes(&mut group.ast),
        Ast::Alternation(alternation) => alternation.asts.iter_mut().for_each(hex_escapes_as_bytes),
        Ast::Concat(concat) => concat.asts.iter_mut().for_each(hex_escapes_as_bytes),
        Ast::Empty(_) | Ast::Flags(_) | Ast::Dot(_) | Ast::Assertion(_) | Ast::ClassUnicode(_) | Ast::ClassPerl(_) => {}
    }
}

fn class_hex_escapes_as_bytes(set: &mut ClassSet) {
    match set {
        ClassSet::Item(item) => class_item_hex_escapes_as_bytes(item),
        ClassSet::BinaryOp(op) => {
            class_hex_escapes_as_bytes(&mut op.lhs);
            class_hex_escapes_as_bytes(&mut op.rhs);
        }
    }
}

fn class_item_hex_escapes_as_bytes(item: &mut ClassSetItem) {
    match item {
        ClassSetItem::Literal(literal) => hex_escape_as_byte(literal),
        ClassSetItem::Range(range) => {
            hex_escape_as_byte(&mut range.start);
            hex_escape_as_byte(&mut range.end);
        }
        ClassSetItem::Bracketed(class) => class_hex_escapes_as_bytes(&mut class.kind),
        ClassSetItem::Union(union) => union.items.iter_mut().for_each(class_item_hex_escapes_as_bytes),
        ClassSetItem::Empty(_) | ClassSetItem::Ascii(_) | ClassSetItem::Unicode(_) | ClassSetItem::Perl(_) => {}
    }
}

fn hex_escape_as_byte(literal: &mut ast::Literal) {
    if literal.kind == LiteralKind::HexBrace(HexLiteralKind::X) && u32::from(literal.c) <= 0xFF {
        literal.kind = LiteralKind::HexFixed(HexLiteralKind::X);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_braced_hex_escape_above_7f_is_one_byte_as_re2_reads_it() {
        // RE2 (Latin-1) compiles `\x{80}{90}` into a program of 94: one
        // byte range per copy. Read as a code point, the shortest match
        // would be 180 bytes, above any honest bound.
        assert_eq!(re2_guard(br"\x{80}{90}"), Outcome::Decoded);
        assert_eq!(re2_guard(br"[\x{80}-\x{ff}]{90}"), Outcome::Decoded);
    }
}
