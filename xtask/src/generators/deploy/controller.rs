//! The controller's objects (`generated/deploy/controller/`): its service
//! account and what it may do, and a Deployment of two replicas with a
//! Service in front of their xDS port, from which the edge's Envoys take
//! their routes (RDS over gRPC). The replicas elect one status writer
//! through a Lease. (The controller can also run as a container of the
//! Envoy pods, writing files to a shared volume; its README shows that
//! container.)
//!
//! - ClusterRole: watch VirtualHosts in every namespace, patch their status;
//!   `get`, `list` and `watch` Secrets, for the `kubernetes.io/tls` Secrets
//!   the VirtualHosts reference (`tls.provider: KUBERNETES`). That is as
//!   narrow as RBAC allows: the referenced names are only known at run
//!   time (`resourceNames` cannot follow them, and limits `list`/`watch`
//!   to one name), and RBAC has no rule on a Secret's type. The controller
//!   itself watches only Secrets' metadata (`type=kubernetes.io/tls`) and
//!   reads only the referenced ones with `get`
//!   (crates/aether-controller/src/tls/cluster.rs); `create` and `patch`
//!   `events.k8s.io` Events, the condition transitions recorded on the
//!   VirtualHosts in their namespaces (a repeat is a patch of the same
//!   Event's series; crates/aether-controller/src/events.rs).
//! - Role in [`NAMESPACE`]: the Lease whose holder writes statuses
//!   (kube-lease-manager gets, creates and server-side-applies it). `create`
//!   cannot be limited to a name (the API server authorizes it before the
//!   object exists); `get` and `patch` are limited to [`LEASE`].

use serde_json::{Value, json};

use super::{NAMESPACE, Object, binding, pod_disruption_budget, role, service, service_account};
use crate::generators::crd::{GROUP, PLURAL};

pub const NAME: &str = "aether-controller";
/// The controller's default `--lease-name`.
pub const LEASE: &str = "aether-controller";
/// The xDS (gRPC) port, in the container and on the Service.
pub const XDS_PORT: u16 = 18000;
pub const METRICS_PORT: u16 = 9090;
/// Where the controller writes its files (an `emptyDir`: with xDS nothing
/// reads them, but the controller always writes them).
pub const OUT_DIR: &str = "/var/run/aether";

fn cluster_role() -> Value {
    let rules = json!([
        {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [GROUP], "resources": [format!("{PLURAL}/status")], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}
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

fn deployment() -> Value {
    let container = json!({
        "name": "controller",
        "image": super::image::image_of(NAME),
        "args": [
            format!("--out={OUT_DIR}"),
            format!("--xds-addr=0.0.0.0:{XDS_PORT}"),
            // The edge Envoys' cluster for the mesh's SDS, which serves the
            // AWS_SECRETS_MANAGER certificates (generated/deploy/envoy/).
            format!("--mesh-sds-cluster={}", crate::generators::envoy_bootstrap::MESH_SDS_CLUSTER),
            format!("--metrics-addr=0.0.0.0:{METRICS_PORT}")
        ],
        // Its name in the Lease.
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [
            {"name": "xds", "containerPort": XDS_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}
        ],
        // Alive while the process answers; not `/readyz`, which says 503
        // until every scope is listed (a restart would not list sooner).
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 10},
        // Ready once a pass has written the files (every scope listed), so
        // the Service sends Envoys only to replicas with a configuration.
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "metrics"}, "periodSeconds": 5},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "1Gi"}
        },
        "volumeMounts": [{"name": "out", "mountPath": OUT_DIR}]
    });
    let volumes = json!([{"name": "out", "emptyDir": {}}]);
    // Two replicas: Envoys reconnect to the other while one restarts; the
    // Lease keeps one status writer. SIGTERM releases the Lease (one API call).
    super::deployment(NAME, 2, 15, container, volumes)
}

/// The objects, in a fixed order.
pub fn objects() -> Vec<Object> {
    vec![
        ("service-account.yaml", service_account(NAME)),
        ("cluster-role.yaml", cluster_role()),
        ("cluster-role-binding.yaml", binding(NAME, None)),
        ("lease-role.yaml", lease_role()),
        ("lease-role-binding.yaml", binding(NAME, Some(NAMESPACE))),
        (
            "service.yaml",
            // Envoy's `envoy_grpc` cluster for RDS points at
            // `aether-controller.aether-system.svc:18000`.
            service(
                NAME,
                json!([{"name": "xds", "port": XDS_PORT, "targetPort": "xds", "protocol": "TCP", "appProtocol": "grpc"}]),
            ),
        ),
        ("deployment.yaml", deployment()),
        ("pod-disruption-budget.yaml", pod_disruption_budget(NAME)),
    ]
}
