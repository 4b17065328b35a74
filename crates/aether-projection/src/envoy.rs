//! One object's part of the Envoy configuration: its virtual host, its
//! routes, and the cluster each route sends to.

use aether_api::config::v1::{HttpRoute, VirtualHostSpec, route_match::Path};
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::google::protobuf::{Duration, UInt32Value};
use prost::Message;

use crate::config::RetryConfig;
use crate::path::{MatchKind, edge_normal_form};

/// The Envoy cluster for a backend: the service's name for its default port
/// (`port` 0), `service:port` for a given port.
///
/// The mapping is one-to-one: a service name is a DNS-1123 subdomain, which
/// holds no `:`, so no per-port name can equal a service name or another
/// pair's name. The control plane that makes the clusters (CDS) must name
/// them with this same function.
///
/// ```
/// use aether_projection::cluster_name;
///
/// assert_eq!(cluster_name("svc-users", 0), "svc-users");
/// assert_eq!(cluster_name("svc-users", 8080), "svc-users:8080");
/// ```
pub fn cluster_name(service: &str, port: u32) -> String {
    if port == 0 {
        service.to_owned()
    } else {
        format!("{service}:{port}")
    }
}

/// The Envoy retry policy of [`RetryConfig`], or none if it asks for no
/// retries.
pub(crate) fn retry_policy(config: &RetryConfig) -> Option<route::RetryPolicy> {
    if config.num_retries == 0 {
        return None;
    }
    Some(route::RetryPolicy {
        retry_on: config.retry_on.clone(),
        num_retries: Some(UInt32Value {
            value: config.num_retries,
        }),
        per_try_timeout: config.per_try_timeout.map(|timeout| Duration {
            // Saturates rather than wraps for absurd timeouts.
            seconds: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(timeout.subsec_nanos()).unwrap_or(0),
        }),
        ..Default::default()
    })
}

/// `RouteConfiguration.virtual_hosts` and `VirtualHost.routes`: the field
/// numbers the encoding below writes.
const VIRTUAL_HOSTS_FIELD: u32 = 2;
const ROUTES_FIELD: u32 = 3;

/// A valid object's routes, in the spec's order, as the encoded `routes`
/// fields of an Envoy `VirtualHost`.
///
/// Why bytes rather than the prost structs: an envoy-types `Route` is over
/// 2 KiB in memory (every optional message of Envoy's route is inline),
/// about twenty times its encoding, and an xDS server sends the encoding
/// anyway. Each route is still built as Envoy's own `Route` and encoded by
/// prost; only the result is kept.
pub(crate) fn encoded_routes(spec: &VirtualHostSpec, retry: Option<&route::RetryPolicy>) -> Vec<u8> {
    let mut out = Vec::new();
    for route in spec.routes.iter().filter_map(|r| self::route(r, retry)) {
        prost::encoding::message::encode(ROUTES_FIELD, &route, &mut out);
    }
    out
}

/// Appends one entry of `RouteConfiguration.virtual_hosts`: the virtual host
/// `name` with `domains` and the routes of [`encoded_routes`].
///
/// The result is byte for byte what prost writes for the whole message:
/// prost writes fields in field-number order, and `name` (1) and `domains`
/// (2) come before `routes` (3), the last field set.
pub(crate) fn encode_virtual_host(name: &str, domains: &[String], routes: &[u8], out: &mut Vec<u8>) {
    let head = route::VirtualHost {
        name: name.to_owned(),
        domains: domains.to_vec(),
        ..Default::default()
    };
    let len = head.encoded_len() + routes.len();
    prost::encoding::encode_key(VIRTUAL_HOSTS_FIELD, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(len as u64, out);
    head.encode_raw(out);
    out.extend_from_slice(routes);
}

/// The encoded `RouteConfiguration` up to its virtual hosts: its `name`
/// (field 1), to which [`encode_virtual_host`] appends the entries of
/// `virtual_hosts` (2), and after them [`encode_route_configuration_tail`].
pub(crate) fn encode_route_configuration_head(name: &str, out: &mut Vec<u8>) {
    route::RouteConfiguration {
        name: name.to_owned(),
        ..Default::default()
    }
    .encode_raw(out);
}

/// Appends the settings of the `RouteConfiguration` whose field numbers
/// come after `virtual_hosts` (2), so that head, virtual hosts and tail
/// together are byte for byte what prost writes for the whole message
/// (prost writes fields in field-number order).
///
/// `ignore_port_in_host_matching` (14): clients send the port in the Host
/// header (`Host: api.example.com:443`, as curl does for a URL naming it),
/// and Envoy compares the whole header with `domains` unless told to drop
/// the port first; such a request would otherwise find no virtual host and
/// get a 404. A host in a spec never holds a port (the proto rejects it), so
/// nothing is lost.
pub(crate) fn encode_route_configuration_tail(out: &mut Vec<u8>) {
    route::RouteConfiguration {
        ignore_port_in_host_matching: true,
        ..Default::default()
    }
    .encode_raw(out);
}

/// `None` for a route without match or backend, which validation has
/// already refused, and for a route matching on what this projection does
/// not translate yet (a `regex` path, methods, headers, query parameters):
/// served without those parts, it would take requests it must not.
fn route(http_route: &HttpRoute, retry: Option<&route::RetryPolicy>) -> Option<route::Route> {
    let route_match = http_route.r#match.as_ref()?;
    if !(route_match.methods.is_empty() && route_match.headers.is_empty() && route_match.query_params.is_empty()) {
        return None;
    }
    let path = route_match.path.as_ref()?;
    let backend = http_route.backend.as_ref()?;
    // In the form Envoy compares normalized request paths with, or a path
    // written otherwise (`/%7Euser`) could never match.
    let path_specifier = match path {
        Path::Prefix(prefix) => route::route_match::PathSpecifier::Prefix(edge_normal_form(prefix, MatchKind::Prefix)),
        Path::Exact(exact) => route::route_match::PathSpecifier::Path(edge_normal_form(exact, MatchKind::Exact)),
        Path::Regex(_) => return None,
    };
    Some(route::Route {
        r#match: Some(route::RouteMatch {
            path_specifier: Some(path_specifier),
            ..Default::default()
        }),
        action: Some(route::route::Action::Route(route::RouteAction {
            cluster_specifier: Some(route::route_action::ClusterSpecifier::Cluster(cluster_name(
                &backend.service,
                backend.port,
            ))),
            retry_policy: retry.cloned(),
            ..Default::default()
        })),
        ..Default::default()
    })
}
