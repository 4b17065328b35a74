//! One drawn value, and its proto3 JSON and Kubernetes forms: the
//! bottom of the crate, read by the CEL evaluator, the scalar pools and
//! the message drawer alike.

use aether_rules::names;
use base64::Engine as _;
use prost_reflect::{EnumDescriptor, Kind};
use serde_json::Value;

/// A scalar value of any kind: integers widened, enums by number.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Bool(bool),
    Int(i128),
    Double(f64),
    Str(String),
    Bytes(Vec<u8>),
    /// A message as drawn (for CEL rules on a whole message).
    Msg(serde_json::Map<String, serde_json::Value>),
}

/// A scalar in the Kubernetes JSON form of `kind`: integers as numbers, 64
/// bits too (where proto3 JSON writes strings), a float as the shortest
/// decimal reading back as the same `f32`, bytes in base64, enums by their
/// short name. `None` for what the form cannot write (NaN, an infinity, an
/// enum number without a name).
pub fn json(kind: &Kind, value: &Val) -> Option<Value> {
    Some(match (kind, value) {
        (Kind::Enum(e), Val::Int(i)) => Value::String(enum_name(e, i32::try_from(*i).ok()?)?),
        (_, Val::Int(i)) => match i64::try_from(*i) {
            Ok(i) => Value::from(i),
            Err(_) => Value::from(u64::try_from(*i).ok()?),
        },
        (_, Val::Bool(b)) => Value::Bool(*b),
        (_, Val::Double(d)) if !d.is_finite() => return None,
        (Kind::Float, Val::Double(d)) => Value::from((*d as f32).to_string().parse::<f64>().ok()?),
        (_, Val::Double(d)) => Value::from(*d),
        (_, Val::Str(s)) => Value::String(s.clone()),
        (_, Val::Bytes(b)) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        (_, Val::Msg(m)) => Value::Object(m.clone()),
    })
}

/// A value's name in the Kubernetes form: `RED` for `COLOR_RED`.
pub fn enum_name(enumeration: &EnumDescriptor, number: i32) -> Option<String> {
    let value = enumeration.get_value(number)?;
    let name = value.name();
    Some(
        names::short_value_name(enumeration.name(), name)
            .unwrap_or(name)
            .to_owned(),
    )
}

/// The number of a value named short (`RED`) or in full (`COLOR_RED`).
pub fn enum_number(enumeration: &EnumDescriptor, name: &str) -> Option<i32> {
    enumeration
        .get_value_by_name(name)
        .or_else(|| enumeration.get_value_by_name(&format!("{}{name}", names::enum_value_prefix(enumeration.name()))))
        .map(|v| v.number())
}
