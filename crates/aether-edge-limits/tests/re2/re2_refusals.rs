//! What the RE2 guard refuses, and the message a person reads.

use aether_edge_limits::re2::{ENVOY_MAX_PROGRAM_SIZE, Re2Refusal, check};

#[test]
fn refused_constructs_are_named_with_their_offset() {
    let table: &[(&str, &str)] = &[
        // Rust's parser refuses these itself.
        ("(", "not a regular expression: unclosed group"),
        (
            "a{2,1}",
            "not a regular expression: invalid repetition count range, the start must be <= the end",
        ),
        ("\\1", "not a regular expression: backreferences are not supported"),
        // RE2 lacks them or reads them as other characters.
        ("/\\p{Greek}", "a Unicode class (\\p, \\P) (at offset 1)"),
        ("[\\PL]", "a Unicode class (\\p, \\P) (at offset 1)"),
        (
            "[a[bc]]",
            "a class nested in a class (RE2 reads [ there as a character) (at offset 2)",
        ),
        ("[a-z&&[^aeiou]]", "a class set operation (&&, --, ~~) (at offset 0)"),
        ("[a-z--b]", "a class set operation (&&, --, ~~) (at offset 0)"),
        ("[a~~b]", "a class set operation (&&, --, ~~) (at offset 0)"),
        (
            "[--\\W]",
            "a - after a character that RE2 reads as a range (write \\-) (at offset 2)",
        ),
        (
            "\\<word\\>",
            "a word-boundary assertion other than \\b and \\B (at offset 0)",
        ),
        (
            "\\b{start}x",
            "a word-boundary assertion other than \\b and \\B (at offset 0)",
        ),
        ("\\u00e9", "a \\u or \\U escape (write \\x{...}) (at offset 0)"),
        ("\\U0001F600", "a \\u or \\U escape (write \\x{...}) (at offset 0)"),
        ("(?x)a b", "a flag other than i, m, s and U (at offset 2)"),
        ("(?-u:\\w)", "a flag other than i, m, s and U (at offset 3)"),
        ("(?R)a$", "a flag other than i, m, s and U (at offset 2)"),
        (
            "(?<id>[0-9]+)",
            "a (?<name>...) group (write (?P<name>...)) (at offset 0)",
        ),
        (
            "(?P<a.b>x)",
            "a group name other than ASCII letters, digits and _ (at offset 4)",
        ),
        (
            "a**",
            "a repetition of a repetition (RE2 refuses a** and a{2}{3}: group the inner one) (at offset 2)",
        ),
        (
            "a{2}{3}",
            "a repetition of a repetition (RE2 refuses a** and a{2}{3}: group the inner one) (at offset 4)",
        ),
        (
            "a{ 2}",
            "a counted repetition not written {n}, {n,} or {n,m} (at offset 1)",
        ),
        (
            "a{2 ,3}",
            "a counted repetition not written {n}, {n,} or {n,m} (at offset 1)",
        ),
        // RE2 reads a count with a leading zero as text: `a{09}` matches
        // "a{09}" (found by the fuzz target re2_parity).
        (
            "/(?:(?:(?:a{09}){11}){11}){0}",
            "a count with a leading zero (RE2 reads {09} as text) (at offset 11)",
        ),
        (
            "a{1,02}",
            "a count with a leading zero (RE2 reads {09} as text) (at offset 1)",
        ),
        (
            "a{00,}",
            "a count with a leading zero (RE2 reads {09} as text) (at offset 1)",
        ),
        ("a{1001}", "a repetition count above RE2's 1000 (at offset 1)"),
        ("(?:){1001}", "a repetition count above RE2's 1000 (at offset 4)"),
        ("[^\\x00-\\xff]", "a class that matches no byte (at offset 0)"),
        (
            "/caf\u{e9}",
            "a non-ASCII character (Envoy's RE2 reads the pattern as bytes: write \\xHH) (at offset 4)",
        ),
        (
            "\\x{100}",
            "a character above \\xFF (Envoy's RE2 matches bytes, in Latin-1) (at offset 0)",
        ),
        (
            "[a-\\x{2603}]",
            "a character above \\xFF (Envoy's RE2 matches bytes, in Latin-1) (at offset 3)",
        ),
        ("(?i)\\x{e9}", "a non-ASCII character under (?i) (at offset 4)"),
        ("(?i:[a-\\x{ff}])", "a non-ASCII character under (?i) (at offset 5)"),
    ];
    for (regex, expected) in table {
        let refusal = check(regex).expect_err(regex);
        let message = refusal.to_string();
        assert!(
            message.starts_with(expected),
            "{regex}: expected a message starting {expected:?}, got {message:?}"
        );
        if let Re2Refusal::Unsupported { .. } = refusal {
            assert!(
                message.ends_with("is not accepted: the edge's RE2 does not read it as written"),
                "{message}"
            );
        }
    }
}

#[test]
fn programs_above_envoys_limit_are_refused_with_the_bound() {
    for regex in [
        "[a-z]{95}",
        "(?:a|b|c|d|e|f|g|h){10}",
        ".{48}",
        "(?i)[a-z]{95}",
        "((((((((((((x))))))))))))".repeat(5).as_str(),
    ] {
        match check(regex) {
            Err(Re2Refusal::TooLarge { bound }) => {
                assert!(bound > ENVOY_MAX_PROGRAM_SIZE, "{regex}: {bound}");
                let message = Re2Refusal::TooLarge { bound }.to_string();
                assert!(message.contains(&format!("up to {bound} instructions")), "{message}");
                assert!(message.contains("Envoy refuses programs above 100"), "{message}");
            }
            other => panic!("{regex}: expected TooLarge, got {other:?}"),
        }
    }
}

#[test]
fn what_routes_are_written_with_is_accepted() {
    for regex in [
        "^/users/[0-9]+$",
        "/users/\\d+",
        "/api/v[12]/.*",
        "/(?P<team>[a-z0-9-]+)/docs(?:/.*)?",
        "(?i)/static/[a-z0-9_.-]+\\.(?:css|js|png)",
        "GET|HEAD",
        "[^/]+\\.example\\.com",
        "\\bcanary\\b",
        "(?s).*",
        "x{0,3}y{2,}z{4}",
        "[[:alpha:]][[:^digit:]]",
        "[-a][a-][^-a][\\-a-z-][a-z0-9-_.]",
        "\\x{e9}t\\x{e9}",
        "",
    ] {
        let bound = check(regex).unwrap_or_else(|refusal| panic!("{regex}: {refusal}"));
        assert!(bound <= ENVOY_MAX_PROGRAM_SIZE, "{regex}: {bound}");
    }
}

#[test]
fn the_bound_grows_with_what_rust_and_re2_both_repeat() {
    let one = check("[a-z]").expect("accepted");
    let five = check("[a-z]{5}").expect("accepted");
    assert_eq!(five - one, 4);
    // Counted repetitions multiply: the guard refuses before RE2 would run
    // out of its own nesting product (1000).
    assert!(matches!(check("((a{10}){10}){10}"), Err(Re2Refusal::TooLarge { .. })));
    // Long input is bounded, not rejected for its length alone.
    assert!(check(&"ab".repeat(20)).is_ok());
}

#[test]
fn nested_counted_repetitions_whose_counts_multiply_above_1000_are_refused_even_under_zero() {
    // RE2's parser divides 1000 by each nested counted repetition's count
    // (its maximum, or its minimum when unbounded; 0 skipped) and refuses
    // the expression ("invalid repetition size") when the quotient reaches
    // 0, before `{0}` is simplified away: Envoy then refuses the whole
    // route configuration. The offset is the repetition RE2 names.
    let product = |product: u64| {
        format!(
            "counted repetitions nested to a product of {product} (RE2 refuses a product of nested counts above 1000, \
             even under {{0}})"
        )
    };
    let table: &[(&str, u64, usize)] = &[
        ("/(?:(?:a{2}){501}){0}x", 1002, 12),
        ("/(?:(?:a{2}){501}){0,0}x", 1002, 12),
        ("(?:(?:a{1000}){2}){0}", 2000, 14),
        ("/(?:(?:(?:a{10}){10}){11}){0}", 1100, 21),
        ("(?:(?:a{2,}){501}){0}", 1002, 12),
        ("(?:(?:a{0,2}){501}){0}", 1002, 13),
        ("(?:(?:a{2}|b){501}){0}", 1002, 13),
    ];
    for &(regex, expected_product, expected_offset) in table {
        match check(regex) {
            Err(Re2Refusal::Unsupported { construct, offset }) => {
                assert_eq!(construct, product(expected_product), "{regex}");
                assert_eq!(offset, expected_offset, "{regex}");
            }
            other => panic!("{regex}: expected a refusal of its nested counts, got {other:?}"),
        }
    }
    // A product of 1000 is RE2's limit, not above it; `*`, `+`, `?`,
    // counts of 0 and 1 divide nothing.
    for regex in [
        "(?:(?:a{2}){500}){0}",
        "/(?:(?:(?:a{10}){10}){10}){0}x",
        "(?:(?:a{0}){1000}){0}",
        "(?:(?:a{1,}){1000}){0}",
        "(?:(?:a*){1000}){0}",
        "(?:(?:a{1}){1000}){0,0}",
    ] {
        assert!(check(regex).is_ok(), "{regex}: {:?}", check(regex));
    }
}
