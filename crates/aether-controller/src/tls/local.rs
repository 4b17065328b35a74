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

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_manifests::FileStamp;
use aether_projection::TlsSecret;
use tracing::warn;

use super::certificate::{self, Certificate, Invalid};
use super::{Resolution, Resolutions, TlsSettings};

/// The most bytes read of a `tls.crt` or `tls.key`: 1 MiB, a PEM chain of
/// hundreds of certificates (a certificate is 1–2 KiB of PEM; Kubernetes
/// caps a whole Secret at 1 MiB too). A longer file is refused unread
/// past one byte more.
pub const MAX_SECRET_FILE_BYTES: u64 = 1024 * 1024;

/// A checked pair, by the bytes it was checked from.
struct Cached {
    /// The files' stamps when read: while both stay, they are not read
    /// again (a pass at 50,000 objects read a thousand pairs otherwise).
    stamps: [Option<FileStamp>; 2],
    chain: Vec<u8>,
    key: Vec<u8>,
    result: Result<Arc<Certificate>, Invalid>,
}

/// The secrets directory (or none) and what was read from it.
#[derive(Default)]
pub struct SecretsDir {
    dir: Option<PathBuf>,
    cache: HashMap<TlsSecret, Cached>,
    /// The certificate last served for each secret: kept while its files
    /// are unreadable or invalid, until a valid newer pair arrives or the
    /// secret's directory is deleted.
    served: HashMap<TlsSecret, Arc<Certificate>>,
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
            served: HashMap::new(),
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
    /// seconds); drops what it holds of the others. A pair that cannot be
    /// read or checked, or is not valid now, keeps the certificate last
    /// served for it while that one is valid ([`Resolution::Kept`]); only a
    /// deleted secret directory drops it.
    pub fn resolve(&mut self, secrets: &[TlsSecret], settings: &TlsSettings, now: i64) -> Resolutions {
        // A set: a slice's `contains` made this quadratic in the secrets.
        let wanted: HashSet<&TlsSecret> = secrets.iter().collect();
        self.cache.retain(|secret, _| wanted.contains(secret));
        self.served.retain(|secret, _| wanted.contains(secret));
        let mut resolutions = Resolutions::default();
        for secret in secrets {
            let resolution = match self.files(secret) {
                None => settings.resolve_elsewhere(secret),
                Some((chain, key)) => {
                    match self
                        .read(secret, &chain, &key)
                        .and_then(|certificate| certificate.valid_at(now).map(|()| certificate))
                    {
                        Ok(certificate) => {
                            self.served.insert(secret.clone(), certificate.clone());
                            Resolution::Ready(certificate)
                        }
                        Err(why) => self.keep_or_refuse(secret, &chain, why, now),
                    }
                }
            };
            resolutions.insert(secret.clone(), resolution);
        }
        resolutions
    }

    /// What a secret whose pair failed with `why` resolves to: its last
    /// served certificate while it is valid and the secret's directory is
    /// there, else refused.
    fn keep_or_refuse(&mut self, secret: &TlsSecret, chain_path: &Path, why: Invalid, now: i64) -> Resolution {
        let deleted = chain_path.parent().is_some_and(
            |dir| matches!(std::fs::symlink_metadata(dir), Err(err) if err.kind() == io::ErrorKind::NotFound),
        );
        if deleted {
            self.served.remove(secret);
        }
        match self.served.get(secret) {
            Some(kept) if kept.valid_at(now).is_ok() => {
                warn!(
                    namespace = secret.namespace.as_deref().unwrap_or(""),
                    name = %secret.secret_name,
                    error = %why,
                    serial = %kept.serial,
                    "keeping the last good certificate of a secret whose files fail"
                );
                Resolution::Kept {
                    certificate: kept.clone(),
                    why,
                }
            }
            _ => Resolution::Refused(why),
        }
    }

    /// The checked pair of `secret`, read now, checked again only if its
    /// bytes changed. Each file is opened as a manifest is: a FIFO, device
    /// or directory is refused without blocking, and at most
    /// [`MAX_SECRET_FILE_BYTES`] are read.
    fn read(&mut self, secret: &TlsSecret, chain_path: &Path, key_path: &Path) -> Result<Arc<Certificate>, Invalid> {
        let read = |path: &Path, name: &str| {
            aether_manifests::read_bytes(path, "secrets", MAX_SECRET_FILE_BYTES).map_err(|err| {
                // Nothing at the path (not even a dangling link): missing.
                match std::fs::symlink_metadata(path) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        Invalid::Missing(format!("{} has no {name}", describe_dir(path)))
                    }
                    _ => Invalid::Unreadable(format!("{name}: {}", err.message)),
                }
            })
        };
        // Stamped before reading: a change while they are read gives
        // stamps the next pass does not match.
        let stamps = [FileStamp::of(chain_path), FileStamp::of(key_path)];
        if let Some(cached) = self.cache.get(secret)
            && stamps.iter().all(Option::is_some)
            && cached.stamps == stamps
        {
            return cached.result.clone();
        }
        let chain = read(chain_path, "tls.crt")?;
        let key = read(key_path, "tls.key")?;
        if let Some(cached) = self.cache.get_mut(secret)
            && cached.chain == chain
            && cached.key == key
        {
            cached.stamps = stamps;
            return cached.result.clone();
        }
        let result = certificate::check(&chain, &key).map(Arc::new);
        let answer = result.clone();
        self.cache.insert(
            secret.clone(),
            Cached {
                stamps,
                chain,
                key,
                result,
            },
        );
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
                .served
                .get(secret)
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
