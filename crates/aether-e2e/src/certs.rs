//! Test certificates (rcgen): a throwaway CA and the leaf certificates it
//! issues, each with a serial of the test's choosing, written in the layout
//! of a mounted `kubernetes.io/tls` Secret (`NAMESPACE/NAME/tls.crt`,
//! `tls.key`).

use std::path::Path;

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
        }
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
    for (file, text) in [("tls.key", key_pem), ("tls.crt", chain_pem)] {
        let staged = secret.join(format!(".{file}.new"));
        std::fs::write(&staged, text).expect("writing a secret file");
        std::fs::rename(&staged, secret.join(file)).expect("moving a secret file in");
    }
}
