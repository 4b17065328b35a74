//! Cluster mode's secrets: the `kubernetes.io/tls` Secrets the served
//! objects reference, as the cluster holds them. Fed with each Secret's
//! `tls.crt` and `tls.key` as it arrives ([`ClusterSecrets::put`],
//! [`ClusterSecrets::remove`]); each pass resolves the referenced ones,
//! checking a pair again only when its bytes change.

use std::collections::HashMap;
use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;

use super::certificate::{self, Certificate, Invalid};
use super::{Resolution, Resolutions, TlsSettings};

/// One Secret's two entries, or why it cannot be used.
type Entries = Result<(Vec<u8>, Vec<u8>), Invalid>;

struct Cached {
    entries: (Vec<u8>, Vec<u8>),
    result: Result<Arc<Certificate>, Invalid>,
}

/// The referenced Secrets as last seen, by `(namespace, name)`.
#[derive(Default)]
pub struct ClusterSecrets {
    /// Whether Secrets are watched at all (without, every `KUBERNETES`
    /// secret is refused as having no source).
    watching: bool,
    seen: HashMap<(String, String), Entries>,
    cache: HashMap<(String, String), Cached>,
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
    }

    /// Whether `namespace/name` is held.
    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.seen.contains_key(&(namespace.to_owned(), name.to_owned()))
    }

    /// Resolves every secret of `secrets` at `now` (Unix seconds).
    pub fn resolve(&mut self, secrets: &[TlsSecret], settings: &TlsSettings, now: i64) -> Resolutions {
        let mut resolutions = Resolutions::default();
        for secret in secrets {
            let resolution = match (&secret.provider, &secret.namespace) {
                (SecretProvider::Kubernetes, Some(namespace)) if self.watching => {
                    match self.check(namespace, &secret.secret_name) {
                        Ok(certificate) => match certificate.valid_at(now) {
                            Ok(()) => Resolution::Ready(certificate),
                            Err(why) => Resolution::Refused(why),
                        },
                        Err(why) => Resolution::Refused(why),
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
