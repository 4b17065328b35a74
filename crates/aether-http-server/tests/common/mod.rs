//! A listener on 127.0.0.1 serving a small test service, and raw clients.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use aether_http_server::{Config, ListenerMetrics, Protocol, Server, Tls};
use bytes::Bytes;
use http_body::{Body, Frame};
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, oneshot};

/// Bounds small enough for tests: each timeout 300 ms unless a test says.
pub fn config(protocol: Protocol) -> Config {
    let short = Duration::from_millis(300);
    Config {
        name: "test",
        max_connections: 64,
        handshake_timeout: short,
        first_request_timeout: short,
        header_timeout: short,
        idle_timeout: short,
        write_timeout: short,
        shutdown_grace: Duration::from_secs(5),
        protocol,
    }
}

pub const HTTP1: Protocol = Protocol::Http1 {
    max_header_bytes: 16 * 1024,
};

pub const HTTP2: Protocol = Protocol::Http2 {
    max_concurrent_streams: 4,
    keepalive_interval: Duration::from_secs(10),
    keepalive_timeout: Duration::from_secs(5),
    max_header_list_bytes: 16 * 1024,
};

/// `GET /` answers `ok`; `GET /hold` answers once the test releases it
/// (`Running::release`); `GET /big` answers 256 MB, made as it is sent.
#[derive(Clone)]
pub struct TestService {
    release: Arc<Notify>,
}

impl TestService {
    pub fn new() -> Self {
        Self {
            release: Arc::new(Notify::new()),
        }
    }
}

/// A body of `left` bytes, in 1 MiB chunks of one shared buffer.
pub struct Big {
    left: usize,
    chunk: Bytes,
}

impl Body for Big {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(self.chunk.len());
        self.left -= n;
        Poll::Ready(Some(Ok(Frame::data(self.chunk.slice(..n)))))
    }
}

pub enum TestBody {
    Small(Option<Bytes>),
    Big(Big),
}

impl Body for TestBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            TestBody::Small(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            TestBody::Big(big) => Pin::new(big).poll_frame(cx),
        }
    }

    // A known length: hyper sends Content-Length, so a response ends with its body.
    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            TestBody::Small(bytes) => http_body::SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            TestBody::Big(big) => http_body::SizeHint::with_exact(big.left as u64),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            TestBody::Small(bytes) => bytes.is_none(),
            TestBody::Big(big) => big.left == 0,
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for TestService {
    type Response = Response<TestBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Response<TestBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let release = self.release.clone();
        Box::pin(async move {
            let body = match request.uri().path() {
                "/hold" => {
                    release.notified().await;
                    TestBody::Small(Some(Bytes::from_static(b"held")))
                }
                "/big" => TestBody::Big(Big {
                    left: 256 << 20,
                    chunk: Bytes::from(vec![b'x'; 1 << 20]),
                }),
                _ => TestBody::Small(Some(Bytes::from_static(b"ok"))),
            };
            Ok(Response::new(body))
        })
    }
}

/// A server running on its own task.
pub struct Running {
    pub addr: SocketAddr,
    pub metrics: ListenerMetrics,
    release: Arc<Notify>,
    stop: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Lets one `/hold` request answer.
    pub fn release(&self) {
        self.release.notify_one();
    }

    /// Starts the shutdown; the task ends when the server has stopped.
    pub fn stop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
    }
}

pub async fn start(config: Config, tls: Option<Arc<dyn Tls>>) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = ListenerMetrics::default();
    let release = Arc::new(Notify::new());
    let service = TestService {
        release: release.clone(),
    };
    let mut server = Server::new(config).metrics(metrics.clone());
    if let Some(tls) = tls {
        server = server.tls(tls);
    }
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.serve(listener, service, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        metrics,
        release,
        stop: Some(stop),
        task,
    }
}

/// Whether the server closes `stream` within `bound` (reading and
/// discarding whatever it sends first).
pub async fn closed_within<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, bound: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(bound, async {
        // Each read returns data, end of stream or an error; bounded above.
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Sends `GET path` on `stream` (HTTP/1.1, keep-alive) and reads the
/// response's status line and body (bodies here are short, and whole in one
/// read or two).
pub async fn get<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(stream: &mut S, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !response.ends_with(b"ok") && !response.ends_with(b"held") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before the response ended");
            response.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("a response within 10 s");
    String::from_utf8(response).unwrap()
}

pub async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}
