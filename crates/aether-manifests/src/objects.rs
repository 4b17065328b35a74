//! From documents to VirtualHost objects: apiVersion, kind, metadata, spec.
//!
//! A document is an object once it is identified: a mapping, this API's
//! `apiVersion` and `kind`, a `metadata.name`. Anything wrong after that is
//! a [`Problem`] of the object (a value of the wrong type, a number out of
//! its field's range, an unknown field), reported with its path as the API
//! server would reject it, beside the rules the rest of it breaks: the
//! object is invalid, not unreadable.

use std::fmt;
use std::sync::Arc;

use aether_api::ObjectKey;
use aether_api::config::v1::{VirtualHostSpec, VirtualHostStatus};
use aether_api::validate::{Validate, Violation, Violations};
use jiff::Timestamp;
use serde_json::Value;

use crate::tolerant::{Read, read};
use crate::{Document, Reading};

pub use crate::schema::{RULE_DECODE, RULE_ENUM, RULE_TYPE, RULE_UNKNOWN_FIELD, RULE_UNSUPPORTED};
pub use crate::tolerant::SET_ASIDE_MORE;

pub use aether_api::config::v1::{API_VERSION, KIND};
/// The namespace of a manifest that names none, as `kubectl apply` uses
/// without a context namespace.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The rule of a required field that is missing (`spec`), as protovalidate
/// names it.
pub const RULE_REQUIRED: &str = "required";

/// A VirtualHost read from a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualHostObject {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, when the manifest has one (as
    /// `kubectl get -o yaml` writes it). It decides who wins a contested
    /// host; a malformed one is a problem, and `None` here.
    pub creation_timestamp: Option<Timestamp>,
    /// `metadata.generation`, as the API server numbers spec changes; 0 when
    /// absent (as in hand-written manifests).
    pub generation: i64,
    /// The spec; when [`VirtualHostObject::problems`] has any under
    /// `spec`, only what decoded (each refused value replaced by a default).
    /// Shared, so that keeping what was read and handing it on cost no copy.
    pub spec: Arc<VirtualHostSpec>,
    /// The status, when the manifest carries one (as `kubectl get -o yaml` writes it).
    pub status: Option<VirtualHostStatus>,
    /// What did not decode, in document order: the object is invalid when
    /// there is any. See [`Problem`].
    pub problems: Vec<Problem>,
    /// The unknown fields set aside when read [`Reading::Tolerant`] (from a
    /// newer API version), by path (`spec.routes[0].idleTimeout`): dropped
    /// from `spec` and `status`, named here for a reader to log. Always
    /// empty when read strictly, where each is a problem.
    pub set_aside: Vec<String>,
}

/// A value of an identified object that does not decode: the violation the
/// API server's schema check reports for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where, in the Kubernetes form: `spec.routes[0].backend.port`.
    pub path: String,
    /// [`RULE_TYPE`], [`RULE_ENUM`], [`RULE_UNKNOWN_FIELD`],
    /// [`RULE_REQUIRED`], [`RULE_DECODE`] or [`RULE_UNSUPPORTED`]; or, from
    /// [`VirtualHostObject::violations`], a protovalidate rule id.
    pub rule: &'static str,
    /// What was expected and what was found: `must be an integer from 0 to
    /// 65535, got -1`.
    pub message: String,
}

/// `PATH: MESSAGE [RULE]`, as a validator violation reads.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.path, self.message, self.rule)
    }
}

/// The rule of a list above its schema's `maxItems`, found before decoding
/// and cut to them (as protovalidate names the rule). The items kept are
/// read and judged as ever, so the violations in them are still reported.
pub const RULE_MAX_ITEMS: &str = "repeated.max_items";

/// The rule of the one problem that stands for those left out of a list
/// capped at [`MAX_PROBLEMS`] (see [`capped`]): its message says how many
/// (`and 1199900 more`), and its path is empty.
pub const RULE_MORE: &str = "more";

/// Most problems listed per object; the rest are counted in one
/// [`RULE_MORE`] problem. (The validator's violations are bounded by the
/// schema's list bounds, to which a reading cuts every list first.) So an object with a million
/// broken items costs 100 paths in memory and about 10 KiB of message,
/// not 2.4 million paths and 170 MiB.
pub const MAX_PROBLEMS: usize = 100;

/// How many problems a [`RULE_MORE`] problem stands for; 0 for any other.
pub fn more_count(problem: &Problem) -> usize {
    if problem.rule != RULE_MORE {
        return 0;
    }
    problem
        .message
        .strip_prefix("and ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The [`RULE_MORE`] problem standing for `count` problems left out.
fn more(count: usize) -> Problem {
    Problem {
        path: String::new(),
        rule: RULE_MORE,
        message: format!("and {count} more"),
    }
}

/// `problems`, the first [`MAX_PROBLEMS`] of them listed and the rest
/// (with any already counted in a [`RULE_MORE`] problem) counted in one
/// [`RULE_MORE`] problem at the end.
pub fn capped(problems: Vec<Problem>) -> Vec<Problem> {
    let mut more_than_listed = 0;
    let mut listed = Vec::with_capacity(problems.len().min(MAX_PROBLEMS + 1));
    for problem in problems {
        if problem.rule == RULE_MORE {
            more_than_listed += more_count(&problem);
        } else if listed.len() < MAX_PROBLEMS {
            listed.push(problem);
        } else {
            more_than_listed += 1;
        }
    }
    if more_than_listed > 0 {
        listed.push(more(more_than_listed));
    }
    listed
}

/// Every problem of some objects, as the validator words a list of
/// violations (`2 validation errors:` then one per line; a [`RULE_MORE`]
/// problem as `and N more`, counted in the total).
pub fn describe_all(problems: &[Problem]) -> String {
    let total: usize = problems
        .iter()
        .map(|p| more_count(p).max(usize::from(p.rule != RULE_MORE)))
        .sum();
    let mut out = match total {
        1 => "1 validation error:".to_owned(),
        n => format!("{n} validation errors:"),
    };
    for problem in problems {
        if problem.rule == RULE_MORE {
            out.push_str(&format!("\n  - {}", problem.message));
        } else {
            out.push_str(&format!("\n  - {problem}"));
        }
    }
    out
}

/// `problems`, then the validator's `violations` of the same value, except
/// those on a value with a problem, under it, or around it: a refused
/// value was left at its default, so a rule that requires, counts or
/// compares it would speak of the gap, not of the manifest. Capped (see
/// [`capped`]): the problems are first, so each violation is compared
/// with at most 100 of them (the violations are bounded by the schema's
/// list bounds, to which the reading cut the lists).
pub fn with_violations(problems: Vec<Problem>, violations: impl IntoIterator<Item = Violation>) -> Vec<Problem> {
    let mut problems = capped(problems);
    // `a` is `b`, or a field or item of it.
    let within = |a: &str, b: &str| {
        a.strip_prefix(b)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    let kept: Vec<Problem> = violations
        .into_iter()
        .filter(|v| {
            !problems
                .iter()
                // A list cut to its `maxItems` is no gap: its items are read.
                .any(|p| {
                    p.rule != RULE_MORE
                        && p.rule != RULE_MAX_ITEMS
                        && (within(&v.field_path, &p.path) || within(&p.path, &v.field_path))
                })
        })
        .map(|v| Problem {
            path: v.field_path,
            rule: v.rule_id,
            message: v.message.into_owned(),
        })
        .collect();
    problems.extend(kept);
    capped(problems)
}

/// The violations `validate` found, if any, one by one.
pub fn violations_of(found: Result<(), Violations>) -> impl Iterator<Item = Violation> {
    found.err().into_iter().flatten()
}

/// Decodes a spec as an object's `spec` (`None`: the object has none),
/// reporting every value that does not decode (see [`VirtualHostObject`]).
/// What the admission webhook reads a reviewed object with, too.
pub fn decode_spec(spec: Option<&Value>) -> (VirtualHostSpec, Vec<Problem>) {
    let (spec, problems, _) = decode_spec_reading(spec, Reading::Strict);
    (spec, problems)
}

/// [`decode_spec`], read as `reading` says; also the unknown fields set
/// aside (see [`VirtualHostObject::set_aside`]).
pub fn decode_spec_reading(spec: Option<&Value>, reading: Reading) -> (VirtualHostSpec, Vec<Problem>, Vec<String>) {
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
            vec![Problem {
                path: "spec".into(),
                rule: RULE_REQUIRED,
                message: "required".into(),
            }],
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

impl VirtualHostObject {
    /// Reads a VirtualHost from a document. It is an error (the document is
    /// not an object) unless it is a mapping whose `apiVersion` and `kind`
    /// are this API's and whose `metadata.name` is set
    /// (`metadata.namespace` defaults to `default`, as kubectl does). The
    /// rest is decoded strictly, each value that does not decode (a wrong
    /// type, an unknown field, a malformed `creationTimestamp`) a
    /// [`Problem`] of the object.
    pub fn decode(document: &Document) -> Result<Self, DecodeError> {
        Self::decode_reading(document, Reading::Strict)
    }

    /// [`VirtualHostObject::decode`], reading what a newer API version
    /// added as `reading` says (see [`Reading`]).
    pub fn decode_reading(document: &Document, reading: Reading) -> Result<Self, DecodeError> {
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
            problems.push(Problem {
                path: path.into(),
                rule: RULE_TYPE,
                message,
            });
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
        Ok(Self {
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

    /// The object's identity; displays as `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }

    /// Everything wrong with the object as written: its metadata names
    /// ([`crate::names`]), its problems, then the rules its spec and status
    /// break (see [`with_violations`]). Empty when it is valid.
    pub fn violations(&self) -> Vec<Problem> {
        let status = self.status.as_ref().map(Validate::validate).unwrap_or(Ok(()));
        let mut problems = crate::names::name_problems(&self.namespace, &self.name);
        problems.extend(with_violations(
            self.problems.clone(),
            violations_of(self.spec.validate()).chain(violations_of(status)),
        ));
        problems
    }
}

#[cfg(test)]
mod tests;
