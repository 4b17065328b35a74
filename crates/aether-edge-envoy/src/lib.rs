//! The edge's Envoy settings as envoy-types messages, written once: the
//! `HttpConnectionManager` every listener of the edge runs (the plain one
//! of the sample bootstraps, the HTTPS one the projection builds), where
//! Envoy takes the controller's resources from ([`EdgeSource`],
//! [`config_source`]), and Envoy's own [`descriptors`] for their canonical
//! JSON. The projection (its HTTPS listener) and xtask (the sample
//! bootstraps) both build on it.

#![deny(missing_docs)]

pub mod descriptors;

use envoy_types::pb::envoy::config::core::v3::{
    AggregatedConfigSource, ApiConfigSource, ApiVersion, ConfigSource, GrpcService, Http2ProtocolOptions,
    HttpProtocolOptions, PathConfigSource, WatchedDirectory, api_config_source::ApiType,
    config_source::ConfigSourceSpecifier, grpc_service, http_protocol_options,
};
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager, http_filter,
};
use envoy_types::pb::google::protobuf::{Any, BoolValue, Duration, UInt32Value};
use prost::{Message, Name};

/// The connection managers' `stat_prefix`: Envoy's statistics of the edge
/// are `http.edge.*`, over TLS or not.
pub const STAT_PREFIX: &str = "edge";

/// Where the edge's Envoy takes a resource the controller serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeSource {
    /// Files the controller writes into this directory, as Envoy sees it
    /// (an absolute path), each watched by its path.
    Files(String),
    /// An xDS server through the Envoy cluster so named (HTTP/2, static in
    /// the bootstrap), on a stream per subscription: the mesh's SDS.
    Xds(String),
    /// The bootstrap's aggregated stream (`dynamic_resources.ads_config`,
    /// [`ads_config`]): the controller's xDS server, every type on one
    /// delta stream.
    Ads,
}

/// The `ConfigSource` of `file` (relative to the output directory) from
/// `source`: that file's path, or the controller's xDS server.
pub fn config_source(source: &EdgeSource, file: &str) -> ConfigSource {
    let specifier = match source {
        EdgeSource::Files(dir) => ConfigSourceSpecifier::PathConfigSource(PathConfigSource {
            path: format!("{}/{file}", dir.trim_end_matches('/')),
            ..Default::default()
        }),
        EdgeSource::Xds(cluster) => grpc(cluster),
        EdgeSource::Ads => ConfigSourceSpecifier::Ads(AggregatedConfigSource {}),
    };
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(specifier),
        ..Default::default()
    }
}

fn grpc(cluster: &str) -> ConfigSourceSpecifier {
    ConfigSourceSpecifier::ApiConfigSource(api_config_source(ApiType::Grpc, cluster))
}

/// The bootstrap's `dynamic_resources.ads_config` for [`EdgeSource::Ads`]:
/// delta xDS over one stream through `cluster`, the node sent in the
/// first request only (it is tens of KB, and the stream's identity).
pub fn ads_config(cluster: &str) -> ApiConfigSource {
    ApiConfigSource {
        set_node_on_first_message_only: true,
        ..api_config_source(ApiType::DeltaGrpc, cluster)
    }
}

fn api_config_source(api_type: ApiType, cluster: &str) -> ApiConfigSource {
    ApiConfigSource {
        api_type: api_type as i32,
        transport_api_version: ApiVersion::V3 as i32,
        grpc_services: vec![GrpcService {
            target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
                cluster_name: cluster.to_owned(),
                ..Default::default()
            })),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// [`config_source`] of `dir/file` for a resource whose file is alone in
/// its directory `dir` (relative to the output directory): Envoy then
/// watches that directory (`watched_directory`), so the rename that
/// replaces the file wakes only this subscription. Envoy's watch of a file
/// by its path wakes on every rename in its directory, and one watched
/// directory shared by many files makes every subscription reread its own
/// on any rename there.
pub fn watched_config_source(source: &EdgeSource, dir: &str, file: &str) -> ConfigSource {
    let mut config = config_source(source, &format!("{dir}/{file}"));
    if let (EdgeSource::Files(root), Some(ConfigSourceSpecifier::PathConfigSource(path))) =
        (source, config.config_source_specifier.as_mut())
    {
        path.watched_directory = Some(WatchedDirectory {
            path: format!("{}/{dir}", root.trim_end_matches('/')),
            ..Default::default()
        });
    }
    config
}

/// A message packed into Envoy's `Any`.
pub fn pack<M: Message + Name>(message: &M) -> Any {
    Any {
        type_url: M::type_url(),
        value: message.encode_to_vec(),
    }
}

fn seconds(seconds: i64) -> Option<Duration> {
    Some(Duration { seconds, nanos: 0 })
}

/// The edge's connection manager, on the route configuration
/// `route_configuration_name` from `rds_source`: Envoy's settings for an
/// edge in front of untrusted clients (its "Configuring Envoy as an edge
/// proxy" page), the one place they are written. The sample bootstraps'
/// plain listener and the HTTPS listener both run it.
pub fn http_connection_manager(route_configuration_name: &str, rds_source: ConfigSource) -> HttpConnectionManager {
    use http_connection_manager::{CodecType, PathWithEscapedSlashesAction, RouteSpecifier};
    HttpConnectionManager {
        stat_prefix: STAT_PREFIX.to_owned(),
        codec_type: CodecType::Auto as i32,
        // The client's address is the connection's, not a header's.
        use_remote_address: Some(BoolValue { value: true }),
        // Route on the path the backend will see: normalized (RFC 3986),
        // `//` merged, `%2F`/`%5C` un-escaped and the client redirected.
        // The projection emits route paths in the form this produces.
        normalize_path: Some(BoolValue { value: true }),
        merge_slashes: true,
        path_with_escaped_slashes_action: PathWithEscapedSlashesAction::UnescapeAndRedirect as i32,
        common_http_protocol_options: Some(HttpProtocolOptions {
            idle_timeout: seconds(3600),
            headers_with_underscores_action: http_protocol_options::HeadersWithUnderscoresAction::RejectRequest as i32,
            ..Default::default()
        }),
        http2_protocol_options: Some(Http2ProtocolOptions {
            max_concurrent_streams: Some(UInt32Value { value: 100 }),
            initial_stream_window_size: Some(UInt32Value { value: 65_536 }),
            initial_connection_window_size: Some(UInt32Value { value: 1_048_576 }),
            ..Default::default()
        }),
        stream_idle_timeout: seconds(300),
        request_timeout: seconds(300),
        request_headers_timeout: seconds(10),
        route_specifier: Some(RouteSpecifier::Rds(Rds {
            route_config_name: route_configuration_name.to_owned(),
            config_source: Some(rds_source),
        })),
        http_filters: vec![HttpFilter {
            name: "envoy.filters.http.router".to_owned(),
            config_type: Some(http_filter::ConfigType::TypedConfig(pack(&Router::default()))),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregated_source_names_the_bootstraps_delta_stream() {
        let source = config_source(&EdgeSource::Ads, "routes.json");
        assert_eq!(source.resource_api_version, ApiVersion::V3 as i32);
        assert_eq!(
            source.config_source_specifier,
            Some(ConfigSourceSpecifier::Ads(AggregatedConfigSource {}))
        );
        let ads = ads_config("aether-controller-xds");
        assert_eq!(ads.api_type, ApiType::DeltaGrpc as i32);
        assert_eq!(ads.transport_api_version, ApiVersion::V3 as i32);
        assert!(ads.set_node_on_first_message_only);
        let Some(grpc_service::TargetSpecifier::EnvoyGrpc(target)) = &ads.grpc_services[0].target_specifier else {
            panic!("an Envoy gRPC target: {ads:?}");
        };
        assert_eq!(target.cluster_name, "aether-controller-xds");
        // The per-subscription source stays state of the world.
        let Some(ConfigSourceSpecifier::ApiConfigSource(api)) =
            config_source(&EdgeSource::Xds("mesh-sds".into()), "").config_source_specifier
        else {
            panic!("an API config source");
        };
        assert_eq!(api.api_type, ApiType::Grpc as i32);
        assert!(!api.set_node_on_first_message_only);
    }
}
