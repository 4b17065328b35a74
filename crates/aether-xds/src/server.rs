//! The xDS service: which gRPC services and methods are answered, by which
//! stream (state of the world, [`crate::sotw`]; delta, [`crate::delta`]),
//! and the listener that serves it (`aether-http-server`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aether_http_server::{ListenerMetrics, Protocol};
use futures_util::StreamExt;
use http::{Request, Response};
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::body::ResponseBody;
use crate::delta::{self, Served};
use crate::fleet::Fleet;
use crate::metrics::XdsMetrics;
use crate::requests::{self, MAX_BUFFERED_REQUEST_BYTES, RequestBudget};
use crate::sotw;

/// The aggregated service (ADS): delta only.
const AGGREGATED_SERVICE: &str = "envoy.service.discovery.v3.AggregatedDiscoveryService";

/// Connections served at once (an edge has one per Envoy); fitted under
/// the descriptor limit by the binary.
pub const MAX_CONNECTIONS: usize = 1024;
/// Streams per connection (Envoy opens one aggregated stream; one per type
/// without ADS).
pub const MAX_STREAMS_PER_CONNECTION: u32 = 16;

/// The listener's bounds for an xDS server, `max_connections` at once.
pub fn listener_config(max_connections: usize) -> aether_http_server::Config {
    aether_http_server::Config {
        name: "xds",
        max_connections,
        // The TLS handshake (over TLS), then the preface, settings and the
        // first stream, come within milliseconds from Envoy.
        handshake_timeout: Duration::from_secs(10),
        first_request_timeout: Duration::from_secs(10),
        header_timeout: Duration::from_secs(10),
        // A connection without a stream; Envoy's always has its RDS stream.
        idle_timeout: Duration::from_secs(300),
        // A client that stops reading its socket altogether.
        write_timeout: Duration::from_secs(30),
        shutdown_grace: Duration::from_secs(5),
        protocol: Protocol::Http2 {
            max_concurrent_streams: MAX_STREAMS_PER_CONNECTION,
            // A peer gone without a FIN frees its slot within 40 s.
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            max_header_list_bytes: 16 * 1024,
        },
    }
}

/// One gRPC service answered, and the type it serves.
#[derive(Clone)]
pub struct Service {
    /// Its full name: `envoy.service.route.v3.RouteDiscoveryService`.
    pub name: &'static str,
    /// The noun of its methods: `Routes` (`StreamRoutes`, `FetchRoutes`,
    /// `DeltaRoutes`).
    pub noun: &'static str,
    /// The type served, its publications and its quarantine (delta only).
    pub served: Served,
}

/// The xDS service: a hyper service answering each [`Service`]'s methods
/// and the aggregated delta stream of all their types.
#[derive(Clone)]
pub struct Discovery {
    /// In the order the aggregated stream sends types when several are owed.
    services: Arc<[Service]>,
    metrics: Arc<dyn XdsMetrics>,
    /// Cancelled when the server stops: every stream ends.
    closing: CancellationToken,
    /// Every stream is a member while it lasts.
    fleet: Fleet,
    /// The server's TLS ([`crate::transport`]); `None`: plaintext.
    server_tls: Option<Arc<dyn aether_http_server::Tls>>,
    /// The bytes of unfinished requests every stream may buffer together.
    budget: Arc<RequestBudget>,
}

impl Discovery {
    /// Serves `services` (the aggregated stream's types in their order),
    /// counted in `metrics`, every stream a member of `fleet`.
    pub fn new(services: Vec<Service>, metrics: Arc<dyn XdsMetrics>, fleet: Fleet) -> Self {
        Self {
            services: services.into(),
            budget: RequestBudget::new(MAX_BUFFERED_REQUEST_BYTES, metrics.clone()),
            metrics,
            closing: CancellationToken::new(),
            fleet,
            server_tls: None,
        }
    }

    /// Buffers at most `bytes` of unfinished requests across every stream
    /// (default [`MAX_BUFFERED_REQUEST_BYTES`]).
    pub fn with_request_budget(mut self, bytes: usize) -> Self {
        self.budget = RequestBudget::new(bytes, self.metrics.clone());
        self
    }

    /// The budget of unfinished request bytes, shared by every stream.
    pub fn request_budget(&self) -> &Arc<RequestBudget> {
        &self.budget
    }

    /// Serves over TLS with `tls`'s acceptor (mutual TLS: see
    /// [`crate::transport`]) rather than plaintext.
    pub fn with_tls(mut self, tls: Arc<dyn aether_http_server::Tls>) -> Self {
        self.server_tls = Some(tls);
        self
    }

    /// Serves xDS on `listener` with the default bounds
    /// ([`listener_config`] of [`MAX_CONNECTIONS`]) until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) {
        self.serve_with(
            listener,
            listener_config(MAX_CONNECTIONS),
            ListenerMetrics::default(),
            std::future::pending(),
        )
        .await;
    }

    /// Serves xDS on `listener` with `config`'s bounds until `shutdown`
    /// resolves; then every stream ends with UNAVAILABLE (Envoy reconnects
    /// to another replica) and the connections close (see
    /// `aether-http-server`).
    pub async fn serve_with(
        self,
        listener: tokio::net::TcpListener,
        config: aether_http_server::Config,
        metrics: ListenerMetrics,
        shutdown: impl Future<Output = ()>,
    ) {
        let closing = self.closing.clone();
        let shutdown = async move {
            shutdown.await;
            closing.cancel();
        };
        let mut server = aether_http_server::Server::new(config).metrics(metrics);
        if let Some(tls) = self.server_tls.clone() {
            server = server.tls(tls);
        }
        server.serve(listener, self, shutdown).await;
    }

    /// A delta stream of `types` on `request`.
    fn delta(&self, request: Request<Incoming>, types: Vec<Served>) -> Response<ResponseBody> {
        let requests = delta::DeltaRequests::new(request.into_body(), self.budget.clone());
        delta::stream(types, requests, self.metrics.clone(), &self.fleet, self.closing.clone()).into_response()
    }

    /// The request messages of a call, within the shared budget.
    fn requests(&self, request: Request<Incoming>) -> requests::Requests {
        requests::Requests::new(request.into_body(), self.budget.clone())
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        // `/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes`
        let path = request.uri().path().to_owned();
        let Some((service, method)) = path.trim_start_matches('/').split_once('/') else {
            return Status::unimplemented(format!("no method {path}")).into_http();
        };
        if service == AGGREGATED_SERVICE {
            return match method {
                "DeltaAggregatedResources" => {
                    let types = self.services.iter().map(|service| service.served.clone()).collect();
                    self.delta(request, types)
                }
                "StreamAggregatedResources" => Status::unimplemented(
                    "state-of-the-world ADS is not served: use DeltaAggregatedResources (ads_config api_type \
                     DELTA_GRPC), or the per-type streams",
                )
                .into_http(),
                _ => Status::unimplemented(format!("no method {path}")).into_http(),
            };
        }
        let Some(Service { noun, served, .. }) = self.services.iter().find(|ours| ours.name == service) else {
            return Status::unimplemented(format!("no service {service}")).into_http();
        };
        let verb = method.strip_suffix(noun).unwrap_or_default();
        if verb == "Stream" {
            let requests = self.requests(request);
            let body = sotw::stream(
                served.kind.clone(),
                requests,
                served.current.clone(),
                self.metrics.clone(),
                &self.fleet,
                self.closing.clone(),
            );
            body.into_response()
        } else if verb == "Fetch" {
            let request = match self.requests(request).next().await {
                Some(Ok(request)) => request,
                Some(Err(status)) => return status.into_http(),
                None => return Status::invalid_argument("no request message").into_http(),
            };
            (served.kind.on_names)(&request.resource_names, request.node.as_ref());
            match sotw::fetch(&served.kind, &request.resource_names, &served.current) {
                Ok(pieces) => ResponseBody::once(pieces).into_response(),
                Err(status) => status.into_http(),
            }
        } else if verb == "Delta" {
            self.delta(request, vec![served.clone()])
        } else {
            Status::unimplemented(format!("no method {path}")).into_http()
        }
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Discovery {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: Request<Incoming>) -> ResponseFuture {
        let service = self.clone();
        Box::pin(async move { Ok(service.answer(request).await) })
    }
}
