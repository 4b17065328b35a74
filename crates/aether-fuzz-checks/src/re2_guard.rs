//! The invariants of the RE2 guard (`aether_projection::re2`), which the
//! webhook and the projection ask whether the edge's Envoy compiles a
//! regular expression.

use aether_projection::re2::{self, ENVOY_MAX_PROGRAM_SIZE, Re2Refusal};

use crate::Outcome;

/// Any text through the guard: it never panics, says why it refuses
/// (a refused construct at an offset inside the text, on a character
/// boundary), `check` is `program_size_bound` cut at Envoy's limit, and what
/// it accepts is a regular expression for Rust's parser too; read as RE2
/// reads it (bytes, Latin-1), its program is covered by the bound: the shortest
/// match consumes `minimum_len` bytes through as many distinct byte
/// instructions of RE2's program, plus its match instruction, so a bound
/// below `minimum_len + 1` would undercount a program Envoy then refuses.
pub fn re2_guard(data: &[u8]) -> Outcome {
    let Ok(regex) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    let bound = re2::program_size_bound(regex);
    let checked = re2::check(regex);
    match (&bound, &checked) {
        (Ok(bound), Ok(checked)) => {
            assert_eq!(bound, checked, "check and the bound differ for {regex:?}");
            assert!(
                *bound <= ENVOY_MAX_PROGRAM_SIZE,
                "{regex:?} accepted with bound {bound}"
            );
        }
        (Ok(bound), Err(Re2Refusal::TooLarge { bound: refused })) => {
            assert_eq!(bound, refused, "check and the bound differ for {regex:?}");
            assert!(*bound > ENVOY_MAX_PROGRAM_SIZE, "{regex:?} refused with bound {bound}");
        }
        (Err(refusal), Err(refused)) => assert_eq!(refusal, refused, "check and the bound differ for {regex:?}"),
        _ => panic!("check {checked:?} and the bound {bound:?} disagree for {regex:?}"),
    }
    if let Err(refusal) = &checked {
        assert!(!refusal.to_string().is_empty(), "a refusal says why");
    }
    let bound = match bound {
        Ok(bound) => bound,
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
        Err(Re2Refusal::TooLarge { .. }) => unreachable!("program_size_bound has no limit"),
    };
    regex_syntax::ParserBuilder::new()
        .nest_limit(100)
        .build()
        .parse(regex)
        .unwrap_or_else(|e| panic!("the guard accepts {regex:?}, Rust's parser refuses it: {e}"));
    // As RE2 runs it in Envoy: bytes (Latin-1), `\d \s \w \b` ASCII. Rust's
    // byte mode reads `\xHH` as that byte but refuses `\x{HH}` above 0x7F
    // in a class (a code point), which RE2 reads as the byte: those are
    // left out of the length check.
    let bytes = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .nest_limit(100)
        .build()
        .parse(regex);
    if let Ok(hir) = bytes
        && let Some(minimum_len) = hir.properties().minimum_len()
    {
        let minimum_len = u64::try_from(minimum_len).expect("a length fits in u64");
        assert!(
            bound > minimum_len,
            "bound {bound} for {regex:?}, whose shortest match is {minimum_len} bytes"
        );
    }
    Outcome::Decoded
}
