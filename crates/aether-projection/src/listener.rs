//! The edge's Envoy listeners as envoy-types messages: the one
//! `HttpConnectionManager` every listener of the edge runs (the plain one in
//! the sample bootstraps, the HTTPS one here), and the HTTPS listener of a
//! snapshot's [`TlsChain`]s, with its certificates by SDS.
//!
//! The HTTPS listener (`aether-edge-https`):
//!
//! - a TLS inspector reads the client's SNI;
//! - one filter chain per usable secret, named by its SDS name
//!   ([`sds_secret_name`]), its `server_names` the hosts served with it,
//!   terminating TLS with the secret (fetched by SDS, so a rotation reaches
//!   Envoy without touching the listener) and running the same connection
//!   manager on the same route configuration as the plain listener: a
//!   request over TLS is routed exactly as over plain HTTP;
//! - one chain, `refused`, that closes the connection without a handshake,
//!   for the SNI of hosts that must not be served over TLS although a TLS
//!   wildcard would cover them: hosts without `tls`, and hosts whose secret
//!   is not usable (missing or malformed: their chain is left out, and their
//!   SNI must not fall to another object's wildcard certificate);
//! - the same closing chain as the default, for every other SNI (and for
//!   clients sending none). The listener thus always has a chain, which
//!   Envoy requires, even when no secret is usable.
//!
//! Every host is in at most one chain (the host dedup gives each host one
//! owner), so Envoy never sees two chains with the same match, which it
//! would reject with the whole listener.

use envoy_types::pb::envoy::config::core::v3::{
    Address, ApiConfigSource, ApiVersion, ConfigSource, DataSource, GrpcService, Http2ProtocolOptions,
    HttpProtocolOptions, PathConfigSource, SocketAddress, TransportSocket, api_config_source::ApiType,
    config_source::ConfigSourceSpecifier, data_source::Specifier, grpc_service, http_protocol_options,
    socket_address::PortSpecifier, transport_socket,
};
use envoy_types::pb::envoy::config::listener::v3::{
    Filter, FilterChain, FilterChainMatch, Listener, ListenerFilter, filter, listener_filter,
};
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector;
use envoy_types::pb::envoy::extensions::filters::network::direct_response::v3::Config as DirectResponse;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager, http_filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, SdsSecretConfig, Secret, TlsCertificate, secret,
};
use envoy_types::pb::google::protobuf::{Any, BoolValue, Duration, UInt32Value};
use prost::{Message, Name};

use aether_api::config::v1::SecretProvider;

use crate::snapshot::TlsSecret;
use crate::tls::TlsChain;

/// The HTTPS listener's name (what Envoy's LDS and `/config_dump` show).
pub const HTTPS_LISTENER: &str = "aether-edge-https";
/// The port the HTTPS listener binds unless told another.
pub const HTTPS_PORT: u16 = 8443;
/// The connection managers' `stat_prefix`: Envoy's statistics of the edge
/// are `http.edge.*`, over TLS or not.
pub const STAT_PREFIX: &str = "edge";
/// The filter chain that closes connections for an SNI not to be served.
pub const REFUSED_CHAIN: &str = "refused";
/// The directory, under the controller's output directory, of the SDS
/// files of the secrets (local mode, files path).
pub const SECRETS_DIR: &str = "secrets";

/// Where the edge's Envoy takes a resource the controller serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeSource {
    /// Files the controller writes into this directory, as Envoy sees it
    /// (an absolute path), each watched by its path.
    Files(String),
    /// The controller's xDS server, through the Envoy cluster so named
    /// (HTTP/2, static in the bootstrap).
    Xds(String),
}

/// How the HTTPS listener is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerConfig {
    /// The listener's name; default [`HTTPS_LISTENER`].
    pub name: String,
    /// The address it binds; default `0.0.0.0`.
    pub address: String,
    /// Its port; default [`HTTPS_PORT`].
    pub port: u16,
    /// The route configuration its connection manager asks for (the
    /// projection's `route_configuration_name`).
    pub route_configuration_name: String,
    /// Where Envoy takes the route configuration and the `KUBERNETES`
    /// secrets from.
    pub source: EdgeSource,
    /// The Envoy cluster of the mesh's SDS, which serves the
    /// `AWS_SECRETS_MANAGER` secrets by their names. `None`: the mesh serves
    /// none to this edge, and those chains are left out.
    pub mesh_sds_cluster: Option<String>,
}

impl ListenerConfig {
    /// The defaults, with routes and secrets from `source`.
    pub fn new(source: EdgeSource) -> Self {
        Self {
            name: HTTPS_LISTENER.to_owned(),
            address: "0.0.0.0".to_owned(),
            port: HTTPS_PORT,
            route_configuration_name: crate::ProjectionConfig::default().route_configuration_name,
            source,
            mesh_sds_cluster: None,
        }
    }
}

/// The name Envoy asks SDS for: `kubernetes://NAMESPACE/NAME` for a
/// Kubernetes Secret (the form Istio's gateways use), the secret's own name
/// for `AWS_SECRETS_MANAGER` (the name the mesh's SDS serves it under).
pub fn sds_secret_name(secret: &TlsSecret) -> String {
    match (&secret.provider, &secret.namespace) {
        (SecretProvider::Kubernetes, Some(namespace)) => format!("kubernetes://{namespace}/{}", secret.secret_name),
        _ => secret.secret_name.clone(),
    }
}

/// The SDS file of a `KUBERNETES` secret, relative to the output directory:
/// `secrets/NAMESPACE.NAME.json` (a namespace is a DNS label, without dots,
/// so the first dot separates it from the name). `None` for other providers,
/// which the controller does not serve.
pub fn secret_file(secret: &TlsSecret) -> Option<String> {
    match (&secret.provider, &secret.namespace) {
        (SecretProvider::Kubernetes, Some(namespace)) => {
            Some(format!("{SECRETS_DIR}/{namespace}.{}.json", secret.secret_name))
        }
        _ => None,
    }
}

/// Envoy's `Secret` of a certificate chain and its key (PEM), named as the
/// listener asks for it.
pub fn sds_secret(secret: &TlsSecret, certificate_chain: &[u8], private_key: &[u8]) -> Secret {
    let inline = |bytes: &[u8]| DataSource {
        specifier: Some(Specifier::InlineBytes(bytes.to_vec())),
        ..Default::default()
    };
    Secret {
        name: sds_secret_name(secret),
        r#type: Some(secret::Type::TlsCertificate(TlsCertificate {
            certificate_chain: Some(inline(certificate_chain)),
            private_key: Some(inline(private_key)),
            ..Default::default()
        })),
    }
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
    };
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(specifier),
        ..Default::default()
    }
}

fn grpc(cluster: &str) -> ConfigSourceSpecifier {
    ConfigSourceSpecifier::ApiConfigSource(ApiConfigSource {
        api_type: ApiType::Grpc as i32,
        transport_api_version: ApiVersion::V3 as i32,
        grpc_services: vec![GrpcService {
            target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
                cluster_name: cluster.to_owned(),
                ..Default::default()
            })),
            ..Default::default()
        }],
        ..Default::default()
    })
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

/// The HTTPS listener of `chains` (a snapshot's `tls_chains`), leaving out
/// the chains whose secret is not `usable` (missing, malformed, or of a
/// provider nobody serves to this edge), whose hosts are refused instead,
/// as are `plain_hosts` (the snapshot's `plain_hosts_under_tls_wildcards`).
/// An `AWS_SECRETS_MANAGER` chain is usable only with a mesh SDS cluster.
pub fn https_listener(
    chains: &[TlsChain],
    plain_hosts: &[String],
    usable: impl Fn(&TlsSecret) -> bool,
    config: &ListenerConfig,
) -> Listener {
    let connection_manager = Filter {
        name: "envoy.filters.network.http_connection_manager".to_owned(),
        config_type: Some(filter::ConfigType::TypedConfig(pack(&http_connection_manager(
            &config.route_configuration_name,
            config_source(&config.source, "routes.json"),
        )))),
    };
    let mut filter_chains = Vec::new();
    let mut refused: Vec<String> = plain_hosts.to_vec();
    for chain in chains {
        let sds_config = match chain.secret.provider {
            SecretProvider::Kubernetes => secret_file(&chain.secret).map(|file| config_source(&config.source, &file)),
            SecretProvider::AwsSecretsManager => config.mesh_sds_cluster.as_deref().map(|cluster| ConfigSource {
                resource_api_version: ApiVersion::V3 as i32,
                config_source_specifier: Some(grpc(cluster)),
                ..Default::default()
            }),
            SecretProvider::Unspecified => None,
        };
        let Some(sds_config) = sds_config.filter(|_| usable(&chain.secret)) else {
            refused.extend(chain.server_names.iter().cloned());
            continue;
        };
        let name = sds_secret_name(&chain.secret);
        let tls = DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                // HTTP/2 when the client offers it; the manager's codec is AUTO.
                alpn_protocols: vec!["h2".to_owned(), "http/1.1".to_owned()],
                tls_certificate_sds_secret_configs: vec![SdsSecretConfig {
                    name: name.clone(),
                    sds_config: Some(sds_config),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        filter_chains.push(FilterChain {
            name,
            filter_chain_match: Some(FilterChainMatch {
                server_names: chain.server_names.clone(),
                ..Default::default()
            }),
            transport_socket: Some(TransportSocket {
                name: "envoy.transport_sockets.tls".to_owned(),
                config_type: Some(transport_socket::ConfigType::TypedConfig(pack(&tls))),
            }),
            filters: vec![connection_manager.clone()],
            ..Default::default()
        });
    }
    if !refused.is_empty() {
        refused.sort_unstable();
        filter_chains.push(FilterChain {
            filter_chain_match: Some(FilterChainMatch {
                server_names: refused,
                ..Default::default()
            }),
            ..closing_chain(REFUSED_CHAIN)
        });
    }
    Listener {
        name: config.name.clone(),
        address: Some(Address {
            address: Some(
                envoy_types::pb::envoy::config::core::v3::address::Address::SocketAddress(SocketAddress {
                    address: config.address.clone(),
                    port_specifier: Some(PortSpecifier::PortValue(u32::from(config.port))),
                    ..Default::default()
                }),
            ),
        }),
        per_connection_buffer_limit_bytes: Some(UInt32Value { value: 32_768 }),
        listener_filters: vec![ListenerFilter {
            name: "envoy.filters.listener.tls_inspector".to_owned(),
            config_type: Some(listener_filter::ConfigType::TypedConfig(pack(&TlsInspector::default()))),
            ..Default::default()
        }],
        filter_chains,
        default_filter_chain: Some(closing_chain("no-certificate")),
        ..Default::default()
    }
}

/// A chain that answers nothing and closes the connection (no TLS: the
/// client's handshake fails).
fn closing_chain(name: &str) -> FilterChain {
    FilterChain {
        name: name.to_owned(),
        filters: vec![Filter {
            name: "envoy.filters.network.direct_response".to_owned(),
            config_type: Some(filter::ConfigType::TypedConfig(pack(&DirectResponse::default()))),
        }],
        ..Default::default()
    }
}
