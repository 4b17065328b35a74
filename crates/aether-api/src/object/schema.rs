//! What a field that does not decode should have held, in the words of the
//! CRD's OpenAPI schema: the schema the API server judges objects with.
//!
//! The types and bounds are not listed here: they are read from the
//! generated schema (`generated/crds/virtualhost.schema.json`, the CRD's
//! own), which `cargo xtask codegen` generates from the proto's own rules,
//! so a field, type or bound changed in the proto changes these messages
//! with it.

use serde_json::Value;
use serde_path_to_error::Segment;

use crate::tolerant::object_schema;

/// A problem's rule, for a value whose JSON type, or number, the field's type
/// cannot hold (`port: -1`, `port: 8080.0`, `hosts: a.example.com`).
pub const RULE_TYPE: &str = "type";
/// For a value not among the field's enum values (`provider: VAULT`).
pub const RULE_ENUM: &str = "enum";
/// For a field the schema does not declare.
pub const RULE_UNKNOWN_FIELD: &str = "unknown_field";
/// For a value of the right type the decoder still refuses (both members of
/// a oneof): the decoder's own words.
pub const RULE_DECODE: &str = "decode";

/// The schema at `root` (`spec`, `status`) then `segments`, if it declares it.
pub(crate) fn at<'a>(root: &str, segments: &[Segment]) -> Option<&'a Value> {
    let mut schema = object_schema().get("properties")?.get(root)?;
    for segment in segments {
        schema = match segment {
            Segment::Map { key } => schema.get("properties")?.get(key)?,
            Segment::Seq { .. } => schema.get("items")?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    Some(schema)
}

/// The rule and message for `found`, which does not decode as a field of
/// `schema` (`None`: the schema does not declare the field, whose parent
/// is `parent`). `decoder` is the decoder's own message, for what the
/// schema cannot explain.
pub(crate) fn describe(
    schema: Option<&Value>,
    parent: Option<&Value>,
    found: Option<&Value>,
    decoder: &str,
) -> (&'static str, String) {
    let Some(schema) = schema else {
        let known: Vec<&str> = parent
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object)
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let message = if known.is_empty() {
            "unknown field".to_owned()
        } else {
            format!("unknown field (the fields are {})", known.join(", "))
        };
        return (RULE_UNKNOWN_FIELD, message);
    };
    let got = found.map_or_else(|| "nothing".to_owned(), Value::to_string);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        return (RULE_ENUM, format!("must be one of {}, got {got}", names.join(", ")));
    }
    let expected = match schema.get("type").and_then(Value::as_str) {
        Some("integer") => {
            let bound = |key: &str| schema.get(key).and_then(Value::as_i64);
            match (bound("minimum"), bound("maximum")) {
                (Some(min), Some(max)) => format!("an integer from {min} to {max}"),
                (Some(min), None) => format!("an integer of at least {min}"),
                (None, Some(max)) => format!("an integer of at most {max}"),
                (None, None) => "an integer".to_owned(),
            }
        }
        Some("string") => "a string".to_owned(),
        Some("boolean") => "a boolean".to_owned(),
        Some("array") => "a list".to_owned(),
        Some("object") => "a mapping".to_owned(),
        _ => return (RULE_DECODE, decoder.to_owned()),
    };
    if found.is_some_and(|value| fits(schema, value)) {
        // The right type, and still refused: the decoder knows why.
        return (RULE_DECODE, decoder.to_owned());
    }
    (RULE_TYPE, format!("must be {expected}, got {got}"))
}

/// Whether `value` has the JSON type `schema` asks for (integers within its
/// bounds).
fn fits(schema: &Value, value: &Value) -> bool {
    match (schema.get("type").and_then(Value::as_str), value) {
        (Some("integer"), Value::Number(n)) => n.as_i64().is_some_and(|n| {
            schema.get("minimum").and_then(Value::as_i64).is_none_or(|min| n >= min)
                && schema.get("maximum").and_then(Value::as_i64).is_none_or(|max| n <= max)
        }),
        (Some("string"), Value::String(_))
        | (Some("boolean"), Value::Bool(_))
        | (Some("array"), Value::Array(_))
        | (Some("object"), Value::Object(_)) => true,
        _ => false,
    }
}

/// A value of `schema`'s type that decodes, to stand in for a refused one
/// inside a list (removing it would renumber the items after it, and so the
/// paths of their own problems).
pub(crate) fn stand_in(schema: Option<&Value>) -> Value {
    let Some(schema) = schema else {
        return Value::Null;
    };
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => Value::from(0),
        Some("string") => Value::from(""),
        Some("boolean") => Value::from(false),
        Some("array") => Value::Array(Vec::new()),
        _ => Value::Object(serde_json::Map::new()),
    }
}
