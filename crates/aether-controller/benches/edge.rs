//! Change → served by a real Envoy: one change among N objects, and the
//! time until Envoy serves it, over `routes.json` and over gRPC, with the
//! controller's own share beside Envoy's. The kinds of change
//! ([`changes::Change`]; `edit` alone by default): `edit` (one object's
//! routes), `add-host` (a host added to an object), `create` (a new object
//! with a new host), `delete`, `move-host` (a host's older claimant lets
//! it go: the conflict's winner changes), `rotate` (a certificate
//! replaced; the HTTPS fleet only); each served when Envoy answers by the
//! new configuration (`delete`: 404 over plain HTTP, over TLS a refused
//! handshake). The controller's share is its pass over files (Envoy reads the
//! file once it is written) and, over gRPC, the part of the pass until the
//! snapshot is handed to the streams (`published_ms`: the files and
//! statuses come after it); Envoy's is the rest (the file's reload or the
//! xDS response's transfer, and its apply). Release build of the controller; Envoy 1.40 from
//! `cargo xtask pyenv`. A bench binary (not criterion): each sample is a
//! live change, seconds long at 10,000 objects.
//!
//! Then the restarts ([`restart::Restart`], none by default), each a row
//! of a second table: `restart` kills the controller and starts it again,
//! once with nothing changed (until it answers Envoy again, and the bytes
//! of that resync) and once with an object edited while it was down
//! (until Envoy serves the edit), while a request loop and the held
//! connections check that Envoy serves throughout; `cold-start` kills
//! Envoy and times a new one until it serves the whole fleet. The columns
//! are described in docs/benchmarks.md.
//!
//! ```text
//! cargo bench -p aether-controller --bench edge            # 1,000 and 10,000 objects
//! cargo bench -p aether-controller --bench edge -- 50000   # other sizes
//! cargo bench -p aether-controller --bench edge -- 50000 grpc   # one mode: files or grpc
//! cargo bench -p aether-controller --bench edge -- 10000 https  # a fleet of HTTPS hosts
//! cargo bench -p aether-controller --bench edge -- 10000 http https   # both fleets
//! cargo bench -p aether-controller --bench edge -- 1000 grpc https create delete   # kinds of change
//! cargo bench -p aether-controller --bench edge -- 1000 grpc http restart cold-start  # restarts
//! cargo bench -p aether-controller --bench edge -- 1000 10000 grpc http https all  # every kind, every restart
//! AETHER_EDGE_PLOT=docs/edge-scale.svg cargo bench -p aether-controller --bench edge -- 1000 10000 50000 grpc http https
//! ```
//!
//! Each row also counts the connections to another host the change
//! closed: one HTTP/1.1 keep-alive connection (and for the HTTPS fleet one
//! over TLS) to a host no change touches, opened once the edge serves and
//! asked again after each change; Envoy runs with `--drain-strategy
//! immediate`, so a connection a change drains says `Connection: close` at
//! its next answer rather than within the 10 minutes of the gradual drain.
//!
//! `AETHER_EDGE_PLOT=FILE` draws each fleet and mode's median edit →
//! served against the fleet size into the SVG file `FILE`.
//!
//! The fleet's objects all name TLS secrets. By default none is given, so
//! every host is served over plain HTTP alone, on the one plain route
//! configuration. With `https` each secret is given (one certificate for
//! the fleet's domains), every object has its TLS chain and route
//! configuration, plain HTTP redirects to HTTPS
//! (`--tls-hosts-over-plain-http=redirect`), and every change is read
//! over TLS.

use std::time::{Duration, Instant, SystemTime};

use aether_e2e::edge::{PATIENCE, clusters};
use aether_e2e::envoy::XDS_BYTES_RECEIVED;
use aether_e2e::{Controller, Edge, Mode, wait_until};
use aether_testing::fleet;
use aether_testing::pki::{Leaf, TestCa, write_secret};

use args::Args;
use changes::{Change, Client, Manifests, SAMPLES};
use held::Held;
use pass_log::{PassLine, pass_line};
use procfs::{cpu_when_idle, rss_mb};
use restart::{Restart, Restarted, Restarts};

#[path = "edge/args.rs"]
mod args;
#[path = "edge/changes.rs"]
mod changes;
#[path = "edge/held.rs"]
mod held;
#[path = "edge/pass_log.rs"]
mod pass_log;
#[path = "edge/procfs.rs"]
mod procfs;
#[path = "edge/restart.rs"]
mod restart;

/// One change's timeline, in ms from the change.
struct Sample {
    served: f64,
    /// The pass that served it, when its log line was found (a rotation
    /// over files may be written by a pass that logs no file Envoy reads).
    pass: Option<PassLine>,
    /// Envoy's CPU time (user and system) from the change until it is
    /// idle again, in ms.
    envoy_cpu: f64,
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// A median in ms for the table, `–` when there is none.
fn cell(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"))
}

/// Bytes for the table, in B, KB or MB; `–` when not measured.
fn bytes(value: Option<u64>) -> String {
    match value {
        None => "–".to_owned(),
        Some(b) if b < 10_000 => format!("{b} B"),
        Some(b) if b < 10_000_000 => format!("{:.0} KB", b as f64 / 1e3),
        Some(b) => format!("{:.1} MB", b as f64 / 1e6),
    }
}

/// How long a start or a change may take at `n` objects before it is a
/// hang: the suite's patience for every 10,000 objects begun.
fn patience(n: usize) -> Duration {
    PATIENCE * n.div_ceil(10_000).max(1) as u32
}

/// The heap Envoy sheds load at for `n` objects, sized as an operator
/// would: the generated 2 GiB, or 128 KiB an object (Envoy 1.40 holds
/// about 75 KB per object of 10 routes with its TLS chain), whichever is
/// more. At 50,000 HTTPS objects the generated limit made Envoy refuse
/// every request (`stop_accepting_requests` at 177% pressure).
fn envoy_heap(n: usize) -> u64 {
    (2u64 << 30).max(n as u64 * (128 << 10))
}

/// The fleet's hosts, served plain or over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fleet {
    Http,
    Https,
}

/// The tables' first columns: size, fleet, mode.
fn row_head(n: usize, fleet_kind: Fleet, mode: Mode) -> String {
    format!("| {n:>6} | {fleet_kind:<5?} | {mode:<5?} |")
}

/// The RSS of the controller and of Envoy now, in MB, for the tables.
fn rss(edge: &Edge) -> String {
    format!(
        "{:>5.0} / {:>5.0}",
        edge.controller_id().map_or(0.0, rss_mb),
        rss_mb(edge.envoy.id())
    )
}

/// One edge at `n` objects of one fleet over one mode, serving.
struct Bench {
    n: usize,
    fleet_kind: Fleet,
    https: bool,
    edge: Edge,
    manifests: Manifests,
    ca: TestCa,
    held: Held,
    /// From nothing until the edited host was served, and the bytes Envoy
    /// had received over xDS by then.
    start: (Duration, Option<u64>),
}

impl Bench {
    /// Starts the edge and waits until it serves the edited object.
    fn start(n: usize, mode: Mode, fleet_kind: Fleet) -> Self {
        let manifests = Manifests::new(n);
        let files = manifests.files();
        let involved = fleet::manifest(changes::involved(n));
        let needed = clusters(&[&involved]);
        let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        let https = fleet_kind == Fleet::Https;
        let controller = Controller {
            poll_ms: 20,
            debounce_ms: 20,
            max_delay_ms: 100,
            settle_ms: 20,
            start_patience: patience(n),
            envoy_max_heap: Some(envoy_heap(n)),
            args: if https {
                vec!["--tls-hosts-over-plain-http=redirect".to_owned()]
            } else {
                Vec::new()
            },
            // A connection a change drains is closed at its next request, not
            // at some point of the 10 minutes of the gradual drain: the held
            // connections see it.
            envoy_args: vec!["--drain-strategy".to_owned(), "immediate".to_owned()],
            ..Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
        };
        let ca = TestCa::new();
        let certificate = ca.issue(&Leaf::new(&changes::NAMES, 0x0b01));
        let started = Instant::now();
        let edge = Edge::start_with_secrets(controller, mode, &pairs, &needed, |dir| {
            if https {
                // The created objects' too.
                for (namespace, name) in fleet::secrets(n + SAMPLES) {
                    write_secret(dir, &namespace, &name, &certificate.chain_pem, &certificate.key_pem);
                }
            }
        });
        let edited = changes::edited(n);
        let first = changes::Served::Routed {
            host: changes::host(edited),
            path: "/api/v1/r1".to_owned(),
            cluster: changes::cluster_of_route(&fleet::object(edited, 1), 1),
        };
        let client = Client {
            edge: &edge,
            https,
            ca: &ca.der,
        };
        wait_until(
            "the edited host served",
            patience(n),
            || edge.logs(),
            || client.serves(&first),
        );
        let ready = started.elapsed();
        let start_bytes = (mode == Mode::Xds).then(|| edge.envoy.stat(XDS_BYTES_RECEIVED));
        eprintln!(
            "{n} {fleet_kind:?} {mode:?}: served {:.1} s after the start",
            ready.as_secs_f64()
        );
        let held = Held::open(&edge, https, &ca.der);
        Self {
            n,
            fleet_kind,
            https,
            edge,
            manifests,
            ca,
            held,
            start: (ready, start_bytes),
        }
    }

    fn head(&self) -> String {
        row_head(self.n, self.fleet_kind, self.edge.mode)
    }

    /// Measures [`SAMPLES`] changes of `kind`, one after another: prints
    /// its row and returns its median change → served in ms (`None`: not
    /// measured on this fleet).
    fn change(&mut self, kind: Change) -> Option<f64> {
        let (n, mode) = (self.n, self.edge.mode);
        if kind == Change::Rotate && !self.https {
            println!(
                "{} {:<9} | – (the plain fleet serves no certificate) | – | – | – | – | – | – | – |",
                self.head(),
                kind.name()
            );
            return None;
        }
        let mut samples = Vec::new();
        let mut how = None;
        let closed_before = self.held.closed();
        for k in 0..SAMPLES {
            let envoy_pid = self.edge.envoy.id();
            let cpu_before = cpu_when_idle(envoy_pid, patience(n));
            let change = SystemTime::now();
            let clock = Instant::now();
            let served = self.manifests.apply(kind, k, n, &self.edge, &self.ca);
            let client = Client {
                edge: &self.edge,
                https: self.https,
                ca: &self.ca.der,
            };
            loop {
                if let Some(answer) = client.serves(&served) {
                    how.get_or_insert(answer);
                    break;
                }
                assert!(
                    clock.elapsed() < patience(n),
                    "{mode:?} {n}: {} {served:?} never served\n{}",
                    kind.name(),
                    self.edge.logs()
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            let served = clock.elapsed();
            let pass = pass_line(&self.edge, change, change + served);
            let envoy_cpu = cpu_when_idle(envoy_pid, patience(n)) - cpu_before;
            self.held.ask();
            samples.push(Sample {
                served: ms(served),
                pass,
                envoy_cpu,
            });
        }
        assert_eq!(self.edge.rejected(), 0, "{}", self.edge.logs());
        assert_eq!(self.edge.listeners_rejected(), 0, "{}", self.edge.logs());
        if let Some(how) = how {
            eprintln!("{n} {:?} {mode:?}: {} served when {how}", self.fleet_kind, kind.name());
        }
        let served = median(samples.iter().map(|s| s.served).collect()).unwrap_or_default();
        let lines: Vec<&PassLine> = samples.iter().filter_map(|s| s.pass.as_ref()).collect();
        let pass = median(lines.iter().map(|p| p.duration).collect());
        // Over gRPC, Envoy waits only for the publication.
        let controller = match mode {
            Mode::Files => pass,
            Mode::Xds => median(lines.iter().map(|p| p.published.unwrap_or(p.duration)).collect()),
        };
        let after = median(lines.iter().map(|p| p.after_pass).collect());
        let (low, high) = samples
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), s| (lo.min(s.served), hi.max(s.served)));
        let envoy_cpu = median(samples.iter().map(|s| s.envoy_cpu).collect()).unwrap_or_default();
        let share = controller.map(|c| 100.0 * c / served);
        println!(
            "{} {:<9} | {served:>7.0} ({low:.0}–{high:.0}) | {:>6} | {:>6} | {:>6} | {:>4}% | {} | {envoy_cpu:>6.0} | {} |",
            self.head(),
            kind.name(),
            cell(pass),
            cell(controller),
            cell(after),
            cell(share),
            rss(&self.edge),
            self.held.closed_since(closed_before),
        );
        Some(served)
    }

    /// The restarts' table's rows: the start's, then `restarts`'.
    fn restarts(&mut self, restarts: &[Restart]) -> Vec<String> {
        let head = self.head();
        let (ready, start_bytes) = self.start;
        let mut rows = vec![format!(
            "{head} start | {:.2} | – | – | {} | – | {} |",
            ready.as_secs_f64(),
            bytes(start_bytes),
            rss(&self.edge)
        )];
        let mut measuring = Restarts {
            edge: &mut self.edge,
            manifests: &mut self.manifests,
            held: &mut self.held,
            n: self.n,
            https: self.https,
            ca: &self.ca,
            patience: patience(self.n),
        };
        for &what in restarts {
            for Restarted {
                what,
                seconds,
                failed,
                closed,
                bytes: received,
                envoy_cpu,
            } in measuring.measure(what)
            {
                let failed = failed.map_or_else(|| "–".to_owned(), |(failed, sent)| format!("{failed} of {sent}"));
                let closed = closed.unwrap_or_else(|| "–".to_owned());
                eprintln!(
                    "{} {:?} {:?}: {what}: served {seconds:.2} s after its start",
                    self.n, self.fleet_kind, measuring.edge.mode
                );
                rows.push(format!(
                    "{head} {what} | {seconds:.2} | {failed} | {closed} | {} | {envoy_cpu:.0} | {} |",
                    bytes(received),
                    rss(measuring.edge)
                ));
            }
        }
        rows
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = Args::parse(&args).unwrap_or_else(|err| {
        eprintln!("edge bench: {err}");
        std::process::exit(2)
    });
    println!("change → served by Envoy, median of {SAMPLES} changes (ms); controller poll 20 ms, debounce 20 ms");
    println!(
        "| objects | hosts | mode | change | change → served (min–max) | controller pass | controller until Envoy's turn | pass end → served | controller share | RSS MB controller / Envoy | Envoy CPU ms per change | other host's connections closed, plain / TLS |"
    );
    println!("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Per fleet and mode, the edit's medians by size.
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut restarts = Vec::new();
    for &fleet_kind in &args.fleets {
        for &mode in &args.modes {
            let mut points = Vec::new();
            for &n in &args.sizes {
                let mut bench = Bench::start(n, mode, fleet_kind);
                for &kind in &args.kinds {
                    let served = bench.change(kind);
                    if let (Change::Edit, Some(edit)) = (kind, served) {
                        points.push((n as f64, edit / 1e3));
                    }
                }
                restarts.extend(bench.restarts(&args.restarts));
            }
            let hosts = match fleet_kind {
                Fleet::Http => "plain-HTTP hosts (one route configuration)",
                Fleet::Https => "HTTPS hosts (a chain and configuration each)",
            };
            let over = match mode {
                Mode::Files => "files",
                Mode::Xds => "gRPC",
            };
            series.push((format!("{hosts}, over {over}"), points));
        }
    }
    println!();
    println!(
        "seconds from the start of what is restarted until served; the unrelated host asked every {} ms over a new connection meanwhile",
        restart::EVERY.as_millis()
    );
    println!(
        "| objects | hosts | mode | what | seconds until served | unrelated host's failed requests | other host's connections closed, plain / TLS | Envoy received over xDS | Envoy CPU ms | RSS MB controller / Envoy |"
    );
    println!("|---:|---|---|---|---:|---:|---:|---:|---:|---:|");
    for row in restarts {
        println!("{row}");
    }
    if let Some(out) = std::env::var_os("AETHER_EDGE_PLOT") {
        let out = std::path::PathBuf::from(out);
        match plot::draw_series(&out, "One object edited among N: edit → served by Envoy", &series) {
            Ok(()) => println!("drew {}", out.display()),
            Err(err) => eprintln!("drawing {}: {err}", out.display()),
        }
    }
}

// The pass bench's drawing; the edge bench hands it its own series, not
// criterion's.
#[path = "pass/plot.rs"]
#[allow(dead_code)]
mod plot;
