//! Which certificate each served host is terminated with: the edge's HTTPS
//! listener, as data. [`crate::listener`] turns it into Envoy's listener.
//!
//! Hosts are the ones the route configuration serves, after the host dedup:
//! a host an object lost to an older one is not in the loser's chain, so it
//! never brings the loser's secret along. Every served host has exactly one
//! owner, so it is in at most one chain, and a host never needs two
//! certificates. Two objects naming one secret share its chain.

use std::collections::{BTreeMap, BTreeSet};

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

/// One filter chain of the HTTPS listener: a secret and the hosts served
/// with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsChain {
    /// The certificate and key.
    pub secret: TlsSecret,
    /// The hosts (exact or `*.` wildcards) whose SNI selects this chain:
    /// every host the referencing objects serve, sorted.
    pub server_names: Vec<String>,
    /// The served objects that reference the secret, sorted.
    pub objects: Vec<ObjectKey>,
}

/// Collects the chains from the served objects: `(object, hosts it serves,
/// its secret)`, in any order. Returns the chains sorted by secret, and the
/// hosts served without TLS that a TLS wildcard would otherwise cover
/// (see [`Snapshot::plain_hosts_under_tls_wildcards`](crate::Snapshot)).
/// Called on every snapshot with every served object, so the objects
/// without TLS (most, often) cost a look at their hosts and nothing more.
pub(crate) fn chains<'a>(
    served: impl IntoIterator<Item = (&'a ObjectKey, &'a [String], Option<&'a TlsSecret>)>,
) -> (Vec<TlsChain>, Vec<String>) {
    let mut by_secret: BTreeMap<&TlsSecret, (BTreeSet<&String>, BTreeSet<&ObjectKey>)> = BTreeMap::new();
    let mut plain: Vec<&String> = Vec::new();
    for (key, hosts, secret) in served {
        match secret {
            Some(secret) => {
                let (names, objects) = by_secret.entry(secret).or_default();
                names.extend(hosts);
                objects.insert(key);
            }
            None => plain.extend(hosts),
        }
    }
    // `*.example.com` kept as `.example.com`: a host's covering wildcards are
    // then its own suffixes from each dot, looked up without building them.
    let tls_wildcard_suffixes: BTreeSet<&str> = by_secret
        .values()
        .flat_map(|(names, _)| names.iter())
        .filter_map(|name| name.strip_prefix('*'))
        .filter(|suffix| suffix.starts_with('.'))
        .collect();
    let mut uncovered: Vec<String> = if tls_wildcard_suffixes.is_empty() {
        Vec::new()
    } else {
        plain
            .into_iter()
            .filter(|host| covering_suffixes(host).any(|suffix| tls_wildcard_suffixes.contains(suffix)))
            .cloned()
            .collect()
    };
    uncovered.sort_unstable();
    let chains = by_secret
        .into_iter()
        .map(|(secret, (names, objects))| TlsChain {
            secret: secret.clone(),
            server_names: names.into_iter().cloned().collect(),
            objects: objects.into_iter().cloned().collect(),
        })
        .collect();
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
    fn objects_sharing_a_secret_share_a_chain_and_plain_hosts_under_a_tls_wildcard_are_listed() {
        let (a, b) = (secret("a"), secret("b"));
        let hosts = |list: &[&str]| list.iter().map(|h| h.to_string()).collect::<Vec<_>>();
        let one = hosts(&["one.example.com"]);
        let two = hosts(&["*.example.com", "two.example.net"]);
        let other = hosts(&["other.example.org"]);
        let plain = hosts(&["plain.example.com", "*.x.example.com", "plain.example.org"]);
        let keys = ["two", "one", "other", "plain"].map(|name| ObjectKey::new("default", name));
        let (chains, uncovered) = chains([
            (&keys[0], two.as_slice(), Some(&a)),
            (&keys[1], one.as_slice(), Some(&a)),
            (&keys[2], other.as_slice(), Some(&b)),
            (&keys[3], plain.as_slice(), None),
        ]);
        assert_eq!(chains.len(), 2);
        assert_eq!(
            chains[0].server_names,
            ["*.example.com", "one.example.com", "two.example.net"]
        );
        assert_eq!(
            chains[0].objects,
            [ObjectKey::new("default", "one"), ObjectKey::new("default", "two")]
        );
        assert_eq!(chains[1].server_names, ["other.example.org"]);
        assert_eq!(uncovered, ["*.x.example.com", "plain.example.com"]);
    }
}
