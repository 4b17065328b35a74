//! Cluster mode's Secrets: a served certificate whose Secret is updated
//! to something that does not check (bad PEM, a key of another
//! certificate, a wrong type, an entry gone) keeps its last good chain
//! until a valid newer version arrives or the Secret is deleted.

use aether_api::config::v1::SecretProvider;
use aether_controller::TlsSettings;
use aether_controller::tls::Resolution;
use aether_controller::tls::certificate::Invalid;
use aether_controller::tls::cluster::ClusterSecrets;
use aether_projection::TlsSecret;
use aether_testing::pki::{Leaf, TestCa};

fn secret() -> TlsSecret {
    TlsSecret {
        provider: SecretProvider::Kubernetes,
        namespace: Some("default".to_owned()),
        secret_name: "api".to_owned(),
    }
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[test]
fn an_updated_secret_that_does_not_check_keeps_the_last_good_certificate() {
    let ca = TestCa::new();
    let first = ca.issue(&Leaf::new(&["api.example.com"], 0x60));
    let other = ca.issue(&Leaf::new(&["other.example.com"], 0x61));
    let settings = TlsSettings::new("/out");
    let mut secrets = ClusterSecrets::watched();
    let pair = |issued: &aether_testing::pki::Issued| {
        Ok((
            issued.chain_pem.clone().into_bytes(),
            issued.key_pem.clone().into_bytes(),
        ))
    };
    secrets.put("default", "api", pair(&first));
    let resolve = |secrets: &mut ClusterSecrets| secrets.resolve(&[secret()], &settings, now()).get(&secret());
    let Resolution::Ready(served) = resolve(&mut secrets) else {
        panic!("not ready")
    };
    assert_eq!(served.serial, first.serial);

    for (what, entries) in [
        (
            "bad PEM",
            Ok((
                b"-----BEGIN CERTIFICATE-----\nMIIB".to_vec(),
                first.key_pem.clone().into_bytes(),
            )),
        ),
        (
            "another key",
            Ok((first.chain_pem.clone().into_bytes(), other.key_pem.clone().into_bytes())),
        ),
        (
            "wrong type",
            Err(Invalid::Unserved(
                "the Secret's type is Opaque, not kubernetes.io/tls".to_owned(),
            )),
        ),
        (
            "no tls.key",
            Err(Invalid::Missing("the Secret has no tls.key".to_owned())),
        ),
    ] {
        secrets.put("default", "api", entries);
        match resolve(&mut secrets) {
            Resolution::Kept { certificate, .. } => assert_eq!(certificate.serial, first.serial, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    }

    // A valid newer version replaces it; a deletion drops it.
    secrets.put("default", "api", pair(&other));
    assert!(matches!(resolve(&mut secrets), Resolution::Ready(c) if c.serial == other.serial));
    secrets.remove("default", "api");
    assert!(matches!(resolve(&mut secrets), Resolution::Refused(_)));
}
