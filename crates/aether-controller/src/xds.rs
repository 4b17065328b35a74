//! The edge's configuration over gRPC: the RouteConfiguration (RDS), the
//! HTTPS listener (LDS) and its certificates (SDS, see
//! [`listeners_secrets`]). An alternative to `routes.json` for Envoys that
//! do not share the controller's file system. Served:
//! - `AggregatedDiscoveryService/DeltaAggregatedResources`: all three types
//!   on one delta stream, what Envoy's bootstrap uses ([`delta`]); and the
//!   delta stream of each type (`DeltaRoutes`, `DeltaListeners`,
//!   `DeltaSecrets`);
//! - the state-of-the-world stream of each type (`StreamRoutes`, ...) and
//!   `FetchRoutes` ([`sotw`]); state-of-the-world ADS is `UNIMPLEMENTED`.
//!
//! Each type's publication is a persistent map of resources ([`resources`]),
//! each with its version, made from the last publication so that streams
//! find what changed in O(changes). Each pass [`Publisher::publish`]es the
//! snapshot's RouteConfiguration as its route table (a piece per virtual
//! host, shared with the projection: O(1), no copy); its version is the
//! table's, made of its virtual hosts' digests, so every replica gives the
//! same configuration the same version and an unchanged one is not pushed
//! again.
//! Per stream, SotW or delta:
//! - ACKs and NACKs are matched by nonce; a request with an older nonce is
//!   stale (its ACK or NACK is ignored);
//! - a NACK is logged with Envoy's message and counted, and the rejected
//!   version is not sent again; the next change is. Over delta, an
//!   object's configuration refused alone is quarantined: every stream is
//!   served the last version an Envoy took instead (`xds/quarantine.rs`);
//! - names filter (the configuration's name is the projection's
//!   `route_configuration_name`, `aether-edge` by default); a stream naming
//!   other route configurations gets none of them. Envoy then waits for
//!   them (15 s by default) and serves its listener no routes, a mistake
//!   of configuration seen only on its side: so each such request is
//!   logged as a warning naming what was asked and what is served, and
//!   counted, once per stream and list of names (Envoy repeats its names
//!   in every SotW ACK);
//! - a client that does not read holds at most the latest version, shared
//!   with every other stream ([`sotw`], [`delta`]).
//!
//! The server is the shared listener's (`aether-http-server`: connection bound
//! with eviction of idle connections, handshake, preface and idle
//! timeouts, HTTP/2 keepalive, accept back-off, graceful shutdown), HTTP/2
//! over mutual TLS (Envoy presents a client certificate; [`transport`]),
//! or with prior knowledge in plaintext when the binary is told so. Its service is a hyper service: tonic decodes the requests,
//! and the responses are framed in `sotw/wire.rs` and `delta/wire.rs`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aether_http_server::{ListenerMetrics, Protocol};
use aether_projection::{ObjectKey, Snapshot};
use envoy_types::pb::envoy::config::core::v3::Node;
use futures_util::StreamExt;
use http::{Request, Response};
use hyper::body::Incoming;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tracing::warn;

use crate::metrics::Metrics;
use crate::outputs::ROUTE_CONFIGURATION_TYPE;

mod body;
pub mod delta;
pub mod fleet;
pub mod listeners_secrets;
pub(crate) mod quarantine;
mod rds;
pub mod requests;
pub mod resources;
mod since;
pub mod sotw;
pub mod transport;

pub use requests::{MAX_BUFFERED_REQUEST_BYTES, MAX_REQUEST_BYTES, RequestBudget};

pub use body::ResponseBody;
pub use resources::{Encoded, Item, Resources};
use sotw::{Current, Kind};

/// One version of the route configuration (its one resource, the
/// encoded `envoy.config.route.v3.RouteConfiguration`).
pub type Version = Resources;

/// Hands each pass's configuration to the server's streams.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// The route configuration's name (its resource name in RDS).
    name: Arc<str>,
    current: Arc<watch::Sender<Option<Arc<Version>>>>,
    /// What is served of the publications, given Envoys' refusals.
    quarantine: quarantine::Quarantine,
    /// What the last RDS publication was made from ([`rds`]).
    source: Arc<Mutex<Option<rds::Source>>>,
    /// Per object, the first plain route configuration and listener
    /// holding it as it is now ([`since`]).
    table_since: Arc<Mutex<since::Since>>,
    pub(crate) listener_since: Arc<Mutex<since::ListenerSince>>,
    /// The HTTPS listener and the certificates ([`listeners_secrets`]).
    pub(crate) tls: listeners_secrets::TlsSenders,
    /// The Envoys the streams serve, and what each applied.
    fleet: fleet::Fleet,
}

impl Publisher {
    /// Publishes `snapshot`'s route configurations (the plain one and each
    /// HTTPS chain's, see `xds/rds.rs`), made from the last publication;
    /// streams are woken only when one of them changed.
    pub fn publish(&self, snapshot: &Snapshot) {
        let mut source = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        // Most passes leave the routes alone: the same parts, told in O(1).
        if source.as_ref().is_some_and(|source| source.is(snapshot)) {
            return;
        }
        let mut next = self.quarantine.wanted();
        let last = source.take();
        let made = rds::update(&mut next, last.as_ref(), snapshot);
        let seq = next.get(&self.name).map_or(0, |item| item.seq);
        let mut since = self.table_since.lock().unwrap_or_else(PoisonError::into_inner);
        match last.as_ref().and_then(|last| last.changed_objects(snapshot)) {
            Some(changed) => {
                for key in changed {
                    if snapshot.routes().virtual_host(&key).is_some() {
                        since.moved(key, seq);
                    } else {
                        since.gone(&key);
                    }
                }
            }
            None => since.reset(seq),
        }
        drop(since);
        *source = Some(made);
        self.quarantine.publish(next);
    }

    /// The version last published, if any.
    pub fn current(&self) -> Option<Arc<Version>> {
        self.current.borrow().clone()
    }

    /// The Envoys served, and what each applied.
    pub fn fleet(&self) -> &fleet::Fleet {
        &self.fleet
    }

    /// What the fleet says of the object `key` of `snapshot`: `Rejected`
    /// while its configuration is quarantined (`xds/quarantine.rs`), otherwise
    /// what its Envoys hold of what it [needs](Publisher::needs).
    pub fn programmed(
        &self,
        snapshot: &Snapshot,
        tls: &crate::tls::Resolutions,
        key: &ObjectKey,
    ) -> crate::status::programmed::Programmed {
        if let Some(chain) = snapshot.tls_chain_of(key) {
            let name = chain.route_configuration_name(&self.name);
            if let Some(refusal) = self.quarantine.refusal(&name) {
                return crate::status::programmed::Programmed::Rejected {
                    envoy: refusal.envoy,
                    resource: format!("RouteConfiguration {name}"),
                    error: refusal.error,
                };
            }
        }
        self.fleet.programmed(&self.needs(snapshot, tls, key))
    }

    /// What the object `key` of `snapshot` needs of each Envoy, as now
    /// published: the plain route configuration, and for an object served
    /// over TLS the listener, its chain's configuration and its secret
    /// (when served here rather than by the mesh).
    pub fn needs(&self, snapshot: &Snapshot, tls: &crate::tls::Resolutions, key: &ObjectKey) -> Vec<fleet::Need> {
        let mut needs = Vec::new();
        // A shared resource as first published with the object ([`since`]).
        let mut need =
            |type_url: &'static str, current: Option<&Resources>, name: String, since: Option<&since::Since>| {
                if let Some(item) = current.and_then(|current| current.get(&name)) {
                    let seq = since.map_or(item.seq, |since| since.of(key, item.seq));
                    needs.push(fleet::Need { type_url, name, seq });
                }
            };
        let routes = self.current();
        let table_since = self.table_since.lock().unwrap_or_else(PoisonError::into_inner);
        need(
            ROUTE_CONFIGURATION_TYPE,
            routes.as_deref(),
            self.name.to_string(),
            Some(&table_since),
        );
        drop(table_since);
        if let Some(chain) = snapshot.tls_chain_of(key).filter(|chain| tls.usable(&chain.secret)) {
            let listeners = self.tls.listeners.borrow().clone();
            let listener_since = self.listener_since.lock().unwrap_or_else(PoisonError::into_inner);
            need(
                listeners_secrets::LISTENER_TYPE,
                listeners.as_deref(),
                aether_projection::listener::HTTPS_LISTENER.to_owned(),
                Some(&listener_since.since),
            );
            drop(listener_since);
            need(
                ROUTE_CONFIGURATION_TYPE,
                routes.as_deref(),
                chain.route_configuration_name(&self.name),
                None,
            );
            let secrets = self.tls.secrets.borrow().clone();
            need(
                listeners_secrets::SECRET_TYPE,
                secrets.as_deref(),
                aether_projection::listener::sds_secret_name(&chain.secret),
                None,
            );
        }
        needs
    }
}

/// The xDS service (RDS, LDS, SDS); see the module documentation.
#[derive(Clone)]
pub struct Discovery {
    /// The RouteConfiguration's name (what Envoy's `rds.route_config_name` says).
    name: Arc<str>,
    routes: Current,
    /// Envoys' refusals of route configurations, told by the streams.
    quarantine: quarantine::Quarantine,
    tls: listeners_secrets::TlsReceivers,
    metrics: Arc<Metrics>,
    /// Cancelled when the server stops: every stream ends.
    closing: CancellationToken,
    /// Every stream is a member while it lasts.
    fleet: fleet::Fleet,
    /// The server's TLS ([`transport`]); `None`: plaintext.
    server_tls: Option<Arc<dyn aether_http_server::Tls>>,
    /// The bytes of unfinished requests every stream may buffer together.
    budget: Arc<RequestBudget>,
}

/// A publisher and the service that serves what it publishes, the
/// RouteConfiguration named `name` (and the listener and secrets).
pub fn channel(name: &str, metrics: Arc<Metrics>) -> (Publisher, Discovery) {
    channel_with(name, metrics, fleet::Fleet::default())
}

/// [`channel`], its Envoys tracked by `fleet`.
pub fn channel_with(name: &str, metrics: Arc<Metrics>, fleet: fleet::Fleet) -> (Publisher, Discovery) {
    let (sender, receiver) = watch::channel(None);
    let sender = Arc::new(sender);
    let quarantine = quarantine::Quarantine::new(name.into(), sender.clone());
    let (tls_senders, tls_receivers) = listeners_secrets::channels();
    metrics.envoys.set(fleet.clone());
    let publisher = Publisher {
        name: name.into(),
        current: sender,
        quarantine: quarantine.clone(),
        source: Arc::default(),
        table_since: Arc::default(),
        listener_since: Arc::default(),
        tls: tls_senders,
        fleet: fleet.clone(),
    };
    let service = Discovery {
        name: name.into(),
        routes: receiver,
        quarantine,
        tls: tls_receivers,
        metrics,
        closing: CancellationToken::new(),
        fleet,
        server_tls: None,
        budget: RequestBudget::new(MAX_BUFFERED_REQUEST_BYTES),
    };
    (publisher, service)
}

/// The aggregated service (ADS): delta only.
const AGGREGATED_SERVICE: &str = "envoy.service.discovery.v3.AggregatedDiscoveryService";

/// Connections served at once (an edge has one per Envoy); fitted under
/// the descriptor limit by the binary.
pub const MAX_CONNECTIONS: usize = 1024;
/// Streams per connection (Envoy opens one aggregated stream; one per type
/// without ADS).
pub const MAX_STREAMS_PER_CONNECTION: u32 = 16;

/// The listener's bounds for the xDS server, `max_connections` at once.
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

impl Discovery {
    /// Buffers at most `bytes` of unfinished requests across every stream
    /// (default [`MAX_BUFFERED_REQUEST_BYTES`]).
    pub fn with_request_budget(mut self, bytes: usize) -> Self {
        self.budget = RequestBudget::new(bytes);
        self
    }

    /// The budget of unfinished request bytes, shared by every stream.
    pub fn request_budget(&self) -> &Arc<RequestBudget> {
        &self.budget
    }

    /// Serves over TLS with `tls`'s acceptor (mutual TLS: see [`transport`])
    /// rather than plaintext.
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

    /// What a gRPC service serves, if it is one of ours: the noun of its
    /// methods (`StreamRoutes`, `FetchRoutes`, `DeltaRoutes`), its kind of
    /// stream and the published resources.
    fn resources(&self, service: &str) -> Option<(&'static str, Kind, &Current)> {
        match service {
            "envoy.service.route.v3.RouteDiscoveryService" => Some(("Routes", self.routes_kind(), &self.routes)),
            "envoy.service.listener.v3.ListenerDiscoveryService" => Some((
                "Listeners",
                listeners_secrets::kind(listeners_secrets::LISTENER_TYPE),
                &self.tls.listeners,
            )),
            "envoy.service.secret.v3.SecretDiscoveryService" => Some((
                "Secrets",
                listeners_secrets::kind(listeners_secrets::SECRET_TYPE),
                &self.tls.secrets,
            )),
            _ => None,
        }
    }

    /// The RDS stream's kind: warns about names not served.
    fn routes_kind(&self) -> Kind {
        let (name, metrics) = (self.name.clone(), self.metrics.clone());
        Kind {
            type_url: ROUTE_CONFIGURATION_TYPE,
            // A stream asks for the configurations of its connection
            // managers, and is pushed only what changes among them.
            by_name: true,
            on_names: Arc::new(move |names, node| check_names(&name, names, node, &metrics)),
        }
    }

    /// The types of the aggregated stream, in the order responses go out
    /// when several are owed: listeners, routes, secrets (see [`delta`]).
    fn aggregated(&self) -> Vec<delta::Served> {
        [
            "envoy.service.listener.v3.ListenerDiscoveryService",
            "envoy.service.route.v3.RouteDiscoveryService",
            "envoy.service.secret.v3.SecretDiscoveryService",
        ]
        .into_iter()
        .filter_map(|service| self.resources(service))
        .map(|(_, kind, current)| self.served(kind, current))
        .collect()
    }

    /// `kind` served from `current`, its refusals quarantined when it is RDS.
    fn served(&self, kind: Kind, current: &Current) -> delta::Served {
        let quarantine = (kind.type_url == ROUTE_CONFIGURATION_TYPE).then(|| self.quarantine.clone());
        delta::Served {
            kind,
            current: current.clone(),
            quarantine,
        }
    }

    /// A delta stream of `types` on `request`.
    fn delta(&self, request: Request<Incoming>, types: Vec<delta::Served>) -> Response<ResponseBody> {
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
                "DeltaAggregatedResources" => self.delta(request, self.aggregated()),
                "StreamAggregatedResources" => Status::unimplemented(
                    "state-of-the-world ADS is not served: use DeltaAggregatedResources (ads_config api_type \
                     DELTA_GRPC), or the per-type streams",
                )
                .into_http(),
                _ => Status::unimplemented(format!("no method {path}")).into_http(),
            };
        }
        let Some((noun, kind, current)) = self.resources(service) else {
            return Status::unimplemented(format!("no service {service}")).into_http();
        };
        let verb = method.strip_suffix(noun).unwrap_or_default();
        if verb == "Stream" {
            let requests = self.requests(request);
            let body = sotw::stream(
                kind,
                requests,
                current.clone(),
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
            (kind.on_names)(&request.resource_names, request.node.as_ref());
            match sotw::fetch(&kind, &request.resource_names, current) {
                Ok(pieces) => ResponseBody::once(pieces).into_response(),
                Err(status) => status.into_http(),
            }
        } else if verb == "Delta" {
            let served = self.served(kind, current);
            self.delta(request, vec![served])
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

/// Warns about, and counts, a request whose `names` include some this
/// server does not serve (`served`). Called once per distinct request, not
/// for every ACK that repeats its names.
fn check_names(served: &str, names: &[String], node: Option<&Node>, metrics: &Metrics) {
    // The plain configuration, or a chain's (`served/NAMESPACE/NAME`).
    let ours = |name: &String| {
        name == served
            || name
                .strip_prefix(served)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|key| key.split('/').count() == 2)
    };
    if names.iter().all(ours) {
        return;
    }
    metrics.xds_unknown_resource_requests.inc();
    warn!(requested = ?names, %served, node = ?node.map(|node| &node.id),
        "xds: Envoy asked for a route configuration this server does not serve; \
         it gets none, and its listener no routes (check rds.route_config_name)");
}

#[cfg(test)]
mod tests;
