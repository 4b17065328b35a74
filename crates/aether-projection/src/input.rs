//! The input: VirtualHost objects as the projection sees them.

use std::sync::Arc;

use aether_api::ObjectKey;
use aether_api::config::v1::VirtualHostSpec;
pub use aether_manifests::objects::Problem as ReadProblem;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// One VirtualHost object: its identity, its age and its spec. Everything
/// else in the Kubernetes object (labels, status, ...) plays no part in the
/// projection.
///
/// ```
/// use aether_projection::VirtualHostObject;
///
/// let object: VirtualHostObject = serde_json::from_value(serde_json::json!({
///     "namespace": "default",
///     "name": "api",
///     "creationTimestamp": "2026-01-02T03:04:05Z",
///     "spec": {
///         "hosts": ["api.example.com"],
///         "routes": [{"match": {"prefix": "/"}, "backend": {"service": "svc-web"}}]
///     }
/// })).unwrap();
/// assert_eq!(object.key().to_string(), "default/api");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VirtualHostObject {
    /// `metadata.namespace`: a DNS-1123 label.
    pub namespace: String,
    /// `metadata.name`: a DNS-1123 subdomain.
    pub name: String,
    /// `metadata.creationTimestamp`. The oldest object wins a contested host;
    /// objects without one (not yet stored by the API server, as in local
    /// files) rank after every object that has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Timestamp>,
    /// The VirtualHost's spec, shared: a reader that keeps what it read
    /// (the local mode's last good files), the set of objects fed to the
    /// projector and their clones all hold the one copy.
    pub spec: Arc<VirtualHostSpec>,
    /// Values of the object as written that did not decode (a manifest's
    /// `port: -1`), as `aether-manifests` reports them: each is a problem of
    /// the object, which is left out as invalid, and `spec` holds the rest.
    /// Always empty for objects from an API server, whose schema check
    /// refuses such objects; not part of the JSON form.
    #[serde(skip)]
    pub read_problems: Vec<ReadProblem>,
}

impl VirtualHostObject {
    /// The object's identity, `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }
}

/// Who wins a contested host: the lowest rank. Timestamped objects come
/// first, oldest first; then those without a timestamp; ties (equal or both
/// missing timestamps) are broken by namespace, then name, as Gateway API
/// does. The derived order follows the field order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank {
    /// `false` sorts first: objects with a timestamp before those without.
    pub(crate) untimed: bool,
    pub(crate) created: Option<Timestamp>,
    pub(crate) key: ObjectKey,
}

impl Rank {
    pub(crate) fn of(object: &VirtualHostObject) -> Self {
        Self {
            untimed: object.creation_timestamp.is_none(),
            created: object.creation_timestamp,
            key: object.key(),
        }
    }
}
