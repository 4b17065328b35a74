//! The `aether-webhook` binary in local mode, and the generated deployment
//! objects against the paths the server serves.

use aether_testing::objects::object;
use aether_webhook::server::{HEALTHZ_PATH, METRICS_PATH, READYZ_PATH, VALIDATE_PATH};
use serde_json::Value;

use crate::common::launch::Launch;
use crate::common::{Pki, review, spec};

#[tokio::test]
async fn binary_serves_local_mode_and_exits_cleanly_on_sigterm() {
    let pki = Pki::new(7);
    let dir = tempfile::tempdir().unwrap();
    let api = object("team-a", "api").hosts(["api.example.com"]).route("/", "svc");
    std::fs::write(dir.path().join("api.yaml"), api.manifest()).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let mut webhook = Launch::new(env!("CARGO_BIN_EXE_aether-webhook"), &pki, dir.path())
        .args(["--poll-interval-ms", "50", "--log-format", "json"])
        .logs_to(logs.path())
        .ready()
        .await;
    let port = webhook.addr.port();
    let (client, url) = (&webhook.client, |path: &str| webhook.url(path));

    let out: Value = client
        .post(url(VALIDATE_PATH))
        .json(&review("CREATE", "u", "team-b", "copy", spec(&["api.example.com"])))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["response"]["allowed"], false, "{out}");
    assert!(
        out["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("team-a/api")
    );

    let status = webhook.terminate().await;
    assert!(status.success(), "{status}");

    // `--log-format json`: every line of its output is a JSON object with
    // a level, the message and the event's fields.
    let mut lines = Vec::new();
    for file in ["stdout", "stderr"] {
        let text = std::fs::read_to_string(logs.path().join(file)).unwrap();
        for line in text.lines() {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            assert!(
                value["level"].is_string() && value["fields"]["message"].is_string(),
                "{line}"
            );
            lines.push(value);
        }
    }
    let messages: Vec<&Value> = lines.iter().map(|line| &line["fields"]["message"]).collect();
    assert!(
        lines
            .iter()
            .any(|line| line["fields"]["message"] == "serving"
                && line["fields"]["listen"] == format!("127.0.0.1:{port}")),
        "{messages:?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line["fields"]["message"] == "host index loaded" && line["fields"]["objects"] == 1),
        "{messages:?}"
    );
    assert!(messages.contains(&&Value::from("shut down")), "{messages:?}");
}

/// `/metrics` holds `aether_webhook_build_info` and the standard process
/// metrics, in OpenMetrics text, read from the running binary.
#[tokio::test]
async fn binary_metrics_hold_build_info_and_the_process_metrics() {
    let pki = Pki::new(8);
    let dir = tempfile::tempdir().unwrap();
    let webhook = Launch::new(env!("CARGO_BIN_EXE_aether-webhook"), &pki, dir.path())
        .ready()
        .await;
    let response = webhook.client.get(webhook.url(METRICS_PATH)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    // Parsed: every line a comment or `name[{labels}] value`, `# EOF` last.
    assert_eq!(text.lines().last(), Some("# EOF"), "{text}");
    let samples: std::collections::BTreeMap<&str, f64> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
            (name, value.parse().unwrap_or_else(|_| panic!("not a number: {line}")))
        })
        .collect();
    let build_info: Vec<(&&str, &f64)> = samples
        .iter()
        .filter(|(name, _)| name.starts_with("aether_webhook_build_info{"))
        .collect();
    assert_eq!(build_info.len(), 1, "{text}");
    let (labels, value) = build_info[0];
    assert_eq!(*value, 1.0);
    assert!(
        labels.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION")))
            && labels.contains("api_version=\"config.aether.io/v1\""),
        "{labels}"
    );
    // Whole clock ticks: a process that has run less than one reads 0.
    assert!(samples["process_cpu_seconds_total"] >= 0.0, "{text}");
    assert!(samples["process_resident_memory_bytes"] > 1e6, "{text}");
    // The listener and this connection at least.
    assert!(samples["process_open_fds"] >= 2.0, "{text}");
    assert!(samples["process_max_fds"] >= samples["process_open_fds"], "{text}");
    assert!(samples["process_threads"] >= 2.0, "{text}");
    assert!(samples["process_start_time_seconds"] > 1.7e9, "{text}");
    assert!(samples.contains_key("aether_webhook_index_objects"), "{text}");
}

#[test]
fn generated_deployment_uses_the_served_paths() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../generated/deploy/webhook");
    let read =
        |file: &str| -> Value { serde_saphyr::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap() };
    let hook = read("validating-webhook-configuration.yaml");
    assert_eq!(hook["webhooks"][0]["clientConfig"]["service"]["path"], VALIDATE_PATH);
    let deployment = read("deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], HEALTHZ_PATH);
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], READYZ_PATH);
    // The args the binary is started with parse: the same flags it declares.
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    for flag in ["--listen=", "--tls-cert=", "--tls-key="] {
        assert!(args.iter().any(|a| a.starts_with(flag)), "{flag} in {args:?}");
    }
}
