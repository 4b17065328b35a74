//! Paths written with `%XX` escapes stay reachable behind the bootstrap's
//! path normalization: a client sending the route's path as written, or
//! its decoded form, reaches the route.

use std::collections::BTreeSet;

use aether_api::config::v1::route_match::Path;
use aether_e2e::{Edge, Mode};
use aether_specgen::Rng;

use crate::edge;
use crate::properties::GENERATOR;

/// Where `path` for `host` ends up, following one redirect as a client
/// would (Envoy redirects paths with escaped slashes to their unescaped
/// form): `Some(cluster)`, or `None` for a 404.
fn reached(edge: &Edge, host: &str, path: &str) -> Option<String> {
    let response = edge.envoy.get(host, path);
    let path = match response.status {
        301 | 302 | 307 | 308 => {
            let location = response
                .header("location")
                .expect("a redirect has a Location")
                .to_owned();
            // `http://host/path` or `/path`.
            match location.split_once("://") {
                Some((_, rest)) => rest.find('/').map_or("/".to_owned(), |at| rest[at..].to_owned()),
                None => location,
            }
        }
        _ => path.to_owned(),
    };
    edge.cluster(host, &path)
}

const ESCAPED: &str = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: escaped, namespace: default}
spec:
  hosts: [escaped.test]
  routes:
    - match: {prefix: /%7Euser}
      backend: {service: svc-tilde}
    - match: {exact: /%41BC}
      backend: {service: svc-abc}
    - match: {prefix: /star%2a}
      backend: {service: svc-star}
    - match: {exact: /space%20here}
      backend: {service: svc-space}
";

#[test]
fn escaped_routes_are_reached_as_written_and_decoded() {
    let clusters: BTreeSet<String> = ["svc-tilde", "svc-abc", "svc-star", "svc-space"]
        .into_iter()
        .map(String::from)
        .collect();
    let edge = edge(Mode::Files, &[("escaped.yaml", ESCAPED)], &clusters);
    for (path, cluster) in [
        ("/%7Euser/x", "svc-tilde"),
        ("/%7euser", "svc-tilde"),
        ("/~user/y", "svc-tilde"),
        ("/%41BC", "svc-abc"),
        ("/ABC", "svc-abc"),
        ("/star%2a/z", "svc-star"),
        ("/space%20here", "svc-space"),
    ] {
        assert_eq!(reached(&edge, "escaped.test", path).as_deref(), Some(cluster), "{path}");
    }
}

/// Valid paths (the exact and prefix paths of valid specs drawn from the
/// rules model), each the only route of its own host: asked for as
/// written, every one is reached. Two spellings are left out, as
/// docs/envoy.md ("Route paths") says: Envoy answers 400 to any request with `%00`,
/// and routes an escaped `%2E%2E;` segment once un-normalized (the route
/// is reached by the normalized request instead).
#[test]
fn every_valid_path_is_reachable_as_written() {
    const OBJECTS: usize = 64;
    let mut rng = Rng::new(0x0e5c_a9e5);
    let mut routes: Vec<(bool, String)> = Vec::new();
    while routes.len() < OBJECTS {
        let spec = aether_testing::drawn::valid(&GENERATOR, &mut rng);
        for route in &spec.routes {
            let (exact, path) = match route.r#match.as_ref().and_then(|m| m.path.as_ref()) {
                Some(Path::Exact(path)) => (true, path),
                Some(Path::Prefix(path)) => (false, path),
                _ => continue,
            };
            let lower = path.to_ascii_lowercase();
            let reachable_as_spelled = !lower.contains("%00") && !lower.contains("%2e;") && !lower.contains("%2e%2e;");
            if reachable_as_spelled && routes.len() < OBJECTS && !routes.contains(&(exact, path.clone())) {
                routes.push((exact, path.clone()));
            }
        }
    }
    let text: String = routes
        .iter()
        .enumerate()
        .map(|(index, (exact, path))| {
            let kind = if *exact { "exact" } else { "prefix" };
            let object = serde_json::json!({
                "apiVersion": "config.aether.io/v1",
                "kind": "VirtualHost",
                "metadata": {"name": format!("p{index}"), "namespace": "default"},
                "spec": {"hosts": [format!("p{index}.test")], "routes": [{"match": {kind: path}, "backend": {"service": "svc-hit"}}]}
            });
            format!("---\n{object}\n")
        })
        .collect();
    let clusters: BTreeSet<String> = ["svc-hit".to_owned()].into();
    let edge = edge(Mode::Xds, &[("paths.yaml", &text)], &clusters);
    edge.wait_for(
        &format!("p{}.test", OBJECTS - 1),
        &routes[OBJECTS - 1].1,
        Some("svc-hit"),
    );
    let unreachable: Vec<String> = routes
        .iter()
        .enumerate()
        .filter(|(index, (_, path))| reached(&edge, &format!("p{index}.test"), path).is_none())
        .map(|(_, (exact, path))| format!("{} {path}", if *exact { "exact" } else { "prefix" }))
        .collect();
    assert!(
        unreachable.is_empty(),
        "unreachable routes:\n{}",
        unreachable.join("\n")
    );
}
