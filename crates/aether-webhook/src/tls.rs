//! The serving certificate, reloaded when its files change.
//!
//! Before each handshake the files' metadata (size, mtime, inode) is compared
//! with what was last loaded: two `stat` calls, so the next handshake after a
//! rotation (a kubelet secret update swaps a symlink; cert-manager rewrites
//! the files) uses the new certificate, with no restart and no poll delay. A
//! pair that does not load (half-written, or key and certificate not
//! matching) leaves the previous certificate in service and is retried when
//! the files change again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::{Context, Result};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::metrics::Metrics;

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode: meta.ino(),
    })
}

struct Current {
    stamps: (Option<FileStamp>, Option<FileStamp>),
    acceptor: TlsAcceptor,
}

/// A TLS acceptor over a certificate and key file pair.
pub struct ReloadingTls {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<Current>,
    metrics: Arc<Metrics>,
}

/// Loads the pair into a server configuration: ring provider, TLS 1.2 and
/// 1.3, ALPN `http/1.1` only (the server speaks HTTP/1.1 only).
pub fn load_config(cert: &Path, key: &Path) -> Result<ServerConfig> {
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {}", cert.display()))?;
    anyhow::ensure!(!certs.is_empty(), "{} holds no certificate", cert.display());
    let key_der = PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        // Checks that the key matches the certificate.
        .with_single_cert(certs, key_der)
        .with_context(|| format!("{} and {} do not make a key pair", cert.display(), key.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl aether_listener::Tls for ReloadingTls {
    fn acceptor(&self) -> TlsAcceptor {
        ReloadingTls::acceptor(self)
    }
}

impl ReloadingTls {
    /// Loads the pair now; failing here (at start-up) is an error.
    pub fn new(cert: PathBuf, key: PathBuf, metrics: Arc<Metrics>) -> Result<Self> {
        let stamps = (stamp(&cert), stamp(&key));
        let config = load_config(&cert, &key)?;
        Ok(Self {
            current: Mutex::new(Current {
                stamps,
                acceptor: TlsAcceptor::from(Arc::new(config)),
            }),
            cert,
            key,
            metrics,
        })
    }

    /// The acceptor for the next handshake, reloaded first if the files changed.
    pub fn acceptor(&self) -> TlsAcceptor {
        let stamps = (stamp(&self.cert), stamp(&self.key));
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.stamps != stamps {
            current.stamps = stamps;
            match load_config(&self.cert, &self.key) {
                Ok(config) => {
                    current.acceptor = TlsAcceptor::from(Arc::new(config));
                    self.metrics.tls_reloads.get_or_create(&[("result", "ok")]).inc();
                    tracing::info!(cert = %self.cert.display(), "reloaded the TLS certificate");
                }
                Err(e) => {
                    self.metrics.tls_reloads.get_or_create(&[("result", "error")]).inc();
                    tracing::warn!("keeping the previous TLS certificate: {e:#}");
                }
            }
        }
        current.acceptor.clone()
    }
}
