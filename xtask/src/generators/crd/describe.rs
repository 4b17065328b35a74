//! Descriptions in the Kubernetes form. The proto's comments are written for
//! proto readers; `kubectl explain` and editors show the CRD's descriptions
//! to people writing manifests, who never see the proto. So every
//! description is rewritten on the way into the schema:
//!
//! - enum values are named as manifests write them (`SECRET_PROVIDER_KUBERNETES`
//!   → `KUBERNETES`, as the schema's `enum` lists them);
//! - a `*_UNSPECIFIED` zero value exists only because proto enums need one:
//!   the parenthesis or sentence naming it is dropped;
//! - markdown code fences become indented blocks (kubectl prints text raw);
//!
//! and an enum field's description ends with its values' documentation, one
//! line per value the schema allows (`- KUBERNETES: ...`).
//!
//! The API reference (`generators::reference`) words descriptions the same
//! way ([`kubernetes_markdown`]: everything above but the fences, which
//! Markdown renders).

use super::node::Node;
use crate::rules::{Api, Enum};

/// How an enum value's proto name reads in a description.
enum Mention {
    /// Written as the Kubernetes form names it.
    Short(String),
    /// A proto-only zero value: not mentioned at all.
    Dropped,
}

/// Every enum value's proto name with its Kubernetes rewrite, longest names
/// first so that no name is rewritten inside a longer one.
fn mentions(api: &Api) -> Vec<(String, Mention)> {
    let mut all = Vec::new();
    for e in &api.enums {
        for (name, number, _) in &e.values {
            let mention = match value_name(e, name, *number) {
                ValueName::Kubernetes(short) => Mention::Short(short),
                ValueName::ProtoOnly => Mention::Dropped,
                ValueName::Unprefixed => continue,
            };
            all.push((name.clone(), mention));
        }
    }
    all.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    all
}

/// How a manifest writes one value of an enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueName {
    /// Without the enum's prefix: `SECRET_PROVIDER_KUBERNETES` is `KUBERNETES`.
    Kubernetes(String),
    /// The `*_UNSPECIFIED` zero value, which exists only because proto
    /// enums need one: no manifest holds it.
    ProtoOnly,
    /// A value without the enum's prefix, written as in the proto.
    Unprefixed,
}

/// The manifest name of value `name` (number `number`) of enum `e`.
pub fn value_name(e: &Enum, name: &str, number: i32) -> ValueName {
    if number == 0 && name.ends_with("_UNSPECIFIED") {
        ValueName::ProtoOnly
    } else {
        match crate::rules::names::short_value_name(enum_name(e), name) {
            Some(short) => ValueName::Kubernetes(short.to_owned()),
            None => ValueName::Unprefixed,
        }
    }
}

/// The enum's own name: `SecretProvider` of `aether.config.v1.SecretProvider`.
pub fn enum_name(e: &Enum) -> &str {
    e.full_name.rsplit('.').next().unwrap_or(&e.full_name)
}

/// Rewrites every `description` string in `node`, recursively.
pub fn rewrite_descriptions(node: &mut Node, api: &Api) {
    let mentions = mentions(api);
    walk(node, &mentions);
}

fn walk(node: &mut Node, mentions: &[(String, Mention)]) {
    match node {
        Node::Map(entries) => {
            for (key, value) in entries {
                match value {
                    Node::Str(text) if key == "description" => *text = kubernetes_text(text, mentions),
                    other => walk(other, mentions),
                }
            }
        }
        Node::List(items) => items.iter_mut().for_each(|item| walk(item, mentions)),
        _ => {}
    }
}

/// One description in the Kubernetes form.
fn kubernetes_text(text: &str, mentions: &[(String, Mention)]) -> String {
    renamed(&unfence(text), mentions)
}

/// `text` (a proto comment or a rule's message) in the Kubernetes form,
/// code fences kept: for Markdown, which renders them.
pub fn kubernetes_markdown(text: &str, api: &Api) -> String {
    renamed(text, &mentions(api))
}

/// Enum values named as manifests write them; zero values dropped.
fn renamed(text: &str, mentions: &[(String, Mention)]) -> String {
    let mut text = text.to_owned();
    for (name, mention) in mentions {
        match mention {
            Mention::Short(short) => text = replace_word(&text, name, short),
            Mention::Dropped => text = drop_mentions(&text, name),
        }
    }
    text
}

/// Code fences out, their content indented four spaces instead.
fn unfence(text: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        out.push(if inside && !line.is_empty() {
            format!("    {line}")
        } else {
            line.to_owned()
        });
    }
    out.join("\n")
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Occurrences of `word` as a whole identifier (not part of a longer one).
fn word_at(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| i + from) {
        let before = text[..i].chars().next_back().is_some_and(is_word);
        let after = text[i + word.len()..].chars().next().is_some_and(is_word);
        if !before && !after {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut text = text.to_owned();
    while let Some(i) = word_at(&text, word) {
        text.replace_range(i..i + word.len(), with);
    }
    text
}

/// Drops the parenthesis naming `word`, or failing that its sentence.
fn drop_mentions(text: &str, word: &str) -> String {
    let mut text = text.to_owned();
    while let Some(i) = word_at(&text, word) {
        let open = text[..i].rfind('(').filter(|&o| !text[o..i].contains(')'));
        let close = text[i..]
            .find(')')
            .map(|c| c + i)
            .filter(|&c| !text[i..c].contains('('));
        let (start, end) = match (open, close) {
            (Some(o), Some(c)) => {
                // With the space or line break before it: "value (note)." → "value."
                let o = text[..o].trim_end().len();
                (o, c + 1)
            }
            _ => sentence_around(&text, i),
        };
        text.replace_range(start..end, "");
    }
    text
}

/// The sentence holding byte `i`, with the whitespace after it.
fn sentence_around(text: &str, i: usize) -> (usize, usize) {
    let start = [". ", ".\n", "\n\n"]
        .iter()
        .filter_map(|sep| text[..i].rfind(sep).map(|s| s + sep.len()))
        .max()
        .unwrap_or(0);
    let rest = &text[i..];
    let end = [". ", ".\n"]
        .iter()
        .filter_map(|sep| rest.find(sep))
        .min()
        .map_or(text.len(), |e| i + e + 1);
    let end = end + text[end..].len() - text[end..].trim_start_matches(' ').len();
    (start, end)
}

/// `Values:` and one line per allowed value with its documentation, for the
/// description of a field of enum `e`. `allowed` holds the Kubernetes names
/// the schema's `enum` lists; values outside it are not described.
pub fn enum_values(e: &Enum, allowed: &[String]) -> String {
    let mut lines = Vec::new();
    for (name, _, doc) in &e.values {
        let short = crate::rules::names::short_value_name(enum_name(e), name).unwrap_or(name);
        if !allowed.iter().any(|a| a == short) {
            continue;
        }
        let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        lines.push(if doc.is_empty() {
            format!("- {short}")
        } else {
            format!("- {short}: {doc}")
        });
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("Values:\n{}", lines.join("\n"))
}

/// Every string of every `enum` list in `node`: the values a schema allows.
pub fn allowed_values(node: &Node, out: &mut Vec<String>) {
    match node {
        Node::Map(entries) => {
            for (key, value) in entries {
                if let (true, Node::List(values)) = (key == "enum", value) {
                    out.extend(values.iter().filter_map(Node::as_str).map(str::to_owned));
                } else {
                    allowed_values(value, out);
                }
            }
        }
        Node::List(items) => items.iter().for_each(|item| allowed_values(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mentions() -> Vec<(String, Mention)> {
        vec![
            ("COLOR_UNSPECIFIED".to_owned(), Mention::Dropped),
            ("COLOR_RED".to_owned(), Mention::Short("RED".to_owned())),
        ]
    }

    #[test]
    fn names_values_as_manifests_write_them() {
        let text = kubernetes_text("Use `COLOR_RED`, not COLOR_REDDISH.", &mentions());
        assert_eq!(text, "Use `RED`, not COLOR_REDDISH.");
    }

    #[test]
    fn drops_the_parenthesis_or_the_sentence_naming_the_zero_value() {
        let m = mentions();
        assert_eq!(
            kubernetes_text("Required, and defined\n(`COLOR_UNSPECIFIED` is rejected).", &m),
            "Required, and defined."
        );
        assert_eq!(
            kubernetes_text("The color. COLOR_UNSPECIFIED means none. Required.", &m),
            "The color. Required."
        );
    }

    #[test]
    fn unfences_code_blocks() {
        let text = kubernetes_text("Example:\n\n```yaml\na: 1\n```\nAfter.", &mentions());
        assert_eq!(text, "Example:\n\n    a: 1\nAfter.");
    }
}
