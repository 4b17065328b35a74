//! What the binary gives an operator: `--log-format json` (each line of its
//! output a JSON object) and, in cluster mode, `/metrics` with
//! `aether_controller_build_info` and the standard process metrics.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Every line of `output` (standard error or output) parses as a JSON
/// object with a level and a message; returns them.
fn json_lines(output: &str) -> Vec<Value> {
    output
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            assert!(value["level"].is_string(), "no level: {line}");
            assert!(value["fields"]["message"].is_string(), "no message: {line}");
            assert!(value["timestamp"].is_string(), "no timestamp: {line}");
            value
        })
        .collect()
}

#[test]
fn json_logs_are_one_object_per_line_with_level_message_and_fields() {
    let examples = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"));
    let out = tempfile::tempdir().unwrap();
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_aether-controller"))
            .args(["--once", "--log-format", format, "--manifests"])
            .arg(examples)
            .arg("--out")
            .arg(out.path())
            .env("RUST_LOG", "info")
            .output()
            .unwrap()
    };
    let output = run("json");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<Value> = json_lines(&stdout).into_iter().chain(json_lines(&stderr)).collect();
    assert!(lines.len() >= 3, "{stderr}");
    // The examples hold conflicts and an invalid object: their statuses
    // are logged with structured fields.
    assert!(
        lines.iter().any(|line| line["level"] == "INFO"
            && line["fields"]["message"] == "status changed"
            && line["fields"]["reason"] == "HostConflict"
            && line["fields"]["namespace"].is_string()),
        "{stderr}"
    );
    // The default stays text: the same run's lines are not JSON.
    let text = String::from_utf8(run("text").stderr).unwrap();
    assert!(
        !text.is_empty() && text.lines().all(|line| serde_json::from_str::<Value>(line).is_err()),
        "{text}"
    );
    // An unknown format is refused by name.
    let bad = run("yaml");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid value 'yaml'"));
}

/// `GET path` over a plain connection: the status line and the body.
fn get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Ok((head.lines().next().unwrap_or_default().to_owned(), body.to_owned()))
}

/// The samples of an OpenMetrics text, by name with labels; fails on a
/// line that is neither a comment nor `name[{labels}] value`, or on a
/// missing `# EOF`.
fn samples(text: &str) -> BTreeMap<String, f64> {
    assert_eq!(text.lines().last(), Some("# EOF"), "{text}");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number: {line}"));
            (name.to_owned(), value)
        })
        .collect()
}

#[test]
fn cluster_mode_serves_build_info_and_process_metrics_while_the_api_server_is_away() {
    // An API server that refuses connections: the watch retries, and the
    // metrics are served meanwhile.
    let unused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let metrics_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
             clusters: [{{name: test, cluster: {{server: 'http://{unused}'}}}}]\n\
             users: [{{name: test, user: {{}}}}]\n\
             contexts: [{{name: test, context: {{cluster: test, user: test, namespace: default}}}}]\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command
        .arg("--out")
        .arg(&out)
        .arg(format!("--metrics-addr={metrics_addr}"))
        .args(["--no-leader-election", "--log-format", "json"])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("RUST_LOG", "info");
    let mut child = aether_e2e::Process::spawn("aether-controller", command, &dir.path().join("log"));
    let started = Instant::now();
    let text = loop {
        match get(metrics_addr, "/metrics") {
            Ok((status, body)) if status == "HTTP/1.1 200 OK" => break body,
            _ if started.elapsed() < Duration::from_secs(30) => std::thread::sleep(Duration::from_millis(50)),
            other => panic!("no /metrics within 30 s: {other:?}"),
        }
    };
    let samples = samples(&text);
    let build_info: Vec<(&String, &f64)> = samples
        .iter()
        .filter(|(name, _)| name.starts_with("aether_controller_build_info{"))
        .collect();
    assert_eq!(build_info.len(), 1, "{text}");
    let (labels, value) = build_info[0];
    assert_eq!(*value, 1.0);
    assert!(
        labels.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION")))
            && labels.contains("api_version=\"config.aether.io/v1\"")
            && labels.contains("rustc=\"rustc 1."),
        "{labels}"
    );
    assert!(text.contains("# TYPE process_cpu_seconds counter"), "{text}");
    // Whole clock ticks: a process that has run less than one reads 0.
    assert!(samples["process_cpu_seconds_total"] >= 0.0, "{text}");
    assert!(samples["process_resident_memory_bytes"] > 1e6, "{text}");
    // The metrics listener, the API connection attempts, the runtime.
    assert!(samples["process_open_fds"] >= 4.0, "{text}");
    assert!(samples["process_max_fds"] >= samples["process_open_fds"], "{text}");
    assert!(samples["process_threads"] >= 2.0, "{text}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let start = samples["process_start_time_seconds"];
    assert!(start <= now + 1.0 && start >= now - 120.0, "{start} vs {now}");
    // The controller's own metrics are there too, the event counters among them.
    for name in [
        "aether_controller_ready",
        "aether_controller_events_total",
        "aether_controller_event_failures_total",
    ] {
        assert!(samples.contains_key(name), "{name} in {text}");
    }

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = Instant::now();
    while child.is_running() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still running 20 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let logs = child.log();
    let lines = json_lines(&logs);
    assert!(
        lines
            .iter()
            .any(|line| line["fields"]["message"] == "serving /metrics and /readyz"
                && line["fields"]["addr"] == metrics_addr.to_string()),
        "{logs}"
    );
}
