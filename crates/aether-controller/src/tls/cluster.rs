//! Cluster mode's secrets: the `kubernetes.io/tls` Secrets the served
//! objects reference, as the cluster holds them.
//!
//! Only referenced Secrets are read, and only their metadata is watched:
//! a watch of Secrets' metadata (`type=kubernetes.io/tls`, the scopes the
//! VirtualHosts are watched in) says which exist and at which
//! `resourceVersion` ([`ClusterSecrets::apply`]); a change of one a served
//! object references makes a pass, and each pass `GET`s the referenced
//! Secrets whose version it has not read ([`ClusterSecrets::fetch`]). No
//! other Secret's data, and so no other key, ever reaches the controller.
//! Each pass then resolves the referenced ones, checking a pair again only
//! when its bytes change.
//!
//! RBAC cannot be narrower than `get`, `list` and `watch` on `secrets` in
//! the watched namespaces: `resourceNames` cannot name Secrets that are only
//! known at run time (and a `list`/`watch` may only use it for one name),
//! and RBAC has no rule on a Secret's type or on field selectors.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::watcher::Event;
use tracing::warn;

use super::certificate::{self, Certificate, Invalid};
use super::{Resolution, Resolutions, TlsSettings};

/// One Secret's two entries, or why it cannot be used.
type Entries = Result<(Vec<u8>, Vec<u8>), Invalid>;

struct Cached {
    entries: (Vec<u8>, Vec<u8>),
    result: Result<Arc<Certificate>, Invalid>,
}

type Key = (String, String);

/// The referenced Secrets as last seen, by `(namespace, name)`.
#[derive(Default)]
pub struct ClusterSecrets {
    /// Whether Secrets are watched at all (without, every `KUBERNETES`
    /// secret is refused as having no source).
    watching: bool,
    seen: HashMap<Key, Entries>,
    cache: HashMap<Key, Cached>,
    /// From the metadata watch: each `kubernetes.io/tls` Secret's
    /// `resourceVersion`.
    versions: HashMap<Key, String>,
    /// The metadata listed so far by a re-list in progress.
    listing: Option<HashMap<Key, String>>,
    /// Whether the metadata has been listed once.
    listed: bool,
    /// The `resourceVersion` each entry of `seen` was read at.
    read_at: HashMap<Key, String>,
    /// The Secrets the last pass referenced.
    referenced: HashSet<Key>,
    /// The certificate last served for each Secret: kept while a newer
    /// version does not check, until one does or the Secret is deleted.
    served: HashMap<Key, Arc<Certificate>>,
}

impl ClusterSecrets {
    /// A store fed by a watch of Secrets.
    pub fn watched() -> Self {
        Self {
            watching: true,
            ..Self::default()
        }
    }

    /// Records the Secret `namespace/name`: its entries, or why it cannot
    /// be used (wrong type, an entry missing).
    pub fn put(&mut self, namespace: &str, name: &str, entries: Entries) {
        self.seen.insert((namespace.to_owned(), name.to_owned()), entries);
    }

    /// Forgets the Secret `namespace/name` (deleted).
    pub fn remove(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_owned(), name.to_owned());
        self.seen.remove(&key);
        self.cache.remove(&key);
        self.served.remove(&key);
    }

    /// Takes in one event of the Secrets' metadata watch; returns whether
    /// it concerns a Secret the last pass referenced (a pass is due).
    pub fn apply(&mut self, event: Event<PartialObjectMeta<Secret>>) -> bool {
        let key_of = |meta: &PartialObjectMeta<Secret>| -> Option<(Key, String)> {
            let metadata = &meta.metadata;
            Some((
                (metadata.namespace.clone()?, metadata.name.clone()?),
                metadata.resource_version.clone().unwrap_or_default(),
            ))
        };
        match event {
            Event::Apply(meta) => {
                let Some((key, version)) = key_of(&meta) else {
                    return false;
                };
                let referenced = self.referenced.contains(&key);
                self.versions.insert(key, version);
                referenced
            }
            Event::Delete(meta) => {
                let Some((key, _)) = key_of(&meta) else { return false };
                self.versions.remove(&key);
                self.referenced.contains(&key)
            }
            Event::Init => {
                self.listing = Some(HashMap::new());
                false
            }
            Event::InitApply(meta) => {
                if let (Some(listing), Some((key, version))) = (self.listing.as_mut(), key_of(&meta)) {
                    listing.insert(key, version);
                }
                false
            }
            Event::InitDone => {
                self.versions = self.listing.take().unwrap_or_default();
                self.listed = true;
                // Anything may have changed while the watch was down.
                !self.referenced.is_empty()
            }
        }
    }

    /// `GET`s every referenced Secret of `secrets` whose current version
    /// has not been read (all of them before the metadata is listed),
    /// through `api` of each namespace. A Secret that is gone is missing;
    /// a failed read keeps what was read before (and is logged), so an API
    /// hiccup does not take a certificate off the edge.
    pub async fn fetch(&mut self, client: &kube::Client, secrets: &[TlsSecret]) {
        if !self.watching {
            return;
        }
        self.referenced = secrets
            .iter()
            .filter(|secret| secret.provider == SecretProvider::Kubernetes)
            .filter_map(|secret| Some((secret.namespace.clone()?, secret.secret_name.clone())))
            .collect();
        let mut keys: Vec<&Key> = self.referenced.iter().collect();
        keys.sort();
        let mut reads = Vec::new();
        for key in keys {
            let version = self.versions.get(key);
            if self.listed && version.is_none() {
                reads.push((key.clone(), None));
            } else if version.is_none() || self.read_at.get(key) != version {
                reads.push((key.clone(), Some(version.cloned())));
            }
        }
        for (key, read) in reads {
            let Some(version) = read else {
                self.put(
                    &key.0,
                    &key.1,
                    Err(Invalid::Missing(format!(
                        "no Secret {}/{} of type kubernetes.io/tls",
                        key.0, key.1
                    ))),
                );
                self.read_at.remove(&key);
                self.served.remove(&key);
                continue;
            };
            let api: Api<Secret> = Api::namespaced(client.clone(), &key.0);
            match api.get_opt(&key.1).await {
                Ok(Some(secret)) => {
                    let version = secret.metadata.resource_version.clone().or(version);
                    self.put(&key.0, &key.1, entries(&secret));
                    match version {
                        Some(version) => self.read_at.insert(key, version),
                        None => self.read_at.remove(&key),
                    };
                }
                Ok(None) => {
                    self.put(
                        &key.0,
                        &key.1,
                        Err(Invalid::Missing(format!("no Secret {}/{}", key.0, key.1))),
                    );
                    self.read_at.remove(&key);
                    self.served.remove(&key);
                }
                Err(err) => {
                    // Never the Secret's content: the error is the API's.
                    warn!(namespace = %key.0, name = %key.1, error = %err, "reading a TLS Secret failed; keeping what was read before");
                    if !self.seen.contains_key(&key) {
                        self.put(&key.0, &key.1, Err(Invalid::Unreadable(err.to_string())));
                    }
                }
            }
        }
    }

    /// Whether `namespace/name` is held.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.seen.contains_key(&(namespace.to_owned(), name.to_owned()))
    }

    /// Resolves every secret of `secrets` at `now` (Unix seconds). A
    /// Secret whose version read now does not check (or is not valid now)
    /// keeps the certificate last served for it while that one is valid
    /// ([`Resolution::Kept`]); a deleted Secret keeps nothing.
    pub fn resolve(&mut self, secrets: &[TlsSecret], settings: &TlsSettings, now: i64) -> Resolutions {
        let mut resolutions = Resolutions::default();
        self.served.retain(|(namespace, name), _| {
            secrets
                .iter()
                .any(|secret| secret.namespace.as_deref() == Some(namespace) && secret.secret_name == *name)
        });
        for secret in secrets {
            let resolution = match (&secret.provider, &secret.namespace) {
                (SecretProvider::Kubernetes, Some(namespace)) if self.watching => {
                    let key = (namespace.clone(), secret.secret_name.clone());
                    match self
                        .check(namespace, &secret.secret_name)
                        .and_then(|certificate| certificate.valid_at(now).map(|()| certificate))
                    {
                        Ok(certificate) => {
                            self.served.insert(key, certificate.clone());
                            Resolution::Ready(certificate)
                        }
                        Err(why) => match self.served.get(&key) {
                            Some(kept) if kept.valid_at(now).is_ok() => {
                                warn!(%namespace, name = %secret.secret_name, error = %why, serial = %kept.serial,
                                    "keeping the last good certificate of a Secret whose new version does not check");
                                Resolution::Kept {
                                    certificate: kept.clone(),
                                    why,
                                }
                            }
                            _ => Resolution::Refused(why),
                        },
                    }
                }
                _ => settings.resolve_elsewhere(secret),
            };
            resolutions.insert(secret.clone(), resolution);
        }
        resolutions
    }

    fn check(&mut self, namespace: &str, name: &str) -> Result<Arc<Certificate>, Invalid> {
        let key = (namespace.to_owned(), name.to_owned());
        let entries = match self.seen.get(&key) {
            None => return Err(Invalid::Missing(format!("no Secret {namespace}/{name}"))),
            Some(Err(why)) => return Err(why.clone()),
            Some(Ok(entries)) => entries,
        };
        if let Some(cached) = self.cache.get(&key)
            && cached.entries == *entries
        {
            return cached.result.clone();
        }
        let result = certificate::check(&entries.0, &entries.1).map(Arc::new);
        self.cache.insert(
            key,
            Cached {
                entries: entries.clone(),
                result: result.clone(),
            },
        );
        result
    }
}

/// A Secret's `tls.crt` and `tls.key`, or why it cannot be used.
fn entries(secret: &Secret) -> Entries {
    if secret.type_.as_deref() != Some("kubernetes.io/tls") {
        return Err(Invalid::Unserved(format!(
            "the Secret's type is {}, not kubernetes.io/tls",
            secret.type_.as_deref().unwrap_or("Opaque")
        )));
    }
    let data = secret.data.as_ref();
    let entry = |name: &str| {
        data.and_then(|data| data.get(name))
            .map(|bytes| bytes.0.clone())
            .ok_or_else(|| Invalid::Missing(format!("the Secret has no {name}")))
    };
    Ok((entry("tls.crt")?, entry("tls.key")?))
}
