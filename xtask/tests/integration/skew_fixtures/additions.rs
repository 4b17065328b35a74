//! The newer proto of the skew tests: today's proto text with the
//! additions of `additions.txt` inserted, each before the closing brace of
//! the block it names.

/// One addition: its text, and the block it goes into, named by the
/// headers (`message RouteMatch`, `oneof path`) of the blocks from the
/// file's top level down.
#[derive(Debug)]
pub struct Addition {
    pub into: Vec<String>,
    pub text: String,
}

/// The additions of a file: `#` lines are comments; a line
/// `into message RouteMatch > oneof path` starts an addition, and the
/// indented lines after it are its text.
pub fn parse(file: &str) -> Result<Vec<Addition>, String> {
    let mut additions: Vec<Addition> = Vec::new();
    for (number, line) in file.lines().enumerate() {
        if let Some(into) = line.strip_prefix("into ") {
            let into = into.split('>').map(|header| header.trim().to_owned()).collect();
            additions.push(Addition {
                into,
                text: String::new(),
            });
        } else if line.starts_with('#') || line.trim().is_empty() {
            continue;
        } else if let Some(addition) = additions.last_mut().filter(|_| line.starts_with(char::is_whitespace)) {
            addition.text.push_str(line);
            addition.text.push('\n');
        } else {
            return Err(format!(
                "line {}: neither `into …`, a comment nor an indented line of an addition: {line}",
                number + 1
            ));
        }
    }
    if let Some(empty) = additions.iter().find(|a| a.text.is_empty()) {
        return Err(format!("`into {}` has no text", empty.into.join(" > ")));
    }
    Ok(additions)
}

/// `text`'s lines without the indentation they share.
fn dedented(text: &str) -> Vec<&str> {
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines().map(|line| line.get(indent..).unwrap_or("")).collect()
}

/// The kinds of block an addition may go into.
const KINDS: [&str; 3] = ["message", "enum", "oneof"];

/// What matters of proto text for finding blocks: words (names, keywords,
/// numbers) and braces, a closing one with its offset; comments and string
/// literals (patterns and CEL hold braces) are skipped.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Open,
    Close(usize),
    Other,
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => i = text[i..].find('\n').map_or(bytes.len(), |end| i + end),
            (b'/', Some(b'*')) => i = text[i + 2..].find("*/").map_or(bytes.len(), |end| i + 2 + end + 2),
            (quote @ (b'"' | b'\''), _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(Token::Other);
            }
            (b'{', _) => {
                out.push(Token::Open);
                i += 1;
            }
            (b'}', _) => {
                out.push(Token::Close(i));
                i += 1;
            }
            (b, _) if word(b) => {
                let start = i;
                while i < bytes.len() && word(bytes[i]) {
                    i += 1;
                }
                out.push(Token::Word(&text[start..i]));
            }
            (b, _) => {
                if !b.is_ascii_whitespace() {
                    out.push(Token::Other);
                }
                i += 1;
            }
        }
    }
    out
}

/// The index of the `}` closing the `{` at `open`.
fn closing(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token {
            Token::Open => depth += 1,
            Token::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `{` and `}` of the block `kind name { … }` directly inside
/// `tokens[from..to]` (not nested deeper).
fn block(tokens: &[Token], from: usize, to: usize, kind: &str, name: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for i in from..to {
        match tokens[i] {
            Token::Open => depth += 1,
            Token::Close(_) => depth = depth.saturating_sub(1),
            Token::Word(word)
                if depth == 0
                    && word == kind
                    && tokens.get(i + 1) == Some(&Token::Word(name))
                    && tokens.get(i + 2) == Some(&Token::Open) =>
            {
                return closing(tokens, i + 2).map(|close| (i + 2, close));
            }
            _ => {}
        }
    }
    None
}

/// Where `text` goes before the `}` at `brace`, and the text to put there:
/// its own lines, a blank line before them, one level deeper than the brace.
fn placed(proto: &str, brace: usize, text: &str) -> (usize, String) {
    let line_start = proto[..brace].rfind('\n').map_or(0, |i| i + 1);
    let before = &proto[line_start..brace];
    let outer: String = before.chars().take_while(|c| c.is_whitespace()).collect();
    let inner = format!("{outer}  ");
    let mut lines = String::from("\n");
    for line in dedented(text) {
        if !line.trim().is_empty() {
            lines.push_str(&inner);
            lines.push_str(line);
        }
        lines.push('\n');
    }
    if before.trim().is_empty() {
        (line_start, lines)
    } else {
        // The brace shares its line (`message X {}`): it moves to a line of its own.
        (brace, format!("{lines}{outer}"))
    }
}

/// `proto` with every addition inserted; an error names an addition whose
/// block is missing.
pub fn apply(proto: &str, additions: &[Addition]) -> Result<String, String> {
    let tokens = tokens(proto);
    let mut inserts = Vec::new();
    for addition in additions {
        let (mut from, mut to, mut close) = (0, tokens.len(), None);
        for (level, header) in addition.into.iter().enumerate() {
            let (kind, name) = header
                .split_once(' ')
                .filter(|(kind, _)| KINDS.contains(kind))
                .ok_or_else(|| format!("`{header}` is no block: name one as `message X`, `enum X` or `oneof x`"))?;
            let (open, end) = block(&tokens, from, to, kind, name.trim()).ok_or_else(|| {
                let outer = match level {
                    0 => "at the proto's top level".to_owned(),
                    _ => format!("in `{}`", addition.into[..level].join(" > ")),
                };
                format!(
                    "no `{header} {{ … }}` {outer}, for `into {}`",
                    addition.into.join(" > ")
                )
            })?;
            (from, to, close) = (open + 1, end, Some(tokens[end]));
        }
        let Some(Token::Close(brace)) = close else {
            return Err(format!("the addition `{}` names no block", addition.text.trim()));
        };
        inserts.push(placed(proto, brace, &addition.text));
    }
    // Stable: additions to one block keep their order.
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(proto.len() + inserts.iter().map(|(_, t)| t.len()).sum::<usize>());
    let mut done = 0;
    for (at, text) in inserts {
        out.push_str(&proto[done..at]);
        out.push_str(&text);
        done = at;
    }
    out.push_str(&proto[done..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = r#"message A {
  // A comment with a brace: }
  string s = 1 [(buf.validate.field).string.pattern = "^a{1,3}}$"];
  /* message B { */
  message B {
    oneof kind {
      string x = 2;
    }
  }
  oneof kind { string y = 3; }
}
enum E {
  E_UNSPECIFIED = 0;
}
"#;

    fn addition(into: &[&str], text: &str) -> Addition {
        Addition {
            into: into.iter().map(|s| (*s).to_owned()).collect(),
            text: text.to_owned(),
        }
    }

    #[test]
    fn an_addition_goes_before_its_blocks_closing_brace_at_its_depth() {
        let out = apply(
            PROTO,
            &[
                addition(&["message A", "message B", "oneof kind"], "string z = 4;\n"),
                addition(&["enum E"], "E_ONE = 1;\n"),
                addition(&["message A", "oneof kind"], "string w = 5;\n"),
                addition(&["message A"], "// Why.\nstring v = 6;\n"),
            ],
        )
        .unwrap();
        assert!(
            out.contains("      string x = 2;\n\n      string z = 4;\n    }\n  }\n"),
            "{out}"
        );
        assert!(out.contains("  E_UNSPECIFIED = 0;\n\n  E_ONE = 1;\n}\n"), "{out}");
        assert!(
            out.contains("oneof kind { string y = 3; \n    string w = 5;\n  }\n"),
            "{out}"
        );
        assert!(out.contains("  }\n\n  // Why.\n  string v = 6;\n}\nenum E {"), "{out}");
        // Only inserted: taking the insertions out gives the proto back.
        let inserted = [
            "\n      string z = 4;\n",
            "\n  E_ONE = 1;\n",
            "\n    string w = 5;\n  ",
            "\n  // Why.\n  string v = 6;\n",
        ];
        let removed = inserted
            .iter()
            .fold(out.clone(), |text, insert| text.replacen(insert, "", 1));
        assert_eq!(removed, PROTO);
    }

    #[test]
    fn a_missing_block_is_named_with_where_it_was_looked_for() {
        let err = apply(PROTO, &[addition(&["message A", "message C"], "string z = 4;\n")]).unwrap_err();
        assert!(err.contains("no `message C { … }` in `message A`"), "{err}");
        // A block nested deeper is not the one named at the top level.
        let err = apply(PROTO, &[addition(&["message B"], "string z = 4;\n")]).unwrap_err();
        assert!(err.contains("no `message B { … }` at the proto's top level"), "{err}");
        let err = apply(PROTO, &[addition(&["service A"], "rpc X(A) returns (A);\n")]).unwrap_err();
        assert!(err.contains("`service A` is no block"), "{err}");
    }

    #[test]
    fn a_file_of_additions_reads_into_blocks_and_dedented_text() {
        let file = "# What it is.\n\ninto message A > oneof kind\n    // Why.\n    string z = 4;\n\ninto enum E\n  E_ONE = 1;\n";
        let read = parse(file).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].into, ["message A", "oneof kind"]);
        assert_eq!(dedented(&read[0].text), ["// Why.", "string z = 4;"]);
        assert_eq!(read[1].into, ["enum E"]);
        let err = parse("into enum E\nE_ONE = 1;\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        let err = parse("into enum E\n").unwrap_err();
        assert!(err.contains("`into enum E` has no text"), "{err}");
    }
}
