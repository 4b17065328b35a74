//! The webhook binary in local mode on the inputs that once made
//! it admit what it should deny.

use std::path::Path;
use std::time::Duration;

use aether_testing::objects::object;
use aether_webhook::server::{METRICS_PATH, VALIDATE_PATH};
use serde_json::Value;

use crate::common::launch::{self, Launch};
use crate::common::{Pki, review, spec};

fn manifest(namespace: &str, name: &str, host: &str) -> String {
    let route = serde_json::json!({"match": {"prefix": "/"}, "backend": {"service": "svc", "port": 8443}});
    object(namespace, name).hosts([host]).route_value(route).manifest()
}

/// The webhook binary in local mode on `dir`, polling every 20 ms, ready.
struct Webhook {
    binary: launch::Webhook,
    _pki: Pki,
}

impl Webhook {
    async fn start(dir: &Path) -> Self {
        let pki = Pki::new(11);
        let binary = Launch::new(env!("CARGO_BIN_EXE_aether-webhook"), &pki, dir)
            .args(["--poll-interval-ms", "20"])
            .ready()
            .await;
        Self { binary, _pki: pki }
    }

    fn url(&self, path: &str) -> String {
        self.binary.url(path)
    }

    /// Whether a CREATE of `other/copy` claiming `host` is admitted.
    async fn admits(&self, host: &str) -> bool {
        let out: Value = self
            .binary
            .client
            .post(self.url(VALIDATE_PATH))
            .json(&review("CREATE", "u", "other", "copy", spec(&[host])))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        out["response"]["allowed"].as_bool().unwrap()
    }

    async fn metrics(&self) -> String {
        self.binary
            .client
            .get(self.url(METRICS_PATH))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Waits for `condition`; the bound only stops a hang.
    async fn until<'a, F, Fut>(&'a self, what: &str, condition: F)
    where
        F: Fn(&'a Self) -> Fut,
        Fut: Future<Output = bool>,
    {
        for _ in 0..1000 {
            if condition(self).await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("not within 20 s: {what}");
    }
}

/// A manifest that becomes unreadable keeps its hosts in the index (the
/// webhook fails closed), and the metrics say the input is stale.
#[tokio::test]
async fn a_manifest_that_turns_undecodable_keeps_its_hosts_and_is_reported_stale() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), manifest("team-a", "api", "api.example.com")).unwrap();
    let webhook = Webhook::start(dir.path()).await;
    assert!(!webhook.admits("api.example.com").await);

    // a.yaml broken first, then b.yaml added: a read that sees b.yaml has
    // read the broken a.yaml too.
    std::fs::write(
        dir.path().join("a.yaml"),
        "apiVersion: config.aether.io/v1\nspec: [unclosed",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.yaml"), manifest("team-b", "web", "web.example.com")).unwrap();
    webhook
        .until("b.yaml indexed", |w| async move { !w.admits("web.example.com").await })
        .await;
    assert!(
        !webhook.admits("api.example.com").await,
        "a conflicting CREATE is denied while a.yaml cannot be read"
    );
    let metrics = webhook.metrics().await;
    assert!(metrics.contains("aether_webhook_manifest_stale_files 1\n"), "{metrics}");
    assert!(metrics.contains("aether_webhook_manifest_errors 1\n"), "{metrics}");
    // Not set aside for changing: it does not parse.
    assert!(
        metrics.contains("aether_webhook_manifest_changing_files 0\n"),
        "{metrics}"
    );

    // Repaired, with another host: the index follows, nothing is stale.
    std::fs::write(dir.path().join("a.yaml"), manifest("team-a", "api", "api2.example.com")).unwrap();
    webhook
        .until("a.yaml re-read", |w| async move { w.admits("api.example.com").await })
        .await;
    assert!(!webhook.admits("api2.example.com").await);
    let metrics = webhook.metrics().await;
    assert!(metrics.contains("aether_webhook_manifest_stale_files 0\n"), "{metrics}");
}

/// A reviewed object with a value of the wrong type is denied, naming the
/// path and the type and range expected (the message the API server's
/// schema check gives), not "cannot be read".
#[tokio::test]
async fn a_type_error_is_denied_as_a_violation_naming_its_path_and_range() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), manifest("team-a", "api", "api.example.com")).unwrap();
    let webhook = Webhook::start(dir.path()).await;
    let mut bad = spec(&["new.example.com"]);
    bad["routes"][0]["backend"]["port"] = serde_json::json!(-1);
    let out: Value = webhook
        .binary
        .client
        .post(webhook.url(VALIDATE_PATH))
        .json(&review("CREATE", "u", "other", "copy", bad))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(out["response"]["allowed"], false, "{out}");
    assert_eq!(
        out["response"]["status"]["message"],
        "VirtualHost is invalid: 1 validation error:\n  - spec.routes[0].backend.port: must be an integer from 0 to 65535, got -1 [type]",
        "{out}"
    );
    let metrics = webhook.metrics().await;
    assert!(
        metrics.contains("aether_webhook_admission_decisions_total{decision=\"denied_invalid\"} 1"),
        "{metrics}"
    );
}

/// A manifest rewritten every 100 ms delays only itself: another file's
/// hosts are indexed about as soon as without it (each read waited the
/// full 5 s settle bound for it before), and its own hosts stay indexed.
#[tokio::test]
async fn a_file_that_never_stops_changing_delays_no_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let churning = dir.path().join("a.yaml");
    std::fs::write(&churning, manifest("team-a", "api", "api.example.com")).unwrap();
    let webhook = Webhook::start(dir.path()).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, churning) = (stop.clone(), churning.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::write(&churning, manifest("team-a", "api", "api.example.com")).unwrap();
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (round, host) in ["web.example.com", "shop.example.com"].into_iter().enumerate() {
        let started = std::time::Instant::now();
        std::fs::write(
            dir.path().join(format!("b{round}.yaml")),
            manifest("team-b", &format!("web{round}"), host),
        )
        .unwrap();
        webhook
            .until("the other file indexed", |w| async move { !w.admits(host).await })
            .await;
        let took = started.elapsed();
        eprintln!("{host} indexed after {took:?} beside a file rewritten every 100 ms");
        assert!(took < Duration::from_secs(3), "{host} indexed after {took:?}");
        assert!(
            !webhook.admits("api.example.com").await,
            "the churning file's hosts stay indexed"
        );
        // The second edit comes after the churning file's own 5 s bound.
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}
