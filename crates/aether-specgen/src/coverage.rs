//! Which rules a sample exercised: per field path and rule id, how many
//! judged specs kept it and how many broke it, against every rule of the
//! model, so a rule added to the proto is counted without a case written.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use aether_rules::{CelRule, Ignore, Rule, RuleKind};
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;

use crate::Generator;

/// How deep the model is walked for rules (as deep as specs are drawn).
const MAX_DEPTH: usize = 12;

/// Valid and invalid cases of each (path pattern, rule id).
pub struct Coverage {
    root: MessageDescriptor,
    root_path: String,
    /// Every rule of the model, with the place whose presence means it was
    /// judged, and its counts.
    expected: BTreeMap<(String, String), Counts>,
    /// Rules the judges reported that the model does not list at that place.
    other: BTreeMap<(String, String), usize>,
    /// Rules only values the Kubernetes form cannot write break (see
    /// [`unwritable`]).
    unwritable: BTreeSet<(String, String)>,
}

#[derive(Default)]
struct Counts {
    anchor: String,
    valid: usize,
    invalid: usize,
}

impl Coverage {
    /// Every rule of `generator`'s model under its root, which judges
    /// report at `root_path` (`spec`).
    pub fn new(generator: &Generator, root_path: &str) -> Self {
        let mut coverage = Self {
            root: generator.root().clone(),
            root_path: root_path.to_owned(),
            expected: BTreeMap::new(),
            other: BTreeMap::new(),
            unwritable: BTreeSet::new(),
        };
        coverage.walk(generator, &generator.root().clone(), root_path, 0);
        coverage
    }

    fn expect(&mut self, place: &str, rule: &str, anchor: &str) {
        self.expected
            .entry((place.to_owned(), rule.to_owned()))
            .or_default()
            .anchor = anchor.to_owned();
    }

    fn walk(&mut self, generator: &Generator, message: &MessageDescriptor, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let model = generator.api().message(message.full_name());
        for rule in model.iter().flat_map(|m| &m.cel) {
            self.expect(path, &rule.id, path);
        }
        if model.is_some_and(|m| !m.oneof_rules.is_empty()) {
            self.expect(path, "message.oneof", path);
        }
        for oneof in model.iter().flat_map(|m| &m.oneofs).filter(|o| o.required) {
            self.expect(&format!("{path}.{}", oneof.name), "required", path);
        }
        for descriptor in message.fields() {
            let place = format!("{path}.{}", descriptor.json_name());
            let field = model.and_then(|m| m.fields.iter().find(|f| f.descriptor.number() == descriptor.number()));
            // An always-ignored field is not judged, nor is anything in it.
            if field.is_some_and(|f| f.ignore == Ignore::Always) {
                continue;
            }
            if let Some(field) = field {
                if field.required {
                    self.expect(&place, "required", path);
                }
                let skips_zero = field.ignore == Ignore::IfZeroValue;
                self.expect_rules(&place, &field.rules, &field.cel, skips_zero);
                let element = format!("{place}[*]");
                for values in [&field.items, &field.keys, &field.values].into_iter().flatten() {
                    self.expect_rules(&element, &values.rules, &values.cel, false);
                }
            }
            if let Kind::Message(inner) = descriptor.kind() {
                if descriptor.is_map() {
                    if let Kind::Message(value) = inner.map_entry_value_field().kind() {
                        self.walk(generator, &value, &format!("{place}[*]"), depth + 1);
                    }
                } else if descriptor.is_list() {
                    self.walk(generator, &inner, &format!("{place}[*]"), depth + 1);
                } else {
                    self.walk(generator, &inner, &place, depth + 1);
                }
            }
        }
    }

    /// The rules of one place: each standard and CEL rule, and the `_empty`
    /// rule of a format, which an empty value breaks instead (unless the
    /// place `skips_zero`, where an empty value is not judged).
    fn expect_rules(&mut self, place: &str, rules: &[Rule], cel: &[CelRule], skips_zero: bool) {
        for rule in rules {
            if unwritable(&rule.kind) {
                self.unwritable.insert((place.to_owned(), rule.id.clone()));
                continue;
            }
            self.expect(place, &rule.id, place);
            if let RuleKind::Format(format) = &rule.kind
                && let Some((empty, _)) = format.empty_rule()
                && !skips_zero
            {
                self.expect(place, &empty, place);
            }
        }
        for rule in cel {
            self.expect(place, &rule.id, place);
        }
    }

    /// Counts one judged spec (in the JSON form the generator draws) and
    /// the (path, rule id) of each violation found in it.
    pub fn record(&mut self, spec: &Value, violations: &[(String, String)]) {
        let mut present = BTreeSet::new();
        present.insert(self.root_path.clone());
        places(&self.root, spec, &self.root_path, &mut present);
        let broken: BTreeSet<(String, String)> = violations.iter().map(|(p, r)| (pattern_of(p), r.clone())).collect();
        for (key, counts) in &mut self.expected {
            if broken.contains(key) {
                counts.invalid += 1;
            } else if present.contains(&counts.anchor) {
                counts.valid += 1;
            }
        }
        for key in broken {
            if !self.expected.contains_key(&key) {
                *self.other.entry(key).or_default() += 1;
            }
        }
    }

    /// The rules of the model no spec broke.
    pub fn never_broken(&self) -> Vec<(String, String)> {
        self.expected
            .iter()
            .filter(|(_, c)| c.invalid == 0)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The rules of the model no spec kept while judged.
    pub fn never_kept(&self) -> Vec<(String, String)> {
        self.expected
            .iter()
            .filter(|(_, c)| c.valid == 0)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// How many distinct rule ids some spec broke.
    pub fn rule_ids_broken(&self) -> usize {
        let ids: BTreeSet<&str> = self
            .expected
            .iter()
            .filter(|(_, c)| c.invalid > 0)
            .map(|((_, id), _)| id.as_str())
            .chain(self.other.keys().map(|(_, id)| id.as_str()))
            .collect();
        ids.len()
    }

    /// Reported rules the model does not place there.
    pub fn unexpected(&self) -> Vec<(String, String)> {
        self.other.keys().cloned().collect()
    }

    /// The table: one line per (path, rule id) with its valid and invalid counts.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let width = self.expected.keys().map(|(p, r)| p.len() + r.len()).max().unwrap_or(0) + 2;
        let _ = writeln!(out, "{:width$} {:>7} {:>7}", "path rule", "valid", "invalid");
        for ((path, rule), counts) in &self.expected {
            let name = format!("{path} {rule}");
            let _ = writeln!(out, "{name:width$} {:>7} {:>7}", counts.valid, counts.invalid);
        }
        for ((path, rule), count) in &self.other {
            let name = format!("{path} {rule}");
            let _ = writeln!(
                out,
                "{name:width$} {:>7} {count:>7}  (not a rule of the model at this path)",
                "-"
            );
        }
        for (path, rule) in &self.unwritable {
            let _ = writeln!(
                out,
                "{path} {rule}: only an undeclared enum number, NaN or an infinity breaks it, which the \
                 Kubernetes form cannot write"
            );
        }
        out
    }
}

/// Whether only a value the Kubernetes form cannot write breaks a rule: an
/// enum number without a name (`defined_only`), NaN or an infinity
/// (`finite`). Specs in binary judge those (the rule-kinds fixtures).
fn unwritable(kind: &RuleKind) -> bool {
    matches!(kind, RuleKind::DefinedOnly | RuleKind::Finite)
}

/// The path patterns a spec sets: fields present, list elements as `[*]`.
fn places(message: &MessageDescriptor, json: &Value, path: &str, out: &mut BTreeSet<String>) {
    let Value::Object(object) = json else { return };
    for descriptor in message.fields() {
        let Some(value) = object.get(descriptor.json_name()) else {
            continue;
        };
        let place = format!("{path}.{}", descriptor.json_name());
        out.insert(place.clone());
        let element = format!("{place}[*]");
        let inner = match descriptor.kind() {
            Kind::Message(m) if descriptor.is_map() => match m.map_entry_value_field().kind() {
                Kind::Message(v) => Some(v),
                _ => None,
            },
            Kind::Message(m) => Some(m),
            _ => None,
        };
        match value {
            Value::Array(items) => {
                if !items.is_empty() {
                    out.insert(element.clone());
                }
                for item in items {
                    if let Some(m) = &inner {
                        places(m, item, &element, out);
                    }
                }
            }
            Value::Object(map) if descriptor.is_map() => {
                if !map.is_empty() {
                    out.insert(element.clone());
                }
                for item in map.values() {
                    if let Some(m) = &inner {
                        places(m, item, &element, out);
                    }
                }
            }
            _ => {
                if let Some(m) = &inner {
                    places(m, value, &place, out);
                }
            }
        }
    }
}

/// A path with its list indexes and map keys replaced by `[*]`
/// (`spec.routes[2].match` → `spec.routes[*].match`).
pub fn pattern_of(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        out.push_str("[*]");
        let mut in_string = false;
        let mut escaped = false;
        let mut close = rest.len() - 1;
        for (i, c) in rest[open + 1..].char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_string => escaped = true,
                '"' => in_string = !in_string,
                ']' if !in_string => {
                    close = open + 1 + i;
                    break;
                }
                _ => {}
            }
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}
