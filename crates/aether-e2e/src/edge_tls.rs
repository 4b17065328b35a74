//! The edge's HTTPS side: its secrets directory, the HTTPS listener's
//! address, requests over TLS, the certificate served for an SNI, and the
//! controller's view of each object's `ResolvedRefs`.

use std::io;
use std::net::SocketAddr;
use std::path::Path;

use crate::edge::PATIENCE;
use crate::http::Response;
use crate::{Edge, Served, tls, wait_until};
use aether_testing::pki::{Issued, write_secret};

/// Envoy's count of listener updates it rejected (LDS, files or gRPC).
pub const LDS_UPDATE_REJECTED: &str = "listener_manager.lds.update_rejected";
/// Envoy's count of listener updates applied.
pub const LDS_UPDATE_SUCCESS: &str = "listener_manager.lds.update_success";

impl Edge {
    /// The controller's `--secrets` directory.
    pub fn secrets_dir(&self) -> &Path {
        self.secrets.path()
    }

    /// Writes (or rotates) the Secret `namespace/name`.
    pub fn write_secret(&self, namespace: &str, name: &str, issued: &Issued) {
        write_secret(self.secrets.path(), namespace, name, &issued.chain_pem, &issued.key_pem);
    }

    /// The HTTPS listener's address.
    pub fn https_addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.https_port).into()
    }

    /// The serial of the certificate served for `sni`, or the handshake's
    /// error (refused, or a certificate `ca` did not issue for `sni`).
    pub fn serial(&self, sni: &str, ca: &[u8]) -> io::Result<String> {
        tls::serial(self.https_addr(), sni, ca)
    }

    /// Waits until the certificate served for `sni` has `serial`.
    pub fn wait_for_serial(&self, sni: &str, ca: &[u8], serial: &str) {
        wait_until(
            &format!("{sni} to be served with serial {serial}"),
            PATIENCE,
            || format!("last: {:?}\n{}", self.serial(sni, ca), self.logs()),
            || (self.serial(sni, ca).ok().as_deref() == Some(serial)).then_some(()),
        );
    }

    /// `GET path` for `host` over TLS with SNI `host` (or its `sni`).
    pub fn get_tls(&self, sni: &str, host: &str, path: &str, ca: &[u8]) -> io::Result<Response> {
        tls::get(self.https_addr(), sni, host, path, ca)
    }

    /// The backend's answer to `GET path` for `host` over TLS, `None` for
    /// Envoy's 404; panics on a failed handshake or another status.
    pub fn served_tls(&self, host: &str, path: &str, ca: &[u8]) -> Option<Served> {
        let response = self
            .get_tls(host, host, path, ca)
            .unwrap_or_else(|err| panic!("GET {host}{path} over TLS: {err}\n{}", self.logs()));
        match response.status {
            200 => Some(serde_json::from_slice(&response.body).expect("a backend's answer")),
            404 => None,
            status => panic!("{host}{path} over TLS: status {status}\n{}", self.logs()),
        }
    }

    /// Envoy's count of rejected listener updates.
    pub fn listeners_rejected(&self) -> u64 {
        self.envoy.stat(LDS_UPDATE_REJECTED)
    }

    /// The `ResolvedRefs` condition the controller gave `namespace/name`
    /// (status.json): `(status, reason, message)`, empty when absent.
    pub fn resolved_refs(&self, key: &str) -> (String, String, String) {
        let condition = self.condition(key, "ResolvedRefs");
        let text = |field: &str| condition[field].as_str().unwrap_or("").to_owned();
        (text("status"), text("reason"), text("message"))
    }
}
