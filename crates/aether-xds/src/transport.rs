//! How the xDS server is reached: mutual TLS (the default), or plaintext
//! only when asked for by name.
//!
//! Over TLS the server presents `--xds-tls-cert` (with `--xds-tls-key`),
//! speaks `h2` (ALPN; gRPC), and requires every client, Envoy, to present
//! a certificate that chains to a CA in `--xds-tls-client-ca`: the routes,
//! listeners and private keys it serves go to authenticated Envoys only.
//! The three files are `aether_http_server::ReloadingTls`'s: a rotation (a
//! cert-manager renewal of either side's certificate, a new CA bundle)
//! applies to the next connection without a restart, and a set that does
//! not load keeps the last good one serving (logged; counted in the
//! reloads given, the controller's
//! `aether_controller_xds_tls_reloads_total{result="error"}`). Streams open
//! on a connection keep the identity they were made with.

use std::path::PathBuf;

use aether_http_server::{ReloadingTls, TlsFiles, TlsReloads};

/// The flags that make the server's mutual TLS, named in the refusal to
/// serve xDS without either them or [`PLAINTEXT_FLAG`].
pub const TLS_FLAGS: [&str; 3] = ["--xds-tls-cert", "--xds-tls-key", "--xds-tls-client-ca"];
/// The flag that serves xDS without TLS.
pub const PLAINTEXT_FLAG: &str = "--xds-plaintext";

/// The transport the flags ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Mutual TLS over these files.
    MutualTls(TlsFiles),
    /// Unencrypted, unauthenticated HTTP/2 (`--xds-plaintext`).
    Plaintext,
}

/// Why the flags do not make a transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError(String);

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TransportError {}

/// The transport of `--xds-tls-cert`, `--xds-tls-key`,
/// `--xds-tls-client-ca` and `--xds-plaintext`: all three files, or the
/// plaintext flag alone; anything else is refused, naming the flags.
pub fn transport(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    client_ca: Option<PathBuf>,
    plaintext: bool,
) -> Result<Transport, TransportError> {
    let [cert_flag, key_flag, ca_flag] = TLS_FLAGS;
    match (cert, key, client_ca, plaintext) {
        (None, None, None, true) => Ok(Transport::Plaintext),
        (Some(cert), Some(key), Some(client_ca), false) => Ok(Transport::MutualTls(TlsFiles {
            cert,
            key,
            client_ca: Some(client_ca),
        })),
        (None, None, None, false) => Err(TransportError(format!(
            "xDS (--xds-addr) is served over mutual TLS: give {cert_flag}, {key_flag} and {ca_flag} \
             (the server's certificate and key, and the CA bundle Envoy's client certificate must chain to), \
             or {PLAINTEXT_FLAG} to serve it unencrypted and unauthenticated"
        ))),
        (_, _, _, true) => Err(TransportError(format!(
            "{PLAINTEXT_FLAG} cannot be combined with {cert_flag}, {key_flag} or {ca_flag}"
        ))),
        (cert, key, client_ca, false) => {
            let missing: Vec<&str> = [
                (cert.is_none(), cert_flag),
                (key.is_none(), key_flag),
                (client_ca.is_none(), ca_flag),
            ]
            .into_iter()
            .filter_map(|(missing, flag)| missing.then_some(flag))
            .collect();
            Err(TransportError(format!(
                "xDS over mutual TLS needs {cert_flag}, {key_flag} and {ca_flag} together; missing {}",
                missing.join(", ")
            )))
        }
    }
}

/// The server's reloading TLS over `files` (loaded now: a set that does
/// not load at start-up is an error), its reloads counted in `reloads`.
pub fn reloading(files: TlsFiles, reloads: TlsReloads) -> Result<ReloadingTls, aether_http_server::TlsError> {
    // gRPC is HTTP/2 only.
    ReloadingTls::new("xds", files, &[b"h2"], reloads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(path: &str) -> Option<PathBuf> {
        Some(PathBuf::from(path))
    }

    #[test]
    fn no_tls_and_no_plaintext_flag_is_refused_naming_the_flags() {
        let err = transport(None, None, None, false).unwrap_err().to_string();
        for flag in TLS_FLAGS.iter().chain([&PLAINTEXT_FLAG]) {
            assert!(err.contains(flag), "{err}");
        }
    }

    #[test]
    fn all_three_files_or_the_plaintext_flag_alone() {
        assert_eq!(transport(None, None, None, true), Ok(Transport::Plaintext));
        assert_eq!(
            transport(some("c"), some("k"), some("ca"), false),
            Ok(Transport::MutualTls(TlsFiles {
                cert: "c".into(),
                key: "k".into(),
                client_ca: some("ca"),
            }))
        );
        let err = transport(some("c"), some("k"), None, false).unwrap_err().to_string();
        assert!(err.ends_with("missing --xds-tls-client-ca"), "{err}");
        let err = transport(some("c"), None, None, false).unwrap_err().to_string();
        assert!(err.ends_with("missing --xds-tls-key, --xds-tls-client-ca"), "{err}");
        let err = transport(some("c"), some("k"), some("ca"), true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--xds-plaintext cannot be combined"), "{err}");
    }
}
