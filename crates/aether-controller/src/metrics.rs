//! The controller's metrics (Prometheus text format): served over HTTP in
//! cluster mode, logged after each reconcile in local mode.

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
    /// xDS streams open now.
    pub xds_streams: Gauge,
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
            xds_streams: Gauge::default(),
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
        registry.register("xds_streams", "xDS streams open now", metrics.xds_streams.clone());
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
