//! Drawing a message: which fields are set (oneofs, `message.oneof`,
//! `required`), how many items a list gets, and each scalar from its pool.

use std::collections::BTreeMap;

use aether_rules::{CelRule, Field, Ignore, Rule, RuleKind};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};

use crate::cel::{self, Literals, Sizes};
use crate::scalar::{Pool, Rules};
use crate::val::{Val, json};
use crate::{Choices, Generator};

/// How deep messages nest before fields of message type are left out (a
/// recursive message would otherwise never end).
const MAX_DEPTH: usize = 12;

/// How often an optional field is set.
const PRESENT: f64 = 0.5;

/// How often a list takes exactly its largest count.
const AT_MAX_ITEMS: f64 = 0.02;

pub fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The places of a list's elements and a map's keys and values.
pub fn item(path: &str) -> String {
    format!("{path}[]")
}
pub fn key(path: &str) -> String {
    format!("{path}{{key}}")
}
pub fn value(path: &str) -> String {
    format!("{path}{{value}}")
}

/// The candidate pools of every scalar place under the root.
pub fn pools(generator: &Generator) -> BTreeMap<String, Pool> {
    let mut literals = Literals::new();
    let mut sizes = Sizes::new();
    for message in &generator.api.messages {
        for rule in &message.cel {
            cel::collect(&rule.expr, None, &mut literals, &mut sizes);
        }
        for field in &message.fields {
            let name = field.descriptor.full_name();
            let value_cel = [&field.items, &field.keys, &field.values]
                .into_iter()
                .flatten()
                .flat_map(|v| &v.cel);
            for rule in field.cel.iter().chain(value_cel) {
                cel::collect(&rule.expr, Some(name), &mut literals, &mut sizes);
            }
        }
    }
    let mut pools = BTreeMap::new();
    walk_pools(generator, &generator.root, "", (&literals, &sizes), &mut pools, 0);
    pools
}

fn walk_pools(
    generator: &Generator,
    message: &MessageDescriptor,
    path: &str,
    (literals, sizes): (&Literals, &Sizes),
    pools: &mut BTreeMap<String, Pool>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for descriptor in message.fields() {
        let place = join(path, descriptor.json_name());
        let field = model_field(generator, message, &descriptor);
        let lits = literals
            .get(descriptor.full_name())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let field_sizes = sizes.get(descriptor.full_name()).map(Vec::as_slice).unwrap_or_default();
        let add = |place: String,
                   kind: Kind,
                   rules: &[Rule],
                   cel: &[aether_rules::CelRule],
                   pools: &mut BTreeMap<String, Pool>| {
            match kind {
                Kind::Message(m) => walk_pools(generator, &m, &place, (literals, sizes), pools, depth + 1),
                kind => {
                    pools.insert(place, Pool::build(&Rules { kind, rules, cel }, lits, field_sizes));
                }
            }
        };
        if descriptor.is_map() {
            let Kind::Message(entry) = descriptor.kind() else {
                continue;
            };
            let (rules, cel) = rules_of(field.and_then(|f| f.keys.as_ref()));
            add(key(&place), entry.map_entry_key_field().kind(), rules, cel, pools);
            let (rules, cel) = rules_of(field.and_then(|f| f.values.as_ref()));
            add(value(&place), entry.map_entry_value_field().kind(), rules, cel, pools);
        } else if descriptor.is_list() {
            let (rules, cel) = rules_of(field.and_then(|f| f.items.as_ref()));
            add(item(&place), descriptor.kind(), rules, cel, pools);
        } else {
            let (rules, cel) = field
                .map(|f| (f.rules.as_slice(), f.cel.as_slice()))
                .unwrap_or((&[], &[]));
            add(place.clone(), descriptor.kind(), rules, cel, pools);
            // `required` on a field without presence refuses its zero value.
            if field.is_some_and(|f| f.required)
                && !descriptor.supports_presence()
                && let Some(pool) = pools.get_mut(&place)
            {
                pool.refuse_zero();
            }
        }
    }
}

pub fn rules_of(values: Option<&aether_rules::ValueRules>) -> (&[Rule], &[aether_rules::CelRule]) {
    values
        .map(|v| (v.rules.as_slice(), v.cel.as_slice()))
        .unwrap_or((&[], &[]))
}

fn model_field<'a>(
    generator: &'a Generator,
    message: &MessageDescriptor,
    field: &FieldDescriptor,
) -> Option<&'a Field> {
    generator
        .api
        .message(message.full_name())
        .and_then(|m| m.fields.iter().find(|f| f.descriptor.number() == field.number()))
}

/// How many times a message is drawn again when a CEL rule on it (one
/// this crate evaluates) is broken and no bad value was asked for.
const REDRAWS: usize = 6;

/// One message at `path`: drawn again while its own CEL rules, or those of
/// the field holding it (`field_cel`), refuse it, unless a bad value is
/// wanted (with probability `badness`).
pub fn message(
    generator: &Generator,
    descriptor: &MessageDescriptor,
    path: &str,
    choices: &mut dyn Choices,
    badness: f64,
    depth: usize,
    field_cel: &[CelRule],
) -> Map<String, Value> {
    let own: &[CelRule] = generator
        .api
        .message(descriptor.full_name())
        .map(|m| m.cel.as_slice())
        .unwrap_or_default();
    let rules: Vec<&CelRule> = own.iter().chain(field_cel).collect();
    let keep_broken = rules.is_empty() || choices.chance(badness);
    let mut drawn = draw_once(generator, descriptor, path, choices, badness, depth);
    for _ in 0..REDRAWS {
        let this = Val::Msg(drawn.clone());
        if keep_broken || rules.iter().all(|r| cel::eval_on(&r.expr, &this) != Some(false)) {
            break;
        }
        drawn = draw_once(generator, descriptor, path, choices, badness, depth);
    }
    drawn
}

fn draw_once(
    generator: &Generator,
    message: &MessageDescriptor,
    path: &str,
    choices: &mut dyn Choices,
    badness: f64,
    depth: usize,
) -> Map<String, Value> {
    let model = generator.api.message(message.full_name());
    // The fields a choice among several decides: oneofs, `message.oneof`.
    let mut decided: Vec<u32> = Vec::new();
    let mut chosen: Vec<u32> = Vec::new();
    for oneof in message.oneofs().filter(|o| !o.is_synthetic()) {
        let members: Vec<u32> = oneof.fields().map(|f| f.number()).collect();
        let required = model.is_some_and(|m| m.oneofs.iter().any(|o| o.name == oneof.name() && o.required));
        decided.extend(&members);
        let none = if required {
            choices.chance(badness)
        } else {
            choices.chance(1.0 - PRESENT)
        };
        if !none {
            chosen.push(members[choices.below(members.len())]);
        }
    }
    for rule in model.iter().flat_map(|m| &m.oneof_rules) {
        let members: Vec<u32> = rule.fields.iter().map(|f| f.number()).collect();
        decided.extend(&members);
        let count = if choices.chance(badness) {
            // None, or two at once: each breaks the rule (none only if required).
            if members.len() > 1 && choices.chance(0.5) { 2 } else { 0 }
        } else if rule.required || choices.chance(PRESENT) {
            1
        } else {
            0
        };
        let mut left = members.clone();
        for _ in 0..count.min(left.len()) {
            chosen.push(left.remove(choices.below(left.len())));
        }
    }
    let mut out = Map::new();
    for descriptor in message.fields() {
        let field = model.and_then(|m| m.fields.iter().find(|f| f.descriptor.number() == descriptor.number()));
        // Absent is the zero value for a field without presence: a rule the
        // zero value breaks makes it as good as required.
        let explicit = descriptor.supports_presence() && !descriptor.is_list() && !descriptor.is_map();
        let required = field.is_some_and(|f| {
            f.required || (!explicit && f.ignore == Ignore::Unspecified && breaks_zero(f, &descriptor))
        });
        let present = if decided.contains(&descriptor.number()) {
            chosen.contains(&descriptor.number())
        } else if required {
            !choices.chance(badness)
        } else {
            choices.chance(PRESENT)
        };
        if !present {
            continue;
        }
        let place = join(path, descriptor.json_name());
        let required = required || chosen.contains(&descriptor.number());
        if let Some(value) = field_value(generator, &descriptor, field, &place, choices, badness, depth, required) {
            out.insert(descriptor.json_name().to_owned(), value);
        }
    }
    out
}

/// The CEL rules on each element, key or value, if any.
fn cel_of(values: Option<&aether_rules::ValueRules>) -> &[CelRule] {
    values.map(|v| v.cel.as_slice()).unwrap_or_default()
}

/// Whether a field's zero value breaks one of its rules: a standard one,
/// or, for a scalar, a CEL one this crate evaluates (`this != ''`).
fn breaks_zero(field: &Field, descriptor: &FieldDescriptor) -> bool {
    let scalar = !descriptor.is_list() && !descriptor.is_map();
    field.rules.iter().any(Rule::breaks_zero)
        || (scalar
            && cel::zero_of(&descriptor.kind())
                .is_some_and(|zero| field.cel.iter().any(|r| cel::eval_on(&r.expr, &zero) == Some(false))))
}

#[allow(clippy::too_many_arguments)]
fn field_value(
    generator: &Generator,
    descriptor: &FieldDescriptor,
    field: Option<&Field>,
    place: &str,
    choices: &mut dyn Choices,
    badness: f64,
    depth: usize,
    required: bool,
) -> Option<Value> {
    let rules = field.map(|f| f.rules.as_slice()).unwrap_or_default();
    if descriptor.is_map() {
        let Kind::Message(entry) = descriptor.kind() else {
            return None;
        };
        let count = count(
            rules,
            choices,
            badness,
            required,
            RuleKind::MinPairs,
            RuleKind::MaxPairs,
        );
        let mut map = Map::new();
        for _ in 0..count * 2 {
            if map.len() == count {
                break;
            }
            let key = one(
                generator,
                &entry.map_entry_key_field().kind(),
                &key(place),
                choices,
                badness,
                depth,
                &[],
            )?;
            let key = match key {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let value = one(
                generator,
                &entry.map_entry_value_field().kind(),
                &value(place),
                choices,
                badness,
                depth,
                cel_of(field.and_then(|f| f.values.as_ref())),
            )?;
            map.insert(key, value);
        }
        return Some(Value::Object(map));
    }
    if descriptor.is_list() {
        let count = count(
            rules,
            choices,
            badness,
            required,
            RuleKind::MinItems,
            RuleKind::MaxItems,
        );
        let mut items = Vec::with_capacity(count + 1);
        let unique = rules.iter().any(|r| r.kind == RuleKind::Unique);
        let kind = descriptor.kind();
        let item_cel = cel_of(field.and_then(|f| f.items.as_ref()));
        for _ in 0..count {
            // A unique list draws again on a repeat (a few times: the pool
            // may hold fewer values than the count asks for).
            let mut drawn = one(generator, &kind, &item(place), choices, badness, depth, item_cel)?;
            for _ in 0..4 {
                if !unique || !items.contains(&drawn) {
                    break;
                }
                drawn = one(generator, &kind, &item(place), choices, badness, depth, item_cel)?;
            }
            items.push(drawn);
        }
        if unique && !items.is_empty() && choices.chance(badness) {
            let again = items[choices.below(items.len())].clone();
            items.push(again);
        }
        return Some(Value::Array(items));
    }
    let cel = field.map(|f| f.cel.as_slice()).unwrap_or_default();
    one(generator, &descriptor.kind(), place, choices, badness, depth, cel)
}

/// A list's or map's size: small mostly, at the bounds now and then, and
/// one past a bound with probability `badness`.
fn count(
    rules: &[Rule],
    choices: &mut dyn Choices,
    badness: f64,
    required: bool,
    min_kind: fn(u64) -> RuleKind,
    max_kind: fn(u64) -> RuleKind,
) -> usize {
    let bound = |make: fn(u64) -> RuleKind| {
        rules.iter().find_map(|r| {
            let n = match r.kind {
                RuleKind::MinItems(n) | RuleKind::MaxItems(n) | RuleKind::MinPairs(n) | RuleKind::MaxPairs(n) => n,
                _ => return None,
            };
            (make(n) == r.kind).then_some(n as usize)
        })
    };
    let min = bound(min_kind).unwrap_or(0).max(usize::from(required));
    let max = bound(max_kind);
    if choices.chance(badness) {
        let mut past = Vec::new();
        if min > 0 {
            past.push(min - 1);
        }
        if let Some(max) = max {
            past.push(max + 1);
        }
        if !past.is_empty() {
            return past[choices.below(past.len())];
        }
    }
    let top = max.unwrap_or(min + 4);
    if choices.chance(AT_MAX_ITEMS) {
        return top;
    }
    let small_top = top.min(min + 3);
    min + choices.below(small_top - min + 1)
}

/// One value of `kind` at `place`: a message drawn field by field (kept to
/// the `cel` rules on it, see [`message`]), or a scalar from the place's pool.
fn one(
    generator: &Generator,
    kind: &Kind,
    place: &str,
    choices: &mut dyn Choices,
    badness: f64,
    depth: usize,
    cel: &[CelRule],
) -> Option<Value> {
    match kind {
        Kind::Message(m) => {
            (depth < MAX_DEPTH).then(|| Value::Object(message(generator, m, place, choices, badness, depth + 1, cel)))
        }
        kind => {
            let pool = generator.pools.get(place)?;
            json(kind, pool.pick(choices, badness)?)
        }
    }
}
