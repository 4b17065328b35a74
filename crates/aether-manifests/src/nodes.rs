//! A JSON text's nodes, counted before it is parsed: serde_json has no
//! budget of its own, and the tree it builds costs 32 bytes and more per
//! node (3.5 MiB of `{},` cost 1.6 GB read and decoded).

/// Whether JSON `text` holds more than `max` nodes, counted as YAML's node
/// budget counts them: each mapping, sequence and scalar, a mapping's keys
/// among its scalars. One pass over the bytes, jumping over strings'
/// contents, stopping at the first node above `max`. Text that is not JSON
/// is counted all the same (its parser then says what is wrong).
pub fn json_nodes_above(text: &[u8], max: usize) -> bool {
    let mut nodes = 0usize;
    let mut in_literal = false;
    let mut at = 0;
    while let Some(&b) = text.get(at) {
        at += 1;
        let starts_node = match b {
            b'{' | b'[' => true,
            // A string: one node, its contents skipped (a backslash
            // escapes the byte after it).
            b'"' => {
                while let Some(rest) = text.get(at..) {
                    match memchr::memchr2(b'"', b'\\', rest) {
                        Some(offset) if rest[offset] == b'\\' => at += offset + 2,
                        Some(offset) => {
                            at += offset + 1;
                            break;
                        }
                        None => {
                            at = text.len();
                            break;
                        }
                    }
                }
                true
            }
            // A number, `true`, `false` or `null`: one node however long.
            b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' => !in_literal,
            _ => false,
        };
        in_literal = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.');
        if starts_node {
            nodes += 1;
            if nodes > max {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str) -> usize {
        (0..).find(|&max| !json_nodes_above(text.as_bytes(), max)).unwrap()
    }

    #[test]
    fn nodes_are_counted_as_yaml_counts_them() {
        assert_eq!(count(""), 0);
        assert_eq!(count("null"), 1);
        assert_eq!(count("-1.5e+10"), 1);
        assert_eq!(count("[]"), 1);
        assert_eq!(count(r#"{"a": [1, true, null]}"#), 6);
        // Brackets, quotes and backslashes inside strings are not nodes.
        assert_eq!(count(r#"["[{\"x\\", "a,b:c"]"#), 3);
        assert_eq!(count("[{},{},{}]"), 4);
        // A stream of values: each is a node.
        assert_eq!(count("1 2 3"), 3);
        // An unterminated string is one node.
        assert_eq!(count(r#"["abc"#), 2);
    }

    #[test]
    fn counting_stops_above_the_budget() {
        let text = "{},".repeat(1_000_000);
        assert!(json_nodes_above(text.as_bytes(), 999_999));
        assert!(!json_nodes_above(text.as_bytes(), 1_000_000));
    }
}
