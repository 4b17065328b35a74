//! The controller's metrics (Prometheus text format): served over HTTP in
//! cluster mode ([`serve`], with a readiness endpoint), logged after each
//! reconcile in local mode.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, UNIX_EPOCH};

use aether_http_server::{ListenerMetrics, Protocol};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The prefix of the controller's own metrics.
const PREFIX: &str = "aether_controller";

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
    /// 1 while the newest HTTPS listener is not written to `listeners.json`
    /// because Envoy could not watch all of its files.
    pub envoy_listener_refused: Gauge,
    /// VirtualHost objects known.
    pub objects: Gauge,
    /// Local mode: manifest files served as last read (unreadable, no
    /// longer parsing, or set aside for changing), at the last pass.
    pub manifest_stale_files: Gauge,
    /// Local mode: manifest files set aside at the last pass for not
    /// settling within their bound (`Limits::max_settle_wait`, 5 s).
    pub manifest_changing_files: Gauge,
    /// TLS secrets served as their last good certificate at the last pass:
    /// the pair read now fails (unreadable, invalid, not valid now), each
    /// also logged and said in its objects' `ResolvedRefs`.
    pub tls_secrets_kept: Gauge,
    /// Files written (unchanged files are not counted).
    pub file_writes: Counter,
    /// Status patches sent.
    pub status_patches: Counter,
    /// Status patches the last pass did not send: left to the leader by a
    /// follower, or failed (retried).
    pub status_patches_pending: Gauge,
    /// 1 while this replica writes statuses (holds the Lease), else 0.
    pub leader: Gauge,
    /// Kubernetes Events recorded (condition transitions).
    pub events: Counter,
    /// Kubernetes Events not recorded: refused by the API server, or
    /// dropped with the queue full (statuses are written regardless).
    pub event_failures: Counter,
    /// xDS responses sent (route configurations pushed or re-sent).
    pub xds_responses: Counter,
    /// xDS responses Envoy rejected (NACKs).
    pub xds_nacks: Counter,
    /// xDS requests naming route configurations this server does not serve
    /// (counted once per stream per distinct list of names).
    pub xds_unknown_resource_requests: Counter,
    /// xDS streams open now.
    pub xds_streams: Gauge,
    /// xDS streams ended for what their client sent, by reason
    /// (`request_budget`, `request_too_large`, `subscription`; each also
    /// logged).
    pub xds_streams_refused: Family<Labels, Counter>,
    /// Resources quarantined: an Envoy refused one, and every Envoy is
    /// served the last version taken instead (each also logged).
    pub xds_resources_quarantined: Counter,
    /// 1 once a pass has written the edge's files (so every watched scope
    /// was listed); what `/readyz` answers from.
    pub ready: Gauge,
    /// The xDS server's connections (`xds_connections` ...).
    pub xds_listener: ListenerMetrics,
    /// The metrics server's connections (`http_connections` ...).
    pub http_listener: ListenerMetrics,
    /// Reloads of the xDS server's certificate, key and client CA files,
    /// by result (`ok`; `error`: the previous ones serve on).
    pub xds_tls_reloads: aether_http_server::TlsReloads,
    /// The xDS fleet, once served: its Envoys' answers, read at each scrape.
    pub(crate) envoys: Envoys,
}

/// Per Envoy node, what its xDS streams answered, read from the fleet at
/// each scrape (`xds_envoy_*`): the publication each type holds, the
/// responses refused on its open streams, when it last answered, and how
/// long the oldest sync it has not answered has waited. Only nodes with a
/// stream open, at most `aether_xds::fleet::MAX_REPORTED_NODES` of them
/// (the rest as `node="(other nodes)"`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Envoys(Arc<OnceLock<aether_xds::fleet::Fleet>>);

impl Envoys {
    /// Reads `fleet` from now on (the first one set stays).
    pub(crate) fn set(&self, fleet: aether_xds::fleet::Fleet) {
        let _ = self.0.set(fleet);
    }
}

type Labels = Vec<(&'static str, String)>;

impl Collector for Envoys {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(fleet) = self.0.get() else {
            return Ok(());
        };
        let held: Family<Labels, Gauge> = Family::default();
        let nacks: Family<Labels, Gauge> = Family::default();
        let last_answer: Family<Labels, Gauge<f64, AtomicU64>> = Family::default();
        let behind: Family<Labels, Gauge<f64, AtomicU64>> = Family::default();
        // Streams of one node (one per type without ADS) make one series;
        // nodes past the fleet's bound, one more (`(other nodes)`).
        for (node, report) in fleet.reports_by_node() {
            let labels = vec![("node", node.clone())];
            for (kind, seq) in &report.held {
                let gauge = held.get_or_create(&vec![("node", node.clone()), ("type", (*kind).to_owned())]);
                gauge.set(gauge.get().max(i64::try_from(*seq).unwrap_or(i64::MAX)));
            }
            nacks
                .get_or_create(&labels)
                .set(i64::try_from(report.nacks).unwrap_or(i64::MAX));
            if let Some(at) = report.last_answer.and_then(|at| at.duration_since(UNIX_EPOCH).ok()) {
                last_answer.get_or_create(&labels).set(at.as_secs_f64());
            }
            behind.get_or_create(&labels).set(report.behind.as_secs_f64());
        }
        let families: [(&str, &str, &dyn EncodeMetric); 4] = [
            (
                "xds_envoy_held_publication",
                "The newest publication an Envoy holds, by node and type",
                &held,
            ),
            (
                "xds_envoy_nacks",
                "Responses an Envoy refused on its open streams, by node",
                &nacks,
            ),
            (
                "xds_envoy_last_answer_timestamp_seconds",
                "When an Envoy last answered (ACK or NACK), by node",
                &last_answer,
            ),
            (
                "xds_envoy_seconds_behind",
                "How long the oldest update an Envoy has not answered has waited, by node",
                &behind,
            ),
        ];
        for (name, help, family) in families {
            family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)?;
        }
        Ok(())
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// What the xDS server counts goes to the `xds_*` metrics.
impl aether_xds::XdsMetrics for Metrics {
    fn response_sent(&self) {
        self.xds_responses.inc();
    }

    fn response_refused(&self) {
        self.xds_nacks.inc();
    }

    fn stream_opened(&self) {
        self.xds_streams.inc();
    }

    fn stream_closed(&self) {
        self.xds_streams.dec();
    }

    fn stream_refused(&self, why: aether_xds::metrics::Refused) {
        self.xds_streams_refused
            .get_or_create(&vec![("reason", why.label().to_owned())])
            .inc();
    }

    fn resource_quarantined(&self) {
        self.xds_resources_quarantined.inc();
    }
}

impl Metrics {
    /// Fresh metrics, prefixed `aether_controller_`, with the build's and
    /// the process' ([`aether_runtime::metrics`]).
    pub fn new() -> Self {
        let mut root = Registry::default();
        let registry = root.sub_registry_with_prefix(PREFIX);
        let metrics = Self {
            reconciles: Counter::default(),
            reconcile_errors: Counter::default(),
            // 1 ms to about 16 s.
            reconcile_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 15)),
            conflicts: Gauge::default(),
            invalid_objects: Gauge::default(),
            envoy_listener_refused: Gauge::default(),
            objects: Gauge::default(),
            manifest_stale_files: Gauge::default(),
            manifest_changing_files: Gauge::default(),
            tls_secrets_kept: Gauge::default(),
            file_writes: Counter::default(),
            status_patches: Counter::default(),
            status_patches_pending: Gauge::default(),
            leader: Gauge::default(),
            events: Counter::default(),
            event_failures: Counter::default(),
            xds_responses: Counter::default(),
            xds_nacks: Counter::default(),
            xds_unknown_resource_requests: Counter::default(),
            xds_streams: Gauge::default(),
            xds_streams_refused: Family::default(),
            xds_resources_quarantined: Counter::default(),
            ready: Gauge::default(),
            xds_listener: ListenerMetrics::default(),
            http_listener: ListenerMetrics::default(),
            xds_tls_reloads: aether_http_server::TlsReloads::default(),
            envoys: Envoys::default(),
            registry: Registry::default(),
        };
        registry.register_collector(Box::new(metrics.envoys.clone()));
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
        registry.register(
            "envoy_listener_refused",
            "1 while the newest HTTPS listener is not written: Envoy could not watch all of its files",
            metrics.envoy_listener_refused.clone(),
        );
        registry.register("objects", "VirtualHost objects known", metrics.objects.clone());
        registry.register(
            "manifest_stale_files",
            "Manifest files served as last read: unreadable, no longer parsing, or set aside for changing",
            metrics.manifest_stale_files.clone(),
        );
        registry.register(
            "manifest_changing_files",
            "Manifest files set aside for not settling within their bound",
            metrics.manifest_changing_files.clone(),
        );
        registry.register(
            "tls_secrets_kept",
            "TLS secrets served as their last good certificate, the pair read now failing, at the last pass",
            metrics.tls_secrets_kept.clone(),
        );
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
        registry.register(
            "events",
            "Kubernetes Events recorded for condition transitions",
            metrics.events.clone(),
        );
        registry.register(
            "event_failures",
            "Kubernetes Events not recorded (refused, or dropped with the queue full); statuses are written regardless",
            metrics.event_failures.clone(),
        );
        registry.register("xds_responses", "xDS responses sent", metrics.xds_responses.clone());
        registry.register("xds_nacks", "xDS responses Envoy rejected", metrics.xds_nacks.clone());
        registry.register(
            "xds_unknown_resource_requests",
            "xDS requests naming route configurations this server does not serve",
            metrics.xds_unknown_resource_requests.clone(),
        );
        registry.register("xds_streams", "xDS streams open now", metrics.xds_streams.clone());
        // Every reason at 0 from the start, so a rate of each is defined.
        for why in aether_xds::metrics::Refused::ALL {
            let _ = metrics
                .xds_streams_refused
                .get_or_create(&vec![("reason", why.label().to_owned())]);
        }
        registry.register(
            "xds_streams_refused",
            "xDS streams ended for what their client sent, by reason",
            metrics.xds_streams_refused.clone(),
        );
        registry.register(
            "xds_resources_quarantined",
            "xDS resources quarantined: an Envoy refused one, every Envoy is served the last version taken",
            metrics.xds_resources_quarantined.clone(),
        );
        registry.register(
            "ready",
            "1 once a pass has written the edge's files",
            metrics.ready.clone(),
        );
        registry.register(
            "xds_tls_reloads",
            "Reloads of the xDS server's TLS files, by result",
            metrics.xds_tls_reloads.clone(),
        );
        metrics.xds_listener.register(registry.sub_registry_with_prefix("xds"));
        metrics
            .http_listener
            .register(registry.sub_registry_with_prefix("http"));
        aether_runtime::metrics::register(&mut root, PREFIX, env!("CARGO_PKG_VERSION"));
        Self {
            registry: root,
            ..metrics
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// Connections the metrics server serves at once: a Prometheus scraper and
/// the kubelet's probes need a few.
pub const MAX_CONNECTIONS: usize = 64;

/// The listener's bounds for the metrics server.
pub fn listener_config(max_connections: usize) -> aether_http_server::Config {
    aether_http_server::Config {
        name: "metrics",
        max_connections,
        handshake_timeout: Duration::from_secs(5),
        first_request_timeout: Duration::from_secs(5),
        header_timeout: Duration::from_secs(5),
        // Longer than a scraper's interval, so it keeps its connection.
        idle_timeout: Duration::from_secs(120),
        write_timeout: Duration::from_secs(10),
        shutdown_grace: Duration::from_secs(5),
        protocol: Protocol::Http1 {
            max_header_bytes: 16 * 1024,
        },
    }
}

/// Serves `metrics` on `listener` (HTTP/1.1, the shared listener's bounds
/// from [`listener_config`]) until `shutdown`: `GET /metrics` in the
/// OpenMetrics text format prometheus-client writes (and says so in its
/// content type); `/readyz`, 200 once [`Metrics::ready`] is set and 503
/// before (a replica that has not listed every scope serves nothing useful,
/// to Envoy or to anyone); `/healthz`, 200 while the process answers at all
/// (the liveness probe: a replica still listing is alive, not ready); 404
/// for any other path.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: aether_http_server::Config,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) {
    let listener_metrics = metrics.http_listener.clone();
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let metrics = metrics.clone();
        async move { Ok::<_, Infallible>(respond(request.uri().path(), &metrics)) }
    });
    aether_http_server::Server::new(config)
        .metrics(listener_metrics)
        .serve(listener, service, shutdown)
        .await;
}

fn respond(path: &str, metrics: &Metrics) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Bytes::from(metrics.encode()),
        ),
        "/healthz" => (StatusCode::OK, "text/plain", Bytes::from_static(b"ok\n")),
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
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        // The content type travels with the body, for the one test that asks.
        let content_type = head
            .lines()
            .find_map(|line| line.strip_prefix("content-type: "))
            .unwrap_or_default();
        (status, format!("{content_type}\n{body}"))
    }

    #[tokio::test]
    async fn readyz_answers_503_until_a_pass_wrote_and_metrics_are_served() {
        let metrics = Arc::new(Metrics::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(
            listener,
            listener_config(MAX_CONNECTIONS),
            metrics.clone(),
            std::future::pending(),
        ));

        assert_eq!(get(addr, "/readyz").await.0, "HTTP/1.1 503 Service Unavailable");
        // Alive while not ready: the liveness probe must not restart a
        // replica that is still listing.
        assert_eq!(get(addr, "/healthz").await.0, "HTTP/1.1 200 OK");
        metrics.ready.set(1);
        assert_eq!(get(addr, "/readyz").await.0, "HTTP/1.1 200 OK");
        metrics.reconciles.inc();
        let (status, body) = get(addr, "/metrics").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        // prometheus-client writes OpenMetrics, and the type says so.
        assert!(
            body.starts_with("application/openmetrics-text; version=1.0.0"),
            "{body}"
        );
        assert!(body.trim_end().ends_with("# EOF"), "{body}");
        assert!(body.contains("aether_controller_reconciles_total 1"), "{body}");
        assert!(body.contains("aether_controller_ready 1"), "{body}");
        assert_eq!(get(addr, "/other").await.0, "HTTP/1.1 404 Not Found");
    }

    /// The metrics server had no bound and no timeout: a flood of idle
    /// connections (or one that never finished its headers) held a task and
    /// a descriptor each for ever. It is now the shared listener's.
    #[tokio::test]
    async fn idle_connections_beyond_the_bound_do_not_keep_the_probe_out() {
        let metrics = Arc::new(Metrics::new());
        metrics.ready.set(1);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(
            listener,
            listener_config(8),
            metrics.clone(),
            std::future::pending(),
        ));
        let mut idle = Vec::new();
        for _ in 0..20 {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        let probe = tokio::time::timeout(Duration::from_secs(10), get(addr, "/readyz"))
            .await
            .expect("the probe is answered within 10 s");
        assert_eq!(probe.0, "HTTP/1.1 200 OK");
        let (_, text) = get(addr, "/metrics").await;
        assert!(
            text.contains("aether_controller_http_connections_closed_total{reason=\"evicted\"}"),
            "{text}"
        );
        assert!(metrics.http_listener.open.get() <= 8);
        // A connection that never sends its request is closed (5 s).
        let mut silent = idle.pop().unwrap();
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(Duration::from_secs(15), silent.read(&mut buf)).await;
        assert!(
            matches!(closed, Ok(Ok(0) | Err(_))),
            "a silent connection is still open after 15 s"
        );
    }
}
