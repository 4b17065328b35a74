//! One manifest that never stops changing delays only itself: the binary in
//! local mode, with its default timings (poll 500 ms, settle 250 ms,
//! debounce 250 ms, at most 2 s), serves another file's edit about as fast
//! as without it, and keeps the changing file's objects as last read whole
//! (their status saying why) until it settles.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aether_controller::outputs::{ROUTES_FILE, STATUS_FILE};
use aether_testing::objects::object;
use serde_json::Value;

use crate::common;

/// Well below the 9.4 s such an edit took while every pass waited on the
/// changing file; the edit itself is served after about 1 s.
const BOUND: Duration = Duration::from_secs(3);

fn manifest(name: &str, service: &str) -> String {
    object("default", name)
        .hosts([format!("{name}.example.com")])
        .route("/", service)
        .manifest()
}

fn routes(out: &Path) -> String {
    std::fs::read_to_string(out.join(ROUTES_FILE)).unwrap_or_default()
}

/// How long until `routes.json` holds `needle`, up to 20 s (a hang guard).
fn served_after(out: &Path, needle: &str) -> Duration {
    let started = Instant::now();
    while !routes(out).contains(needle) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{needle} not served after 20 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    started.elapsed()
}

/// Rewrites `churn.yaml` every `every` until stopped, each time with a new
/// backend (`svc-churn-N`), in place or by a rename over it.
fn churn(dir: &Path, every: Duration, rename: bool, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let text = manifest("churn", &format!("svc-churn-{n}"));
            if rename {
                std::fs::write(dir.join(".churn.tmp"), text).unwrap();
                std::fs::rename(dir.join(".churn.tmp"), dir.join("churn.yaml")).unwrap();
            } else {
                std::fs::write(dir.join("churn.yaml"), text).unwrap();
            }
            std::thread::sleep(every);
        }
    })
}

fn another_file_is_served_on_time_beside(every: Duration, rename: bool) {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(input.path().join("churn.yaml"), manifest("churn", "svc-churn-first")).unwrap();
    std::fs::write(input.path().join("b.yaml"), manifest("b", "svc-b-0")).unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aether-controller"));
    command
        .arg("--manifests")
        .arg(input.path())
        .arg("--out")
        .arg(out.path());
    let log = tempfile::NamedTempFile::new().unwrap();
    let _child = aether_e2e::Process::spawn("aether-controller", command, log.path());
    served_after(out.path(), "svc-b-0");
    assert!(routes(out.path()).contains("svc-churn-first"));

    let stop = Arc::new(AtomicBool::new(false));
    let churning = churn(input.path(), every, rename, stop.clone());
    // One edit early in the churn, one after it has gone on for longer
    // than the 5 s a file may take to settle.
    let mut latencies = Vec::new();
    for (at, service) in [(Duration::from_secs(1), "svc-b-1"), (Duration::from_secs(6), "svc-b-2")] {
        std::thread::sleep(at.saturating_sub(latencies.iter().sum()));
        std::fs::write(input.path().join("b.yaml"), manifest("b", service)).unwrap();
        latencies.push(served_after(out.path(), service));
    }
    eprintln!(
        "with churn.yaml rewritten every {every:?} (rename: {rename}): b.yaml's edits served after {latencies:?}"
    );
    // Its objects stay as last read whole: no version it was caught in.
    let served = routes(out.path());
    assert!(
        served.contains("svc-churn-first") && !served.contains("svc-churn-1\""),
        "{served}"
    );
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let condition = &status["default/churn"]["conditions"][0];
    let message = condition["message"].as_str().unwrap();
    assert!(
        message.contains("(changing); serving the previous version: serving churn.example.com"),
        "{condition}"
    );
    stop.store(true, Ordering::Relaxed);
    churning.join().unwrap();
    for latency in latencies {
        assert!(
            latency < BOUND,
            "an edit beside a changing file was served after {latency:?}"
        );
    }

    // Left alone, it is read and served.
    let last: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(input.path().join("churn.yaml")).unwrap()).unwrap();
    let service = last["spec"]["routes"][0]["backend"]["service"].as_str().unwrap();
    served_after(out.path(), &format!("{service}\""));
}

#[test]
fn a_file_rewritten_every_100_ms_delays_only_itself() {
    another_file_is_served_on_time_beside(Duration::from_millis(100), false);
}

#[test]
fn a_file_replaced_by_a_rename_every_50_ms_delays_only_itself() {
    another_file_is_served_on_time_beside(Duration::from_millis(50), true);
}

/// A file set aside is counted (`manifest_changing_files`, and among the
/// `manifest_stale_files`), and its objects' status says why they are
/// served as last read.
#[test]
fn a_file_set_aside_is_counted_and_its_objects_say_why() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = input.path().join("churn.yaml");
    std::fs::write(&file, manifest("churn", "svc-churn-first")).unwrap();
    let handle = std::fs::File::options().write(true).open(&file).unwrap();
    handle
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    // Modified within the hour: changing; set aside at once.
    let limits = aether_manifests::Limits {
        settle: Duration::from_secs(3600),
        max_settle_wait: Duration::ZERO,
        ..aether_manifests::Limits::default()
    };
    let options = aether_controller::local::Options {
        once: false,
        ..common::options(input.path(), out.path())
    };
    let mut local = aether_controller::local::Local::new(options)
        .unwrap()
        .with_limits(limits);
    local.reconcile().unwrap();
    assert_eq!(local.metrics.manifest_changing_files.get(), 0);

    std::fs::write(&file, manifest("churn", "svc-churn-1")).unwrap();
    let summary = local.reconcile().unwrap();
    assert_eq!((summary.input_errors, summary.stale_files), (1, 1), "{summary:?}");
    assert_eq!(local.metrics.manifest_changing_files.get(), 1);
    assert_eq!(local.metrics.manifest_stale_files.get(), 1);
    assert!(routes(out.path()).contains("svc-churn-first"));
    let status: Value = serde_json::from_slice(&std::fs::read(out.path().join(STATUS_FILE)).unwrap()).unwrap();
    let message = status["default/churn"]["conditions"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("churn.yaml: set aside: it has not been left alone for 3600000 ms in 0 s; what it gave when last read is kept (changing); serving the previous version: serving churn.example.com"),
        "{message}"
    );
}
