//! Tightened buf.validate rules between a baseline and now.
//!
//! `buf breaking` guards the wire and JSON names; it does not read
//! buf.validate options. A rule that tightens (a smaller maximum, a new
//! pattern, a new CEL rule...) passes it, and then rejects objects already
//! stored in clusters on their next update. This compares the rules of
//! every message, oneof and field that exists in both descriptor sets and
//! lists each tightening with the field, the rule and both values.
//! Loosening passes; rules on new fields and messages pass.
//!
//! The comparison works on the rule messages themselves (prost-reflect
//! dynamic messages of `buf.validate.FieldRules` and friends), field by
//! field, so it needs no model of what each rule means beyond its
//! direction: an upper bound that shrinks, a lower bound that grows, a set
//! of allowed values that narrows, a set of refused values that grows, or
//! a constraint that appears or changes. A rule field this table does not
//! know counts as tightened whenever it changes: fail closed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use anyhow::{Context, Result};
use prost_reflect::{DescriptorPool, DynamicMessage, ExtensionDescriptor, MessageDescriptor, ReflectMessage, Value};

/// One tightened rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tightening {
    /// The element: `VirtualHostSpec.hosts`, `RouteMatch` (message rules),
    /// `RouteMatch.path` (a oneof).
    pub element: String,
    /// The rule, as buf.validate names it: `repeated.max_items`,
    /// `string.pattern`, `cel[path.no_dot_segment]`, `required`.
    pub rule: String,
    /// The baseline's value (`-` when unset).
    pub old: String,
    /// Today's value (`-` when unset).
    pub new: String,
}

impl fmt::Display for Tightening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} {} → {}", self.element, self.rule, self.old, self.new)
    }
}

/// How a rule field may change without rejecting what it accepted before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// A maximum (`max_len`, `max_items`): growing or unsetting loosens.
    Upper,
    /// A minimum (`min_len`, `min_items`): shrinking or unsetting loosens.
    Lower,
    /// A bound of a number (`gt`, `gte`, `lt`, `lte`), compared with the
    /// other member of its oneof (`gte: 5` after `gt: 5` loosens).
    Bound,
    /// Values allowed (`in`): a superset loosens.
    Allowed,
    /// Values refused (`not_in`), or rules listed (`oneof` of
    /// `MessageRules`): a subset loosens.
    Listed,
    /// How far rules apply (`ignore`): a greater enum number skips more.
    Ignore,
    /// Turns rules off (`disabled`): never a tightening.
    Off,
    /// Anything else (`const`, `pattern`, `len`, `required`, a format):
    /// unsetting loosens, setting or changing tightens.
    Constraint,
}

/// The direction of a rule field by its name in buf.validate's rule
/// messages. Fields not named here are constraints (fail closed).
fn direction(name: &str, is_list: bool) -> Direction {
    match name {
        "max_len" | "max_bytes" | "max_items" | "max_pairs" => Direction::Upper,
        "min_len" | "min_bytes" | "min_items" | "min_pairs" => Direction::Lower,
        "gt" | "gte" | "lt" | "lte" => Direction::Bound,
        "in" => Direction::Allowed,
        "not_in" => Direction::Listed,
        "ignore" => Direction::Ignore,
        "disabled" => Direction::Off,
        _ if is_list => Direction::Listed,
        _ => Direction::Constraint,
    }
}

/// The extensions buf.validate defines on descriptor options.
struct Extensions {
    message: ExtensionDescriptor,
    oneof: ExtensionDescriptor,
    field: ExtensionDescriptor,
}

impl Extensions {
    fn find(pool: &DescriptorPool) -> Result<Self> {
        let get = |name: &str| {
            pool.get_extension_by_name(name)
                .with_context(|| format!("the descriptors do not hold {name}"))
        };
        Ok(Self {
            message: get("buf.validate.message")?,
            oneof: get("buf.validate.oneof")?,
            field: get("buf.validate.field")?,
        })
    }
}

/// Every tightening of the rules of the messages of `own_files` from
/// `baseline` to `current` (lowered proto3 descriptor sets with their
/// imports).
pub fn tightenings(baseline: &[u8], current: &[u8], own_files: &[String]) -> Result<Vec<Tightening>> {
    let old = DescriptorPool::decode(baseline).context("loading the baseline's descriptors")?;
    let new = DescriptorPool::decode(current).context("loading today's descriptors")?;
    let (old_ext, new_ext) = (Extensions::find(&old)?, Extensions::find(&new)?);
    let mut found = Vec::new();
    let own = |message: &MessageDescriptor| own_files.iter().any(|file| file == message.parent_file().name());
    for message in new.all_messages().filter(own) {
        let Some(before) = old.get_message_by_name(message.full_name()) else {
            continue; // A new message: its rules are new.
        };
        let package = message.package_name();
        let name = message
            .full_name()
            .strip_prefix(&format!("{package}."))
            .unwrap_or(message.full_name());
        compare_message(name, &before, &message, (&old_ext, &new_ext), &mut found);
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn compare_message(
    name: &str,
    old: &MessageDescriptor,
    new: &MessageDescriptor,
    (old_ext, new_ext): (&Extensions, &Extensions),
    found: &mut Vec<Tightening>,
) {
    let rules = |message: &MessageDescriptor, ext: &ExtensionDescriptor| {
        let options = message.options();
        options
            .has_extension(ext)
            .then(|| options.get_extension(ext).as_message().cloned())
            .flatten()
    };
    compare_rules(
        name,
        "",
        rules(old, &old_ext.message),
        rules(new, &new_ext.message),
        found,
    );
    for oneof in new.oneofs().filter(|o| !o.is_synthetic()) {
        let element = format!("{name}.{}", oneof.name());
        let before = old.oneofs().find(|o| o.name() == oneof.name() && !o.is_synthetic());
        let rules = |options: DynamicMessage, ext: &ExtensionDescriptor| {
            options
                .has_extension(ext)
                .then(|| options.get_extension(ext).as_message().cloned())
                .flatten()
        };
        let old_rules = before.and_then(|o| rules(o.options(), &old_ext.oneof));
        compare_rules(&element, "", old_rules, rules(oneof.options(), &new_ext.oneof), found);
    }
    for field in new.fields() {
        let Some(before) = old.get_field_by_name(field.name()) else {
            continue; // A new field: its rules are new.
        };
        let element = format!("{name}.{}", field.name());
        let in_real_oneof =
            |f: &prost_reflect::FieldDescriptor| f.containing_oneof().is_some_and(|o| !o.is_synthetic());
        if in_real_oneof(&field) && !in_real_oneof(&before) {
            // Setting a sibling now clears it: objects setting both are refused.
            found.push(Tightening {
                element: element.clone(),
                rule: "oneof".into(),
                old: "-".into(),
                new: field
                    .containing_oneof()
                    .map(|o| o.name().to_owned())
                    .unwrap_or_default(),
            });
        }
        let rules = |field: &prost_reflect::FieldDescriptor, ext: &ExtensionDescriptor| {
            let options = field.options();
            options
                .has_extension(ext)
                .then(|| options.get_extension(ext).as_message().cloned())
                .flatten()
        };
        compare_rules(
            &element,
            "",
            rules(&before, &old_ext.field),
            rules(&field, &new_ext.field),
            found,
        );
    }
}

/// Compares two rule messages of one type (`FieldRules`, `StringRules`,
/// `MessageRules`...), `prefix` naming where they sit (`repeated.items.`).
fn compare_rules(
    element: &str,
    prefix: &str,
    old: Option<DynamicMessage>,
    new: Option<DynamicMessage>,
    found: &mut Vec<Tightening>,
) {
    let Some(new) = new else {
        return; // Every rule removed: looser.
    };
    let descriptor = new.descriptor();
    let old = old.unwrap_or_else(|| DynamicMessage::new(descriptor.clone()));
    for field in descriptor.fields() {
        let name = field.name();
        let (had, has) = (old.has_field(&field), new.has_field(&field));
        if !has {
            continue; // Unset today: no constraint.
        }
        let (before, after) = (old.get_field(&field), new.get_field(&field));
        let rule = format!("{prefix}{name}");
        if name == "cel" {
            compare_cel(element, &rule, &before, &after, found);
            continue;
        }
        if let (Value::Message(before), Value::Message(after)) = (before.as_ref(), after.as_ref()) {
            // A nested rule message (`string`, `repeated`, `items`...).
            let before = had.then(|| before.clone());
            compare_rules(element, &format!("{rule}."), before, Some(after.clone()), found);
            continue;
        }
        let tightened = match direction(name, field.is_list()) {
            Direction::Upper => !had || compare_numbers(&after, &before).is_lt(),
            Direction::Lower => !had || compare_numbers(&after, &before).is_gt(),
            Direction::Bound => bound_tightened(&old, &new, name),
            Direction::Allowed => !had || !values(&after).is_superset(&values(&before)),
            Direction::Listed => !values(&after).is_subset(&values(&before)),
            Direction::Ignore => number(&after) < if had { number(&before) } else { 0.0 },
            Direction::Off => false,
            Direction::Constraint => !had || before != after,
        };
        // `false` for a boolean rule (`unique: false`) constrains nothing.
        let inert = matches!(after.as_ref(), Value::Bool(false));
        if tightened && !inert {
            found.push(Tightening {
                element: element.to_owned(),
                rule,
                old: if had {
                    show(&before)
                } else {
                    sibling_bound(&old, name).unwrap_or_else(|| "-".into())
                },
                new: show(&after),
            });
        }
    }
}

/// CEL rules by id: a new id, or an id whose expression changed, tightens.
fn compare_cel(element: &str, rule: &str, old: &Value, new: &Value, found: &mut Vec<Tightening>) {
    let by_id = |value: &Value| -> BTreeMap<String, String> {
        value
            .as_list()
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_message)
            .map(|cel| {
                let text = |name: &str| cel.get_field_by_name(name).and_then(|v| v.as_str().map(str::to_owned));
                (text("id").unwrap_or_default(), text("expression").unwrap_or_default())
            })
            .collect()
    };
    let before = by_id(old);
    for (id, expression) in by_id(new) {
        match before.get(&id) {
            Some(old) if *old == expression => {}
            old => found.push(Tightening {
                element: element.to_owned(),
                rule: format!("{rule}[{id}]"),
                old: old.map_or_else(|| "-".to_owned(), |e| format!("`{e}`")),
                new: format!("`{expression}`"),
            }),
        }
    }
}

/// Whether the bound `name` (`gt`/`gte` or `lt`/`lte`) of `new` is
/// tighter than the same side's bound of `old`. On integers `gt: n` is
/// `gte: n + 1`; on floats an exclusive bound is tighter than an inclusive
/// one at the same value.
fn bound_tightened(old: &DynamicMessage, new: &DynamicMessage, name: &str) -> bool {
    let lower = name.starts_with('g');
    let (exclusive, inclusive) = if lower { ("gt", "gte") } else { ("lt", "lte") };
    let bound = |rules: &DynamicMessage| -> Option<(f64, bool)> {
        let get = |name: &str| {
            let field = rules.descriptor().get_field_by_name(name)?;
            rules.has_field(&field).then(|| rules.get_field(&field).into_owned())
        };
        let (value, strict) = match (get(exclusive), get(inclusive)) {
            (Some(value), _) => (value, true),
            (None, Some(value)) => (value, false),
            (None, None) => return None,
        };
        let integer = !matches!(value, Value::F32(_) | Value::F64(_));
        let step = if lower { 1.0 } else { -1.0 };
        Some(match (integer, strict) {
            (true, true) => (number(&value) + step, false),
            _ => (number(&value), strict),
        })
    };
    match (bound(old), bound(new)) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some((old, old_strict)), Some((new, new_strict))) => {
            let narrower = if lower { new > old } else { new < old };
            narrower || (new == old && new_strict && !old_strict)
        }
    }
}

/// For a bound `name` unset in `rules`, the other member of its oneof, as
/// `gt 5` (what the baseline had instead).
fn sibling_bound(rules: &DynamicMessage, name: &str) -> Option<String> {
    let sibling = match name {
        "gt" => "gte",
        "gte" => "gt",
        "lt" => "lte",
        "lte" => "lt",
        _ => return None,
    };
    let field = rules.descriptor().get_field_by_name(sibling)?;
    rules
        .has_field(&field)
        .then(|| format!("{sibling} {}", show(&rules.get_field(&field))))
}

fn compare_numbers(a: &Value, b: &Value) -> std::cmp::Ordering {
    number(a).total_cmp(&number(b))
}

/// A numeric rule value as `f64`: exact for every bound a Kubernetes API
/// sets (an `int64` above 2^53 would compare approximately).
fn number(value: &Value) -> f64 {
    match value {
        Value::I32(v) => f64::from(*v),
        Value::I64(v) => *v as f64,
        Value::U32(v) => f64::from(*v),
        Value::U64(v) => *v as f64,
        Value::F32(v) => f64::from(*v),
        Value::F64(v) => *v,
        Value::EnumNumber(v) => f64::from(*v),
        _ => f64::NAN,
    }
}

fn values(value: &Value) -> BTreeSet<String> {
    value.as_list().unwrap_or_default().iter().map(show).collect()
}

fn show(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Bytes(b) => format!("{b:?}"),
        Value::F32(_) | Value::F64(_) => number(value).to_string(),
        Value::I32(v) | Value::EnumNumber(v) => v.to_string(),
        Value::I64(v) => v.to_string(),
        Value::U32(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::List(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(", ")),
        // A rule message such as a message oneof rule: its set fields, as
        // protobuf's text format writes them.
        Value::Message(message) => format!(
            "{{{}}}",
            message
                .fields()
                .map(|(field, value)| format!("{}: {}", field.name(), show(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}
