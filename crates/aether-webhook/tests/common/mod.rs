//! Test helpers: the server's certificate files, the real server on 127.0.0.1, clients.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use aether_testing::objects;
use aether_testing::pki::{Leaf, TestCa};
use aether_webhook::index::HostIndex;
use aether_webhook::metrics::Metrics;
use aether_webhook::server::{self, Admit, App, Limits, Reviewer};
use rustls::pki_types::ServerName;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

pub mod launch;

/// A CA and the server's certificate and key files, in a temporary directory.
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub cert: PathBuf,
    pub key: PathBuf,
    ca: TestCa,
}

impl Pki {
    pub fn new(serial: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = Self {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
            dir,
            ca: TestCa::new(),
        };
        pki.rotate(serial);
        pki
    }

    /// Issues a new server certificate with `serial` (and a new key) and
    /// replaces the files as a secret update does: written aside, renamed in.
    pub fn rotate(&self, serial: u64) {
        self.ca
            .issue(&Leaf::new(&["localhost", "127.0.0.1"], serial))
            .write(&self.cert, &self.key);
    }

    /// A client configuration trusting only this CA (ring provider).
    pub fn client_config(&self) -> rustls::ClientConfig {
        self.ca.client_config()
    }

    /// reqwest over rustls, trusting this CA only.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_backend_preconfigured(self.client_config())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }
}

/// A server running in the test's runtime.
pub struct Running {
    pub addr: SocketAddr,
    pub index: Arc<HostIndex>,
    pub metrics: Arc<Metrics>,
    pub pki: Pki,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// Signals shutdown and waits (bounded) for the server to return.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let task = self.task.take().unwrap();
        tokio::time::timeout(Duration::from_secs(15), task)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }

    /// Sends `review` and returns the response review.
    pub async fn review(&self, client: &reqwest::Client, review: &Value) -> Value {
        let response = client
            .post(self.url("/validate-virtualhost"))
            .json(review)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// Reviews a VirtualHost `namespace/name` claiming `hosts` (see
    /// [`review`] and [`spec`]): the whole answered AdmissionReview.
    pub async fn ask(
        &self,
        client: &reqwest::Client,
        operation: &str,
        uid: &str,
        namespace: &str,
        name: &str,
        hosts: &[&str],
    ) -> Value {
        self.review(client, &review(operation, uid, namespace, name, spec(hosts)))
            .await
    }
}

pub async fn start(index: Arc<HostIndex>, limits: Limits) -> Running {
    let reviewer = Arc::new(Reviewer(index.clone()));
    start_with(index, reviewer, limits).await
}

pub async fn start_with(index: Arc<HostIndex>, admit: Arc<dyn Admit>, limits: Limits) -> Running {
    let pki = Pki::new(1);
    let metrics = Arc::new(Metrics::new());
    let tls = Arc::new(aether_webhook::tls::reloading(pki.cert.clone(), pki.key.clone(), &metrics).unwrap());
    let app = Arc::new(App {
        admit,
        metrics: metrics.clone(),
        ready: Arc::new(AtomicBool::new(true)),
        index: Some(index.clone()),
        limits,
        body_budget: limits.body_budget(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, tls, app, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        index,
        metrics,
        pki,
        stop: Some(stop),
        task: Some(task),
    }
}

/// Small limits so the limit tests stay fast.
pub fn test_limits() -> Limits {
    Limits {
        max_body_bytes: 64 * 1024,
        max_connections: 64,
        handshake_timeout: Duration::from_secs(2),
        header_timeout: Duration::from_millis(500),
        body_timeout: Duration::from_millis(500),
        body_budget_bytes: 16 * 1024 * 1024,
        idle_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
        shutdown_grace: Duration::from_secs(5),
    }
}

/// A valid spec serving `hosts`.
pub fn spec(hosts: &[&str]) -> Value {
    json!({
        "hosts": hosts,
        "routes": [{"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": 8080}}]
    })
}

/// An AdmissionReview for `operation` of VirtualHost `namespace/name` with `spec`.
pub fn review(operation: &str, uid: &str, namespace: &str, name: &str, spec: Value) -> Value {
    let object = objects::object(namespace, name)
        .metadata("uid", format!("obj-{name}").into())
        .spec(spec)
        .document();
    let (object, old) = match operation {
        "CREATE" => (object, Value::Null),
        "UPDATE" => (object.clone(), object),
        _ => (Value::Null, object),
    };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": name,
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "tester"},
            "object": object,
            "oldObject": old,
            "dryRun": false
        }
    })
}

/// An UPDATE of VirtualHost `namespace/name` from `old` to `new` (specs).
pub fn update(uid: &str, namespace: &str, name: &str, old: Value, new: Value) -> Value {
    let mut review = review("UPDATE", uid, namespace, name, new);
    review["request"]["oldObject"]["spec"] = old;
    review
}

/// One raw HTTP/1.1 exchange over TLS: writes `request` (then closes the
/// write side), reads until the server closes. Returns the status code
/// (None if the server closed without answering) and the whole response.
pub async fn raw(running: &Running, request: &[u8]) -> (Option<u16>, String) {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(running.pki.client_config()));
    let tcp = tokio::net::TcpStream::connect(running.addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let _ = tls.write_all(request).await;
    let _ = tls.flush().await;
    // close_notify and a TCP half-close: the server reads end of stream.
    let _ = tls.shutdown().await;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 8192];
        // Bounded: the read times out above, and each pass consumes data or ends.
        loop {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server neither answered nor closed within 5 s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok());
    (status, text)
}
