//! From documents to VirtualHost objects: apiVersion, kind, metadata, spec.
//!
//! A document is an object once it is identified: a mapping, this API's
//! `apiVersion` and `kind`, a `metadata.name`. Anything wrong after that is
//! a problem of the object (a [`Violation`]: a value of the wrong type, a
//! number out of its field's range, an unknown field), reported with its
//! path as the API server would reject it, beside the rules the rest of it
//! breaks: the object is invalid, not unreadable.

use std::fmt;
use std::sync::Arc;

use aether_api::config::v1::{VirtualHostSpec, VirtualHostStatus};
pub use aether_api::object::{RULE_UNSUPPORTED, VirtualHostObject};
use aether_api::validate::{Validate, Violation, violations_of};
use jiff::Timestamp;
use serde_json::Value;

use crate::tolerant::{Read, read};
use crate::{Document, Reading};

pub use crate::schema::{RULE_DECODE, RULE_ENUM, RULE_TYPE, RULE_UNKNOWN_FIELD};
pub use crate::tolerant::SET_ASIDE_MORE;

pub use aether_api::config::v1::{API_VERSION, KIND};
/// The namespace of a manifest that names none, as `kubectl apply` uses
/// without a context namespace.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The rule of a required field that is missing (`spec`), as protovalidate
/// names it.
pub const RULE_REQUIRED: &str = "required";

/// Decodes a spec as an object's `spec` (`None`: the object has none),
/// reporting every value that does not decode (see [`VirtualHostObject`]).
/// What the admission webhook reads a reviewed object with, too.
pub fn decode_spec(spec: Option<&Value>) -> (VirtualHostSpec, Vec<Violation>) {
    let (spec, problems, _) = decode_spec_reading(spec, Reading::Strict);
    (spec, problems)
}

/// [`decode_spec`], read as `reading` says; also the unknown fields set
/// aside (see [`VirtualHostObject::set_aside`]).
pub fn decode_spec_reading(spec: Option<&Value>, reading: Reading) -> (VirtualHostSpec, Vec<Violation>, Vec<String>) {
    match spec {
        Some(value) => {
            let Read {
                value,
                problems,
                set_aside,
            } = read(value, "spec", reading, |spec: &VirtualHostSpec| {
                violations_of(spec.validate()).collect()
            });
            (value, problems, set_aside)
        }
        None => (
            VirtualHostSpec::default(),
            vec![Violation::new("spec", RULE_REQUIRED, "required")],
            Vec::new(),
        ),
    }
}

/// Why a document is not a VirtualHost we can read, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The JSON path of the problem (`metadata.name`), or empty.
    pub path: String,
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The `apiVersion` and `kind` of a document that is a Kubernetes object of
/// another kind (see [`crate::OtherKinds`]): a mapping with both as
/// strings, whose kind is not `VirtualHost` and whose group (the part of
/// `apiVersion` before `/`; none for the core group's `v1`) is not this
/// API's. `None` for anything this reader must judge itself.
pub fn other_kind(document: &Value) -> Option<(&str, &str)> {
    let api_version = document.get("apiVersion")?.as_str()?;
    let kind = document.get("kind")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let ours = API_VERSION.rsplit_once('/').map_or("", |(group, _)| group);
    (kind != KIND && group != ours).then_some((api_version, kind))
}

/// What a JSON value is, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// Reads a VirtualHost from a document. It is an error (the document is
/// not an object) unless it is a mapping whose `apiVersion` and `kind`
/// are this API's and whose `metadata.name` is set
/// (`metadata.namespace` defaults to `default`, as kubectl does). The
/// rest is decoded strictly, each value that does not decode (a wrong
/// type, an unknown field, a malformed `creationTimestamp`) a
/// problem of the object ([`VirtualHostObject::problems`]).
pub fn decode(document: &Document) -> Result<VirtualHostObject, DecodeError> {
    decode_reading(document, Reading::Strict)
}

/// [`decode`], reading what a newer API version added as `reading` says
/// (see [`Reading`]).
pub fn decode_reading(document: &Document, reading: Reading) -> Result<VirtualHostObject, DecodeError> {
    let fail = |path: &str, message: String| DecodeError {
        path: path.to_owned(),
        message,
    };
    let Value::Object(object) = &document.value else {
        return Err(fail(
            "",
            format!(
                "expected a mapping (a Kubernetes object), found {}",
                kind_of(&document.value)
            ),
        ));
    };
    for (key, expected) in [("apiVersion", API_VERSION), ("kind", KIND)] {
        match object.get(key) {
            Some(Value::String(found)) if found == expected => {}
            // JSON text of what was found, so `"v1"`, `1` and `null` read apart.
            Some(found) => return Err(fail(key, format!("expected \"{expected}\", found {found}"))),
            None => return Err(fail(key, format!("required (\"{expected}\")"))),
        }
    }
    let metadata = object.get("metadata").and_then(Value::as_object);
    let meta = |key: &str| metadata.and_then(|m| m.get(key)).and_then(Value::as_str);
    let name = meta("name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| fail("metadata.name", "required".into()))?;
    let namespace = meta("namespace").filter(|n| !n.is_empty()).unwrap_or(DEFAULT_NAMESPACE);

    let mut problems = Vec::new();
    let mut problem = |path: &str, message: String| {
        problems.push(Violation::new(path, RULE_TYPE, message));
    };
    let creation_timestamp = match metadata.and_then(|m| m.get("creationTimestamp")) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => text
            .parse::<Timestamp>()
            .inspect_err(|e| {
                problem(
                    "metadata.creationTimestamp",
                    format!("must be an RFC 3339 date-time, got {:?}: {e}", text),
                );
            })
            .ok(),
        Some(other) => {
            problem(
                "metadata.creationTimestamp",
                format!("must be an RFC 3339 date-time, got {other}"),
            );
            None
        }
    };
    let generation = match metadata.and_then(|m| m.get("generation")) {
        None | Some(Value::Null) => 0,
        Some(value) => value.as_i64().filter(|g| *g >= 0).unwrap_or_else(|| {
            problem(
                "metadata.generation",
                format!("must be an integer of at least 0, got {value}"),
            );
            0
        }),
    };
    let (spec, spec_problems, mut set_aside) = decode_spec_reading(object.get("spec"), reading);
    problems.extend(spec_problems);
    let status = object.get("status").map(|value| {
        let status = read(value, "status", reading, |status: &VirtualHostStatus| {
            violations_of(status.validate()).collect()
        });
        problems.extend(status.problems);
        set_aside.extend(status.set_aside);
        status.value
    });
    Ok(VirtualHostObject {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        creation_timestamp,
        generation,
        spec: Arc::new(spec),
        status,
        problems,
        set_aside,
    })
}

#[cfg(test)]
mod tests;
