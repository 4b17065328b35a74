//! One connection, from accept to close: TLS handshake, hyper, and the
//! watch that closes it when it is evicted, times out or the server stops.

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulConnection;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::io::{Io, Tracked};
use crate::metrics::{CloseReason, ListenerMetrics};
use crate::registry::{Conn, Slot};
use crate::service::Counted;
use crate::{BoxError, Config, Protocol, Tls};

/// How long a connection closed for a timeout or an eviction gets to
/// close cleanly (HTTP/2 GOAWAY, a request that raced in) before it is
/// dropped. Its slot is held meanwhile, so this is short.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What every connection of one server shares.
pub(crate) struct Shared<S> {
    pub(crate) config: Config,
    pub(crate) tls: Option<Arc<dyn Tls>>,
    pub(crate) metrics: ListenerMetrics,
    pub(crate) service: S,
    /// Cancelled when the server stops accepting: close gracefully.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled when the shutdown grace is over: drop now.
    pub(crate) hard_stop: CancellationToken,
}

/// Serves one accepted connection until it closes; its slot is freed when
/// this returns.
pub(crate) async fn run<S, B>(tcp: TcpStream, peer: SocketAddr, conn: Arc<Conn>, shared: Arc<Shared<S>>)
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let _slot = Slot(conn.clone());
    shared.metrics.open.inc();
    let reason = serve(tcp, &conn, &shared).await;
    shared.metrics.open.dec();
    shared.metrics.count_close(reason);
    debug!(listener = shared.config.name, %peer, ?reason, "connection closed");
}

async fn serve<S, B>(tcp: TcpStream, conn: &Arc<Conn>, shared: &Shared<S>) -> CloseReason
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let config = &shared.config;
    let _ = tcp.set_nodelay(true);
    let io = match &shared.tls {
        None => Io::Plain(tcp),
        Some(tls) => {
            let handshake = tokio::time::timeout(config.handshake_timeout, tls.acceptor().accept(tcp));
            tokio::select! {
                () = shared.shutdown.cancelled() => return CloseReason::Shutdown,
                () = conn.evicted() => return CloseReason::Evicted,
                done = handshake => match done {
                    Ok(Ok(stream)) => Io::Tls(Box::new(stream)),
                    Ok(Err(error)) => {
                        debug!(listener = config.name, %error, "TLS handshake failed");
                        return CloseReason::HandshakeFailed;
                    }
                    Err(_) => return CloseReason::HandshakeTimeout,
                },
            }
        }
    };
    conn.ready();
    let http1 = matches!(config.protocol, Protocol::Http1 { .. });
    let io = TokioIo::new(Tracked::new(io, conn.clone(), http1, config.write_timeout));
    let service = Counted {
        inner: shared.service.clone(),
        conn: conn.clone(),
        max_head_bytes: match config.protocol {
            Protocol::Http1 { max_header_bytes } => Some(max_header_bytes),
            Protocol::Http2 { .. } => None,
        },
    };
    match config.protocol {
        Protocol::Http1 { max_header_bytes } => {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                // Counted from a head's first byte by the watch below, not
                // from the start of an idle wait as hyper's would be.
                .header_read_timeout(None)
                .max_buf_size(max_header_bytes.max(8192))
                .keep_alive(true);
            watch(builder.serve_connection(io, service), conn, shared).await
        }
        Protocol::Http2 {
            max_concurrent_streams,
            keepalive_interval,
            keepalive_timeout,
            max_header_list_bytes,
        } => {
            let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            builder
                .timer(TokioTimer::new())
                .max_concurrent_streams(max_concurrent_streams)
                .keep_alive_interval(keepalive_interval)
                .keep_alive_timeout(keepalive_timeout)
                .max_header_list_size(max_header_list_bytes);
            watch(builder.serve_connection(io, service), conn, shared).await
        }
    }
}

/// Drives `connection` until it ends, or until it is evicted, times out or
/// the server stops; then closes it gracefully, within a bound.
async fn watch<C, S>(connection: C, conn: &Conn, shared: &Shared<S>) -> CloseReason
where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    let mut connection = pin!(connection);
    let reason = tokio::select! {
        result = connection.as_mut() => return match result {
            Ok(()) => CloseReason::Closed,
            Err(_) if conn.write_timed_out() => CloseReason::WriteTimeout,
            Err(error) => {
                debug!(listener = shared.config.name, %error, "connection failed");
                CloseReason::Error
            }
        },
        reason = conn.expired(&shared.config) => reason,
        () = shared.shutdown.cancelled() => CloseReason::Shutdown,
    };
    if !conn.has_served() && reason != CloseReason::Shutdown {
        // It never sent a request: nothing to finish or to tell, and an
        // HTTP/2 connection still waiting for its preface would wait for it
        // before it could say GOAWAY. Dropped now, its slot is free now.
        return reason;
    }
    // HTTP/1: closes now if idle, else after the response in flight;
    // HTTP/2: GOAWAY, and the streams in flight may finish.
    connection.as_mut().graceful_shutdown();
    let grace = match reason {
        // Until the server's shutdown grace is over.
        CloseReason::Shutdown => Duration::MAX,
        _ => CLOSE_GRACE,
    };
    tokio::select! {
        _ = connection => {}
        () = tokio::time::sleep(grace) => {}
        () = shared.hard_stop.cancelled() => {}
    }
    reason
}
