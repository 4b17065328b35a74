//! One object's part of the Envoy configuration: its virtual host, its
//! routes, and the cluster each route sends to.

use aether_api::config::v1::{HttpRoute, VirtualHostSpec};
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::google::protobuf::UInt32Value;
use prost::Message;
use prost::bytes::Bytes;

use crate::actions;
use crate::config::RetryConfig;
use crate::matching;
use aether_api::validate::Violation;

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
        per_try_timeout: config.per_try_timeout.map(actions::proto_duration),
        ..Default::default()
    })
}

/// The listed indices of `spec.routes` that the edge serves, in the order
/// it tries them: the routes it encodes, one for one with the
/// `routes` of the object's Envoy virtual host. What tells a route of that
/// virtual host back to the route written (`aetherctl explain`).
///
/// ```
/// use aether_projection::served_routes;
///
/// let spec = serde_json::from_value(serde_json::json!({
///     "hosts": ["a.example.com"],
///     "routeOrder": "SPECIFICITY",
///     "routes": [
///         {"match": {"prefix": "/"}, "backend": {"service": "web"}},
///         {"match": {"regex": "/[a-z]{200}"}, "backend": {"service": "refused"}},
///         {"match": {"exact": "/a"}, "backend": {"service": "a"}}
///     ]
/// })).unwrap();
/// assert_eq!(served_routes(&spec), [2, 0]);
/// ```
pub fn served_routes(spec: &VirtualHostSpec) -> Vec<usize> {
    matching::route_order(spec)
        .into_iter()
        .filter(|&index| matches!(route(index, &spec.routes[index], None), Ok(Some(_))))
        .collect()
}

/// `RouteConfiguration.virtual_hosts` and `VirtualHost.routes`: the field
/// numbers the encoding below writes.
const VIRTUAL_HOSTS_FIELD: u32 = 2;
const ROUTES_FIELD: u32 = 3;

/// A valid object's routes, in the order the edge tries them
/// ([`matching::route_order`]: as listed, or by specificity), as the
/// encoded `routes` fields of an Envoy `VirtualHost`; and the problems of
/// the routes left out, those holding a regular expression or an action
/// Envoy would refuse (`aether_edge_limits::route_problems`; Envoy refuses
/// a whole route configuration for one such).
///
/// Why bytes rather than the prost structs: an envoy-types `Route` is over
/// 2 KiB in memory (every optional message of Envoy's route is inline),
/// about twenty times its encoding, and an xDS server sends the encoding
/// anyway. Each route is still built as Envoy's own `Route` and encoded by
/// prost; only the result is kept.
pub(crate) fn encoded_routes(spec: &VirtualHostSpec, retry: Option<&route::RetryPolicy>) -> (Vec<u8>, Vec<Violation>) {
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    for index in matching::route_order(spec) {
        match self::route(index, &spec.routes[index], retry) {
            Ok(Some(route)) => prost::encoding::message::encode(ROUTES_FIELD, &route, &mut out),
            Ok(None) => {}
            Err(problems) => left_out.push((index, problems)),
        }
    }
    // In listed order, whatever the order of the routes.
    left_out.sort_by_key(|(index, _)| *index);
    (out, left_out.into_iter().flat_map(|(_, problems)| problems).collect())
}

/// The virtual host `name` with `domains` and the routes of
/// [`encoded_routes`], encoded as one entry of
/// `RouteConfiguration.virtual_hosts` (field key, length, then the
/// `VirtualHost` message): one buffer, shared by every snapshot it is part
/// of (see [`RouteTable`](crate::RouteTable)), whose routes are its last
/// `routes.len()` bytes.
///
/// The message is byte for byte what prost writes for it: prost writes
/// fields in field-number order, and `name` (1) and `domains` (2) come
/// before `routes` (3), the last field set.
pub(crate) fn virtual_host_entry(name: &str, domains: &[String], routes: &[u8]) -> Bytes {
    let head = route::VirtualHost {
        name: name.to_owned(),
        domains: domains.to_vec(),
        ..Default::default()
    };
    let message_len = head.encoded_len() + routes.len();
    let mut out = Vec::with_capacity(1 + prost::encoding::encoded_len_varint(message_len as u64) + message_len);
    prost::encoding::encode_key(
        VIRTUAL_HOSTS_FIELD,
        prost::encoding::WireType::LengthDelimited,
        &mut out,
    );
    prost::encoding::encode_varint(message_len as u64, &mut out);
    head.encode_raw(&mut out);
    out.extend_from_slice(routes);
    Bytes::from(out)
}

/// The name of the virtual host that answers a TLS chain's requests for
/// hosts other than its object's.
pub const MISDIRECTED_VIRTUAL_HOST: &str = "misdirected";
/// `421 Misdirected Request` (RFC 9110, 15.5.20): the client sent the
/// request on a connection for another host, and retries on one of its own.
pub const MISDIRECTED_STATUS: u32 = 421;

/// The encoded `VirtualHost` [`MISDIRECTED_VIRTUAL_HOST`]: `hosts` (each
/// more specific than the wildcard of the chain that covers it) and then
/// `*`, every request answered [`MISDIRECTED_STATUS`].
pub(crate) fn misdirected_virtual_host(hosts: &[String]) -> Vec<u8> {
    let mut domains = hosts.to_vec();
    domains.push("*".to_owned());
    route::VirtualHost {
        name: MISDIRECTED_VIRTUAL_HOST.to_owned(),
        domains,
        routes: vec![route::Route {
            r#match: Some(route::RouteMatch {
                path_specifier: Some(route::route_match::PathSpecifier::Prefix("/".to_owned())),
                ..Default::default()
            }),
            action: Some(route::route::Action::DirectResponse(route::DirectResponseAction {
                status: MISDIRECTED_STATUS,
                ..Default::default()
            })),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec()
}

/// The virtual host `name` with `domains` that redirects every plain-HTTP
/// request to HTTPS (`require_tls: ALL`: Envoy answers before any route),
/// as one entry of `RouteConfiguration.virtual_hosts`.
pub(crate) fn redirect_virtual_host_entry(name: &str, domains: &[String]) -> Bytes {
    let virtual_host = route::VirtualHost {
        name: name.to_owned(),
        domains: domains.to_vec(),
        require_tls: route::virtual_host::TlsRequirementType::All as i32,
        ..Default::default()
    };
    let mut out = Vec::new();
    append_virtual_host(&virtual_host.encode_to_vec(), &mut out);
    Bytes::from(out)
}

/// Appends an encoded `VirtualHost` message as one entry of
/// `RouteConfiguration.virtual_hosts`.
pub(crate) fn append_virtual_host(virtual_host: &[u8], out: &mut Vec<u8>) {
    prost::encoding::encode_key(VIRTUAL_HOSTS_FIELD, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(virtual_host.len() as u64, out);
    out.extend_from_slice(virtual_host);
}

/// The encoded `RouteConfiguration` up to its virtual hosts: its `name`
/// (field 1), after which come the entries of `virtual_hosts` (2, from
/// [`virtual_host_entry`]), then [`encode_route_configuration_tail`].
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

/// Every `(service, port)` a route sends to: its backend, or each of its
/// weighted backends (weight 0 too: the cluster is named, so the control
/// plane making clusters must know it).
pub(crate) fn route_backends(http_route: &HttpRoute) -> impl Iterator<Item = (&str, u32)> {
    http_route
        .backend
        .iter()
        .map(|backend| (backend.service.as_str(), backend.port))
        .chain(
            http_route
                .backends
                .iter()
                .map(|backend| (backend.service.as_str(), backend.port)),
        )
}

/// `Ok(None)` only for a route without match or action, which validation
/// has already refused; `Err` for one Envoy would refuse.
fn route(
    index: usize,
    http_route: &HttpRoute,
    retry: Option<&route::RetryPolicy>,
) -> Result<Option<route::Route>, Vec<Violation>> {
    // The one decision the webhook asks too (`edge_problems`), so that it
    // denies exactly what is left out here.
    let problems = aether_edge_limits::route_problems(index, http_route);
    if !problems.is_empty() {
        return Err(problems);
    }
    let Some(actions) = actions::actions(http_route, retry) else {
        return Ok(None);
    };
    let Some(route_match) = http_route.r#match.as_ref().and_then(matching::envoy_match) else {
        return Ok(None);
    };
    Ok(Some(route::Route {
        r#match: Some(route_match),
        action: Some(actions.action),
        request_headers_to_add: actions.request_headers_to_add,
        request_headers_to_remove: actions.request_headers_to_remove,
        response_headers_to_add: actions.response_headers_to_add,
        response_headers_to_remove: actions.response_headers_to_remove,
        ..Default::default()
    }))
}
