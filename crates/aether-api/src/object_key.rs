//! The identity of a VirtualHost object, shared by every crate that keeps
//! objects apart: the projection (who won a host), the webhook's host index
//! (who owns a host) and the controller (whose status to write).

use std::fmt;

/// `namespace/name` of a VirtualHost. Orders by namespace, then name, which
/// is also the tie-break among equally old objects contesting a host.
///
/// ```
/// use aether_api::ObjectKey;
///
/// let key = ObjectKey::new("default", "api");
/// assert_eq!(key.to_string(), "default/api");
/// assert!(ObjectKey::new("a", "z") < ObjectKey::new("b", "a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// The key of `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// `namespace/name`, as in Envoy virtual host names, reports and denials.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Serialized as the string `namespace/name`.
#[cfg(feature = "serde")]
impl serde::Serialize for ObjectKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
