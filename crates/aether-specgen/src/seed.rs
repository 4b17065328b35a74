//! Values of specs written by hand (examples, fixtures, cases) added to the
//! pools of the places they set, labelled like every other candidate.

use base64::Engine as _;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;

use crate::Generator;
use crate::draw::{enum_number, item, join, key, value};
use crate::scalar::{Rules, Val, label};

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
    let Some(val) = read(kind, json) else { return };
    let Some((parent, field)) = owner(generator, place) else {
        return;
    };
    let model = generator
        .api
        .message(&parent)
        .and_then(|m| m.fields.iter().find(|f| f.json_name() == field));
    let empty = (Vec::new(), Vec::new());
    let (rules, cel) = match (model, of) {
        (Some(f), ValueOf::Field) => (&f.rules, &f.cel),
        (Some(f), ValueOf::Item) => f
            .items
            .as_ref()
            .map(|v| (&v.rules, &v.cel))
            .unwrap_or((&empty.0, &empty.1)),
        (Some(f), ValueOf::Key) => f
            .keys
            .as_ref()
            .map(|v| (&v.rules, &v.cel))
            .unwrap_or((&empty.0, &empty.1)),
        (Some(f), ValueOf::Value) => f
            .values
            .as_ref()
            .map(|v| (&v.rules, &v.cel))
            .unwrap_or((&empty.0, &empty.1)),
        (None, _) => (&empty.0, &empty.1),
    };
    let label = label(
        &Rules {
            kind: kind.clone(),
            rules,
            cel,
        },
        &val,
    );
    if let Some(pool) = generator.pools.get_mut(place) {
        pool.add(val, label);
    }
}

/// The message and field json name a place belongs to.
fn owner(generator: &Generator, place: &str) -> Option<(String, String)> {
    let mut message = generator.root.clone();
    let parts: Vec<&str> = place.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let name = part.split(['[', '{']).next()?;
        let field = message.fields().find(|f| f.json_name() == name)?;
        if i + 1 == parts.len() {
            return Some((message.full_name().to_owned(), name.to_owned()));
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
