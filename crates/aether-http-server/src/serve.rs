//! The accept loop: bound, eviction, back-off, shutdown.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use crate::accept::{Backoff, accept};
use crate::connection::{self, Shared};
use crate::metrics::ListenerMetrics;
use crate::registry::{Admission, Registry, Room};
use crate::{BoxError, Config, Tls};

/// Connections the kernel may hold completed but not yet accepted (capped
/// by `net.core.somaxconn`, 4,096 on current kernels). tokio's default,
/// 1,024, is filled by a burst of connects well under the bound, and the
/// SYNs beyond it are dropped and resent only after 1, 3, 7 ... s.
const BACKLOG: u32 = 4096;

/// Binds `addr` for [`Server::serve`], with a listen backlog of 4,096.
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restart can bind while old
    // connections linger in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// A listener's configuration, TLS and metrics; [`Server::serve`] runs it.
pub struct Server {
    config: Config,
    tls: Option<Arc<dyn Tls>>,
    metrics: ListenerMetrics,
}

impl Server {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            tls: None,
            metrics: ListenerMetrics::default(),
        }
    }

    /// Serves TLS: a handshake (within [`Config::handshake_timeout`]) with
    /// the acceptor `tls` gives for each connection.
    pub fn tls(mut self, tls: Arc<dyn Tls>) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Counts into `metrics` (registered by the caller).
    pub fn metrics(mut self, metrics: ListenerMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Serves `service` on `listener` until `shutdown` resolves; then stops
    /// accepting, closes idle connections, lets requests in flight finish
    /// for [`Config::shutdown_grace`] and drops what is left.
    pub async fn serve<S, B>(self, listener: TcpListener, service: S, shutdown: impl Future<Output = ()>)
    where
        S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + Sync + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let registry = Registry::new(self.config.max_connections);
        let shared = Arc::new(Shared {
            config: self.config,
            tls: self.tls,
            metrics: self.metrics,
            service,
            shutdown: CancellationToken::new(),
            hard_stop: CancellationToken::new(),
        });
        let tasks = TaskTracker::new();
        let mut backoff = Backoff::default();
        let mut shutdown = pin!(shutdown);
        let name = shared.config.name;
        'accept: loop {
            // Accept only when the connection can be given a slot, now or
            // once an idle one is evicted; otherwise leave it to the backlog.
            loop {
                let room = registry.room();
                if room == Room::Now {
                    break;
                }
                tokio::select! {
                    () = &mut shutdown => break 'accept,
                    () = wait(&registry, room) => {}
                }
            }
            let (tcp, peer) = tokio::select! {
                () = &mut shutdown => break 'accept,
                accepted = accept(name, &listener, &mut backoff, &shared.metrics) => accepted,
            };
            shared.metrics.accepted.inc();
            let conn = loop {
                match registry.admit() {
                    Admission::Admitted(conn) => break conn,
                    Admission::Wait(room) => tokio::select! {
                        () = &mut shutdown => break 'accept,
                        () = wait(&registry, room) => {}
                    },
                }
            };
            tasks.spawn(connection::run(tcp, peer, conn, shared.clone()));
        }
        drop(listener);
        shared.shutdown.cancel();
        tasks.close();
        if tokio::time::timeout(shared.config.shutdown_grace, tasks.wait())
            .await
            .is_err()
        {
            warn!(
                listener = name,
                open = registry.len(),
                "shutdown grace period over; dropping open connections"
            );
            shared.hard_stop.cancel();
            tasks.wait().await;
        }
    }
}

/// Until `room` may have come (or the registry changed).
async fn wait(registry: &Registry, room: Room) {
    match room {
        Room::Now => {}
        Room::At(at) => tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            () = registry.changed() => {}
        },
        Room::Later => registry.changed().await,
    }
}
