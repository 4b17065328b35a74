//! The metrics every binary serves besides its own: `<component>_build_info`
//! and the standard process metrics.
//!
//! | metric | type | what |
//! |---|---|---|
//! | `<component>_build_info{version, api_version, rustc}` | gauge | always 1; the labels say which build runs |
//! | `process_cpu_seconds_total` | counter | user and system CPU time |
//! | `process_resident_memory_bytes` | gauge | resident set size |
//! | `process_virtual_memory_bytes` | gauge | virtual memory size |
//! | `process_open_fds` | gauge | open file descriptors |
//! | `process_max_fds` | gauge | the soft limit on open file descriptors |
//! | `process_start_time_seconds` | gauge | start time, seconds since the Unix epoch |
//! | `process_threads` | gauge | OS threads |
//!
//! The process metrics carry no component prefix: they are the names every
//! Prometheus client library writes, which dashboards and alerts expect.
//! prometheus-client has no process collector of its own; the numbers come
//! from `metrics-process` (client_golang's collector, in Rust), read on
//! each scrape, and [`ProcessCollector`] only writes them.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

/// The labels of `<component>_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The binary's version (its Cargo package version).
    pub version: String,
    /// The API version it serves (`config.aether.io/v1`).
    pub api_version: String,
    /// The compiler that built it (`rustc 1.92.0 (...)`).
    pub rustc: String,
}

/// The compiler's version line, from the build script.
pub const RUSTC_VERSION: &str = env!("AETHER_RUNTIME_RUSTC_VERSION");

/// Registers `<component>_build_info` (`version` is the binary's) and the
/// process metrics in `root`, which must have no prefix of its own (the
/// process metrics' names are the standard ones).
pub fn register(root: &mut Registry, component: &str, version: &str) {
    let build_info = Family::<BuildLabels, Gauge>::default();
    build_info
        .get_or_create(&BuildLabels {
            version: version.to_owned(),
            api_version: aether_api::config::v1::API_VERSION.to_owned(),
            rustc: RUSTC_VERSION.to_owned(),
        })
        .set(1);
    root.sub_registry_with_prefix(component).register(
        "build_info",
        "The running build: always 1, the labels say which",
        build_info,
    );
    root.register_collector(Box::new(ProcessCollector));
}

/// Writes the standard `process_*` metrics of this process on each scrape
/// (a metric the system cannot give is left out).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let process = metrics_process::collector::collect();
        if let Some(seconds) = process.cpu_seconds_total {
            let counter = ConstCounter::new(seconds);
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                process.resident_memory_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                process.virtual_memory_bytes,
            ),
            ("process_open_fds", "Number of open file descriptors", process.open_fds),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                process.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                process.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process",
                process.threads,
            ),
        ];
        for (name, help, value) in gauges {
            let Some(value) = value else { continue };
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample named exactly `name` (no labels).
    fn sample(text: &str, name: &str) -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn build_info_and_the_process_metrics_are_written_under_their_standard_names() {
        let mut root = Registry::default();
        root.sub_registry_with_prefix("aether_test")
            .register("things", "Things", Gauge::<i64>::default());
        register(&mut root, "aether_test", "9.8.7");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &root).unwrap();
        assert!(text.contains("# TYPE aether_test_build_info gauge"), "{text}");
        assert!(
            text.contains(&format!(
                "aether_test_build_info{{version=\"9.8.7\",api_version=\"config.aether.io/v1\",rustc=\"{RUSTC_VERSION}\"}} 1\n"
            )),
            "{text}"
        );
        assert!(RUSTC_VERSION.starts_with("rustc 1."), "{RUSTC_VERSION}");
        assert!(text.contains("# TYPE process_cpu_seconds counter"), "{text}");
        assert!(sample(&text, "process_cpu_seconds_total") >= 0.0);
        assert!(sample(&text, "process_resident_memory_bytes") > 1e5);
        // This test's own descriptors: at least stdin, stdout, stderr.
        assert!(sample(&text, "process_open_fds") >= 3.0);
        assert!(sample(&text, "process_max_fds") >= sample(&text, "process_open_fds"));
        assert!(sample(&text, "process_threads") >= 1.0);
        let started = sample(&text, "process_start_time_seconds");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(started <= now + 1.0 && started > now - 86_400.0, "{started} vs {now}");
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
    }
}
