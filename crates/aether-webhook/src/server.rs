//! The HTTPS server's routes and request limits, served by the shared
//! listener (`aether-http-server`: TLS, HTTP/1.1, the connection bound with
//! eviction of idle connections, handshake, header, idle and write
//! timeouts, accept back-off, graceful shutdown).
//!
//! HTTP/1.1 only (ALPN offers `http/1.1` alone and connections are served
//! as HTTP/1.1), so HTTP/2 rapid reset does not apply; each connection
//! carries one request at a time. Bounds of the requests themselves, each
//! answered rather than waited out: a body read timeout (408); a body size
//! limit (413); a header buffer limit (431); JSON nesting depth (400). No
//! YAML is parsed.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;

use crate::admission::{self, BadRequest, Decision};
use crate::budget::Budget;
use crate::index::HostIndex;
use crate::metrics::{HttpLabels, Metrics};
use crate::tls::ReloadingTls;

pub const VALIDATE_PATH: &str = "/validate-virtualhost";
pub const HEALTHZ_PATH: &str = "/healthz";
pub const READYZ_PATH: &str = "/readyz";
pub const METRICS_PATH: &str = "/metrics";

/// Server bounds. The defaults suit an API server caller: it times out
/// after the webhook's `timeoutSeconds` (5) anyway.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request body; larger gets 413. An object is at most ~1.5 MiB
    /// (etcd's limit) and an UPDATE review carries it twice.
    pub max_body_bytes: usize,
    /// Most open connections. At the bound a new connection is served and
    /// the one idle the longest closed (one that never sent a request
    /// first); only when every connection has a request in flight does a
    /// new one wait in the listen backlog.
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    /// Time for a request's headers to arrive (the first request's counted
    /// from the handshake's end, a later one's from its first byte).
    pub header_timeout: Duration,
    /// Time for a request's body to arrive, once its headers have.
    pub body_timeout: Duration,
    /// Request bodies held at once, in bytes, all connections together
    /// (see [`Budget`]): a body that cannot take its share within
    /// `body_timeout` gets 503. Without it, bodies were bounded only by
    /// connections times `max_body_bytes` (4,096 × 3.5 MiB = 14 GiB).
    pub body_budget_bytes: usize,
    /// Time a connection may stay open without a request, after one.
    pub idle_timeout: Duration,
    /// Time a response write may make no progress (a client that does not read).
    pub write_timeout: Duration,
    /// Time in-flight requests get to finish on shutdown.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 3 * 1024 * 1024 + 512 * 1024,
            // An idle TLS connection costs about 20 KB (2,000 measured at
            // 40 MB): 4,096 fit well within the Deployment's 256 MiB, so a
            // flood of 2,000 idle connections is simply held, and floods
            // beyond the bound evict silent connections first.
            max_connections: 4096,
            handshake_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            // Nine reviews of the largest size at once, thousands of the
            // usual few kilobytes; parsing takes a few times a body's size,
            // within the Deployment's 256 MiB.
            body_budget_bytes: 32 * 1024 * 1024,
            // Longer than the API server's own idle timeout for its webhook
            // connections (Go's 90 s), so the client closes first and never
            // sends a review on a connection this end is closing.
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// What answers `POST /validate-virtualhost` bodies. The webhook's is
/// [`Reviewer`]; the benchmark's floor answers a constant.
pub trait Admit: Send + Sync + 'static {
    fn review(&self, body: &[u8]) -> Result<(Vec<u8>, Decision), BadRequest>;
}

/// The webhook's handler: [`admission::review`] against a host index.
pub struct Reviewer(pub Arc<HostIndex>);

impl Admit for Reviewer {
    fn review(&self, body: &[u8]) -> Result<(Vec<u8>, Decision), BadRequest> {
        admission::review(body, &self.0)
    }
}

/// Shared state of the request handlers.
pub struct App {
    pub admit: Arc<dyn Admit>,
    pub metrics: Arc<Metrics>,
    /// Set once the host index has its first full list: until then a review
    /// could miss a conflict, so `/readyz` says 503.
    pub ready: Arc<AtomicBool>,
    pub index: Option<Arc<HostIndex>>,
    pub limits: Limits,
    /// [`Limits::body_budget`].
    pub body_budget: Budget,
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn is_json(request: &Request<Incoming>) -> bool {
    request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

impl App {
    async fn handle(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        let (route, response) = match (request.method(), path) {
            (&Method::GET, HEALTHZ_PATH) => (HEALTHZ_PATH, text(StatusCode::OK, "ok\n")),
            (&Method::GET, READYZ_PATH) => (
                READYZ_PATH,
                if self.ready.load(Ordering::Acquire) {
                    text(StatusCode::OK, "ready\n")
                } else {
                    text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the host index has not been listed yet\n",
                    )
                },
            ),
            (&Method::GET, METRICS_PATH) => {
                if let Some(index) = &self.index {
                    let (objects, hosts) = index.len();
                    self.metrics.index_objects.set(objects as i64);
                    self.metrics.index_hosts.set(hosts as i64);
                }
                let mut response = text(StatusCode::OK, self.metrics.encode());
                response.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
                );
                (METRICS_PATH, response)
            }
            (&Method::POST, VALIDATE_PATH) => (VALIDATE_PATH, self.validate(request).await),
            (_, VALIDATE_PATH | HEALTHZ_PATH | READYZ_PATH | METRICS_PATH) => {
                ("other", text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"))
            }
            _ => ("other", text(StatusCode::NOT_FOUND, "not found\n")),
        };
        self.metrics
            .http_responses
            .get_or_create(&HttpLabels {
                route,
                code: response.status().as_u16(),
            })
            .inc();
        response
    }

    async fn validate(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if !is_json(&request) {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json (an admission.k8s.io/v1 AdmissionReview)\n",
            );
        }
        let limit = self.limits.max_body_bytes;
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return too_large(limit);
        }
        // The share of the budget this body may take, held until answered.
        let deadline = tokio::time::Instant::now() + self.limits.body_timeout;
        let share = declared.map_or(limit, |n| n as usize);
        let Some(_share) = self.body_budget.take(share, deadline).await else {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many request bodies are being read at once; retry\n",
            );
        };
        let body = Limited::new(request.into_body(), limit);
        let bytes = match tokio::time::timeout_at(deadline, body.collect()).await {
            Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time\n"),
            Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => return too_large(limit),
            Ok(Err(e)) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("could not read the request body: {e}\n"),
                );
            }
            Ok(Ok(collected)) => collected.to_bytes(),
        };
        let started = Instant::now();
        let outcome = self.admit.review(&bytes);
        self.metrics.review_seconds.observe(started.elapsed().as_secs_f64());
        match outcome {
            Ok((json, decision)) => {
                self.metrics
                    .decisions
                    .get_or_create(&[("decision", decision.label())])
                    .inc();
                let mut response = Response::new(Full::new(Bytes::from(json)));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            Err(BadRequest(message)) => {
                self.metrics
                    .decisions
                    .get_or_create(&[("decision", "bad_request")])
                    .inc();
                text(StatusCode::BAD_REQUEST, format!("{message}\n"))
            }
        }
    }
}

fn too_large(limit: usize) -> Response<Full<Bytes>> {
    text(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than the {limit}-byte limit\n"),
    )
}

impl Limits {
    /// The shared budget for request bodies ([`Limits::body_budget_bytes`]),
    /// never less than one body of the largest size.
    pub fn body_budget(&self) -> Budget {
        Budget::new(self.body_budget_bytes.max(self.max_body_bytes))
    }

    /// The listener's bounds for these limits.
    pub fn listener(&self) -> aether_http_server::Config {
        aether_http_server::Config {
            name: "webhook",
            max_connections: self.max_connections,
            handshake_timeout: self.handshake_timeout,
            first_request_timeout: self.header_timeout,
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
            write_timeout: self.write_timeout,
            shutdown_grace: self.shutdown_grace,
            // Larger heads are refused (431): by hyper, or by the listener
            // when one arrives whole in one read.
            protocol: aether_http_server::Protocol::Http1 {
                max_header_bytes: 64 * 1024,
            },
        }
    }
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves, then stops
/// accepting and lets open requests finish (up to `limits.shutdown_grace`).
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let config = app.limits.listener();
    let metrics = app.metrics.listener.clone();
    let service = service_fn(move |request| {
        let app = app.clone();
        async move { Ok::<_, Infallible>(app.handle(request).await) }
    });
    aether_http_server::Server::new(config)
        .tls(tls)
        .metrics(metrics)
        .serve(listener, service, shutdown)
        .await;
    Ok(())
}
