//! Test certificates (rcgen): a throwaway CA and the server and client
//! leaves it issues, each with a serial of the test's choosing, written as
//! files when a binary needs them (a `kubernetes.io/tls` Secret's layout).

use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair, PKCS_ECDSA_P256_SHA256,
    SerialNumber, SignatureAlgorithm,
};

pub use rcgen::date_time_ymd;

/// A CA whose certificates the TLS client of the tests trusts.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate (DER), the client's trust anchor.
    pub der: Vec<u8>,
    pem: String,
}

/// A certificate and its key, as PEM.
#[derive(Clone)]
pub struct Issued {
    /// `tls.crt`: the leaf, then the CA.
    pub chain_pem: String,
    /// `tls.key`.
    pub key_pem: String,
    /// The leaf's serial number ([`serial_of`]).
    pub serial: String,
    /// The leaf certificate, DER.
    pub der: Vec<u8>,
    /// The key, PKCS #8 DER.
    pub key_der: Vec<u8>,
}

/// What to issue.
pub struct Leaf<'a> {
    /// The subject alternative names (DNS).
    pub hosts: &'a [&'a str],
    /// The serial number.
    pub serial: u64,
    /// The key's algorithm.
    pub algorithm: &'static SignatureAlgorithm,
    /// `(notBefore, notAfter)`; default 2020-01-01 to 2100-01-01.
    pub validity: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
}

impl<'a> Leaf<'a> {
    /// An ECDSA P-256 certificate for `hosts`, valid for decades.
    pub fn new(hosts: &'a [&'a str], serial: u64) -> Self {
        Self {
            hosts,
            serial,
            algorithm: &PKCS_ECDSA_P256_SHA256,
            validity: None,
        }
    }
}

impl TestCa {
    /// A new CA (ECDSA P-256).
    pub fn new() -> Self {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        // A subject of its own: with rcgen's default name on both, a leaf's
        // issuer would equal its own subject, and OpenSSL-style verifiers
        // (Envoy's BoringSSL) would take it for self-signed.
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "aether test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2100, 1, 1);
        let certificate = params.self_signed(&key).expect("the CA certificate");
        Self {
            der: certificate.der().to_vec(),
            pem: certificate.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// The CA certificate, PEM (a trust bundle of one).
    pub fn pem(&self) -> String {
        self.pem.clone()
    }

    /// Issues `leaf`.
    pub fn issue(&self, leaf: &Leaf<'_>) -> Issued {
        let key = KeyPair::generate_for(leaf.algorithm).expect("a leaf key");
        let hosts: Vec<String> = leaf.hosts.iter().map(|host| (*host).to_owned()).collect();
        let mut params = CertificateParams::new(hosts).expect("leaf parameters");
        params.distinguished_name = DistinguishedName::new();
        if let Some(host) = leaf.hosts.first() {
            params.distinguished_name.push(DnType::CommonName, *host);
        }
        params.serial_number = Some(SerialNumber::from(leaf.serial));
        let (not_before, not_after) = leaf
            .validity
            .unwrap_or((date_time_ymd(2020, 1, 1), date_time_ymd(2100, 1, 1)));
        params.not_before = not_before;
        params.not_after = not_after;
        let certificate = params.signed_by(&key, &self.issuer).expect("the leaf certificate");
        Issued {
            chain_pem: format!("{}{}", certificate.pem(), self.pem),
            key_pem: key.serialize_pem(),
            serial: serial_of(certificate.der()),
            der: certificate.der().to_vec(),
            key_der: key.serialize_der(),
        }
    }

    /// A TLS client configuration (ring) trusting this CA only.
    pub fn client_config(&self) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.der.clone().into())
            .expect("the CA certificate is a trust anchor");
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth()
    }
}

impl Issued {
    /// Writes the chain to `cert` and the key to `key`, each moved into
    /// place by a rename (key first), as a Secret update lands.
    pub fn write(&self, cert: &Path, key: &Path) {
        replace(key, &self.key_pem);
        replace(cert, &self.chain_pem);
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// The serial number of a DER certificate, in hex (the DER integer's
/// bytes, as the controller's status and logs give it).
pub fn serial_of(der: &[u8]) -> String {
    let (_, certificate) = x509_parser::parse_x509_certificate(der).expect("a certificate");
    certificate
        .raw_serial()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Writes `issued` as the Secret `namespace/name` under `dir`
/// (`dir/namespace/name/tls.crt` and `tls.key`), each file moved into
/// place by a rename, so a reader never sees half a file.
pub fn write_secret(dir: &Path, namespace: &str, name: &str, chain_pem: &str, key_pem: &str) {
    let secret = dir.join(namespace).join(name);
    std::fs::create_dir_all(&secret).expect("creating a secret directory");
    replace(&secret.join("tls.key"), key_pem);
    replace(&secret.join("tls.crt"), chain_pem);
}

/// Writes `text` to `path` by a rename from a hidden file beside it, so a
/// reader never sees half a file (nor the staged one in a listing).
pub fn replace(path: &Path, text: &str) {
    let name = path.file_name().expect("a file path").to_string_lossy();
    let staged = path.with_file_name(format!(".{name}.new"));
    std::fs::write(&staged, text).expect("writing a certificate file");
    std::fs::rename(&staged, path).expect("moving a certificate file in");
}
