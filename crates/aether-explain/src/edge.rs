//! Which route configuration and which virtual host take a request: the
//! HTTPS listener's filter chain by SNI, then the virtual host by `Host`,
//! as Envoy chooses them.

use aether_api::ObjectKey;
use aether_projection::envoy_route::{RouteConfiguration, VirtualHost};
use aether_projection::{Snapshot, covering_wildcards};
use prost::Message;

use crate::explanation::{Outcome, TlsStep};
use crate::request::{Request, Scheme};

/// The route configuration that routes `request`: over HTTPS, that of the
/// filter chain its server name selects (every secret assumed present:
/// offline, none can be read), else the plain listener's.
pub(crate) fn route_configuration(
    snapshot: &Snapshot,
    request: &Request,
) -> Result<(RouteConfiguration, Option<TlsStep>), Box<Outcome>> {
    let undecodable = |e: prost::DecodeError| {
        Box::new(Outcome::Unpredictable {
            why: format!("the projected route configuration does not decode: {e}"),
        })
    };
    let host = match (&request.server_name, request.scheme) {
        (Some(name), Scheme::Https) => routed_host(name),
        _ => return Ok((snapshot.route_configuration().map_err(undecodable)?, None)),
    };
    let host = host.as_str();
    // Envoy's filter chain match: the name itself, then its covering
    // wildcards, most specific first. The names of plain hosts under a TLS
    // wildcard select a chain that closes the connection.
    let names = std::iter::once(host.to_owned()).chain(covering_wildcards(host));
    for name in names {
        if snapshot.plain_hosts_under_tls_wildcards.contains(&name) {
            return Err(Box::new(Outcome::HandshakeRefused {
                why: format!("`{name}` is served without TLS: the HTTPS listener refuses its name"),
            }));
        }
        let Some(chain) = snapshot
            .tls_chains
            .iter()
            .find(|chain| chain.server_names.contains(&name))
        else {
            continue;
        };
        let bytes = snapshot.chain_route_configuration(chain).ok_or_else(|| {
            Box::new(Outcome::Unpredictable {
                why: format!("the chain of {} has no route configuration", chain.object),
            })
        })?;
        let step = TlsStep {
            sni: host.to_owned(),
            chain: Some(chain.object.clone()),
            server_name: Some(name),
        };
        return Ok((RouteConfiguration::decode(&bytes[..]).map_err(undecodable)?, Some(step)));
    }
    Err(Box::new(Outcome::HandshakeRefused {
        why: format!("no object serves `{host}` with TLS: no certificate for it"),
    }))
}

/// The host as Envoy compares it with domains: lower case, the port cut off
/// (`ignore_port_in_host_matching`).
pub(crate) fn routed_host(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    let cut = match host.rfind(':') {
        // `[::1]:80`: a port only after the bracket.
        Some(colon) if !host[colon..].contains(']') && host[colon + 1..].bytes().all(|b| b.is_ascii_digit()) => colon,
        _ => host.len(),
    };
    host[..cut].to_owned()
}

/// The virtual host Envoy picks for `host`: the one naming it exactly, else
/// the most specific `*.` wildcard covering it, else `*`. With the domain
/// that matched.
pub(crate) fn virtual_host<'a>(config: &'a RouteConfiguration, host: &str) -> Option<(&'a VirtualHost, String)> {
    let names = std::iter::once(host.to_owned())
        .chain(covering_wildcards(host))
        .chain(std::iter::once("*".to_owned()));
    for name in names {
        if let Some(found) = config.virtual_hosts.iter().find(|vh| vh.domains.contains(&name)) {
            return Some((found, name));
        }
    }
    None
}

/// The object whose virtual host this is (named `namespace/name`).
pub(crate) fn object_of(virtual_host: &VirtualHost) -> Option<ObjectKey> {
    let (namespace, name) = virtual_host.name.split_once('/')?;
    Some(ObjectKey {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::routed_host;

    #[test]
    fn the_port_is_cut_and_the_case_lowered() {
        assert_eq!(routed_host("API.Example.com:8443"), "api.example.com");
        assert_eq!(routed_host("api.example.com"), "api.example.com");
        assert_eq!(routed_host("[::1]:80"), "[::1]");
        assert_eq!(routed_host("[::1]"), "[::1]");
    }
}
