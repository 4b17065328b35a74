//! Builds a VirtualHostSpec in Rust and prints it in the three forms the
//! crate speaks: protobuf binary, the Kubernetes JSON form (manifests) and
//! canonical proto3 JSON; then reads each back.
//!
//! ```text
//! cargo run -p aether-api --features reflect --example three_forms
//! ```

use aether_api::config::v1::{
    HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostTls, route_match,
};
use aether_api::reflect::{from_proto_json, to_proto_json};
use prost::Message;

fn main() {
    let spec = VirtualHostSpec {
        hosts: vec!["api.example.com".to_owned()],
        routes: vec![HttpRoute {
            r#match: Some(RouteMatch {
                path: Some(route_match::Path::Prefix("/users".to_owned())),
                ..Default::default()
            }),
            backend: Some(RouteBackend {
                service: "svc-users".to_owned(),
                port: 8080,
            }),
            ..Default::default()
        }],
        tls: Some(VirtualHostTls {
            secret_name: "example-tls".to_owned(),
            provider: SecretProvider::Kubernetes.into(),
        }),
        ..Default::default()
    };

    let binary = spec.encode_to_vec();
    println!("binary: {} bytes", binary.len());
    assert_eq!(VirtualHostSpec::decode(binary.as_slice()).unwrap(), spec);

    // Short enum names (`KUBERNETES`), oneof members flattened.
    let kubernetes = serde_json::to_string(&spec).unwrap();
    println!("Kubernetes JSON: {kubernetes}");
    assert_eq!(serde_json::from_str::<VirtualHostSpec>(&kubernetes).unwrap(), spec);

    // Full enum names (`SECRET_PROVIDER_KUBERNETES`), as protobuf runtimes write.
    let proto3 = to_proto_json(&spec);
    println!("proto3 JSON: {proto3}");
    assert_eq!(from_proto_json::<VirtualHostSpec>(&proto3).unwrap(), spec);
}
