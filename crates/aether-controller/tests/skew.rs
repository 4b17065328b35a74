//! Version skew through the real binary: manifests written against a newer
//! proto (`crates/aether-api/tests/skew/newer.proto`) reconciled once by this
//! build, in local mode. What it knows is served; an object asking for what
//! it cannot do is left out with status `Unsupported`; the rest of the list
//! is served all the same.

mod common;

use aether_controller::outputs::{ROUTES_FILE, STATUS_FILE};
use common::{run_once, served_hosts};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../aether-api/tests/skew");

#[test]
fn newer_objects_are_served_or_left_out_unsupported_and_the_rest_is_served() {
    let out = tempfile::tempdir().unwrap();
    let (code, log) = run_once(FIXTURES.as_ref(), out.path());
    // Every file was read: an unsupported object is an outcome, not an
    // input error, so `--once` exits 0.
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains(
            r#"ignoring fields from a newer API version object=skew/newer-fields fields=["spec.mirror", "spec.routes[0].timeout"]"#
        ),
        "{log}"
    );

    let mut hosts = served_hosts(out.path());
    hosts.sort();
    assert_eq!(hosts, ["newer.example.com", "plain.example.com"]);
    // The known fields of the object with new fields are intact.
    let routes = std::fs::read_to_string(out.path().join(ROUTES_FILE)).unwrap();
    assert!(routes.contains("\"/api\"") && routes.contains("svc-api"), "{routes}");
    assert!(
        !routes.contains("svc-vault") && !routes.contains("svc-template"),
        "{routes}"
    );

    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let accepted = |key: &str| status[key]["conditions"][0].clone();
    for key in ["skew/newer-fields", "skew/plain"] {
        assert_eq!(accepted(key)["reason"], "Accepted", "{key}: {status}");
    }
    let vault = accepted("skew/new-enum-value");
    assert_eq!(
        (&vault["status"], &vault["reason"]),
        (&"False".into(), &"Unsupported".into())
    );
    let message = vault["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.tls.provider: unknown value \"VAULT\""),
        "{message}"
    );
    let template = accepted("skew/new-oneof-member");
    assert_eq!(template["reason"], "Unsupported", "{status}");
    let message = template["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.routes[0].match.template: unknown field"),
        "{message}"
    );
}
