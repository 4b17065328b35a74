//! Objects from manifests: the conversion from what aether-manifests reads,
//! and [`parse_manifests`] for callers holding manifest text.

use std::fmt;
use std::path::Path;

use aether_manifests::Limits;
pub use aether_manifests::objects::DEFAULT_NAMESPACE;

use crate::input::{ReadProblem, VirtualHostObject};

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

/// The projection's view of a VirtualHost read by aether-manifests: its
/// identity, age, spec and the problems of its metadata and spec (its
/// status plays no part).
///
/// A spec field set aside as unknown (read tolerantly, from a newer API
/// version) is a problem here, of rule `unsupported`: the spec says how
/// requests are routed, and a field this build does not know can narrow a
/// match (a header a route requires) or change which route wins (an
/// order). Served without it, the object could take requests it was
/// written to refuse; left out, its status names the field, and upgrading
/// serves it. (The admission webhook, which judges hosts only, admits such
/// an object with a warning.) Unknown status fields change nothing served.
impl From<aether_manifests::objects::VirtualHostObject> for VirtualHostObject {
    fn from(object: aether_manifests::objects::VirtualHostObject) -> Self {
        let unknown_in_spec = object
            .set_aside
            .iter()
            .filter(|path| path.starts_with("spec."))
            .map(|path| ReadProblem {
                path: path.clone(),
                rule: aether_manifests::objects::RULE_UNSUPPORTED,
                message: "unknown field (from a newer API version; this build cannot tell how it changes routing)"
                    .to_owned(),
            });
        let read_problems = unknown_in_spec
            .chain(object.problems)
            .filter(|problem| problem.path != "status" && !problem.path.starts_with("status."))
            .collect();
        Self {
            namespace: object.namespace,
            name: object.name,
            creation_timestamp: object.creation_timestamp,
            spec: object.spec,
            read_problems,
        }
    }
}

/// Parses `VirtualHost` manifests (`apiVersion: config.aether.io/v1`) from
/// YAML or JSON text, with the reader (and the limits) `aetherctl` uses:
/// documents separated by `---`, `kind: List` items one by one, a missing
/// `metadata.namespace` read as [`DEFAULT_NAMESPACE`], unknown fields in
/// `spec` errors naming their path, a second copy of an object an error.
/// The first error found is returned.
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
    // The name only appears in messages, which this function does not prefix with it.
    let load = aether_manifests::load_bytes(Path::new("manifest"), text.as_bytes(), &Limits::default());
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
    Ok(load.objects.into_iter().map(|loaded| loaded.object.into()).collect())
}
