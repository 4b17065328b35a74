//! Echo backends: one HTTP server per Envoy cluster, on its own port,
//! answering every request with a JSON [`Served`] naming the cluster and
//! what it received, so a test sees where Envoy sent a request and how.
//! Served by the shared listener, as every server of the repository.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use aether_listener::Protocol;
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
}

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
fn listener_config() -> aether_listener::Config {
    aether_listener::Config {
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
        };
        let body = serde_json::to_vec(&served).expect("Served serializes");
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .expect("a valid response"),
            )
        }
    });
    // Until the runtime is dropped with the backends.
    aether_listener::Server::new(listener_config())
        .serve(listener, service, std::future::pending())
        .await;
}
