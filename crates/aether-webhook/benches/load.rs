//! Load test on loopback: the real HTTPS server with 10k VirtualHosts (50k
//! hosts) indexed, against 64 keep-alive connections, beside the same
//! server stack answering a constant response (the floor), at a fixed
//! offered rate (open loop): every review scheduled at its intended send
//! time and its latency taken from that time, so a client that falls
//! behind (a slow answer holding a connection) counts the delay instead of
//! hiding it (coordinated omission). Each run also counts the server
//! threads' CPU time (Linux schedstat): the CPU per review.
//!
//! Client and server share this process and machine, each on its own
//! runtime. The machine's speed drifts within seconds (the floor's CPU per
//! request moved from 10.5 to 17.3 µs between runs of one binary), so the
//! two servers run side by side and take turns in rounds, each round a
//! slice of the time at the rate; each server's rounds are reported
//! together.
//!
//! `cargo bench -p aether-webhook --bench load`; env `BENCH_RATE`
//! (reviews/s, default 2000), `BENCH_SECONDS` (each server, all rounds,
//! default 10), `BENCH_ROUNDS` (default 4), `BENCH_SERVER_THREADS` (default
//! one per server core when pinned, else 2) and `BENCH_CLIENT_THREADS`
//! (default 1): 1 is a current-thread runtime; `BENCH_PIN` (default true):
//! the client on the first core, the server on the others.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aether_testing::pki::{Leaf, TestCa};
use aether_webhook::admission::BadRequest;
use aether_webhook::admission::Decision;
use aether_webhook::index::HostIndex;
use aether_webhook::metrics::Metrics;
use aether_webhook::server::{self, Admit, App, Limits, Reviewer};
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;

mod common;

const CONNECTIONS: usize = 64;

/// The floor: same TLS, HTTP, limits and body reading, a constant answer.
struct Constant(Vec<u8>);

impl Admit for Constant {
    fn review(&self, _body: &[u8]) -> Result<(Vec<u8>, Decision), BadRequest> {
        Ok((self.0.clone(), Decision::Allowed))
    }
}

/// No single review may take longer than this; a hang fails the bench.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap()
}

/// Which side of the loopback a thread works for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Client,
    Server,
}

/// One server's threads, by their CPU accounting files
/// (`/proc/self/task/TID/schedstat`).
#[derive(Clone, Default)]
struct Threads(Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>);

impl Threads {
    /// Counts the calling thread as one of them.
    fn count_this_thread(&self) {
        // `/proc/thread-self` names `PID/task/TID`; absent off Linux.
        if let Ok(task) = std::fs::read_link("/proc/thread-self") {
            let file = std::path::Path::new("/proc").join(task).join("schedstat");
            self.0.lock().unwrap().push(file);
        }
    }

    /// CPU seconds they have run, all together; `None` where the kernel
    /// does not say, or once a counted thread has ended (a blocking-pool
    /// thread of a multi-thread server): its time would be missing.
    fn cpu_seconds(&self) -> Option<f64> {
        let threads = self.0.lock().unwrap();
        if threads.is_empty() {
            return None;
        }
        let mut nanos = 0u64;
        for file in threads.iter() {
            // The first field: time on a CPU, in nanoseconds.
            let text = std::fs::read_to_string(file).ok()?;
            nanos += text.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(nanos as f64 / 1e9)
    }
}

/// Pins the calling thread to its side's cores when `BENCH_PIN` is on (the
/// default on two cores or more): the client (its runtime and the pacer) on
/// the first core, the server on the others, a worker per core in turn.
/// Unpinned, the four busy threads share the cores as the scheduler likes
/// and the floor itself moved from 16k/s to 36k/s between runs on one idle
/// machine; pinned, the client cannot take the server's core, nor the
/// server the client's.
fn pin(side: Side) {
    static NEXT_SERVER_CORE: AtomicUsize = AtomicUsize::new(0);
    let Some(cores) = pinned_cores() else {
        return;
    };
    let core = match side {
        Side::Client => cores[0],
        Side::Server => cores[1 + NEXT_SERVER_CORE.fetch_add(1, Ordering::Relaxed) % (cores.len() - 1)],
    };
    core_affinity::set_for_current(core);
}

/// The cores to pin to, when pinning.
fn pinned_cores() -> Option<Vec<core_affinity::CoreId>> {
    let cores = core_affinity::get_core_ids()?;
    (env("BENCH_PIN", true) && cores.len() >= 2).then_some(cores)
}

/// A runtime of `threads` workers for `side`; a server's workers are
/// counted in `counted`.
fn runtime(threads: usize, side: Side, counted: Threads) -> tokio::runtime::Runtime {
    if threads <= 1 {
        // Runs on the thread that calls `block_on`, pinned by its caller.
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .on_thread_start(move || {
                pin(side);
                if side == Side::Server {
                    counted.count_this_thread();
                }
            })
            .enable_all()
            .build()
            .unwrap()
    }
}

async fn connect(addr: SocketAddr, client: Arc<rustls::ClientConfig>) -> SendRequest<Full<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let tls = tokio_rustls::TlsConnector::from(client)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(connection);
    sender
}

async fn post(sender: &mut SendRequest<Full<Bytes>>, body: Bytes) {
    let request = hyper::Request::post("/validate-virtualhost")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .unwrap();
    let exchange = async {
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let _ = response.into_body().collect().await.unwrap();
    };
    tokio::time::timeout(REQUEST_TIMEOUT, exchange)
        .await
        .expect("a review took longer than the request timeout");
}

struct Run {
    seconds: f64,
    latency: Histogram<u64>,
    /// How late the client sent each review after its intended time
    /// (pacer and client scheduling, plus waiting for the connection's
    /// previous answer).
    send_lag: Histogram<u64>,
    /// The server threads' CPU seconds during the run.
    server_cpu: Option<f64>,
}

impl Run {
    /// Runs taken together: their reviews, time and server CPU.
    fn merged<'a>(runs: impl Iterator<Item = &'a Run>) -> Run {
        let mut all = Run {
            seconds: 0.0,
            latency: histogram(),
            send_lag: histogram(),
            server_cpu: Some(0.0),
        };
        for run in runs {
            all.seconds += run.seconds;
            all.latency.add(&run.latency).unwrap();
            all.send_lag.add(&run.send_lag).unwrap();
            all.server_cpu = all.server_cpu.zip(run.server_cpu).map(|(a, b)| a + b);
        }
        all
    }

    fn rate(&self) -> f64 {
        self.latency.len() as f64 / self.seconds
    }

    /// Server CPU per review, in microseconds.
    fn cpu_per_review_us(&self) -> Option<f64> {
        self.server_cpu.map(|cpu| 1e6 * cpu / self.latency.len() as f64)
    }
}

/// Open loop: `total` reviews at `rate` per second, review k due at
/// `start + k / rate` on connection `k % connections`; `server` is counted.
///
/// The pacing is done by a plain OS thread sleeping to each due time
/// (`thread::sleep` is precise to tens of microseconds, tokio's timer only to
/// the millisecond, which would add up to 1 ms to every latency counted from
/// the intended time). It hands each due time to its connection's task over
/// an unbounded channel: a connection still waiting for an earlier answer
/// finds the review queued, and the wait counts in its latency.
async fn open_loop(
    senders: &mut Vec<SendRequest<Full<Bytes>>>,
    bodies: Arc<Vec<Bytes>>,
    rate: f64,
    total: usize,
    server: &Threads,
) -> Run {
    let cpu_before = server.cpu_seconds();
    let mut queues = Vec::new();
    let mut tasks = Vec::new();
    for (c, mut sender) in senders.drain(..).enumerate() {
        let (queue, mut due_times) = tokio::sync::mpsc::unbounded_channel::<Instant>();
        queues.push(queue);
        let bodies = bodies.clone();
        tasks.push(tokio::spawn(async move {
            let (mut latency, mut lag) = (histogram(), histogram());
            let mut last = None;
            let mut i = 0;
            while let Some(due) = due_times.recv().await {
                lag.record(due.elapsed().as_micros().max(1) as u64).unwrap();
                post(&mut sender, bodies[(c + i) % bodies.len()].clone()).await;
                let done = Instant::now();
                latency.record((done - due).as_micros().max(1) as u64).unwrap();
                last = Some(done);
                i += 1;
            }
            (sender, latency, lag, last)
        }));
    }
    let start = Instant::now() + Duration::from_millis(20);
    let pacer = std::thread::spawn(move || {
        pin(Side::Client);
        for k in 0..total {
            let due = start + Duration::from_secs_f64(k as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            queues[k % queues.len()].send(due).unwrap();
        }
        // Dropping the queues ends the connection tasks once they drain.
    });
    let (mut latency, mut send_lag) = (histogram(), histogram());
    let mut end = start;
    for task in tasks {
        let (sender, part, lag, last) = task.await.unwrap();
        senders.push(sender);
        latency.add(part).unwrap();
        send_lag.add(lag).unwrap();
        end = end.max(last.unwrap_or(start));
    }
    pacer.join().unwrap();
    Run {
        seconds: (end - start).as_secs_f64(),
        latency,
        send_lag,
        server_cpu: server
            .cpu_seconds()
            .zip(cpu_before)
            .map(|(after, before)| after - before),
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn report(name: &str, run: &Run) {
    let h = &run.latency;
    println!(
        "{name:<8} {:>7} reviews in {:>6.2} s: {:>6.0}/s  p50 {:.3} ms  p99 {:.3} ms  p999 {:.3} ms  max {:.3} ms",
        h.len(),
        run.seconds,
        run.rate(),
        ms(h.value_at_quantile(0.5)),
        ms(h.value_at_quantile(0.99)),
        ms(h.value_at_quantile(0.999)),
        ms(h.max()),
    );
    if let (Some(cpu), Some(each)) = (run.server_cpu, run.cpu_per_review_us()) {
        println!(
            "{:<9}server CPU {:.2} s ({:.0}% of one core): {each:.1} µs per review",
            "",
            cpu,
            100.0 * cpu / run.seconds,
        );
    }
    let lag = &run.send_lag;
    println!(
        "{:<9}send lag behind schedule: p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        "",
        ms(lag.value_at_quantile(0.5)),
        ms(lag.value_at_quantile(0.99)),
        ms(lag.max()),
    );
}

/// A server on its own runtime in its own OS thread; `stop` ends it.
struct Server {
    addr: SocketAddr,
    threads: Threads,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

fn start_server(admit: Arc<dyn Admit>, cert: &std::path::Path, key: &std::path::Path, threads: usize) -> Server {
    let metrics = Arc::new(Metrics::new());
    let tls = Arc::new(aether_webhook::tls::reloading(cert.to_owned(), key.to_owned(), &metrics).unwrap());
    let app = Arc::new(App {
        admit,
        metrics,
        ready: Arc::new(AtomicBool::new(true)),
        index: None,
        limits: Limits::default(),
        body_budget: Limits::default().body_budget(),
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let counted = Threads::default();
    let counting = counted.clone();
    let thread = std::thread::spawn(move || {
        // A multi-thread runtime's workers pin themselves; this thread only
        // waits for the server.
        if threads <= 1 {
            pin(Side::Server);
            counting.count_this_thread();
        }
        runtime(threads, Side::Server, counting).block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            server::serve(listener, tls, app, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    Server {
        addr,
        threads: counted,
        stop,
        thread,
    }
}

fn main() {
    let rate: f64 = env("BENCH_RATE", 2_000.0);
    let seconds: f64 = env("BENCH_SECONDS", 10.0);
    let rounds_wanted: usize = env("BENCH_ROUNDS", 4).max(1);
    // Pinned, a worker per server core (two workers on one core only take
    // turns). Unpinned, measured on the 2-core machine (docs/benchmarks.md): a 2-worker
    // server runtime with a current-thread client did best; a multi-thread
    // client steals the server's cores.
    let server_threads: usize = env(
        "BENCH_SERVER_THREADS",
        pinned_cores().map_or(2, |cores| cores.len() - 1),
    );
    let client_threads: usize = env("BENCH_CLIENT_THREADS", 1);
    assert!(
        rate > 0.0 && seconds > 0.0,
        "BENCH_RATE and BENCH_SECONDS must be positive"
    );
    let per_round = (rate * seconds / rounds_wanted as f64).round().max(1.0) as usize;

    // Certificates.
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let ca = TestCa::new();
    ca.issue(&Leaf::new(&["localhost"], 1)).write(&cert_path, &key_path);
    let client = Arc::new(ca.client_config());

    // The index: 10k objects, 50k hosts (a fifth of them wildcards).
    let index = Arc::new(common::index());
    println!("indexed {:?} (objects, hosts)", index.len());
    println!(
        "server runtime threads {server_threads}, client runtime threads {client_threads}, {CONNECTIONS} connections, {}",
        if pinned_cores().is_some() {
            "client pinned to the first core, server to the others"
        } else {
            "unpinned"
        }
    );

    // The mix: new hosts (allowed), a taken host (denied), a host under
    // an indexed wildcard (allowed with a warning).
    let bodies: Vec<Bytes> = (0..64).flat_map(common::mix).map(Bytes::from).collect();
    let bodies = Arc::new(bodies);

    pin(Side::Client);
    let client_runtime = runtime(client_threads, Side::Client, Threads::default());
    // The webhook and the constant, side by side.
    let (answer, _) = aether_webhook::admission::review(&bodies[0], &HostIndex::new()).unwrap();
    let servers = [
        Arc::new(Reviewer(index.clone())) as Arc<dyn Admit>,
        Arc::new(Constant(answer)),
    ]
    .map(|admit| start_server(admit, &cert_path, &key_path, server_threads));
    let rounds = client_runtime.block_on(async {
        let mut senders = [Vec::new(), Vec::new()];
        for (to, server) in senders.iter_mut().zip(&servers) {
            for _ in 0..CONNECTIONS {
                to.push(connect(server.addr, client.clone()).await);
            }
            // Warm-up: a second at the rate.
            open_loop(to, bodies.clone(), rate, rate.ceil() as usize, &server.threads).await;
        }
        // The two servers in turn, round after round.
        let mut rounds = Vec::new();
        for _ in 0..rounds_wanted {
            let mut round = Vec::new();
            for (to, server) in senders.iter_mut().zip(&servers) {
                round.push(open_loop(to, bodies.clone(), rate, per_round, &server.threads).await);
            }
            rounds.push(round);
        }
        rounds
    });
    for server in servers {
        let _ = server.stop.send(());
        server.thread.join().unwrap();
    }
    println!("open loop at {rate:.0}/s, {rounds_wanted} rounds of {per_round} reviews each per server:");
    let runs = [0, 1].map(|side| Run::merged(rounds.iter().map(|round| &round[side])));
    report("webhook", &runs[0]);
    report("constant", &runs[1]);
    let p99 = ms(runs[0].latency.value_at_quantile(0.99));
    let cpu = |run: &Run| {
        run.cpu_per_review_us()
            .map_or("unknown".to_owned(), |us| format!("{us:.1} µs"))
    };
    println!(
        "goal: webhook p99 at {rate:.0}/s {p99:.3} ms (< 2 ms: {}); server CPU per review {}, the constant's {}",
        if p99 < 2.0 { "met" } else { "NOT met" },
        cpu(&runs[0]),
        cpu(&runs[1]),
    );
}
