//! A TLS secret checked before it reaches Envoy: a secret Envoy cannot load
//! would fail its filter chain (over files, the whole listener), so every
//! certificate and key is parsed and matched here first, and a failure is
//! reported by name and reason instead.
//!
//! Checks, in order: `tls.crt` holds at least one PEM certificate and every
//! one parses as X.509 (x509-parser); `tls.key` holds a PEM private key
//! (PKCS#8, PKCS#1 or SEC1) that rustls' ring provider loads: RSA of 2048
//! bits or more, or ECDSA P-256 or P-384, the key types Envoy serves
//! (Ed25519 is refused: Envoy does not serve it); the key is the one of the
//! first certificate (their SubjectPublicKeyInfo compared, as rustls'
//! `CertifiedKey::keys_match`); and, at each pass, the first certificate is
//! within its validity window.
//!
//! What reaches Envoy is the parsed DER, written out again as PEM: exactly
//! what was checked, whatever else the files held. Nothing here puts key
//! material into an error, a log line or a `Debug` output.

use std::fmt;

use base64::Engine as _;
use rustls::crypto::ring::default_provider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::{InconsistentKeys, SignatureAlgorithm};

/// A certificate chain and its key, checked; see the module documentation.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate {
    /// The chain as PEM, leaf first.
    pub chain_pem: Vec<u8>,
    /// The private key as PEM. Secret: never logged or shown.
    pub key_pem: Vec<u8>,
    /// The leaf's `notBefore`, in seconds since the Unix epoch.
    pub not_before: i64,
    /// The leaf's `notAfter`, in seconds since the Unix epoch.
    pub not_after: i64,
    /// The leaf's serial number, in hex (for logs and status).
    pub serial: String,
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificate")
            .field("serial", &self.serial)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .field("chain_pem", &format_args!("{} bytes", self.chain_pem.len()))
            .field("key_pem", &format_args!("<redacted>"))
            .finish()
    }
}

/// Why a secret cannot be served. The messages name what is wrong, never
/// the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The secret does not exist (or one of its two entries is missing).
    Missing(String),
    /// `tls.crt` holds no PEM certificate.
    NoCertificate,
    /// A certificate of `tls.crt` does not parse.
    MalformedCertificate(String),
    /// `tls.key` holds no PEM private key, or one the provider cannot load.
    MalformedKey(String),
    /// A key of a type Envoy does not serve.
    UnsupportedKey(&'static str),
    /// The key is not the first certificate's.
    KeyMismatch,
    /// The first certificate is not valid yet, until `not_before`.
    NotYetValid(i64),
    /// The first certificate expired at `not_after`.
    Expired(i64),
    /// The provider's source could not be read (I/O, permissions, the API).
    Unreadable(String),
    /// Nobody serves this provider's secrets to this edge.
    Unserved(String),
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(what) => write!(f, "not found: {what}"),
            Self::NoCertificate => f.write_str("tls.crt holds no PEM certificate"),
            Self::MalformedCertificate(why) => write!(f, "tls.crt: a certificate does not parse ({why})"),
            Self::MalformedKey(why) => write!(f, "tls.key: no private key that can be loaded ({why})"),
            Self::UnsupportedKey(kind) => write!(
                f,
                "tls.key: {kind} keys are not served by Envoy (RSA of 2048 bits or more, ECDSA P-256 or P-384)"
            ),
            Self::KeyMismatch => f.write_str("tls.key is not the key of the first certificate of tls.crt"),
            Self::NotYetValid(at) => write!(f, "the certificate is not valid before {}", rfc3339(*at)),
            Self::Expired(at) => write!(f, "the certificate expired at {}", rfc3339(*at)),
            Self::Unreadable(why) => write!(f, "cannot be read: {why}"),
            Self::Unserved(why) => f.write_str(why),
        }
    }
}

/// `2026-11-29T19:01:31Z` (whole seconds, as Kubernetes writes times), or
/// the number of seconds when out of range.
pub fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|time| format!("{time:.0}"))
        .unwrap_or_else(|_| format!("{seconds} s after the Unix epoch"))
}

/// Checks a `kubernetes.io/tls` pair (`tls.crt`, `tls.key`), except for the
/// time, which [`Certificate::valid_at`] checks at each pass.
pub fn check(chain: &[u8], key: &[u8]) -> Result<Certificate, Invalid> {
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<_, _>>()
        .map_err(|err| Invalid::MalformedCertificate(pem_error(&err)))?;
    let Some(leaf) = certificates.first() else {
        return Err(Invalid::NoCertificate);
    };
    let mut validity = None;
    for (index, certificate) in certificates.iter().enumerate() {
        let (_, parsed) = x509_parser::parse_x509_certificate(certificate)
            .map_err(|err| Invalid::MalformedCertificate(format!("certificate {}: {err}", index + 1)))?;
        if index == 0 {
            validity = Some((
                parsed.validity().not_before.timestamp(),
                parsed.validity().not_after.timestamp(),
                hex(parsed.raw_serial()),
            ));
        }
    }
    let (not_before, not_after, serial) = validity.ok_or(Invalid::NoCertificate)?;
    // The pem error names the PEM section kind at most, never its bytes.
    let key_der = PrivateKeyDer::from_pem_slice(key).map_err(|err| Invalid::MalformedKey(pem_error(&err)))?;
    let label = match &key_der {
        PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
        PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
        _ => "PRIVATE KEY",
    };
    let key_pem = pem(label, key_der.secret_der());
    let provider = default_provider();
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        // rustls' error names the key's kind, not its content.
        .map_err(|err| Invalid::MalformedKey(err.to_string()))?;
    if signing_key.algorithm() == SignatureAlgorithm::ED25519 {
        return Err(Invalid::UnsupportedKey("Ed25519"));
    }
    match CertifiedKey::new(vec![leaf.clone()], signing_key).keys_match() {
        Ok(()) => {}
        Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) => return Err(Invalid::KeyMismatch),
        Err(err) => return Err(Invalid::MalformedKey(err.to_string())),
    }
    let chain_pem = certificates.iter().flat_map(|der| pem("CERTIFICATE", der)).collect();
    Ok(Certificate {
        chain_pem,
        key_pem,
        not_before,
        not_after,
        serial,
    })
}

impl Certificate {
    /// Whether the first certificate is valid at `now` (seconds since the
    /// Unix epoch): a client would refuse it otherwise.
    pub fn valid_at(&self, now: i64) -> Result<(), Invalid> {
        if now < self.not_before {
            Err(Invalid::NotYetValid(self.not_before))
        } else if now > self.not_after {
            Err(Invalid::Expired(self.not_after))
        } else {
            Ok(())
        }
    }
}

fn pem_error(err: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match err {
        Error::NoItemsFound => "no PEM section of the expected kind".to_owned(),
        Error::MissingSectionEnd { .. } => "a PEM section without its END line".to_owned(),
        Error::IllegalSectionStart { .. } => "a malformed BEGIN line".to_owned(),
        Error::Base64Decode(_) => "a PEM section that is not base64".to_owned(),
        _ => "unreadable PEM".to_owned(),
    }
}

/// PEM of `der` under `label`, lines of 64 characters.
fn pem(label: &str, der: &[u8]) -> Vec<u8> {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out.into_bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests;
