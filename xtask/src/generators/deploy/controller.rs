//! The controller's objects (`generated/deploy/controller/`): its service
//! account and what it may do. The controller runs as a container of the
//! edge's Envoy pods, whose Deployment is the mesh's (the controller's README
//! shows the container to add); so no Deployment is generated here.
//!
//! - ClusterRole: watch VirtualHosts in every namespace, patch their status.
//! - Role in [`NAMESPACE`]: the Lease whose holder writes statuses
//!   (kube-lease-manager gets, creates and server-side-applies it). `create`
//!   cannot be limited to a name (the API server authorizes it before the
//!   object exists); `get` and `patch` are limited to [`LEASE`].

use serde_json::{Value, json};

use super::{NAMESPACE, Object, binding, role, service_account};
use crate::generators::crd::{GROUP, PLURAL};

pub const NAME: &str = "aether-controller";
/// The controller's default `--lease-name`.
pub const LEASE: &str = "aether-controller";

fn cluster_role() -> Value {
    let rules = json!([
        {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [GROUP], "resources": [format!("{PLURAL}/status")], "verbs": ["patch"]}
    ]);
    role(NAME, None, rules)
}

fn lease_role() -> Value {
    let rules = json!([
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LEASE], "verbs": ["get", "patch"]}
    ]);
    role(NAME, Some(NAMESPACE), rules)
}

/// The objects, in a fixed order.
pub fn objects() -> Vec<Object> {
    vec![
        ("service-account.yaml", service_account(NAME)),
        ("cluster-role.yaml", cluster_role()),
        ("cluster-role-binding.yaml", binding(NAME, None)),
        ("lease-role.yaml", lease_role()),
        ("lease-role-binding.yaml", binding(NAME, Some(NAMESPACE))),
    ]
}
