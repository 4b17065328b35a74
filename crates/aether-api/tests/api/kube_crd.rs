//! `VirtualHost::crd()` (feature `kube`) against the generated CRD.

use aether_api::config::v1::{VirtualHost, VirtualHostSpec, VirtualHostStatus};
use kube::{CustomResourceExt, Resource};
use schemars::SchemaGenerator;
use serde_json::{Value, json};

/// The checked-in CRD, as `kubectl apply` would read it.
fn checked_in_crd() -> Value {
    serde_saphyr::from_str(include_str!("../../generated/crds/virtualhosts.config.aether.io.yaml")).unwrap()
}

/// Every number as a float: k8s-openapi keeps `minimum`/`maximum` as `f64`,
/// so `crd()` writes `65535.0` where the YAML says `65535`. Same value; JSON
/// values only compare them unequal because of the representation.
fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, numbers_as_floats(v))).collect()),
        other => other,
    }
}

#[test]
fn crd_is_the_checked_in_yaml() {
    let derived = serde_json::to_value(VirtualHost::crd()).unwrap();
    assert_eq!(numbers_as_floats(derived), numbers_as_floats(checked_in_crd()));
}

#[test]
fn the_comparison_sees_a_changed_rule() {
    // The normalization above must not hide real differences.
    let mut changed = checked_in_crd();
    let hosts =
        &mut changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["hosts"];
    hosts["maxItems"] = json!(17);
    let derived = serde_json::to_value(VirtualHost::crd()).unwrap();
    assert_ne!(numbers_as_floats(derived), numbers_as_floats(changed));
}

#[test]
fn resource_names_match_the_crd() {
    assert_eq!(VirtualHost::crd_name(), "virtualhosts.config.aether.io");
    assert_eq!(VirtualHost::group(&()), "config.aether.io");
    assert_eq!(VirtualHost::version(&()), "v1");
    assert_eq!(VirtualHost::kind(&()), "VirtualHost");
    assert_eq!(VirtualHost::plural(&()), "virtualhosts");
    assert_eq!(VirtualHost::shortnames(), ["vh"]);
}

#[test]
fn spec_and_status_schemas_are_the_generated_ones() {
    let crd = checked_in_crd();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    let mut generator = SchemaGenerator::default();
    let spec = serde_json::to_value(generator.subschema_for::<VirtualHostSpec>()).unwrap();
    let status = serde_json::to_value(generator.subschema_for::<VirtualHostStatus>()).unwrap();
    assert_eq!(spec, schema["spec"]);
    assert_eq!(status, schema["status"]);
}

#[test]
fn a_virtual_host_is_written_in_the_kubernetes_form() {
    let manifest = json!({
        "apiVersion": "config.aether.io/v1",
        "kind": "VirtualHost",
        "metadata": {"name": "api", "namespace": "edge"},
        "spec": {
            "hosts": ["api.example.com"],
            "routes": [{"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}}],
            "tls": {"secretName": "example-tls", "provider": "KUBERNETES"}
        },
        "status": {"conditions": [{
            "type": "Accepted", "status": "True", "observedGeneration": 3,
            "lastTransitionTime": "2026-11-29T19:01:31Z", "reason": "Accepted"
        }]}
    });
    let host: VirtualHost = serde_json::from_value(manifest.clone()).unwrap();
    assert_eq!(host.spec.hosts, ["api.example.com"]);
    assert_eq!(host.status.as_ref().unwrap().conditions[0].observed_generation, 3);
    assert_eq!(serde_json::to_value(&host).unwrap(), manifest);
}
