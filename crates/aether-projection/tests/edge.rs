//! What a real Envoy in front of the projection needs (issue 11): the
//! settings and forms under which every valid object is reachable.

use aether_projection::{ProjectionConfig, Projector, Snapshot, VirtualHostObject, parse_manifests, project};
use prost::Message;

fn proposal() -> Vec<VirtualHostObject> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/proposal.yaml");
    parse_manifests(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Both builders, which assemble the encoding each in its own way.
fn both_builders(objects: Vec<VirtualHostObject>) -> [Snapshot; 2] {
    let config = ProjectionConfig::default();
    [
        project(objects.clone(), &config).unwrap(),
        Projector::from_objects(objects, config).unwrap().snapshot(),
    ]
}

/// Clients put the port in the Host header (`Host: api.example.com:443`, as
/// curl does for a URL naming it). Envoy compares the whole header with the
/// domains, so without this setting such a request finds no virtual host
/// and gets a 404.
#[test]
fn hosts_match_whatever_port_the_host_header_carries() {
    for snapshot in both_builders(proposal()).into_iter().chain(both_builders(Vec::new())) {
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
