//! The Rust validator against the reference protovalidate (Python), on the
//! same messages in the same run: validations per second of each, and the
//! ratio. Each side validates one parsed message over and over for the same
//! wall time, single-threaded (one core).
//!
//! `cargo bench -p aether-api --features validate --bench validate_vs_reference`
//! (needs `cargo xtask pyenv`; `AETHER_PYTHON` overrides the interpreter)

use aether_testing::specs;

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;
use base64::Engine as _;
use prost::Message;

const SECONDS: f64 = 3.0;

fn rust_per_second(spec: &VirtualHostSpec) -> f64 {
    let deadline = Duration::from_secs_f64(SECONDS);
    let start = Instant::now();
    let mut count = 0u64;
    loop {
        for _ in 0..1000 {
            black_box(black_box(spec).validate().is_ok());
        }
        count += 1000;
        if start.elapsed() >= deadline {
            return count as f64 / start.elapsed().as_secs_f64();
        }
    }
}

/// The reference's validations per second of each spec, and how many
/// violations it finds in each.
fn python_per_second(specs: &[&VirtualHostSpec]) -> Vec<(f64, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("AETHER_PYTHON").map_or_else(|| root.join("target/pyenv/bin/python"), Into::into);
    let mut child = Command::new(&python)
        .arg(root.join("crates/aether-api/tests/reference/protovalidate_judge.py"))
        .args(["--bench", &SECONDS.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask pyenv`)", python.display()));
    let mut stdin = child.stdin.take().unwrap();
    for spec in specs {
        let payload = base64::engine::general_purpose::STANDARD.encode(spec.encode_to_vec());
        writeln!(stdin, "aether.config.v1.VirtualHostSpec {payload}").unwrap();
    }
    drop(stdin);
    let rates = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| {
            let answer: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            let violations = answer["violations"]
                .as_u64()
                .unwrap_or_else(|| panic!("a count: {answer}"));
            (answer["per_second"].as_f64().expect("a rate"), violations as usize)
        })
        .collect();
    assert!(child.wait().unwrap().success());
    rates
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    // (name, spec, how many violations both must find)
    let cases = [
        ("proposal manifest", specs::proposal(), 0),
        ("16 hosts, 128 routes", specs::worst_case(), 0),
        ("phase 2, every field, 6 routes", specs::phase2(), 0),
        (
            "invalid: phase 2, 12 violations (10 on phase 2 rules)",
            specs::invalid_phase2(),
            specs::INVALID_PHASE2_VIOLATIONS,
        ),
    ];
    for (name, spec, violations) in &cases {
        let ours = spec.validate().map_or_else(|v| v.violations().len(), |()| 0);
        assert_eq!(ours, *violations, "{name}: the Rust validator's violations");
    }
    let python = python_per_second(&cases.iter().map(|(_, s, _)| s).collect::<Vec<_>>());
    println!("| spec | Rust validations/s | protovalidate (Python) validations/s | ratio |");
    println!("|---|---|---|---|");
    for ((name, spec, violations), (python, found)) in cases.iter().zip(python) {
        assert_eq!(found, *violations, "{name}: the reference's violations");
        let rust = rust_per_second(spec);
        println!("| {name} | {rust:.0} | {python:.0} | {:.1}x |", rust / python);
    }
}
