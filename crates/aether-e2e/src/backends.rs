//! Echo backends: one HTTP server per Envoy cluster, on its own port,
//! answering every request with a JSON [`Served`] naming the cluster and
//! what it received (path, Host, every header), so a test sees where Envoy
//! sent a request and how. Served by the shared listener, as every server
//! of the repository.
//!
//! A request may ask its backend to misbehave, by headers the backend
//! reads (and still echoes): [`DELAY_HEADER`] (answer after so many
//! milliseconds), [`STATUS_HEADER`] (answer with that status) and
//! [`RESPONSE_HEADER_PREFIX`] (send a response header).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use aether_http_server::Protocol;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

/// What a backend answers: the cluster it serves and the request it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Served {
    /// The Envoy cluster (`svc` or `svc:port`) this backend stands for.
    pub cluster: String,
    /// The request's path as the backend received it.
    pub path: String,
    /// Its `Host` header.
    pub host: String,
    /// Every header, names in lower case, in the order received (a name
    /// sent twice appears twice).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

impl Served {
    /// The values of every header named `name` (lower case), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, value)| value.as_str())
            .collect()
    }
}

/// A request header asking the backend to answer after this many
/// milliseconds (at most [`MAX_DELAY`]): a slow backend, for timeouts.
pub const DELAY_HEADER: &str = "x-echo-delay-ms";
/// A request header asking the backend to answer with this status (a
/// failing backend, for retries); the body is the echo all the same.
pub const STATUS_HEADER: &str = "x-echo-status";
/// A request header `x-echo-response-NAME: VALUE` asks the backend to send
/// the response header `NAME: VALUE` (for response header changes).
pub const RESPONSE_HEADER_PREFIX: &str = "x-echo-response-";
/// The longest delay [`DELAY_HEADER`] may ask for.
pub const MAX_DELAY: Duration = Duration::from_secs(20);

/// The backends of a set of clusters, served until dropped.
pub struct Backends {
    addrs: BTreeMap<String, SocketAddr>,
    // Dropping the runtime stops every server.
    _runtime: tokio::runtime::Runtime,
}

impl Backends {
    /// One backend per cluster name, each on a free port of 127.0.0.1.
    pub fn start<S: AsRef<str>>(clusters: impl IntoIterator<Item = S>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("starting the backends' runtime");
        let mut addrs = BTreeMap::new();
        for cluster in clusters {
            let cluster = cluster.as_ref().to_owned();
            let listener = runtime
                .block_on(TcpListener::bind("127.0.0.1:0"))
                .expect("binding a backend");
            let addr = listener.local_addr().expect("a bound address");
            runtime.spawn(serve(listener, cluster.clone()));
            addrs.insert(cluster, addr);
        }
        Self {
            addrs,
            _runtime: runtime,
        }
    }

    /// Each cluster's address.
    pub fn addrs(&self) -> &BTreeMap<String, SocketAddr> {
        &self.addrs
    }
}

/// The listener's bounds for a backend: Envoy keeps its upstream
/// connections, so they are never closed for idling during a test.
fn listener_config() -> aether_http_server::Config {
    aether_http_server::Config {
        name: "backend",
        max_connections: 1024,
        handshake_timeout: Duration::from_secs(10),
        first_request_timeout: Duration::from_secs(60),
        header_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(3600),
        write_timeout: Duration::from_secs(60),
        shutdown_grace: Duration::from_secs(1),
        protocol: Protocol::Http1 {
            max_header_bytes: 64 * 1024,
        },
    }
}

async fn serve(listener: TcpListener, cluster: String) {
    let service = service_fn(move |request: Request<Incoming>| {
        let served = Served {
            cluster: cluster.clone(),
            path: request.uri().path_and_query().map_or("", |p| p.as_str()).to_owned(),
            host: request
                .headers()
                .get(hyper::header::HOST)
                .and_then(|host| host.to_str().ok())
                .unwrap_or("")
                .to_owned(),
            headers: request
                .headers()
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        };
        async move { Ok::<_, Infallible>(answer(served).await) }
    });
    // Until the runtime is dropped with the backends.
    aether_http_server::Server::new(listener_config())
        .serve(listener, service, std::future::pending())
        .await;
}

/// The answer to `served`, after the delay and with the status and
/// response headers it asks for.
async fn answer(served: Served) -> Response<Full<Bytes>> {
    let asked = |name: &str| {
        served
            .header_values(name)
            .first()
            .and_then(|value| value.parse::<u64>().ok())
    };
    if let Some(millis) = asked(DELAY_HEADER) {
        tokio::time::sleep(Duration::from_millis(millis).min(MAX_DELAY)).await;
    }
    let status = asked(STATUS_HEADER)
        .and_then(|status| u16::try_from(status).ok())
        .and_then(|status| hyper::StatusCode::from_u16(status).ok())
        .unwrap_or(hyper::StatusCode::OK);
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (name, value) in &served.headers {
        if let Some(name) = name.strip_prefix(RESPONSE_HEADER_PREFIX) {
            response = response.header(name, value);
        }
    }
    let body = serde_json::to_vec(&served).expect("Served serializes");
    response.body(Full::new(Bytes::from(body))).unwrap_or_else(|_| {
        // A response header the test asked for that HTTP does not allow.
        Response::builder()
            .status(hyper::StatusCode::BAD_REQUEST)
            .body(Full::new(Bytes::from_static(b"bad x-echo-response- header")))
            .expect("a valid response")
    })
}
