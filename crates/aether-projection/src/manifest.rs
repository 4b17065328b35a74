//! Reading objects from manifests (YAML or JSON text, several documents
//! allowed), for callers such as `aetherctl project` that start from files.

use std::fmt;

use aether_api::config::v1::VirtualHostSpec;
use jiff::Timestamp;
use serde::Deserialize;

use crate::input::VirtualHostObject;

/// A manifest document that is not a readable VirtualHost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// The document's index in the text, from 0; `None` when the text as a
    /// whole could not be read.
    pub document: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.document {
            Some(index) => write!(f, "document {index}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ManifestError {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: VirtualHostSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    creation_timestamp: Option<Timestamp>,
}

/// The namespace of a manifest that names none, as `kubectl apply` would use
/// without a context namespace.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Parses `VirtualHost` manifests (`apiVersion: config.aether.io/v1`), one
/// per YAML document (JSON is YAML too). A missing `metadata.namespace` is
/// [`DEFAULT_NAMESPACE`]. Fields outside `metadata` and `spec` (such as
/// `status`) are ignored; unknown fields inside `spec` are errors.
///
/// Only the form is checked here; the API's rules are checked by the
/// projection, which reports rule-breaking objects rather than failing.
///
/// ```
/// let objects = aether_projection::parse_manifests(
///     "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api}\n\
///      spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: svc-web}}]}\n",
/// ).unwrap();
/// assert_eq!(objects[0].key().to_string(), "default/api");
/// ```
pub fn parse_manifests(text: &str) -> Result<Vec<VirtualHostObject>, ManifestError> {
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).map_err(|err| ManifestError {
        document: None,
        message: err.to_string(),
    })?;
    documents
        .into_iter()
        .enumerate()
        .filter(|(_, document)| !document.is_null())
        .map(|(index, document)| {
            let error = |message: String| ManifestError {
                document: Some(index),
                message,
            };
            let manifest: Manifest = serde_json::from_value(document).map_err(|err| error(err.to_string()))?;
            if manifest.api_version != "config.aether.io/v1" || manifest.kind != "VirtualHost" {
                return Err(error(format!(
                    "expected apiVersion config.aether.io/v1 and kind VirtualHost, found {} {}",
                    manifest.api_version, manifest.kind
                )));
            }
            Ok(VirtualHostObject {
                namespace: manifest
                    .metadata
                    .namespace
                    .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
                name: manifest.metadata.name,
                creation_timestamp: manifest.metadata.creation_timestamp,
                spec: manifest.spec,
            })
        })
        .collect()
}
