//! Live changes reach a running Envoy, which never restarts and never
//! rejects a configuration; over files, each change is one reload. An edit
//! the edge cannot use (invalid, from a newer API) changes nothing served.

use std::collections::BTreeSet;
use std::time::Instant;

use aether_e2e::edge::{UPDATE_ATTEMPT, UPDATE_SUCCESS};
use aether_e2e::{Edge, Mode};

use crate::edge;

const API: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: api, namespace: default, creationTimestamp: '2026-01-01T00:00:00Z'}
spec:
  hosts: [api.example.com, www.example.com]
  routes:
    - match: {prefix: /users}
      backend: {service: svc-users, port: 8080}
    - match: {prefix: /}
      backend: {service: svc-web}
";

const SHOP: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: shop, namespace: shop, creationTimestamp: '2026-01-02T00:00:00Z'}
spec:
  hosts: [shop.example.com]
  routes:
    - match: {prefix: /}
      backend: {service: svc-shop}
";

fn clusters() -> BTreeSet<String> {
    ["svc-users:8080", "svc-web", "svc-orders", "svc-shop"]
        .into_iter()
        .map(String::from)
        .collect()
}

/// One edit: its manifest change, and the request that shows it served.
struct Step {
    what: &'static str,
    edit: fn(&Edge),
    host: &'static str,
    path: &'static str,
    cluster: Option<&'static str>,
    /// The edit is one the edge cannot use: its routes stay as they were
    /// (no reload), and the status of `shop/shop` says so, with this reason.
    kept: Option<&'static str>,
}

fn steps() -> Vec<Step> {
    vec![
        Step {
            what: "add a route",
            edit: |edge| {
                edge.write(
                    "api.yaml",
                    &API.replace(
                        "    - match: {prefix: /}",
                        "    - match: {prefix: /orders}\n      backend: {service: svc-orders}\n    - match: {prefix: /}",
                    ),
                )
            },
            host: "api.example.com",
            path: "/orders/7",
            cluster: Some("svc-orders"),
            kept: None,
        },
        Step {
            what: "remove a host",
            edit: |edge| {
                edge.write(
                    "api.yaml",
                    &API.replace("[api.example.com, www.example.com]", "[api.example.com]"),
                )
            },
            host: "www.example.com",
            path: "/",
            cluster: None,
            kept: None,
        },
        Step {
            what: "delete an object",
            edit: |edge| edge.remove("shop.yaml"),
            host: "shop.example.com",
            path: "/",
            cluster: None,
            kept: None,
        },
        Step {
            what: "add an object",
            edit: |edge| edge.write("shop.yaml", SHOP),
            host: "shop.example.com",
            path: "/",
            cluster: Some("svc-shop"),
            kept: None,
        },
        Step {
            what: "make one invalid (an upper-case host): its previous version is served on",
            edit: |edge| edge.write("shop.yaml", &SHOP.replace("[shop.example.com]", "[Shop.example.com]")),
            host: "shop.example.com",
            path: "/",
            cluster: Some("svc-shop"),
            kept: Some("Invalid"),
        },
        Step {
            what: "a version from a newer API (a TLS provider this build lacks): the same",
            edit: |edge| {
                edge.write(
                    "shop.yaml",
                    &format!("{SHOP}  tls: {{secretName: shop-tls, provider: VAULT}}\n"),
                )
            },
            host: "shop.example.com",
            path: "/",
            cluster: Some("svc-shop"),
            kept: Some("Unsupported"),
        },
        Step {
            what: "fix it, with a change",
            edit: |edge| edge.write("shop.yaml", &SHOP.replace("svc-shop", "svc-orders")),
            host: "shop.example.com",
            path: "/",
            cluster: Some("svc-orders"),
            kept: None,
        },
    ]
}

/// Ten more objects, so the edge holds 12 (the size docs/envoy.md's
/// "Edit → served" figures are measured at).
fn others() -> String {
    (0..10)
        .map(|i| {
            format!(
                "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: app-{i}, namespace: apps}}\n\
                 spec: {{hosts: [app-{i}.example.org], routes: [{{match: {{prefix: /}}, backend: {{service: svc-web}}}}]}}\n"
            )
        })
        .collect()
}

fn check(mode: Mode) {
    let others = others();
    let edge = edge(
        mode,
        &[("api.yaml", API), ("shop.yaml", SHOP), ("others.yaml", &others)],
        &clusters(),
    );
    edge.wait_for("app-9.example.org", "/", Some("svc-web"));
    edge.wait_for("www.example.com", "/", Some("svc-web"));
    let envoy_id = edge.envoy.id();
    let _versions: BTreeSet<String> = BTreeSet::new();
    for step in steps() {
        let (attempts, successes) = (edge.envoy.stat(UPDATE_ATTEMPT), edge.envoy.stat(UPDATE_SUCCESS));
        let started = Instant::now();
        (step.edit)(&edge);
        if let Some(reason) = step.kept {
            wait_for_previous_version(&edge, reason);
        }
        edge.wait_for(step.host, step.path, step.cluster);
        eprintln!(
            "{mode:?}: {}: served {} ms after the edit",
            step.what,
            started.elapsed().as_millis()
        );
        assert_eq!(edge.rejected(), 0, "{}: {}", step.what, edge.logs());
        let reloads = u64::from(step.kept.is_none());
        assert_eq!(
            edge.envoy.stat(UPDATE_SUCCESS),
            successes + reloads,
            "{mode:?}: {}",
            step.what
        );
        if mode == Mode::Files {
            // Envoy watches routes.json by path: the other files the
            // controller renames into the same directory do not reload it.
            assert_eq!(
                edge.envoy.stat(UPDATE_ATTEMPT),
                attempts + reloads,
                "{}: one change, one reload",
                step.what
            );
        }
    }
    // The other objects were served throughout, by the same Envoy.
    assert_eq!(
        edge.cluster("api.example.com", "/users").as_deref(),
        Some("svc-users:8080")
    );
    assert_eq!(edge.envoy.id(), envoy_id);
}

/// Waits until `shop/shop`'s status says its previous version is served,
/// its newest left out for `reason`.
fn wait_for_previous_version(edge: &Edge, reason: &str) {
    let started = Instant::now();
    loop {
        let status = std::fs::read(edge.out().join("status.json")).unwrap_or_default();
        let status: serde_json::Value = serde_json::from_slice(&status).unwrap_or_default();
        let accepted = &status["shop/shop"]["conditions"][0];
        let message = accepted["message"].as_str().unwrap_or_default();
        if accepted["reason"] == reason && message.ends_with("serving the previous version: serving shop.example.com") {
            return;
        }
        assert!(started.elapsed().as_secs() < 20, "not kept: {status}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn live_changes_are_served_over_files() {
    check(Mode::Files);
}

#[test]
fn live_changes_are_served_over_xds() {
    check(Mode::Xds);
}
