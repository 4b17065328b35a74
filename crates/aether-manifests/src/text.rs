//! Objects from manifest text held in memory (a test's, a tool's):
//! [`parse_manifests`].

use std::fmt;
use std::path::Path;

use aether_api::object::VirtualHostObject;

use crate::Limits;
#[cfg(doc)]
use crate::objects::DEFAULT_NAMESPACE;

/// A manifest document that is not a readable VirtualHost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// The document's index in the text, from 0; `None` when the text as a
    /// whole could not be read.
    pub document: Option<usize>,
    /// What is wrong, and where in the document (`spec.routes[0].match: ...`).
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

/// Parses `VirtualHost` manifests (`apiVersion: config.aether.io/v1`) from
/// YAML or JSON text, with the reader (and the limits) `aetherctl` uses:
/// documents separated by `---`, `kind: List` items one by one, a missing
/// `metadata.namespace` read as [`DEFAULT_NAMESPACE`], unknown fields in
/// `spec` errors naming their path, a second copy of an object an error.
/// The first error found is returned.
///
/// Only the form is checked here: a value that does not decode is a
/// problem of its object ([`VirtualHostObject::problems`]), and the API's
/// rules are checked by whoever judges the objects (the projection reports
/// rule-breaking objects rather than failing).
///
/// ```
/// let objects = aether_manifests::parse_manifests(
///     "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api}\n\
///      spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: svc-web}}]}\n",
/// ).unwrap();
/// assert_eq!(objects[0].key().to_string(), "default/api");
/// ```
pub fn parse_manifests(text: &str) -> Result<Vec<VirtualHostObject>, ManifestError> {
    // The name only appears in messages, which this function does not prefix with it.
    let load = crate::load_bytes(Path::new("manifest"), text.as_bytes(), &Limits::default());
    if let Some(err) = load.errors.into_iter().next() {
        let message = match err.path {
            Some(path) => format!("{path}: {}", err.message),
            None => err.message,
        };
        return Err(ManifestError {
            document: err.document,
            message,
        });
    }
    Ok(load.objects.into_iter().map(|loaded| loaded.object).collect())
}
