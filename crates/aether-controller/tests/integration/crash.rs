//! SIGKILL during writes: the real binary in local mode, fed manifests that
//! flip between two large sets so that it writes continuously, is killed at
//! random moments; `routes.json` must then always be one of the two complete
//! configurations (or absent, before the first write), never a mix.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use aether_controller::outputs::{self, ROUTES_FILE};
use aether_manifests::parse_manifests;
use aether_projection::{ProjectionConfig, project};

use crate::common;

const KILLS: usize = 20;

fn manifests(variant: &str, objects: usize) -> String {
    let mut text = String::new();
    for i in 0..objects {
        text.push_str(&format!(
            "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: vh-{i}, namespace: ns-{}}}\n\
             spec:\n  hosts: [h{i}.{variant}.example.com]\n  routes:\n",
            i % 7
        ));
        for r in 0..10 {
            text.push_str(&format!(
                "    - {{match: {{prefix: /{variant}/r{r}}}, backend: {{service: svc-{variant}-{}, port: {}}}}}\n",
                (i + r) % 50,
                8000 + r
            ));
        }
    }
    text
}

fn routes_of(text: &str) -> Vec<u8> {
    let snapshot = project(parse_manifests(text).unwrap(), &ProjectionConfig::default()).unwrap();
    outputs::render(&snapshot)
        .unwrap()
        .remove(ROUTES_FILE)
        .unwrap()
        .to_vec()
}

/// Replaces the manifest file atomically, so the controller reads whole sets.
fn put(dir: &Path, text: &str) {
    std::fs::write(dir.join(".next"), text).unwrap();
    std::fs::rename(dir.join(".next"), dir.join("hosts.yaml")).unwrap();
}

#[test]
fn sigkill_during_writes_leaves_the_old_or_the_new_configuration() {
    let (a, b) = (manifests("a", 80), manifests("b", 80));
    let (routes_a, routes_b) = (routes_of(&a), routes_of(&b));
    assert_ne!(routes_a, routes_b);
    let input = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    put(input.path(), &a);

    // Flip the input all along, so that the controller keeps writing.
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, dir, a, b) = (stop.clone(), input.path().to_owned(), a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut flip = false;
            while !stop.load(Ordering::Relaxed) {
                put(&dir, if flip { &a } else { &b });
                flip = !flip;
                std::thread::sleep(Duration::from_millis(15));
            }
        })
    };

    let mut seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("seed {seed}");
    let (mut seen_a, mut seen_b, mut mid_write) = (0, 0, 0);
    for kill in 0..KILLS {
        // xorshift64: random enough for kill times, and the seed is printed.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_millis(100 + seed % 700);
        let mut child = Command::new(env!("CARGO_BIN_EXE_aether-controller"))
            // The flipper moves whole files into place, faster than any
            // settle time: read each at once.
            .args([
                "--settle-ms",
                "0",
                "--poll-ms",
                "5",
                "--debounce-ms",
                "0",
                "--max-delay-ms",
                "0",
                "--manifests",
            ])
            .arg(input.path())
            .arg("--out")
            .arg(out.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // A temporary file left behind: the kill landed inside a write.
        mid_write += usize::from(out.path().join(outputs::temporary_name(ROUTES_FILE)).exists());
        match std::fs::read(out.path().join(ROUTES_FILE)) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => panic!("kill {kill}: {err}"),
            Ok(bytes) => {
                let decoded = common::decode_routes(&bytes)
                    .unwrap_or_else(|err| panic!("kill {kill} after {delay:?}: routes.json is broken: {err}"));
                if bytes == routes_a {
                    seen_a += 1;
                } else if bytes == routes_b {
                    seen_b += 1;
                } else {
                    panic!(
                        "kill {kill}: routes.json decodes ({} bytes) but is neither configuration",
                        decoded.len()
                    );
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    eprintln!(
        "after {KILLS} kills: configuration a {seen_a} times, b {seen_b} times; {mid_write} kills inside a write"
    );
    assert!(seen_a + seen_b > 0, "the controller never wrote in {KILLS} runs");

    // The next start removes whatever temporary file the last kill left.
    let (code, stderr) = common::run_once(input.path(), out.path());
    assert_eq!(code, 0, "{stderr}");
    let strays: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(strays.is_empty(), "left behind: {strays:?}");
}
