//! The generated validator against `prost-protovalidate`'s runtime
//! `Validator` (the Rust crate a user would otherwise pick: it reads the
//! buf.validate rules from the descriptors and interprets them, CEL
//! included), on the same messages in the same run, one core each.
//!
//! Both judges must first agree on every message's verdict; then each
//! validates the message over and over for the same wall time.
//!
//! `PROTOC=… cargo bench --manifest-path crates/aether-api/benches/runtime/Cargo.toml`
//! (a workspace of its own: see its Cargo.toml)

use aether_testing::specs;

use std::hint::black_box;
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;

const SECONDS: f64 = 3.0;

/// Validations per second of `validate` on one message, for `SECONDS`.
fn per_second(mut validate: impl FnMut() -> bool) -> f64 {
    let deadline = Duration::from_secs_f64(SECONDS);
    let start = Instant::now();
    let mut count = 0u64;
    loop {
        for _ in 0..100 {
            black_box(validate());
        }
        count += 100;
        if start.elapsed() >= deadline {
            return count as f64 / start.elapsed().as_secs_f64();
        }
    }
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep that quick.
    let measure = std::env::args().any(|a| a == "--bench");
    let runtime = prost_protovalidate::Validator::new();
    // (name, spec, how many violations both must find)
    let cases: [(&str, VirtualHostSpec, usize); 7] = [
        ("proposal manifest", specs::proposal(), 0),
        ("16 hosts, 128 routes", specs::worst_case(), 0),
        ("phase 2 matching, 8 routes", specs::matching(), 0),
        ("phase 2 actions, 6 routes", specs::actions(), 0),
        ("phase 2, every field, 6 routes", specs::phase2(), 0),
        ("invalid: proposal with 4 violations", specs::invalid(), 4),
        (
            "invalid: phase 2, 12 violations (10 on phase 2 rules)",
            specs::invalid_phase2(),
            specs::INVALID_PHASE2_VIOLATIONS,
        ),
    ];
    for (name, spec, violations) in &cases {
        // The rule ids each finds, sorted: the field paths differ in form
        // (JSON names and a `spec` root against proto names).
        let mut ours: Vec<String> = spec
            .validate()
            .map_or_else(|v| v.iter().map(|v| v.rule_id.to_string()).collect(), |()| vec![]);
        let mut theirs: Vec<String> = match runtime.validate(spec) {
            Ok(()) => vec![],
            Err(prost_protovalidate::Error::Validation(e)) => {
                e.violations().iter().map(|v| v.rule_id().to_string()).collect()
            }
            Err(e) => panic!("{name}: the runtime validator failed to run: {e}"),
        };
        ours.sort();
        theirs.sort();
        assert_eq!(
            ours.len(),
            *violations,
            "{name}: the generated validator's violations: {ours:?}"
        );
        assert_eq!(
            theirs.len(),
            *violations,
            "{name}: the runtime validator's violations: {theirs:?}"
        );
        assert_eq!(ours, theirs, "{name}: the two validators' rule ids");
    }
    if !measure {
        return;
    }
    println!("| spec | generated validations/s | prost-protovalidate validations/s | ratio |");
    println!("|---|---|---|---|");
    for (name, spec, _) in &cases {
        let generated = per_second(|| black_box(spec).validate().is_ok());
        let interpreted = per_second(|| runtime.validate(black_box(spec)).is_ok());
        println!(
            "| {name} | {generated:.0} | {interpreted:.0} | {:.1}x |",
            generated / interpreted
        );
    }
}
