//! The HTTPS listener over LDS (`envoy.service.listener.v3`) and its
//! certificates over SDS (`envoy.service.secret.v3`), on the RDS server's
//! port, over the aggregated delta stream (`aether_xds::delta`: each change
//! sent once to the streams it concerns) or a stream per type, delta or
//! state of the world (`aether_xds::sotw`: first request answered with the
//! current resources, each change pushed once); ACK/NACK by nonce, a NACK
//! logged and counted and not re-sent. LDS serves its one listener to a request naming none
//! (Envoy's wildcard); SDS serves each stream the secrets it names, and
//! only those. The listener's chains name only secrets that passed the
//! checks, so Envoy never waits for (or rejects) one; a secret no longer
//! ready disappears from SDS only after the listener stopped naming it
//! (the pass publishes secrets, routes, then the listener, and keeps the
//! secrets of the previous listener until the next pass).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use aether_projection::Snapshot;
use bytes::Bytes;
use prost::Message;
use tokio::sync::watch;
use tracing::info;

use aether_xds::sotw::Kind;
use aether_xds::{Encoded, Resources};

use super::Publisher;
use crate::listener;
use crate::tls::EdgeTls;

/// The type URL of LDS resources.
pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
/// The type URL of SDS resources.
pub const SECRET_TYPE: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";

type Current = Option<Arc<Resources>>;

/// The publishing ends of the listener's and the secrets' channels.
#[derive(Debug, Clone)]
pub(crate) struct TlsSenders {
    pub(super) listeners: Arc<watch::Sender<Current>>,
    pub(super) secrets: Arc<watch::Sender<Current>>,
    /// The listener's resources, made again only when it would change.
    listener: listener::ListenerMemo<Arc<Resources>>,
    /// The SDS names of a published listener, read from it once: a pass
    /// that leaves the listener as it was does not decode its chains.
    named: Arc<Mutex<Option<NamedBy>>>,
}

/// A published listener and the SDS names its chains ask for.
type NamedBy = (Arc<Resources>, Arc<HashSet<String>>);

impl TlsSenders {
    /// The SDS names the published listener's chains ask for.
    fn published_names(&self) -> Arc<HashSet<String>> {
        let Some(published) = self.listeners.borrow().clone() else {
            return Arc::default();
        };
        let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        match &*named {
            Some((listener, names)) if Arc::ptr_eq(listener, &published) => names.clone(),
            _ => {
                let names = Arc::new(listener_names(&published));
                *named = Some((published, names.clone()));
                names
            }
        }
    }
}

/// The serving ends.
#[derive(Debug, Clone)]
pub(crate) struct TlsReceivers {
    pub(crate) listeners: watch::Receiver<Current>,
    pub(crate) secrets: watch::Receiver<Current>,
}

pub(crate) fn channels() -> (TlsSenders, TlsReceivers) {
    let (listeners, listeners_receiver) = watch::channel(None);
    let (secrets, secrets_receiver) = watch::channel(None);
    (
        TlsSenders {
            listeners: Arc::new(listeners),
            secrets: Arc::new(secrets),
            listener: listener::ListenerMemo::default(),
            named: Arc::default(),
        },
        TlsReceivers {
            listeners: listeners_receiver,
            secrets: secrets_receiver,
        },
    )
}

/// Publishes `resources`, numbered, unless they are the ones published;
/// returns whether they were new.
fn publish(sender: &watch::Sender<Current>, resources: Arc<Resources>) -> bool {
    sender.send_if_modified(|current| {
        if current.as_ref().is_some_and(|current| current.same_as(&resources)) {
            return false;
        }
        let mut resources = Arc::unwrap_or_clone(resources);
        resources.stamp();
        *current = Some(Arc::new(resources));
        true
    })
}

impl Publisher {
    /// The names of the SDS secrets published now (what a stream naming
    /// them gets), sorted.
    pub fn published_secrets(&self) -> Vec<String> {
        let current = self.tls.secrets.borrow();
        let mut names: Vec<String> = current
            .iter()
            .flat_map(|resources| resources.iter().map(|(name, _)| name.to_owned()))
            .collect();
        names.sort();
        names
    }

    /// Publishes the HTTPS listener of `snapshot` and the certificates of
    /// `tls` (call [`Publisher::publish`] for the routes first). The
    /// secrets the previous listener named stay served along with the new
    /// ones, so an Envoy still warming that listener finds them; the next
    /// publication drops them.
    pub fn publish_tls(&self, snapshot: &Snapshot, tls: &EdgeTls) {
        let listener = self
            .tls
            .listener
            .get(snapshot, tls, listener::xds_source(), &self.name, |listener| {
                Ok::<_, std::convert::Infallible>(Arc::new(Resources::new(vec![(
                    listener.name.clone(),
                    Bytes::from(listener.encode_to_vec()).into(),
                )])))
            })
            .unwrap_or_else(|never| match never {});
        // From the last publication: what did not change stays shared.
        let fresh: BTreeMap<String, Encoded> = listener::secrets(tls)
            .into_iter()
            .map(|(_, secret)| (secret.name.clone(), Bytes::from(secret.encode_to_vec()).into()))
            .collect();
        let mut secrets = self.tls.secrets.borrow().as_deref().cloned().unwrap_or_default();
        let named = self.tls.published_names();
        let gone: Vec<String> = secrets
            .iter()
            .map(|(name, _)| name)
            .filter(|name| !fresh.contains_key(*name) && !named.contains(*name))
            .map(str::to_owned)
            .collect();
        for name in gone {
            secrets.remove(&name);
        }
        for (name, body) in fresh {
            secrets.put(name, body);
        }
        if publish(&self.tls.secrets, Arc::new(secrets)) {
            info!("xds: new secrets");
        }
        let version = listener.version().to_owned();
        if publish(&self.tls.listeners, listener) {
            info!(%version, "xds: new listener");
            let listeners = self.tls.listeners.borrow().clone();
            let item = listeners
                .as_deref()
                .and_then(|listeners| listeners.iter().next().map(|(_, item)| item.seq));
            let seq = item.unwrap_or(0);
            let mut since = self.listener_since.lock().unwrap_or_else(PoisonError::into_inner);
            since.published(snapshot, &tls.resolutions, seq);
        }
    }
}

/// The SDS names the chains of the listeners in `current` ask for.
fn listener_names(current: &Resources) -> HashSet<String> {
    use envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType;
    use envoy_types::pb::envoy::config::listener::v3::Listener;
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext;
    let mut names = HashSet::new();
    for (_, item) in current.iter() {
        let Ok(listener) = Listener::decode(item.body.to_bytes()) else {
            continue;
        };
        for chain in listener.filter_chains {
            let Some(ConfigType::TypedConfig(any)) = chain.transport_socket.and_then(|socket| socket.config_type)
            else {
                continue;
            };
            let Ok(context) = DownstreamTlsContext::decode(any.value.as_slice()) else {
                continue;
            };
            for config in context
                .common_tls_context
                .map(|common| common.tls_certificate_sds_secret_configs)
                .unwrap_or_default()
            {
                names.insert(config.name);
            }
        }
    }
    names
}

/// The stream kind of LDS or SDS (`type_url`): SDS streams are sent only
/// what changes among the secrets they name.
pub(crate) fn kind(type_url: &'static str) -> Kind {
    Kind {
        type_url,
        by_name: type_url == SECRET_TYPE,
        on_names: Arc::new(|_, _| {}),
    }
}

#[cfg(test)]
pub(crate) mod tests;
