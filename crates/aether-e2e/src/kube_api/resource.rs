//! The kinds the mock API server serves, and the `Status` answers of its
//! errors.

use aether_api::config::v1 as crd;
use serde_json::{Value, json};

/// A kind the mock serves (every one namespaced).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `config.aether.io/v1` VirtualHosts, with a `status` subresource.
    VirtualHosts,
    /// Core v1 Secrets.
    Secrets,
    /// Core v1 ConfigMaps.
    ConfigMaps,
    /// `coordination.k8s.io/v1` Leases.
    Leases,
    /// `events.k8s.io/v1` Events.
    Events,
}

impl Resource {
    /// Every kind served.
    pub const ALL: [Resource; 5] = [
        Resource::VirtualHosts,
        Resource::Secrets,
        Resource::ConfigMaps,
        Resource::Leases,
        Resource::Events,
    ];

    /// The verbs served on every kind (what discovery lists; see `routes::verb`).
    pub const VERBS: [&'static str; 7] = ["create", "delete", "get", "list", "patch", "update", "watch"];

    /// The verbs served on a `status` subresource.
    pub const STATUS_VERBS: [&'static str; 3] = ["get", "patch", "update"];

    /// The API group (empty for the core group).
    pub fn group(self) -> &'static str {
        match self {
            Resource::VirtualHosts => crd::GROUP,
            Resource::Secrets | Resource::ConfigMaps => "",
            Resource::Leases => "coordination.k8s.io",
            Resource::Events => "events.k8s.io",
        }
    }

    /// The version served (`v1` for all).
    pub fn version(self) -> &'static str {
        match self {
            Resource::VirtualHosts => crd::VERSION,
            _ => "v1",
        }
    }

    /// The plural in URLs (`virtualhosts`).
    pub fn plural(self) -> &'static str {
        match self {
            Resource::VirtualHosts => crd::PLURAL,
            Resource::Secrets => "secrets",
            Resource::ConfigMaps => "configmaps",
            Resource::Leases => "leases",
            Resource::Events => "events",
        }
    }

    /// The kind of its objects (`VirtualHost`).
    pub fn kind(self) -> &'static str {
        match self {
            Resource::VirtualHosts => crd::KIND,
            Resource::Secrets => "Secret",
            Resource::ConfigMaps => "ConfigMap",
            Resource::Leases => "Lease",
            Resource::Events => "Event",
        }
    }

    /// The singular name (`virtualhost`), which `kubectl` accepts for the plural.
    pub fn singular(self) -> &'static str {
        match self {
            Resource::VirtualHosts => crd::SINGULAR,
            Resource::Secrets => "secret",
            Resource::ConfigMaps => "configmap",
            Resource::Leases => "lease",
            Resource::Events => "event",
        }
    }

    /// The short names (`vh`), as the real API server lists them.
    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::VirtualHosts => &[crd::SHORT_NAME],
            Resource::ConfigMaps => &["cm"],
            Resource::Events => &["ev"],
            Resource::Secrets | Resource::Leases => &[],
        }
    }

    /// `group/version`, or `v1` for the core group.
    pub fn api_version(self) -> String {
        match self.group() {
            "" => self.version().to_owned(),
            group => format!("{group}/{}", self.version()),
        }
    }

    /// Whether `.../NAME/status` is served, and the main resource's
    /// writes leave the status alone.
    pub fn has_status(self) -> bool {
        self == Resource::VirtualHosts
    }

    /// A custom resource: the API server refuses strategic merge patches on those.
    pub fn is_custom(self) -> bool {
        self == Resource::VirtualHosts
    }

    /// The fields a `fieldSelector` may name, besides `metadata.name` and `metadata.namespace`.
    pub fn selectable_fields(self) -> &'static [&'static str] {
        match self {
            Resource::Secrets => &["type"],
            _ => &[],
        }
    }

    /// The kind served at `group`/`version`/`plural`.
    pub fn find(group: &str, version: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.group() == group && r.version() == version && r.plural() == plural)
    }

    /// The kind of an object's `apiVersion` and `kind`.
    pub fn of(api_version: &str, kind: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.api_version() == api_version && r.kind() == kind)
    }
}

/// An error the API server answers with: its HTTP code, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status code (404, 409...).
    pub code: u16,
    /// The `Status` reason (`NotFound`, `Conflict`...), which clients match on.
    pub reason: &'static str,
    /// A human-readable message.
    pub message: String,
}

impl ApiError {
    /// The error of `code` with `reason` (as Kubernetes spells it) and `message`.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(crate) fn not_found(resource: Resource, name: &str) -> Self {
        let what = match resource.group() {
            "" => resource.plural().to_owned(),
            group => format!("{}.{group}", resource.plural()),
        };
        Self::new(404, "NotFound", format!("{what} \"{name}\" not found"))
    }

    /// The `Status` object of this error, as the API server sends it.
    pub fn status(&self) -> Value {
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code,
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}
