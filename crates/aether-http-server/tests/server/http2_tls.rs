//! HTTP/2 (no preface, streams keep a connection busy, GOAWAY on
//! shutdown) and TLS (handshakes that never come, a real client).

use std::sync::Arc;
use std::time::Duration;

use aether_http_server::{CloseReason, Tls};
use aether_testing::pki::{Leaf, TestCa};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use crate::common::{HTTP1, HTTP2, closed_within, config, connect, get, start};

type Sender = hyper::client::conn::http2::SendRequest<Empty<Bytes>>;

/// An HTTP/2 client connection (prior knowledge) to `addr`, and its task
/// (which ends when the connection closes).
async fn h2(addr: std::net::SocketAddr) -> (Sender, tokio::task::JoinHandle<()>) {
    let io = TokioIo::new(connect(addr).await);
    let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (sender, task)
}

async fn h2_get(sender: &mut Sender, path: &str) -> String {
    let request = Request::get(format!("http://test{path}")).body(Empty::new()).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn http2_without_a_preface_is_closed_and_an_open_stream_keeps_its_connection() {
    let server = start(config(HTTP2), None).await;
    let mut silent = connect(server.addr).await;
    assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::FirstRequestTimeout), 1);

    let (mut sender, connection) = h2(server.addr).await;
    assert_eq!(h2_get(&mut sender, "/").await, "ok");
    // A stream in flight for longer than the idle timeout (300 ms): the
    // connection stays, and the stream is answered.
    let mut held = sender.clone();
    let hold = tokio::spawn(async move { h2_get(&mut held, "/hold").await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!hold.is_finished());
    server.release();
    assert_eq!(hold.await.unwrap(), "held");
    // Then idle: closed after the idle timeout.
    tokio::time::timeout(Duration::from_secs(5), connection)
        .await
        .expect("an idle HTTP/2 connection is closed")
        .unwrap();
    // The client sees GOAWAY before the server's task has counted the close.
    tokio::time::timeout(Duration::from_secs(5), async {
        while server.metrics.closed(CloseReason::IdleTimeout) != 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("closed for being idle");
}

/// A peer that vanished without a FIN holds a stream in flight: here a
/// client that opens `/hold` with hand-written frames and never reads (a
/// hyper client would answer PINGs from its own task). The PING it never
/// answers closes the connection and frees the slot.
#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_closed_even_with_a_stream_open() {
    let mut config = config(HTTP2);
    config.protocol = aether_http_server::Protocol::Http2 {
        max_concurrent_streams: 4,
        keepalive_interval: Duration::from_millis(300),
        keepalive_timeout: Duration::from_millis(300),
        max_header_list_bytes: 16 * 1024,
    };
    config.idle_timeout = Duration::from_secs(30);
    let server = start(config, None).await;
    let mut peer = connect(server.addr).await;
    let mut frames = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    // SETTINGS, empty.
    frames.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // HEADERS on stream 1, END_HEADERS | END_STREAM: GET http://test/hold
    // (HPACK: indexed :method GET, :scheme http; literal :path, :authority).
    let block: Vec<u8> = [&[0x82, 0x86, 0x44, 5][..], b"/hold", &[0x41, 4], b"test"].concat();
    frames.extend_from_slice(&[0, 0, block.len() as u8, 1, 0x5, 0, 0, 0, 1]);
    frames.extend_from_slice(&block);
    tokio::io::AsyncWriteExt::write_all(&mut peer, &frames).await.unwrap();
    // The stream is in flight...
    tokio::time::timeout(Duration::from_secs(5), async {
        while server.metrics.open.get() != 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    // ...and the peer reads nothing more: within its PING's interval and
    // timeout (300 ms each), the connection is closed.
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.metrics.open.get() != 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("closed once its PING went unanswered");
    assert_eq!(server.metrics.closed(CloseReason::Error), 1);
    drop(peer);
}

#[tokio::test]
async fn http2_shutdown_lets_the_stream_in_flight_finish() {
    let mut server = start(config(HTTP2), None).await;
    let (mut sender, _connection) = h2(server.addr).await;
    let hold = tokio::spawn(async move { h2_get(&mut sender, "/hold").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.release();
    assert_eq!(hold.await.unwrap(), "held");
    tokio::time::timeout(Duration::from_secs(5), server.task)
        .await
        .expect("stopped once the stream finished")
        .unwrap();
}

/// A certificate for `localhost` from a throwaway CA.
struct TestTls {
    acceptor: tokio_rustls::TlsAcceptor,
    ca: TestCa,
}

impl Tls for TestTls {
    fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        self.acceptor.clone()
    }
}

fn tls() -> Arc<TestTls> {
    let ca = TestCa::new();
    let leaf = ca.issue(&Leaf::new(&["localhost"], 1));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der.into(), ca.der.clone().into()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der)),
        )
        .unwrap();
    Arc::new(TestTls {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca,
    })
}

#[tokio::test]
async fn a_handshake_that_never_comes_is_closed_and_a_real_client_is_served() {
    let mut config = config(HTTP1);
    config.first_request_timeout = Duration::from_secs(30);
    let tls = tls();
    let server = start(config, Some(tls.clone() as Arc<dyn Tls>)).await;
    let mut silent = connect(server.addr).await;
    assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::HandshakeTimeout), 1);

    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls.ca.client_config()));
    let mut stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), connect(server.addr).await)
        .await
        .unwrap();
    assert!(get(&mut stream, "/").await.ends_with("ok"));
    // Not a TLS client at all: the handshake fails, and is counted.
    let mut garbage = connect(server.addr).await;
    tokio::io::AsyncWriteExt::write_all(&mut garbage, b"GET / HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    assert!(closed_within(&mut garbage, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::HandshakeFailed), 1);
}
