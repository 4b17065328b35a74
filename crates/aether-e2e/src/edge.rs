//! One edge on loopback: echo backends, the controller in local mode on a
//! manifest directory, and Envoy on the generated bootstrap, taking its
//! routes from the controller's `routes.json` or over gRPC. Files mode
//! starts Envoy after the controller's first pass, the order the files
//! bootstrap asks for.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use aether_manifests::parse_manifests;
use aether_projection::{ProjectionConfig, Snapshot, cluster_name, project};
use serde_json::Value;
use tempfile::TempDir;

use crate::process::with_open_files;
use crate::{Backends, Envoy, Process, RouteSource, Served, XdsPki, free_port, wait_until};

/// How Envoy takes its routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `routes.json` (`path_config_source`).
    Files,
    /// The controller's xDS server (`--xds-addr --xds-only`, as the
    /// Deployment runs it), over mutual TLS
    /// ([`XdsPki`]).
    Xds,
}

/// How long a wait may take before it is a hang: far more than any wait
/// takes when things work.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Envoy's count of rejected route configurations (`stat_prefix: edge`,
/// route configuration `aether-edge`).
pub const UPDATE_REJECTED: &str = "http.edge.rds.aether-edge.update_rejected";
/// Envoy's count of route configuration loads tried (a file event or an
/// xDS response each).
pub const UPDATE_ATTEMPT: &str = "http.edge.rds.aether-edge.update_attempt";
/// Envoy's count of route configurations applied.
pub const UPDATE_SUCCESS: &str = "http.edge.rds.aether-edge.update_success";

/// The controller binary and how quickly it reacts.
#[derive(Debug, Clone)]
pub struct Controller {
    /// The `aether-controller` binary (a test's `CARGO_BIN_EXE_aether-controller`).
    pub binary: PathBuf,
    /// `--poll-ms`, `--debounce-ms`, `--max-delay-ms`.
    pub poll_ms: u64,
    /// See `poll_ms`.
    pub debounce_ms: u64,
    /// See `poll_ms`.
    pub max_delay_ms: u64,
    /// `--settle-ms`: the harness moves whole files into place
    /// ([`Edge::write`]), so nothing needs settling beyond the debounce.
    pub settle_ms: u64,
    /// How long the first pass and Envoy's taking of its first
    /// configuration may take: [`PATIENCE`], more for a benchmark's tens of
    /// thousands of objects (a cold first pass of 50,000 and Envoy's
    /// parsing of their 190 MB `routes.json` together took over 30 s).
    pub start_patience: Duration,
    /// More arguments for the controller, after the harness's own.
    pub args: Vec<String>,
    /// The heap the edge's Envoy sheds load at, when the fleet needs more
    /// than the generated bootstrap's (see [`crate::bootstrap::MAX_HEAP`]).
    pub envoy_max_heap: Option<u64>,
    /// An open-file limit (soft and hard) for both the controller and
    /// Envoy, as the container runtime gives both containers of a pod
    /// (`None`: the test's own).
    pub open_files: Option<u64>,
    /// More arguments for the edge's Envoy, after the harness's own (the
    /// edge bench's `--drain-strategy immediate`).
    pub envoy_args: Vec<String>,
}

impl Controller {
    /// `binary`, polling every 50 ms with a 50 ms debounce (at most 200 ms)
    /// and a 50 ms settle time.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        Self {
            binary: binary.into(),
            poll_ms: 50,
            debounce_ms: 50,
            max_delay_ms: 200,
            settle_ms: 50,
            start_patience: PATIENCE,
            args: Vec::new(),
            envoy_max_heap: None,
            open_files: None,
            envoy_args: Vec::new(),
        }
    }
}

impl Controller {
    /// The controller in local mode on `manifests`, writing to `out`,
    /// logging at `info` (more arguments may follow).
    pub fn local_mode(&self, manifests: &Path, out: &Path) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg("--manifests")
            .arg(manifests)
            .arg("--out")
            .arg(out)
            .arg(format!("--poll-ms={}", self.poll_ms))
            .arg(format!("--debounce-ms={}", self.debounce_ms))
            .arg(format!("--max-delay-ms={}", self.max_delay_ms))
            .arg(format!("--settle-ms={}", self.settle_ms))
            .args(&self.args)
            .env("RUST_LOG", "info");
        command
    }
}

/// A running edge; every process and directory goes when it is dropped.
pub struct Edge {
    /// How Envoy takes its routes.
    pub mode: Mode,
    manifests: TempDir,
    staging: TempDir,
    out: TempDir,
    /// The controller's `--secrets` directory.
    pub(crate) secrets: TempDir,
    /// The certificates of xDS over mutual TLS (both sides).
    pub xds_pki: XdsPki,
    xds_port: u16,
    /// The port of Envoy's HTTPS listener (the controller's `--https-addr`).
    pub(crate) https_port: u16,
    settings: Controller,
    controller: Option<Process>,
    /// The edge's Envoy.
    pub envoy: Envoy,
    _backends: Backends,
}

impl Edge {
    /// An edge over the manifest `files` (name, text), with a backend for
    /// every cluster in `clusters`, ready: Envoy serves the controller's
    /// first route configuration.
    pub fn start(settings: Controller, mode: Mode, files: &[(&str, &str)], clusters: &BTreeSet<String>) -> Self {
        Self::start_with_secrets(settings, mode, files, clusters, |_| {})
    }

    /// [`Edge::start`], with the controller's `--secrets` directory filled
    /// by `secrets` first (see [`aether_testing::pki::write_secret`]).
    pub fn start_with_secrets(
        settings: Controller,
        mode: Mode,
        files: &[(&str, &str)],
        clusters: &BTreeSet<String>,
        secrets: impl FnOnce(&Path),
    ) -> Self {
        let manifests = tempfile::tempdir().expect("a manifest directory");
        let staging = tempfile::tempdir().expect("a staging directory");
        let out = tempfile::tempdir().expect("an output directory");
        let secrets_dir = tempfile::tempdir().expect("a secrets directory");
        secrets(secrets_dir.path());
        let backends = Backends::start(clusters);
        let ports = Ports {
            xds: free_port(),
            https: free_port(),
        };
        for (name, text) in files {
            std::fs::write(manifests.path().join(name), text).expect("writing a manifest");
        }
        let xds_pki = XdsPki::new();
        let dirs = Dirs {
            manifests: manifests.path(),
            out: out.path(),
            secrets: secrets_dir.path(),
            xds_pki: &xds_pki,
        };
        let controller = start_controller(&settings, mode, &dirs, ports);
        let source = match mode {
            Mode::Files => {
                // The start order the bootstrap asks for: Envoy refuses a
                // missing routes or listeners file, so it starts after the
                // first pass, which writes listeners.json last.
                let listeners = out.path().join("listeners.json");
                wait_until(
                    "the controller's first listeners.json",
                    settings.start_patience,
                    || controller.log_tail(30),
                    || listeners.exists().then_some(()),
                );
                RouteSource::File(out.path().join("routes.json"))
            }
            Mode::Xds => RouteSource::Xds(([127, 0, 0, 1], ports.xds).into(), xds_pki.client_dir()),
        };
        let envoy = Envoy::start_limited(
            &source,
            backends.addrs(),
            settings.envoy_max_heap,
            settings.open_files,
            &settings.envoy_args,
        );
        let edge = Self {
            mode,
            manifests,
            staging,
            out,
            secrets: secrets_dir,
            xds_pki,
            xds_port: ports.xds,
            https_port: ports.https,
            settings,
            controller: Some(controller),
            envoy,
            _backends: backends,
        };
        wait_until(
            "Envoy's first route configuration",
            edge.settings.start_patience,
            || edge.logs(),
            || edge.envoy.route_config_version(),
        );
        // Envoy starts its listeners once every initial fetch (routes, and
        // the HTTPS listener over LDS) is done: `/ready` answers 200 then.
        wait_until(
            "Envoy to be ready (LIVE)",
            edge.settings.start_patience,
            || edge.logs(),
            || edge.envoy.is_ready().then_some(()),
        );
        edge
    }

    /// Writes the manifest `name` as one rename into the watched directory,
    /// so the controller never reads it half-written.
    pub fn write(&self, name: &str, text: &str) {
        let staged = self.staging.path().join(name);
        std::fs::write(&staged, text).expect("staging a manifest");
        std::fs::rename(&staged, self.manifests.path().join(name)).expect("moving a manifest in");
    }

    /// Deletes the manifest `name`.
    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.manifests.path().join(name)).expect("removing a manifest");
    }

    /// The manifest directory.
    pub fn manifests(&self) -> &Path {
        self.manifests.path()
    }

    /// The controller's output directory.
    pub fn out(&self) -> PathBuf {
        self.out.path().to_owned()
    }

    /// Kills the controller with SIGKILL (no clean-up).
    pub fn kill_controller(&mut self) {
        if let Some(mut controller) = self.controller.take() {
            controller.kill();
        }
    }

    /// Kills the edge's Envoy (SIGKILL) and starts a new one in its place,
    /// on the same route source and backends (its admin and plain
    /// listener on new ports; the HTTPS listener's is the controller's);
    /// returns once its admin interface answers, before it is ready.
    pub fn restart_envoy(&mut self) {
        self.envoy.kill();
        self.envoy = Envoy::start_limited(
            &self.route_source(),
            self._backends.addrs(),
            self.settings.envoy_max_heap,
            self.settings.open_files,
            &self.settings.envoy_args,
        );
    }

    /// Where this edge's Envoys take their routes from.
    pub fn route_source(&self) -> RouteSource {
        match self.mode {
            Mode::Files => RouteSource::File(self.out.path().join("routes.json")),
            Mode::Xds => RouteSource::Xds(([127, 0, 0, 1], self.xds_port).into(), self.xds_pki.client_dir()),
        }
    }

    /// Another Envoy of this edge, with node id `node`, on the generated
    /// bootstrap; returns once it is ready.
    pub fn another_envoy(&self, node: &str) -> Envoy {
        let mut bootstrap =
            crate::bootstrap::on_loopback(&self.route_source(), free_port(), free_port(), self._backends.addrs());
        crate::bootstrap::set_node_id(&mut bootstrap, node);
        let envoy = Envoy::run(bootstrap);
        wait_until(
            &format!("Envoy {node} to be ready (LIVE)"),
            self.settings.start_patience,
            || format!("{}\n{}", envoy.log_tail(), self.logs()),
            || envoy.is_ready().then_some(()),
        );
        envoy
    }

    /// The condition of type `kind` the controller gave `namespace/name`
    /// (`status.json`); `Null` when absent.
    pub fn condition(&self, key: &str, kind: &str) -> Value {
        let status: Value = std::fs::read(self.out().join("status.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null);
        status[key]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Starts the controller again, on the same directories and port.
    pub fn restart_controller(&mut self) {
        self.kill_controller();
        let dirs = Dirs {
            manifests: self.manifests.path(),
            out: self.out.path(),
            secrets: self.secrets.path(),
            xds_pki: &self.xds_pki,
        };
        let ports = Ports {
            xds: self.xds_port,
            https: self.https_port,
        };
        self.controller = Some(start_controller(&self.settings, self.mode, &dirs, ports));
    }

    /// Where Envoy sends `GET path` for `host`: the backend's answer, or
    /// `None` for Envoy's 404 (no virtual host or route). Panics on any
    /// other answer.
    pub fn served(&self, host: &str, path: &str) -> Option<Served> {
        let response = self.envoy.get(host, path);
        match response.status {
            200 => Some(serde_json::from_slice(&response.body).unwrap_or_else(|err| {
                panic!(
                    "{host}{path}: not a backend's answer ({err}): {:?}",
                    String::from_utf8_lossy(&response.body)
                )
            })),
            404 => None,
            status => panic!("{host}{path}: status {status}\n{}", self.logs()),
        }
    }

    /// The cluster Envoy sends `GET path` for `host` to (`None`: 404).
    pub fn cluster(&self, host: &str, path: &str) -> Option<String> {
        self.served(host, path).map(|served| served.cluster)
    }

    /// Waits until `GET path` for `host` goes to `cluster` (`None`: 404).
    pub fn wait_for(&self, host: &str, path: &str, cluster: Option<&str>) {
        wait_until(
            &format!("{host}{path} to be served by {cluster:?}"),
            PATIENCE,
            || self.logs(),
            || (self.cluster(host, path).as_deref() == cluster).then_some(()),
        );
    }

    /// Envoy's count of rejected route configurations.
    pub fn rejected(&self) -> u64 {
        // The plain configuration's and every chain's.
        let all: u64 = self
            .envoy
            .stats_matching("http.edge.rds.", ".update_rejected")
            .values()
            .sum();
        all.max(self.envoy.stat(UPDATE_REJECTED))
    }

    /// The controller's whole log so far.
    pub fn controller_log(&self) -> String {
        self.controller.as_ref().map(Process::log).unwrap_or_default()
    }

    /// The controller's process id, while it runs.
    pub fn controller_id(&self) -> Option<u32> {
        self.controller.as_ref().map(Process::id)
    }

    /// The ends of the controller's and Envoy's logs.
    pub fn logs(&self) -> String {
        let controller = self.controller.as_ref().map(|c| c.log_tail(30)).unwrap_or_default();
        format!("{controller}\n{}", self.envoy.log_tail())
    }
}

/// The controller's directories.
struct Dirs<'a> {
    manifests: &'a Path,
    out: &'a Path,
    secrets: &'a Path,
    xds_pki: &'a XdsPki,
}

/// The ports the controller serves xDS on and tells Envoy's HTTPS listener to bind.
#[derive(Clone, Copy)]
struct Ports {
    xds: u16,
    https: u16,
}

fn start_controller(settings: &Controller, mode: Mode, dirs: &Dirs<'_>, ports: Ports) -> Process {
    let mut command = settings.local_mode(dirs.manifests, dirs.out);
    command
        .arg("--secrets")
        .arg(dirs.secrets)
        .arg(format!("--https-addr=127.0.0.1:{}", ports.https));
    if mode == Mode::Xds {
        // As the Deployment runs it: Envoy takes everything over xDS.
        command
            .arg(format!("--xds-addr=127.0.0.1:{}", ports.xds))
            .arg("--xds-only");
        command.args(dirs.xds_pki.controller_args());
    }
    let log = dirs.out.join("controller.log");
    Process::spawn("aether-controller", with_open_files(command, settings.open_files), &log)
}

/// The projection of manifest texts, as the controller makes it.
pub fn projection(texts: &[&str]) -> Snapshot {
    let objects: Vec<_> = texts
        .iter()
        .flat_map(|text| parse_manifests(text).expect("test manifests parse"))
        .collect();
    project(objects, &ProjectionConfig::default()).expect("test manifests project")
}

/// Every cluster the projection of `texts` sends to.
pub fn clusters(texts: &[&str]) -> BTreeSet<String> {
    projection(texts)
        .dependencies
        .iter()
        .flat_map(|dependency| {
            dependency
                .ports
                .iter()
                .map(|port| cluster_name(&dependency.service, *port))
        })
        .collect()
}
