//! How the controller reads a stored VirtualHost: as a `DynamicObject`,
//! decoded on its own by the one decoder of objects
//! ([`VirtualHostObject::from_value`]), tolerantly (see the parent module),
//! so that an object a newer CRD stored never fails the list.

use aether_api::object::Reading;
use aether_projection::{ObjectKey, VirtualHostObject};
use kube::core::DynamicObject;
use serde_json::{Value, json};
use tracing::warn;

use crate::status::Observed;

/// What the controller keeps of each watched object.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Known {
    pub(super) object: VirtualHostObject,
    pub(super) observed: Observed,
    /// The stored `status.conditions` as written, unknown fields and all:
    /// what a patch sends back for the conditions of other owners.
    pub(super) stored_conditions: Vec<Value>,
    /// The unknown fields set aside (`spec.routes[0].idleTimeout`), logged
    /// when the object changes.
    pub(super) set_aside: Vec<String>,
    /// `metadata.resourceVersion`, when it is a number (as every API
    /// server's is, etcd's revision; opaque to clients otherwise): to tell
    /// a watch event older than a status write's answer ([`Known::is_older_than`]).
    pub(super) resource_version: Option<u64>,
}

impl Known {
    /// Whether this is an older version of the object than `other`: a
    /// watch lagging behind this controller's own writes delivers the
    /// object as it was before them, and taking it for the stored status
    /// would write each status again. Unknown when either version is not
    /// a number: then it is taken.
    pub(super) fn is_older_than(&self, other: &Known) -> bool {
        matches!((self.resource_version, other.resource_version), (Some(this), Some(that)) if this < that)
    }
}

/// The stored `status.conditions` of an object's `status`, as written.
fn stored_conditions(status: Option<&Value>) -> Vec<Value> {
    status
        .and_then(|status| status.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The projection's view of a stored VirtualHost, its generation and
/// status, read tolerantly (see the module's documentation); `None` for an
/// object without a namespace or name (never stored by an API server).
pub(super) fn convert(stored: &DynamicObject) -> Option<(ObjectKey, Known)> {
    let metadata = &stored.metadata;
    let (Some(namespace), Some(name)) = (&metadata.namespace, &metadata.name) else {
        warn!(name = ?metadata.name, "ignoring a VirtualHost without namespace or name");
        return None;
    };
    // Its identity, age, spec and status: what the decoder reads, and no
    // more (managed fields and annotations are most of a stored object).
    let mut value = json!({
        "apiVersion": aether_api::config::v1::API_VERSION,
        "kind": aether_api::config::v1::KIND,
        "metadata": {
            "namespace": namespace,
            "name": name,
            "creationTimestamp": metadata.creation_timestamp,
            "generation": metadata.generation,
        },
    });
    for part in ["spec", "status"] {
        if let Some(found) = stored.data.get(part).filter(|found| !found.is_null()) {
            value[part] = found.clone();
        }
    }
    let read = match VirtualHostObject::from_value(value, Reading::Tolerant) {
        Ok(read) => read,
        // Unreachable with the identity checked above; never fatal.
        Err(err) => {
            warn!(namespace, name, error = %err, "ignoring a VirtualHost that does not read");
            return None;
        }
    };
    let observed = Observed {
        generation: read.generation,
        status: read.status.clone(),
        programmed: None,
    };
    let stored_conditions = stored_conditions(stored.data.get("status"));
    let set_aside = read.set_aside.clone();
    let object = read;
    Some((
        object.key(),
        Known {
            object,
            observed,
            stored_conditions,
            set_aside,
            resource_version: metadata
                .resource_version
                .as_deref()
                .and_then(|version| version.parse().ok()),
        },
    ))
}
