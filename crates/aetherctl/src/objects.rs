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

impl VirtualHostObject {
    pub fn decode(document: &Document) -> Result<Self, DecodeError> {
        let fail = |path: &str, message: String| DecodeError {
            path: path.to_owned(),
            message,
        };
        let Value::Object(object) = &document.value else {
            return Err(fail("", "expected a mapping (a Kubernetes object)".into()));
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
        if text("apiVersion") != API_VERSION || text("kind") != KIND {
            return Err(fail(
                "",
                format!(
                    "expected apiVersion {API_VERSION} and kind {KIND}, found apiVersion {:?} and kind {:?}",
                    object.get("apiVersion").unwrap_or(&Value::Null),
                    object.get("kind").unwrap_or(&Value::Null)
                ),
            ));
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
