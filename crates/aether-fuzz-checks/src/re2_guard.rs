//! The invariants of the RE2 guard (`aether_projection::re2`), which the
//! webhook and the projection ask whether the edge's Envoy compiles a
//! regular expression.

use aether_projection::re2::{self, ENVOY_MAX_PROGRAM_SIZE, Re2Refusal};

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
    // As RE2 runs it in Envoy: bytes (Latin-1), `\d \s \w \b` ASCII. Rust's
    // byte mode reads `\xHH` as that byte but refuses `\x{HH}` above 0x7F
    // in a class (a code point, for it), which RE2 reads as the byte: such an
    // expression must parse in Rust's Unicode mode instead, and is left out
    // of the length check.
    let bytes = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .nest_limit(100)
        .build()
        .parse(regex);
    match bytes {
        Ok(hir) => {
            if let Some(minimum_len) = hir.properties().minimum_len() {
                let minimum_len = u64::try_from(minimum_len).expect("a length fits in u64");
                assert!(
                    bound > minimum_len,
                    "bound {bound} for {regex:?}, whose shortest match is {minimum_len} bytes"
                );
            }
        }
        Err(bytes_error) => {
            regex_syntax::ParserBuilder::new()
                .nest_limit(100)
                .build()
                .parse(regex)
                .unwrap_or_else(|e| {
                    panic!("the guard accepts {regex:?}, Rust's parser refuses it: {e} ({bytes_error})")
                });
        }
    }
    if bound > ENVOY_MAX_PROGRAM_SIZE {
        return Outcome::Rejected;
    }
    Outcome::Decoded
}
