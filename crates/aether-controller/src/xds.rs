//! The route configuration over gRPC: Envoy's Route Discovery Service
//! (`envoy.service.route.v3.RouteDiscoveryService`, state of the world), on
//! envoy-types' tonic server. An alternative to `routes.json` for Envoys
//! that do not share the controller's file system. Beside it, on the same
//! server and through the same stream implementation ([`sotw`]), the
//! HTTPS listener (LDS) and its certificates (SDS): see [`tls`].
//!
//! Each pass [`Publisher::publish`]es the snapshot's RouteConfiguration; its
//! version is a digest of its bytes, so every replica gives the same
//! configuration the same version and an unchanged one is not pushed again.
//! Per stream (the xDS protocol, SotW):
//! - the first request gets the current configuration (or waits for the
//!   first pass); later ones are ACKs or NACKs of what was sent, matched by
//!   nonce; a request with an older nonce is stale and ignored;
//! - a NACK is logged with Envoy's message and counted, and the rejected
//!   version is not sent again; the next change is;
//! - `resource_names` filters (the configuration's name is the projection's
//!   `route_configuration_name`, `aether-edge` by default); a request naming
//!   other resources gets a response without them. Envoy then waits for
//!   them (15 s by default) and serves its listener no routes, a mistake
//!   of configuration seen only on its side: so each such request is
//!   logged as a warning naming what was asked and what is served, and
//!   counted, once per stream and list of names (Envoy repeats its names
//!   in every ACK).
//!
//! Delta xDS is not served (`UNIMPLEMENTED`): one resource gains nothing
//! from it.

use std::pin::Pin;
use std::sync::Arc;

use aether_projection::Snapshot;
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_server::{
    RouteDiscoveryService, RouteDiscoveryServiceServer,
};
use futures_util::Stream;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::{info, warn};

use crate::metrics::Metrics;
use crate::outputs::ROUTE_CONFIGURATION_TYPE;

pub mod sotw;
pub mod tls;

pub use sotw::Resources;
use sotw::{Kind, StreamState};

/// Responses a stream may have queued before it stops reading new versions.
const STREAM_BUFFER: usize = 4;

/// One version of the route configuration (its one resource, the
/// encoded `envoy.config.route.v3.RouteConfiguration`).
pub type Version = Resources;

/// Hands each pass's configuration to the server's streams.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// The route configuration's name (its resource name in RDS).
    name: Arc<str>,
    current: Arc<watch::Sender<Option<Arc<Version>>>>,
    /// The HTTPS listener and the certificates ([`tls`]).
    pub(crate) tls: tls::TlsSenders,
}

impl Publisher {
    /// Publishes `snapshot`'s configuration; streams are woken only when its
    /// version differs from the last one published.
    pub fn publish(&self, snapshot: &Snapshot) {
        let binary = snapshot.route_configuration_binary();
        self.current.send_if_modified(|current| {
            // Most passes leave the routes alone: a comparison, no digest or copy.
            if current
                .as_ref()
                .is_some_and(|current| current.items.first().is_some_and(|(_, body)| body == binary))
            {
                return false;
            }
            // The same version as routes.json's versionInfo.
            let next = Resources::new(vec![(self.name.to_string(), binary.to_vec())]);
            info!(version = %next.version, bytes = binary.len(), "xds: new route configuration");
            *current = Some(Arc::new(next));
            true
        });
    }

    /// The version last published, if any.
    pub fn current(&self) -> Option<Arc<Version>> {
        self.current.borrow().clone()
    }
}

/// The RDS service; see the module documentation.
#[derive(Debug, Clone)]
pub struct RouteDiscovery {
    /// The RouteConfiguration's name (what Envoy's `rds.route_config_name` says).
    name: Arc<str>,
    current: watch::Receiver<Option<Arc<Version>>>,
    metrics: Arc<Metrics>,
    tls: tls::TlsReceivers,
}

/// A publisher and the service that serves what it publishes, the
/// RouteConfiguration named `name`.
pub fn channel(name: &str, metrics: Arc<Metrics>) -> (Publisher, RouteDiscovery) {
    let (sender, receiver) = watch::channel(None);
    let (tls_senders, tls_receivers) = tls::channels();
    let publisher = Publisher {
        name: name.into(),
        current: Arc::new(sender),
        tls: tls_senders,
    };
    let service = RouteDiscovery {
        name: name.into(),
        current: receiver,
        metrics,
        tls: tls_receivers,
    };
    (publisher, service)
}

impl RouteDiscovery {
    /// The tonic service, to add to a `tonic::transport::Server`.
    pub fn into_service(self) -> RouteDiscoveryServiceServer<Self> {
        RouteDiscoveryServiceServer::new(self)
    }

    /// Serves RDS (gRPC over plaintext HTTP/2, as Envoy's `envoy_grpc`
    /// cluster speaks it inside the pod network) on `listener` until the
    /// listener fails, to at most [`MAX_CONNECTIONS`] connections at once.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> Result<(), tonic::transport::Error> {
        self.serve_bounded(listener, MAX_CONNECTIONS).await
    }

    /// [`RouteDiscovery::serve`] with another connection bound: a connection
    /// beyond it waits in the listen backlog until one closes.
    pub async fn serve_bounded(
        self,
        listener: tokio::net::TcpListener,
        max_connections: usize,
    ) -> Result<(), tonic::transport::Error> {
        let (listeners, secrets) = tls::services(&self.tls, &self.metrics);
        tonic::transport::Server::builder()
            // Each stream is a task and a response buffer: bound them too.
            .max_concurrent_streams(Some(MAX_STREAMS_PER_CONNECTION))
            .add_service(self.into_service())
            .add_service(listeners)
            .add_service(secrets)
            .serve_with_incoming(bounded::incoming(listener, max_connections))
            .await
    }
}

/// Connections served at once (an edge has one per Envoy).
pub const MAX_CONNECTIONS: usize = 1024;
/// Streams per connection (Envoy opens one for RDS).
pub const MAX_STREAMS_PER_CONNECTION: u32 = 16;

/// Accepting under a connection bound. tonic has no server-wide connection
/// limit, and a flood of idle connections would otherwise cost memory
/// without end; written here because the accept loop is tonic's and takes
/// only a stream of connections.
mod bounded {
    use std::io;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use futures_util::Stream;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::{OwnedSemaphorePermit, Semaphore};
    use tonic::transport::server::{Connected, TcpConnectInfo};

    /// A connection holding one of the bound's permits until dropped.
    pub struct Bounded {
        stream: TcpStream,
        _permit: OwnedSemaphorePermit,
    }

    /// The accepted connections of `listener`, `max` at a time: the next
    /// accept waits for a permit.
    pub fn incoming(listener: TcpListener, max: usize) -> impl Stream<Item = io::Result<Bounded>> {
        let permits = Arc::new(Semaphore::new(max));
        futures_util::stream::unfold((listener, permits), |(listener, permits)| async move {
            let permit = permits
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            let accepted = listener.accept().await.map(|(stream, _)| Bounded {
                stream,
                _permit: permit,
            });
            Some((accepted, (listener, permits)))
        })
    }

    impl Connected for Bounded {
        type ConnectInfo = TcpConnectInfo;

        fn connect_info(&self) -> TcpConnectInfo {
            self.stream.connect_info()
        }
    }

    impl AsyncRead for Bounded {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.stream).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Bounded {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.stream).poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.stream).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.stream).poll_shutdown(cx)
        }
    }
}

/// Warns about, and counts, a request whose `names` include some this
/// server does not serve (`served`). Called once per distinct request, not
/// for every ACK that repeats its names.
fn check_names(served: &str, names: &[String], node: Option<&Node>, metrics: &Metrics) {
    if names.iter().all(|name| name == served) {
        return;
    }
    metrics.xds_unknown_resource_requests.inc();
    warn!(requested = ?names, %served, node = ?node.map(|node| &node.id),
        "xds: Envoy asked for a route configuration this server does not serve; \
         it gets none, and its listener no routes (check rds.route_config_name)");
}

/// The RDS stream's kind: warns about names not served.
fn routes_kind(name: Arc<str>, metrics: Arc<Metrics>) -> Kind {
    Kind {
        type_url: ROUTE_CONFIGURATION_TYPE,
        by_name: false,
        on_names: Arc::new(move |names, node| check_names(&name, names, node, &metrics)),
    }
}

type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl RouteDiscoveryService for RouteDiscovery {
    type StreamRoutesStream = ResponseStream<DiscoveryResponse>;
    type DeltaRoutesStream = ResponseStream<DeltaDiscoveryResponse>;

    async fn stream_routes(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamRoutesStream>, Status> {
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        let current = self.current.clone();
        tokio::spawn(sotw::serve_stream(
            routes_kind(self.name.clone(), self.metrics.clone()),
            request.into_inner(),
            current,
            sender,
            self.metrics.clone(),
        ));
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
    }

    async fn delta_routes(
        &self,
        _request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaRoutesStream>, Status> {
        Err(Status::unimplemented(
            "delta xDS is not served; use the state-of-the-world StreamRoutes",
        ))
    }

    async fn fetch_routes(&self, request: Request<DiscoveryRequest>) -> Result<Response<DiscoveryResponse>, Status> {
        let request = request.into_inner();
        check_names(
            &self.name,
            &request.resource_names,
            request.node.as_ref(),
            &self.metrics,
        );
        let current = self.current.borrow().clone();
        let Some(version) = current else {
            return Err(Status::unavailable("no route configuration yet"));
        };
        let mut state = StreamState::new(ROUTE_CONFIGURATION_TYPE, false, request.resource_names);
        Ok(Response::new(state.response(&version)))
    }
}

#[cfg(test)]
mod tests;
