//! Which certificate each served host is terminated with: the edge's HTTPS
//! listener, as data. [`crate::listener`] turns it into Envoy's listener.
//!
//! Hosts are the ones the route configuration serves, after the host dedup:
//! a host an object lost to an older one is not in the loser's chain, so it
//! never brings the loser's secret along. Every served host has exactly one
//! owner, so it is in at most one chain, and a host never needs two
//! certificates. Each object with TLS has a chain of its own, even when
//! objects share a secret.

use std::collections::HashMap;

use aether_api::config::v1::SecretProvider;
use serde::Serialize;

use crate::input::VirtualHostObject;
use aether_api::ObjectKey;

/// A TLS secret the edge must load.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecret {
    /// Where the secret is stored.
    pub provider: SecretProvider,
    /// The namespace a `KUBERNETES` secret is read from (the VirtualHost's);
    /// absent for providers outside the cluster, whose names are global.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The secret's name.
    pub secret_name: String,
}

impl TlsSecret {
    /// The secret a (valid) object terminates TLS with, if any.
    pub fn of(object: &VirtualHostObject) -> Option<Self> {
        object.spec.tls.as_ref().map(|tls| {
            // Validation lets only defined providers through.
            let provider = SecretProvider::try_from(tls.provider).unwrap_or(SecretProvider::Unspecified);
            TlsSecret {
                provider,
                namespace: (provider == SecretProvider::Kubernetes).then(|| object.namespace.clone()),
                secret_name: tls.secret_name.clone(),
            }
        })
    }
}

/// One filter chain of the HTTPS listener: one served object, the hosts it
/// serves and the secret it terminates them with. A chain per object, not
/// per secret, so that each chain routes on a route configuration of its
/// own object alone ([`TlsChain::route_configuration_name`]): an edit of
/// one object is then one small resource for Envoy to rebuild, whatever
/// the size of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsChain {
    /// The served object.
    pub object: ObjectKey,
    /// The certificate and key (objects naming one secret each name it).
    pub secret: TlsSecret,
    /// The hosts (exact or `*.` wildcards) whose SNI selects this chain:
    /// every host the object serves, sorted.
    pub server_names: Vec<String>,
    /// The hosts of other objects that a wildcard of this chain covers,
    /// sorted. A client may reuse a connection made for one host for
    /// another its certificate covers (HTTP/2 connection coalescing): such
    /// a request on this chain must not fall to the wildcard's routes but
    /// be answered `421 Misdirected Request`, so that the client opens a
    /// connection of that host's own.
    pub misdirected: Vec<String>,
}

impl TlsChain {
    /// The name of the chain's filter chain: its object's `namespace/name`.
    pub fn name(&self) -> String {
        self.object.to_string()
    }

    /// The route configuration the chain routes on, named after the edge's
    /// (`base`, the projection's `route_configuration_name`) and the
    /// object: `aether-edge/NAMESPACE/NAME`.
    pub fn route_configuration_name(&self, base: &str) -> String {
        format!("{base}/{}", self.object)
    }
}

/// Collects the chains from the served objects: `(object, hosts it serves,
/// its secret)`, in any order. Returns the chains sorted by object, and the
/// hosts served without TLS that a TLS wildcard would otherwise cover
/// (see [`Snapshot::plain_hosts_under_tls_wildcards`](crate::Snapshot)).
/// Called on every snapshot with every served object, so the objects
/// without TLS (most, often) cost a look at their hosts and nothing more.
pub(crate) fn chains<'a>(
    served: impl IntoIterator<Item = (&'a ObjectKey, &'a [String], Option<&'a TlsSecret>)>,
) -> (Vec<TlsChain>, Vec<String>) {
    let served: Vec<(&ObjectKey, &[String], Option<&TlsSecret>)> = served.into_iter().collect();
    let mut chains: Vec<TlsChain> = served
        .iter()
        .filter_map(|(key, hosts, secret)| {
            secret.map(|secret| {
                let mut server_names = hosts.to_vec();
                server_names.sort_unstable();
                TlsChain {
                    object: (*key).clone(),
                    secret: secret.clone(),
                    server_names,
                    misdirected: Vec::new(),
                }
            })
        })
        .collect();
    chains.sort_unstable_by(|a, b| a.object.cmp(&b.object));
    // `*.example.com` kept as `.example.com` → its chain: a host's covering
    // wildcards are then its own suffixes from each dot, looked up without
    // building them. Each host has one owner, so a wildcard one chain.
    let wildcard_chains: HashMap<&str, usize> = chains
        .iter()
        .enumerate()
        .flat_map(|(at, chain)| chain.server_names.iter().map(move |name| (name, at)))
        .filter_map(|(name, at)| {
            name.strip_prefix('*')
                .filter(|suffix| suffix.starts_with('.'))
                .map(|suffix| (suffix, at))
        })
        .collect();
    let mut uncovered: Vec<String> = Vec::new();
    if !wildcard_chains.is_empty() {
        let mut misdirected: Vec<(usize, &String)> = Vec::new();
        for (key, hosts, secret) in &served {
            for host in *hosts {
                let mut covered = false;
                for suffix in covering_suffixes(host) {
                    if let Some(&at) = wildcard_chains.get(suffix) {
                        covered = true;
                        if chains[at].object != **key {
                            misdirected.push((at, host));
                        }
                    }
                }
                if covered && secret.is_none() {
                    uncovered.push(host.clone());
                }
            }
        }
        for (at, host) in misdirected {
            chains[at].misdirected.push(host.clone());
        }
        for chain in &mut chains {
            chain.misdirected.sort_unstable();
        }
    }
    uncovered.sort_unstable();
    (chains, uncovered)
}

/// [`covering_wildcards`] without their `*`: `.b.example.com`,
/// `.example.com`, `.com` for `a.b.example.com`, borrowed from it.
fn covering_suffixes(host: &str) -> impl Iterator<Item = &str> + '_ {
    let wildcard = host.starts_with("*.");
    host.match_indices('.')
        .filter(move |(dot, _)| !(wildcard && *dot == 1))
        .map(move |(dot, _)| &host[dot..])
}

/// The wildcards that Envoy would match `host` against when no more
/// specific server name matches, most specific first: for
/// `a.b.example.com` (or `*.b.example.com`), `*.b.example.com` (not for the
/// wildcard itself), `*.example.com`, `*.com`. Envoy's filter chain match
/// tries them in this order, as its route matching does for domains.
pub fn covering_wildcards(host: &str) -> impl Iterator<Item = String> + '_ {
    let wildcard = host.starts_with("*.");
    host.match_indices('.')
        .map(move |(dot, _)| format!("*{}", &host[dot..]))
        .filter(move |candidate| !(wildcard && candidate == host))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aether_api::config::v1::SecretProvider;

    fn secret(name: &str) -> TlsSecret {
        TlsSecret {
            provider: SecretProvider::Kubernetes,
            namespace: Some("default".into()),
            secret_name: name.into(),
        }
    }

    #[test]
    fn covering_suffixes_are_the_covering_wildcards_without_their_star() {
        for host in [
            "a.b.example.com",
            "*.b.example.com",
            "*.com",
            "localhost",
            "a..b",
            ".x",
            "*.",
        ] {
            let wildcards: Vec<String> = covering_wildcards(host).collect();
            let suffixes: Vec<String> = covering_suffixes(host).map(|suffix| format!("*{suffix}")).collect();
            assert_eq!(suffixes, wildcards, "{host}");
        }
    }

    #[test]
    fn covering_wildcards_are_every_parent_suffix_most_specific_first() {
        let all: Vec<String> = covering_wildcards("a.b.example.com").collect();
        assert_eq!(all, ["*.b.example.com", "*.example.com", "*.com"]);
        let all: Vec<String> = covering_wildcards("*.b.example.com").collect();
        assert_eq!(all, ["*.example.com", "*.com"]);
        assert_eq!(covering_wildcards("localhost").count(), 0);
    }

    #[test]
    fn each_object_has_its_chain_and_a_wildcard_chain_misdirects_the_hosts_of_others_it_covers() {
        let (a, b) = (secret("a"), secret("b"));
        let hosts = |list: &[&str]| list.iter().map(|h| h.to_string()).collect::<Vec<_>>();
        let one = hosts(&["one.example.com"]);
        let two = hosts(&["two.example.net", "*.example.com", "x.example.com"]);
        let other = hosts(&["other.example.org"]);
        let plain = hosts(&["plain.example.com", "*.x.example.com", "plain.example.org"]);
        let keys = ["two", "one", "other", "plain"].map(|name| ObjectKey::new("default", name));
        let (chains, uncovered) = chains([
            (&keys[0], two.as_slice(), Some(&a)),
            (&keys[1], one.as_slice(), Some(&a)),
            (&keys[2], other.as_slice(), Some(&b)),
            (&keys[3], plain.as_slice(), None),
        ]);
        let objects: Vec<&ObjectKey> = chains.iter().map(|chain| &chain.object).collect();
        assert_eq!(objects, [&keys[1], &keys[2], &keys[0]]);
        assert_eq!(chains[0].server_names, ["one.example.com"]);
        assert_eq!(chains[0].secret, a);
        assert_eq!(chains[1].server_names, ["other.example.org"]);
        assert_eq!(
            chains[2].server_names,
            ["*.example.com", "two.example.net", "x.example.com"]
        );
        assert_eq!(chains[2].secret, a);
        assert_eq!(chains[2].name(), "default/two");
        assert_eq!(chains[2].route_configuration_name("edge"), "edge/default/two");
        // Its own x.example.com is not misdirected; the others' hosts under
        // *.example.com are, TLS or not.
        assert_eq!(
            chains[2].misdirected,
            ["*.x.example.com", "one.example.com", "plain.example.com"]
        );
        assert!(chains[0].misdirected.is_empty() && chains[1].misdirected.is_empty());
        assert_eq!(uncovered, ["*.x.example.com", "plain.example.com"]);
    }
}
