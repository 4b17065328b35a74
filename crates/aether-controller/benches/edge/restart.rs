//! The edge's restarts at N objects: the controller killed and started
//! again (Envoy serving throughout), and Envoy's cold start.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aether_e2e::envoy::XDS_BYTES_RECEIVED;
use aether_e2e::{Edge, Mode, http, tls};

use aether_testing::fleet;
use aether_testing::pki::TestCa;

use crate::changes::{self, Change, Client, Manifests, SAMPLES, Served};

/// How often the unchanged host is asked while the controller restarts.
pub const EVERY: Duration = Duration::from_millis(100);

/// What the edge restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// The controller is killed and started again on the same inputs.
    Controller,
    /// Envoy is killed and a new one starts: its cold start.
    Envoy,
}

impl Restart {
    /// Both, in the table's order.
    pub const ALL: [Self; 2] = [Self::Controller, Self::Envoy];

    /// Its name, as an argument and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Controller => "restart",
            Self::Envoy => "cold-start",
        }
    }

    /// The restart named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|restart| restart.name() == name)
    }
}

/// A restart's measurements.
pub struct Restarted {
    /// Seconds until the change is served (the fleet, for a cold start).
    pub seconds: f64,
    /// Requests to the unchanged host that failed, and those sent.
    pub failed: Option<(u64, u64)>,
    /// Bytes Envoy received from the controller's xDS server meanwhile
    /// (over gRPC).
    pub bytes: Option<u64>,
}

/// The unchanged host's addresses: plain, and over TLS for the HTTPS fleet.
struct Unchanged {
    plain: SocketAddr,
    tls: Option<(SocketAddr, Vec<u8>)>,
    host: String,
}

impl Unchanged {
    /// Each of its answers now: a status, or none for a failed request.
    fn answers(&self) -> Vec<Option<u16>> {
        let mut answers = vec![http::get(self.plain, &self.host, "/healthz").ok().map(|r| r.status)];
        if let Some((addr, ca)) = &self.tls {
            answers.push(
                tls::get(*addr, &self.host, &self.host, "/healthz", ca)
                    .ok()
                    .map(|r| r.status),
            );
        }
        answers
    }

    /// Asks every [`EVERY`] until `stop`: (failed, sent), a failure being
    /// any answer other than the one given before.
    fn watch(&self, stop: &AtomicBool) -> (u64, u64) {
        let expected = self.answers();
        let (mut failed, mut sent) = (0, 0);
        while !stop.load(Ordering::Relaxed) {
            let clock = Instant::now();
            for (answer, expected) in self.answers().into_iter().zip(&expected) {
                sent += 1;
                if answer.is_none() || answer != *expected {
                    failed += 1;
                }
            }
            std::thread::sleep(EVERY.saturating_sub(clock.elapsed()));
        }
        (failed, sent)
    }
}

fn unchanged(edge: &Edge, https: bool, ca: &[u8]) -> Unchanged {
    Unchanged {
        plain: edge.envoy.listener(),
        tls: https.then(|| (edge.https_addr(), ca.to_vec())),
        host: changes::host(changes::UNRELATED),
    }
}

/// Waits until `client` serves `served`, at most `patience`.
fn until_served(client: &Client<'_>, served: &Served, patience: Duration, what: &str) {
    let clock = Instant::now();
    while client.serves(served).is_none() {
        assert!(
            clock.elapsed() < patience,
            "{what}: {served:?} never served\n{}",
            client.edge.logs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the controller, edits an object while it is down and starts it
/// again on the same inputs: the seconds until the edit is served, the
/// unchanged host's failed requests from the kill until then, and the bytes
/// Envoy received on the resync (over gRPC).
pub fn controller(
    edge: &mut Edge,
    manifests: &mut Manifests,
    n: usize,
    https: bool,
    ca: &TestCa,
    patience: Duration,
) -> Restarted {
    let watched = unchanged(edge, https, &ca.der);
    let stop = AtomicBool::new(false);
    let bytes_before = edge.envoy.stat(XDS_BYTES_RECEIVED);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watched.watch(&stop));
        // Let it take its expected answers first.
        std::thread::sleep(2 * EVERY);
        edge.kill_controller();
        // An edit the controller finds when it starts (its edits' versions
        // come after the measured edits').
        let served = manifests.apply(Change::Edit, SAMPLES, n, edge, ca);
        let clock = Instant::now();
        edge.restart_controller();
        let client = Client {
            edge,
            https,
            ca: &ca.der,
        };
        until_served(&client, &served, patience, "the edit after a restart");
        let seconds = clock.elapsed().as_secs_f64();
        crate::procfs::cpu_when_idle(edge.envoy.id(), patience);
        stop.store(true, Ordering::Relaxed);
        let failed = watcher.join().expect("the watcher");
        Restarted {
            seconds,
            failed: Some(failed),
            bytes: (edge.mode == Mode::Xds).then(|| edge.envoy.stat(XDS_BYTES_RECEIVED) - bytes_before),
        }
    })
}

/// Kills Envoy and starts a new one: the seconds until it is ready and
/// serves the fleet's last object, and the bytes it received over xDS by
/// then. Then checks (not timed) that every object's first host is
/// served: answered, other than by Envoy's 404 of a host or path it has no
/// route for.
pub fn envoy(
    edge: &mut Edge,
    manifests: &Manifests,
    n: usize,
    https: bool,
    ca: &TestCa,
    patience: Duration,
) -> Restarted {
    let last = n - 1;
    let served = Served::Routed {
        host: changes::host(last),
        path: "/healthz".to_owned(),
        cluster: changes::cluster_of_route(&fleet::object(last, 1), 0),
    };
    let clock = Instant::now();
    edge.restart_envoy();
    let client = Client {
        edge,
        https,
        ca: &ca.der,
    };
    while !(edge.envoy.is_ready() && client.serves(&served).is_some()) {
        assert!(
            clock.elapsed() < patience,
            "Envoy's cold start: {served:?} never served\n{}",
            edge.logs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let seconds = clock.elapsed().as_secs_f64();
    let bytes = (edge.mode == Mode::Xds).then(|| edge.envoy.stat(XDS_BYTES_RECEIVED));
    for host in manifests.first_hosts() {
        match client.get(&host, "/healthz") {
            Ok((status, _)) if status != 404 => {}
            answer => panic!("after Envoy's cold start, {host}: {answer:?}\n{}", edge.logs()),
        }
    }
    Restarted {
        seconds,
        failed: None,
        bytes,
    }
}
