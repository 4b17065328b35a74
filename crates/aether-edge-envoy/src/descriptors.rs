//! Envoy's own descriptors, for the canonical proto3 JSON form of the
//! resources the edge is given: the `RouteConfiguration`, the HTTPS
//! `Listener` (with the connection manager, TLS context and filters packed
//! into it), `Secret`s and the `DiscoveryResponse` files hold them in.
//!
//! envoy-types compiles its types from Envoy's protos and keeps the
//! descriptor set it used (`src/generated/types.bin`), but has no API for it.
//! `cargo xtask codegen` (generator `aether-envoy-route` in buf.gen.yaml)
//! writes the part of that set which those messages need to
//! `generated/descriptors/envoy_edge_v3.binpb`, from the envoy-types
//! version this crate builds against; its drift check says when an
//! envoy-types upgrade needs a regeneration.

use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, MessageDescriptor};

/// The full name of Envoy's route configuration message.
pub const ROUTE_CONFIGURATION: &str = "envoy.config.route.v3.RouteConfiguration";

/// The generated subset of envoy-types' descriptor set.
pub const ENVOY_EDGE_V3_DESCRIPTORS: &[u8] = include_bytes!("../generated/descriptors/envoy_edge_v3.binpb");

static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    DescriptorPool::decode(ENVOY_EDGE_V3_DESCRIPTORS).expect("the generated descriptor set decodes (tested)")
});

/// The descriptor pool holding the edge's resources and everything they use.
pub fn pool() -> &'static DescriptorPool {
    &POOL
}

/// The descriptor of `envoy.config.route.v3.RouteConfiguration`.
pub fn route_configuration() -> MessageDescriptor {
    POOL.get_message_by_name(ROUTE_CONFIGURATION)
        .expect("the generated descriptor set holds RouteConfiguration (tested)")
}

#[cfg(test)]
mod tests {
    use prost::Name;

    use super::*;

    #[test]
    fn the_generated_set_holds_the_edges_resources() {
        assert_eq!(route_configuration().full_name(), ROUTE_CONFIGURATION);
        let manager = crate::http_connection_manager(
            "aether-edge",
            crate::config_source(&crate::EdgeSource::Xds("xds".into()), ""),
        );
        let any = crate::pack(&manager);
        assert_eq!(any.type_url, envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager::type_url());
        let descriptor = pool()
            .get_message_by_name(any.type_url.trim_start_matches("type.googleapis.com/"))
            .expect("the connection manager's descriptor");
        prost_reflect::DynamicMessage::decode(descriptor, any.value.as_slice()).expect("it decodes");
    }
}
