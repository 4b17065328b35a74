//! From documents to VirtualHost objects: apiVersion, kind, metadata, spec.

use std::fmt;

use aether_api::config::v1::VirtualHostSpec;
use serde_json::Value;

use crate::manifests::Document;

pub const API_VERSION: &str = "config.aether.io/v1";
pub const KIND: &str = "VirtualHost";

/// A VirtualHost read from a manifest.
#[derive(Debug, Clone)]
pub struct VirtualHostObject {
    pub namespace: String,
    pub name: String,
    /// `metadata.creationTimestamp`, when the manifest has one (RFC 3339).
    pub creation_timestamp: Option<String>,
    pub spec: VirtualHostSpec,
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
        let namespace = meta("namespace").filter(|n| !n.is_empty()).unwrap_or("default");
        let spec_value = object.get("spec").ok_or_else(|| fail("spec", "required".into()))?;
        let spec = serde_path_to_error::deserialize::<_, VirtualHostSpec>(spec_value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." {
                "spec".to_owned()
            } else {
                format!("spec.{path}")
            };
            fail(&path, e.into_inner().to_string())
        })?;
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            creation_timestamp: meta("creationTimestamp").map(str::to_owned),
            spec,
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}
