//! The HTTPS listener and the SDS secrets its chains name, as Envoy's
//! messages, made from a snapshot and the secrets' resolutions: what
//! [`crate::outputs`] renders into `listeners.json` and `secrets/`, and
//! what the xDS server sends over LDS and SDS.
//!
//! Over files, the listener's chains take the routes from `routes.json`
//! and each certificate from its SDS file, by path; over xDS, the same
//! listener takes both from the controller's xDS server. Only ready
//! secrets have an SDS resource, so Envoy never reads a certificate it
//! would reject.

use std::sync::Arc;

use aether_projection::listener::{EdgeSource, ListenerConfig, https_listener, sds_secret, secret_file};
use aether_projection::{Snapshot, TlsChain, TlsSecret};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;

use crate::outputs::memo::Memo;
use crate::tls::EdgeTls;

/// The HTTPS listener of `snapshot`, routes and secrets from `source`.
pub fn listener(snapshot: &Snapshot, tls: &EdgeTls, source: EdgeSource, route_configuration_name: &str) -> Listener {
    Inputs::of(snapshot, tls, source, route_configuration_name).listener()
}

/// The listener as Envoy reads it from `listeners.json`.
pub fn files_listener(snapshot: &Snapshot, tls: &EdgeTls, route_configuration_name: &str) -> Listener {
    listener(snapshot, tls, files_source(tls), route_configuration_name)
}

/// The listener as the xDS server sends it.
pub fn xds_listener(snapshot: &Snapshot, tls: &EdgeTls, route_configuration_name: &str) -> Listener {
    listener(snapshot, tls, xds_source(), route_configuration_name)
}

/// Where `listeners.json`'s listener takes its routes and secrets.
pub fn files_source(tls: &EdgeTls) -> EdgeSource {
    EdgeSource::Files(tls.settings.envoy_dir.clone())
}

/// Where the xDS server's listener takes its routes and secrets: the
/// aggregated stream it came on (the bootstrap's `ads_config`).
pub fn xds_source() -> EdgeSource {
    EdgeSource::Ads
}

/// The route configuration of `chain`, as Envoy gets it over files and
/// xDS: [`Snapshot::chain_route_configuration`], rewritten by the
/// [`ChainRewrite`] installed, if any.
pub fn chain_route_configuration(snapshot: &Snapshot, chain: &TlsChain) -> Option<prost::bytes::Bytes> {
    let configuration = snapshot.chain_route_configuration(chain)?;
    Some(match CHAIN_REWRITE.get() {
        Some(rewrite) => rewrite.rewrite(chain, configuration),
        None => configuration,
    })
}

/// Rewrites chain route configurations as they are made, for files and xDS
/// alike: how the real-Envoy suite has Envoy refuse one past every guard
/// (the binary installs one for its test-only flags; nothing else does).
pub trait ChainRewrite: Send + Sync {
    /// What Envoy is given for `chain`, made as `configuration`.
    fn rewrite(&self, chain: &TlsChain, configuration: prost::bytes::Bytes) -> prost::bytes::Bytes;
}

static CHAIN_REWRITE: std::sync::OnceLock<Box<dyn ChainRewrite>> = std::sync::OnceLock::new();

/// Installs `rewrite` for the rest of the process, before the first pass;
/// `false` when one was installed already (it stays).
pub fn install_chain_rewrite(rewrite: Box<dyn ChainRewrite>) -> bool {
    CHAIN_REWRITE.set(rewrite).is_ok()
}

/// The last listener made, kept as what was made of it (its file, its xDS
/// resource) with what it was made from: a pass whose TLS chains, usable
/// secrets and settings are the last pass's takes it from here instead of
/// building and rendering it again. At 50,000 objects with TLS that was
/// most of a pass that changed no route. Clones share the memo.
#[derive(Debug, Clone)]
pub struct ListenerMemo<T>(Memo<Inputs, T>);

impl<T> Default for ListenerMemo<T> {
    fn default() -> Self {
        Self(Memo::default())
    }
}

impl<T: Clone> ListenerMemo<T> {
    /// `make` of the listener of `snapshot` (see [`listener`]), or what it
    /// made last when the listener would be the same.
    pub fn get<E>(
        &self,
        snapshot: &Snapshot,
        tls: &EdgeTls,
        source: EdgeSource,
        route_configuration_name: &str,
        make: impl FnOnce(&Listener) -> Result<T, E>,
    ) -> Result<T, E> {
        let inputs = Inputs::of(snapshot, tls, source, route_configuration_name);
        self.0.get(inputs, Inputs::same_as, |inputs| make(&inputs.listener()))
    }
}

/// What the listener is made from.
#[derive(Debug)]
struct Inputs {
    chains: Arc<[TlsChain]>,
    plain_hosts: Arc<[String]>,
    /// Whether each secret the snapshot names is usable, in secret order:
    /// all the listener reads of the secrets' resolutions (per secret, not
    /// per chain: 50,000 chains share a thousand secrets).
    usable: Vec<(TlsSecret, bool)>,
    config: ListenerConfig,
}

impl Inputs {
    fn of(snapshot: &Snapshot, tls: &EdgeTls, source: EdgeSource, route_configuration_name: &str) -> Self {
        Self {
            chains: Arc::clone(&snapshot.tls_chains),
            plain_hosts: Arc::clone(&snapshot.plain_hosts_under_tls_wildcards),
            usable: {
                // The secrets the snapshot names: one no chain names
                // changes nothing.
                let mut usable: Vec<(TlsSecret, bool)> = snapshot
                    .tls_secrets
                    .iter()
                    .map(|secret| (secret.clone(), tls.resolutions.usable(secret)))
                    .collect();
                usable.sort();
                usable.dedup();
                usable
            },
            config: tls.settings.listener(source, route_configuration_name),
        }
    }

    /// The lists are compared by address first: the projector hands the
    /// same list on while no change can alter it.
    fn same_as(&self, other: &Inputs) -> bool {
        (Arc::ptr_eq(&self.chains, &other.chains) || self.chains == other.chains)
            && (Arc::ptr_eq(&self.plain_hosts, &other.plain_hosts) || self.plain_hosts == other.plain_hosts)
            && self.usable == other.usable
            && self.config == other.config
    }

    /// The listener, from these inputs alone.
    fn listener(&self) -> Listener {
        // In secret order: found by binary search.
        let usable = |secret: &TlsSecret| {
            self.usable
                .binary_search_by(|(looked_up, _)| looked_up.cmp(secret))
                .is_ok_and(|at| self.usable[at].1)
        };
        https_listener(&self.chains, &self.plain_hosts, usable, &self.config)
    }
}

/// The SDS resource of every ready `KUBERNETES` secret, with its file
/// name (relative to the output directory), sorted by file.
pub fn secrets(tls: &EdgeTls) -> Vec<(String, Secret)> {
    let mut secrets: Vec<(String, Secret)> = tls
        .resolutions
        .ready()
        .filter_map(|(secret, certificate)| {
            secret_file(secret).map(|file| (file, sds_secret(secret, &certificate.chain_pem, &certificate.key_pem)))
        })
        .collect();
    secrets.sort_by(|a, b| a.0.cmp(&b.0));
    secrets
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;
    use std::convert::Infallible;

    use aether_api::config::v1::SecretProvider;
    use aether_manifests::parse_manifests;
    use aether_projection::{ProjectionConfig, project};

    use super::*;
    use crate::tls::{Resolution, Resolutions, TlsSettings};

    /// One object per name in namespace `shop`, each with a TLS secret
    /// `NAME-tls`.
    pub(crate) fn snapshot(names: &[&str]) -> Snapshot {
        let text: String = names
            .iter()
            .map(|name| {
                format!(
                    "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}, namespace: shop}}\n\
                     spec:\n  hosts: [{name}.example.com]\n  routes:\n  - match: {{prefix: /}}\n    backend: {{service: web}}\n\
                     \x20 tls: {{secretName: {name}-tls, provider: KUBERNETES}}\n"
                )
            })
            .collect();
        project(parse_manifests(&text).unwrap(), &ProjectionConfig::default()).unwrap()
    }

    /// The secrets named usable (served by the mesh), the others never looked up.
    pub(crate) fn tls(usable: &[&str]) -> EdgeTls {
        let mut resolutions = Resolutions::default();
        for name in usable {
            let secret = TlsSecret {
                provider: SecretProvider::Kubernetes,
                namespace: Some("shop".into()),
                secret_name: (*name).into(),
            };
            resolutions.insert(secret, Resolution::Delegated("mesh-sds".into()));
        }
        EdgeTls {
            settings: TlsSettings::new("/envoy"),
            resolutions,
        }
    }

    #[test]
    fn the_listener_is_made_again_exactly_when_it_would_change() {
        let memo = ListenerMemo::default();
        let made = Cell::new(0);
        let get = |snapshot: &Snapshot, tls: &EdgeTls, source: EdgeSource, name: &str| {
            memo.get(snapshot, tls, source, name, |listener| {
                made.set(made.get() + 1);
                Ok::<_, Infallible>(listener.clone())
            })
            .unwrap()
        };
        let (ab, none) = (snapshot(&["a", "b"]), tls(&[]));
        let first = get(&ab, &none, files_source(&none), "edge");
        assert_eq!(first, files_listener(&ab, &none, "edge"));
        assert_eq!(get(&ab, &none, files_source(&none), "edge"), first);
        // Another snapshot with the same chains (equal lists, not shared).
        let again = snapshot(&["b", "a"]);
        assert!(!Arc::ptr_eq(&again.tls_chains, &ab.tls_chains));
        assert_eq!(get(&again, &none, files_source(&none), "edge"), first);
        assert_eq!(made.get(), 1);

        // Each input that changes the listener makes it again.
        let a_usable = tls(&["a-tls"]);
        let usable = get(&ab, &a_usable, files_source(&a_usable), "edge");
        assert_eq!((made.get(), &usable), (2, &files_listener(&ab, &a_usable, "edge")));
        assert_ne!(usable, first);
        let only_a = snapshot(&["a"]);
        let fewer = get(&only_a, &a_usable, files_source(&a_usable), "edge");
        assert_eq!((made.get(), &fewer), (3, &files_listener(&only_a, &a_usable, "edge")));
        let renamed = get(&only_a, &a_usable, files_source(&a_usable), "other");
        assert_eq!(
            (made.get(), &renamed),
            (4, &files_listener(&only_a, &a_usable, "other"))
        );
        let xds = get(&only_a, &a_usable, xds_source(), "other");
        assert_eq!((made.get(), &xds), (5, &xds_listener(&only_a, &a_usable, "other")));
        // A secret no chain names changes nothing.
        let more = tls(&["a-tls", "z-tls"]);
        assert_eq!(get(&only_a, &more, xds_source(), "other"), xds);
        assert_eq!(made.get(), 5);
    }
}
