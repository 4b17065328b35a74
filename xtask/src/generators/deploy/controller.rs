//! The controller's objects (`generated/deploy/controller/`): its service
//! account and what it may do, and a Deployment of two replicas with a
//! Service in front of their xDS port, from which the edge's Envoys take
//! their routes (RDS over gRPC). The replicas elect one status writer
//! through a Lease. (The controller can also run as a container of the
//! Envoy pods, writing files to a shared volume: `edge_files`.)
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
//! - xDS over mutual TLS, issued by cert-manager (installed beforehand; no
//!   key material is generated here): a self-signed Issuer makes the xDS
//!   CA ([`XDS_CA`], a CA Certificate), whose CA Issuer issues both sides:
//!   the server certificate ([`XDS_TLS_SECRET`], for the Service's DNS
//!   names, mounted by the Deployment) and Envoy's client certificate
//!   ([`XDS_CLIENT_SECRET`], mounted by the edge's Envoy pods:
//!   `generated/deploy/envoy/bootstrap-xds.yaml`). Each Secret's `ca.crt`
//!   is the CA: the controller verifies Envoy's certificate against it,
//!   Envoy the controller's. A CA of its own (rather than the cluster's)
//!   means every certificate it signs is an Envoy of this edge or the
//!   controller. The controller reloads its files on the next connection
//!   after cert-manager renews them.
//! - Role [`REPORTS_ROLE`] in [`NAMESPACE`]: the ConfigMaps through which
//!   the replicas tell the Lease holder what their Envoys applied
//!   (`aether_controller::programmed::replicas`).
//! - Role in [`NAMESPACE`]: the Lease whose holder writes statuses
//!   (kube-lease-manager gets, creates and server-side-applies it). `create`
//!   cannot be limited to a name (the API server authorizes it before the
//!   object exists); `get` and `patch` are limited to [`LEASE`].

use serde_json::{Value, json};

use super::{NAMESPACE, Object, binding, binding_to, metadata, pod_disruption_budget, role, service, service_account};
use crate::generators::crd::{GROUP, PLURAL};

pub const NAME: &str = "aether-controller";
/// The Role of the replicas' `Programmed` reports.
pub const REPORTS_ROLE: &str = "aether-controller-reports";
/// The controller's default `--lease-name`.
pub const LEASE: &str = "aether-controller";
/// The xDS (gRPC) port, in the container and on the Service.
pub const XDS_PORT: u16 = 18000;
pub const METRICS_PORT: u16 = 9090;
/// The xDS server certificate's Secret (and its Certificate).
pub const XDS_TLS_SECRET: &str = "aether-controller-xds-tls";
/// Where the Deployment mounts [`XDS_TLS_SECRET`].
pub const XDS_TLS_DIR: &str = "/etc/aether-controller/xds-tls";
/// Envoy's xDS client certificate's Secret (and its Certificate).
pub const XDS_CLIENT_SECRET: &str = "aether-edge-xds-client-tls";
/// The xDS CA: its Certificate, Secret and CA Issuer.
pub const XDS_CA: &str = "aether-xds-ca";
/// The edge Envoys' cluster for the mesh's SDS, which serves the
/// `AWS_SECRETS_MANAGER` certificates (the controller's
/// `--mesh-sds-cluster`; the sample bootstraps define it).
pub const MESH_SDS_CLUSTER: &str = "mesh-sds";
/// The self-signed Issuer that signs [`XDS_CA`].
const XDS_CA_ISSUER: &str = "aether-xds-selfsigned";

/// The DNS names the xDS server's certificate holds: the Service's.
pub fn xds_dns_names() -> [String; 2] {
    [
        format!("{NAME}.{NAMESPACE}.svc"),
        format!("{NAME}.{NAMESPACE}.svc.cluster.local"),
    ]
}

/// Where the controller writes `dependencies.json` and `tls-secrets.json`
/// (an `emptyDir`: with `--xds-only` Envoy's own files are not written).
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

/// The controller's container, as both Deployments run it: `--out` on the
/// `out` volume, its metrics port, its name in the Lease, the liveness
/// probe and resources; then `args`.
pub(super) fn container(args: &[String]) -> Value {
    let mut all = vec![
        format!("--out={OUT_DIR}"),
        format!("--metrics-addr=0.0.0.0:{METRICS_PORT}"),
    ];
    all.extend_from_slice(args);
    json!({
        "name": "controller",
        "image": super::image::image_of(NAME),
        "args": all,
        // Its name in the Lease.
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        // Alive while the process answers; not `/readyz`, which says 503
        // until every scope is listed (a restart would not list sooner).
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 10},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "1Gi"}
        },
        "volumeMounts": [{"name": "out", "mountPath": OUT_DIR}]
    })
}

/// The replicas' `Programmed` reports in [`NAMESPACE`]: each replica
/// server-side-applies its own ConfigMap and watches the others'. RBAC
/// cannot limit `create` or `patch` to the reports' name prefix, so the
/// Role grants them on ConfigMaps in this namespace.
fn reports_role() -> Value {
    let rules = json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "patch"]}
    ]);
    role(REPORTS_ROLE, Some(NAMESPACE), rules)
}

fn deployment() -> Value {
    let mut container = container(&[
        format!("--xds-addr=0.0.0.0:{XDS_PORT}"),
        // Mutual TLS from the cert-manager Secret (reloaded on renewal).
        format!("--xds-tls-cert={XDS_TLS_DIR}/tls.crt"),
        format!("--xds-tls-key={XDS_TLS_DIR}/tls.key"),
        format!("--xds-tls-client-ca={XDS_TLS_DIR}/ca.crt"),
        // The edge Envoys take everything over xDS: no route configuration
        // rendered as JSON and written on every change of routes (190 MB at
        // 50,000 objects), no private key on disk.
        "--xds-only".to_owned(),
        // The edge Envoys' cluster for the mesh's SDS, which serves the
        // AWS_SECRETS_MANAGER certificates (generated/deploy/envoy/).
        format!("--mesh-sds-cluster={MESH_SDS_CLUSTER}"),
    ]);
    container["ports"]
        .as_array_mut()
        .expect("ports")
        .insert(0, json!({"name": "xds", "containerPort": XDS_PORT, "protocol": "TCP"}));
    // Ready once a pass has written the files (every scope listed), so
    // the Service sends Envoys only to replicas with a configuration.
    container["readinessProbe"] = json!({"httpGet": {"path": "/readyz", "port": "metrics"}, "periodSeconds": 5});
    container["volumeMounts"]
        .as_array_mut()
        .expect("volumeMounts")
        .push(json!({"name": "xds-tls", "mountPath": XDS_TLS_DIR, "readOnly": true}));
    let volumes = json!([
        {"name": "out", "emptyDir": {}},
        {"name": "xds-tls", "secret": {"secretName": XDS_TLS_SECRET}}
    ]);
    // Two replicas: Envoys reconnect to the other while one restarts; the
    // Lease keeps one status writer. SIGTERM releases the Lease (one API call).
    super::deployment(NAME, 2, 15, vec![container], volumes)
}

fn issuer(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": metadata(name, Some(NAMESPACE)),
        "spec": spec
    })
}

/// A Certificate `name` (its Secret too) issued by the Issuer `issuer`:
/// ECDSA P-256 in PKCS#8, a new key at each renewal.
fn certificate(name: &str, issuer: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["secretName"] = json!(name);
    spec["issuerRef"] = json!({"kind": "Issuer", "name": issuer});
    spec["privateKey"] = json!({"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"});
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": metadata(name, Some(NAMESPACE)),
        "spec": spec
    })
}

/// cert-manager's objects for xDS over mutual TLS (see the module
/// documentation): the CA, its issuer, the server's and Envoy's certificates.
fn xds_certificates() -> Vec<Object> {
    vec![
        (
            "xds-selfsigned-issuer.yaml",
            issuer(XDS_CA_ISSUER, json!({"selfSigned": {}})),
        ),
        (
            "xds-ca-certificate.yaml",
            certificate(
                XDS_CA,
                XDS_CA_ISSUER,
                json!({"isCA": true, "commonName": XDS_CA, "duration": "87600h", "renewBefore": "720h"}),
            ),
        ),
        (
            "xds-ca-issuer.yaml",
            issuer(XDS_CA, json!({"ca": {"secretName": XDS_CA}})),
        ),
        (
            "xds-server-certificate.yaml",
            certificate(
                XDS_TLS_SECRET,
                XDS_CA,
                json!({"dnsNames": xds_dns_names(), "usages": ["server auth", "digital signature"]}),
            ),
        ),
        (
            // In the Envoys' namespace: this one, as generated; move it
            // (with a ClusterIssuer) when the edge runs elsewhere.
            "xds-client-certificate.yaml",
            certificate(
                XDS_CLIENT_SECRET,
                XDS_CA,
                json!({"commonName": "aether-edge", "usages": ["client auth", "digital signature"]}),
            ),
        ),
    ]
}

/// The objects, in a fixed order.
pub fn objects() -> Vec<Object> {
    vec![
        ("service-account.yaml", service_account(NAME)),
        ("cluster-role.yaml", cluster_role()),
        ("cluster-role-binding.yaml", binding(NAME, None)),
        ("lease-role.yaml", lease_role()),
        ("lease-role-binding.yaml", binding(NAME, Some(NAMESPACE))),
        ("reports-role.yaml", reports_role()),
        ("reports-role-binding.yaml", binding_to(REPORTS_ROLE, NAME, Some(NAMESPACE))),
        (
            "service.yaml",
            // Envoy's `envoy_grpc` cluster for RDS points at
            // `aether-controller.aether-system.svc:18000`.
            service(
                NAME,
                json!([{"name": "xds", "port": XDS_PORT, "targetPort": "xds", "protocol": "TCP", "appProtocol": "grpc"}]),
            ),
        ),
    ]
    .into_iter()
    .chain(xds_certificates())
    .chain([
        ("deployment.yaml", deployment()),
        ("pod-disruption-budget.yaml", pod_disruption_budget(NAME)),
    ])
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the checked-in files back: the chain of cert-manager objects
    /// ends in the Secrets the controller and Envoy mount, for the names
    /// Envoy checks.
    #[test]
    fn the_xds_certificates_chain_to_the_mounted_secrets_and_the_bootstraps_name() {
        let read = |file: &str| super::super::tests::read_checked_in(&format!("controller/{file}"));
        let selfsigned = read("xds-selfsigned-issuer.yaml");
        let ca = read("xds-ca-certificate.yaml");
        let ca_issuer = read("xds-ca-issuer.yaml");
        let server = read("xds-server-certificate.yaml");
        let client = read("xds-client-certificate.yaml");
        assert!(selfsigned["spec"]["selfSigned"].is_object());
        assert_eq!(ca["spec"]["issuerRef"]["name"], selfsigned["metadata"]["name"]);
        assert_eq!(ca["spec"]["isCA"], true);
        assert_eq!(ca_issuer["spec"]["ca"]["secretName"], ca["spec"]["secretName"]);
        for leaf in [&server, &client] {
            assert_eq!(leaf["spec"]["issuerRef"]["name"], ca_issuer["metadata"]["name"]);
            assert_eq!(leaf["spec"]["issuerRef"]["kind"], "Issuer");
        }
        assert!(
            server["spec"]["usages"]
                .as_array()
                .unwrap()
                .contains(&json!("server auth"))
        );
        assert!(
            client["spec"]["usages"]
                .as_array()
                .unwrap()
                .contains(&json!("client auth"))
        );

        // The Deployment mounts the server's Secret and names its files.
        let deployment = read("deployment.yaml");
        let pod = &deployment["spec"]["template"]["spec"];
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|volume| volume["secret"]["secretName"] == server["spec"]["secretName"])
            .expect("a volume of the server certificate's Secret");
        let container = &pod["containers"][0];
        let mount = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|mount| mount["name"] == volume["name"])
            .expect("the Secret is mounted");
        let dir = mount["mountPath"].as_str().unwrap();
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for arg in [
            format!("--xds-tls-cert={dir}/tls.crt"),
            format!("--xds-tls-key={dir}/tls.key"),
            format!("--xds-tls-client-ca={dir}/ca.crt"),
        ] {
            assert!(args.contains(&arg.as_str()), "{arg} in {args:?}");
        }
        assert!(!args.contains(&"--xds-plaintext"));

        // Envoy's SNI and SAN check name the server certificate, and the
        // Service it dials is the one the certificate is for.
        let text =
            std::fs::read_to_string(crate::workspace_root().join("generated/deploy/envoy/bootstrap-xds.yaml")).unwrap();
        let bootstrap: Value = serde_saphyr::from_str(&text).unwrap();
        let tls = &bootstrap["static_resources"]["clusters"][0]["transport_socket"]["typed_config"];
        let names = server["spec"]["dnsNames"].as_array().unwrap();
        assert!(names.contains(&tls["sni"]), "{:?}", tls["sni"]);
        let san = &tls["common_tls_context"]["validation_context"]["match_typed_subject_alt_names"][0];
        assert_eq!(san["matcher"]["exact"], tls["sni"]);
        let certificate = &tls["common_tls_context"]["tls_certificates"][0];
        assert!(
            certificate["certificate_chain"]["filename"]
                .as_str()
                .unwrap()
                .ends_with("/tls.crt")
        );
        let service = read("service.yaml");
        let dialed = format!(
            "{}.{}.svc",
            service["metadata"]["name"].as_str().unwrap(),
            service["metadata"]["namespace"].as_str().unwrap()
        );
        assert!(names.contains(&json!(dialed)), "{dialed}");
    }
}
