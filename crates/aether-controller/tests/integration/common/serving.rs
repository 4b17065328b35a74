//! The controller binary in local mode with `--xds-addr`, and the clients
//! the serving tests attack it with.
#![allow(dead_code)] // benches/slow_readers.rs uses a part of it too.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aether_controller::outputs::ROUTE_CONFIGURATION_TYPE;
use aether_testing::objects::object;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

/// A VirtualHost `default/NAME` serving `NAME.example.com` with `routes`
/// routes (prefix `/rI`, each to its own service).
pub fn manifest(name: &str, routes: usize) -> String {
    let object = object("default", name).hosts([format!("{name}.example.com")]);
    (0..routes)
        .fold(object, |object, route| {
            object.route_value(serde_json::json!({
                "match": {"prefix": format!("/r{route}")},
                "backend": {"service": format!("svc-{name}-{route}"), "port": 8080},
            }))
        })
        .manifest()
}

/// The binary, killed when dropped.
pub struct Controller {
    child: Child,
    pub addr: SocketAddr,
    pub manifests: tempfile::TempDir,
    pub out: tempfile::TempDir,
    /// What it wrote to stderr so far (read by a thread, so a full pipe
    /// never blocks the binary's logging).
    log: Arc<Mutex<String>>,
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Controller {
    /// Starts the binary on `files` (name, contents) serving xDS on a free
    /// port; under a descriptor limit of `fd_limit` (soft and hard, set by
    /// `prlimit`) when given.
    pub fn start(files: &[(&str, String)], fd_limit: Option<u64>) -> Self {
        Self::start_binary(env!("CARGO_BIN_EXE_aether-controller").as_ref(), files, fd_limit)
    }

    /// [`Controller::start`] with another build of the binary (a bench
    /// compares two).
    pub fn start_binary(binary: &std::path::Path, files: &[(&str, String)], fd_limit: Option<u64>) -> Self {
        let manifests = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(manifests.path().join(name), text).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        // A free port (a race with another process taking it is possible, and would fail loudly).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let mut command = aether_e2e::Controller::new(binary).local_mode(manifests.path(), out.path());
        // Plaintext: these tests are about the listener's bounds (TLS is
        // tests/xds_tls.rs's).
        command.arg(format!("--xds-addr={addr}")).arg("--xds-plaintext");
        if let Some(limit) = fd_limit {
            // The soft and the hard limit, so the binary cannot raise it.
            let mut limited = Command::new("prlimit");
            limited
                .arg(format!("--nofile={limit}:{limit}"))
                .arg("--")
                .arg(command.get_program())
                .args(command.get_args())
                .envs(command.get_envs().filter_map(|(key, value)| Some((key, value?))));
            command = limited;
        }
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let lines = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            // Ends when the binary exits (end of the pipe).
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                lines.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Self {
            child,
            addr,
            manifests,
            out,
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's CPU time so far (user + system), in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        // utime and stime are fields 14 and 15 of the whole line.
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// A line of `/proc/PID/status` in kB (`VmRSS`, `VmHWM`).
    pub fn memory_kb(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with(field))
            .unwrap_or_else(|| panic!("no {field} in /proc/PID/status"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Writes (or replaces) one manifest file.
    pub fn write(&self, name: &str, text: &str) {
        let tmp = self.manifests.path().join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.manifests.path().join(name)).unwrap();
    }

    /// The lines of its log so far that contain `text`.
    pub fn log_lines_with(&self, text: &str) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.lines()
            .filter(|line| line.contains(text))
            .map(str::to_owned)
            .collect()
    }
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn clock_ticks_per_second() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

/// The route configuration's name the binary serves.
pub const NAME: &str = "aether-edge";

pub fn request(version: &str, nonce: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        type_url: ROUTE_CONFIGURATION_TYPE.into(),
        resource_names: vec![NAME.into()],
        version_info: version.into(),
        response_nonce: nonce.into(),
        ..DiscoveryRequest::default()
    }
}

/// An open RDS stream, as Envoy holds one.
pub struct Stream {
    pub requests: mpsc::Sender<DiscoveryRequest>,
    pub responses: Streaming<DiscoveryResponse>,
}

/// Connects and opens a stream that has asked for the configuration.
pub async fn open(addr: SocketAddr) -> Result<Stream, String> {
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .map_err(|err| format!("connect: {err}"))?
        // Configurations of thousands of objects pass tonic's 4 MB default.
        .max_decoding_message_size(256 << 20);
    let (requests, outbound) = mpsc::channel(4);
    requests.send(request("", "")).await.unwrap();
    let responses = client
        .stream_routes(ReceiverStream::new(outbound))
        .await
        .map_err(|err| format!("stream: {err}"))?
        .into_inner();
    Ok(Stream { requests, responses })
}

impl Stream {
    /// The next response, ACKed.
    pub async fn next(&mut self) -> Result<DiscoveryResponse, String> {
        let response = self
            .responses
            .message()
            .await
            .map_err(|status| format!("{status}"))?
            .ok_or("the stream ended")?;
        let _ = self
            .requests
            .send(request(&response.version_info, &response.nonce))
            .await;
        Ok(response)
    }
}

/// The domains of a response's route configuration.
pub fn domains(response: &DiscoveryResponse) -> Vec<String> {
    response
        .resources
        .iter()
        .flat_map(|any| RouteConfiguration::decode(any.value.as_slice()).unwrap().virtual_hosts)
        .flat_map(|host| host.domains)
        .collect()
}

/// A new client's first configuration, within `bound` (a hang bound: a
/// client locked out gets nothing at all).
pub async fn served_within(addr: SocketAddr, bound: Duration) -> Result<DiscoveryResponse, String> {
    tokio::time::timeout(bound, async {
        let mut stream = open(addr).await?;
        stream.next().await
    })
    .await
    .map_err(|_| format!("no configuration within {bound:?}"))?
}

/// Waits (up to 60 s, while the binary starts and runs its first pass)
/// until the binary serves a configuration.
pub async fn wait_until_served(addr: SocketAddr) -> DiscoveryResponse {
    let started = std::time::Instant::now();
    loop {
        match served_within(addr, Duration::from_secs(5)).await {
            Ok(response) => return response,
            Err(err) if started.elapsed() > Duration::from_secs(60) => {
                panic!("the binary served nothing within 60 s: {err}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `n` TCP connections to `addr` that never send a byte.
pub async fn idle_connections(addr: SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    // The test's own descriptors: a soft limit of 1,024 would stop it first.
    aether_http_server::raise_fd_limit();
    let mut connections = Vec::with_capacity(n);
    for _ in 0..n {
        // The kernel completes the handshake even when the server does not
        // accept (the listen backlog), so this does not wait for the server.
        connections.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    connections
}

/// How many of `connections` the server has closed within `bound`.
pub async fn closed_within(connections: Vec<tokio::net::TcpStream>, bound: Duration) -> usize {
    use tokio::io::AsyncReadExt;
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move {
                let mut buf = [0u8; 256];
                let deadline = tokio::time::Instant::now() + bound;
                // Each read returns data, end of stream or an error; bounded by the deadline.
                loop {
                    match tokio::time::timeout_at(deadline, connection.read(&mut buf)).await {
                        Err(_) => return false,
                        Ok(Ok(0) | Err(_)) => return true,
                        Ok(Ok(_)) => {}
                    }
                }
            })
        })
        .collect();
    let mut closed = 0;
    for task in tasks {
        closed += usize::from(task.await.unwrap());
    }
    closed
}
