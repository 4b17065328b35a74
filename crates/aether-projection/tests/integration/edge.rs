//! What a real Envoy in front of the projection needs: the
//! settings and forms under which every valid object is reachable.

use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::{ProjectionConfig, Projector, Snapshot, VirtualHostObject, project};
use aether_testing::objects::object;
use prost::Message;

/// One object of the proposal's shape: a host, three routes, TLS.
fn one_object() -> Vec<VirtualHostObject> {
    let object = object("default", "api")
        .hosts(["api.example.com"])
        .route_value(
            serde_json::json!({"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}}),
        )
        .route_value(serde_json::json!({"match": {"exact": "/healthz"}, "backend": {"service": "svc-health"}}))
        .route("/", "svc-web")
        .tls("example-tls");
    vec![object.build()]
}

/// The projection built at once and built one upsert at a time, which
/// assemble the encoding from different cached parts.
fn both_builders(objects: Vec<VirtualHostObject>) -> [Snapshot; 2] {
    let config = ProjectionConfig::default();
    let mut incremental = Projector::new(config.clone());
    for object in objects.clone() {
        incremental.upsert(object);
    }
    [project(objects, &config).unwrap(), incremental.snapshot()]
}

/// Clients put the port in the Host header (`Host: api.example.com:443`, as
/// curl does for a URL naming it). Envoy compares the whole header with the
/// domains, so without this setting such a request finds no virtual host
/// and gets a 404.
#[test]
fn hosts_match_whatever_port_the_host_header_carries() {
    for snapshot in both_builders(one_object()).into_iter().chain(both_builders(Vec::new())) {
        let config = snapshot.route_configuration().unwrap();
        assert!(
            config.ignore_port_in_host_matching,
            "ignore_port_in_host_matching is not set"
        );
        // Field 14 comes after the virtual hosts (2): the bytes, assembled
        // from cached parts, must still be prost's own encoding.
        assert_eq!(config.encode_to_vec(), snapshot.route_configuration_binary());
    }
}

/// Envoy, with the edge settings for untrusted traffic (`normalize_path`,
/// `merge_slashes`, `path_with_escaped_slashes_action:
/// UNESCAPE_AND_REDIRECT`), normalizes the request path before it matches
/// routes, and compares with the route's path as written: a route written
/// with escapes Envoy decodes could never match. The projection writes each
/// path in the form Envoy compares with (the cases and Envoy's measured
/// behaviour: `path_normal_form.rs`).
#[test]
fn route_paths_are_written_as_envoy_compares_request_paths() {
    let object: VirtualHostObject = serde_json::from_value(serde_json::json!({
        "namespace": "default", "name": "escapes",
        "spec": {"hosts": ["api.example.com"], "routes": [
            {"match": {"prefix": "/%7Euser"}, "backend": {"service": "tilde"}},
            {"match": {"prefix": "/%41BC"}, "backend": {"service": "letters"}},
            {"match": {"exact": "/a%2a"}, "backend": {"service": "reserved"}},
            {"match": {"exact": "/a/%2E%2E/b"}, "backend": {"service": "dots"}},
            {"match": {"prefix": "/a/%2E"}, "backend": {"service": "partial"}},
            {"match": {"prefix": "/users"}, "backend": {"service": "plain"}}
        ]}
    }))
    .unwrap();
    for snapshot in both_builders(vec![object]) {
        let config = snapshot.route_configuration().unwrap();
        let paths: Vec<PathSpecifier> = config.virtual_hosts[0]
            .routes
            .iter()
            .map(|route| route.r#match.clone().unwrap().path_specifier.unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                PathSpecifier::Prefix("/~user".into()),
                PathSpecifier::Prefix("/ABC".into()),
                // Escapes Envoy keeps are kept as written, hex case too.
                PathSpecifier::Path("/a%2a".into()),
                PathSpecifier::Path("/b".into()),
                // The prefix's last segment may go on (`/a/.b`): not a dot segment.
                PathSpecifier::Prefix("/a/.".into()),
                PathSpecifier::Prefix("/users".into()),
            ]
        );
    }
}
