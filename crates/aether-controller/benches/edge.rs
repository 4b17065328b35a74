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
//! ```text
//! cargo bench -p aether-controller --bench edge            # 1,000 and 10,000 objects
//! cargo bench -p aether-controller --bench edge -- 50000   # other sizes
//! cargo bench -p aether-controller --bench edge -- 50000 grpc   # one mode: files or grpc
//! cargo bench -p aether-controller --bench edge -- 10000 https  # a fleet of HTTPS hosts
//! cargo bench -p aether-controller --bench edge -- 10000 http https   # both fleets
//! cargo bench -p aether-controller --bench edge -- 1000 grpc https create delete   # kinds of change
//! cargo bench -p aether-controller --bench edge -- 1000 10000 grpc http https all  # every kind
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
use aether_e2e::{Controller, Edge, HeldConnection, Mode, wait_until};
use aether_testing::fleet;
use aether_testing::pki::{Leaf, TestCa, write_secret};

use aether_e2e::envoy::XDS_BYTES_RECEIVED;
use changes::{Change, Client, MIN_OBJECTS, Manifests, SAMPLES};
use procfs::{cpu_when_idle, rss_mb};
use restart::Restart;

#[path = "edge/changes.rs"]
mod changes;
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

/// What the controller's log line says of the pass that served a change.
struct PassLine {
    duration: f64,
    /// Over gRPC: how far into the pass the snapshot was published.
    published: Option<f64>,
    /// From the pass's end until Envoy served the change.
    after_pass: f64,
}

/// The controller's pass that served the change after `since`: over files
/// the one that wrote a file Envoy reads, over gRPC (`--xds-only`: no
/// routes.json) the first that published. When it ended, how long it took
/// and how far into it the snapshot was published over xDS, from its log
/// line.
fn pass_after(log: &str, since: SystemTime, mode: Mode) -> Option<(SystemTime, f64, Option<f64>)> {
    // Over files, an HTTPS host's change may write its chain's file, the
    // listeners or a secret alone.
    let served_by: &[&str] = match mode {
        Mode::Files => &["\"routes.json\"", "\"chains/\"", "\"listeners.json\"", "\"secrets/\""],
        Mode::Xds => &["published_ms="],
    };
    log.lines()
        .filter(|line| line.contains(" reconciled ") && served_by.iter().any(|mark| line.contains(mark)))
        .filter_map(|line| {
            let ended: jiff::Timestamp = line.split_whitespace().next()?.parse().ok()?;
            let ended = SystemTime::from(ended);
            let duration = line
                .split("duration_ms=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            let published = line
                .split("published_ms=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok());
            Some((ended, duration, published))
        })
        .find(|(ended, _, _)| *ended > since)
}

/// [`pass_after`] in the controller's log, waited for (Envoy may serve
/// the change before the pass that published it has ended and logged), at
/// most 10 s.
fn pass_line(edge: &Edge, since: SystemTime, served_at: SystemTime) -> Option<PassLine> {
    let clock = Instant::now();
    loop {
        if let Some((ended, duration, published)) = pass_after(&edge.controller_log(), since, edge.mode) {
            return Some(PassLine {
                duration,
                published,
                after_pass: ms(served_at.duration_since(ended).unwrap_or_default()),
            });
        }
        if clock.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// The keep-alive connections to a host no change touches, opened once the
/// edge serves and asked after each change (once Envoy is idle again):
/// plain HTTP/1.1, and over TLS for the HTTPS fleet.
struct Held {
    plain: HeldConnection,
    tls: Option<HeldConnection>,
}

impl Held {
    fn open(edge: &Edge, https: bool, ca: &[u8]) -> Self {
        let host = changes::host(changes::UNRELATED);
        let plain = HeldConnection::plain(edge.envoy.listener(), &host)
            .unwrap_or_else(|err| panic!("a connection for {host}: {err}\n{}", edge.logs()));
        let tls = https.then(|| {
            HeldConnection::tls(edge.https_addr(), &host, ca)
                .unwrap_or_else(|err| panic!("a TLS connection for {host}: {err}\n{}", edge.logs()))
        });
        let mut held = Self { plain, tls };
        held.ask();
        assert_eq!(held.closed(), (0, 0), "the held connections answer\n{}", edge.logs());
        held
    }

    /// One request on each (a closed one is counted and opened again).
    fn ask(&mut self) {
        let path = "/healthz";
        // The error is counted; the count is what the table shows.
        let _ = self.plain.get(path);
        if let Some(tls) = &mut self.tls {
            let _ = tls.get(path);
        }
    }

    /// How many times each was found closed (plain, TLS).
    fn closed(&self) -> (u64, u64) {
        (self.plain.closed(), self.tls.as_ref().map_or(0, HeldConnection::closed))
    }

    /// The closures since `before` ([`Held::closed`]), for the table.
    fn closed_since(&self, before: (u64, u64)) -> String {
        let (plain, tls) = self.closed();
        let tls = match &self.tls {
            Some(_) => (tls - before.1).to_string(),
            None => "–".to_owned(),
        };
        format!("{} / {tls}", plain - before.0)
    }
}

/// The table's first columns: size, fleet, mode.
fn row_head(n: usize, fleet_kind: Fleet, mode: Mode) -> String {
    format!("| {n:>6} | {fleet_kind:<5?} | {mode:<5?} |")
}

/// What one edge measured: each kind's median change → served in ms, and
/// the rows of the restarts' table (its start's first).
struct Measured {
    medians: Vec<(Change, f64)>,
    restarts: Vec<String>,
}

/// Bytes for the table: MB, `–` when not measured.
fn mb(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "–".to_owned(), |b| format!("{:.1}", b as f64 / 1e6))
}

/// Measures `kinds` of change, then `restarts`, at `n` objects of
/// `fleet_kind` over `mode`: prints the changes' rows as they are measured.
fn measure(n: usize, mode: Mode, fleet_kind: Fleet, kinds: &[Change], restarts: &[Restart]) -> Measured {
    let mut manifests = Manifests::new(n);
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
        // connections below see it.
        envoy_args: vec!["--drain-strategy".to_owned(), "immediate".to_owned()],
        ..Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
    };
    let ca = TestCa::new();
    let certificate = ca.issue(&Leaf::new(&changes::NAMES, 0x0b01));
    let started = Instant::now();
    let mut edge = Edge::start_with_secrets(controller, mode, &pairs, &needed, |dir| {
        if https {
            // The created objects' too.
            for (namespace, name) in fleet::secrets(n + SAMPLES) {
                write_secret(dir, &namespace, &name, &certificate.chain_pem, &certificate.key_pem);
            }
        }
    });
    let client = Client {
        edge: &edge,
        https,
        ca: &ca.der,
    };
    let edited = changes::edited(n);
    let first = changes::Served::Routed {
        host: changes::host(edited),
        path: "/api/v1/r1".to_owned(),
        cluster: changes::cluster_of_route(&fleet::object(edited, 1), 1),
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
    let mut held = Held::open(&edge, https, &ca.der);
    let mut medians = Vec::new();
    for &kind in kinds {
        if kind == Change::Rotate && !https {
            println!(
                "{} {} | skipped: the plain fleet serves no certificate |",
                row_head(n, fleet_kind, mode),
                kind.name()
            );
            continue;
        }
        let mut samples = Vec::new();
        let mut how = None;
        let closed_before = held.closed();
        for k in 0..SAMPLES {
            let envoy_pid = edge.envoy.id();
            let cpu_before = cpu_when_idle(envoy_pid, patience(n));
            let change = SystemTime::now();
            let clock = Instant::now();
            let served = manifests.apply(kind, k, n, &edge, &ca);
            loop {
                if let Some(answer) = client.serves(&served) {
                    how.get_or_insert(answer);
                    break;
                }
                assert!(
                    clock.elapsed() < patience(n),
                    "{mode:?} {n}: {} {served:?} never served\n{}",
                    kind.name(),
                    edge.logs()
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            let served = clock.elapsed();
            let pass = pass_line(&edge, change, change + served);
            let envoy_cpu = cpu_when_idle(envoy_pid, patience(n)) - cpu_before;
            held.ask();
            samples.push(Sample {
                served: ms(served),
                pass,
                envoy_cpu,
            });
        }
        assert_eq!(edge.rejected(), 0, "{}", edge.logs());
        assert_eq!(edge.listeners_rejected(), 0, "{}", edge.logs());
        if let Some(how) = how {
            eprintln!("{n} {fleet_kind:?} {mode:?}: {} served when {how}", kind.name());
        }
        let controller_rss = edge.controller_id().map_or(0.0, rss_mb);
        let envoy_rss = rss_mb(edge.envoy.id());
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
        let closed = held.closed_since(closed_before);
        println!(
            "{} {:<9} | {served:>7.0} ({low:.0}–{high:.0}) | {:>6} | {:>6} | {:>6} | {:>4}% | {controller_rss:>5.0} / {envoy_rss:>5.0} | {envoy_cpu:>6.0} | {closed} |",
            row_head(n, fleet_kind, mode),
            kind.name(),
            cell(pass),
            cell(controller),
            cell(after),
            cell(share),
        );
        medians.push((kind, served));
    }
    let rss = |edge: &Edge| {
        format!(
            "{:.0} / {:.0}",
            edge.controller_id().map_or(0.0, rss_mb),
            rss_mb(edge.envoy.id())
        )
    };
    let head = row_head(n, fleet_kind, mode);
    let mut rows = vec![format!(
        "{head} start | {:.1} | – | – | {} | {} |",
        ready.as_secs_f64(),
        mb(start_bytes),
        rss(&edge)
    )];
    for &what in restarts {
        let closed_before = held.closed();
        let restarted = match what {
            Restart::Controller => restart::controller(&mut edge, &mut manifests, n, https, &ca, patience(n)),
            Restart::Envoy => restart::envoy(&mut edge, &manifests, n, https, &ca, patience(n)),
        };
        // A new Envoy listens on new ports: the held connections were its
        // predecessor's.
        let closed = match what {
            Restart::Controller => {
                held.ask();
                held.closed_since(closed_before)
            }
            Restart::Envoy => "–".to_owned(),
        };
        let failed = restarted
            .failed
            .map_or_else(|| "–".to_owned(), |(failed, sent)| format!("{failed} of {sent}"));
        rows.push(format!(
            "{head} {} | {:.1} | {failed} | {closed} | {} | {} |",
            what.name(),
            restarted.seconds,
            mb(restarted.bytes),
            rss(&edge)
        ));
        eprintln!("{}", rows.last().expect("a row"));
    }
    Measured {
        medians,
        restarts: rows,
    }
}

/// `given` once each in its order, or `default` when nothing is given.
fn or<T: PartialEq>(given: Vec<T>, default: Vec<T>) -> Vec<T> {
    if given.is_empty() {
        return default;
    }
    let mut once = Vec::new();
    for item in given {
        if !once.contains(&item) {
            once.push(item);
        }
    }
    once
}

/// What the arguments ask for.
struct Args {
    sizes: Vec<usize>,
    modes: Vec<Mode>,
    fleets: Vec<Fleet>,
    kinds: Vec<Change>,
    restarts: Vec<Restart>,
}

impl Args {
    /// Sizes, modes, fleets and kinds of change, in any order; an error
    /// names an argument that is none of them.
    fn parse(args: &[String]) -> Result<Self, String> {
        let (mut sizes, mut modes, mut fleets, mut kinds) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut restarts = Vec::new();
        for arg in args {
            match arg.as_str() {
                "files" => modes.push(Mode::Files),
                "grpc" => modes.push(Mode::Xds),
                "http" => fleets.push(Fleet::Http),
                "https" => fleets.push(Fleet::Https),
                "all" => {
                    kinds.extend(Change::ALL);
                    restarts.extend(Restart::ALL);
                }
                // cargo bench's own.
                "--bench" => {}
                other => {
                    if let Some(kind) = Change::parse(other) {
                        kinds.push(kind);
                    } else if let Some(restart) = Restart::parse(other) {
                        restarts.push(restart);
                    } else if let Ok(n) = other.parse::<usize>() {
                        if n < MIN_OBJECTS {
                            return Err(format!(
                                "{n} objects: at least {MIN_OBJECTS} (each kind of change takes its objects from a part of the fleet)"
                            ));
                        }
                        sizes.push(n);
                    } else {
                        let names: Vec<&str> = Change::ALL.iter().map(|kind| kind.name()).collect();
                        return Err(format!(
                            "unknown argument {other:?}: expected a number of objects, files or grpc, http or https, all, a kind of change ({}), restart or cold-start",
                            names.join(", ")
                        ));
                    }
                }
            }
        }
        Ok(Self {
            sizes: or(sizes, vec![1_000, 10_000]),
            modes: or(modes, vec![Mode::Files, Mode::Xds]),
            fleets: or(fleets, vec![Fleet::Http]),
            // The edit by default, when neither a change nor a restart is asked for.
            kinds: if kinds.is_empty() && !restarts.is_empty() {
                kinds
            } else {
                or(kinds, vec![Change::Edit])
            },
            restarts: or(restarts, Vec::new()),
        })
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
                let measured = measure(n, mode, fleet_kind, &args.kinds, &args.restarts);
                if let Some((_, edit)) = measured.medians.iter().find(|(kind, _)| *kind == Change::Edit) {
                    points.push((n as f64, edit / 1e3));
                }
                restarts.extend(measured.restarts);
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
        "start: the controller and Envoy from nothing until the edited host is served; restart: the controller killed, an object edited, the controller started again until the edit is served (the unchanged host asked every {} ms meanwhile); cold-start: Envoy killed and a new one started until it is ready and serves the last object (then every object's first host checked)",
        restart::EVERY.as_millis()
    );
    println!(
        "| objects | hosts | mode | what | seconds until served | unchanged host's failed requests | other host's connections closed, plain / TLS | MB Envoy received over xDS | RSS MB controller / Envoy |"
    );
    println!("|---:|---|---|---|---:|---:|---:|---:|---:|");
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
