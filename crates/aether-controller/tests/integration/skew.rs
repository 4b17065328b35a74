//! Version skew through the real binary: manifests written against a newer
//! proto (today's plus `crates/aether-api/tests/skew/additions.txt`)
//! reconciled once by this build, in local mode. An object asking for what
//! it cannot do (a new enum value, a new oneof member, a new spec field) is
//! left out with status `Unsupported`; the rest of the list is served all
//! the same.

use aether_controller::outputs::{ROUTES_FILE, STATUS_FILE};
use serde_json::Value;

use crate::common::{run_once, served_hosts};

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
            r#"fields from a newer API version (in the spec, the object is left out as unsupported; in the status, ignored) object=skew/newer-fields fields=["spec.mirror", "spec.routes[0].idleTimeout"]"#
        ),
        "{log}"
    );

    let mut hosts = served_hosts(out.path());
    hosts.sort();
    assert_eq!(hosts, ["plain.example.com"]);
    let routes = std::fs::read_to_string(out.path().join(ROUTES_FILE)).unwrap();
    assert!(!routes.contains("svc-api"), "{routes}");
    assert!(
        !routes.contains("svc-vault") && !routes.contains("svc-template"),
        "{routes}"
    );

    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let accepted = |key: &str| status[key]["conditions"][0].clone();
    assert_eq!(accepted("skew/plain")["reason"], "Accepted", "{status}");
    let newer = accepted("skew/newer-fields");
    assert_eq!(newer["reason"], "Unsupported", "{status}");
    let message = newer["message"].as_str().unwrap();
    assert!(message.starts_with("left out: spec.mirror: unknown field"), "{message}");
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
