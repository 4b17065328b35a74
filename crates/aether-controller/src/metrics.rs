//! The controller's metrics (Prometheus text format): served over HTTP in
//! cluster mode ([`serve`], with a readiness endpoint), logged after each
//! reconcile in local mode.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use tracing::warn;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Every metric, registered in one registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Reconcile passes run.
    pub reconciles: Counter,
    /// Reconcile passes that failed part-way (a write or a patch failed).
    pub reconcile_errors: Counter,
    /// Time from the start of a pass to its last write or patch.
    pub reconcile_seconds: Histogram,
    /// Host conflicts in the current projection (one per lost host).
    pub conflicts: Gauge,
    /// Objects left out as invalid in the current projection.
    pub invalid_objects: Gauge,
    /// VirtualHost objects known.
    pub objects: Gauge,
    /// Files written (unchanged files are not counted).
    pub file_writes: Counter,
    /// Status patches sent.
    pub status_patches: Counter,
    /// Status patches the last pass did not send: left to the leader by a
    /// follower, or failed (retried).
    pub status_patches_pending: Gauge,
    /// 1 while this replica writes statuses (holds the Lease), else 0.
    pub leader: Gauge,
    /// xDS responses sent (route configurations pushed or re-sent).
    pub xds_responses: Counter,
    /// xDS responses Envoy rejected (NACKs).
    pub xds_nacks: Counter,
    /// xDS requests naming route configurations this server does not serve
    /// (counted once per stream per distinct list of names).
    pub xds_unknown_resource_requests: Counter,
    /// xDS streams open now.
    pub xds_streams: Gauge,
    /// 1 once a pass has written the edge's files (so every watched scope
    /// was listed); what `/readyz` answers from.
    pub ready: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, prefixed `aether_controller_`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("aether_controller");
        let metrics = Self {
            reconciles: Counter::default(),
            reconcile_errors: Counter::default(),
            // 1 ms to about 16 s.
            reconcile_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
            conflicts: Gauge::default(),
            invalid_objects: Gauge::default(),
            objects: Gauge::default(),
            file_writes: Counter::default(),
            status_patches: Counter::default(),
            status_patches_pending: Gauge::default(),
            leader: Gauge::default(),
            xds_responses: Counter::default(),
            xds_nacks: Counter::default(),
            xds_unknown_resource_requests: Counter::default(),
            xds_streams: Gauge::default(),
            ready: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register("reconciles", "Reconcile passes run", metrics.reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconcile passes in which a write or a status patch failed",
            metrics.reconcile_errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of a reconcile pass",
            metrics.reconcile_seconds.clone(),
        );
        registry.register(
            "host_conflicts",
            "Hosts lost to an older VirtualHost, in the current projection",
            metrics.conflicts.clone(),
        );
        registry.register(
            "invalid_objects",
            "VirtualHosts left out as invalid, in the current projection",
            metrics.invalid_objects.clone(),
        );
        registry.register("objects", "VirtualHost objects known", metrics.objects.clone());
        registry.register("file_writes", "Output files written", metrics.file_writes.clone());
        registry.register("status_patches", "Status patches sent", metrics.status_patches.clone());
        registry.register(
            "status_patches_pending",
            "Status patches the last pass did not send (left to the leader, or failed)",
            metrics.status_patches_pending.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the Lease and writes statuses",
            metrics.leader.clone(),
        );
        registry.register("xds_responses", "xDS responses sent", metrics.xds_responses.clone());
        registry.register("xds_nacks", "xDS responses Envoy rejected", metrics.xds_nacks.clone());
        registry.register(
            "xds_unknown_resource_requests",
            "xDS requests naming route configurations this server does not serve",
            metrics.xds_unknown_resource_requests.clone(),
        );
        registry.register("xds_streams", "xDS streams open now", metrics.xds_streams.clone());
        registry.register(
            "ready",
            "1 once a pass has written the edge's files",
            metrics.ready.clone(),
        );
        Self { registry, ..metrics }
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// Serves `metrics` on `listener` (HTTP/1.1): `GET /metrics` in the
/// Prometheus text format; `/readyz`, 200 once [`Metrics::ready`] is set and
/// 503 before (a replica that has not listed every scope serves nothing
/// useful, to Envoy or to anyone); 404 for any other path.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                warn!(error = %err, "metrics: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(respond(request.uri().path(), &metrics)) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(err) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                warn!(error = %err, "metrics: connection failed");
            }
        });
    }
}

fn respond(path: &str, metrics: &Metrics) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            Bytes::from(metrics.encode()),
        ),
        "/readyz" if metrics.ready.get() == 1 => (StatusCode::OK, "text/plain", Bytes::from_static(b"ready\n")),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            Bytes::from_static(b"no pass has written the edge's files yet\n"),
        ),
        _ => (StatusCode::NOT_FOUND, "text/plain", Bytes::from_static(b"not found\n")),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The status line and body of `GET path`, over a plain TCP connection.
    async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response.lines().next().unwrap().to_owned();
        let body = response.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
        (status, body)
    }

    #[tokio::test]
    async fn readyz_answers_503_until_a_pass_wrote_and_metrics_are_served() {
        let metrics = Arc::new(Metrics::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, metrics.clone()));

        assert_eq!(get(addr, "/readyz").await.0, "HTTP/1.1 503 Service Unavailable");
        metrics.ready.set(1);
        assert_eq!(get(addr, "/readyz").await.0, "HTTP/1.1 200 OK");
        metrics.reconciles.inc();
        let (status, body) = get(addr, "/metrics").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("aether_controller_reconciles_total 1"), "{body}");
        assert!(body.contains("aether_controller_ready 1"), "{body}");
        assert_eq!(get(addr, "/other").await.0, "HTTP/1.1 404 Not Found");
    }
}
