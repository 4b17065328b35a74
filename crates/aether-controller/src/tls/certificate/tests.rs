//! The checks, on certificates made by a throwaway CA.

use aether_testing::pki::{Leaf, TestCa, date_time_ymd};
use rcgen::{PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PKCS_ED25519};

use super::*;

fn issue(leaf: &Leaf<'_>) -> (Vec<u8>, Vec<u8>, String) {
    let issued = TestCa::new().issue(leaf);
    (
        issued.chain_pem.into_bytes(),
        issued.key_pem.into_bytes(),
        issued.serial,
    )
}

#[test]
fn a_matching_pair_passes_and_is_written_out_as_checked() {
    for algorithm in [&PKCS_ECDSA_P256_SHA256, &PKCS_ECDSA_P384_SHA384] {
        let (chain, key, serial) = issue(&Leaf {
            algorithm,
            ..Leaf::new(&["api.example.com"], 0x1234)
        });
        // Text around the PEM sections is not passed on.
        let noisy = [b"comment\n".as_slice(), &chain, b"trailer\n"].concat();
        let certificate = check(&noisy, &key).unwrap();
        assert_eq!(certificate.serial, serial);
        assert_eq!(certificate.chain_pem, chain, "the leaf and the CA, re-encoded alike");
        assert_eq!(
            check(&certificate.chain_pem, &certificate.key_pem).unwrap(),
            certificate
        );
        assert_eq!(certificate.not_before, 1_577_836_800);
        certificate.valid_at(1_800_000_000).unwrap();
    }
}

#[test]
fn every_fault_is_named_without_the_key() {
    let (chain, key, _) = issue(&Leaf::new(&["a.example.com"], 1));
    let (other_chain, other_key, _) = issue(&Leaf::new(&["a.example.com"], 2));
    let (ed_chain, ed_key, _) = issue(&Leaf {
        algorithm: &PKCS_ED25519,
        ..Leaf::new(&["a.example.com"], 3)
    });
    assert_eq!(check(&chain, &other_key), Err(Invalid::KeyMismatch));
    assert_eq!(check(&other_chain, &key), Err(Invalid::KeyMismatch));
    assert_eq!(check(b"", &key), Err(Invalid::NoCertificate));
    assert_eq!(check(&key, &key), Err(Invalid::NoCertificate));
    assert!(matches!(check(&chain, b""), Err(Invalid::MalformedKey(_))));
    assert!(matches!(check(&chain, &chain), Err(Invalid::MalformedKey(_))));
    assert_eq!(check(&ed_chain, &ed_key), Err(Invalid::UnsupportedKey("Ed25519")));
    let garbage = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert!(matches!(check(garbage, &key), Err(Invalid::MalformedCertificate(_))));
    let cut = &chain[..chain.len() / 3];
    assert!(matches!(check(cut, &key), Err(Invalid::MalformedCertificate(_))));
    let key_text = String::from_utf8(key.clone()).unwrap();
    let body: String = key_text.lines().filter(|line| !line.starts_with("-----")).collect();
    for result in [check(&chain, &other_key), check(&chain, &chain), check(cut, &key)] {
        let message = result.unwrap_err().to_string();
        assert!(!message.contains(&body[..16]), "{message}");
    }
    let certificate = check(&chain, &key).unwrap();
    let debug = format!("{certificate:?}");
    assert!(debug.contains("redacted") && !debug.contains(&body[..16]), "{debug}");
}

#[test]
fn the_validity_window_is_checked_at_each_moment() {
    let (chain, key, _) = issue(&Leaf {
        validity: Some((date_time_ymd(2030, 1, 1), date_time_ymd(2031, 1, 1))),
        ..Leaf::new(&["a.example.com"], 7)
    });
    let certificate = check(&chain, &key).unwrap();
    let (start, end) = (1_893_456_000, 1_924_992_000);
    assert_eq!((certificate.not_before, certificate.not_after), (start, end));
    assert_eq!(certificate.valid_at(start - 1), Err(Invalid::NotYetValid(start)));
    assert_eq!(certificate.valid_at(start), Ok(()));
    assert_eq!(certificate.valid_at(end + 1), Err(Invalid::Expired(end)));
    assert_eq!(
        Invalid::Expired(end).to_string(),
        "the certificate expired at 2031-01-01T00:00:00Z"
    );
}
