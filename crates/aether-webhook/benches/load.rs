//! Load test on loopback: the real HTTPS server with 10k VirtualHosts (50k
//! hosts) indexed, against 64 keep-alive connections sending a fixed number
//! of AdmissionReviews; then the same server stack answering a constant
//! response (the floor). Client and server share this process and machine.
//!
//! `cargo bench -p aether-webhook --bench load` (env `BENCH_REQUESTS`, default 100000).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use aether_webhook::admission::BadRequest;
use aether_webhook::admission::Decision;
use aether_webhook::index::{HostIndex, ObjectKey};
use aether_webhook::metrics::Metrics;
use aether_webhook::server::{self, Admit, App, Limits, Reviewer};
use aether_webhook::tls::ReloadingTls;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;

const OBJECTS: usize = 10_000;
const CONNECTIONS: usize = 64;

/// The floor: same TLS, HTTP, limits and body reading, a constant answer.
struct Constant(Vec<u8>);

impl Admit for Constant {
    fn review(&self, _body: &[u8]) -> Result<(Vec<u8>, Decision), BadRequest> {
        Ok((self.0.clone(), Decision::Allowed))
    }
}

fn object_hosts(i: usize) -> Vec<String> {
    vec![
        format!("a{i}.example.com"),
        format!("b{i}.example.com"),
        format!("c{i}.example.net"),
        format!("d{i}.team{}.example.org", i % 100),
        format!("*.w{i}.example.io"),
    ]
}

fn review(uid: usize, name: &str, hosts: &[String]) -> Bytes {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{uid}"),
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": name, "namespace": "bench", "operation": "CREATE",
            "userInfo": {"username": "bench"},
            "object": {
                "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {
                    "hosts": hosts,
                    "routes": [
                        {"match": {"prefix": "/api"}, "backend": {"service": "svc-api", "port": 8080}},
                        {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health", "port": 8081}},
                        {"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": 80}}
                    ],
                    "tls": {"secretName": "bench-tls", "provider": "KUBERNETES"}
                }
            },
            "dryRun": false
        }
    });
    Bytes::from(serde_json::to_vec(&body).unwrap())
}

struct Run {
    seconds: f64,
    requests: u64,
    latency: Histogram<u64>,
}

async fn load(
    addr: std::net::SocketAddr,
    client: Arc<rustls::ClientConfig>,
    bodies: Arc<Vec<Bytes>>,
    per_conn: usize,
) -> Run {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        let (client, bodies) = (client.clone(), bodies.clone());
        tasks.push(tokio::spawn(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let tls = tokio_rustls::TlsConnector::from(client)
                .connect(ServerName::try_from("localhost").unwrap(), tcp)
                .await
                .unwrap();
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
            tokio::spawn(connection);
            let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            for i in 0..per_conn {
                let body = bodies[(c + i) % bodies.len()].clone();
                let request = hyper::Request::post("/validate-virtualhost")
                    .header("host", "localhost")
                    .header("content-type", "application/json")
                    .body(Full::new(body))
                    .unwrap();
                let sent = Instant::now();
                let response = sender.send_request(request).await.unwrap();
                assert_eq!(response.status(), 200);
                let _ = response.into_body().collect().await.unwrap();
                latency.record(sent.elapsed().as_micros().max(1) as u64).unwrap();
            }
            latency
        }));
    }
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for task in tasks {
        latency.add(task.await.unwrap()).unwrap();
    }
    Run {
        seconds: started.elapsed().as_secs_f64(),
        requests: latency.len(),
        latency,
    }
}

fn report(name: &str, run: &Run) -> f64 {
    let rate = run.requests as f64 / run.seconds;
    let q = |p: f64| run.latency.value_at_quantile(p) as f64 / 1000.0;
    println!(
        "{name:<10} {:>7} requests in {:>6.2} s: {:>8.0} reviews/s  p50 {:.3} ms  p99 {:.3} ms  p999 {:.3} ms  max {:.3} ms",
        run.requests,
        run.seconds,
        rate,
        q(0.5),
        q(0.99),
        q(0.999),
        run.latency.max() as f64 / 1000.0
    );
    rate
}

fn main() {
    let requests: usize = std::env::var("BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let per_conn = requests.div_ceil(CONNECTIONS);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Certificates.
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(cert.der().to_vec())).unwrap();
        let client = Arc::new(
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        );

        // The index: 10k objects, 50k hosts (a fifth of them wildcards).
        let index = Arc::new(HostIndex::new());
        for i in 0..OBJECTS {
            index.upsert(
                ObjectKey::new(format!("ns{}", i % 50), format!("vh{i}")),
                object_hosts(i),
            );
        }
        println!("indexed {:?} (objects, hosts)", index.len());

        // The mix: new hosts (allowed), a taken host (denied), a host under
        // an indexed wildcard (allowed with a warning).
        let mut bodies = Vec::new();
        for k in 0..64 {
            let fresh: Vec<String> = (0..4).map(|h| format!("n{h}-{k}.fresh.example.com")).collect();
            bodies.push(review(k, &format!("new{k}"), &fresh));
            bodies.push(review(k, &format!("dup{k}"), &[format!("a{}.example.com", k * 97)]));
            bodies.push(review(k, &format!("wild{k}"), &[format!("x.w{}.example.io", k * 89)]));
        }
        let bodies = Arc::new(bodies);

        let mut results = Vec::new();
        for (name, admit) in [
            ("webhook", Arc::new(Reviewer(index.clone())) as Arc<dyn Admit>),
            ("constant", {
                let allowed = bodies[0].clone();
                let (json, _) = aether_webhook::admission::review(&allowed, &HostIndex::new()).unwrap();
                Arc::new(Constant(json)) as Arc<dyn Admit>
            }),
        ] {
            let metrics = Arc::new(Metrics::new());
            let tls = Arc::new(ReloadingTls::new(cert_path.clone(), key_path.clone(), metrics.clone()).unwrap());
            let app = Arc::new(App {
                admit,
                metrics,
                ready: Arc::new(AtomicBool::new(true)),
                index: None,
                limits: Limits::default(),
            });
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(server::serve(listener, tls, app, async move {
                let _ = stopped.await;
            }));
            // Warm-up, then the measured run.
            load(addr, client.clone(), bodies.clone(), 50).await;
            let run = load(addr, client.clone(), bodies.clone(), per_conn).await;
            results.push(report(name, &run));
            let _ = stop.send(());
            tokio::time::timeout(Duration::from_secs(15), server)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
        }
        println!(
            "webhook throughput is {:.0}% of the constant-response floor",
            100.0 * results[0] / results[1]
        );
    });
}
