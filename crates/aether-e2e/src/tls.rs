//! A TLS client for the edge's HTTPS listener (rustls): it sends the SNI
//! it is given, trusts only the test CA, checks the served certificate
//! names that SNI, and returns the certificate's serial, or the request's
//! response over the connection.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use crate::http::{self, Response};
use aether_testing::pki::serial_of;

/// A TLS connection to `addr` for `sni`, handshake done; an error when the
/// edge refuses the handshake or serves a certificate the CA did not issue
/// for `sni`.
pub fn connect(addr: SocketAddr, sni: &str, ca: &[u8]) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca.to_vec()))
        .map_err(|err| io::Error::other(format!("the test CA: {err}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The request below is HTTP/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(sni.to_owned()).map_err(|err| io::Error::other(format!("SNI {sni}: {err}")))?;
    let connection = ClientConnection::new(Arc::new(config), name).map_err(io::Error::other)?;
    let socket = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    socket.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut stream = StreamOwned::new(connection, socket);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// The serial (hex) of the certificate the edge serves for `sni`.
pub fn serial(addr: SocketAddr, sni: &str, ca: &[u8]) -> io::Result<String> {
    let stream = connect(addr, sni, ca)?;
    let leaf = stream
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or_else(|| io::Error::other("no certificate served"))?;
    Ok(serial_of(leaf))
}

/// `GET path` with `Host: host` over a TLS connection for `sni`.
pub fn get(addr: SocketAddr, sni: &str, host: &str, path: &str, ca: &[u8]) -> io::Result<Response> {
    request(addr, sni, "GET", host, path, &[], ca)
}

/// `method path` with `Host: host` and `headers` over a TLS connection for
/// `sni`.
pub fn request(
    addr: SocketAddr,
    sni: &str,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    ca: &[u8],
) -> io::Result<Response> {
    let mut stream = connect(addr, sni, ca)?;
    http::exchange(&mut stream, method, host, path, headers)
}
