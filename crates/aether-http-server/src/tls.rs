//! A server certificate (and, for mutual TLS, the CA bundle client
//! certificates are verified against), reloaded when its files change: the
//! one TLS source of every aether server (the webhook's, the controller's
//! xDS).
//!
//! Before each handshake the files' metadata (size, mtime, inode) is
//! compared with what was last loaded: a few `stat` calls, so the next
//! handshake after a rotation (a kubelet secret update swaps a symlink;
//! cert-manager rewrites the files) uses the new certificate and CA
//! bundle, with no restart and no poll delay. A set that does not load
//! (half-written, unreadable, key and certificate not matching, a CA file
//! without a certificate) leaves the previous configuration in service,
//! is logged and counted (`result="error"`), and is retried when the files
//! change again: an I/O error never removes what is served.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// Reloads by result (`result="ok"` or `"error"`), registered by the caller.
pub type TlsReloads = Family<[(&'static str, &'static str); 1], Counter>;

/// The files a server's TLS is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM (leaf first).
    pub cert: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Mutual TLS: the CA certificates (PEM) a client's certificate must
    /// chain to; every client must present one. `None`: no client
    /// certificate is asked for.
    pub client_ca: Option<PathBuf>,
}

/// Why a set of files did not load, naming the file.
#[derive(Debug)]
pub struct TlsError(String);

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

fn error(path: &Path, what: impl fmt::Display) -> TlsError {
    TlsError(format!("{}: {what}", path.display()))
}

/// Loads `files` into a server configuration: ring provider, TLS 1.2 and
/// 1.3, the given ALPN protocols, and client certificates required and
/// verified when `files.client_ca` is set.
pub fn load_config(files: &TlsFiles, alpn: &[&[u8]]) -> Result<ServerConfig, TlsError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| error(&files.cert, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(&files.cert, e))?;
    if certs.is_empty() {
        return Err(error(&files.cert, "holds no certificate"));
    }
    check_validity(&files.cert, &certs[0], SystemTime::now())?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| error(&files.key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("TLS protocol versions: {e}")))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca).map_err(|e| error(ca, e))? {
                roots
                    .add(cert.map_err(|e| error(ca, e))?)
                    .map_err(|e| error(ca, format!("not a usable CA certificate: {e}")))?;
            }
            if roots.is_empty() {
                return Err(error(ca, "holds no CA certificate"));
            }
            // Client certificates required (no anonymous client), chained
            // to `roots`, within their validity.
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| error(ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    // Checks that the key matches the certificate.
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        TlsError(format!(
            "{} and {} do not make a key pair: {e}",
            files.cert.display(),
            files.key.display()
        ))
    })?;
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    Ok(config)
}

/// How far ahead of this clock a certificate's start of validity may be
/// (the issuer's clock may run ahead): 5 minutes.
const CLOCK_SKEW: std::time::Duration = std::time::Duration::from_secs(300);

/// Refuses a server certificate (`leaf`, of `path`) that is expired or not
/// yet valid at `now`: every client would fail its handshake, so loading
/// it would take the server down where keeping the last good one (or not
/// starting, saying why) does not.
fn check_validity(path: &Path, leaf: &CertificateDer<'_>, now: SystemTime) -> Result<(), TlsError> {
    let (_, cert) = x509_parser::parse_x509_certificate(leaf)
        .map_err(|e| error(path, format!("the first certificate does not parse: {e}")))?;
    let validity = cert.validity();
    let seconds = |time: SystemTime| {
        time.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX))
    };
    let now = seconds(now);
    if validity.not_after.timestamp() < now {
        return Err(error(
            path,
            format!(
                "the certificate expired ({}): clients would refuse it",
                validity.not_after
            ),
        ));
    }
    if validity.not_before.timestamp() > now + CLOCK_SKEW.as_secs() as i64 {
        return Err(error(
            path,
            format!(
                "the certificate is not valid before {}: clients would refuse it",
                validity.not_before
            ),
        ));
    }
    Ok(())
}

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

type Stamps = Vec<Option<FileStamp>>;

struct Current {
    stamps: Stamps,
    acceptor: TlsAcceptor,
}

/// A TLS acceptor over [`TlsFiles`], reloaded when they change (see the
/// module documentation).
pub struct ReloadingTls {
    files: TlsFiles,
    alpn: Vec<&'static [u8]>,
    current: Mutex<Current>,
    reloads: TlsReloads,
    /// The server's name in logs.
    name: &'static str,
}

impl ReloadingTls {
    /// Loads `files` now (failing here, at start-up, is an error); `alpn`
    /// is what the server speaks (`http/1.1`, or `h2`); each later reload
    /// is counted in `reloads`, and logged under `name`.
    pub fn new(
        name: &'static str,
        files: TlsFiles,
        alpn: &[&'static [u8]],
        reloads: TlsReloads,
    ) -> Result<Self, TlsError> {
        let stamps = stamps(&files);
        let config = load_config(&files, alpn)?;
        Ok(Self {
            current: Mutex::new(Current {
                stamps,
                acceptor: TlsAcceptor::from(Arc::new(config)),
            }),
            files,
            alpn: alpn.to_vec(),
            reloads,
            name,
        })
    }

    /// The files served.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }

    /// The acceptor for the next handshake, reloaded first if the files changed.
    pub fn acceptor(&self) -> TlsAcceptor {
        let stamps = stamps(&self.files);
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if current.stamps != stamps {
            current.stamps = stamps;
            match load_config(&self.files, &self.alpn) {
                Ok(config) => {
                    current.acceptor = TlsAcceptor::from(Arc::new(config));
                    self.reloads.get_or_create(&[("result", "ok")]).inc();
                    tracing::info!(listener = self.name, cert = %self.files.cert.display(),
                        client_ca = ?self.files.client_ca, "reloaded the TLS certificate");
                }
                Err(e) => {
                    self.reloads.get_or_create(&[("result", "error")]).inc();
                    tracing::warn!(listener = self.name, "keeping the previous TLS certificate: {e}");
                }
            }
        }
        current.acceptor.clone()
    }
}

fn stamps(files: &TlsFiles) -> Stamps {
    [Some(&files.cert), Some(&files.key), files.client_ca.as_ref()]
        .into_iter()
        .flatten()
        .map(|path| stamp(path))
        .collect()
}

impl crate::Tls for ReloadingTls {
    fn acceptor(&self) -> TlsAcceptor {
        ReloadingTls::acceptor(self)
    }
}
