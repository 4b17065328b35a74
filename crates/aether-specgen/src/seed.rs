//! Values of specs written by hand (examples, fixtures, cases) added to the
//! pools of the places they set, labelled like every other candidate.

use base64::Engine as _;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

use crate::Generator;
use crate::draw::{item, join, key, rules_of, value};
use crate::scalar::{Label, Rules, label};
use crate::val::{Val, enum_number};

pub fn message(generator: &mut Generator, message: &MessageDescriptor, json: &Value, path: &str) {
    let Value::Object(object) = json else { return };
    for descriptor in message.fields() {
        let Some(field_json) = object
            .get(descriptor.json_name())
            .or_else(|| object.get(descriptor.name()))
        else {
            continue;
        };
        let place = join(path, descriptor.json_name());
        if descriptor.is_map() {
            let Kind::Message(entry) = descriptor.kind() else {
                continue;
            };
            let Value::Object(map) = field_json else { continue };
            for (k, v) in map {
                one(
                    generator,
                    &entry.map_entry_key_field().kind(),
                    &Value::String(k.clone()),
                    &key(&place),
                    ValueOf::Key,
                );
                one(
                    generator,
                    &entry.map_entry_value_field().kind(),
                    v,
                    &value(&place),
                    ValueOf::Value,
                );
            }
        } else if descriptor.is_list() {
            for element in field_json.as_array().into_iter().flatten() {
                one(generator, &descriptor.kind(), element, &item(&place), ValueOf::Item);
            }
        } else {
            one(generator, &descriptor.kind(), field_json, &place, ValueOf::Field);
        }
    }
}

/// Which rules of the field judge the value.
#[derive(Clone, Copy)]
enum ValueOf {
    Field,
    Item,
    Key,
    Value,
}

fn one(generator: &mut Generator, kind: &Kind, json: &Value, place: &str, of: ValueOf) {
    if let Kind::Message(m) = kind {
        message(generator, m, json, place);
        return;
    }
    if let Some((val, label)) = labelled(generator, kind, json, place, of)
        && let Some(pool) = generator.pools.get_mut(place)
    {
        pool.add(val, label);
    }
}

/// Makes `values` the only candidates a valid draw at the scalar place
/// `place` takes (each labelled by the place's rules; the rules' own
/// invalid candidates stay, for doubtful draws). False when `place` is not
/// a scalar place of the root message.
pub fn narrow(generator: &mut Generator, place: &str, values: &[Value]) -> bool {
    let Some((_, field)) = owner(generator, place) else {
        return false;
    };
    let (kind, of) = if place.ends_with("{key}") {
        (map_entry(&field).map(|e| e.map_entry_key_field().kind()), ValueOf::Key)
    } else if place.ends_with("{value}") {
        (
            map_entry(&field).map(|e| e.map_entry_value_field().kind()),
            ValueOf::Value,
        )
    } else if place.ends_with("[]") {
        (Some(field.kind()), ValueOf::Item)
    } else {
        (Some(field.kind()), ValueOf::Field)
    };
    let Some(kind) = kind.filter(|k| !matches!(k, Kind::Message(_))) else {
        return false;
    };
    let labelled: Vec<_> = values
        .iter()
        .filter_map(|json| labelled(generator, &kind, json, place, of))
        .collect();
    let Some(pool) = generator.pools.get_mut(place) else {
        return false;
    };
    pool.valid.clear();
    pool.unknown.clear();
    for (val, label) in labelled {
        pool.add(val, label);
    }
    true
}

fn map_entry(field: &FieldDescriptor) -> Option<MessageDescriptor> {
    match field.kind() {
        Kind::Message(entry) if field.is_map() => Some(entry),
        _ => None,
    }
}

/// A JSON scalar read as a candidate of `place`, with what the rules there
/// say of it.
fn labelled(generator: &Generator, kind: &Kind, json: &Value, place: &str, of: ValueOf) -> Option<(Val, Label)> {
    let val = read(kind, json)?;
    let (parent, field) = owner(generator, place)?;
    let model = generator
        .api
        .message(parent.full_name())
        .and_then(|m| m.fields.iter().find(|f| f.descriptor.number() == field.number()));
    let (rules, cel) = match (model, of) {
        (Some(f), ValueOf::Field) => (f.rules.as_slice(), f.cel.as_slice()),
        (Some(f), ValueOf::Item) => rules_of(f.items.as_ref()),
        (Some(f), ValueOf::Key) => rules_of(f.keys.as_ref()),
        (Some(f), ValueOf::Value) => rules_of(f.values.as_ref()),
        (None, _) => (&[][..], &[][..]),
    };
    let label = label(
        &Rules {
            kind: kind.clone(),
            rules,
            cel,
        },
        &val,
    );
    Some((val, label))
}

/// The message a place belongs to, and its field.
fn owner(generator: &Generator, place: &str) -> Option<(MessageDescriptor, FieldDescriptor)> {
    let mut message = generator.root.clone();
    let parts: Vec<&str> = place.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let name = part.split(['[', '{']).next()?;
        let field = message.fields().find(|f| f.json_name() == name)?;
        if i + 1 == parts.len() {
            return Some((message, field));
        }
        let Kind::Message(next) = field.kind() else { return None };
        message = if field.is_map() {
            match next.map_entry_value_field().kind() {
                Kind::Message(m) => m,
                _ => return None,
            }
        } else {
            next
        };
    }
    None
}

/// A JSON scalar as a candidate of `kind` (proto3 JSON and the Kubernetes
/// form both: numbers or strings for integers, enum names short or full),
/// if the Kubernetes form can write it.
fn read(kind: &Kind, json: &Value) -> Option<Val> {
    Some(match (kind, json) {
        (Kind::Bool, Value::Bool(b)) => Val::Bool(*b),
        (Kind::String, Value::String(s)) => Val::Str(s.clone()),
        (Kind::Bytes, Value::String(s)) => Val::Bytes(base64::engine::general_purpose::STANDARD.decode(s).ok()?),
        (Kind::Enum(e), Value::String(s)) => Val::Int(enum_number(e, s)?.into()),
        (Kind::Enum(_), Value::Number(n)) => Val::Int(n.as_i64()?.into()),
        (Kind::Float | Kind::Double, Value::Number(n)) => Val::Double(n.as_f64()?),
        // Not NaN nor an infinity: the Kubernetes form cannot write them.
        (Kind::Float | Kind::Double, Value::String(s)) => Val::Double(s.parse().ok().filter(|d: &f64| d.is_finite())?),
        (_, Value::Number(n)) => Val::Int(n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))?),
        (_, Value::String(s)) => Val::Int(s.parse().ok()?),
        _ => return None,
    })
}
