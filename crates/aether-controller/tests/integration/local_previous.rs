//! Local mode keeps serving an object's previous version when its new one
//! cannot be used: invalid, truncated, unreadable or from a newer API
//! version. The served routes change only for a valid version or a
//! deletion; the status says what was left out and that the previous
//! version is served. A fresh process has no previous version.

use std::path::Path;

use aether_controller::local::Local;
use aether_controller::outputs::{ROUTES_FILE, STATUS_FILE};
use serde_json::Value;

use crate::common::{options, run_once, served_hosts};

/// `default/shop`, block style, serving shop.example.com to `service`.
fn shop(service: &str) -> String {
    format!(
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: shop, namespace: default}}\nspec:\n  \
         hosts: [shop.example.com]\n  routes:\n  - match: {{prefix: /}}\n    backend:\n      service: {service}\n  \
         tls: {{secretName: shop-tls, provider: KUBERNETES}}\n"
    )
}

/// `default/other`, serving other.example.com.
const OTHER: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: other, namespace: default}\n\
                     spec: {hosts: [other.example.com], routes: [{match: {prefix: /}, backend: {service: svc-other}}]}\n";

fn accepted(out: &Path, key: &str) -> Value {
    let status: Value = serde_json::from_slice(&std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    status[key]["conditions"][0].clone()
}

fn route_count(out: &Path, key: &str) -> Value {
    let status: Value = serde_json::from_slice(&std::fs::read(out.join(STATUS_FILE)).unwrap()).unwrap();
    status[key]["routeCount"].clone()
}

fn routes(out: &Path) -> String {
    std::fs::read_to_string(out.join(ROUTES_FILE)).unwrap()
}

/// Serves `shop` then replaces its file by `bad`: the routes and the TLS
/// secret stay those of the previous version, and the status says why the
/// new one is left out (`reason`, the message holding `left_out`)
/// and that the previous version is served. Then a valid edit is served,
/// and the deletion removes it.
fn previous_version_is_kept(bad: &str, reason: &str, left_out: &str) {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = input.path().join("shop.yaml");
    std::fs::write(&file, shop("svc-v1")).unwrap();
    std::fs::write(input.path().join("other.yaml"), OTHER).unwrap();
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    local.reconcile().unwrap();
    let served = routes(out.path());
    assert!(served.contains("svc-v1"), "{served}");
    assert_eq!(accepted(out.path(), "default/shop")["reason"], "Accepted");
    let tls = std::fs::read_to_string(out.path().join("tls-secrets.json")).unwrap();
    assert!(tls.contains("shop-tls"), "{tls}");

    std::fs::write(&file, bad).unwrap();
    for pass in 0..2 {
        local.reconcile().unwrap();
        assert_eq!(
            routes(out.path()),
            served,
            "pass {pass}: the previous version's routes changed"
        );
        assert_eq!(
            std::fs::read_to_string(out.path().join("tls-secrets.json")).unwrap(),
            tls,
            "pass {pass}"
        );
        let condition = accepted(out.path(), "default/shop");
        assert_eq!(
            (&condition["status"], &condition["reason"]),
            (&"False".into(), &reason.into()),
            "pass {pass}: {condition}"
        );
        let message = condition["message"].as_str().unwrap();
        assert!(
            message.starts_with("left out: ") && message.contains(left_out),
            "{message}"
        );
        assert!(
            message.ends_with("; serving the previous version: serving shop.example.com"),
            "{message}"
        );
        assert_eq!(route_count(out.path(), "default/shop"), 1);
        assert_eq!(accepted(out.path(), "default/other")["reason"], "Accepted");
    }

    std::fs::write(&file, shop("svc-v2")).unwrap();
    local.reconcile().unwrap();
    let served = routes(out.path());
    assert!(served.contains("svc-v2") && !served.contains("svc-v1"), "{served}");
    assert_eq!(accepted(out.path(), "default/shop")["reason"], "Accepted");

    std::fs::remove_file(&file).unwrap();
    local.reconcile().unwrap();
    assert_eq!(served_hosts(out.path()), ["other.example.com"]);
}

#[test]
fn an_invalid_edit_keeps_the_previous_version_served_until_a_valid_one_or_the_deletion() {
    previous_version_is_kept(
        &shop("svc-v2").replace("shop.example.com", "Shop_Example"),
        "Invalid",
        "left out: spec.hosts[0]: does not match regex pattern",
    );
}

#[test]
fn a_file_truncated_mid_key_keeps_the_previous_version_served() {
    let whole = shop("svc-v2");
    // Cut inside `routes` (it no longer parses), inside `service` (the
    // backend reads as the string `serv`) and before `routes` (no routes).
    let no_yaml = "invalid YAML: simple key expected ':' at line 6, column 3 (manifest)";
    let cuts = [
        (whole.find("  routes").unwrap() + 5, "Invalid", no_yaml),
        (
            whole.find("service").unwrap() + 4,
            "Invalid",
            "spec.routes[0].backend: must be a mapping, got \"serv\" (type)",
        ),
        (
            whole.find("  routes").unwrap(),
            "Invalid",
            "spec.routes: must contain at least 1 item(s) (repeated.min_items)",
        ),
    ];
    for (at, reason, left_out) in cuts {
        previous_version_is_kept(&whole[..at], reason, left_out);
    }
}

#[test]
fn an_edit_a_newer_api_wrote_keeps_the_previous_version_served() {
    previous_version_is_kept(
        &shop("svc-v2").replace("KUBERNETES", "VAULT"),
        "Unsupported",
        "left out: spec.tls.provider: unknown value \"VAULT\"",
    );
}

/// A fresh process has no previous version: started on the invalid file,
/// it serves nothing for it, and says it is invalid.
#[test]
fn a_restart_on_an_invalid_file_serves_nothing_for_it() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = input.path().join("shop.yaml");
    std::fs::write(&file, shop("svc-v1")).unwrap();
    std::fs::write(input.path().join("other.yaml"), OTHER).unwrap();
    let (code, log) = run_once(input.path(), out.path());
    assert_eq!(code, 0, "{log}");
    assert!(routes(out.path()).contains("svc-v1"));

    std::fs::write(&file, shop("svc-v2").replace("shop.example.com", "Shop_Example")).unwrap();
    let (code, log) = run_once(input.path(), out.path());
    assert_eq!(code, 0, "{log}");
    assert_eq!(served_hosts(out.path()), ["other.example.com"]);
    let condition = accepted(out.path(), "default/shop");
    assert_eq!(condition["reason"], "Invalid");
    assert!(
        !condition["message"].as_str().unwrap().contains("previous version"),
        "{condition}"
    );
}
