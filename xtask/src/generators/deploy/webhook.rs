//! The admission webhook's objects (`generated/deploy/webhook/`), from the
//! constants below.
//!
//! One object per file: the ValidatingWebhookConfiguration, the
//! ServiceAccount, the ClusterRole the reflector needs (virtualhosts
//! get/list/watch) and its binding, a cert-manager Issuer (self-signed) and
//! Certificate, the Service and the Deployment. cert-manager (installed
//! beforehand) writes the serving certificate into the Secret
//! [`TLS_SECRET`] and injects its CA into the webhook configuration (the
//! `cert-manager.io/inject-ca-from` annotation); no key material is
//! generated here.

use serde_json::{Value, json};

use super::{NAMESPACE, Object, binding, metadata, pod_disruption_budget, role, service, service_account};
use crate::generators::crd::{GROUP, PLURAL, VERSION};

pub const NAME: &str = "aether-webhook";
/// The webhook's path, as `aether-webhook` serves it.
pub const PATH: &str = "/validate-virtualhost";
pub const HEALTHZ_PATH: &str = "/healthz";
pub const READYZ_PATH: &str = "/readyz";
pub const CONTAINER_PORT: u16 = 8443;
pub const SERVICE_PORT: u16 = 443;
/// The serving certificate's Secret, and the cert-manager Certificate that
/// writes it (one name for both).
pub const TLS_SECRET: &str = "aether-webhook-tls";
/// Under the API server's 10 s ceiling, and the webhook answers in
/// milliseconds: a slow webhook fails the write rather than stalling it.
pub const TIMEOUT_SECONDS: u32 = 5;
/// Every create, and every update that changes the spec, is sent to the
/// webhook: it alone judges what the CRD cannot say (a regex or action the
/// edge's Envoy refuses, host conflicts), of routes as of hosts. Updates
/// of the status or the metadata only skip it: they change nothing it judges.
pub const MATCH_CONDITION_NAME: &str = "spec-changed";
/// See [`MATCH_CONDITION_NAME`].
pub const MATCH_CONDITION: &str = "request.operation != 'UPDATE' || object.spec != oldObject.spec";

fn webhook_configuration() -> Value {
    let mut meta = metadata(NAME, None);
    meta["annotations"] = json!({"cert-manager.io/inject-ca-from": format!("{NAMESPACE}/{TLS_SECRET}")});
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": meta,
        "webhooks": [{
            "name": format!("{PLURAL}.{GROUP}"),
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": NAME, "namespace": NAMESPACE, "path": PATH, "port": SERVICE_PORT}},
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "timeoutSeconds": TIMEOUT_SECONDS,
            "rules": [{
                "apiGroups": [GROUP],
                "apiVersions": [VERSION],
                "resources": [PLURAL],
                "operations": ["CREATE", "UPDATE"],
                "scope": "Namespaced"
            }],
            "matchConditions": [{"name": MATCH_CONDITION_NAME, "expression": MATCH_CONDITION}]
        }]
    })
}

/// A self-signed issuer: the certificate is trusted only through the CA
/// bundle cert-manager injects into the webhook configuration, which is all
/// the API server needs. Swap `issuerRef` for a cluster CA if one exists.
fn issuer() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": metadata(NAME, Some(NAMESPACE)),
        "spec": {"selfSigned": {}}
    })
}

/// The serving certificate, for the Service's DNS names. ECDSA P-256 in
/// PKCS#8, the key form the webhook's tests serve with (rcgen's default).
fn certificate() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": metadata(TLS_SECRET, Some(NAMESPACE)),
        "spec": {
            "secretName": TLS_SECRET,
            "dnsNames": [format!("{NAME}.{NAMESPACE}.svc"), format!("{NAME}.{NAMESPACE}.svc.cluster.local")],
            "issuerRef": {"kind": "Issuer", "name": NAME},
            "privateKey": {"algorithm": "ECDSA", "size": 256, "encoding": "PKCS8", "rotationPolicy": "Always"}
        }
    })
}

fn deployment() -> Value {
    let probe = |path: &str, period: u32| {
        json!({
            "httpGet": {"path": path, "port": "https", "scheme": "HTTPS"},
            "periodSeconds": period,
            "timeoutSeconds": 2,
            "failureThreshold": 3
        })
    };
    let container = json!({
        "name": "webhook",
        "image": super::image::image_of(NAME),
        "args": [
            format!("--listen=0.0.0.0:{CONTAINER_PORT}"),
            "--tls-cert=/etc/aether-webhook/tls/tls.crt",
            "--tls-key=/etc/aether-webhook/tls/tls.key"
        ],
        "ports": [{"name": "https", "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "livenessProbe": probe(HEALTHZ_PATH, 10),
        "readinessProbe": probe(READYZ_PATH, 5),
        "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"},
            "limits": {"memory": "256Mi"}
        },
        "volumeMounts": [{"name": "tls", "mountPath": "/etc/aether-webhook/tls", "readOnly": true}]
    });
    let volumes = json!([{"name": "tls", "secret": {"secretName": TLS_SECRET}}]);
    // Two replicas: the webhook fails closed, so one must always answer.
    // SIGTERM starts a graceful drain; 30 s gives it time.
    super::deployment(NAME, 2, 30, vec![container], volumes)
}

/// The objects, in a fixed order.
pub fn objects() -> Vec<Object> {
    vec![
        ("validating-webhook-configuration.yaml", webhook_configuration()),
        ("service-account.yaml", service_account(NAME)),
        (
            "cluster-role.yaml",
            role(
                NAME,
                None,
                json!([{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]}]),
            ),
        ),
        ("cluster-role-binding.yaml", binding(NAME, None)),
        ("issuer.yaml", issuer()),
        ("certificate.yaml", certificate()),
        (
            "service.yaml",
            service(
                NAME,
                json!([{"name": "https", "port": SERVICE_PORT, "targetPort": "https", "protocol": "TCP"}]),
            ),
        ),
        ("deployment.yaml", deployment()),
        ("pod-disruption-budget.yaml", pod_disruption_budget(NAME)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the checked-in files back and checks the shape the API server
    /// and the webhook binary rely on.
    #[test]
    fn the_checked_in_objects_have_the_expected_shape() {
        let read = |file: &str| super::super::tests::read_checked_in(&format!("webhook/{file}"));
        let vwc = read("validating-webhook-configuration.yaml");
        assert_eq!(vwc["kind"], "ValidatingWebhookConfiguration");
        let hook = &vwc["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["sideEffects"], "None");
        assert!(hook["timeoutSeconds"].as_u64().unwrap() <= 5);
        assert_eq!(hook["admissionReviewVersions"], json!(["v1"]));
        assert_eq!(hook["rules"][0]["resources"], json!(["virtualhosts"]));
        assert_eq!(hook["rules"][0]["apiGroups"], json!(["config.aether.io"]));
        assert_eq!(hook["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(hook["clientConfig"]["service"]["path"], "/validate-virtualhost");
        // What the condition sends: crates/aether-webhook/tests/integration/match_conditions.rs.
        assert_eq!(hook["matchConditions"][0]["name"], "spec-changed");

        let role = read("cluster-role.yaml");
        assert_eq!(role["rules"][0]["verbs"], json!(["get", "list", "watch"]));
        assert_eq!(role["rules"][0]["resources"], json!(["virtualhosts"]));
        let binding = read("cluster-role-binding.yaml");
        assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
        let account = read("service-account.yaml");
        assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
        assert_eq!(binding["subjects"][0]["namespace"], account["metadata"]["namespace"]);

        let service = read("service.yaml");
        let deployment = read("deployment.yaml");
        // cert-manager: the annotation names the Certificate, which writes
        // the Secret the pod mounts, for the name the API server dials.
        let certificate = read("certificate.yaml");
        let annotation = &vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"];
        assert_eq!(
            *annotation,
            format!(
                "{}/{}",
                certificate["metadata"]["namespace"].as_str().unwrap(),
                certificate["metadata"]["name"].as_str().unwrap()
            )
        );
        let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
        assert_eq!(volumes[0]["secret"]["secretName"], certificate["spec"]["secretName"]);
        let dialed = format!(
            "{}.{}.svc",
            service["metadata"]["name"].as_str().unwrap(),
            service["metadata"]["namespace"].as_str().unwrap()
        );
        assert!(
            certificate["spec"]["dnsNames"]
                .as_array()
                .unwrap()
                .contains(&json!(dialed)),
            "{dialed}"
        );
        let issuer = read("issuer.yaml");
        assert_eq!(certificate["spec"]["issuerRef"]["name"], issuer["metadata"]["name"]);
        assert_eq!(certificate["spec"]["issuerRef"]["kind"], issuer["kind"]);
        let pod = &deployment["spec"]["template"];
        assert_eq!(service["metadata"]["name"], hook["clientConfig"]["service"]["name"]);
        assert_eq!(
            service["spec"]["ports"][0]["port"],
            hook["clientConfig"]["service"]["port"]
        );
        for (key, value) in service["spec"]["selector"].as_object().unwrap() {
            assert_eq!(&pod["metadata"]["labels"][key], value);
        }
        assert_eq!(pod["spec"]["serviceAccountName"], account["metadata"]["name"]);
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(container["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    }
}
