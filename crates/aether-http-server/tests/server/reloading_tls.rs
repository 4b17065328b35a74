//! `ReloadingTls`: mutual TLS against a CA bundle, and certificate, key
//! and CA files replaced under a running server.

use std::sync::Arc;
use std::time::Duration;

use aether_http_server::{CloseReason, ReloadingTls, Tls, TlsFiles, TlsReloads};
use aether_testing::pki::{Issued, Leaf, TestCa, date_time_ymd, replace};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{HTTP1, config, connect, start};

/// A client trusting `server_ca`, presenting `cert` when given.
fn client(server_ca: &TestCa, cert: Option<&Issued>) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server_ca.der.clone().into()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match cert {
        None => builder.with_no_client_auth(),
        Some(leaf) => {
            let chain = CertificateDer::pem_slice_iter(leaf.chain_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// `GET /` over a new connection: the server's certificate, or the
/// error that ended the exchange (a refused client certificate shows up
/// here with TLS 1.3, whose client finishes its handshake first).
async fn get(addr: std::net::SocketAddr, connector: &tokio_rustls::TlsConnector) -> Result<Vec<u8>, String> {
    let exchange = async {
        let mut tls = connector
            .connect(ServerName::try_from("localhost").unwrap(), connect(addr).await)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let served = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
        tls.write_all(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut response = Vec::new();
        let mut buf = [0u8; 4096];
        while !response.ends_with(b"ok") {
            match tls.read(&mut buf).await {
                Ok(0) => return Err("closed before a response".to_owned()),
                Ok(n) => response.extend_from_slice(&buf[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(served)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .unwrap_or_else(|_| Err("no answer within 10 s".to_owned()))
}

struct Pki {
    dir: tempfile::TempDir,
    files: TlsFiles,
}

fn pki(server: &Issued, client_ca: &TestCa) -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
        client_ca: Some(dir.path().join("ca.crt")),
    };
    std::fs::write(&files.cert, &server.chain_pem).unwrap();
    std::fs::write(&files.key, &server.key_pem).unwrap();
    std::fs::write(files.client_ca.as_ref().unwrap(), client_ca.pem()).unwrap();
    Pki { dir, files }
}

fn reloads(reloads: &TlsReloads, result: &'static str) -> u64 {
    reloads.get_or_create(&[("result", result)]).get()
}

#[tokio::test]
async fn clients_without_a_certificate_or_from_another_ca_are_refused() {
    let (server_ca, client_ca, other_ca) = (TestCa::new(), TestCa::new(), TestCa::new());
    let server_leaf = server_ca.issue(&Leaf::new(&["localhost"], 1));
    let pki = pki(&server_leaf, &client_ca);
    let tls = ReloadingTls::new("test", pki.files.clone(), &[b"http/1.1"], TlsReloads::default()).unwrap();
    let server = start(config(HTTP1), Some(Arc::new(tls) as Arc<dyn Tls>)).await;

    let good = client_ca.issue(&Leaf::new(&["envoy"], 2));
    assert_eq!(
        get(server.addr, &client(&server_ca, Some(&good))).await.unwrap(),
        server_leaf.der
    );
    let without = get(server.addr, &client(&server_ca, None)).await;
    assert!(without.is_err(), "a client without a certificate was served");
    let foreign = get(
        server.addr,
        &client(&server_ca, Some(&other_ca.issue(&Leaf::new(&["envoy"], 3)))),
    )
    .await;
    assert!(foreign.is_err(), "a client certificate of another CA was accepted");
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.metrics.closed(CloseReason::HandshakeFailed) != 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("both refused handshakes counted");
    // And the good client is still served.
    assert!(get(server.addr, &client(&server_ca, Some(&good))).await.is_ok());
}

#[tokio::test]
async fn replaced_files_serve_on_the_next_handshake_and_a_corrupt_replacement_keeps_the_last_good() {
    let (server_ca, client_ca) = (TestCa::new(), TestCa::new());
    let first = server_ca.issue(&Leaf::new(&["localhost"], 1));
    let pki = pki(&first, &client_ca);
    let counts = TlsReloads::default();
    let tls = ReloadingTls::new("test", pki.files.clone(), &[b"http/1.1"], counts.clone()).unwrap();
    let server = start(config(HTTP1), Some(Arc::new(tls) as Arc<dyn Tls>)).await;
    let envoy = client(&server_ca, Some(&client_ca.issue(&Leaf::new(&["envoy"], 2))));
    assert_eq!(get(server.addr, &envoy).await.unwrap(), first.der);

    // A rotation (key first, then the certificate, as a Secret update may
    // land): the next connection gets the new certificate.
    let second = server_ca.issue(&Leaf::new(&["localhost"], 3));
    replace(&pki.files.key, &second.key_pem);
    replace(&pki.files.cert, &second.chain_pem);
    assert_eq!(get(server.addr, &envoy).await.unwrap(), second.der);
    assert_eq!(reloads(&counts, "ok"), 1);

    // A corrupt certificate, then a missing key: the last good pair serves on.
    replace(&pki.files.cert, "-----BEGIN CERTIFICATE-----\nnot base64\n");
    assert_eq!(get(server.addr, &envoy).await.unwrap(), second.der);
    std::fs::remove_file(&pki.files.key).unwrap();
    assert_eq!(get(server.addr, &envoy).await.unwrap(), second.der);
    assert_eq!(reloads(&counts, "error"), 2);
    // Repaired: served again.
    let third = server_ca.issue(&Leaf::new(&["localhost"], 4));
    replace(&pki.files.key, &third.key_pem);
    replace(&pki.files.cert, &third.chain_pem);
    assert_eq!(get(server.addr, &envoy).await.unwrap(), third.der);
    assert_eq!(reloads(&counts, "ok"), 2);

    // A corrupt CA bundle keeps the previous one...
    let ca_file = pki.files.client_ca.clone().unwrap();
    replace(&ca_file, "garbage");
    assert_eq!(get(server.addr, &envoy).await.unwrap(), third.der);
    assert_eq!(reloads(&counts, "error"), 3);
    // ...and a new one replaces it: its clients are served, the old CA's refused.
    let new_client_ca = TestCa::new();
    replace(&ca_file, &new_client_ca.pem());
    let renewed = client(&server_ca, Some(&new_client_ca.issue(&Leaf::new(&["envoy"], 5))));
    assert_eq!(get(server.addr, &renewed).await.unwrap(), third.der);
    assert!(
        get(server.addr, &envoy).await.is_err(),
        "a client of the replaced CA is still accepted"
    );
    assert_eq!(reloads(&counts, "ok"), 3);
    drop(pki.dir);
}

#[test]
fn a_set_that_does_not_load_at_start_up_is_an_error_naming_the_file() {
    let (server_ca, client_ca) = (TestCa::new(), TestCa::new());
    let pki = pki(&server_ca.issue(&Leaf::new(&["localhost"], 1)), &client_ca);
    let ca = pki.files.client_ca.clone().unwrap();
    std::fs::write(&ca, "no PEM here").unwrap();
    let err = ReloadingTls::new("test", pki.files.clone(), &[], TlsReloads::default())
        .err()
        .expect("a CA file without a certificate is refused");
    assert!(err.to_string().contains(&ca.display().to_string()), "{err}");
    let missing = TlsFiles {
        key: pki.dir.path().join("missing.key"),
        ..pki.files.clone()
    };
    let err = ReloadingTls::new("test", missing, &[], TlsReloads::default())
        .err()
        .expect("a missing key is refused");
    assert!(err.to_string().contains("missing.key"), "{err}");
}

/// A server certificate out of its validity fails every client's
/// handshake: it is refused at start, naming the file, and a replacement
/// that is expired or not yet valid keeps the last good one serving.
#[tokio::test]
async fn an_expired_or_not_yet_valid_certificate_is_refused_at_start_and_kept_out_on_reload() {
    let (server_ca, client_ca) = (TestCa::new(), TestCa::new());
    let expired = server_ca.issue(&Leaf {
        validity: Some((date_time_ymd(2000, 1, 1), date_time_ymd(2001, 1, 1))),
        ..Leaf::new(&["localhost"], 5)
    });
    let future = server_ca.issue(&Leaf {
        validity: Some((date_time_ymd(2999, 1, 1), date_time_ymd(3000, 1, 1))),
        ..Leaf::new(&["localhost"], 6)
    });
    for (leaf, why) in [(&expired, "expired"), (&future, "not valid before")] {
        let pki = pki(leaf, &client_ca);
        let err = ReloadingTls::new("test", pki.files.clone(), &[b"http/1.1"], TlsReloads::default())
            .err()
            .expect("an out-of-validity certificate was loaded")
            .to_string();
        assert!(err.contains("tls.crt") && err.contains(why), "{err}");
    }

    let good = server_ca.issue(&Leaf::new(&["localhost"], 7));
    let pki = pki(&good, &client_ca);
    let counts = TlsReloads::default();
    let tls = ReloadingTls::new("test", pki.files.clone(), &[b"http/1.1"], counts.clone()).unwrap();
    let server = start(config(HTTP1), Some(Arc::new(tls) as Arc<dyn Tls>)).await;
    let envoy = client(&server_ca, Some(&client_ca.issue(&Leaf::new(&["envoy"], 8))));
    assert_eq!(get(server.addr, &envoy).await.unwrap(), good.der);
    for (n, leaf) in [&expired, &future].into_iter().enumerate() {
        replace(&pki.files.key, &leaf.key_pem);
        replace(&pki.files.cert, &leaf.chain_pem);
        assert_eq!(get(server.addr, &envoy).await.unwrap(), good.der);
        assert_eq!(reloads(&counts, "error"), n as u64 + 1);
    }
    assert_eq!(reloads(&counts, "ok"), 0);
}
