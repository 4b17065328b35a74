//! The edge's HTTPS listener as envoy-types messages: the listener of a
//! snapshot's [`TlsChain`]s, with its certificates by SDS, running the
//! edge's one connection manager ([`http_connection_manager`], with
//! [`EdgeSource`] and [`config_source`] from `aether-edge-envoy`, the
//! settings the sample bootstraps share).
//!
//! The HTTPS listener (`aether-edge-https`):
//!
//! - a TLS inspector reads the client's SNI;
//! - one filter chain per object served with TLS whose secret is usable,
//!   named `namespace/name`, its `server_names` the object's hosts,
//!   terminating TLS with the secret (fetched by SDS, so a rotation reaches
//!   Envoy without touching the listener) and running the edge's connection
//!   manager on a route configuration of the object's own
//!   ([`TlsChain::route_configuration_name`],
//!   [`Snapshot::chain_route_configuration`](crate::Snapshot::chain_route_configuration)):
//!   its virtual host, as the plain listener routes it, and a 421 for any
//!   other host. One object's edit is thus one small configuration for
//!   Envoy to rebuild, and one it would refuse costs that object alone;
//!   over files each is `chains/NAMESPACE.NAME/routes.json`
//!   ([`chain_routes_dir`]);
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
    Address, DataSource, SocketAddress, TransportSocket, data_source::Specifier, socket_address::PortSpecifier,
    transport_socket,
};
use envoy_types::pb::envoy::config::listener::v3::{
    Filter, FilterChain, FilterChainMatch, Listener, ListenerFilter, filter, listener_filter,
};
use envoy_types::pb::envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector;
use envoy_types::pb::envoy::extensions::filters::network::direct_response::v3::Config as DirectResponse;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, SdsSecretConfig, Secret, TlsCertificate, secret,
};
use envoy_types::pb::google::protobuf::UInt32Value;

use aether_api::config::v1::SecretProvider;
pub use aether_edge_envoy::{
    EdgeSource, STAT_PREFIX, config_source, http_connection_manager, pack, watched_config_source,
};

use crate::tls::{TlsChain, TlsSecret};

/// The HTTPS listener's name (what Envoy's LDS and `/config_dump` show).
pub const HTTPS_LISTENER: &str = "aether-edge-https";
/// The port the HTTPS listener binds unless told another.
pub const HTTPS_PORT: u16 = 8443;
/// The filter chain that closes connections for an SNI not to be served.
pub const REFUSED_CHAIN: &str = "refused";
/// The directory, under the controller's output directory, of the SDS
/// files of the secrets (local mode, files path).
pub const SECRETS_DIR: &str = "secrets";
/// The directory, under the controller's output directory, of the chains'
/// route configurations (files path): a directory per chain
/// ([`chain_routes_dir`]), each holding its [`CHAIN_ROUTES_FILE`].
pub const CHAINS_DIR: &str = "chains";
/// The file of a chain's route configuration, in its directory.
pub const CHAIN_ROUTES_FILE: &str = "routes.json";

/// The directory of `chain`'s route configuration, relative to the output
/// directory: `chains/NAMESPACE.NAME` (a namespace is a DNS label, without
/// dots, so the first dot separates it from the name). A directory per
/// chain, watched by Envoy alone (see [`watched_config_source`]).
pub fn chain_routes_dir(chain: &TlsChain) -> String {
    format!("{CHAINS_DIR}/{}.{}", chain.object.namespace, chain.object.name)
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
    let mut filter_chains = Vec::new();
    let mut refused: Vec<String> = plain_hosts.to_vec();
    for chain in chains {
        let sds_config = match chain.secret.provider {
            SecretProvider::Kubernetes => secret_file(&chain.secret).map(|file| config_source(&config.source, &file)),
            // Over gRPC from the mesh's SDS cluster, as from the controller's
            // xDS server (no file: the secret is asked for by its name).
            SecretProvider::AwsSecretsManager => config
                .mesh_sds_cluster
                .as_ref()
                .map(|cluster| config_source(&EdgeSource::Xds(cluster.clone()), "")),
            SecretProvider::Unspecified => None,
        };
        let Some(sds_config) = sds_config.filter(|_| usable(&chain.secret)) else {
            refused.extend(chain.server_names.iter().cloned());
            continue;
        };
        let name = sds_secret_name(&chain.secret);
        let routes = chain.route_configuration_name(&config.route_configuration_name);
        let connection_manager = Filter {
            name: "envoy.filters.network.http_connection_manager".to_owned(),
            config_type: Some(filter::ConfigType::TypedConfig(pack(&http_connection_manager(
                &routes,
                watched_config_source(&config.source, &chain_routes_dir(chain), CHAIN_ROUTES_FILE),
            )))),
        };
        let tls = DownstreamTlsContext {
            common_tls_context: Some(CommonTlsContext {
                // HTTP/2 when the client offers it; the manager's codec is AUTO.
                alpn_protocols: vec!["h2".to_owned(), "http/1.1".to_owned()],
                tls_certificate_sds_secret_configs: vec![SdsSecretConfig {
                    name,
                    sds_config: Some(sds_config),
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        filter_chains.push(FilterChain {
            name: chain.name(),
            filter_chain_match: Some(FilterChainMatch {
                server_names: chain.server_names.clone(),
                ..Default::default()
            }),
            transport_socket: Some(TransportSocket {
                name: "envoy.transport_sockets.tls".to_owned(),
                config_type: Some(transport_socket::ConfigType::TypedConfig(pack(&tls))),
            }),
            filters: vec![connection_manager],
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
