//! The certificates of xDS over mutual TLS, from a throwaway CA, laid out
//! as the two cert-manager Secrets are mounted: the controller's
//! (`server/`: `tls.crt`, `tls.key`, `ca.crt`) and Envoy's client
//! certificate (`client/`, the same three files). The server certificate
//! is issued for the name the generated bootstrap sends as SNI and checks
//! in the certificate's SANs, so running the bootstrap proves those
//! settings.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use crate::bootstrap::{self, RouteSource, UPSTREAM_TLS};
use aether_testing::pki::{Leaf, TestCa};

/// A CA and the two sides' certificates, in a temporary directory.
pub struct XdsPki {
    ca: TestCa,
    dir: TempDir,
    /// The name the server certificate is for (the bootstrap's SNI).
    pub server_name: String,
}

impl XdsPki {
    /// A new CA; a server certificate for the generated bootstrap's SNI
    /// (serial 1) and a client certificate (serial 2).
    pub fn new() -> Self {
        let generated = bootstrap::generated(&RouteSource::Xds(([127, 0, 0, 1], 0).into(), PathBuf::new()));
        let server_name = generated
            .pointer(&format!("{UPSTREAM_TLS}/sni"))
            .and_then(Value::as_str)
            .expect("the generated xDS bootstrap sends an SNI")
            .to_owned();
        let pki = Self {
            ca: TestCa::new(),
            dir: tempfile::tempdir().expect("a certificate directory"),
            server_name,
        };
        pki.issue_server(1);
        let client = pki.ca.issue(&Leaf::new(&["aether-edge"], 2));
        write(&pki.client_dir(), &client.chain_pem, &client.key_pem, &pki.ca_pem());
        pki
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The controller's files (`tls.crt`, `tls.key`, `ca.crt`).
    pub fn server_dir(&self) -> PathBuf {
        self.dir.path().join("server")
    }

    /// Envoy's files (`tls.crt`, `tls.key`, `ca.crt`).
    pub fn client_dir(&self) -> PathBuf {
        self.dir.path().join("client")
    }

    /// Issues a new server certificate with `serial` and moves it into
    /// place, key first (as a Secret update may land); returns its serial
    /// as [`aether_testing::pki::serial_of`] gives it.
    pub fn issue_server(&self, serial: u64) -> String {
        let issued = self.ca.issue(&Leaf::new(&[self.server_name.as_str()], serial));
        write(&self.server_dir(), &issued.chain_pem, &issued.key_pem, &self.ca_pem());
        issued.serial
    }

    /// The controller's flags for mutual TLS over [`XdsPki::server_dir`].
    pub fn controller_args(&self) -> Vec<OsString> {
        let dir = self.server_dir();
        [
            ("--xds-tls-cert=", "tls.crt"),
            ("--xds-tls-key=", "tls.key"),
            ("--xds-tls-client-ca=", "ca.crt"),
        ]
        .into_iter()
        .map(|(flag, file)| {
            let mut arg = OsString::from(flag);
            arg.push(dir.join(file));
            arg
        })
        .collect()
    }
}

impl Default for XdsPki {
    fn default() -> Self {
        Self::new()
    }
}

/// Writes `tls.key`, `tls.crt` and `ca.crt` into `dir`, each by a rename.
fn write(dir: &Path, chain_pem: &str, key_pem: &str, ca_pem: &str) {
    std::fs::create_dir_all(dir).expect("creating a certificate directory");
    for (file, text) in [("tls.key", key_pem), ("tls.crt", chain_pem), ("ca.crt", ca_pem)] {
        let staged = dir.join(format!(".{file}.new"));
        std::fs::write(&staged, text).expect("writing a certificate file");
        std::fs::rename(&staged, dir.join(file)).expect("moving a certificate file in");
    }
}
