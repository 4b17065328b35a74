//! The serving certificate: `aether_http_server::ReloadingTls` over the
//! `--tls-cert` and `--tls-key` files, reloaded on the next handshake after
//! they change (a pair that does not load leaves the previous one in
//! service), speaking HTTP/1.1, its reloads counted in `tls_reloads`.

use std::path::PathBuf;

pub use aether_http_server::ReloadingTls;
use aether_http_server::TlsFiles;
use anyhow::Result;

use crate::metrics::Metrics;

/// Loads the pair now; failing here (at start-up) is an error.
pub fn reloading(cert: PathBuf, key: PathBuf, metrics: &Metrics) -> Result<ReloadingTls> {
    let files = TlsFiles {
        cert,
        key,
        client_ca: None,
    };
    // The server speaks HTTP/1.1 only.
    Ok(ReloadingTls::new(
        "webhook",
        files,
        &[b"http/1.1"],
        metrics.tls_reloads.clone(),
    )?)
}
