//! The edge's restarts at N objects: the controller killed and started
//! again while Envoy serves on (with nothing changed meanwhile, and with
//! an object edited while it was down), and Envoy's cold start.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aether_e2e::edge_tls::LDS_UPDATE_SUCCESS;
use aether_e2e::envoy::XDS_BYTES_RECEIVED;
use aether_e2e::{Edge, Mode, http, tls};
use aether_testing::pki::TestCa;

use crate::changes::{self, Change, Client, Manifests, SAMPLES, Served};
use crate::held::Held;
use crate::procfs::{cpu_ms, cpu_when_idle};

/// How often the request loop asks the unrelated host while the controller
/// is down and starting.
pub const EVERY: Duration = Duration::from_millis(100);

/// What the edge restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// The controller is killed and started again on the same inputs:
    /// once with nothing changed, once with an object edited meanwhile.
    Controller,
    /// Envoy is killed and a new one starts: its cold start.
    Envoy,
}

impl Restart {
    /// Both, in the table's order.
    pub const ALL: [Self; 2] = [Self::Controller, Self::Envoy];

    /// Its name, as an argument.
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

/// One row of the restarts' table.
pub struct Restarted {
    /// What was measured, in the table's `what` column.
    pub what: &'static str,
    /// Seconds from the start of the new process until it serves.
    pub seconds: f64,
    /// The request loop's failed requests, and those sent (`None`: Envoy
    /// itself was restarted).
    pub failed: Option<(u64, u64)>,
    /// The held connections' closures, `plain / TLS` (`None`: they were
    /// the killed Envoy's).
    pub closed: Option<String>,
    /// Bytes Envoy received from the controller's xDS server from the
    /// start until it served and was idle again (`None` over files).
    pub bytes: Option<u64>,
    /// Envoy's CPU time meanwhile, in ms: from the controller's kill until
    /// Envoy is idle again (the request loop's requests included), or the
    /// new Envoy's until it served.
    pub envoy_cpu: f64,
}

/// The edge under the restarts, and what its requests need.
pub struct Restarts<'a> {
    pub edge: &'a mut Edge,
    pub manifests: &'a mut Manifests,
    pub held: &'a mut Held,
    pub n: usize,
    pub https: bool,
    pub ca: &'a TestCa,
    /// How long a restart may take before it is a hang.
    pub patience: Duration,
}

impl Restarts<'_> {
    /// Measures `what`: its rows.
    pub fn measure(&mut self, what: Restart) -> Vec<Restarted> {
        match what {
            Restart::Controller => vec![self.controller_quiet(), self.controller_edited()],
            Restart::Envoy => vec![self.envoy()],
        }
    }

    /// The controller killed and started again, nothing changed: the
    /// seconds until it answers Envoy again (over gRPC, Envoy counts the
    /// new stream's listener response as an update even when it holds
    /// nothing new; over files, the new process's first pass has ended),
    /// and the bytes of that resync: Envoy said what it holds
    /// (`initial_resource_versions`), so only what differs is sent.
    fn controller_quiet(&mut self) -> Restarted {
        self.around_controller_restart(WhileDown::Nothing)
    }

    /// The controller killed, an object edited while it is down, and the
    /// controller started again: the seconds until Envoy serves the edit,
    /// with the bytes of the edited object's resources beside the resync's.
    fn controller_edited(&mut self) -> Restarted {
        self.around_controller_restart(WhileDown::Edit)
    }

    /// Kills the controller, makes `while_down`'s change and starts it
    /// again, the request loop and the held connections watching, until
    /// the new process serves.
    fn around_controller_restart(&mut self, while_down: WhileDown) -> Restarted {
        let watched = Unrelated::of(self.edge, self.https, &self.ca.der);
        let stop = AtomicBool::new(false);
        let closed_before = self.held.closed();
        let bytes_before = self.edge.envoy.stat(XDS_BYTES_RECEIVED);
        let cpu_before = cpu_when_idle(self.edge.envoy.id(), self.patience);
        let what = while_down.what();
        let (seconds, failed) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| watched.watch(&stop));
            // Its expected answers are taken before the kill.
            std::thread::sleep(2 * EVERY);
            // Counted while it runs: a killed controller's log is not read.
            let passes_before = passes(self.edge);
            self.edge.kill_controller();
            let updates = self.edge.envoy.stat(LDS_UPDATE_SUCCESS);
            let edited = match while_down {
                WhileDown::Nothing => None,
                // Its version comes after the measured edits'.
                WhileDown::Edit => Some(self.manifests.apply(Change::Edit, SAMPLES, self.n, self.edge, self.ca)),
            };
            let (https, ca) = (self.https, &self.ca.der);
            let serves = |edge: &Edge| match &edited {
                Some(served) => Client { edge, https, ca }.serves(served).is_some(),
                None if edge.mode == Mode::Xds => edge.envoy.stat(LDS_UPDATE_SUCCESS) > updates,
                None => passes(edge) > passes_before,
            };
            let clock = Instant::now();
            self.edge.restart_controller();
            while !serves(self.edge) {
                assert!(
                    clock.elapsed() < self.patience,
                    "{what}: never served\n{}",
                    self.edge.logs()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            let seconds = clock.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            (seconds, watcher.join().expect("the request loop"))
        });
        // What the resync sends after its first answer comes in too.
        let envoy_cpu = cpu_when_idle(self.edge.envoy.id(), self.patience) - cpu_before;
        self.held.ask();
        Restarted {
            what,
            seconds,
            failed: Some(failed),
            closed: Some(self.held.closed_since(closed_before)),
            bytes: (self.edge.mode == Mode::Xds).then(|| self.edge.envoy.stat(XDS_BYTES_RECEIVED) - bytes_before),
            envoy_cpu,
        }
    }

    /// Kills Envoy and starts a new one: the seconds from its start until
    /// it is ready (every listener and route configuration taken) and
    /// serves the fleet's last object, and the bytes it received over xDS
    /// by then. Then checks, untimed, that every object's first host is
    /// routed (not Envoy's 404 of a host it has no route for), and opens
    /// the held connections to the new Envoy.
    fn envoy(&mut self) -> Restarted {
        let last = self.n - 1;
        let served = Served::Routed {
            host: changes::host(last),
            path: "/healthz".to_owned(),
            cluster: changes::cluster_of_route(&aether_testing::fleet::object(last, 1), 0),
        };
        let edge = &mut *self.edge;
        let clock = Instant::now();
        edge.restart_envoy();
        let client = Client {
            edge,
            https: self.https,
            ca: &self.ca.der,
        };
        while !(edge.envoy.is_ready() && client.serves(&served).is_some()) {
            assert!(
                clock.elapsed() < self.patience,
                "Envoy's cold start: {served:?} never served\n{}",
                edge.logs()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let seconds = clock.elapsed().as_secs_f64();
        let envoy_cpu = cpu_ms(edge.envoy.id());
        let bytes = (edge.mode == Mode::Xds).then(|| edge.envoy.stat(XDS_BYTES_RECEIVED));
        for host in self.manifests.first_hosts() {
            match client.get(&host, "/healthz") {
                Ok((status, _)) if status != 404 => {}
                answer => panic!("after Envoy's cold start, {host}: {answer:?}\n{}", edge.logs()),
            }
        }
        *self.held = Held::open(edge, self.https, &self.ca.der);
        Restarted {
            what: "cold-start",
            seconds,
            failed: None,
            closed: None,
            bytes,
            envoy_cpu,
        }
    }
}

/// What the controller finds changed when it starts again.
#[derive(Clone, Copy)]
enum WhileDown {
    Nothing,
    /// The edited object's routes.
    Edit,
}

impl WhileDown {
    /// The row's `what`.
    fn what(self) -> &'static str {
        match self {
            Self::Nothing => "restart",
            Self::Edit => "restart, edited while down",
        }
    }
}

/// How many passes the controller has logged (its log is kept across
/// restarts).
fn passes(edge: &Edge) -> usize {
    edge.controller_log().matches(" reconciled ").count()
}

/// The unrelated host's addresses, for the request loop: plain, and over
/// TLS for the HTTPS fleet. A new connection per request, unlike
/// [`Held`]: it sees a listener that stops accepting.
struct Unrelated {
    plain: SocketAddr,
    tls: Option<(SocketAddr, Vec<u8>)>,
    host: String,
}

impl Unrelated {
    fn of(edge: &Edge, https: bool, ca: &[u8]) -> Self {
        Self {
            plain: edge.envoy.listener(),
            tls: https.then(|| (edge.https_addr(), ca.to_vec())),
            host: changes::host(changes::UNRELATED),
        }
    }

    /// Each of its answers now: a status, or none for a failed request.
    fn answers(&self) -> Vec<Option<u16>> {
        let path = "/healthz";
        let mut answers = vec![http::get(self.plain, &self.host, path).ok().map(|r| r.status)];
        if let Some((addr, ca)) = &self.tls {
            answers.push(tls::get(*addr, &self.host, &self.host, path, ca).ok().map(|r| r.status));
        }
        answers
    }

    /// Asks every [`EVERY`] until `stop`: (failed, sent), a failure being
    /// a failed request or an answer other than the first.
    fn watch(&self, stop: &AtomicBool) -> (u64, u64) {
        let expected = self.answers();
        assert!(expected.iter().all(Option::is_some), "the unrelated host answers");
        let (mut failed, mut sent) = (0, expected.len() as u64);
        while !stop.load(Ordering::Relaxed) {
            let clock = Instant::now();
            for (answer, expected) in self.answers().into_iter().zip(&expected) {
                sent += 1;
                if answer != *expected {
                    failed += 1;
                }
            }
            std::thread::sleep(EVERY.saturating_sub(clock.elapsed()));
        }
        (failed, sent)
    }
}
