//! `aetherctl convert --to gateway-api` on every example and valid fixture:
//! each VirtualHost becomes HTTPRoutes that Gateway API's types read back,
//! covering its hosts and routes; each note names a field the object has;
//! invalid objects are not converted.

use std::path::{Path, PathBuf};

use gateway_api::httproutes::HttpRoute;
use serde_json::Value;

use crate::common::{self, aetherctl};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The VirtualHosts of `file` as JSON, as `aetherctl validate` reads them.
fn virtual_hosts(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap()
        .into_iter()
        .filter(|document| document["kind"] == "VirtualHost")
        .collect()
}

/// Whether `path` (`spec.routes[0].match.prefix`) names something `object` has.
fn has_path(object: &Value, path: &str) -> bool {
    let mut at = object;
    for part in path.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        at = &at[name];
        if let Some(index) = index {
            at = &at[index];
        }
        if at.is_null() {
            return false;
        }
    }
    true
}

#[test]
fn every_valid_example_and_fixture_converts_to_httproutes_that_cover_it() {
    let mut files = yaml_files(&root().join("crates/aether-api/tests/fixtures/valid"));
    files.extend(
        yaml_files(&root().join("examples"))
            .into_iter()
            .filter(|file| !file.ends_with("invalid.yaml")),
    );
    let mut converted = 0;
    for file in files {
        let run = aetherctl(
            &[
                "convert",
                "--to",
                "gateway-api",
                "--gateway",
                "edge/public",
                "-o",
                "json",
            ]
            .map(String::from)
            .into_iter()
            .chain([file.display().to_string()])
            .collect::<Vec<_>>(),
        );
        assert_eq!(run.code, 0, "{}: {run:?}", file.display());
        let list: Value = serde_json::from_str(&run.stdout).unwrap();
        let routes: Vec<HttpRoute> = serde_json::from_value(list["items"].clone()).unwrap();
        for object in virtual_hosts(&file) {
            let name = object["metadata"]["name"].as_str().unwrap();
            let mine: Vec<&HttpRoute> = routes
                .iter()
                .filter(|route| {
                    // `NAME`, then `NAME-02`, `NAME-03`... for more routes than one holds.
                    route.metadata.name.as_deref().is_some_and(|n| {
                        n == name
                            || n.strip_prefix(name)
                                .and_then(|rest| rest.strip_prefix('-'))
                                .is_some_and(|rest| rest.len() == 2 && rest.bytes().all(|b| b.is_ascii_digit()))
                    })
                })
                .collect();
            assert!(!mine.is_empty(), "{}: no HTTPRoute for {name}", file.display());
            let hosts: Vec<String> = serde_json::from_value(object["spec"]["hosts"].clone()).unwrap();
            let rules: usize = mine.iter().map(|route| route.spec.rules.as_ref().unwrap().len()).sum();
            assert_eq!(
                rules,
                object["spec"]["routes"].as_array().unwrap().len(),
                "{}",
                file.display()
            );
            for route in &mine {
                assert_eq!(route.spec.hostnames.as_ref(), Some(&hosts), "{}", file.display());
                let parent = &route.spec.parent_refs.as_ref().unwrap()[0];
                assert_eq!(
                    (parent.namespace.as_deref(), parent.name.as_str()),
                    (Some("edge"), "public")
                );
                assert!(route.spec.rules.as_ref().unwrap().len() <= aether_gateway_api::MAX_RULES);
            }
            converted += 1;
        }
        // Each note names the object and a field it has (a `needs` note:
        // the object holding the field it lacks).
        for line in run.stderr.lines() {
            let (_, rest) = line.split_once(": document ").unwrap_or_else(|| panic!("{line}"));
            let mut parts = rest.splitn(4, ": ");
            let (_document, key, path) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            let kind = parts.next().unwrap().split(':').next().unwrap();
            assert!(["differs", "dropped", "needs"].contains(&kind), "{line}");
            let path = if kind == "needs" {
                path.rsplit_once('.').map_or(path, |(holder, _)| holder)
            } else {
                path
            };
            let name = key.split_once('/').unwrap().1;
            let object = virtual_hosts(&file)
                .into_iter()
                .find(|object| object["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("{line}"));
            assert!(has_path(&object, path), "{}: {line}", file.display());
        }
    }
    assert!(converted >= 35, "{converted}");
}

#[test]
fn invalid_objects_are_not_converted_and_the_rest_are() {
    let run = aetherctl(
        &[
            "convert",
            "--to",
            "gateway-api",
            "examples/invalid.yaml",
            "examples/proposal.yaml",
        ]
        .map(|arg| {
            if arg.starts_with("examples/") {
                root().join(arg).display().to_string()
            } else {
                arg.to_owned()
            }
        }),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.lines().any(|line| line.starts_with("invalid: ")),
        "{}",
        run.stderr
    );
    let routes: Vec<HttpRoute> = serde_saphyr::from_multiple(&run.stdout).unwrap();
    let names: Vec<_> = routes
        .iter()
        .map(|route| route.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["api"]);
}

#[test]
fn a_gateway_reference_is_namespace_name_and_section() {
    let run = aetherctl(&["convert", "--to", "gateway-api", "--gateway", "edge/", "x.yaml"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("expected NAME, NAMESPACE/NAME"), "{}", run.stderr);
}

#[test]
fn route_actions_become_filters_weighted_backend_refs_and_timeouts() {
    let file = root().join("crates/aether-api/tests/fixtures/valid/actions_example.yaml");
    let run = aetherctl(&[
        "convert",
        "--to",
        "gateway-api",
        "--gateway",
        "edge/public",
        "-o",
        "json",
        &file.display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    let rules = &list["items"][0]["spec"]["rules"];
    // The weighted split, a weight always written (Gateway API's absent
    // weight is 1); the second backend has no port, which HTTPRoute needs.
    assert_eq!(
        rules[0]["backendRefs"],
        serde_json::json!([
            {"name": "svc-api", "port": 8080, "weight": 90},
            {"name": "svc-api-canary", "weight": 10},
        ])
    );
    assert_eq!(rules[0]["timeouts"], serde_json::json!({"request": "15s"}));
    assert_eq!(
        rules[0]["filters"],
        serde_json::json!([
            {"type": "RequestHeaderModifier", "requestHeaderModifier": {
                "set": [{"name": "x-team", "value": "a"}],
                "add": [{"name": "x-via", "value": "edge"}],
                "remove": ["x-debug"]}},
            {"type": "URLRewrite", "urlRewrite": {
                "hostname": "api.internal",
                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"}}},
            {"type": "ResponseHeaderModifier", "responseHeaderModifier": {
                "set": [{"name": "x-served-by", "value": "edge"}],
                "remove": ["server"]}},
        ])
    );
    // The redirect: a filter alone, no backendRefs.
    assert_eq!(rules[1].get("backendRefs"), None);
    assert_eq!(
        rules[1]["filters"],
        serde_json::json!([
            {"type": "RequestRedirect", "requestRedirect": {
                "scheme": "https", "hostname": "new.example.com", "port": 443, "statusCode": 301,
                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/new"}}},
        ])
    );
    // What does not carry over exactly, by path.
    for expected in [
        "spec.routes[0].backends[1].port: needs:",
        "spec.routes[0].rewrite.prefix: differs:",
        "spec.routes[0].retries: dropped: HTTPRoute's retry is experimental",
        "spec.routes[1].redirect.prefix: differs:",
    ] {
        assert!(run.stderr.contains(expected), "{expected} not in:\n{}", run.stderr);
    }
}

/// A manifest of the VirtualHost `name` with `routes` exact routes on `host`.
fn many_routes(name: &str, host: &str, routes: usize) -> String {
    let routes: String = (0..routes)
        .map(|index| format!("    - match: {{exact: /r{index}}}\n      backend: {{service: web, port: 80}}\n"))
        .collect();
    format!(
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  \
         hosts: [{host}]\n  routes:\n{routes}"
    )
}

/// `web` with 17 routes splits in two; its second HTTPRoute is not named
/// `web-02` when a VirtualHost `web-02` is converted in the same run (they
/// were both `web-02`, and `kubectl apply` kept one), and a name near the
/// limit stays a valid Kubernetes name; every rename is a `differs` line.
#[test]
fn split_names_never_collide_and_stay_valid_kubernetes_names() {
    let dir = tempfile::tempdir().unwrap();
    let long = "w".repeat(252);
    let files = [
        common::write(dir.path(), "a.yaml", many_routes("web", "web.example.com", 17)),
        common::write(dir.path(), "b.yaml", many_routes("web-02", "web-02.example.com", 1)),
        common::write(dir.path(), "c.yaml", many_routes(&long, "long.example.com", 17)),
    ];
    let mut args = [
        "convert",
        "--to",
        "gateway-api",
        "--gateway",
        "edge/public",
        "-o",
        "json",
    ]
    .map(String::from)
    .to_vec();
    args.extend(files.iter().map(|file| file.display().to_string()));
    let run = aetherctl(&args);
    assert_eq!(run.code, 0, "{run:?}");
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    let routes: Vec<HttpRoute> = serde_json::from_value(list["items"].clone()).unwrap();
    let mut names: Vec<String> = routes
        .iter()
        .map(|route| route.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names[..3], ["web", "web-02-2", "web-02"]);
    assert!(names.iter().all(|name| name.len() <= 253), "{names:?}");
    assert_eq!(names[4], format!("{}-02", "w".repeat(250)));

    let count = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), count, "two HTTPRoutes of one name");
    let long_renamed = format!("{}-02", "w".repeat(250));
    for renamed in ["web-02-2", long_renamed.as_str()] {
        assert!(
            run.stderr
                .lines()
                .any(|line| line.contains(": spec.routes: differs: HTTPRoute ") && line.contains(renamed)),
            "{renamed}: {}",
            run.stderr
        );
    }
}
