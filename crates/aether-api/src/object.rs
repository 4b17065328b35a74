//! One VirtualHost object as its readers and consumers hold it: the file
//! reader and the controller read it (`aether-manifests`), the projection
//! and the webhook judge it. The Kubernetes object's other parts (labels,
//! annotations, ...) play no part in any of them.

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::ObjectKey;
use crate::config::v1::{VirtualHostSpec, VirtualHostStatus};
use crate::validate::{Validate, Violation, name_problems, violations_of, with_violations};

/// The rule of a value from a newer API version that this build cannot act
/// on (`tls.provider: VAULT`, or a spec field set aside as unknown): the
/// object is left out, not served without it.
pub const RULE_UNSUPPORTED: &str = "unsupported";

/// One VirtualHost object: identity, age, spec and status, with what did
/// not read in it.
///
/// Its JSON form (what tests and tools write objects in) holds the
/// identity, `creationTimestamp`, `generation`, `spec` and `status`; what
/// did not read is no part of it.
///
/// ```
/// use aether_api::object::VirtualHostObject;
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
/// assert!(object.violations().is_empty());
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
    /// The spec; when [`VirtualHostObject::problems`] has any under `spec`,
    /// only what decoded (each refused value replaced by a default).
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
    /// server stored with this build's schema. Not part of the JSON form.
    #[serde(skip)]
    pub problems: Vec<Violation>,
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

impl VirtualHostObject {
    /// The object's identity; displays as `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }

    /// Everything wrong with the object as written: its metadata names
    /// ([`name_problems`]), its problems, then the rules its spec and status
    /// break (see [`with_violations`]). Empty when it is valid.
    pub fn violations(&self) -> Vec<Violation> {
        let status = self.status.as_ref().map(Validate::validate).unwrap_or(Ok(()));
        let mut problems = name_problems(&self.namespace, &self.name);
        problems.extend(with_violations(
            self.problems.clone(),
            violations_of(self.spec.validate()).chain(violations_of(status)),
        ));
        problems
    }
}
