//! One VirtualHost object as its readers and consumers hold it: decoded
//! here from its JSON form ([`VirtualHostObject::from_value`]), by the file
//! reader (`aether-manifests`), the controller and the webhook alike, and
//! judged here ([`VirtualHostObject::problems`]) by the projection, the
//! webhook and the linter. The Kubernetes object's other parts (labels,
//! annotations, ...) play no part in any of them.
//!
//! A value is an object once it is identified: a mapping, this API's
//! `apiVersion` and `kind`, a `metadata.name`. Anything wrong after that is
//! a problem of the object (a [`Violation`]: a value of the wrong type, a
//! number out of its field's range, an unknown field), reported with its
//! path as the API server would reject it, beside the rules the rest of it
//! breaks: the object is invalid, not unreadable.

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ObjectKey;
use crate::config::v1::{API_VERSION, KIND, VirtualHostSpec, VirtualHostStatus};
use crate::validate::{Validate, Violation, name_problems, violations_of, with_violations};

mod decode;
mod read;
mod schema;

pub use read::SET_ASIDE_MORE;
pub use schema::{RULE_DECODE, RULE_ENUM, RULE_TYPE, RULE_UNKNOWN_FIELD};

/// The rule of a value from a newer API version that this build cannot act
/// on (`tls.provider: VAULT`, or a spec field set aside as unknown): the
/// object is left out, not served without it.
pub const RULE_UNSUPPORTED: &str = "unsupported";
/// The rule of a required field that is missing (`spec`), as protovalidate
/// names it.
pub const RULE_REQUIRED: &str = "required";
/// The namespace of an object that names none, as `kubectl apply` uses
/// without a context namespace.
pub const DEFAULT_NAMESPACE: &str = "default";

/// How an object's unknown parts (written against a newer API version) are
/// read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reading {
    /// As a linter of what a person wrote (`kubectl --validate=strict`):
    /// an unknown field is a problem ([`RULE_UNKNOWN_FIELD`]), an unknown
    /// enum value too ([`RULE_ENUM`]).
    #[default]
    Strict,
    /// As a reader of what a newer writer made (the controller, the
    /// webhook): an unknown field is set aside, dropped from the object and
    /// named in [`VirtualHostObject::set_aside`], unless the object holding
    /// it misses a field or oneof this build requires of it (a new member
    /// of a required oneof, say); that, and an unknown enum value, is a
    /// problem [`RULE_UNSUPPORTED`] naming it. The rule, exactly, is in the
    /// `read` module's documentation.
    Tolerant,
}

/// What a judge of objects reads of one: the parts
/// [`VirtualHostObject::problems`] judges, and what it makes of a spec field
/// set aside (read [`Reading::Tolerant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// All of it, as a linter of what a person wrote judges it (`aetherctl
    /// validate`): the metadata names, the spec and the status. A field set
    /// aside is no problem (a strict reading sets none aside).
    Whole,
    /// What routes requests, as the admission webhook admits it: the names
    /// and the spec. A spec field set aside is no problem: the object is
    /// admitted and the field named in a warning, since denying every such
    /// object would block each use of a CRD newer than the webhook.
    Admitted,
    /// What routes requests, as the edge serves it: the names and the spec,
    /// each spec field set aside a problem ([`RULE_UNSUPPORTED`]). A field
    /// this build does not know can narrow a match (a header a route
    /// requires) or change which route wins (an order): served without it,
    /// the object could take requests it was written to refuse; left out,
    /// its status names the field, and upgrading serves it. The status, and
    /// what did not read in it, change nothing served.
    Served,
}

/// One VirtualHost object: identity, age, spec and status, with what did
/// not read in it.
///
/// Its JSON form (what tests and tools write objects in) holds the
/// identity, `creationTimestamp`, `generation`, `spec` and `status`; what
/// did not read is no part of it.
///
/// ```
/// use aether_api::object::{Judged, Reading, VirtualHostObject};
///
/// let object = VirtualHostObject::from_value(serde_json::json!({
///     "apiVersion": "config.aether.io/v1",
///     "kind": "VirtualHost",
///     "metadata": {"name": "api", "creationTimestamp": "2026-01-02T03:04:05Z"},
///     "spec": {
///         "hosts": ["api.example.com"],
///         "routes": [{"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": -1}}]
///     }
/// }), Reading::Strict).unwrap();
/// assert_eq!(object.key().to_string(), "default/api");
/// assert_eq!(
///     object.problems(Judged::Whole)[0].to_string(),
///     "spec.routes[0].backend.port: must be an integer from 0 to 65535, got -1 [type]"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VirtualHostObject {
    /// `metadata.namespace`: a DNS-1123 label (see [`name_problems`]).
    pub namespace: String,
    /// `metadata.name`: a DNS-1123 subdomain.
    pub name: String,
    /// `metadata.creationTimestamp`: the oldest object wins a contested
    /// host. `None` when absent (not yet stored by an API server, as in
    /// local files) or malformed (then a problem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Timestamp>,
    /// `metadata.generation`, as the API server numbers spec changes; 0 when
    /// absent (as in hand-written manifests). What a status observed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: i64,
    /// The spec; when [`VirtualHostObject::read_problems`] has any under
    /// `spec`, only what decoded (each refused value replaced by a default).
    /// Shared: a reader that keeps what it read, the projector and their
    /// clones all hold the one copy.
    pub spec: Arc<VirtualHostSpec>,
    /// The status, when the object carries one (as `kubectl get -o yaml`
    /// writes it). The projection ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<VirtualHostStatus>,
    /// What did not decode, in document order (a value of the wrong type, an
    /// unknown field read strictly, a value this build cannot act on): the
    /// object is invalid when there is any. Always empty for objects an API
    /// server stored with this build's schema. Not part of the JSON form;
    /// [`VirtualHostObject::problems`] lists them with the rules broken.
    #[serde(skip)]
    pub read_problems: Vec<Violation>,
    /// The unknown fields set aside when read tolerantly (from a newer API
    /// version), by path (`spec.routes[0].idleTimeout`): dropped from `spec`
    /// and `status`, named here for a reader to log. Not part of the JSON
    /// form.
    #[serde(skip)]
    pub set_aside: Vec<String>,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Why a value is not a VirtualHost object, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The JSON path of the problem (`metadata.name`), or empty.
    pub path: String,
    /// What is wrong there.
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

impl std::error::Error for DecodeError {}

impl VirtualHostObject {
    /// The object's identity; displays as `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }

    /// Decodes a VirtualHost from its Kubernetes JSON form (a manifest's
    /// document, a stored object), taking `value` rather than copying it.
    /// It is an error (the value is not an object) unless it is a mapping
    /// whose `apiVersion` and `kind` are this API's and whose
    /// `metadata.name` is set (`metadata.namespace` defaults to
    /// [`DEFAULT_NAMESPACE`], as kubectl does). The rest is decoded as
    /// `reading` says, each value that does not decode (a wrong type, an
    /// unknown field read strictly, a malformed `creationTimestamp`) a
    /// problem of the object ([`VirtualHostObject::read_problems`]).
    pub fn from_value(value: Value, reading: Reading) -> Result<Self, DecodeError> {
        let fail = |path: &str, message: String| DecodeError {
            path: path.to_owned(),
            message,
        };
        let Value::Object(mut object) = value else {
            return Err(fail(
                "",
                format!("expected a mapping (a Kubernetes object), found {}", kind_of(&value)),
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
            .ok_or_else(|| fail("metadata.name", "required".into()))?
            .to_owned();
        let namespace = meta("namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE)
            .to_owned();

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
        let (spec, mut set_aside) = match object.remove("spec") {
            Some(value) => {
                let spec = read::read(value, "spec", reading, |spec: &VirtualHostSpec| {
                    violations_of(spec.validate()).collect()
                });
                problems.extend(spec.problems);
                (spec.value, spec.set_aside)
            }
            None => {
                problems.push(Violation::new("spec", RULE_REQUIRED, "required"));
                (VirtualHostSpec::default(), Vec::new())
            }
        };
        let status = object.remove("status").map(|value| {
            let status = read::read(value, "status", reading, |status: &VirtualHostStatus| {
                violations_of(status.validate()).collect()
            });
            problems.extend(status.problems);
            set_aside.extend(status.set_aside);
            status.value
        });
        Ok(Self {
            namespace,
            name,
            creation_timestamp,
            generation,
            spec: Arc::new(spec),
            status,
            read_problems: problems,
            set_aside,
        })
    }

    /// Everything wrong with the parts of the object `judged` names: its
    /// metadata names ([`name_problems`]) first, then what did not read
    /// ([`VirtualHostObject::read_problems`]; for [`Judged::Served`], each
    /// spec field set aside before them), then the rules the rest breaks,
    /// except those about a value that did not read (see
    /// [`with_violations`]). Empty when those parts are valid. The one list
    /// of an object's problems: the linter, the webhook and the edge differ
    /// only in what `judged` says.
    pub fn problems(&self, judged: Judged) -> Vec<Violation> {
        let spec_only = judged != Judged::Whole;
        let unknown_in_spec = self
            .set_aside
            .iter()
            .filter(|path| judged == Judged::Served && path.starts_with("spec."))
            .map(|path| {
                Violation::new(
                    path.clone(),
                    RULE_UNSUPPORTED,
                    "unknown field (from a newer API version; this build cannot tell how it changes routing)",
                )
            });
        let read = unknown_in_spec
            .chain(self.read_problems.iter().cloned())
            .filter(|problem| !(spec_only && in_status(&problem.field_path)))
            .collect();
        let status = match (&self.status, spec_only) {
            (Some(status), false) => status.validate(),
            _ => Ok(()),
        };
        let mut problems = name_problems(&self.namespace, &self.name);
        problems.extend(with_violations(
            read,
            violations_of(self.spec.validate()).chain(violations_of(status)),
        ));
        problems
    }
}

/// Whether `path` is the status or in it.
fn in_status(path: &str) -> bool {
    path == "status" || path.starts_with("status.")
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

#[cfg(test)]
mod tests;
