//! The one hardened HTTP server: every HTTP server of aether (the admission
//! webhook over TLS, the controller's xDS and metrics servers) accepts and
//! serves its connections here, so each defence exists once. A crate apart
//! from the binaries' other runtime (`aether-runtime`: the watch, logs and
//! `build_info`): the generic xDS server runs on it too, and knows no
//! VirtualHost and no Kubernetes.
//!
//! - **Connection bound with eviction.** At most
//!   [`Config::max_connections`] connections are open. At the bound a new
//!   connection is still accepted, and the connection idle the longest (no
//!   request in flight) is closed to make room: first those that never
//!   completed a request (a flood of silent connections), oldest first,
//!   then those idle since their last request. Refusing the newcomer
//!   instead, or leaving it in the listen backlog, lets a flood of idle
//!   connections that reconnect starve every real client; evicting an idle
//!   one costs its owner a reconnect at most. A connection that has not
//!   served a request is spared for its first second (its handshake and
//!   first request), or a flood beyond the bound evicts its own
//!   handshakes, and every real client's, faster than any ends. A
//!   connection with a request in flight (an xDS stream, a review being
//!   answered) is never evicted: when all are busy the newcomer waits.
//!   [`bind`] listens with a backlog of 4,096, so a burst of connects waits
//!   there rather than having its SYNs dropped.
//! - **Timeouts**, each closing the connection: the TLS handshake
//!   ([`Config::handshake_timeout`]); the first request, counted from
//!   accept or the handshake's end (for HTTP/2: preface, settings and a
//!   first stream; [`Config::first_request_timeout`]); a request's head,
//!   counted from its first byte (HTTP/1, [`Config::header_timeout`]);
//!   idleness between requests ([`Config::idle_timeout`]); a write that
//!   makes no progress, i.e. a client that does not read
//!   ([`Config::write_timeout`]).
//! - **Accept back-off.** An accept that fails for want of resources
//!   (EMFILE, ENFILE, ENOBUFS, ENOMEM) is retried after a pause that
//!   doubles from 5 ms to 1 s, logged once per burst (and once when it
//!   ends), and counted; errors about the one pending connection
//!   (ECONNABORTED and the like) are retried at once, since waiting would
//!   let a client that aborts its connects slow down everyone's accepts.
//!   [`fit_to_fd_limit`] keeps the bound under the process's descriptor
//!   limit, so that connections alone cannot exhaust it.
//! - **Graceful shutdown.** The listener closes; idle connections close at
//!   once; requests in flight finish (HTTP/2 gets GOAWAY) within
//!   [`Config::shutdown_grace`], then everything is dropped.
//!
//! - **TLS from files, reloaded** ([`ReloadingTls`]): the server
//!   certificate, its key and, for mutual TLS, the CA bundle client
//!   certificates must chain to; files changed on disk apply to the next
//!   handshake, and a set that does not load keeps the last good one.
//!
//! hyper serves HTTP/1.1 or HTTP/2 (prior knowledge, as gRPC inside a pod
//! network speaks it) over the accepted stream; the caller's service sees
//! plain `hyper` requests.

use std::time::Duration;

mod accept;
mod connection;
mod fd;
mod io;
mod metrics;
mod registry;
mod serve;
mod service;
mod tls;

pub use fd::{fit_to_fd_limit, hard_fd_limit, raise_fd_limit};
pub use metrics::{CloseReason, ListenerMetrics};
pub use serve::Server;
pub use serve::bind;
pub use tls::{ReloadingTls, TlsError, TlsFiles, TlsReloads, load_config};

/// The errors a service or a body may return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request at a time per connection.
    Http1 {
        /// Largest request head (hyper's read buffer); larger gets 431.
        max_header_bytes: usize,
    },
    /// HTTP/2 over plaintext with prior knowledge (h2c), as gRPC clients
    /// such as Envoy's speak it.
    Http2 {
        /// Streams open at once per connection.
        max_concurrent_streams: u32,
        /// A PING is sent after this long without a frame from the peer...
        keepalive_interval: Duration,
        /// ...and the connection closed if it is not answered within this:
        /// a peer gone without a FIN does not hold its streams forever.
        keepalive_timeout: Duration,
        /// Largest header list of a request.
        max_header_list_bytes: u32,
    },
}

/// The bounds of one listener. See the crate documentation.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The server's name in logs (`webhook`, `xds`, `metrics`).
    pub name: &'static str,
    /// Connections open at once (at least 1).
    pub max_connections: usize,
    /// Time for the TLS handshake (when the server has TLS).
    pub handshake_timeout: Duration,
    /// Time from accept, or from the TLS handshake's end, to the first
    /// request's head.
    pub first_request_timeout: Duration,
    /// HTTP/1: time from a request's first byte to its whole head.
    pub header_timeout: Duration,
    /// Time a connection that has served a request may stay without one.
    pub idle_timeout: Duration,
    /// Time a write may make no progress before the connection is closed.
    pub write_timeout: Duration,
    /// Time requests in flight get to finish on shutdown.
    pub shutdown_grace: Duration,
    pub protocol: Protocol,
}

/// Where the TLS configuration for the next handshake comes from
/// ([`ReloadingTls`] reloads its files when they change).
pub trait Tls: Send + Sync + 'static {
    /// The acceptor for one handshake.
    fn acceptor(&self) -> tokio_rustls::TlsAcceptor;
}
