//! The RE2 guard against the real Envoy: Envoy refuses a whole route
//! configuration for one regex whose RE2 program is larger than 100
//! (shown here, at 100 and 101), and never refuses one of regexes the
//! guard accepts, however near the limit; a tenant's regex RE2 refuses for
//! its nested counts (issue 31) never reaches Envoy, over files or gRPC,
//! and every other host keeps being served.

use std::path::Path;

use aether_e2e::edge::{PATIENCE, UPDATE_REJECTED, UPDATE_SUCCESS, clusters};
use aether_e2e::{Envoy, Mode, RouteSource};
use aether_edge_limits::re2::testing::Expressions;
use aether_edge_limits::re2::{ENVOY_MAX_PROGRAM_SIZE, check};
use serde_json::{Value, json};

/// Route configurations pushed, each of [`ROUTES`] routes.
const CONFIGURATIONS: usize = 24;
const ROUTES: usize = 48;
/// Only regexes whose bound is at least this are pushed: near the limit.
const NEAR: u64 = 60;

/// A route matching `path` (a regex) and a header `x-re2` matching
/// `header` (a regex), answered by Envoy itself.
fn route(path: &str, header: &str) -> Value {
    json!({
        "match": {
            "safe_regex": {"regex": path},
            "headers": [{"name": "x-re2", "string_match": {"safe_regex": {"regex": header}}}]
        },
        "direct_response": {"status": 200}
    })
}

/// `routes.json` for one virtual host of `routes`, as Envoy reads it.
fn routes_json(version: usize, routes: Vec<Value>) -> Vec<u8> {
    let configuration = json!({
        "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "name": "aether-edge",
        "virtual_hosts": [{"name": "re2", "domains": ["re2.test"], "routes": routes}]
    });
    serde_json::to_vec(&json!({"version_info": version.to_string(), "resources": [configuration]})).expect("JSON")
}

/// Replaces `routes.json` in one rename, as Envoy needs to see it.
fn push(dir: &Path, bytes: &[u8]) {
    let staged = dir.join(".routes.json.tmp");
    std::fs::write(&staged, bytes).expect("staging routes.json");
    std::fs::rename(&staged, dir.join("routes.json")).expect("moving routes.json in");
}

/// Waits until Envoy has taken one more configuration in, applied or
/// rejected, and says which.
fn outcome(envoy: &Envoy, before: (u64, u64)) -> (u64, u64) {
    aether_e2e::wait_until(
        "Envoy to load routes.json",
        PATIENCE,
        || envoy.log_tail(),
        || {
            let now = (envoy.stat(UPDATE_SUCCESS), envoy.stat(UPDATE_REJECTED));
            (now != before).then_some(now)
        },
    )
}

fn start() -> (Envoy, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // No HTTPS listener: the bootstrap's LDS file with no listener.
    std::fs::write(
        dir.path().join("listeners.json"),
        br#"{"version_info": "0", "resources": []}"#,
    )
    .expect("writing listeners.json");
    push(dir.path(), &routes_json(0, vec![route("/", ".*")]));
    let envoy = Envoy::start(&RouteSource::File(dir.path().join("routes.json")), &Default::default());
    (envoy, dir)
}

#[test]
fn envoy_refuses_a_route_configuration_for_one_regex_above_program_size_100() {
    let (envoy, dir) = start();
    let mut counts = outcome(&envoy, (0, 0));
    assert_eq!(counts, (1, 0), "the first configuration\n{}", envoy.log_tail());
    // In the path, and in a header value.
    // RE2's program size of x{96} is 100, of x{97} 101 (RE2 in Python says
    // so too; the guard's test compares with it). Envoy's RE2 reads Latin-1:
    // `.` is one byte range or two, so .{48} is 100 and .{49} 102 (in UTF-8
    // .{12} would already be 100), and \x{100} is no byte at all.
    let table = [
        ("x{96}", true),
        ("x{97}", false),
        (".{48}", true),
        (".{49}", false),
        ("\\x{ff}", true),
        ("\\x{100}", false),
        ("x{95}", true),
    ];
    for (version, (regex, applied)) in table.into_iter().enumerate() {
        for (at, routes) in [("path", route(regex, ".*")), ("header", route("/", regex))]
            .into_iter()
            .enumerate()
        {
            push(
                dir.path(),
                &routes_json(version * 2 + at + 1, vec![route("/", ".*"), routes.1]),
            );
            let now = outcome(&envoy, counts);
            let expected = if applied {
                (counts.0 + 1, counts.1)
            } else {
                (counts.0, counts.1 + 1)
            };
            assert_eq!(
                now,
                expected,
                "{regex} in the {}: applied {applied}\n{}",
                routes.0,
                envoy.log_tail()
            );
            counts = now;
        }
    }
    // The guard's bound is RE2's size plus the instructions RE2 may add
    // and here saves: x{94} is the longest it lets through.
    assert_eq!(check("x{94}"), Ok(ENVOY_MAX_PROGRAM_SIZE));
    assert!(check("x{95}").is_err());
    assert!(check(".{47}").is_ok() && check(".{48}").is_err());
    assert!(check("\\x{100}").is_err());
}

#[test]
fn envoy_applies_every_configuration_of_regexes_the_guard_accepts_near_the_limit() {
    let (envoy, dir) = start();
    let mut counts = outcome(&envoy, (0, 0));
    let mut expressions = Expressions::new(0xE07E2);
    let mut bounds = Vec::new();
    let mut near = || loop {
        let regex = expressions.next_expression();
        if let Ok(bound) = check(&regex)
            && bound >= NEAR
        {
            bounds.push(bound);
            return regex;
        }
    };
    for version in 1..=CONFIGURATIONS {
        let routes: Vec<Value> = (0..ROUTES).map(|_| route(&near(), &near())).collect();
        let bytes = routes_json(version, routes);
        push(dir.path(), &bytes);
        let now = outcome(&envoy, counts);
        assert_eq!(
            now,
            (counts.0 + 1, 0),
            "configuration {version} rejected\n{}\n{}",
            envoy.log_tail(),
            String::from_utf8_lossy(&bytes)
        );
        counts = now;
    }
    // Right up to the limit.
    assert_eq!(bounds.len(), CONFIGURATIONS * ROUTES * 2);
    assert_eq!(bounds.iter().max(), Some(&ENVOY_MAX_PROGRAM_SIZE), "{bounds:?}");
}

/// Issue 31's regexes: RE2 refuses each ("invalid repetition size": its
/// nested counts multiply above 1000, under `{0}`), and Envoy with it the
/// whole route configuration, where the guard once accepted them.
const NESTED_COUNTS: &[&str] = &[
    "/(?:(?:a{2}){501}){0}x",
    "/(?:(?:a{2}){501}){0,0}x",
    "(?:(?:a{1000}){2}){0}",
    "/(?:(?:(?:a{10}){10}){11}){0}",
];

/// One tenant's object: a route per regex of [`NESTED_COUNTS`] in the
/// path, one in a header, and a catch-all.
fn nested_counts_tenant() -> String {
    let mut routes = String::new();
    for regex in NESTED_COUNTS {
        routes.push_str(&format!(
            "    - {{match: {{regex: '{regex}'}}, backend: {{service: svc-never}}}}\n"
        ));
    }
    routes.push_str(&format!(
        "    - {{match: {{prefix: /, headers: [{{name: x-a, regex: '{}'}}]}}, backend: {{service: svc-never}}}}\n",
        NESTED_COUNTS[0]
    ));
    routes.push_str("    - {match: {prefix: /}, backend: {service: svc-tenant}}\n");
    format!(
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: tenant, namespace: t1}}\nspec:\n  \
         hosts: [tenant.example.org]\n  routes:\n{routes}"
    )
}

/// Another tenant's object, serving `host` from `service`.
fn other(name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}, namespace: t2}}\nspec:\n  \
         hosts: [{host}]\n  routes:\n    - {{match: {{prefix: /}}, backend: {{service: {service}}}}}\n"
    )
}

fn nested_counts_never_reach_envoy(mode: Mode) {
    let tenant = nested_counts_tenant();
    let first = other("first", "first.example.org", "svc-first");
    let later = other("later", "later.example.org", "svc-later");
    // Envoy starts while the object exists: every host is served.
    let edge = crate::edge(
        mode,
        &[("tenant.yaml", &tenant), ("first.yaml", &first)],
        &clusters(&[&tenant, &first, &later]),
    );
    edge.wait_for("first.example.org", "/", Some("svc-first"));
    // The tenant's refused routes are left out, its catch-all served: `/x`
    // would match the first regex (`{0}` makes the counts match nothing).
    for path in ["/", "/x", "/aaaa"] {
        assert_eq!(
            edge.cluster("tenant.example.org", path).as_deref(),
            Some("svc-tenant"),
            "{mode:?}: {path}"
        );
    }
    // Another tenant's new host is served while the object stays.
    edge.write("later.yaml", &later);
    edge.wait_for("later.example.org", "/", Some("svc-later"));
    assert_eq!(
        edge.cluster("first.example.org", "/").as_deref(),
        Some("svc-first"),
        "{mode:?}"
    );
    assert_eq!(edge.rejected(), 0, "{mode:?}\n{}", edge.logs());
    // None of them reached Envoy.
    let served = edge
        .envoy
        .dynamic_route_config()
        .expect("Envoy's route configuration")
        .to_string();
    for regex in NESTED_COUNTS {
        assert!(!served.contains(regex), "{mode:?}: {regex} reached Envoy");
    }
    // The tenant's status says which routes are left out, and why.
    let status: Value = aether_e2e::wait_until(
        "the controller's status of t1/tenant",
        PATIENCE,
        || edge.logs(),
        || {
            let text = std::fs::read_to_string(edge.out().join("status.json")).ok()?;
            let all: Value = serde_json::from_str(&text).ok()?;
            all.get("t1/tenant").cloned()
        },
    );
    assert_eq!(status["routeCount"], 1, "{status}");
    let accepted = &status["conditions"][0];
    assert_eq!(
        (accepted["status"].as_str(), accepted["reason"].as_str()),
        (Some("True"), Some("PartiallyInvalid")),
        "{status}"
    );
    let message = accepted["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.routes[0].match.regex: counted repetitions nested to a product of 1002"),
        "{status}"
    );
}

#[test]
fn a_tenants_regex_re2_refuses_for_its_nested_counts_never_reaches_envoy_over_files() {
    nested_counts_never_reach_envoy(Mode::Files);
}

#[test]
fn a_tenants_regex_re2_refuses_for_its_nested_counts_never_reaches_envoy_over_xds() {
    nested_counts_never_reach_envoy(Mode::Xds);
}
