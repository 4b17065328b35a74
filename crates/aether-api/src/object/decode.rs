//! Decoding a spec (or status) that may hold values of the wrong type: every
//! such value found, as a [`Violation`] the API server would report, and the
//! rest decoded.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use super::schema;
use crate::validate::Violation;

/// At most this many problems are found in one value: each costs a decode
/// of it, and an object with more is invalid all the same.
const MAX_DECODED_PROBLEMS: usize = 32;

/// Decodes `value` (the object's `root`: `spec`, `status`; taken, not
/// copied) strictly. Each
/// value the decoder refuses becomes a problem at its path, described from
/// the CRD's schema (the type and range expected, the enum's values, the
/// fields known), and is taken out (see [`take_out`]) before decoding
/// again, so that every problem is found, not only the first. Returns what
/// decoded, and the problems, in the order found (a mapping's fields in
/// name order).
pub(crate) fn decode_owned_reporting<T: DeserializeOwned + Default>(
    mut value: Value,
    root: &str,
) -> (T, Vec<Violation>) {
    // Most values decode: the plain decoder first, the path-tracking one
    // (several times slower) only to find where a refused value is. Both
    // run the same `Deserialize`, so they accept and give the same.
    if let Ok(decoded) = T::deserialize(&value) {
        return (decoded, Vec::new());
    }
    let mut problems: Vec<Violation> = Vec::new();
    loop {
        let error = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(decoded) => return (decoded, problems),
            Err(error) => error,
        };
        let mut segments: Vec<Segment> = error.path().iter().cloned().collect();
        let decoder = error.into_inner().to_string();
        // A place the decoder could not name (inside an untagged or
        // flattened value): the problem is at the nearest place it could
        // name, in its own words.
        let unnamed = segments
            .iter()
            .position(|s| matches!(s, Segment::Enum { .. } | Segment::Unknown));
        if let Some(unnamed) = unnamed {
            segments.truncate(unnamed);
        }
        let path = path_of(root, &segments);
        let schema = schema::at(root, &segments);
        let (rule, message) = if unnamed.is_some() {
            (schema::RULE_DECODE, decoder)
        } else {
            let parent = segments.split_last().and_then(|(_, parent)| schema::at(root, parent));
            schema::describe(schema, parent, find(&value, &segments), &decoder)
        };
        // The same place again: taking it out did not help. Stop rather
        // than loop; what is reported still makes the object invalid.
        let repeated = problems.last().is_some_and(|last| last.field_path == path);
        problems.push(Violation::new(path, rule, message));
        if repeated || problems.len() >= MAX_DECODED_PROBLEMS || !take_out(&mut value, &segments, schema) {
            return (T::default(), problems);
        }
    }
}

/// `root`, then `.key` and `[index]` for each segment: the Kubernetes-form
/// path the validator's violations use too (`spec.routes[0].backend.port`).
fn path_of(root: &str, segments: &[Segment]) -> String {
    let mut path = root.to_owned();
    for segment in segments {
        match segment {
            Segment::Map { key } => {
                path.push('.');
                path.push_str(key);
            }
            Segment::Seq { index } => path.push_str(&format!("[{index}]")),
            // Cut off before it is called (see `decode_owned_reporting`).
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    path
}

fn find<'a>(value: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    segments.iter().try_fold(value, |value, segment| match segment {
        Segment::Map { key } => value.get(key),
        Segment::Seq { index } => value.get(index),
        Segment::Enum { .. } | Segment::Unknown => None,
    })
}

fn find_mut<'a>(value: &'a mut Value, segments: &[Segment]) -> Option<&'a mut Value> {
    segments.iter().try_fold(value, |value, segment| match segment {
        Segment::Map { key } => value.get_mut(key),
        Segment::Seq { index } => value.get_mut(index),
        Segment::Enum { .. } | Segment::Unknown => None,
    })
}

/// Takes the refused value at `segments` out of `value`: it is replaced by a
/// stand-in of the schema's type, which decodes (so that a field a oneof or
/// a rule requires is still there, and a list's later items keep their
/// index); a field the schema does not declare is removed; the whole value
/// becomes an empty mapping. False when there is nothing to take out.
fn take_out(value: &mut Value, segments: &[Segment], schema: Option<&Value>) -> bool {
    let Some((last, parent)) = segments.split_last() else {
        *value = Value::Object(serde_json::Map::new());
        return true;
    };
    let Some(parent) = find_mut(value, parent) else {
        return false;
    };
    match (last, parent, schema) {
        (Segment::Map { key }, Value::Object(members), None) => members.remove(key).is_some(),
        (Segment::Map { key }, Value::Object(members), Some(_)) if members.contains_key(key) => {
            members.insert(key.clone(), schema::stand_in(schema));
            true
        }
        (Segment::Seq { index }, Value::Array(items), _) if *index < items.len() => {
            items[*index] = schema::stand_in(schema);
            true
        }
        _ => false,
    }
}
