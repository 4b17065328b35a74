//! Prometheus metrics, served as text at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The prefix of the webhook's own metrics.
const PREFIX: &str = "aether_webhook";

type Labels = [(&'static str, &'static str); 1];

/// Labels of [`Metrics::http_responses`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub route: &'static str,
    pub code: u16,
}

pub struct Metrics {
    registry: Registry,
    /// HTTP responses by route and status code.
    pub http_responses: Family<HttpLabels, Counter>,
    /// Admission decisions by outcome.
    pub decisions: Family<Labels, Counter>,
    /// Time to decide one review (parse, validate, index lookup, encode).
    pub review_seconds: Histogram,
    pub index_objects: Gauge,
    pub index_hosts: Gauge,
    pub tls_reloads: Family<Labels, Counter>,
    /// The listener's connections: open, accepted, closed by reason (a
    /// failed or timed-out TLS handshake among them), failed accepts.
    pub listener: aether_http_server::ListenerMetrics,
    /// Local mode: manifest files that cannot be read now, indexed as they
    /// were last read (the input is stale while this is above 0).
    pub manifest_stale_files: Gauge,
    /// Local mode: errors met by the last read of the manifests.
    pub manifest_errors: Gauge,
    /// Local mode: manifest files set aside by the last read for not
    /// settling within their bound (each among the errors too).
    pub manifest_changing_files: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, prefixed `aether_webhook_`, with the build's and the
    /// process' ([`aether_runtime::metrics`]).
    pub fn new() -> Self {
        let mut root = Registry::default();
        let registry = root.sub_registry_with_prefix(PREFIX);
        let http_responses = Family::default();
        registry.register(
            "http_responses",
            "HTTP responses by route and status code",
            http_responses.clone(),
        );
        let decisions = Family::default();
        registry.register(
            "admission_decisions",
            "Admission decisions by outcome",
            decisions.clone(),
        );
        // 50 µs to ~0.8 s.
        let review_seconds = Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
            50e-6, 2.0, 15,
        ));
        registry.register(
            "review_duration_seconds",
            "Time to decide one AdmissionReview",
            review_seconds.clone(),
        );
        let index_objects = Gauge::default();
        registry.register("index_objects", "VirtualHosts in the host index", index_objects.clone());
        let index_hosts = Gauge::default();
        registry.register("index_hosts", "Hosts in the host index", index_hosts.clone());
        let tls_reloads = Family::default();
        registry.register("tls_reloads", "TLS certificate reloads by result", tls_reloads.clone());
        let listener = aether_http_server::ListenerMetrics::default();
        listener.register(registry);
        let manifest_stale_files = Gauge::default();
        registry.register(
            "manifest_stale_files",
            "Local mode: manifest files that cannot be read now, indexed as last read",
            manifest_stale_files.clone(),
        );
        let manifest_errors = Gauge::default();
        registry.register(
            "manifest_errors",
            "Local mode: errors met by the last read of the manifests",
            manifest_errors.clone(),
        );
        let manifest_changing_files = Gauge::default();
        registry.register(
            "manifest_changing_files",
            "Local mode: manifest files set aside for not settling within their bound",
            manifest_changing_files.clone(),
        );
        aether_runtime::metrics::register(&mut root, PREFIX, env!("CARGO_PKG_VERSION"));
        Self {
            registry: root,
            http_responses,
            decisions,
            review_seconds,
            index_objects,
            index_hosts,
            tls_reloads,
            listener,
            manifest_stale_files,
            manifest_errors,
            manifest_changing_files,
        }
    }

    /// The OpenMetrics text form.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
