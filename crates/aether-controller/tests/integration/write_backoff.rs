//! A pass whose files cannot be written (a full disk, a read-only volume)
//! is retried with exponential back-off, not about three times a second;
//! once the files can be written again they are, within the cap. The
//! failure is injected: a directory where the first file's temporary copy
//! goes makes its write fail with EISDIR, even as root.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aether_controller::outputs::{DEPENDENCIES_FILE, ROUTES_FILE, temporary_name};
use aether_testing::objects::object;

fn manifest(service: &str) -> String {
    object("default", "a")
        .hosts(["a.example.com"])
        .route("/", service)
        .manifest()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(40), "{what}: not within 40 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn failing_writes_are_retried_with_backoff_and_written_once_they_can_be() {
    let manifests = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(manifests.path().join("a.yaml"), manifest("svc-a")).unwrap();

    let mut child = aether_e2e::Controller::new(env!("CARGO_BIN_EXE_aether-controller"))
        .local_mode(manifests.path(), out.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    let lines = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            lines
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push_str(&(line + "\n"));
        }
    });
    let failures = || log.lock().unwrap().matches("reconcile failed").count();
    let dependencies = || std::fs::read_to_string(out.path().join(DEPENDENCIES_FILE)).unwrap_or_default();
    wait_for("the first pass", || dependencies().contains("svc-a"));

    // A directory where the temporary copy of dependencies.json goes, and
    // an edit that changes that file.
    let blocker = out.path().join(temporary_name(DEPENDENCIES_FILE));
    std::fs::create_dir_all(blocker.join("held")).unwrap();
    std::fs::write(manifests.path().join("a.yaml"), manifest("svc-b")).unwrap();

    // 6 s of failing: waits of 0.5, 1, 2 and 4 s after each failure give 4
    // passes (a pass every ~0.25 s gave about 20 before).
    std::thread::sleep(Duration::from_secs(6));
    let failed = failures();
    eprintln!("{failed} failed passes in 6 s");
    assert!(
        (2..=5).contains(&failed),
        "{failed} failed passes in 6 s:\n{}",
        log.lock().unwrap()
    );

    // Writable again: written on a later retry, within the cap.
    std::fs::remove_dir_all(&blocker).unwrap();
    wait_for("written once writable", || dependencies().contains("svc-b"));
    // routes.json is written after dependencies.json (what it refers to
    // first), so it may land a moment later in the same pass.
    wait_for("routes.json written once writable", || {
        std::fs::read_to_string(out.path().join(ROUTES_FILE))
            .unwrap_or_default()
            .contains("svc-b")
    });
    let _ = child.kill();
    let _ = child.wait();
}
