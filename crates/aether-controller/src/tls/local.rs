//! Local mode's secrets: `--secrets DIR`, laid out as mounted
//! `kubernetes.io/tls` Secrets are, `DIR/NAMESPACE/NAME/tls.crt` and
//! `tls.key` (each possibly a link, as the kubelet's `..data` swap makes
//! them). Only the secrets the served objects reference are read, each
//! pass; a pair is checked again only when its bytes change.
//!
//! Rotation: [`SecretsDir::stamp`] is part of what local mode polls, so
//! rewriting (or swapping) a referenced pair is a change like an edited
//! manifest: the next pass reads it, checks it, and hands the new
//! certificate to Envoy by SDS, without touching the listener.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;

use super::certificate::{self, Certificate, Invalid};
use super::{Resolution, Resolutions, TlsSettings};

/// A checked pair, by the bytes it was checked from.
struct Cached {
    chain: Vec<u8>,
    key: Vec<u8>,
    result: Result<Arc<Certificate>, Invalid>,
}

/// The secrets directory (or none) and what was read from it.
#[derive(Default)]
pub struct SecretsDir {
    dir: Option<PathBuf>,
    cache: HashMap<TlsSecret, Cached>,
}

/// What a poll compares to see a change: each referenced file's size,
/// modification time and inode (after links), and each ready
/// certificate's validity now, so a certificate that expires (or becomes
/// valid) triggers a pass by itself.
pub type Stamp = Vec<(PathBuf, Option<(u64, Option<std::time::SystemTime>, u64)>, bool)>;

impl SecretsDir {
    /// Secrets read from `dir`; `None`: no Kubernetes secret is available.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            cache: HashMap::new(),
        }
    }

    fn files(&self, secret: &TlsSecret) -> Option<(PathBuf, PathBuf)> {
        let (SecretProvider::Kubernetes, Some(namespace), Some(dir)) = (secret.provider, &secret.namespace, &self.dir)
        else {
            return None;
        };
        let base = dir.join(namespace).join(&secret.secret_name);
        Some((base.join("tls.crt"), base.join("tls.key")))
    }

    /// Resolves every secret of `secrets` (the snapshot's) at `now` (Unix
    /// seconds); drops what it holds of the others.
    pub fn resolve(&mut self, secrets: &[TlsSecret], settings: &TlsSettings, now: i64) -> Resolutions {
        self.cache.retain(|secret, _| secrets.contains(secret));
        let mut resolutions = Resolutions::default();
        for secret in secrets {
            let resolution = match self.files(secret) {
                None => settings.resolve_elsewhere(secret),
                Some((chain, key)) => match self.read(secret, &chain, &key) {
                    Ok(certificate) => match certificate.valid_at(now) {
                        Ok(()) => Resolution::Ready(certificate),
                        Err(why) => Resolution::Refused(why),
                    },
                    Err(why) => Resolution::Refused(why),
                },
            };
            resolutions.insert(secret.clone(), resolution);
        }
        resolutions
    }

    /// The checked pair of `secret`, read now, checked again only if its
    /// bytes changed.
    fn read(&mut self, secret: &TlsSecret, chain_path: &Path, key_path: &Path) -> Result<Arc<Certificate>, Invalid> {
        let read = |path: &Path, name: &str| {
            std::fs::read(path).map_err(|err| match err.kind() {
                io::ErrorKind::NotFound => Invalid::Missing(format!("{} has no {name}", describe_dir(path))),
                _ => Invalid::Unreadable(format!("{name}: {err}")),
            })
        };
        let chain = read(chain_path, "tls.crt")?;
        let key = read(key_path, "tls.key")?;
        if let Some(cached) = self.cache.get(secret)
            && cached.chain == chain
            && cached.key == key
        {
            return cached.result.clone();
        }
        let result = certificate::check(&chain, &key).map(Arc::new);
        let answer = result.clone();
        self.cache.insert(secret.clone(), Cached { chain, key, result });
        answer
    }

    /// The [`Stamp`] of `secrets` at `now`.
    pub fn stamp(&self, secrets: &[TlsSecret], now: i64) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let mut stamp = Vec::new();
        for secret in secrets {
            let Some((chain, key)) = self.files(secret) else {
                continue;
            };
            let valid = self
                .cache
                .get(secret)
                .and_then(|cached| cached.result.as_ref().ok())
                .is_some_and(|certificate| certificate.valid_at(now).is_ok());
            for path in [chain, key] {
                let meta = std::fs::metadata(&path)
                    .ok()
                    .map(|meta| (meta.len(), meta.modified().ok(), meta.ino()));
                stamp.push((path, meta, valid));
            }
        }
        stamp
    }
}

/// `the directory DIR/NAMESPACE/NAME`, for a missing file's message.
fn describe_dir(path: &Path) -> String {
    path.parent()
        .map_or_else(|| path.display().to_string(), |dir| format!("{}", dir.display()))
}
