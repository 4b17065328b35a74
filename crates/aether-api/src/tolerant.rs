//! Reading objects a newer writer made: what this build's schema does not
//! know is set aside and named, not fatal.
//!
//! The API grows by adding fields and enum values. An object written
//! against a newer proto (a newer CRD applied before the controller and
//! webhook are upgraded) holds fields this build's types reject
//! (`unknown field`), and enum values they cannot decode. Kubernetes
//! clients tolerate unknown fields for exactly this reason; so does this
//! module: [`spec`] walks the object along the generated schema
//! (`generated/crds/virtualhost.schema.json`, the CRD's own), removes every
//! field the schema does not have and every enum value it does not list,
//! records each as an [`Unknown`] with its Kubernetes-form path, and
//! decodes the rest with the strict types.
//!
//! What a reader does with the unknown parts is its policy: an enum value
//! it cannot act on should leave the object out (`Unsupported`), an unknown
//! field may be ignored with a note, and a linter of what a person wrote
//! reports both as errors ([`Tolerant::strict`]).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use self::schema::Node;
use crate::config::v1::{VirtualHostSpec, VirtualHostStatus};

/// A part of an object this build's schema does not know.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unknown {
    /// A field the schema does not have, at `path` (`spec.routes[0].idleTimeout`).
    Field {
        /// Where, in the Kubernetes form.
        path: String,
        /// Its name as written (`idleTimeout`): `path` is the path of the
        /// object holding it ([`Unknown::parent`]), a dot, and the name,
        /// which may itself hold dots.
        name: String,
    },
    /// An enum value the schema does not list.
    EnumValue {
        /// Where, in the Kubernetes form.
        path: String,
        /// The value as written.
        value: String,
    },
}

impl Unknown {
    /// Where it is.
    pub fn path(&self) -> &str {
        match self {
            Unknown::Field { path, .. } | Unknown::EnumValue { path, .. } => path,
        }
    }

    /// The path of the object holding an unknown field
    /// (`spec.routes[0]` of `spec.routes[0].idleTimeout`); for an enum value,
    /// its own path.
    pub fn parent(&self) -> &str {
        match self {
            Unknown::Field { path, name } => path
                .strip_suffix(name.as_str())
                .and_then(|parent| parent.strip_suffix('.'))
                .unwrap_or(path),
            Unknown::EnumValue { path, .. } => path,
        }
    }
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unknown::Field { path, .. } => write!(f, "{path}: unknown field"),
            Unknown::EnumValue { path, value } => write!(f, "{path}: unknown value {value:?}"),
        }
    }
}

/// A decoded value and what was set aside to decode it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerant<T> {
    /// The known parts, decoded.
    pub value: T,
    /// What was set aside, each object's fields in name order.
    pub unknown: Vec<Unknown>,
}

impl<T> Tolerant<T> {
    /// The value only if nothing was unknown (what a linter wants), else
    /// every unknown part.
    pub fn strict(self) -> Result<T, Vec<Unknown>> {
        if self.unknown.is_empty() {
            Ok(self.value)
        } else {
            Err(self.unknown)
        }
    }

    /// The enum values set aside: what a reader cannot act on.
    pub fn unknown_values(&self) -> impl Iterator<Item = &Unknown> {
        self.unknown
            .iter()
            .filter(|unknown| matches!(unknown, Unknown::EnumValue { .. }))
    }
}

/// `spec` (the Kubernetes form, as in a manifest), tolerantly; paths start
/// with `spec`. An error only for what is wrong in a known part (a string
/// where a number belongs).
pub fn spec(value: &Value) -> Result<Tolerant<VirtualHostSpec>, serde_json::Error> {
    decode(value, "spec")
}

/// `status`, tolerantly; paths start with `status`.
pub fn status(value: &Value) -> Result<Tolerant<VirtualHostStatus>, serde_json::Error> {
    decode(value, "status")
}

fn decode<T: DeserializeOwned>(value: &Value, property: &str) -> Result<Tolerant<T>, serde_json::Error> {
    let mut value = value.clone();
    let unknown = set_aside(&mut value, property);
    Ok(Tolerant {
        value: serde_json::from_value(value)?,
        unknown,
    })
}

/// The set-aside step alone: removes from `value` (the object's `property`,
/// `spec` or `status`, in the Kubernetes form) every field and enum value
/// the schema does not know, and names each. For a reader that decodes the
/// cleaned value its own way (`aether-manifests`, which reports each value
/// of the wrong type as a problem rather than failing); a `value` that is
/// itself an unknown enum value becomes `null`.
pub fn set_aside(value: &mut Value, property: &str) -> Vec<Unknown> {
    let schema = schema::of_property(property);
    let mut unknown = Vec::new();
    if walk(value, schema, &mut property.to_owned(), &mut unknown) == Keep::No {
        *value = Value::Null;
    }
    unknown
}

mod lists;
mod schema;
pub(crate) use self::schema::object_schema;

pub use lists::{LongList, cut_long_lists};

#[derive(Debug, PartialEq, Eq)]
enum Keep {
    Yes,
    No,
}

/// Removes from `value` what `schema` does not know, recording it; `No`
/// when `value` itself is an unknown enum value (its parent removes it).
/// `path` is where `value` is: one buffer, extended by each field or
/// index walked into and cut back after, so a known part costs no
/// allocation (the admission webhook walks every reviewed spec).
fn walk(value: &mut Value, schema: &Node, path: &mut String, unknown: &mut Vec<Unknown>) -> Keep {
    match value {
        Value::Object(fields) => {
            if let Some(properties) = &schema.properties {
                walk_fields(fields, properties, path, unknown);
            }
            Keep::Yes
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                let mut index = 0;
                let len = path.len();
                items.retain_mut(|item| {
                    use std::fmt::Write as _;
                    let _ = write!(path, "[{index}]");
                    let keep = walk(item, item_schema, path, unknown);
                    path.truncate(len);
                    index += 1;
                    keep == Keep::Yes
                });
            }
            Keep::Yes
        }
        Value::String(text) => match &schema.listed {
            Some(allowed) if !is_listed(text, allowed) => {
                unknown.push(Unknown::EnumValue {
                    path: path.clone(),
                    value: text.clone(),
                });
                Keep::No
            }
            _ => Keep::Yes,
        },
        _ => Keep::Yes,
    }
}

fn walk_fields(
    fields: &mut Map<String, Value>,
    properties: &BTreeMap<String, Node>,
    path: &mut String,
    unknown: &mut Vec<Unknown>,
) {
    let mut drop = Vec::new();
    let len = path.len();
    for (name, field) in fields.iter_mut() {
        path.push('.');
        path.push_str(name);
        match properties.get(name) {
            None => {
                unknown.push(Unknown::Field {
                    path: path.clone(),
                    name: name.clone(),
                });
                drop.push(name.clone());
            }
            Some(field_schema) => {
                if walk(field, field_schema, path, unknown) == Keep::No {
                    drop.push(name.clone());
                }
            }
        }
        path.truncate(len);
    }
    for name in drop {
        fields.remove(&name);
    }
}

/// An enum value the schema lists, short (`KUBERNETES`) or in the proto's
/// full form the types also accept (`SECRET_PROVIDER_KUBERNETES`).
fn is_listed(text: &str, allowed: &[Value]) -> bool {
    allowed.iter().filter_map(Value::as_str).any(|short| {
        text == short
            || text.strip_suffix(short).is_some_and(|prefix| {
                prefix.ends_with('_') && prefix.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
            })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn proposal() -> Value {
        json!({
            "hosts": ["api.example.com"],
            "routes": [
                {"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}},
                {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health"}}
            ],
            "tls": {"secretName": "example-tls", "provider": "KUBERNETES"}
        })
    }

    #[test]
    fn a_known_object_decodes_as_the_strict_types_do() {
        let tolerant = spec(&proposal()).unwrap();
        assert_eq!(tolerant.unknown, []);
        let strict: VirtualHostSpec = serde_json::from_value(proposal()).unwrap();
        assert_eq!(tolerant.strict().unwrap(), strict);
    }

    #[test]
    fn unknown_fields_are_set_aside_and_named_the_rest_decodes() {
        let mut newer = proposal();
        newer["mirror"] = json!("svc-shadow");
        newer["routes"][0]["idleTimeout"] = json!("15s");
        newer["routes"][1]["match"]["cookies"] = json!([{"name": "session"}]);
        newer["tls"]["minVersion"] = json!("1.3");
        let tolerant = spec(&newer).unwrap();
        let paths: Vec<&str> = tolerant.unknown.iter().map(Unknown::path).collect();
        assert_eq!(
            paths,
            [
                "spec.mirror",
                "spec.routes[0].idleTimeout",
                "spec.routes[1].match.cookies",
                "spec.tls.minVersion"
            ]
        );
        assert_eq!(tolerant.unknown_values().count(), 0);
        let strict: VirtualHostSpec = serde_json::from_value(proposal()).unwrap();
        assert_eq!(tolerant.value, strict);
    }

    #[test]
    fn an_unknown_enum_value_is_set_aside_and_named() {
        let mut newer = proposal();
        newer["tls"]["provider"] = json!("VAULT");
        let tolerant = spec(&newer).unwrap();
        assert_eq!(
            tolerant.unknown,
            [Unknown::EnumValue {
                path: "spec.tls.provider".into(),
                value: "VAULT".into()
            }]
        );
        assert_eq!(tolerant.unknown_values().count(), 1);
        assert_eq!(tolerant.value.tls.unwrap().provider, 0);
    }

    #[test]
    fn the_full_proto_enum_name_is_known() {
        let mut full = proposal();
        full["tls"]["provider"] = json!("SECRET_PROVIDER_KUBERNETES");
        assert_eq!(spec(&full).unwrap().unknown, []);
    }

    #[test]
    fn a_new_member_of_a_oneof_is_an_unknown_field() {
        let mut newer = proposal();
        newer["routes"][0]["match"] = json!({"template": "/users/{id}"});
        let tolerant = spec(&newer).unwrap();
        assert_eq!(
            tolerant.unknown,
            [Unknown::Field {
                path: "spec.routes[0].match.template".into(),
                name: "template".into()
            }]
        );
        assert_eq!(tolerant.value.routes[0].r#match.as_ref().unwrap().path, None);
    }

    #[test]
    fn a_wrong_type_in_a_known_field_is_still_an_error() {
        let mut wrong = proposal();
        wrong["routes"][0]["backend"]["port"] = json!("eighty");
        assert!(spec(&wrong).is_err());
    }

    #[test]
    fn strict_lists_every_unknown_part() {
        let mut newer = proposal();
        newer["extra"] = json!(1);
        newer["tls"]["provider"] = json!("VAULT");
        assert_eq!(spec(&newer).unwrap().strict().unwrap_err().len(), 2);
    }

    #[test]
    fn set_aside_leaves_the_known_parts_in_place() {
        let mut newer = proposal();
        newer["routes"][0]["idleTimeout"] = json!("15s");
        newer["tls"]["provider"] = json!("VAULT");
        let unknown = set_aside(&mut newer, "spec");
        assert_eq!(unknown.len(), 2);
        let mut expected = proposal();
        expected["tls"].as_object_mut().unwrap().remove("provider");
        assert_eq!(newer, expected);
    }

    #[test]
    fn an_unknown_field_knows_its_parent_even_with_dots_in_its_name() {
        let mut newer = proposal();
        newer["routes"][0]["backend"]["example.com/weight"] = json!(3);
        let tolerant = spec(&newer).unwrap();
        assert_eq!(tolerant.unknown[0].path(), "spec.routes[0].backend.example.com/weight");
        assert_eq!(tolerant.unknown[0].parent(), "spec.routes[0].backend");
    }

    #[test]
    fn status_is_read_tolerantly_too() {
        let tolerant = status(&json!({"routeCount": 2, "servedHosts": ["a.example.com"]})).unwrap();
        assert_eq!(tolerant.value.route_count, 2);
        assert_eq!(
            tolerant.unknown,
            [Unknown::Field {
                path: "status.servedHosts".into(),
                name: "servedHosts".into()
            }]
        );
    }
}
