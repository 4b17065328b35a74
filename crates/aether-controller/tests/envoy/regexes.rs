//! The RE2 guard against the real Envoy: Envoy refuses a whole route
//! configuration for one regex whose RE2 program is larger than 100
//! (shown here, at 100 and 101), and never refuses one of regexes the
//! guard accepts, however near the limit.

use std::path::Path;

use aether_e2e::edge::{PATIENCE, UPDATE_REJECTED, UPDATE_SUCCESS};
use aether_e2e::{Envoy, RouteSource};
use aether_projection::re2::testing::Expressions;
use aether_projection::re2::{ENVOY_MAX_PROGRAM_SIZE, check};
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
