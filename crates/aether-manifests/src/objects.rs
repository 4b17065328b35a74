//! From documents to VirtualHost objects: apiVersion, kind, metadata, spec.

use std::fmt;

use aether_api::ObjectKey;
use aether_api::config::v1::{VirtualHostSpec, VirtualHostStatus};
use jiff::Timestamp;
use serde_json::Value;

use crate::Document;

pub const API_VERSION: &str = "config.aether.io/v1";
pub const KIND: &str = "VirtualHost";
/// The namespace of a manifest that names none, as `kubectl apply` uses
/// without a context namespace.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A VirtualHost read from a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualHostObject {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, when the manifest has one (as
    /// `kubectl get -o yaml` writes it). It decides who wins a contested
    /// host, so a malformed one is an error, as it is for the API server.
    pub creation_timestamp: Option<Timestamp>,
    /// `metadata.generation`, as the API server numbers spec changes; 0 when
    /// absent (as in hand-written manifests).
    pub generation: i64,
    pub spec: VirtualHostSpec,
    /// The status, when the manifest carries one (as `kubectl get -o yaml` writes it).
    pub status: Option<VirtualHostStatus>,
}

/// Decodes `value` strictly, naming the failing path under `root`
/// (`spec.routes[0].match: ...`; `root` itself when the value as a whole is
/// wrong). Also what the admission webhook decodes a reviewed spec with.
pub fn decode_at<T: serde::de::DeserializeOwned>(value: &Value, root: &str) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            root.to_owned()
        } else {
            format!("{root}.{path}")
        };
        DecodeError {
            path,
            message: e.into_inner().to_string(),
        }
    })
}

/// Why a document is not a VirtualHost we can read, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The JSON path of the problem (`spec.routes[0].match`), or empty.
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
    /// Reads a VirtualHost from a document: `apiVersion` and `kind` must be
    /// this API's, `metadata.name` set (`metadata.namespace` defaults to
    /// `default`, as kubectl does), and `spec` must decode strictly (unknown
    /// fields and wrong types are errors naming their path).
    pub fn decode(document: &Document) -> Result<Self, DecodeError> {
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
        let creation_timestamp = match metadata.and_then(|m| m.get("creationTimestamp")) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(
                text.parse::<Timestamp>()
                    .map_err(|e| fail("metadata.creationTimestamp", format!("not an RFC 3339 timestamp: {e}")))?,
            ),
            Some(other) => {
                return Err(fail(
                    "metadata.creationTimestamp",
                    format!("expected an RFC 3339 timestamp, found {}", kind_of(other)),
                ));
            }
        };
        let generation = match metadata.and_then(|m| m.get("generation")) {
            None | Some(Value::Null) => 0,
            Some(value) => value.as_i64().filter(|g| *g >= 0).ok_or_else(|| {
                fail(
                    "metadata.generation",
                    format!("expected a non-negative integer, found {value}"),
                )
            })?,
        };
        let spec_value = object.get("spec").ok_or_else(|| fail("spec", "required".into()))?;
        let spec = decode_at::<VirtualHostSpec>(spec_value, "spec")?;
        let status = object
            .get("status")
            .map(|s| decode_at::<VirtualHostStatus>(s, "status"))
            .transpose()?;
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            creation_timestamp,
            generation,
            spec,
            status,
        })
    }

    /// The object's identity; displays as `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(value: Value) -> Result<VirtualHostObject, DecodeError> {
        VirtualHostObject::decode(&Document {
            file: "x.yaml".into(),
            index: 0,
            value,
        })
    }

    fn host(spec: Value) -> Value {
        json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": "api", "namespace": "edge", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": spec,
        })
    }

    fn spec() -> Value {
        json!({"hosts": ["api.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "web"}}]})
    }

    fn error(value: Value) -> (String, String) {
        let e = decode(value).unwrap_err();
        (e.path, e.message)
    }

    #[test]
    fn a_virtual_host_decodes_with_its_metadata() {
        let object = decode(host(spec())).unwrap();
        assert_eq!(object.key().to_string(), "edge/api");
        assert_eq!(object.creation_timestamp, Some("2025-01-01T00:00:00Z".parse().unwrap()));
        assert_eq!(object.spec.hosts, ["api.example.com"]);
        assert_eq!(object.spec.routes[0].backend.as_ref().unwrap().service, "web");
    }

    #[test]
    fn a_malformed_creation_timestamp_is_an_error_naming_it() {
        for (timestamp, expected) in [
            (json!("yesterday"), "not an RFC 3339 timestamp"),
            (json!("2025-13-01T00:00:00Z"), "not an RFC 3339 timestamp"),
            (json!(1735689600), "expected an RFC 3339 timestamp, found a number"),
        ] {
            let mut value = host(spec());
            value["metadata"]["creationTimestamp"] = timestamp;
            let (path, message) = error(value);
            assert_eq!(path, "metadata.creationTimestamp");
            assert!(message.starts_with(expected), "{message}");
        }
        let mut value = host(spec());
        value["metadata"]["creationTimestamp"] = Value::Null;
        assert_eq!(decode(value).unwrap().creation_timestamp, None);
    }

    #[test]
    fn generation_is_read_and_must_be_a_non_negative_integer() {
        let mut value = host(spec());
        assert_eq!(decode(value.clone()).unwrap().generation, 0);
        value["metadata"]["generation"] = json!(7);
        assert_eq!(decode(value.clone()).unwrap().generation, 7);
        for bad in [json!(-1), json!("7"), json!(1.5)] {
            value["metadata"]["generation"] = bad.clone();
            let (path, message) = error(value.clone());
            assert_eq!(path, "metadata.generation");
            assert_eq!(message, format!("expected a non-negative integer, found {bad}"));
        }
    }

    #[test]
    fn the_namespace_defaults_to_default() {
        let mut value = host(spec());
        value["metadata"] = json!({"name": "api"});
        assert_eq!(decode(value).unwrap().key().to_string(), "default/api");
    }

    #[test]
    fn a_document_that_is_not_a_mapping_says_what_it_is() {
        for (value, found) in [
            (json!("text"), "a string"),
            (json!([1]), "a sequence"),
            (json!(3), "a number"),
        ] {
            assert_eq!(
                error(value),
                (
                    String::new(),
                    format!("expected a mapping (a Kubernetes object), found {found}")
                )
            );
        }
    }

    #[test]
    fn api_version_and_kind_must_be_this_apis() {
        let mut value = host(spec());
        value["apiVersion"] = json!("v1");
        assert_eq!(
            error(value.clone()),
            (
                "apiVersion".into(),
                r#"expected "config.aether.io/v1", found "v1""#.into()
            )
        );
        value["apiVersion"] = json!(API_VERSION);
        value["kind"] = json!("Gateway");
        assert_eq!(
            error(value.clone()),
            ("kind".into(), r#"expected "VirtualHost", found "Gateway""#.into())
        );
        value.as_object_mut().unwrap().remove("kind");
        assert_eq!(error(value), ("kind".into(), r#"required ("VirtualHost")"#.into()));
    }

    #[test]
    fn name_and_spec_are_required() {
        let mut value = host(spec());
        value["metadata"] = json!({"namespace": "edge", "name": ""});
        assert_eq!(error(value), ("metadata.name".into(), "required".into()));
        let mut value = host(spec());
        value.as_object_mut().unwrap().remove("spec");
        assert_eq!(error(value), ("spec".into(), "required".into()));
    }

    #[test]
    fn spec_errors_name_their_path() {
        let mut bad = spec();
        bad["routes"][0]["backend"]["colour"] = json!("blue");
        let (path, message) = error(host(bad));
        assert_eq!(path, "spec.routes[0].backend.colour");
        assert!(message.starts_with("unknown field `colour`"), "{message}");

        let mut bad = spec();
        bad["routes"][0]["backend"]["service"] = json!(80);
        let (path, message) = error(host(bad));
        assert_eq!(path, "spec.routes[0].backend.service");
        assert!(message.starts_with("invalid type: integer `80`"), "{message}");

        let (path, message) = error(host(json!("hosts")));
        assert_eq!(path, "spec");
        assert!(message.starts_with("invalid type: string"), "{message}");
    }
}
