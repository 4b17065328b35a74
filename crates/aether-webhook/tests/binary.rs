//! The `aether-webhook` binary in local mode, and the generated deployment
//! objects against the paths the server serves.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aether_webhook::server::{HEALTHZ_PATH, READYZ_PATH, VALIDATE_PATH};
use common::{Pki, review, spec};
use serde_json::Value;

/// Kills the child if the test fails before it exits.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_serves_local_mode_and_exits_cleanly_on_sigterm() {
    let pki = Pki::new(7);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("api.yaml"),
        "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api, namespace: team-a}\nspec:\n  hosts: [api.example.com]\n  routes: [{match: {prefix: /}, backend: {service: svc}}]\n",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_aether-webhook"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--poll-interval-ms", "50"])
        .arg("--tls-cert")
        .arg(&pki.cert)
        .arg("--tls-key")
        .arg(&pki.key)
        .arg("--manifests")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Guard(child);
    let client = pki.client();
    let url = |path: &str| format!("https://127.0.0.1:{port}{path}");
    let mut ready = false;
    for _ in 0..200 {
        if let Ok(r) = client.get(url(READYZ_PATH)).send().await
            && r.status() == 200
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the binary became ready within 10 s");

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

    let pid = child.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut status = None;
    for _ in 0..200 {
        if let Some(s) = child.0.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = status.expect("exited within 10 s of SIGTERM");
    assert!(status.success(), "{status}");
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
