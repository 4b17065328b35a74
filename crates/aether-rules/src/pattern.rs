//! Regular expressions, checked once for every reader.
//!
//! protovalidate and the Kubernetes API server read patterns as RE2; the
//! generated validator reads them with the `regex` crate. The two agree on
//! the syntax both accept, except where this module refuses: Perl classes
//! (`\d`, `\w`, `\s`, `\b` are ASCII in RE2 but Unicode in `regex`), Unicode
//! classes and quoting (`\p`, `\Q...\E`), and inline flags or named groups,
//! which the crates spell or fold differently.

use anyhow::{Context, Result, bail, ensure};

/// A pattern every judge reads alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// As written in the proto.
    pub source: String,
    /// Whether the empty string matches: an absent implicit-presence string
    /// is empty, so a pattern that refuses it makes the property required.
    pub matches_empty: bool,
}

impl Pattern {
    /// Checks `source` and records what the generators need to know of it.
    pub fn new(source: &str) -> Result<Self> {
        check_portable(source)?;
        let regex = regex::Regex::new(source)
            .with_context(|| format!("pattern {source:?} does not compile with the regex crate"))?;
        Ok(Self {
            source: source.to_owned(),
            matches_empty: regex.is_match(""),
        })
    }
}

/// Rejects what RE2 and the regex crate read differently.
fn check_portable(pattern: &str) -> Result<()> {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(escaped) = chars.next() {
                ensure!(
                    !"dDwWsSbBpPQE".contains(escaped),
                    "pattern {pattern:?}: `\\{escaped}` may match differently in RE2 (protovalidate, the API \
                     server) and the regex crate; spell the class out (`[0-9]`, `[A-Za-z0-9_]`)"
                );
            }
        } else if c == '(' && chars.as_str().starts_with('?') && !chars.as_str().starts_with("?:") {
            bail!("pattern {pattern:?}: flags and named groups are read differently by RE2 and the regex crate");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_patterns_read_differently_by_re2() {
        assert!(Pattern::new(r"^[a-z]+$").is_ok());
        assert!(Pattern::new(r"^\\d$").is_ok());
        assert!(Pattern::new(r"^\d+$").unwrap_err().to_string().contains(r"\d"));
        assert!(Pattern::new(r"(?i)abc").is_err());
        assert!(Pattern::new(r"(unclosed").is_err());
    }

    #[test]
    fn knows_whether_the_empty_string_matches() {
        assert!(Pattern::new("^[a-z]*$").unwrap().matches_empty);
        assert!(!Pattern::new("^[a-z]+$").unwrap().matches_empty);
        assert!(Pattern::new("x?").unwrap().matches_empty);
    }
}
