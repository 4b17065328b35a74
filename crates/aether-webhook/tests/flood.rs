// A binary of its own: the floods take both cores and time the reviews answered meanwhile, which tests running beside them would skew.
//! The `aether-webhook` binary, as deployed (default limits), under a flood
//! of idle TLS connections that reconnect as soon as they are closed.
#![cfg(feature = "server")]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aether_testing::objects::object;
use aether_webhook::server::VALIDATE_PATH;
use common::launch::{Launch, Webhook};
use common::{Pki, review, spec};
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::io::AsyncReadExt;

/// The binary in local mode on a directory holding `api.example.com`,
/// with `args` added.
async fn start(pki: &Pki, manifests: &std::path::Path, args: &[&str]) -> Webhook {
    let api = object("team-a", "api").hosts(["api.example.com"]).route("/", "svc");
    std::fs::write(manifests.join("api.yaml"), api.manifest()).unwrap();
    Launch::new(env!("CARGO_BIN_EXE_aether-webhook"), pki, manifests)
        .args(["--poll-interval-ms", "50"])
        .args(args)
        .ready()
        .await
}

/// How many of the flood's connections are established: now, and the most
/// at once so far.
#[derive(Default)]
struct Open {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// One attacker: a TLS connection that says nothing, reopened as soon as
/// the server closes it, until `stop`.
async fn idle_tls(addr: SocketAddr, config: Arc<rustls::ClientConfig>, open: Arc<Open>, stop: Arc<AtomicBool>) {
    let connector = tokio_rustls::TlsConnector::from(config);
    while !stop.load(Ordering::Relaxed) {
        let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let name = ServerName::try_from("localhost").unwrap();
        let Ok(Ok(mut tls)) = tokio::time::timeout(Duration::from_secs(30), connector.connect(name, tcp)).await else {
            continue;
        };
        let now = open.now.fetch_add(1, Ordering::Relaxed) + 1;
        open.most.fetch_max(now, Ordering::Relaxed);
        // Until the server closes it (or the test ends: a bounded wait).
        let mut buf = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(60), tls.read(&mut buf)).await;
        open.now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The floods take both cores: one at a time.
static ONE_FLOOD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A client with a 30 s timeout, trusting `pki`.
fn client(pki: &Pki) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_backend_preconfigured(pki.client_config())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Sends a review that is denied (the host is taken) and returns how long
/// its answer took.
async fn timed_review(client: &reqwest::Client, addr: SocketAddr, what: &str) -> Duration {
    let body = review("CREATE", "u", "team-b", "copy", spec(&["api.example.com"]));
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(40),
        client.post(format!("https://{addr}{VALIDATE_PATH}")).json(&body).send(),
    )
    .await;
    let elapsed = started.elapsed();
    let response = answer
        .unwrap_or_else(|_| panic!("{what}: no answer within 40 s"))
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    assert_eq!(response.status(), 200, "{what}");
    let out: Value = response.json().await.unwrap();
    assert_eq!(out["response"]["allowed"], false, "{out}");
    eprintln!("{what}: answered in {elapsed:?}");
    elapsed
}

/// Starts the binary with `args`; a client opens a keep-alive connection
/// with one review; then 2,000 idle TLS connections that reconnect when
/// closed, of which the server must hold at least `held` at once. Five
/// times: a review on the kept connection, answered within `kept`, and one
/// on a new connection (as from a client whose idle connection was
/// closed), answered within `new`.
async fn reviews_during_a_flood(args: &[&str], held: usize, kept: Duration, new: Duration) {
    let _one = ONE_FLOOD.lock().await;
    let pki = Pki::new(11);
    let manifests = tempfile::tempdir().unwrap();
    let webhook = start(&pki, manifests.path(), args).await;
    let addr = webhook.addr;
    let keep_alive = client(&pki);
    timed_review(&keep_alive, addr, "before the flood").await;

    let config = Arc::new(pki.client_config());
    let (open, stop) = (Arc::new(Open::default()), Arc::new(AtomicBool::new(false)));
    let attackers: Vec<_> = (0..2000)
        .map(|_| tokio::spawn(idle_tls(addr, config.clone(), open.clone(), stop.clone())))
        .collect();
    // Until the server has held `held` of them at once (bounded: 30 s), then
    // a second more for the rest of the flood to be on its way. The count at
    // any later instant is lower by the connections between a close and
    // their reconnection: beyond the bound silent ones are evicted for newer
    // ones, and each is closed after the 5 s header timeout (the flood took
    // 2.6 to 3.7 s to connect here, 5 to 7 s with ring unoptimized).
    let started = Instant::now();
    while open.most.load(Ordering::Relaxed) < held && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let most = open.most.load(Ordering::Relaxed);
    let after = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    eprintln!(
        "{args:?}: {most} idle TLS connections held at once after {after:?}, {} a second later",
        open.now.load(Ordering::Relaxed)
    );
    assert!(most >= held, "{most} idle TLS connections held at once, not {held}");

    for attempt in 0..5 {
        let what = format!("{args:?} review {attempt} on the kept connection");
        let elapsed = timed_review(&keep_alive, addr, &what).await;
        assert!(elapsed < kept, "{what} took {elapsed:?}");
        let what = format!("{args:?} review {attempt} on a new connection");
        let elapsed = timed_review(&client(&pki), addr, &what).await;
        assert!(elapsed < new, "{what} took {elapsed:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for attacker in attackers {
        attacker.abort();
    }
}

/// The requirement: with 2,000 idle TLS connections that reconnect
/// when closed, a valid review is still answered in under 1 s (the API
/// server gives up at 5 s). The default bound holds them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_is_answered_within_a_second_while_2000_idle_tls_connections_reconnect() {
    let second = Duration::from_secs(1);
    reviews_during_a_flood(&[], 2000, second, second).await;
}

/// Beyond the bound (512 here, four times fewer than the flood) silent
/// connections are evicted for new ones, never a client's keep-alive
/// connection while there are silent ones, and none before it has had a
/// second for its handshake and request. (Evicting at once let the flood
/// evict its own handshakes, and every review's, faster than any finished:
/// 22 to 148 connections were held at a time and no review was answered.)
/// A review on a kept connection is answered at once; one on a new
/// connection waits its turn in the listen backlog behind the flood (3.0 to
/// 4.1 s measured, the flood taken in at about 512 a second), so its bound
/// is a hang bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_four_times_the_bound_is_held_without_collapse_and_spares_kept_connections() {
    let args = ["--max-connections", "512"];
    reviews_during_a_flood(&args, 460, Duration::from_secs(1), Duration::from_secs(40)).await;
}
