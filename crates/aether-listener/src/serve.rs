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
use crate::registry::{Admission, Registry};
use crate::{BoxError, Config, Tls};

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
            while !registry.has_room_or_victim() {
                tokio::select! {
                    () = &mut shutdown => break 'accept,
                    () = registry.changed() => {}
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
                    Admission::Wait => tokio::select! {
                        () = &mut shutdown => break 'accept,
                        () = registry.changed() => {}
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
