//! Specs drawn near every rule's edges: the values the cases write at each
//! place (each field, each list element's fields), recombined at random.
//!
//! A value is "bad" where an invalid case wrote it on or around the place it
//! expects a violation; a generated spec takes a bad value at each place with
//! a small probability, so that samples hold many valid specs, many invalid
//! ones, and many with several violations at once, across messages (which
//! is where message-level and cross-field rules are exercised). Lists of
//! messages get a length seen in the cases and elements drawn field by
//! field. Members of a oneof are drawn as one place, so no spec sets two.

use std::collections::BTreeMap;

use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value};

use super::{Case, SPEC, pattern_of};

use aether_specgen::Choices as _;
pub use aether_specgen::Rng;

/// What the cases wrote at one place: `None` for absent.
#[derive(Default)]
struct Slot {
    /// What the first case (the base spec) wrote.
    base: Option<Option<Value>>,
    good: Vec<Option<Value>>,
    bad: Vec<Option<Value>>,
}

/// How often a place keeps the base spec's value when no bad one is drawn:
/// values valid alone can break a rule across fields together, so a spec
/// changing every place at once would almost never be valid.
const KEEP_BASE: f64 = 0.85;

impl Slot {
    fn add(&mut self, value: Option<Value>, bad: bool) {
        if self.base.is_none() {
            self.base = Some(value.clone());
        }
        let list = if bad { &mut self.bad } else { &mut self.good };
        if !list.contains(&value) {
            list.push(value);
        }
    }

    fn pick(&self, rng: &mut Rng, badness: f64) -> Option<Value> {
        if !self.bad.is_empty() && (self.good.is_empty() || rng.chance(badness)) {
            return self.bad[rng.below(self.bad.len())].clone();
        }
        match &self.base {
            Some(base) if rng.chance(KEEP_BASE) => base.clone(),
            _ => self.good[rng.below(self.good.len())].clone(),
        }
    }
}

/// The places of the test API and the values seen at each.
pub struct Generator {
    root: MessageDescriptor,
    slots: BTreeMap<String, Slot>,
}

impl Generator {
    pub fn from_cases(cases: &[Case]) -> Self {
        let root = super::descriptors()
            .get_message_by_name(SPEC)
            .expect("the spec message");
        let mut generator = Self {
            root: root.clone(),
            slots: BTreeMap::new(),
        };
        for case in cases {
            // The places an invalid case means to break, as `a.b[]` paths.
            let bad: Vec<String> = case
                .expect
                .iter()
                .map(|(path, _)| {
                    let pattern = pattern_of(path).replace("[*]", "[]");
                    pattern
                        .strip_prefix("spec")
                        .unwrap_or(&pattern)
                        .trim_start_matches('.')
                        .to_owned()
                })
                .collect();
            generator.collect(&root, case.spec.as_object(), "", &bad);
        }
        generator
    }

    fn collect(
        &mut self,
        message: &MessageDescriptor,
        object: Option<&Map<String, Value>>,
        path: &str,
        bad: &[String],
    ) {
        for oneof in message.oneofs().filter(|o| !o.is_synthetic()) {
            let key = join(path, oneof.name());
            let chosen = oneof
                .fields()
                .find(|f| object.is_some_and(|o| o.contains_key(f.json_name())))
                .map(|f| Value::from(f.json_name()));
            let is_bad = near(&key, bad) || oneof.fields().any(|f| near(&join(path, f.json_name()), bad));
            self.slots.entry(key).or_default().add(chosen, is_bad);
        }
        for field in message.fields() {
            let key = join(path, field.json_name());
            let value = object.and_then(|o| o.get(field.json_name())).cloned();
            self.slots
                .entry(key.clone())
                .or_default()
                .add(value.clone(), near(&key, bad));
            match (field.kind(), &value) {
                (Kind::Message(m), Some(Value::Object(sub))) if !field.is_map() && !field.is_list() => {
                    self.collect(&m, Some(sub), &key, bad);
                }
                (Kind::Message(m), Some(Value::Array(items))) if field.is_list() => {
                    for item in items {
                        self.collect(&m, item.as_object(), &format!("{key}[]"), bad);
                    }
                }
                _ => {}
            }
        }
    }

    /// One spec, taking bad values with probability `badness` at each place.
    pub fn spec(&self, rng: &mut Rng, badness: f64) -> Value {
        Value::Object(self.message(&self.root, "", rng, badness))
    }

    fn message(&self, message: &MessageDescriptor, path: &str, rng: &mut Rng, badness: f64) -> Map<String, Value> {
        let mut out = Map::new();
        let mut chosen_members = Vec::new();
        for oneof in message.oneofs().filter(|o| !o.is_synthetic()) {
            if let Some(Value::String(member)) = self.slot(&join(path, oneof.name())).pick(rng, badness) {
                chosen_members.push(member);
            }
        }
        for field in message.fields() {
            let json = field.json_name();
            let key = join(path, json);
            let in_oneof = field.containing_oneof().is_some_and(|o| !o.is_synthetic());
            let value = if in_oneof {
                if !chosen_members.iter().any(|m| m == json) {
                    continue;
                }
                // A member chosen is present: draw among its written values.
                let slot = self.slot(&key);
                let present: Vec<_> = slot.good.iter().chain(&slot.bad).flatten().collect();
                Some(present[rng.below(present.len())].clone())
            } else {
                self.slot(&key).pick(rng, badness)
            };
            let Some(value) = value else { continue };
            let value = match (field.kind(), value) {
                (Kind::Message(m), Value::Object(_)) if !field.is_map() && !field.is_list() => {
                    Value::Object(self.message(&m, &key, rng, badness))
                }
                (Kind::Message(m), Value::Array(items)) if field.is_list() => Value::Array(
                    (0..items.len())
                        .map(|_| Value::Object(self.message(&m, &format!("{key}[]"), rng, badness)))
                        .collect(),
                ),
                (_, value) => value,
            };
            out.insert(json.to_owned(), value);
        }
        out
    }

    fn slot(&self, key: &str) -> &Slot {
        self.slots
            .get(key)
            .unwrap_or_else(|| panic!("no case writes or omits {key}"))
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Whether `key` is one of the `bad` places, inside one, or holds one.
fn near(key: &str, bad: &[String]) -> bool {
    let within = |outer: &str, inner: &str| {
        outer.is_empty()
            || inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with(['.', '[']))
    };
    bad.iter().any(|b| within(b, key) || within(key, b))
}
