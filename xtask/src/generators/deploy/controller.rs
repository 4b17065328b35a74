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

use super::{NAMESPACE, Object, metadata};
use crate::generators::crd::{GROUP, PLURAL};

pub const NAME: &str = "aether-controller";
/// The controller's default `--lease-name`.
pub const LEASE: &str = "aether-controller";

fn service_account() -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(NAME, Some(NAMESPACE))})
}

fn cluster_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(NAME, None),
        "rules": [
            {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [GROUP], "resources": [format!("{PLURAL}/status")], "verbs": ["patch"]}
        ]
    })
}

fn lease_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(NAME, Some(NAMESPACE)),
        "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LEASE], "verbs": ["get", "patch"]}
        ]
    })
}

fn binding(kind: &str, role_kind: &str, namespace: Option<&str>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata(NAME, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]
    })
}

/// The objects, in a fixed order.
pub fn objects() -> Vec<Object> {
    vec![
        ("service-account.yaml", service_account()),
        ("cluster-role.yaml", cluster_role()),
        (
            "cluster-role-binding.yaml",
            binding("ClusterRoleBinding", "ClusterRole", None),
        ),
        ("lease-role.yaml", lease_role()),
        (
            "lease-role-binding.yaml",
            binding("RoleBinding", "Role", Some(NAMESPACE)),
        ),
    ]
}
