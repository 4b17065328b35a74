//! Edit → served by a real Envoy: one object's routes change among N, and
//! the time until Envoy routes a request by the new routes, over
//! `routes.json` and over gRPC, with the controller's own share beside
//! Envoy's. The controller's share is its pass over files (Envoy reads the
//! file once it is written) and, over gRPC, the part of the pass until the
//! snapshot is handed to the streams (`published_ms`: the files and
//! statuses come after it); Envoy's is the rest (the file's reload or the
//! xDS response's transfer, and its apply). Release build of the controller; Envoy 1.40 from
//! `cargo xtask pyenv`. A bench binary (not criterion): each sample is a
//! live edit, seconds long at 10,000 objects.
//!
//! ```text
//! cargo bench -p aether-controller --bench edge            # 1,000 and 10,000 objects
//! cargo bench -p aether-controller --bench edge -- 50000   # other sizes
//! cargo bench -p aether-controller --bench edge -- 50000 grpc   # one mode: files or grpc
//! cargo bench -p aether-controller --bench edge -- 10000 https  # a fleet of HTTPS hosts
//! cargo bench -p aether-controller --bench edge -- 10000 http https   # both fleets
//! AETHER_EDGE_PLOT=docs/edge-scale.svg cargo bench -p aether-controller --bench edge -- 1000 10000 50000 grpc http https
//! ```
//!
//! `AETHER_EDGE_PLOT=FILE` draws each fleet and mode's median edit →
//! served against the fleet size into the SVG file `FILE`.
//!
//! The fleet's objects all name TLS secrets. By default none is given, so
//! every host is served over plain HTTP alone, on the one plain route
//! configuration. With `https` each secret is given (one certificate for
//! the fleet's domains), every object has its TLS chain and route
//! configuration, plain HTTP redirects to HTTPS
//! (`--tls-hosts-over-plain-http=redirect`), and the edit is read over TLS.

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use aether_e2e::edge::{PATIENCE, clusters};
use aether_e2e::{Controller, Edge, Mode, wait_until};
use aether_testing::fleet;
use aether_testing::pki::{Leaf, TestCa, write_secret};

/// Objects per manifest file.
const PER_FILE: usize = 100;
/// Edits measured per size and mode.
const EDITS: u32 = 5;

/// One edit's timeline, in ms from the edit.
struct Sample {
    served: f64,
    pass: f64,
    /// Over gRPC: how far into the pass the snapshot was published.
    published: Option<f64>,
    after_pass: f64,
    /// Envoy's CPU time (user and system) from the edit until it is idle
    /// again, in ms.
    envoy_cpu: f64,
}

/// The CPU time a process has used (user and system), in ms.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Clock ticks of 10 ms (USER_HZ is 100 on Linux).
    (ticks(11) + ticks(12)) * 10.0
}

/// Envoy's CPU time once it has been idle for 300 ms (at most `patience`).
fn cpu_when_idle(pid: u32, patience: Duration) -> f64 {
    let clock = Instant::now();
    let mut last = cpu_ms(pid);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = cpu_ms(pid);
        if now == last || clock.elapsed() > patience {
            return now;
        }
        last = now;
    }
}

/// The controller's pass that served the edit after `since`: over files the
/// one that wrote `routes.json` or a chain's file, over gRPC (`--xds-only`: no routes.json)
/// the first that published. When it ended, how long it took and how far
/// into it the snapshot was published over xDS, from its log line.
fn pass_after(log: &str, since: SystemTime, mode: Mode) -> Option<(SystemTime, f64, Option<f64>)> {
    // Over files, an HTTPS host's edit may write its chain's file alone.
    let served_by: &[&str] = match mode {
        Mode::Files => &["\"routes.json\"", "\"chains/\""],
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

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// How long a start or an edit may take at `n` objects before it is a
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

/// Measures `n` objects of `fleet_kind` over `mode`: prints the table's row
/// and returns the median edit → served, in ms.
fn measure(n: usize, mode: Mode, fleet_kind: Fleet) -> f64 {
    let edited = n / 2;
    let file_of = |i: usize| format!("objects-{:04}.yaml", i / PER_FILE);
    let files: Vec<(String, String)> = fleet::objects(n)
        .chunks(PER_FILE)
        .enumerate()
        .map(|(f, chunk)| (file_of(f * PER_FILE), fleet::manifest(chunk.iter().cloned())))
        .collect();
    let edited_text = |version: u32| {
        let start = edited / PER_FILE * PER_FILE;
        let range = start..(start + PER_FILE).min(n);
        fleet::manifest(range.map(|i| fleet::object(i, if i == edited { version } else { 1 })))
    };
    let needed: BTreeSet<String> = clusters(&[&fleet::manifest([fleet::object(edited, 1)])]);
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
        ..Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
    };
    let ca = TestCa::new();
    let certificate = ca.issue(&Leaf::new(&["*.example.com", "*.example.net"], 0x0b01));
    let started = Instant::now();
    let edge = Edge::start_with_secrets(controller, mode, &pairs, &needed, |dir| {
        if https {
            for (namespace, name) in fleet::secrets(n) {
                write_secret(dir, &namespace, &name, &certificate.chain_pem, &certificate.key_pem);
            }
        }
    });
    let host = format!("app-{edited}.example.com");
    let cluster_of = |path: &str| {
        if https {
            // Not yet (a handshake refused while the listener warms at
            // scale) is not an answer.
            let response = edge.get_tls(&host, &host, path, &ca.der).ok()?;
            let served: aether_e2e::Served = (response.status == 200)
                .then(|| serde_json::from_slice(&response.body).ok())
                .flatten()?;
            Some(served.cluster)
        } else {
            edge.cluster(&host, path)
        }
    };
    let first = Some(needed_cluster(edited));
    wait_until(
        "the edited host served",
        patience(n),
        || edge.logs(),
        || (cluster_of("/api/v1/r1") == first).then_some(()),
    );
    let ready = started.elapsed();
    let mut samples = Vec::new();
    for version in 2..=EDITS + 1 {
        let path = format!("/api/v{version}/r1");
        let envoy_pid = edge.envoy.id();
        let cpu_before = cpu_when_idle(envoy_pid, patience(n));
        let edit = SystemTime::now();
        let clock = Instant::now();
        edge.write(&file_of(edited), &edited_text(version));
        loop {
            if cluster_of(&path).is_some() {
                break;
            }
            assert!(
                clock.elapsed() < patience(n),
                "{mode:?} {n}: {path} never served\n{}",
                edge.logs()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let served = clock.elapsed();
        // Read again while waiting: Envoy may serve the edit before the
        // pass that published it has ended and logged.
        let (ended, pass, published) = wait_until(
            "the pass's log line",
            PATIENCE,
            || edge.logs(),
            || pass_after(&edge.controller_log(), edit, mode),
        );
        let served_at = edit + served;
        let envoy_cpu = cpu_when_idle(envoy_pid, patience(n)) - cpu_before;
        samples.push(Sample {
            envoy_cpu,
            served: ms(served),
            pass,
            published,
            after_pass: ms(served_at.duration_since(ended).unwrap_or_default()),
        });
    }
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
    let controller_rss = edge.controller_id().map_or(0.0, rss_mb);
    let envoy_rss = rss_mb(edge.envoy.id());
    let served = median(samples.iter().map(|s| s.served).collect());
    let pass = median(samples.iter().map(|s| s.pass).collect());
    // Over gRPC, Envoy waits only for the publication.
    let controller = match mode {
        Mode::Files => pass,
        Mode::Xds => median(samples.iter().map(|s| s.published.unwrap_or(s.pass)).collect()),
    };
    let after = median(samples.iter().map(|s| s.after_pass).collect());
    let (low, high) = samples
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), s| (lo.min(s.served), hi.max(s.served)));
    let envoy_cpu = median(samples.iter().map(|s| s.envoy_cpu).collect());
    println!(
        "| {n:>6} | {fleet_kind:<5?} | {mode:<5?} | {served:>7.0} ({low:.0}–{high:.0}) | {pass:>6.0} | {controller:>6.0} | {after:>6.0} | {share:>4.0}% | {controller_rss:>5.0} / {envoy_rss:>5.0} | {envoy_cpu:>6.0} | {ready:>5.1} |",
        share = 100.0 * controller / served,
        ready = ready.as_secs_f64(),
    );
    served
}

/// The cluster of route 1 of object `i` (fixtures: port 8080).
fn needed_cluster(i: usize) -> String {
    format!("svc-{}:8080", (i + 1) % 500)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = args.iter().filter_map(|arg| arg.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000] } else { sizes };
    let modes: Vec<Mode> = args
        .iter()
        .filter_map(|arg| match arg.as_str() {
            "files" => Some(Mode::Files),
            "grpc" => Some(Mode::Xds),
            _ => None,
        })
        .collect();
    let modes = if modes.is_empty() {
        vec![Mode::Files, Mode::Xds]
    } else {
        modes
    };
    println!("edit → served by Envoy, median of {EDITS} edits (ms); controller poll 20 ms, debounce 20 ms");
    println!(
        "| objects | hosts | mode | edit → served (min–max) | controller pass | controller until Envoy's turn | pass end → served | controller share | RSS MB controller / Envoy | Envoy CPU ms per edit | start s |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let fleets: Vec<Fleet> = args
        .iter()
        .filter_map(|arg| match arg.as_str() {
            "http" => Some(Fleet::Http),
            "https" => Some(Fleet::Https),
            _ => None,
        })
        .collect();
    let fleets = if fleets.is_empty() { vec![Fleet::Http] } else { fleets };
    // Per fleet and mode, the medians by size.
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for &fleet_kind in &fleets {
        for &mode in &modes {
            let mut points = Vec::new();
            for &n in &sizes {
                points.push((n as f64, measure(n, mode, fleet_kind) / 1e3));
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
